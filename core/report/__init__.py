"""The privacy report of a stored run, sweep or comparison, as HTML and PDF, with a release
recommendation (:mod:`core.report.rules`).

``build_report(target, *, store, level=0.05, sections=())`` reads everything from the store
(the target: a run key, a sweep key, or a :class:`core.runs.compare.ComparisonSpec` whose points are
stored) and writes, from the stored numbers only: the release recommendation with its rule
and SACRO-ML's beside it; per run the privacy budget (the accountant's ε beside the audited ε),
every attack with its metrics and 95 % intervals, the inputs of the rules (TPR at 1 % FPR and
its bound, SACRO-ML's p), each attack's ROC, the threat-model cards of the registry, the bounds
with the caveats stating their assumptions, every other caveat and note; then the ``sections``
other helpers hand in (title, sentences, rows, figure), and the configuration.

:attr:`PrivacyReport.numbers` holds every number printed, by name (:class:`rules.Num`), so a
checker can compare each with the store; :meth:`PrivacyReport.to_pdf` prints the page with
headless Chromium (:mod:`core.report.pdf`).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.foundation.part_names import titled
from core.report.render import Page, esc, verdict_class
from core.report.rules import (
    DEFAULT_LEVEL,
    NO_RULE,
    RULES_DIFFER_TEXT,
    SACRO_RULE_TEXT,
    Num,
    Verdict,
    best_point,
    fmt,
    level_num,
    plain,
    present_attacks,
    rule_text,
    verdict,
)
from core.report.rules import _family_title as _family_title

__all__ = ["PrivacyReport", "Recommendation", "Verdict", "beside_advice", "build_report",
           "recommend"]

#: short column titles of the attack stats (the schema's descriptions are sentences)
STAT_TITLES = {"acc": "accuracy", "bacc": "balanced acc", "auc": "AUC", "adv": "advantage",
               "tpr_at_1pct_fpr": "TPR @ 1 % FPR", "tpr_at_0p1pct_fpr": "TPR @ 0.1 % FPR",
               "epsilon_lower_bound": "ε lower bound", "ce_nats": "CE (nats)", "gap": "gap",
               "mse": "MSE", "psnr": "PSNR (dB)", "psnr_median": "median PSNR (dB)",
               "ssim": "SSIM", "label_acc": "label acc", "seconds": "seconds",
               "frac_l2_ge_eta": "share ℓ2 ≥ η", "frac_linf_ge_eta": "share ℓ∞ ≥ η"}
#: the privacy-budget metrics (the accountant's ε, the release's ε, the audit)
BUDGET_GROUPS = ("defense", "audit")


#: short titles of the headline metrics a table column or an axis shows
METRIC_TITLES = {"utility_acc": "utility (test accuracy)", "mia_auc_best": "strongest AUC",
                 "attack_auc_best": "strongest AUC", "fil_utility_acc": "utility (test accuracy)"}


def metric_title(name: str) -> str:
    """A metric as a column or an axis names it: a short title, else its schema description up
    to the first ";", ":" or " (" (never the raw key where the schema has it)."""
    from core.foundation import metric_schema as S

    if name in METRIC_TITLES:
        return METRIC_TITLES[name]
    if not S.is_registered(name):
        return name.replace("_", " ")
    text = S.get(name).description
    for sep in (";", ":", " ("):
        text = text.split(sep, 1)[0]
    return text


@dataclass
class Recommendation:
    """The release recommendation: one :class:`rules.Verdict` per run (``points``: one for a
    run, one per point for a sweep or a comparison), the ``best`` point meeting the rule (a
    sweep or a comparison; None otherwise or when none does), the rule written out, SACRO-ML's
    rule beside it, and one ``sentence``."""

    level: float
    rule: str
    rule_text: str
    sacro_text: str
    points: list[Verdict]
    best: Verdict | None
    sentence: str
    #: a run: its verdict; several points: whether one meets the rule (None: no rule applies)
    release: bool | None
    parts: list[Any] = field(default_factory=list)
    #: a comparison's released point as the advisor names it: (curve name, knob index)
    point: tuple[str, int] | None = None


@dataclass
class PrivacyReport:
    """``html`` (self-contained), ``recommendation``, ``numbers`` (name -> value of every
    number printed) and :meth:`to_pdf`."""

    html: str
    recommendation: Recommendation
    numbers: dict[str, float]
    title: str

    def save(self, path: str | Path) -> Path:
        """Write the HTML to ``path``."""
        p = Path(path)
        p.write_text(self.html, encoding="utf-8")
        return p

    def to_pdf(self, path: str | Path) -> int:
        """Print the page to ``path`` with headless Chromium; the pages written."""
        from core.report.pdf import html_to_pdf

        return html_to_pdf(self.html, Path(path))


# ---------------------------------------------------------------------------------------------
# the target: the runs it covers


@dataclass
class _Target:
    title: str
    subtitle: str
    #: (label, curve name, Result) per run
    runs: list[tuple[str, str, Any]]
    comparison: Any = None
    #: a comparison's points as the advisor reads them: (label, curve, knob index, run indices)
    points: list[tuple[str, Any, int, list[int]]] = field(default_factory=list)


def _defense_text(result: Any) -> str:
    from core.foundation.parts import DEFENSES

    d = (result.config or {}).get("defense") or {}
    kind = d.get("kind")
    if kind is None or kind not in DEFENSES:
        return str(kind or "none")
    part = DEFENSES.get(kind)
    text = part.title
    if part.knob is not None and part.knob.field in d:
        text += f", {part.knob.symbol} = {d[part.knob.field]}"
    return text


def _run_label(result: Any) -> str:
    data = ((result.config or {}).get("data") or {}).get("name", "?")
    label = f"{_family_title(result.kind)} on {data}, {_defense_text(result)}"
    target = (result.config or {}).get("target")
    if isinstance(target, dict) and target.get("weights"):
        # a model trained elsewhere is never presented as one privlab trained
        label += (f"; target trained elsewhere (weights {Path(str(target['weights'])).name}, "
                  f"sha256 {str(target.get('weights_sha256'))[:12]}), not by privlab")
    return label


def _arch_text(result: Any) -> str:
    """The model the run trained, by its architecture's title (and width when not 1)."""
    from core.foundation.parts import ARCHITECTURES

    model = (result.config or {}).get("model") or {}
    name = model.get("arch")
    if name is None:
        return ""
    target = (result.config or {}).get("target")
    if isinstance(target, dict) and target.get("framework") == "sklearn":
        return "a scikit-learn estimator (skops); its shadows are clones of it"
    part = ARCHITECTURES.get(name) if name in ARCHITECTURES else None
    text = f"architecture {part.title if part is not None else name}"
    width = float(model.get("width", 1.0))
    text += f" at width {width:g}" if width != 1.0 else ""
    return text + (" (the target's; privlab trained only its shadows)"
                   if isinstance(target, dict) else "")


def _get(store: Any, key: str) -> Any:
    r = store.get(key)
    if r is None:
        raise ValueError(f"target: no stored run with key {key!r}")
    return r


def _exposure_sections(t: _Target, store: Any) -> list[dict[str, Any]]:
    """Per-record exposure as report sections: the run's most exposed records, or for a
    comparison the overlap of each defense's most exposed records (first knob value, first
    seed: the runs must share their records); nothing for a family without per-record scores
    or a run stored without them."""
    from core.report.exposure import comparison_results, exposure_overlap, record_exposure

    try:
        if t.comparison is not None:
            runs = comparison_results(t.comparison, store)
            return [exposure_overlap(runs).report_section()] if len(runs) > 1 else []
        if len(t.runs) == 1:
            return [record_exposure(t.runs[0][2]).report_section()]
    except (KeyError, ValueError, LookupError):  # no per-record arrays for this family or run
        return []
    return []


def _resolve(target: Any, store: Any) -> _Target:
    from core.foundation.result import Result
    from core.runs.compare import Comparison, ComparisonSpec, read_comparison

    if isinstance(target, Result) and target.kind != "sweep" and target.key:
        # a page that holds the run hands it in (it is the stored one: it has its key)
        return _Target("Privacy report", f"{_run_label(target)}; run {target.key[:12]}",
                       [(target.key[:12], "", target)])
    if isinstance(target, Result) and target.key:  # a stored sweep: its points are read below
        target = target.key

    if isinstance(target, Comparison | ComparisonSpec):
        # a page that holds the assembled comparison hands it in: it is not read twice
        cmp = target if isinstance(target, Comparison) else read_comparison(target, store, imported=True)
        target = cmp.spec
        runs = []
        points = []
        for c in cmp.curves:
            for i, k in enumerate(c.knob):
                points.append((c.name + (f" · {c.symbol} = {fmt(float(k))}"
                                         if c.knob_field and c.symbol else ""), c, i,
                               list(range(len(runs), len(runs) + len(c.seeds)))))
                for j, s in enumerate(c.seeds):
                    key = c.keys[i][j]
                    label = c.name + (f" · {c.symbol} = {fmt(float(k))}"
                                      if c.knob_field and c.symbol else "")
                    if len(c.seeds) > 1:
                        label += f" · seed {s}"
                    runs.append((label, c.name, _get(store, key)))
        return _Target(f"Privacy report: comparison of {len(cmp.curves)} defenses",
                       f"{_family_title(target.family)} on {target.data}", runs, cmp, points)
    if not isinstance(target, str):
        raise TypeError(f"target: got {type(target).__name__}; expected a run key, a sweep "
                         "key or a ComparisonSpec")
    result = _get(store, target)
    if result.kind == "sweep":
        rows = (result.info or {}).get("rows") or []
        runs = []
        for row in rows:
            point = _get(store, row["key"])
            vals = [f"{p.rsplit('.', 1)[-1]} = {row[p]}" for p in (result.config or {}).get(
                "grid", {}) if p in row]
            label = ", ".join(vals) or row["key"][:12]
            runs.append((label + f" · seed {row.get('seed')}", "sweep", point))
        base = (result.config or {}).get("base") or {}
        return _Target(f"Privacy report: sweep of {len(runs)} points",
                       f"{_family_title(base.get('kind', '?'))} on "
                       f"{(base.get('data') or {}).get('name', '?')}; sweep {target[:12]}",
                       runs)
    return _Target("Privacy report", f"{_run_label(result)}; run {result.key[:12]}",
                   [(result.key[:12], "", result)])


# ---------------------------------------------------------------------------------------------
# the recommendation


def recommend(target: Any, *, store: Any, level: float = DEFAULT_LEVEL) -> Recommendation:
    """The release recommendation alone (no HTML): cheap enough for a page to show at once.
    ``target`` as :func:`build_report`'s, or the stored Result or the assembled
    :class:`core.runs.compare.Comparison` a page already holds."""
    return _recommend(_resolve(target, store), _check_level(level))


def _check_level(level: float) -> float:
    try:
        v = float(level)
    except (TypeError, ValueError):
        v = math.nan
    if not 0.0 < v < 1.0:
        raise ValueError(f"level: got {level!r}; allowed: (0, 1), a TPR at 1 % FPR")
    return v


def _recommend(t: _Target, level: float) -> Recommendation:
    verdicts = [verdict(r, level=level, label=label) for label, _, r in t.runs]
    rules = list(dict.fromkeys(v.rule for v in verdicts))
    rule = rules[0] if rules else NO_RULE
    if len(verdicts) == 1:
        v = verdicts[0]
        return Recommendation(level, rule, rule_text(rule, level, v.kind), SACRO_RULE_TEXT,
                              verdicts, None, v.sentence, v.release, list(v.reason))
    if t.points:
        return _recommend_points(t, verdicts, level, rule)
    best = best_point(verdicts)
    decided = [v for v in verdicts if v.release is not None]
    if best is not None:
        parts: list[Any] = [(f"Release {best.label}: the point with the most utility ("
                            f"{metric_title(best.utility_name or '')} "), best.utility, (") among the "
                            f"{sum(bool(v.release) for v in verdicts)} of {len(verdicts)} "
                            "points that meet the rule.")]
        release: bool | None = True
    elif decided:
        parts = [f"Do not release any of the {len(verdicts)} points: none meets the rule."]
        release = False
    else:
        parts = ["No release rule applies to these points (see each verdict)."]
        release = None
    kind = verdicts[0].kind if verdicts else None
    return Recommendation(level, rule, rule_text(rule, level, kind), SACRO_RULE_TEXT, verdicts,
                          best, plain(parts), release, parts)


def _recommend_points(t: _Target, verdicts: list[Verdict], level: float, rule: str
                      ) -> Recommendation:
    """A comparison's recommendation over the advisor's points (each curve's knob value, seeds
    pooled): a point meets the rule when the seed mean of the number the rule compares (the
    TPR bound, or the AUC interval's lower end) does, and the one released is the point with
    the most seed-mean utility (the comparison's ``utility_mean``, the advisor's number)."""
    import numpy as np

    met: list[tuple[float, str, int, str, int]] = []
    decided = 0
    for label, curve, i, idx in t.points:
        vals = [verdicts[k].value.value for k in idx if verdicts[k].value is not None
                and verdicts[k].value.value is not None]
        if not vals or len(vals) < len(idx):
            continue
        decided += 1
        mean = float(np.mean(vals))
        ok = mean <= level if rule == "tpr" else not mean > 0.5
        u = float(curve.utility_mean[i])
        if ok and math.isfinite(u):
            met.append((u, label, len(idx), curve.name, i))
    n = len(t.points)
    kind = verdicts[0].kind if verdicts else None
    if met:
        u, label, seeds, name, i = max(met, key=lambda m: m[0])
        parts: list[Any] = [(f"Release {label}: the point with the most utility (seed mean "
                            f"{fmt(u)} of {metric_title(verdicts[0].utility_name or '')}, "
                            f"over {seeds} seed{'s' if seeds > 1 else ''}) among the {len(met)} of {n} "
                            "points whose seed "
                            "mean meets the rule.")]
        release: bool | None = True
    elif decided:
        parts = [f"Do not release any of the {n} points: no point's seed mean meets the rule."]
        release = False
    else:
        parts = ["No release rule applies to these points (see each verdict)."]
        release = None
    return Recommendation(level, rule, rule_text(rule, level, kind), SACRO_RULE_TEXT, verdicts,
                          None, plain(parts), release, parts,
                          (name, i) if release else None)


def beside_advice(rec: Recommendation, chosen: tuple[str, int] | None) -> str:
    """The release rule's answer said after the advisor's (``chosen``: the advisor's point as
    (curve name, knob index), None when it names none): that both name the same point, or the
    rule's answer and which rule each uses, so a page gives one recommendation."""
    if rec.release is None:
        return f"The privacy report's release rule does not decide these points: {rec.rule_text}"
    if chosen is not None and rec.point == chosen:
        return "The privacy report's release rule names the same point."
    return (f"The privacy report's release rule answers differently: {rec.sentence} Which rule "
            "each uses: the advisor, the threat level and utility floor stated above; the "
            f"release rule, its own level: {rec.rule_text}")


# ---------------------------------------------------------------------------------------------
# the page


def _n(result: Any, name: str, field: str | None = None) -> Num:
    pre = (result.key or "")[:12]
    if field is None:
        v = result.metrics.get(name)
        return Num(f"{pre}/{name}", None if v is None else float(v))
    iv = result.intervals.get(name) or {}
    v = iv.get(field)
    return Num(f"{pre}/{name}/{field}", None if v is None else float(v))


def _has_iv(result: Any, name: str) -> bool:
    iv = result.intervals.get(name) or {}
    return all(iv.get(f) is not None and not math.isnan(float(iv[f])) for f in ("lo", "hi"))


def _caveats(result: Any) -> list[dict[str, Any]]:
    from core.foundation import caveats

    return caveats.of_result(result)


def _flags(page: Page, cavs: list[dict[str, Any]], name: str) -> str:
    idx = [str(i + 1) for i, c in enumerate(cavs) if name in c.get("metrics", ())]
    return f'<span class="flag" title="see caveats">⚠{",".join(idx)}</span>' if idx else ""


def _recommendation_block(page: Page, rec: Recommendation) -> None:
    cls = verdict_class(rec.release)
    page.add(f'<section class="verdict {cls}"><h2 style="margin-top:0">Release recommendation'
             f'</h2><p class="big">{page.parts(rec.parts)}</p>')
    level = page.num(level_num(rec.level))
    who = "the default" if rec.level == DEFAULT_LEVEL else "set by the user"
    page.add(f'<div class="rules"><div><h3>The rule (level {level}, {who})</h3>'
             f"<p>{esc(rec.rule_text)}</p></div><div><h3>SACRO-ML's rule beside it: a 0–5 score, not a refusal</h3>"
             f"<p>{esc(rec.sacro_text)}</p>")
    if len(rec.points) == 1:
        v = rec.points[0]
        page.add(f'<p><span class="tag {verdict_class(v.sacro)}">{esc(v.sacro_word)}</span> '
                 f"{page.parts(v.sacro_reason)}</p>")
    page.add("</div></div>")
    page.add(f'<p class="note">{esc(RULES_DIFFER_TEXT)}</p>')
    for v in rec.points[:1] if len(rec.points) == 1 else ():
        for note in v.notes:
            page.add(f'<p class="note">{page.parts(note)}</p>')
    page.add("</section>")


def _points_table(page: Page, rec: Recommendation) -> None:
    page.h(2, "Verdict per point")
    rows = []
    for v in rec.points:
        rows.append([esc(v.label),
                     page.num(v.utility) if v.utility is not None else "n/a",
                     page.num(v.value) if v.value is not None else "n/a",
                     f'<span class="tag {verdict_class(v.release)}">{esc(v.word)}</span>',
                     f'<span class="tag {verdict_class(v.sacro)}">{esc(v.sacro_word)}</span>'
                     + (f" (mean AUC {page.num(v.sacro_mean_auc)})" if v.sacro_mean_auc
                        else "")])
    what = {"tpr": "largest upper bound on TPR @ 1 % FPR", "auc": "largest lower end of the "
            "AUC interval"}.get(rec.rule, "rule's number")
    util = next((metric_title(v.utility_name) for v in rec.points if v.utility_name),
                "utility")
    page.table(["point", util, what, "verdict", "SACRO-ML"], rows,
               [False, True, True, False, False])
    # the same note on every point (one data set, one split): printed once
    notes = [(v, n) for v in rec.points for n in v.notes[:1]]
    if notes and len({plain(n) for _, n in notes}) == 1:
        page.add(f'<p class="note">Every point: {page.parts(notes[0][1])}</p>')
    else:
        for v, n in notes:
            page.add(f'<p class="note">{esc(v.label)}: {page.parts(n)}</p>')


def _budget(page: Page, result: Any) -> None:
    from core.foundation import metric_schema as S

    names = [m for m in result.metrics if S.is_registered(m)
             and S.get(m).group in BUDGET_GROUPS and S.get(m).unit in ("ε", "δ", "count",
                                                                         "fraction", "flag")
             and (S.get(m).unit == "ε" or m.startswith("audit_"))]
    # the kind's own budget (FIL's η, a knob's echo) where it is not an ε already
    head = S.HEADLINES.get(result.kind)
    own = head.budget_for(((result.config or {}).get("defense") or {}).get("kind")) \
        if head is not None else None
    if own and own in result.metrics and own not in names:
        names.append(own)
    eps = [m for m in names if S.get(m).unit == "ε" or m == own]
    if not eps:
        return
    # the claim first, then the audit's ε, then the audit's counts
    first = ("epsilon_accountant", "audit_epsilon_lower", "audit_max_provable")
    names = sorted(names, key=lambda m: (first.index(m) if m in first else
                                         len(first) - (S.get(m).unit == "ε"), m))
    names = [m for m in names if S.get(m).unit != "flag"]
    page.h(3, "Privacy budget" + (": the accountant's ε beside the audited ε"
                                  if "audit_epsilon_lower" in names else ""))
    acc = (result.info or {}).get("accountant")
    rows = []
    for m in names:
        spec = S.get(m)
        rows.append([esc(spec.description), page.num(_n(result, m))])
    page.table(["", "value"], rows, [False, True])
    claimed, audited = result.metrics.get("epsilon_accountant"), result.metrics.get(
        "audit_epsilon_lower")
    if claimed is not None and audited is not None:
        broken = result.metrics.get("audit_exceeds_claim", 0.0) >= 0.5
        page.add('<p class="note">' + (
            f"The audited ε {page.num(_n(result, 'audit_epsilon_lower'))} exceeds the "
            f"accountant's ε {page.num(_n(result, 'epsilon_accountant'))}: the claim is broken."
            if broken else
            f"The audited ε {page.num(_n(result, 'audit_epsilon_lower'))} is a lower bound at "
            f"or below the accountant's ε {page.num(_n(result, 'epsilon_accountant'))}"
            + (f" ({esc(acc)} accountant)" if acc else "") + ": consistent with the claim.")
            + "</p>")
    elif claimed is not None:
        page.p("No audit in this run: the accountant's ε stands unchecked"
               + (f" ({acc} accountant)." if acc else "."), "note")


def _attacks(page: Page, result: Any, cavs: list[dict[str, Any]]) -> None:
    parts = present_attacks(result)
    if not parts:
        page.p("This run reports no attack.", "note")
        return
    stats = list(dict.fromkeys(s for a in parts for s in a.stat_names()))
    stats = [s for s in stats if any(a.metric_name(s) in result.metrics for a in parts)]
    rows = []
    for a in parts:
        row = [esc(a.title)]
        for s in stats:
            m = a.metric_name(s)
            if m not in result.metrics:
                row.append("")
                continue
            lo = _n(result, m, "lo") if _has_iv(result, m) else None
            hi = _n(result, m, "hi") if _has_iv(result, m) else None
            row.append(page.with_interval(_n(result, m), lo, hi) + _flags(page, cavs, m))
        rows.append(row)
    page.table(["attack", *[STAT_TITLES.get(s, s.replace("_", " ")) for s in stats]], rows,
               [False, *[True] * len(stats)])
    with_n = {m: int(iv["n"]) for a in parts for m in a.metric_names()
              if (iv := result.intervals.get(m)) and iv.get("n") is not None
              and not math.isnan(float(iv["n"]))}
    over = (f" over n = {page.num(_n(result, next(iter(with_n)), 'n'))} scored records"
            if len(set(with_n.values())) == 1 else "")
    page.add(f'<p class="note">Each number with its stored 95 % interval [lo, hi]{over}; a '
             "number without one was stored without an interval. ⚠ marks a caveat (listed "
             "below).</p>")


def _rule_inputs(page: Page, v: Verdict) -> None:
    if not v.checks or not any(c.auc is not None or c.tpr is not None for c in v.checks):
        return
    page.h(3, "What the rules read")
    rows = []
    for c in v.checks:
        rows.append([
            esc(c.title),
            page.with_interval(c.n_auc(), c.n_auc_lo() if c.auc_lo is not None else None,
                               c.n_auc_hi() if c.auc_hi is not None else None)
            if c.auc is not None else "",
            page.num(c.n_p()) if c.p is not None else "",
            page.num(c.n_tpr()) if c.tpr is not None else "",
            (page.num(c.n_tpr_hi()) + ('<span class="iv"> stored</span>'
                                       if c.tpr_hi_from == "stored" else
                                       '<span class="iv"> exact</span>'))
            if c.tpr_hi is not None else "",
            (page.num(c.n_pos_num()) + " / " + page.num(c.n_neg_num()))
            if c.n_pos is not None else ""])
    header = ["attack", "AUC [95 %]", "SACRO-ML p", "TPR @ 1 % FPR", "upper 95 % bound",
              "members / non-members"]
    keep = [i for i in range(len(header)) if i == 0 or any(r[i] for r in rows)]
    page.table([header[i] for i in keep], [[r[i] for i in keep] for r in rows],
               [i > 0 for i in keep])
    if any(r[2] or r[3] for r in rows):  # p and the bound exist only where a rule reads them
        page.p("p: one-sided normal test of AUC > 0.5 with the AUC's null variance from the "
               "scored counts (SACRO-ML's P_HIGHER_AUC). Upper bound: the stored interval where "
               "the run has one, else (exact) the Clopper–Pearson interval of the stored rate "
               "over the members scored.", "note")


def _roc(page: Page, result: Any) -> None:
    from core.report.figures import roc_figure

    curves = []
    for a in present_attacks(result):
        f, t = result.artifacts.get(f"roc_{a.who}_fpr"), result.artifacts.get(f"roc_{a.who}_tpr")
        if f is not None and t is not None and len(f) == len(t) and len(f) > 1:
            curves.append((a.title, f, t))
    if not curves:
        return
    n_neg = [c.n_neg for c in verdict(result, level=0.5).checks if c.n_neg]
    # from half the smallest step the rule's 1 % FPR line still shows on the log axis
    page.figure(roc_figure(curves, min_fpr=min(0.5 / max(n_neg, default=1000), 0.005)))


def _cards(page: Page, parts: list[Any]) -> None:
    if not parts:
        return
    page.h(2, "Threat models")
    page.add('<div class="cards">' + "".join(
        f'<div class="card"><b>{esc(a.title)}</b>sees: {esc(a.threat.sees)}<br>knows: '
        f"{esc(a.threat.knows)}<br>goal: {esc(a.threat.goal)}</div>" for a in parts)
        + "</div>")


def _bounds(page: Page, result: Any, cavs: list[dict[str, Any]]) -> None:
    from core.foundation import metric_schema as S

    attack_metrics = {m for a in present_attacks(result) for m in a.metric_names()}
    names = [m for m in result.metrics if m not in attack_metrics and S.is_registered(m)
             and S.get(m).group == "bound" and S.get(m).unit not in ("flag", "count")]
    if not names:
        return
    page.h(3, "Bounds and their assumptions")
    rows = []
    for m in names:
        said = [c["text"] for c in cavs if m in c.get("metrics", ())]
        rows.append([esc(S.get(m).description), page.num(_n(result, m)),
                     "<br>".join(esc(t) for t in dict.fromkeys(said))
                     or '<span class="iv">none stated</span>'])
    page.table(["bound", "value", "assumption (caveat)"], rows, [False, True, False])


def _caveat_list(page: Page, result: Any, cavs: list[dict[str, Any]]) -> None:
    notes = [str(n) for n in (result.info or {}).get("notes", [])]
    if not cavs and not notes:
        return
    page.h(3, "Caveats and notes")
    if cavs:
        page.add('<ol class="caveats">' + "".join(
            f"<li><b>{esc(c.get('label', ''))}</b>: {esc(c.get('text', ''))}</li>"
            for c in cavs) + "</ol>")
    for n in notes:
        page.p(f"runner's note: {titled(n, result.kind)}", "note")


def _run_body(page: Page, result: Any, v: Verdict, *, heading: str | None) -> None:
    cavs = _caveats(result)
    page.h(2, heading or "The run")
    if heading:
        page.add(f'<p><span class="tag {verdict_class(v.release)}">{esc(v.word)}</span> '
                 f"{page.parts(v.reason)}</p>")
    arch = _arch_text(result)
    page.p(f"{_run_label(result)}{'; ' + arch if arch else ''}; seed {result.seed}; run "
           f"{(result.key or '')[:12]}; engine {result.engine_version}.", "note")
    if v.utility is not None:
        page.add(f"<p>{esc(metric_title(v.utility_name or '').capitalize())}: "
                 f"{page.num(v.utility)}</p>")
    _budget(page, result)
    page.h(3, "Attacks")
    _attacks(page, result, cavs)
    _rule_inputs(page, v)
    _roc(page, result)
    _bounds(page, result, cavs)
    _caveat_list(page, result, cavs)


def _plane(page: Page, t: _Target, rec: Recommendation) -> None:
    from core.report.figures import plane_figure

    spec = t.comparison.spec
    pts = []
    for (label, curve, r), v in zip(t.runs, rec.points, strict=True):
        u, a = r.metrics.get(spec.utility), r.metrics.get(spec.privacy)
        if u is None or a is None:
            continue
        pts.append({"curve": curve, "label": label, "utility": float(u), "leakage": float(a),
                    "release": bool(v.release)})
    if pts:
        page.figure(plane_figure(pts, utility=metric_title(spec.utility),
                                 privacy=metric_title(spec.privacy)))


def build_report(target: Any, *, store: Any, level: float = DEFAULT_LEVEL,
                 sections: Sequence[Mapping[str, Any]] = (), exposure: bool = True
                 ) -> PrivacyReport:
    """The privacy report of ``target`` (a stored run key, a stored sweep key, or a
    :class:`core.runs.compare.ComparisonSpec` whose points are all stored) at release ``level`` (the
    largest upper 95 % bound on TPR at 1 % FPR the rule accepts), with ``sections`` (plain
    dicts: title, sentences, rows, figure) after the runs. Raises ValueError for an unknown key,
    a level outside (0, 1), or a comparison with points missing
    (:class:`core.runs.compare.MissingPoints`). ``exposure``: add the per-record exposure
    (:mod:`core.report.exposure`) of a run, or the overlap of its defenses' most exposed records for a
    comparison, where the family stores per-record scores."""
    level = _check_level(level)
    t = _resolve(target, store)
    rec = _recommend(t, level)
    page = Page(t.title)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    page.add(f"<h1>{esc(t.title)}</h1><p class=\"sub\">{esc(t.subtitle)} · generated {stamp} "
             "by privlab from the stored results; every number below is read from the store "
             "</p>")
    _recommendation_block(page, rec)
    several = len(t.runs) > 1
    if several:
        _points_table(page, rec)
        if t.comparison is not None:
            _plane(page, t, rec)
    seen: dict[str, Any] = {}
    for _, _, r in t.runs:
        for a in present_attacks(r):
            seen.setdefault(a.name, a)
    _cards(page, list(seen.values()))
    for (label, _, r), v in zip(t.runs, rec.points, strict=True):
        _run_body(page, r, v, heading=label if several else None)
    extra = _exposure_sections(t, store) if exposure else []
    for i, s in enumerate([*extra, *sections]):
        page.section(s, i)
    page.h(2, "Appendix: configuration")
    if t.comparison is not None:
        spec = t.comparison.spec
        page.config({"family": spec.family, "data": spec.data, "utility": spec.utility,
                     "privacy": spec.privacy, "seeds": list(spec.seeds),
                     "defenses": [d.name for d in spec.defenses], "base": dict(spec.base)})
    else:
        page.config(t.runs[0][2].config if not several else
                    {label: r.config for label, _, r in t.runs[:1]})
    return PrivacyReport(html=page.html(), recommendation=rec, numbers=dict(page.numbers),
                         title=t.title)

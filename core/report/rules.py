"""The release rules of the privacy report, computed from a stored Result's numbers.

- **TPR rule** (the default; Carlini et al. 2022, "Membership inference attacks from first
  principles", argue for TPR at low FPR over AUC): release only when, for every attack run, the
  upper end of the 95 % interval of its TPR at 1 % FPR is at most ``level``. The interval is the
  stored one where the run recorded one; otherwise the exact (Clopper–Pearson) interval of the
  stored rate over the members it was scored on (``info["scored"]``): k = round(TPR · n_members)
  true positives out of n_members. That interval covers the members' sampling only; the
  threshold itself is read from the non-members, and with fewer than 100 of them 1 % FPR is
  below one false positive (the verdict says so).
- **SACRO-ML's rule** as SACRO-ML applies it (``sacroml/attacks/attack_report_formatter.py``,
  ``FinalRecommendationModule._statistically_significant_auc`` and ``process_dict``, AI-SDC/
  SACRO-ML; Smith et al. 2022). An attack's AUC is significant when p < 0.05 in SACRO-ML's
  one-sided test of AUC > 0.5 (``P_HIGHER_AUC``: 1 − Φ((AUC − 0.5)/σ₀), σ₀² the null variance
  of the AUC at 0.5, (0.25 + (n₊ − 1 + n₋ − 1)/12) / (n₊·n₋), Cortes & Mohri 2004 eq. 2, from
  the scored member and non-member counts). Two criteria each add evidence, never a refusal
  on their own: more than 10 % of the AUCs significant supports rejection with weight 2 (else
  it supports release); the mean AUC of the significant ones above 0.65 supports rejection with
  weight 4 (at most 0.65: supports release; no significant AUC: the criterion is silent). The
  weights of the criteria that support rejection are summed and capped at 5: SACRO-ML's
  disclosure score on a 0–5 scale, which its output checker reads beside the evidence listed.
  SACRO-ML runs both over the repetitions of one attack; here over the attacks run.
- **How they differ**: privlab's rule decides (release or not, at a level on TPR at 1 % FPR);
  SACRO-ML's grades the evidence (0–5) from AUCs alone and leaves the decision to a person.

Families whose attacks guess something other than membership get the rule that applies to them
instead
(:data:`FAMILY_RULES`), or none: a verdict of ``None`` with the reason, never a made-up number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: the release level when none is given (the largest upper bound on TPR at 1 % FPR accepted)
DEFAULT_LEVEL = 0.05
#: the TPR rule's operating point, as a stat of the family's attacks
TPR_STAT = "tpr_at_1pct_fpr"
#: the rule of a family no release rule applies to
NO_RULE = "no_rule"
#: SACRO-ML's thresholds and weights (FinalRecommendationModule: P_VAL_THRESH,
#: MEAN_AUC_THRESH, STATISTICALLY_SIGNIFICANT_SCORE, MEAN_AUC_SCORE; the score is capped at 5)
SACRO_P = 0.05
SACRO_MEAN_AUC = 0.65
SACRO_SIG_SHARE = 0.1
SACRO_SIG_WEIGHT = 2
SACRO_MEAN_AUC_WEIGHT = 4
SACRO_MAX_SCORE = 5
#: below this many non-members, 1 % FPR is less than one false positive
MIN_NEGATIVES_1PCT = 100

TPR_RULE_TEXT = ("Release only when the strongest attack's upper 95 % bound on TPR at 1 % FPR "
                 "is at most the level {level} (every attack run is checked; the bound is the "
                 "stored interval where the run has one, else the exact Clopper–Pearson "
                 "interval of the stored rate over the members scored).")
SACRO_RULE_TEXT = ("SACRO-ML weighs evidence instead of deciding. An attack's AUC is significant "
                   "when p < 0.05 (SACRO-ML's P_HIGHER_AUC: a one-sided normal test of AUC > 0.5 "
                   "with the null variance of the AUC, Cortes & Mohri eq. 2, from the scored "
                   "member and non-member counts). Criterion 1: more than 10 % of the AUCs "
                   "significant supports rejection, weight 2. Criterion 2: the mean AUC of the "
                   "significant ones above 0.65 supports rejection, weight 4. The weights that "
                   "support rejection add up to SACRO-ML's disclosure score, capped at 5 (0: no "
                   "evidence for rejection). SACRO-ML runs both over repetitions of one attack; "
                   "here over the attacks run.")
#: how privlab's rule and SACRO-ML's differ, said once beside both
RULES_DIFFER_TEXT = ("How the two differ: privlab's rule decides (release or not) from the "
                     "strongest attack's TPR at a low false-positive rate against a level; "
                     "SACRO-ML's grades the evidence for rejection on a 0–5 scale from AUCs "
                     "alone and leaves the decision to the output checker, so a score of 2 or 4 "
                     "is support for rejection, not a refusal.")
AUC_RULE_TEXT = ("The TPR-at-1 %-FPR rule does not apply: it bounds membership guesses, where "
                 "a member is rare among non-members, and these attacks guess a private "
                 "attribute of every row (their TPR at 1 % FPR is shown, not ruled on). The "
                 "rule applied instead: release only when the 95 % interval of every "
                 "attack's AUC contains chance (0.5), i.e. no attack is measurably above chance "
                 "at this sample size.")
NO_RULE_TEXT = ("No release rule applies: this family measures {what}, not a membership or "
                "attribute guess with a TPR or an AUC. The report shows the numbers and their "
                "bounds; a release decision needs a threshold on them that this report does not "
                "set.")

#: per family: which rule decides (``"tpr"``, ``"auc"``, or a description of what it measures)
FAMILY_RULES: dict[str, str] = {
    "attribute_privacy": "auc",
    "property": "auc",
}
NO_RULE_WHAT: dict[str, str] = {
    "gradient_leakage": "how well uploaded gradients can be inverted (MSE, PSNR, SSIM)",
    "repr_reconstruction": "how well shared representations can be inverted (MSE, PSNR, SSIM)",
    "fisher_information": "attribute reconstruction from a perturbed model against its "
                          "Cramér–Rao bound (Fisher information loss η)",
}


@dataclass(frozen=True)
class Num:
    """A printed number by name: ``<key12>/<metric>`` (a stored metric), ``<key12>/<metric>/lo``
    or ``/hi`` or ``/n`` (its stored interval), ``<key12>/scored/<attack>/pos`` or ``/neg`` (the
    stored counts), ``<key12>/derived/...`` (computed here from stored numbers: a bound, a p),
    ``param/level``."""

    name: str
    value: float | None

    def __str__(self) -> str:
        return fmt(self.value)


#: a sentence with its numbers kept by name
Parts = list["str | Num"]


def plain(parts: Parts) -> str:
    """A sentence as text."""
    return "".join(str(p) for p in parts)


def fmt(v: float | None) -> str:
    """How the report prints a number: 3 significant digits, thousands as integers with
    separators, ∞ for +inf, "n/a" for a missing or NaN value."""
    if v is None:
        return "n/a"
    v = float(v)
    if math.isnan(v):
        return "n/a"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if abs(v) >= 1000 or (v == int(v) and abs(v) >= 10):
        return f"{v:,.0f}"
    return f"{v:.3g}"


def auc_null_p(auc: float, n_pos: int, n_neg: int) -> float:
    """SACRO-ML's P_HIGHER_AUC: 1 − Φ((AUC − 0.5)/σ₀) with σ₀² = (0.25 + (n₊ − 1)/12 +
    (n₋ − 1)/12) / (n₊ n₋), the AUC's variance at 0.5 (Cortes & Mohri 2004, eq. 2)."""
    var0 = (0.25 + (n_pos - 1) * (1 / 3 - 0.25) + (n_neg - 1) * (1 / 3 - 0.25)) / (n_pos * n_neg)
    z = (float(auc) - 0.5) / math.sqrt(var0)
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def tpr_upper(tpr: float, n_pos: int) -> float:
    """Upper end of the exact 95 % interval of a TPR read over ``n_pos`` members."""
    from core.foundation.metrics import clopper_pearson

    k = min(max(round(float(tpr) * n_pos), 0), n_pos)
    return clopper_pearson(k, n_pos)[1]


@dataclass
class AttackCheck:
    """One attack's numbers as the rules read them (None: the run lacks it); ``metric(stat)``
    gives its stored metric name."""

    who: str
    key: str
    title: str
    prefix: str
    auc_name: str | None = None
    tpr_name: str | None = None
    auc: float | None = None
    tpr: float | None = None
    #: the upper 95 % bound on TPR at 1 % FPR and where it came from ("stored" / "clopper")
    tpr_hi: float | None = None
    tpr_hi_from: str | None = None
    auc_lo: float | None = None
    auc_hi: float | None = None
    n_pos: int | None = None
    n_neg: int | None = None
    #: SACRO-ML's p (P_HIGHER_AUC), None without counts
    p: float | None = None

    # -- the numbers by name (Num) -------------------------------------------------------------

    def n_auc(self) -> Num:
        return Num(f"{self.prefix}/{self.auc_name}", self.auc)

    def n_auc_lo(self) -> Num:
        return Num(f"{self.prefix}/{self.auc_name}/lo", self.auc_lo)

    def n_auc_hi(self) -> Num:
        return Num(f"{self.prefix}/{self.auc_name}/hi", self.auc_hi)

    def n_tpr(self) -> Num:
        return Num(f"{self.prefix}/{self.tpr_name}", self.tpr)

    def n_tpr_hi(self) -> Num:
        if self.tpr_hi_from == "stored":
            return Num(f"{self.prefix}/{self.tpr_name}/hi", self.tpr_hi)
        return Num(f"{self.prefix}/derived/tpr_hi/{self.key}", self.tpr_hi)

    def n_p(self) -> Num:
        return Num(f"{self.prefix}/derived/p/{self.key}", self.p)

    def n_pos_num(self) -> Num:
        return Num(f"{self.prefix}/scored/{self.key}/pos", self.n_pos)

    def n_neg_num(self) -> Num:
        return Num(f"{self.prefix}/scored/{self.key}/neg", self.n_neg)


@dataclass
class Verdict:
    """The rules' outcome for one run (a point of a sweep or comparison).

    ``release``: True / False, or None when the rule does not apply or cannot be decided
    (``reason`` says which); ``rule``: ``"tpr"``, ``"auc"`` or ``"no_rule"``; ``value``: the number
    the rule compared with the level (None without one); ``sacro``: SACRO-ML's outcome (True =
    release, False = reject, None = does not apply)."""

    key: str
    label: str
    kind: str
    rule: str
    release: bool | None
    reason: Parts
    level: float
    value: Num | None = None
    attack: str | None = None
    checks: list[AttackCheck] = field(default_factory=list)
    sacro: bool | None = None
    sacro_reason: Parts = field(default_factory=list)
    sacro_mean_auc: Num | None = None
    #: SACRO-ML's disclosure score, 0–5 (None: the rule does not apply)
    sacro_score: int | None = None
    utility_name: str | None = None
    utility: Num | None = None
    notes: list[Parts] = field(default_factory=list)

    @property
    def prefix(self) -> str:
        return self.key[:12]

    @property
    def sentence(self) -> str:
        return plain(self.reason)

    @property
    def word(self) -> str:
        """One word for a table: release / do not release / not decided / no rule."""
        if self.release is None:
            return "no rule" if self.rule == NO_RULE else "not decided"
        return "release" if self.release else "do not release"

    @property
    def sacro_word(self) -> str:
        """SACRO-ML's score for a table: "score 4 of 5 toward rejection", or "does not apply"."""
        if self.sacro_score is None:
            return "does not apply"
        return f"score {self.sacro_score} of {SACRO_MAX_SCORE} toward rejection"


def level_num(level: float) -> Num:
    return Num("param/level", float(level))


def _num(metrics: Mapping[str, float], name: str) -> float | None:
    v = metrics.get(name)
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else v


def present_attacks(result: Any) -> list[Any]:
    """The registered attacks of the run's family that reported a metric, in registry order."""
    from core.foundation.parts import FAMILIES, attacks_for

    if result.kind not in FAMILIES:
        return []
    return [a for a in attacks_for(result.kind)
            if any(m in result.metrics for m in a.metric_names())]


def _scored(result: Any, part: Any) -> tuple[int | None, int | None]:
    scored = (result.info or {}).get("scored") or {}
    got = scored.get(part.key) or scored.get(part.who)
    if not got or len(got) < 2:
        return None, None
    return int(got[0]), int(got[1])


def attack_checks(result: Any) -> list[AttackCheck]:
    """Each present attack's AUC, TPR at 1 % FPR with its upper bound, counts and p."""
    out = []
    for a in present_attacks(result):
        n_pos, n_neg = _scored(result, a)
        c = AttackCheck(who=a.who, key=a.key, title=a.title, prefix=(result.key or "")[:12],
                        n_pos=n_pos, n_neg=n_neg)
        if "auc" in a.stat_names():
            c.auc_name = a.metric_name("auc")
            c.auc = _num(result.metrics, c.auc_name)
            iv = result.interval(c.auc_name)
            if iv is not None and not any(math.isnan(x) for x in iv):
                c.auc_lo, c.auc_hi = iv
            if c.auc is not None and n_pos and n_neg:
                c.p = auc_null_p(c.auc, n_pos, n_neg)
        if TPR_STAT in a.stat_names():
            c.tpr_name = a.metric_name(TPR_STAT)
            c.tpr = _num(result.metrics, c.tpr_name)
            iv = result.interval(c.tpr_name)
            if c.tpr is not None and iv is not None and not math.isnan(iv[1]):
                c.tpr_hi, c.tpr_hi_from = float(iv[1]), "stored"
            elif c.tpr is not None and n_pos:
                c.tpr_hi, c.tpr_hi_from = tpr_upper(c.tpr, n_pos), "clopper"
        out.append(c)
    return out


def _rule_for(kind: str, checks: list[AttackCheck]) -> str:
    if any(c.tpr is not None for c in checks):
        return "tpr"
    return FAMILY_RULES.get(kind, NO_RULE)


def _sacro(v: Verdict) -> None:
    """SACRO-ML's two criteria and its 0–5 score (module docstring). ``v.sacro``: True when no
    criterion supports rejection (score 0), False when one does."""
    with_p = [c for c in v.checks if c.p is not None]
    if not with_p:
        v.sacro, v.sacro_reason = None, [("SACRO-ML's rule does not apply: no attack here has "
                                         "an AUC scored over known member and non-member "
                                         "counts.")]
        return
    sig = [c for c in with_p if c.p < SACRO_P]  # type: ignore[operator]
    score = 0
    share = len(sig) / len(with_p)
    named = f" ({', '.join(c.title for c in sig)})" if sig else ""
    if share > SACRO_SIG_SHARE:
        score += SACRO_SIG_WEIGHT
        parts: Parts = [(f"{len(sig)} of {len(with_p)} AUCs significant{named}, more than 10 %: "
                        f"supports rejection (weight {SACRO_SIG_WEIGHT}).")]
    else:
        parts = [(f"{len(sig)} of {len(with_p)} AUCs significant, at most 10 %: supports "
                 "release.")]
    if sig:
        mean = sum(c.auc for c in sig) / len(sig)  # type: ignore[misc]
        v.sacro_mean_auc = Num(f"{v.prefix}/derived/sacro_mean_auc", mean)
        above = mean > SACRO_MEAN_AUC
        score += SACRO_MEAN_AUC_WEIGHT if above else 0
        parts += [" Their mean AUC ", v.sacro_mean_auc,
                  f" is above 0.65: supports rejection (weight {SACRO_MEAN_AUC_WEIGHT})."
                  if above else " is at most 0.65: supports release."]
    v.sacro_score = min(score, SACRO_MAX_SCORE)
    v.sacro = v.sacro_score == 0
    v.sacro_reason = [*parts, f" SACRO-ML's score: {v.sacro_score} of {SACRO_MAX_SCORE}."]


def verdict(result: Any, *, level: float, label: str | None = None) -> Verdict:
    """The rules applied to one stored Result at ``level`` (see the module docstring)."""
    from core.foundation.metric_schema import HEADLINES

    checks = attack_checks(result)
    key = result.key or ""
    v = Verdict(key=key, label=label or key[:12], kind=result.kind,
                rule=_rule_for(result.kind, checks), release=None, reason=[], level=level,
                checks=checks)
    head = HEADLINES.get(result.kind)
    if head is not None and head.utility is not None and head.utility in result.metrics:
        v.utility_name = head.utility
        v.utility = Num(f"{v.prefix}/{head.utility}", _num(result.metrics, head.utility))
    if v.rule == "tpr":
        _tpr_rule(v)
    elif v.rule == "auc":
        _auc_rule(v)
    else:
        v.reason = [(f"No release rule applies to {_family_title(result.kind)}: see the rule "
                    "box.")]
    _sacro(v)
    return v


def _tpr_rule(v: Verdict) -> None:
    rated = [c for c in v.checks if c.tpr is not None]
    missing = [c for c in rated if c.tpr_hi is None]
    if missing:
        v.reason = [(f"Cannot be decided: {', '.join(c.title for c in missing)} reported TPR at "
                    "1 % FPR without the member count its bound needs.")]
        return
    worst = max(rated, key=lambda c: c.tpr_hi)  # type: ignore[arg-type,return-value]
    v.value, v.attack = worst.n_tpr_hi(), worst.title
    v.release = bool(worst.tpr_hi <= v.level)  # type: ignore[operator]
    lv = level_num(v.level)
    if v.release:
        v.reason = ["Release: every attack's upper 95 % bound on TPR at 1 % FPR is at most ",
                    lv, "; the largest, ", worst.n_tpr_hi(), f", is {worst.title}'s."]
    else:
        v.reason = [f"Do not release: {worst.title} reaches TPR ", worst.n_tpr(),
                    " at 1 % FPR, whose upper 95 % bound ", worst.n_tpr_hi(),
                    " exceeds the level ", lv, "."]
    few = [c for c in rated if c.n_neg is not None and c.n_neg < MIN_NEGATIVES_1PCT]
    if few:
        c = min(few, key=lambda c: c.n_neg)  # type: ignore[arg-type,return-value]
        v.notes.append(["TPR at 1 % FPR read from ", c.n_neg_num(), (" non-members: 1 % of "
                        "them is under one false positive, so the rate is read at the threshold "
                        "with no false positive at all, and its bound covers the members' "
                        "sampling only.")])


def _auc_rule(v: Verdict) -> None:
    rated = [c for c in v.checks if c.auc is not None]
    if not rated or any(c.auc_lo is None for c in rated):
        v.reason = ["Cannot be decided: an attack's AUC has no stored 95 % interval."
                    if rated else "Cannot be decided: no attack reported an AUC."]
        return
    worst = max(rated, key=lambda c: c.auc_lo)  # type: ignore[arg-type,return-value]
    v.value, v.attack = worst.n_auc_lo(), worst.title
    v.release = not worst.auc_lo > 0.5  # type: ignore[operator]
    if v.release:
        v.reason = [("Release: the 95 % interval of every attack's AUC contains chance 0.5 "
                    "(no attack measurably above chance).")]
    else:
        v.reason = [f"Do not release: {worst.title}'s AUC ", worst.n_auc(),
                    " has a 95 % interval [", worst.n_auc_lo(), ", ", worst.n_auc_hi(),
                    "] entirely above chance 0.5."]


def _family_title(kind: str) -> str:
    from core.foundation.parts import FAMILIES

    return FAMILIES.get(kind).title if kind in FAMILIES else kind.replace("_", " ")


def rule_text(rule: str, level: float, kind: str | None = None) -> str:
    """The rule ``rule`` written out (``kind``: the family a rule-less verdict is about)."""
    if rule == "tpr":
        return TPR_RULE_TEXT.format(level=fmt(level))
    if rule == "auc":
        return AUC_RULE_TEXT
    return NO_RULE_TEXT.format(what=NO_RULE_WHAT.get(kind or "", "no attack success with a "
                                                                 "TPR or an AUC"))


def best_point(verdicts: list[Verdict]) -> Verdict | None:
    """The released point with the most utility (None when no point meets the rule)."""
    ok = [v for v in verdicts if v.release and v.utility is not None
          and v.utility.value is not None]
    return max(ok, key=lambda v: v.utility.value) if ok else None  # type: ignore[union-attr]

"""Per-record exposure: which records an attack reads best, and which of them a defense
protects (Carlini et al., "The Privacy Onion", 2022: defenses move the exposure of the most
vulnerable records, not the average).

:func:`record_exposure` ranks a run's records by its family's per-record score (declared on
the family, :data:`core.foundation.parts.FAMILIES` ``exposure``; :mod:`core.attacks.exposure_records`), always
oriented **higher = more exposed**: membership, the attack's member score averaged over the
target models that trained on the record; gradient leakage, the PSNR of the record's
reconstruction; Fisher information, the release's per-example η; attribute inference, the
strongest attacker's confidence in the record's true private value. Records are named by their
index in the data set (the FIL view's training row for Fisher information), so runs on the
same data and seed name the same records.

:func:`exposure_overlap` compares the top-k sets of several runs (the defenses of a
comparison at one knob position and seed): the Jaccard index |A ∩ B| / |A ∪ B| of each pair,
the records in every top-k set, and Jaccard's chance level for two random k-sets of n records,
k / (2n − k) (E|A ∩ B| = k²/n).

Both carry ``.sentence`` (written from the numbers) and ``.report_section()`` (the report's
section dict: ``title``, ``sentences``, ``rows``, ``figure``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.attacks.exposure_records import Records, RecordScores
from core.foundation.result import Result

DIRECTION = "higher = more exposed"
#: record indices a sentence lists before "…"
LISTED = 10


def record_scores(result: Result, attack: str | None = None) -> RecordScores:
    """The per-record scores of ``result`` by its family's registered extractor (one-line
    ValueError for a family that keeps none)."""
    from core.foundation.parts import FAMILIES
    from core.foundation.registry import load_object

    fam = FAMILIES.get(result.kind) if result.kind in FAMILIES else None
    if fam is None or fam.exposure is None:
        keep = [n for n, f in FAMILIES.items() if f.exposure]
        raise ValueError(f"kind: got {result.kind!r}; per-record exposure is kept for "
                         f"{', '.join(keep)}")
    return load_object(fam.exposure)(result, attack=attack)


def recomputed_auc(result: Result, attack: str) -> tuple[float, float]:
    """(AUC recomputed from the stored arrays alone, AUC stored in the metrics) of a membership
    ``attack``: every target model's scores and membership labels
    (``record_model_scores_<attack>``, ``record_model_members_<attack>``), the rows the report
    scored (:func:`core.attacks.membership.scored_rows`, seeded by the run's seed) and the
    trapezoid over their ROC, as :func:`core.attacks.membership.membership_report` computes it.
    One-line ValueError when the run keeps no such arrays."""
    from core.attacks import membership as M
    from core.attacks.exposure_records import OLD_RUN
    from core.foundation.metrics import roc_curve_points
    from core.foundation.parts import attack_by_config_name

    names = (f"record_model_scores_{attack}", f"record_model_members_{attack}")
    if result.kind != "membership" or any(n not in result.artifacts for n in names):
        raise ValueError(f"attack: run {str(result.key)[:12]} keeps no per-model scores of "
                         f"{attack!r}; {OLD_RUN}")
    s = np.asarray(result.artifacts[names[0]], np.float64).reshape(-1)  # as the report read
    y = np.asarray(result.artifacts[names[1]]).reshape(-1).astype(bool)
    rows = M.scored_rows(s, y, seed=int(result.seed))
    fpr, tpr = roc_curve_points(y[rows].astype(np.int64), s[rows], drop_intermediate=False)
    stored = result.metrics[attack_by_config_name("membership", attack).metric_name("auc")]
    return M.trapezoid_auc(fpr, tpr), float(stored)


#: a title's trailing knob symbol ("RelaxLoss (α)"), dropped where the value follows
_SYMBOL = re.compile(r" \(\S{1,2}\)$")


def defense_label(result: Result) -> str:
    """The run's defense as a reader names it: its title and its knob's value."""
    from core.foundation.parts import DEFENSES

    if result.config.get("target"):  # weights trained elsewhere: privlab chose no defense
        return "the target's own training (trained elsewhere, not by privlab)"
    block = result.config.get("defense") or {}
    kind = str(block.get("kind", ""))
    if kind not in DEFENSES:
        return kind or "no defense"
    part = DEFENSES.get(kind)
    if part.baseline:
        return "no defense"
    knob = part.knob
    if knob is not None and block.get(knob.field) is not None:
        return f"{_SYMBOL.sub('', part.title)} at {knob.symbol} = {float(block[knob.field]):g}"
    return part.title


def _rank(index: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values) of the finite scores, most exposed first; ties by record index."""
    ok = np.isfinite(values)
    idx, val = index[ok], values[ok]
    order = np.lexsort((idx, -val))
    return idx[order], val[order]


def _listed(index: Sequence[int]) -> str:
    shown = ", ".join(str(int(i)) for i in list(index)[:LISTED])
    return shown + (", …" if len(index) > LISTED else "")


def _fmt(v: float) -> str:
    return f"{v:.3g}"


@dataclass(frozen=True)
class RecordExposure:
    """The records of one run ranked by exposure: ``ranked`` (data-set indices, most exposed
    first, finite scores only) with their ``ranked_values``, the ``top`` ``top_n`` of them,
    ``ties_at_cut`` (records outside the top with the N-th score: the cut is arbitrary among
    them), and what the score is (``family``, ``score``, ``title``, ``unit``,
    ``direction``, ``attack``, ``reference``: chance where the score has one)."""

    family: str
    score: str
    title: str
    unit: str
    attack: str | None
    defense: str
    scored: str
    named: str
    ranked: np.ndarray
    ranked_values: np.ndarray
    top_n: int
    ties_at_cut: int
    reference: float | None
    loader: Callable[[np.ndarray], Records] = field(repr=False, compare=False)
    direction: str = DIRECTION

    @property
    def top(self) -> np.ndarray:
        return self.ranked[:self.top_n]

    @property
    def top_values(self) -> np.ndarray:
        return self.ranked_values[:self.top_n]

    @property
    def n_scored(self) -> int:
        return len(self.ranked)

    def records(self, index: Sequence[int] | None = None) -> Records:
        """The records (pictures or table rows) of ``index`` (default: the top N)."""
        return self.loader(np.asarray(self.top if index is None else index, dtype=np.int64))

    def _labels(self) -> list[str] | None:
        try:
            return self.records().labels
        except (OSError, ValueError, KeyError):  # the data set is not on this machine
            return None

    @property
    def sentence(self) -> str:
        n, k = self.n_scored, len(self.top)
        if k == 0:
            return f"Under {self.defense}, no record has a finite {self.title}."
        unit = f" {self.unit}" if self.unit else ""
        med = float(np.median(self.ranked_values))
        ref = "" if self.reference is None else f", chance {_fmt(self.reference)}"
        s = (f"Under {self.defense}, the {k} most exposed of {n} scored records ({self.title}; "
             f"{self.direction}) score {_fmt(self.top_values[-1])} to "
             f"{_fmt(self.top_values[0])}{unit} against a median of {_fmt(med)}{unit}{ref}: "
             f"records {_listed(self.top)}.")
        labels = self._labels()
        if labels:
            lab, c = Counter(labels).most_common(1)[0]
            s += f" The most common label among them is {lab!r} ({c} of {k})."
        if self.ties_at_cut:
            t = self.ties_at_cut
            s += (f" {t} more record{' ties' if t == 1 else 's tie'} with the {k}th score, so "
                  "the cut among them is arbitrary.")
        return s

    def report_section(self) -> dict[str, Any]:
        """The report's section: the sentence, one row per top record, a histogram of every
        scored record's score with the top N's threshold."""
        import plotly.graph_objects as go

        labels = self._labels() or [""] * len(self.top)
        rows = [{"rank": r + 1, "record": int(i), "score": float(v), "label": lab}
                for r, (i, v, lab) in enumerate(zip(self.top, self.top_values, labels,
                                                    strict=True))]
        fig = go.Figure(go.Histogram(x=self.ranked_values, nbinsx=40, name="every record"))
        if len(self.top):
            fig.add_vline(x=float(self.top_values[-1]), line_dash="dash",
                          annotation_text=f"top {len(self.top)}")
        fig.update_layout(xaxis_title=self.title + (f" ({self.unit})" if self.unit else ""),
                          yaxis_title="records", height=300, showlegend=False)
        return {"title": f"Most exposed records ({self.defense})", "sentences": [self.sentence],
                "rows": rows, "figure": fig}


def record_exposure(result: Result, *, top_n: int = 10,
                    attack: str | None = None) -> RecordExposure:
    """The run's records ranked by its family's per-record score (``attack``: the attack
    whose score ranks them, default the run's strongest), the ``top_n`` most exposed first."""
    if not isinstance(top_n, int | np.integer) or top_n < 1:
        raise ValueError(f"top_n: got {top_n!r}; allowed: an integer >= 1")
    rs = record_scores(result, attack)
    idx, val = _rank(np.asarray(rs.index, np.int64), np.asarray(rs.values, np.float64))
    n = min(int(top_n), len(idx))
    ties = int(np.sum(val[n:] == val[n - 1])) if 0 < n < len(val) else 0
    return RecordExposure(family=rs.family, score=rs.score, title=rs.title, unit=rs.unit,
                          attack=rs.attack, defense=defense_label(result), scored=rs.scored,
                          named=rs.named,
                          ranked=idx, ranked_values=val, top_n=n, ties_at_cut=ties,
                          reference=rs.reference, loader=rs.records)


# ---------------------------------------------------------------------------------------------
# across defenses


def jaccard(a: Sequence[int], b: Sequence[int]) -> float:
    """|A ∩ B| / |A ∪ B| of two sets of record indices (1 for two empty sets)."""
    sa, sb = {int(x) for x in a}, {int(x) for x in b}
    union = len(sa | sb)
    return 1.0 if union == 0 else len(sa & sb) / union


def chance_jaccard(k: int, n: int) -> float:
    """Expected Jaccard index of two independent uniform k-subsets of n records, to first
    order: E|A ∩ B| = k²/n, so J ≈ (k²/n) / (2k − k²/n) = k / (2n − k)."""
    if n <= 0 or k <= 0:
        return float("nan")
    k = min(k, n)
    return k / (2 * n - k)


@dataclass(frozen=True)
class ExposureOverlap:
    """The top-``k`` exposed sets of several runs (``names``, one per defense; ``sets`` in
    that order, most exposed first), their pairwise ``jaccard`` matrix, the records in every
    set (``always``, in the first run's order), the records every run scored
    (``n_common``) and Jaccard's chance level for that many."""

    names: list[str]
    k: int
    family: str
    title: str
    sets: list[np.ndarray]
    jaccard: np.ndarray
    always: np.ndarray
    n_common: int
    chance: float
    notes: list[str]
    exposures: list[RecordExposure] = field(repr=False, compare=False)

    @property
    def off_diagonal(self) -> np.ndarray:
        m = len(self.names)
        return self.jaccard[~np.eye(m, dtype=bool)]

    @property
    def sentence(self) -> str:
        n, k, m = len(self.always), self.k, len(self.names)
        head = (f"{n} of the {k} most exposed records stay in the top {k} under every "
                f"defense ({m}: {', '.join(self.names)})")
        head = (head + f": records {_listed(self.always)}." if n else
                f"None of the {k} most exposed records stays in the top {k} under every "
                f"defense ({m}: {', '.join(self.names)}).")
        off = self.off_diagonal
        s = (f"{head} Pairwise Jaccard overlap of the top-{k} sets ({self.title}): "
             f"{_fmt(float(off.min()))} to {_fmt(float(off.max()))}, against "
             f"{_fmt(self.chance)} for two random sets of {k} of the {self.n_common} records "
             "every run scored.")
        return " ".join([s, *self.notes])

    def report_section(self) -> dict[str, Any]:
        """The report's section: the sentence, one row per pair of defenses, the Jaccard
        heatmap."""
        import plotly.graph_objects as go

        rows: list[dict[str, str | float | int]] = []
        for i, a in enumerate(self.names):
            for j in range(i + 1, len(self.names)):
                shared = len(set(self.sets[i].tolist()) & set(self.sets[j].tolist()))
                rows.append({"defense A": a, "defense B": self.names[j],
                             "shared": shared, "jaccard": float(self.jaccard[i, j])})
        # long names ("κ channel (data-space noise) · natural at κ = 0.5") on two lines
        names = [n.replace(" at ", "<br>at ") for n in self.names]
        fig = go.Figure(go.Heatmap(
            z=self.jaccard, x=names, y=names, zmin=0.0, zmax=1.0,
            colorscale="Blues", text=[[f"{v:.2f}" for v in row] for row in self.jaccard],
            texttemplate="%{text}", colorbar={"title": "Jaccard"}))
        fig.update_layout(height=120 + 60 * len(self.names), yaxis_autorange="reversed",
                          title=f"Overlap of the top-{self.k} exposed records")
        return {"title": f"Records exposed under every defense (top {self.k})",
                "sentences": [self.sentence], "rows": rows, "figure": fig}


def exposure_overlap(results_by_defense: Mapping[str, Result], *, k: int = 20
                     ) -> ExposureOverlap:
    """The top-``k`` exposed records of each run (two or more of one family, same data and
    seed: the records share their indices) and how they overlap. Every run is ranked by the
    first run's attack where it reports it (its own strongest otherwise, said in
    ``notes``); ``k`` is cut to the fewest records a run scored."""
    if not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k: got {k!r}; allowed: an integer >= 1")
    names = list(results_by_defense)
    if len(names) < 2:
        raise ValueError(f"results_by_defense: got {len(names)} run(s); allowed: two or more")
    kinds = {r.kind for r in results_by_defense.values()}
    if len(kinds) > 1:
        raise ValueError(f"results_by_defense: got kinds {sorted(kinds)}; allowed: one family")
    notes: list[str] = []
    first = record_exposure(results_by_defense[names[0]], top_n=int(k))
    exps = [first]
    for name in names[1:]:
        try:
            exps.append(record_exposure(results_by_defense[name], top_n=int(k),
                                        attack=first.attack))
        except (ValueError, KeyError):
            e = record_exposure(results_by_defense[name], top_n=int(k))
            notes.append(f"{name} ranks by its own strongest attack ({e.title}).")
            exps.append(e)
    kk = min(int(k), *(e.n_scored for e in exps))
    if kk < k:
        notes.append(f"k cut to {kk}: the fewest records a run scored.")
    common = set(exps[0].ranked.tolist())
    for e in exps[1:]:
        common &= set(e.ranked.tolist())
    if any(len(common) < e.n_scored for e in exps):
        notes.append(f"The runs scored different records ({len(common)} in common): compare "
                     "runs on the same data and seed.")
    sets = [e.ranked[:kk] for e in exps]
    m = len(sets)
    J = np.array([[jaccard(sets[i], sets[j]) for j in range(m)] for i in range(m)])
    inter = set(sets[0].tolist())
    for s in sets[1:]:
        inter &= set(s.tolist())
    always = np.array([i for i in sets[0].tolist() if i in inter], dtype=np.int64)
    return ExposureOverlap(names=names, k=kk, family=first.family, title=first.title,
                           sets=sets, jaccard=J, always=always, n_common=len(common),
                           chance=chance_jaccard(kk, len(common)), notes=notes,
                           exposures=exps)


def comparison_points(comparison: Any, *, position: int | None = None,
                      seed_index: int = 0) -> dict[str, str]:
    """The stored run key of each curve of a :class:`core.runs.compare.Comparison` at grid
    ``position`` (cut to the curve's last; None: each curve's first) and the seed at
    ``seed_index``, by the curve's name and knob value ("RelaxLoss at α = 1")."""
    out: dict[str, str] = {}
    for c in comparison.curves:
        j = 0 if position is None else max(0, min(int(position), len(c.knob) - 1))
        si = max(0, min(int(seed_index), len(c.seeds) - 1))
        if not c.keys[j][si]:
            continue
        name = (c.name if c.knob_field is None else
                f"{_SYMBOL.sub('', c.name)} at {c.symbol} = {c.knob[j]:g}")
        out[name] = c.keys[j][si]
    return out


def comparison_results(comparison: Any, store: Any, *, position: int | None = None,
                       seed_index: int = 0) -> dict[str, Result]:
    """One stored run per curve (:func:`comparison_points`) read from ``store``; curves whose
    point is not stored are left out."""
    got = {name: store.get(key) for name, key in
           comparison_points(comparison, position=position, seed_index=seed_index).items()}
    return {name: r for name, r in got.items() if r is not None}

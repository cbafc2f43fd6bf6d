"""The one metrics module of privlab (DESIGN: Metrics): numpy (+ scipy's beta quantile for
exact intervals, scikit-image for SSIM), each figure equal bit for bit to scikit-learn's
definition of the same name (``roc_curve``, ``roc_auc_score``, ``balanced_accuracy_score``; the
tests compare them), without importing scikit-learn: every run scores its attacks here, and
sklearn's import (scipy.stats, pandas) would cost a small run more than its training.

Attack metrics take the attacker's *probabilities* so every view (accuracy, balanced accuracy,
AUC, advantage, cross-entropy, ROC) comes from the same numbers:

- binary: ``proba`` of shape (n,) (positive-class probability) or (n, 2);
- multi-class: ``proba`` of shape (n, k); column j is the probability of class code j.

Class codes are integers 0..k-1. A class absent from ``y_true`` is skipped where a metric is
undefined for it (its one-vs-rest AUC / advantage), never an error.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from core.foundation.checks import check_int, check_range, range_error

_PROB_FLOOR = 1e-12  # clip p(true) before the log: CE of a single sample is at most ~27.6 nats


# ---------------------------------------------------------------------------------------------
# helpers


def _as_labels(y: np.ndarray, name: str = "y_true") -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(
            f"{name}: got shape {y.shape}; expected a 1-D array of integer class codes"
        )
    if y.size and not np.all(np.equal(np.mod(y, 1), 0)):
        raise ValueError(f"{name}: got non-integer values; expected integer class codes 0..k-1")
    y = y.astype(np.int64)
    if y.size and y.min() < 0:
        raise range_error(name, int(y.min()), 0, note="a class code")
    return y


def _as_proba_matrix(proba: np.ndarray, n: int) -> np.ndarray:
    """(n,) positive-class probabilities -> (n, 2); (n, k) unchanged. Checks the range [0, 1]."""
    p = np.asarray(proba, dtype=np.float64)
    if p.ndim == 1:
        p = np.stack([1.0 - p, p], axis=1)
    if p.ndim != 2 or p.shape[0] != n:
        raise ValueError(
            f"proba: got shape {np.shape(proba)}; expected ({n},) or ({n}, k) to match y_true"
        )
    if p.shape[1] < 2:
        raise ValueError(f"proba: got {p.shape[1]} column(s); expected k >= 2 classes")
    if p.size and (np.nanmin(p) < -1e-9 or np.nanmax(p) > 1 + 1e-9):
        raise ValueError(
            "proba: got values outside [0, 1]; expected probabilities (apply softmax/sigmoid first)"
        )
    return p


def _resampled_auc_adv(
    pos: np.ndarray, score: np.ndarray, idx: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Binary AUC and advantage of ``score`` on each resample ``idx[b]`` (rows of original row
    indices, shape (B, m)); ``pos`` (n,) bool. One sort, then O(B·m) counting: AUC by the rank
    (Mann-Whitney) formula P(s+ > s-) + ½ P(s+ = s-), advantage = max(0, max over thresholds t
    of TPR(s >= t) − FPR(s >= t)). NaN for a resample without positives or without negatives."""
    order = np.argsort(score, kind="mergesort")
    s = score[order]
    new_group = np.r_[True, s[1:] != s[:-1]]  # tied scores form one threshold
    group = np.empty(s.size, dtype=np.int64)
    group[order] = np.cumsum(new_group) - 1
    G = int(new_group.sum())
    key = 2 * group + pos.astype(np.int64)  # (group, is positive) of each original row
    B = idx.shape[0]
    flat = (key[idx] + (2 * G) * np.arange(B, dtype=np.int64)[:, None]).ravel()
    counts = np.bincount(flat, minlength=2 * G * B).reshape(B, G, 2)
    Wn, Wp = counts[:, :, 0], counts[:, :, 1]
    cn = np.cumsum(Wn, axis=1)
    cp = np.cumsum(Wp, axis=1)
    n0, n1 = cn[:, -1], cp[:, -1]
    cnb = cn - Wn  # negatives strictly below each group
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = np.einsum("bg,bg->b", Wp, 2 * cnb + Wn) / (2.0 * n1 * n0)
        # threshold at group g: TPR = 1 − (cp − Wp)/n1, FPR = 1 − cnb/n0
        adv = np.maximum(np.max(cnb / n0[:, None] - (cp - Wp) / n1[:, None], axis=1), 0.0)
    bad = (n1 == 0) | (n0 == 0)
    auc[bad] = np.nan
    adv[bad] = np.nan
    return auc, adv


def advantage(y01: np.ndarray, score: np.ndarray) -> float:
    """Attack advantage max over thresholds t of TPR − FPR of "positive iff score >= t" (the
    all-negative threshold included, so >= 0); NaN when only one class is present.

    Signed on purpose (DESIGN, membership): the attacker must know which direction of the score
    means "positive"; a score anti-correlated with the label earns no advantage here, as an
    attacker reading it the stated way would get none (max |TPR − FPR| would credit it)."""
    y = _as_labels(y01, "y01")
    s = np.asarray(score, dtype=np.float64)
    if s.shape != y.shape:
        raise ValueError(f"score: got shape {s.shape}; expected {y.shape} to match y01")
    if y.size and y.max() > 1:
        raise ValueError(f"y01: got class code {int(y.max())}; expected binary 0/1 codes")
    if not np.all(np.isfinite(s)):
        raise ValueError("score: got NaN or inf; expected finite scores")
    if y.size == 0 or y.min() == y.max():
        return float("nan")
    return float(_resampled_auc_adv(y == 1, s, np.arange(y.size)[None, :])[1][0])


def _roc(y01: np.ndarray, score: np.ndarray, drop_intermediate: bool) -> tuple[np.ndarray, np.ndarray]:
    """(fpr, tpr) of "positive iff score >= t" at every distinct score t, from (0, 0) to (1, 1)
    (Fawcett 2006, Algorithm 1): the positives and negatives at or above each threshold
    counted exactly, then one division each, so the points are those of sklearn's
    ``roc_curve``. ``drop_intermediate`` drops points collinear with their neighbours (no
    corner: zero second difference of both counts), as sklearn does; the area is unchanged."""
    order = np.argsort(score, kind="mergesort")[::-1]
    s = score[order]
    last = np.r_[np.flatnonzero(s[1:] != s[:-1]), s.size - 1]  # last row of each tied group
    tps = np.cumsum(y01[order], dtype=np.float64)[last]
    fps = 1.0 + last - tps
    if drop_intermediate and fps.size > 2:
        corner = np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True]
        tps, fps = tps[corner], fps[corner]
    tps, fps = np.r_[0.0, tps], np.r_[0.0, fps]
    return fps / fps[-1], tps / tps[-1]


def _trapezoid(fpr: np.ndarray, tpr: np.ndarray) -> float:
    """Area under the ROC points by the trapezoid rule (sklearn's ``auc``)."""
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))


def _auc_binary(y01: np.ndarray, score: np.ndarray) -> float:
    """Binary ROC AUC (sklearn's ``roc_auc_score``: the trapezoid over the ROC's corners)."""
    if y01.min() == y01.max():
        return float("nan")
    s = np.asarray(score, dtype=np.float64)
    if not np.all(np.isfinite(s)):
        raise ValueError("proba: got NaN or inf; expected finite probabilities")
    return _trapezoid(*_roc(y01, s, True))


def _balanced_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    """Mean recall over the classes present in ``y`` (sklearn's ``balanced_accuracy_score``:
    a class only predicted has no recall and is left out)."""
    counts = np.bincount(y)
    hits = np.bincount(y[pred == y], minlength=counts.size)
    present = counts > 0
    return float(np.mean(hits[present] / counts[present]))


# ---------------------------------------------------------------------------------------------
# attack metrics


def accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    """Fraction of predictions equal to the labels."""
    y = np.asarray(y)
    pred = np.asarray(pred)
    if y.shape != pred.shape:
        raise ValueError(f"pred: got shape {pred.shape}; expected {y.shape} to match y")
    return float(np.mean(y == pred)) if y.size else float("nan")


def cross_entropy_nats(y_true: np.ndarray, proba: np.ndarray) -> float:
    """Mean -ln p(true class), with p clipped below at 1e-12 (nats)."""
    y = _as_labels(y_true)
    p = _as_proba_matrix(proba, y.size)
    if y.size and y.max() >= p.shape[1]:
        raise ValueError(
            f"y_true: got class code {int(y.max())}; proba has only {p.shape[1]} columns"
        )
    pt = np.clip(p[np.arange(y.size), y], _PROB_FLOOR, 1.0)
    return float(-np.mean(np.log(pt))) if y.size else float("nan")


def decide(proba: np.ndarray, decision_weights: np.ndarray | None = None) -> np.ndarray:
    """The attacker's decision: argmax_c p_c · w_c (plain argmax when ``w`` is None). With
    w_c = 1/π_c (π = the attacker's training frequencies) this is the Bayes decision under a
    uniform prior: the class-balanced decision of a calibrated attacker."""
    p = np.asarray(proba, dtype=np.float64)
    if decision_weights is None:
        return np.argmax(p, axis=1)
    w = np.asarray(decision_weights, dtype=np.float64)
    if w.shape != (p.shape[1],):
        raise ValueError(f"decision_weights: got shape {w.shape}; expected ({p.shape[1]},)")
    return np.argmax(p * w[None, :], axis=1)


def attack_scores(
    y_true: np.ndarray, proba: np.ndarray, *, decision_weights: np.ndarray | None = None
) -> dict[str, float]:
    """Scores of an inference attack from its probabilities.

    Returns ``accuracy`` (of :func:`decide`: argmax, or argmax p·w with ``decision_weights``), ``balanced_accuracy`` (mean recall over the classes present
    in ``y_true``), ``auc`` (binary ROC AUC; multi-class: one-vs-rest macro AUC over the classes
    present, = sklearn ``roc_auc_score(multi_class='ovr')`` when all k are present),
    ``advantage`` (binary: max_t TPR - FPR; multi-class: mean one-vs-rest advantage over present
    classes), ``cross_entropy_nats`` (mean -ln p(true), clipped), ``chance`` (1/k) and ``n``.
    Undefined values (e.g. AUC when ``y_true`` holds one class) are NaN.
    """
    y = _as_labels(y_true)
    p = _as_proba_matrix(proba, y.size)
    k = p.shape[1]
    if y.size and y.max() >= k:
        raise ValueError(
            f"y_true: got class code {int(y.max())}; proba has only {k} columns (codes 0..{k - 1})"
        )
    out: dict[str, float] = {"n": float(y.size), "chance": 1.0 / k}
    if y.size == 0:
        nan = float("nan")
        out.update(
            accuracy=nan, balanced_accuracy=nan, auc=nan, advantage=nan, cross_entropy_nats=nan
        )
        return out
    pred = decide(p, decision_weights)
    out["accuracy"] = accuracy(y, pred)
    out["balanced_accuracy"] = _balanced_accuracy(y, pred)
    if k == 2:
        y01 = (y == 1).astype(np.int64)
        out["auc"] = _auc_binary(y01, p[:, 1])
        out["advantage"] = advantage(y01, p[:, 1])
    else:
        present = np.unique(y)
        if present.size >= 2:
            out["auc"] = float(
                np.mean([_auc_binary((y == c).astype(np.int64), p[:, c]) for c in present])
            )
        else:
            out["auc"] = float("nan")
        if present.size >= 2:
            out["advantage"] = float(
                np.mean([advantage((y == c).astype(np.int64), p[:, c]) for c in present])
            )
        else:
            out["advantage"] = float("nan")
    out["cross_entropy_nats"] = cross_entropy_nats(y, p)
    return {
        k_: out[k_]
        for k_ in (
            "accuracy",
            "balanced_accuracy",
            "auc",
            "advantage",
            "cross_entropy_nats",
            "chance",
            "n",
        )
    }


def prior_proba(y_train: np.ndarray, n: int, n_classes: int | None = None) -> np.ndarray:
    """The no-model attacker's probabilities: train class frequencies (add-one smoothed so a
    class unseen in training keeps a small mass), the same row repeated ``n`` times -> (n, k)."""
    y = _as_labels(y_train, "y_train")
    k = int(n_classes) if n_classes is not None else int(max(2, y.max() + 1 if y.size else 2))
    if y.size and y.max() >= k:
        raise ValueError(f"n_classes: got {k}; y_train holds class code {int(y.max())}")
    counts = np.bincount(y, minlength=k).astype(np.float64)
    freq = (counts + 1.0) / (counts.sum() + k)
    return np.tile(freq, (int(n), 1))


def prior_scores(
    y_train: np.ndarray, y_test: np.ndarray, n_classes: int | None = None
) -> dict[str, float]:
    """The no-model baseline as an :func:`attack_scores` dict: always predict the train-majority
    class (accuracy = that class's test share, balanced accuracy = 1/#present classes, AUC 0.5,
    advantage 0); ``cross_entropy_nats`` is the test labels' CE under the train frequencies
    (~ H(u) in nats); ``chance`` = 1/k."""
    y_tr = _as_labels(y_train, "y_train")
    y_te = _as_labels(y_test, "y_test")
    if n_classes is None:
        hi = max(int(y_tr.max()) if y_tr.size else 0, int(y_te.max()) if y_te.size else 0)
        n_classes = max(2, hi + 1)
    return attack_scores(y_te, prior_proba(y_tr, y_te.size, n_classes))


# ---------------------------------------------------------------------------------------------
# ROC views (membership and binary attribute attacks)


def roc_curve_points(
    y: np.ndarray, score: np.ndarray, *, drop_intermediate: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """ROC points (fpr, tpr), increasing, from (0, 0) to (1, 1), for a binary label and a score
    (higher = more likely positive). For both the linear and the log-log plot."""
    y = _as_labels(y, "y")
    if y.size == 0 or np.unique(y).size != 2 or y.max() > 1:
        raise ValueError("y: expected binary labels 0/1 with both classes present")
    s = np.asarray(score, dtype=np.float64)
    if s.shape != y.shape:
        raise ValueError(f"score: got shape {s.shape}; expected {y.shape} to match y")
    if not np.all(np.isfinite(s)):
        raise ValueError("score: got NaN or inf; expected finite scores")
    return _roc(y, s, drop_intermediate)


def tpr_at_fpr(y: np.ndarray, score: np.ndarray, fpr_target: float) -> float:
    """Largest TPR over thresholds whose FPR <= ``fpr_target`` (the LiRA convention)."""
    check_range("fpr_target", fpr_target, 0, 1)
    fpr, tpr = roc_curve_points(y, score, drop_intermediate=False)
    ok = fpr <= fpr_target + 1e-15
    return float(np.max(tpr[ok])) if np.any(ok) else 0.0


def _beta_quantile(q, a, b):
    """The q-quantile of Beta(a, b) (``scipy.stats.beta.ppf(q, a, b)``): the inverse regularised
    incomplete beta function that ppf evaluates (Boost's ``ibeta_inv``), from scipy.special,
    which imports in a fraction of scipy.stats' time."""
    from scipy.special import betaincinv

    return betaincinv(a, b, q)


def empirical_epsilon_lower_bound(
    fpr: np.ndarray,
    tpr: np.ndarray,
    delta: float,
    *,
    n_neg: int | None = None,
    n_pos: int | None = None,
    confidence: float = 0.95,
) -> float:
    """Empirical ε from an attack's ROC: max over thresholds of
    ln((TPR − δ)/FPR) and ln((1 − FPR − δ)/(1 − TPR)) (the (ε, δ)-DP hypothesis-testing region,
    Kairouz et al. 2015; as used by Jagielski et al. 2020 / Nasr et al. 2021). Points with a zero
    denominator or non-positive numerator are skipped; the result is >= 0.

    Caveat: from point estimates of FPR/TPR this is an *estimate*, not a certified lower bound.
    Pass the counts ``n_neg`` / ``n_pos`` to replace FPR and 1 − TPR by their one-sided
    Clopper–Pearson upper limits (each at level ``(1 + confidence) / 2``, so the pair holds
    jointly at ``confidence`` by the union bound), which gives a lower bound that holds with
    that confidence.
    """
    fpr = np.asarray(fpr, dtype=np.float64)
    tpr = np.asarray(tpr, dtype=np.float64)
    if fpr.shape != tpr.shape:
        raise ValueError(f"tpr: got shape {tpr.shape}; expected {fpr.shape} to match fpr")
    check_range("delta", delta, 0, 1, hi_open=True)
    if (n_neg is None) != (n_pos is None):
        raise ValueError("n_neg, n_pos: give both counts (for Clopper-Pearson limits) or neither")
    if n_neg is not None:
        check_range("confidence", confidence, 0, 1, lo_open=True, hi_open=True)
        a = 1.0 - (1.0 + confidence) / 2.0  # one-sided tail per rate

        def upper(rate: np.ndarray, n: int) -> np.ndarray:
            k = np.rint(rate * n)
            return np.where(k >= n, 1.0, _beta_quantile(1.0 - a, k + 1, np.maximum(n - k, 1e-300)))

        fpr_u = upper(fpr, int(n_neg))
        fnr_u = upper(1.0 - tpr, int(n_pos))
        fpr, tpr = fpr_u, 1.0 - fnr_u
    with np.errstate(divide="ignore", invalid="ignore"):
        num1, den1 = tpr - delta, fpr
        num2, den2 = 1.0 - fpr - delta, 1.0 - tpr
        e1 = np.where((num1 > 0) & (den1 > 0), np.log(num1 / den1), -np.inf)
        e2 = np.where((num2 > 0) & (den2 > 0), np.log(num2 / den2), -np.inf)
    best = max(float(np.max(e1, initial=-np.inf)), float(np.max(e2, initial=-np.inf)))
    return max(0.0, best)


# ---------------------------------------------------------------------------------------------
# uncertainty (DESIGN: "near chance" is claimed only by interval)


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper–Pearson) two-sided interval for a binomial proportion k/n: the same as
    ``scipy.stats.binomtest(k, n).proportion_ci(confidence, method='exact')``."""
    a = (1.0 - check_range("confidence", confidence, 0, 1, lo_open=True, hi_open=True)) / 2.0
    n = check_int("n", n, 1, note="a count")
    k = check_int("k", k, 0, n, note="a count, at most n")
    lo = 0.0 if k == 0 else float(_beta_quantile(a, k, n - k + 1))
    hi = 1.0 if k == n else float(_beta_quantile(1.0 - a, k + 1, n - k))
    return lo, hi


def _resample_indices(
    y: np.ndarray, n_boot: int, rng: np.random.Generator, stratified: bool
) -> np.ndarray:
    """(n_boot, n) row indices of bootstrap resamples. Stratified: each class keeps its count
    (columns grouped by class, in sorted class order), so every resample has every class."""
    check_int("n_boot", n_boot, 1)
    n = y.shape[0]
    if not stratified:
        return rng.integers(0, n, size=(int(n_boot), n))
    blocks = []
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        blocks.append(rows[rng.integers(0, rows.size, size=(int(n_boot), rows.size))])
    return np.concatenate(blocks, axis=1)


def _percentile_interval(stats: np.ndarray, confidence: float) -> tuple[float, float]:
    a = (1.0 - confidence) / 2.0
    stats = np.asarray(stats, dtype=np.float64)
    stats = stats[~np.isnan(stats)]
    if stats.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(stats, [a, 1.0 - a])
    return float(lo), float(hi)


def bootstrap_interval(
    stat_fn: Callable[[np.ndarray, np.ndarray], float],
    y: np.ndarray,
    score_or_proba: np.ndarray,
    *,
    n_boot: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
    stratified: bool = True,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat_fn(y_b, score_b)`` over ``n_boot`` resamples of
    the rows (stratified by the classes of ``y`` by default, so every resample has every class
    present). NaN statistics are dropped; (NaN, NaN) when all are NaN or ``y`` is empty.
    :func:`attack_intervals` draws the same resamples for the same ``seed``."""
    confidence = check_range("confidence", confidence, 0, 1, lo_open=True, hi_open=True)
    y = np.asarray(y)
    s = np.asarray(score_or_proba)
    if y.ndim != 1 or s.shape[:1] != y.shape:
        raise ValueError(
            f"score_or_proba: got shape {s.shape}; expected ({y.shape[0] if y.ndim else '?'}, ...) "
            f"rows matching a 1-D y of shape {y.shape}"
        )
    if y.size == 0:
        return float("nan"), float("nan")
    idx = _resample_indices(y, n_boot, np.random.default_rng(seed), stratified)
    stats = np.array([float(stat_fn(y[i], s[i])) for i in idx])
    return _percentile_interval(stats, confidence)


def attack_intervals(
    y_true: np.ndarray,
    proba: np.ndarray,
    *,
    n_boot: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
    decision_weights: np.ndarray | None = None,
) -> dict[str, tuple[float, float]]:
    """``confidence`` (95 %) intervals for the :func:`attack_scores` of the same inputs (the
    same ``decision_weights`` for accuracy and balanced accuracy): ``accuracy`` (exact
    Clopper–Pearson), ``balanced_accuracy``, ``auc`` and ``advantage`` (stratified percentile
    bootstrap, ``n_boot`` resamples drawn as :func:`bootstrap_interval` draws them).

    Vectorised over resamples: AUC and advantage come from one sort per score column and
    per-resample counts of (tied-score group, class) by the rank (Mann-Whitney) formula; for
    k > 2 they are the one-vs-rest means over the classes present, as in :func:`attack_scores`.
    Undefined intervals (empty input; AUC with one class present) are (NaN, NaN)."""
    confidence = check_range("confidence", confidence, 0, 1, lo_open=True, hi_open=True)
    y = _as_labels(y_true)
    p = _as_proba_matrix(proba, y.size)
    k = p.shape[1]
    if y.size and y.max() >= k:
        raise ValueError(
            f"y_true: got class code {int(y.max())}; proba has only {k} columns (codes 0..{k - 1})"
        )
    nan2 = (float("nan"), float("nan"))
    if y.size == 0:
        return {m: nan2 for m in ("accuracy", "balanced_accuracy", "auc", "advantage")}
    correct = decide(p, decision_weights) == y
    out = {"accuracy": clopper_pearson(int(correct.sum()), y.size, confidence)}

    idx = _resample_indices(y, n_boot, np.random.default_rng(seed), True)
    present, sizes = np.unique(y, return_counts=True)  # idx columns come in these class blocks
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    recall = np.add.reduceat(correct[idx].astype(np.int64), starts, axis=1) / sizes
    out["balanced_accuracy"] = _percentile_interval(recall.mean(axis=1), confidence)
    if present.size < 2 or not np.all(np.isfinite(p)):
        out["auc"] = out["advantage"] = nan2
        return out
    if k == 2:
        auc, adv = _resampled_auc_adv(y == 1, p[:, 1], idx)
    else:
        per = [_resampled_auc_adv(y == c, p[:, c], idx) for c in present]
        auc = np.mean([a for a, _ in per], axis=0)
        adv = np.mean([d for _, d in per], axis=0)
    out["auc"] = _percentile_interval(auc, confidence)
    out["advantage"] = _percentile_interval(adv, confidence)
    return out


def near_chance(interval: tuple[float, float], chance: float) -> bool:
    """True iff ``chance`` lies inside the closed ``interval`` (False if anything is NaN)."""
    lo, hi = (float(v) for v in interval)
    c = float(chance)
    if math.isnan(lo) or math.isnan(hi) or math.isnan(c):
        return False
    return lo <= c <= hi


def within_chance_text(
    value: float, interval: tuple[float, float], chance: float
) -> str | None:
    """"within 0.012 of chance" when ``interval`` contains ``chance`` (the only case in which a
    page may call a value near chance), else None."""
    if not near_chance(interval, chance) or math.isnan(float(value)):
        return None
    return f"within {abs(float(value) - float(chance)):.3f} of chance"


# ---------------------------------------------------------------------------------------------
# reconstruction (thin wrappers; images scaled to [0, data_range])


def mse(x: np.ndarray, y: np.ndarray) -> float:
    """Mean squared error between two arrays of the same shape."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"y: got shape {y.shape}; expected {x.shape} to match x")
    return float(np.mean((x - y) ** 2))


def psnr(x: np.ndarray, y: np.ndarray, *, data_range: float = 1.0) -> float:
    """Peak signal-to-noise ratio 10·log10(data_range² / MSE) in dB (inf for identical inputs)."""
    m = mse(x, y)
    return float("inf") if m == 0 else float(10.0 * math.log10(data_range**2 / m))


def ssim(
    x: np.ndarray, y: np.ndarray, *, data_range: float = 1.0, channel_axis: int | None = None
) -> float:
    """Structural similarity (skimage.metrics.structural_similarity) of two images (H, W) or with
    a channel axis; the window shrinks to the largest odd size <= 7 that fits small images."""
    from skimage.metrics import structural_similarity

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"y: got shape {y.shape}; expected {x.shape} to match x")
    spatial = [
        s for i, s in enumerate(x.shape) if channel_axis is None or i != channel_axis % x.ndim
    ]
    win = min(7, min(spatial))
    win = win if win % 2 == 1 else win - 1
    if win < 3:
        raise ValueError(f"x: got image shape {x.shape}; SSIM needs spatial sides >= 3")
    return float(
        structural_similarity(x, y, data_range=data_range, channel_axis=channel_axis, win_size=win)
    )

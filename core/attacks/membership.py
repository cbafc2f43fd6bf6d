"""Membership-inference attacks as pure functions over score arrays (DESIGN: Metrics; issue #9).

Every attack returns a 1-D float score per target sample in which HIGHER = MORE LIKELY MEMBER
(:data:`ATTACK_DIRECTIONS`), so one function, :func:`membership_report`, turns any of them into
the Membership page's numbers (ROC, AUC, TPR at low FPR, advantage, balanced accuracy, empirical
ε), each with its interval. Plots live elsewhere; :func:`core.bounds.dp_region.dp_region` gives
the (ε, δ)-DP curve to draw on the ROC.

Attacks (numpy only; the caller computes the model outputs):

- threshold baselines: :func:`loss_attack`, :func:`confidence_attack`, :func:`entropy_attack`,
  :func:`modified_entropy_attack` (Yeom et al. 2018; Song & Mittal 2021);
- LiRA (Carlini et al., S&P 2022): :func:`logit_scale`, :func:`lira_offline`, :func:`lira_online`;
- RMIA (Zarifzadeh et al., ICML 2024): :func:`rmia`;
- at a released representation r (Inf2Guard's release, spec 004 §3.1): :func:`head_statistic`
  (r and the label through a head fitted on population records) and :func:`representation_lira`
  (LiRA on that statistic against shadow encoders trained the target's way).

The protocol functions the registered parts name (``*_on_release``, :func:`representation_attack`,
:func:`in_training_attack`; :mod:`core.foundation.parts`) take a :class:`MembershipRelease` (the target's
outputs on the candidate records, the shadow models' outputs and membership masks, and for
Inf2Guard the released representations) and return :class:`MembershipScores`; the runner calls
them through :func:`core.attacks.protocol.run_attack` and scores every one with
:func:`membership_report`.

Reference-model matrices are (n, K): row i, column k = the statistic of target sample i under
reference model k; NaN marks "model k does not apply to sample i" (e.g. sample i was IN model k
when the matrix holds OUT statistics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from core.foundation.checks import check_array, check_positive, check_range, range_error
from core.foundation.metrics import (
    advantage,
    attack_intervals,
    clopper_pearson,
    empirical_epsilon_lower_bound,
    roc_curve_points,
    tpr_at_fpr,
)

HIGHER_IS_MEMBER = "higher_is_member"

#: attack name -> direction of its score (every function here is oriented the same way)
ATTACK_DIRECTIONS: dict[str, str] = {
    "loss": HIGHER_IS_MEMBER,
    "confidence": HIGHER_IS_MEMBER,
    "entropy": HIGHER_IS_MEMBER,
    "modified_entropy": HIGHER_IS_MEMBER,
    "lira_offline": HIGHER_IS_MEMBER,
    "lira_online": HIGHER_IS_MEMBER,
    "rmia": HIGHER_IS_MEMBER,
    "representation": HIGHER_IS_MEMBER,
    "in_training": HIGHER_IS_MEMBER,
    "representation_head": HIGHER_IS_MEMBER,
    "representation_lira": HIGHER_IS_MEMBER,
}

_P_FLOOR = 1e-12  # probability floor before a log
_VAR_FLOOR = 1e-12  # a Gaussian's variance never falls below this (identical reference scores)
DEFAULT_RMIA_A = 0.3  # offline RMIA's `a`, the value ML Privacy Meter uses by default


# ---------------------------------------------------------------------------------------------
# validation helpers


def _vector(x: Any, name: str, *, finite: bool = True) -> np.ndarray:
    v = np.asarray(x, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"{name}: got shape {v.shape}; expected a 1-D array (n,)")
    if finite and not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: got NaN or inf; expected finite values")
    return v


def _probabilities(p: np.ndarray, name: str) -> np.ndarray:
    """``p`` unchanged when every non-NaN entry is a probability (NaN: not applicable)."""
    check_array(name, p[~np.isnan(p)], 0, 1)
    return p


def _reference(x: Any, n: int, name: str) -> np.ndarray:
    """(n, K) reference matrix with K >= 1; NaN allowed (not applicable), inf not."""
    r = np.asarray(x, dtype=np.float64)
    if r.ndim != 2 or r.shape[0] != n:
        raise ValueError(f"{name}: got shape {r.shape}; expected (n={n}, K) reference scores")
    if r.shape[1] == 0:
        raise range_error(f"{name}.shape[1]", 0, 1, integer=True, note="reference models K")
    if np.any(np.isinf(r)):
        raise ValueError(f"{name}: got inf; expected finite values (NaN = not applicable)")
    return r


def _member_labels(is_member: Any, n: int) -> np.ndarray:
    y = np.asarray(is_member)
    if y.shape != (n,):
        raise ValueError(f"is_member: got shape {y.shape}; expected ({n},) to match scores")
    if y.dtype != bool and not np.all(np.isin(y, (0, 1))):
        raise ValueError("is_member: got values other than 0/1; expected booleans or 0/1")
    return y.astype(bool)


# ---------------------------------------------------------------------------------------------
# threshold baselines


def loss_attack(losses: Any) -> np.ndarray:
    """Loss attack (Yeom et al. 2018): score = −loss; HIGHER = MORE LIKELY MEMBER (members are
    fitted, so their loss is lower)."""
    return -_vector(losses, "losses")


def confidence_attack(probs_true_class: Any) -> np.ndarray:
    """Confidence attack: score = the model's probability of the true class; HIGHER = MORE LIKELY
    MEMBER."""
    return _probabilities(_vector(probs_true_class, "probs_true_class"), "probs_true_class").copy()


def _prob_matrix(probs: Any) -> np.ndarray:
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"probs: got shape {p.shape}; expected (n, k) with k >= 2 classes")
    if not np.all(np.isfinite(p)):
        raise ValueError("probs: got NaN or inf; expected finite probabilities")
    return _probabilities(p, "probs")


def entropy_attack(probs: Any) -> np.ndarray:
    """Prediction-entropy attack (Salem et al. 2019): score = −H(p) = Σ_c p_c ln p_c (nats);
    HIGHER = MORE LIKELY MEMBER (members get confident, low-entropy predictions)."""
    p = _prob_matrix(probs)
    return np.sum(p * np.log(np.clip(p, _P_FLOOR, 1.0)), axis=1)


def modified_entropy_attack(probs: Any, labels: Any) -> np.ndarray:
    """Modified entropy (Song & Mittal 2021, Eq. 5): Mentr = −(1−p_y) ln p_y − Σ_{c≠y} p_c
    ln(1−p_c); score = −Mentr, HIGHER = MORE LIKELY MEMBER (unlike plain entropy it is also
    low for a confident *wrong* prediction's complement, so it uses the label)."""
    p = _prob_matrix(probs)
    y = np.asarray(labels)
    if y.shape != (p.shape[0],) or not np.all(np.isin(y, np.arange(p.shape[1]))):
        raise ValueError(
            f"labels: got shape {y.shape}; expected ({p.shape[0]},) codes in 0..{p.shape[1] - 1}"
        )
    y = y.astype(np.int64)
    rows = np.arange(p.shape[0])
    log_p = np.log(np.clip(p, _P_FLOOR, 1.0))
    log_1mp = np.log(np.clip(1.0 - p, _P_FLOOR, 1.0))
    py = p[rows, y]
    others = p * log_1mp
    others[rows, y] = 0.0
    mentr = -(1.0 - py) * log_p[rows, y] - others.sum(axis=1)
    return -mentr


# ---------------------------------------------------------------------------------------------
# LiRA (Carlini et al. 2022)


def logit_scale(p_true: Any, eps: float = 1e-12) -> np.ndarray:
    """LiRA's logit scaling φ(p) = ln(p / (1 − p)) (Carlini et al. 2022, §IV-B, Eq. 4) of the
    true-class probability, p clipped to [eps, 1 − eps]. Any shape; NaN passes through."""
    check_range("eps", eps, 0, 0.5, lo_open=True, hi_open=True)
    p = np.asarray(p_true, dtype=np.float64)
    _probabilities(p, "p_true")
    p = np.clip(p, eps, 1.0 - eps)
    return np.log(p) - np.log1p(-p)


def _gaussian_fit(ref: np.ndarray, fix_variance: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample mean and variance of the reference scores ``ref`` (n, K), NaN = absent.

    - mean: per-sample mean of the available models; a sample with none falls back to the
      global mean of all available entries;
    - variance: ``fix_variance`` (Carlini et al. §IV-C, for few reference models) uses one
      global variance for every sample, the pooled within-sample variance
      Σ_i Σ_k (φ_ik − μ_i)² / (N − #samples with data); otherwise the per-sample (unbiased)
      variance, and a sample with fewer than 2 models falls back to the global one.
    Variances are floored at 1e-12."""
    ok = ~np.isnan(ref)
    cnt = ok.sum(axis=1)
    if not ok.any():
        raise ValueError("reference scores: got only NaN; expected at least one finite value")
    total = np.where(ok, ref, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = total.sum(axis=1) / cnt
    mu = np.where(cnt > 0, mu, total.sum() / ok.sum())
    dev2 = np.where(ok, (ref - mu[:, None]) ** 2, 0.0)
    dof = int(ok.sum()) - int((cnt > 0).sum())
    if dof > 0:
        global_var = float(dev2.sum() / dof)
    else:  # every sample has at most one model: spread across samples is all there is
        global_var = float(np.var(ref[ok])) if ok.sum() > 1 else 1.0
    global_var = max(global_var, _VAR_FLOOR)
    if fix_variance:
        var = np.full(ref.shape[0], global_var)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            var = dev2.sum(axis=1) / (cnt - 1)
        var = np.where(cnt >= 2, var, global_var)
    return mu, np.maximum(var, _VAR_FLOOR)


def _gauss_logpdf(x: np.ndarray, mu: np.ndarray, var: np.ndarray) -> np.ndarray:
    return -0.5 * (np.log(2.0 * math.pi * var) + (x - mu) ** 2 / var)


def lira_offline(target_phi: Any, out_phi: Any, *, fix_variance: bool = True) -> np.ndarray:
    """Offline LiRA (Carlini et al. 2022, Alg. 1 offline variant): a one-sided test of the
    target's logit-scaled confidence φ against N(μ_out, σ²_out) fitted to the OUT reference
    models. The paper's score is Λ = Φ((φ − μ_out)/σ_out); we return the standardised
    z = (φ − μ_out)/σ_out itself (Φ is increasing, so the ROC is identical, and z does not
    saturate at 1 in the tail that TPR at 0.1 % FPR reads). HIGHER = MORE LIKELY MEMBER.

    ``target_phi`` (n,); ``out_phi`` (n, K_out), NaN where model k was trained on sample i.
    Samples with no OUT model use the global mean; see :func:`_gaussian_fit` for the variance
    (``fix_variance``: one global variance, the paper's choice for few models)."""
    t = _vector(target_phi, "target_phi")
    out = _reference(out_phi, t.size, "out_phi")
    mu, var = _gaussian_fit(out, fix_variance)
    return (t - mu) / np.sqrt(var)


def lira_online(
    target_phi: Any, in_phi: Any, out_phi: Any, *, fix_variance: bool = True
) -> np.ndarray:
    """Online LiRA (Carlini et al. 2022, Alg. 1): the log likelihood ratio
    ln N(φ; μ_in, σ²_in) − ln N(φ; μ_out, σ²_out) of the target's logit-scaled confidence φ
    under Gaussians fitted to the IN and OUT reference models. HIGHER = MORE LIKELY MEMBER.

    ``target_phi`` (n,); ``in_phi`` (n, K_in) and ``out_phi`` (n, K_out), NaN where a model does
    not apply to a sample. Samples with no IN (OUT) model use the global IN (OUT) mean; with
    ``fix_variance`` each side uses one global variance (pooled within-sample), otherwise the
    per-sample variance, falling back to the global one below 2 models (:func:`_gaussian_fit`)."""
    t = _vector(target_phi, "target_phi")
    inn = _reference(in_phi, t.size, "in_phi")
    out = _reference(out_phi, t.size, "out_phi")
    mu_in, var_in = _gaussian_fit(inn, fix_variance)
    mu_out, var_out = _gaussian_fit(out, fix_variance)
    return _gauss_logpdf(t, mu_in, var_in) - _gauss_logpdf(t, mu_out, var_out)


# ---------------------------------------------------------------------------------------------
# membership at a released representation r (Inf2Guard's release)


def _representations(r: Any, name: str) -> np.ndarray:
    a = np.asarray(r, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name}: got shape {a.shape}; expected (n, d) representations, n, d >= 1")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: got NaN or inf; expected finite representations")
    return a


def _class_codes(y: Any, n: int, name: str) -> np.ndarray:
    c = np.asarray(y)
    if c.shape != (n,) or (c.size and (not np.all(np.equal(np.mod(c, 1), 0)) or c.min() < 0)):
        raise ValueError(f"{name}: got shape {c.shape}; expected ({n},) class codes >= 0")
    return c.astype(np.int64)


def head_statistic(r: Any, y: Any, r_population: Any, y_population: Any, *,
                   l2: float = 1.0) -> np.ndarray:
    """LiRA's statistic of a representation release: φ_i = ln(p_i / (1 − p_i)) with p_i the
    probability of the candidate's label y_i under a multinomial logistic head fitted on the
    attacker's own population records (r, y) (standardised r, ridge C = 1/``l2``; scikit-learn).

    Why it reads membership: the encoder pulls its training records deep into their class's
    region of r, so a head that knows only the population places members' labels more
    confidently than non-members' (the loss attack, Yeom et al. 2018, carried to r without the
    released head). It is coordinate-free: each encoder gets its own head, so shadow encoders'
    statistics are comparable with the target's (what :func:`representation_lira` needs).
    A label absent from the population gets p = 0 (φ at the floor). Used alone (no shadows) it
    is a threshold attack; HIGHER = MORE LIKELY MEMBER.

    ``r`` (n, d), ``y`` (n,) codes; ``r_population`` (m, d), ``y_population`` (m,) with at least
    two classes; records in neither the target's nor any shadow's training set."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    check_positive("l2", l2)
    rc = _representations(r, "r")
    rp = _representations(r_population, "r_population")
    if rp.shape[1] != rc.shape[1]:
        raise ValueError(f"r_population: got {rp.shape[1]} dimensions; expected {rc.shape[1]} "
                         "like r")
    yc = _class_codes(y, rc.shape[0], "y")
    yp = _class_codes(y_population, rp.shape[0], "y_population")
    classes = np.unique(yp)
    if classes.size < 2:
        raise ValueError(f"y_population: got {classes.size} class; need at least 2 to fit a head")
    scaler = StandardScaler().fit(rp)
    head = LogisticRegression(C=1.0 / float(l2), max_iter=5000).fit(scaler.transform(rp), yp)
    proba = head.predict_proba(scaler.transform(rc))
    col = np.searchsorted(classes, yc)
    known = (col < classes.size) & (classes[np.minimum(col, classes.size - 1)] == yc)
    p = np.where(known, proba[np.arange(yc.size), np.minimum(col, classes.size - 1)], 0.0)
    return logit_scale(p)


def representation_lira(target_r: Any, target_r_population: Any, shadow_r: Any,
                        shadow_r_population: Any, y: Any, y_population: Any, in_mask: Any, *,
                        online: bool = True, l2: float = 1.0,
                        fix_variance: bool = True) -> np.ndarray:
    """LiRA (Carlini et al. 2022) at a released representation: :func:`head_statistic` of each
    candidate under the target encoder, tested against the same statistic under K shadow
    encoders trained with the target's algorithm (defense and λ included) on halves of the
    candidate pool. Online: ln N(φ; μ_in, σ²_in) − ln N(φ; μ_out, σ²_out); offline: the
    standardised distance from the OUT fit (:func:`lira_online`, :func:`lira_offline`).
    HIGHER = MORE LIKELY MEMBER.

    Threat model: the attacker sees r = f(x) of each candidate record and knows the record's
    label; it can query the encoder (served as an API, Inf2Guard §3) on population records of
    the same distribution that no model trained on, and knows the architecture and training
    algorithm (it trains the shadow encoders). It sees neither the encoder's weights nor the
    released task head.

    ``target_r`` (n, d) and ``target_r_population`` (m, d): the target encoder's r of the
    candidates and the population records; ``shadow_r`` (K, n, d') and ``shadow_r_population``
    (K, m, d'): each shadow encoder's; ``y`` (n,), ``y_population`` (m,) labels; ``in_mask``
    (K, n) bool, candidate i in shadow k's training set (:func:`core.engine.shadow_training.shadow_splits`)."""
    sr = np.asarray(shadow_r, dtype=np.float64)
    sp = np.asarray(shadow_r_population, dtype=np.float64)
    t = _representations(target_r, "target_r")
    n = t.shape[0]
    if sr.ndim != 3 or sr.shape[1] != n or sr.shape[0] == 0:
        raise ValueError(f"shadow_r: got shape {sr.shape}; expected (K >= 1, n={n}, d)")
    K = sr.shape[0]
    if sp.ndim != 3 or sp.shape[0] != K or sp.shape[2] != sr.shape[2]:
        raise ValueError(f"shadow_r_population: got shape {sp.shape}; expected (K={K}, m, "
                         f"{sr.shape[2]})")
    ins = np.asarray(in_mask)
    if ins.shape != (K, n) or (ins.dtype != bool and not np.all(np.isin(ins, (0, 1)))):
        raise ValueError(f"in_mask: got shape {ins.shape}; expected ({K}, {n}) booleans")
    ins = ins.astype(bool).T  # (n, K) like every reference matrix here
    phi_t = head_statistic(t, y, target_r_population, y_population, l2=l2)
    phi = np.stack([head_statistic(sr[k], y, sp[k], y_population, l2=l2) for k in range(K)], 1)
    out_phi = np.where(~ins, phi, np.nan)
    if not online:
        return lira_offline(phi_t, out_phi, fix_variance=fix_variance)
    return lira_online(phi_t, np.where(ins, phi, np.nan), out_phi, fix_variance=fix_variance)


# ---------------------------------------------------------------------------------------------
# RMIA (Zarifzadeh et al. 2024)


def _marginal(ref: np.ndarray, offline: bool, a: float) -> np.ndarray:
    """Pr(x) ≈ mean over reference models (NaN ignored); offline: ((1+a)/2)·mean_OUT + (1−a)/2
    (RMIA §3 / App., linear approximation of the IN probability from the OUT one)."""
    ok = ~np.isnan(ref)
    cnt = ok.sum(axis=1)
    if np.any(cnt == 0):
        raise ValueError("reference probabilities: a row is all NaN; each needs >= 1 model")
    m = np.where(ok, ref, 0.0).sum(axis=1) / cnt
    if offline:
        m = 0.5 * (1.0 + a) * m + 0.5 * (1.0 - a)
    return m


def rmia(
    target_p: Any,
    ref_p: Any,
    z_target_p: Any,
    z_ref_p: Any,
    *,
    gamma: float = 1.0,
    a: float | None = None,
    offline: bool = True,
) -> np.ndarray:
    """RMIA (Zarifzadeh et al. 2024, Eq. 3–4): Score(x) = Pr_z[ LR(x, z) ≥ γ ] with the pairwise
    likelihood ratio LR(x, z) = (Pr(x|θ)/Pr(x)) / (Pr(z|θ)/Pr(z)), over population samples z
    (non-members). Pr(·|θ) = the target model's probability of the true class; Pr(·) = its mean
    over the reference models, with offline (OUT-only) models replaced by the paper's linear
    approximation ((1+a)/2)·mean + (1−a)/2 for both x and z (``a`` default 0.3, ML Privacy
    Meter's default; ``a = 1`` means no correction). Online (``offline=False``) reference models
    should be half IN, half OUT per sample; ``a`` is not used. HIGHER = MORE LIKELY MEMBER;
    the score is the fraction of z in [0, 1] (ties of LR with γ count as "≥", as in Eq. 3).

    ``target_p`` (n,), ``ref_p`` (n, K), ``z_target_p`` (m,), ``z_ref_p`` (m, K): probabilities
    of the true class, NaN in a reference matrix = model not applicable. Vectorised: one sort
    of the m z-ratios and a binary search per x, O((n + m) log m), no (n, m) matrix."""
    check_positive("gamma", gamma)
    if a is None:
        a = DEFAULT_RMIA_A
    elif not offline:
        raise ValueError("a: got a value with offline=False; `a` is only used offline")
    check_range("a", a, 0, 1)
    tx = _probabilities(_vector(target_p, "target_p"), "target_p")
    tz = _probabilities(_vector(z_target_p, "z_target_p"), "z_target_p")
    if tz.size == 0:
        raise range_error("z_target_p.size", 0, 1, integer=True, note="population samples m")
    rx = _probabilities(_reference(ref_p, tx.size, "ref_p"), "ref_p")
    rz = _probabilities(_reference(z_ref_p, tz.size, "z_ref_p"), "z_ref_p")
    if rz.shape[1] != rx.shape[1]:
        raise ValueError(
            f"z_ref_p: got K = {rz.shape[1]} models; expected K = {rx.shape[1]} as in ref_p"
        )

    def log_ratio(t: np.ndarray, r: np.ndarray) -> np.ndarray:
        marg = _marginal(r, offline, float(a))
        return np.log(np.clip(t, _P_FLOOR, None)) - np.log(np.clip(marg, _P_FLOOR, None))

    lx = log_ratio(tx, rx)
    lz = np.sort(log_ratio(tz, rz))
    # LR(x, z) >= γ  <=>  ln r_z <= ln r_x − ln γ
    count = np.searchsorted(lz, lx - math.log(gamma), side="right")
    return count / lz.size


# ---------------------------------------------------------------------------------------------
# the protocol: what the attacker sees, and one function per registered attack


@dataclass(frozen=True)
class MembershipRelease:
    """What a membership attacker works from: the target's outputs on the n candidate records,
    the K shadow (reference) models' outputs with their membership masks, and the population.

    ``p_true`` (n,) the target's probability of each candidate's true class; ``probs`` (n, k)
    its class probabilities (None for a shadow model standing in as a target: the pooled
    attacks read ``p_true`` only); ``labels`` (n,) the candidates' labels; ``shadow_p`` (n, K)
    each shadow's true-class probability and ``shadow_in`` (n, K) whether candidate i trained
    shadow k; ``population_p`` (m,) and ``population_shadow_p`` (m, K) the same on population
    records z in no training set (RMIA); ``representations`` (n, d) and ``adversary`` (n,):
    Inf2Guard's released r, and a game defense's in-training adversary's Pr(member);
    ``population_labels`` (m,) and ``population_representations`` (m, d): the population's
    labels and the target encoder's r of them (the encoder queried as an API);
    ``shadow_representations`` (K, n, d) and ``shadow_population_representations`` (K, m, d):
    each shadow encoder's r of the candidates and of the population (its membership mask is
    ``shadow_in``); ``signals`` (name -> (n, ...)) and ``shadow_signals`` (name -> (K, n, ...)):
    the registered signals (:data:`core.foundation.parts.SIGNALS`) the chosen attacks declare, computed
    once per model on the candidates (read them with :meth:`signal`, :meth:`shadow_signal`)."""

    kind: ClassVar[str] = "model"
    p_true: np.ndarray
    probs: np.ndarray | None = None
    labels: np.ndarray | None = None
    shadow_p: np.ndarray | None = None
    shadow_in: np.ndarray | None = None
    population_p: np.ndarray | None = None
    population_shadow_p: np.ndarray | None = None
    representations: np.ndarray | None = None
    adversary: np.ndarray | None = None
    population_labels: np.ndarray | None = None
    population_representations: np.ndarray | None = None
    shadow_representations: np.ndarray | None = None
    shadow_population_representations: np.ndarray | None = None
    signals: dict[str, np.ndarray] = field(default_factory=dict)
    shadow_signals: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def kinds(self) -> tuple[str, ...]:
        return (("model",) + (("representation",) if self.representations is not None else ())
                + (("adversary_output",) if self.adversary is not None else ()))

    def signal(self, name: str) -> np.ndarray:
        """The target's signal ``name`` (n, ...); a one-line error when the release lacks it."""
        return _signal(self.signals, name, "signals")

    def shadow_signal(self, name: str) -> np.ndarray:
        """Every shadow model's signal ``name`` (K, n, ...); a one-line error when absent."""
        return _signal(self.shadow_signals, name, "shadow_signals")

    def shadow_as_target(self, t: int) -> MembershipRelease:
        """Shadow model ``t`` as the target, against the other shadows (ML Privacy Meter's
        pooled protocol); its members are ``shadow_in[:, t]``."""
        if self.shadow_p is None or self.shadow_in is None:
            raise ValueError("shadow_p: a pooled target needs the shadow models' outputs")
        rest = np.arange(self.shadow_p.shape[1]) != t
        pz = None if self.population_shadow_p is None else self.population_shadow_p
        return MembershipRelease(
            p_true=np.clip(self.shadow_p[:, t], _P_FLOOR, 1.0), labels=self.labels,
            shadow_p=self.shadow_p[:, rest], shadow_in=self.shadow_in[:, rest],
            population_p=None if pz is None else pz[:, t],
            population_shadow_p=None if pz is None else pz[:, rest],
            signals={n: a[t] for n, a in self.shadow_signals.items()},
            shadow_signals={n: a[rest] for n, a in self.shadow_signals.items()})


def _signal(signals: dict[str, np.ndarray], name: str, where: str) -> np.ndarray:
    if name not in signals:
        raise ValueError(f"release.{where}[{name!r}]: this attack needs signal {name!r}; the "
                         f"release has {', '.join(map(repr, signals)) or 'none'} (the attack "
                         "must declare it in its part's signals)")
    return np.asarray(signals[name])


@dataclass
class MembershipScores:
    """One attack's score per candidate (oriented by ``direction``) and what it reports."""

    scores: np.ndarray
    direction: str = HIGHER_IS_MEMBER
    info: dict[str, Any] = field(default_factory=dict)

    def member_scores(self) -> np.ndarray:
        """The scores with HIGHER = MORE LIKELY MEMBER, whatever the attack's direction."""
        return self.scores if self.direction == HIGHER_IS_MEMBER else -self.scores


def self_test_records(n: int = 24, k: int = 4, classes: int = 3, m: int = 12
                      ) -> tuple[MembershipRelease, None, dict[str, Any]]:
    """The membership family's self-test input (:attr:`core.foundation.parts.Family.self_test`): a small
    seeded release whose members are more confident than its non-members, with ``k`` shadow
    models (each row IN half of them) and ``m`` population records; the registry refuses a
    second attack whose scores on it equal an existing attack's (no settings to shorten)."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, classes, n)
    member = np.arange(n) % 2 == 0
    logits = rng.normal(size=(n, classes))
    logits[np.arange(n), labels] += np.where(member, 2.0, 0.5)
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    shadow_in = np.stack([np.roll(np.arange(k) < k // 2, i) for i in range(n)])
    shadow_p = np.clip(rng.uniform(0.2, 0.6, (n, k)) + 0.3 * shadow_in, 1e-3, 1 - 1e-3)
    pop = rng.uniform(0.2, 0.7, m)
    release = MembershipRelease(
        p_true=probs[np.arange(n), labels], probs=probs, labels=labels, shadow_p=shadow_p,
        shadow_in=shadow_in, population_p=pop,
        population_shadow_p=np.clip(pop[:, None] + rng.normal(0, 0.05, (m, k)), 1e-3, 1 - 1e-3))
    return release, None, {}


def _need(value: np.ndarray | None, name: str) -> np.ndarray:
    if value is None:
        raise ValueError(f"release.{name}: this attack needs it; the release has none")
    return np.asarray(value, dtype=np.float64)


def loss_on_release(release: MembershipRelease, knowledge: Any = None, **_: Any) -> MembershipScores:
    """:func:`loss_attack` on the target's loss −ln p_y (p floored at 1e-12)."""
    p = _need(release.p_true, "p_true")
    return MembershipScores(loss_attack(-np.log(np.clip(p, _P_FLOOR, None))))


def confidence_on_release(release: MembershipRelease, knowledge: Any = None,
                          **_: Any) -> MembershipScores:
    """:func:`confidence_attack` on the target's true-class probability."""
    return MembershipScores(confidence_attack(_need(release.p_true, "p_true")))


def entropy_on_release(release: MembershipRelease, knowledge: Any = None,
                       **_: Any) -> MembershipScores:
    """:func:`entropy_attack` on the target's class probabilities."""
    return MembershipScores(entropy_attack(_need(release.probs, "probs")))


def modified_entropy_on_release(release: MembershipRelease, knowledge: Any = None,
                                **_: Any) -> MembershipScores:
    """:func:`modified_entropy_attack` on the target's class probabilities and the labels."""
    return MembershipScores(modified_entropy_attack(_need(release.probs, "probs"),
                                                    _need(release.labels, "labels").astype(int)))


def _balanced_in_out(release: MembershipRelease) -> tuple[np.ndarray, np.ndarray]:
    """(in_phi, out_phi) (n, K): logit-scaled shadow confidences, NaN where a shadow is not
    IN (OUT) for the row. Every row gets as many IN (and OUT) models as the row with the
    fewest: a shadow target leaves its members K/2 − 1 IN and K/2 OUT models and its
    non-members the reverse, and Gaussians fitted to unequal counts bias the ranking (below
    chance at K = 4)."""
    phi = logit_scale(_need(release.shadow_p, "shadow_p"))
    ins = np.asarray(release.shadow_in, dtype=bool)
    n_in, n_out = int(ins.sum(1).min()), int((~ins).sum(1).min())
    use_in = ins & (np.cumsum(ins, 1) <= n_in)
    use_out = ~ins & (np.cumsum(~ins, 1) <= n_out)
    return np.where(use_in, phi, np.nan), np.where(use_out, phi, np.nan)


def lira_offline_on_release(release: MembershipRelease, knowledge: Any = None,
                            **_: Any) -> MembershipScores:
    """:func:`lira_offline` of the target against each row's OUT shadows."""
    _, out_phi = _balanced_in_out(release)
    return MembershipScores(lira_offline(logit_scale(_need(release.p_true, "p_true")), out_phi))


def lira_online_on_release(release: MembershipRelease, knowledge: Any = None,
                           **_: Any) -> MembershipScores:
    """:func:`lira_online` of the target against each row's IN and OUT shadows."""
    in_phi, out_phi = _balanced_in_out(release)
    return MembershipScores(lira_online(logit_scale(_need(release.p_true, "p_true")), in_phi,
                                        out_phi))


def rmia_on_release(release: MembershipRelease, knowledge: Any = None, *, rmia_references: int,
                    rmia_a: float = DEFAULT_RMIA_A, **_: Any) -> MembershipScores:
    """Offline :func:`rmia`: each row's first ``rmia_references`` OUT shadows are its reference
    models, the population records z the comparison set."""
    R = int(rmia_references)
    ins = np.asarray(release.shadow_in, dtype=bool)
    order = np.argsort(ins, axis=1, kind="stable")[:, :R]
    ref = np.take_along_axis(_need(release.shadow_p, "shadow_p"), order, 1)
    pz = _need(release.population_shadow_p, "population_shadow_p")
    return MembershipScores(rmia(_need(release.p_true, "p_true"), ref,
                                 _need(release.population_p, "population_p"), pz[:, :R],
                                 a=rmia_a, offline=True))


def representation_attack(release: MembershipRelease, knowledge: Any, *, seed: int,
                          folds: int = 5, **_: Any) -> MembershipScores:
    """The paper's representation attack (spec 004 §3.1): a fresh MLP membership classifier
    on r trained on 80 % of the pool with its true membership (``knowledge.extra
    ["membership"]``); every pool row scored by cross-fitting (two folds of 80/20 would leave
    rows unscored, so five folds). ``info["ce_nats"]``: the attacker's mean cross-entropy."""
    from core.attacks.attribute import fresh_attacker
    from core.foundation.seeds import derive, stream

    R = _need(release.representations, "representations")
    u = np.asarray(knowledge.extra["membership"]).astype(np.int64)
    out = np.full(len(u), np.nan)
    ce = []
    fold = stream(seed, "mia_representation", "folds").permutation(len(u)) % folds
    for f in range(folds):
        tr, te = fold != f, fold == f
        res = fresh_attacker(R[tr], u[tr], R[te], u[te], model="mlp", n_classes=2,
                             seed=derive(seed, "mia_representation", "fold", f))
        out[te] = res.proba[:, 1]
        ce.append(res.ce_nats * te.sum())
    return MembershipScores(out, info={"ce_nats": float(np.sum(ce) / len(u))})


def representation_head_on_release(release: MembershipRelease, knowledge: Any = None,
                                   **_: Any) -> MembershipScores:
    """:func:`head_statistic` of each candidate's (r, y) under a head fitted on the target
    encoder's r of the population records (a threshold attack: no shadows)."""
    return MembershipScores(head_statistic(
        _need(release.representations, "representations"),
        _need(release.labels, "labels").astype(int),
        _need(release.population_representations, "population_representations"),
        _need(release.population_labels, "population_labels").astype(int)))


def representation_lira_on_release(release: MembershipRelease, knowledge: Any = None,
                                   **_: Any) -> MembershipScores:
    """Online :func:`representation_lira`: the head statistic under the target encoder against
    the same statistic under the shadow encoders (IN and OUT of each candidate)."""
    return MembershipScores(representation_lira(
        _need(release.representations, "representations"),
        _need(release.population_representations, "population_representations"),
        _need(release.shadow_representations, "shadow_representations"),
        _need(release.shadow_population_representations, "shadow_population_representations"),
        _need(release.labels, "labels").astype(int),
        _need(release.population_labels, "population_labels").astype(int),
        np.asarray(_need(release.shadow_in, "shadow_in"), bool).T))


def in_training_attack(release: MembershipRelease, knowledge: Any = None,
                       **_: Any) -> MembershipScores:
    """The defense's own membership adversary (Inf2Guard's Ψ on r, adversarial
    regularisation's h on f(x) and y): its Pr(member) of each candidate."""
    return MembershipScores(_need(release.adversary, "adversary"))


# ---------------------------------------------------------------------------------------------
# evaluation


def balance_members(labels: Any, *arrays: Any, seed: int) -> np.ndarray:
    """Sorted row indices with as many members as non-members: the larger class is subsampled
    without replacement (seeded by ``seed``), the smaller one kept whole. ``arrays`` (optional)
    are only checked to have one row per label."""
    y = np.asarray(labels)
    if y.ndim != 1 or (y.dtype != bool and not np.all(np.isin(y, (0, 1)))):
        raise ValueError(f"labels: got shape {y.shape}; expected a 1-D array of 0/1 or booleans")
    for j, arr in enumerate(arrays):
        if np.shape(arr)[:1] != y.shape:
            raise ValueError(f"arrays[{j}]: got shape {np.shape(arr)}; expected ({y.size}, ...)")
    y = y.astype(bool)
    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
    k = min(pos.size, neg.size)
    if k == 0:
        raise ValueError("labels: got a single class; need members and non-members")
    rng = np.random.default_rng(seed)
    keep = [rng.choice(g, size=k, replace=False) if g.size > k else g for g in (pos, neg)]
    return np.sort(np.concatenate(keep))


def _unit_ranks(s: np.ndarray) -> np.ndarray:
    """Scores -> (0, 1] keeping order and ties (dense rank / #distinct), so the probability-based
    :func:`core.foundation.metrics.attack_intervals` bootstraps AUC and advantage of any score."""
    _, inv = np.unique(s, return_inverse=True)
    return (inv + 1.0) / (inv.max() + 1.0)


#: which interval each metric of :func:`membership_report` carries
INTERVAL_METHODS = {
    "auc": "stratified percentile bootstrap",
    "advantage": "stratified percentile bootstrap",
    "balanced_accuracy": "stratified percentile bootstrap (of the advantage)",
    "tpr_at_fpr": "Clopper-Pearson (threshold fixed)",
    "epsilon_lower_bound": "Clopper-Pearson one-sided limits on FPR and FNR",
}


def _tpr_rows(y01: np.ndarray, s: np.ndarray, fprs: tuple[float, ...], n_pos: int, n_neg: int,
              confidence: float) -> list[dict[str, Any]]:
    """One row per target FPR: the TPR there, its Clopper–Pearson interval and whether the
    rate is observable with ``n_neg`` non-members (see :func:`membership_report`)."""
    rows = []
    for f in fprs:
        t = tpr_at_fpr(y01, s, f)
        rows.append({"fpr": float(f), "tpr": t,
                     "interval": clopper_pearson(round(t * n_pos), n_pos, confidence),
                     "meaningful": bool(n_neg * f >= 1.0), "n_nonmembers": n_neg})
    return rows


def trapezoid_auc(fpr: np.ndarray, tpr: np.ndarray) -> float:
    """AUC by the trapezoid over the full ROC (= Mann–Whitney U / (n₊n₋), ties counted ½)."""
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))


def scored_rows(scores: Any, labels: Any, *, seed: int) -> np.ndarray:
    """The rows a membership report scores: the finite scores, members and non-members then
    balanced (:func:`balance_members`, seeded): shadow targets hold about, not exactly, half
    the pool."""
    s, y = np.asarray(scores), np.asarray(labels)
    ok = np.flatnonzero(np.isfinite(s))
    return ok[balance_members(y[ok], seed=seed)]


def membership_report(
    scores: Any,
    is_member: Any,
    *,
    fprs: tuple[float, ...] = (0.01, 0.001),
    confidence: float = 0.95,
    delta: float = 1e-5,
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """All membership numbers of one attack's ``scores`` (HIGHER = MORE LIKELY MEMBER):

    - ``n_members``, ``n_nonmembers``; ``roc_fpr``, ``roc_tpr`` (arrays, for the linear and the
      log-log plot);
    - ``auc``, ``advantage`` = max_t TPR − FPR (signed, see :func:`core.foundation.metrics.advantage`),
      ``balanced_accuracy`` = (1 + advantage)/2 (at the best threshold, chosen on these same
      data: optimistic), each with ``*_interval``: stratified percentile bootstrap (``n_boot``
      resamples, ``seed``; the balanced accuracy's is the advantage's mapped by (1 + ·)/2);
    - ``tpr_at_fpr``: one dict per target FPR with ``tpr`` (largest TPR with FPR ≤ target, the
      LiRA convention), ``interval`` (exact Clopper–Pearson on TPR·n_members of n_members, the
      threshold taken as fixed), ``meaningful`` (n_nonmembers·FPR ≥ 1: at least one false
      positive can be observed at that rate) and ``n_nonmembers``; plus flat ``tpr_at_1pct`` /
      ``tpr_at_0p1pct`` when 0.01 / 0.001 are among ``fprs``, and ``tpr_at_0p1_meaningful``
      (n_nonmembers ≥ 1000);
    - ``epsilon_lower_bound``: ε from the ROC with FPR and FNR replaced by one-sided
      Clopper–Pearson upper limits (holds with ``confidence``, per threshold) and
      ``epsilon_estimate`` from the point rates (:func:`core.foundation.metrics.empirical_epsilon_lower_bound`);
    - ``interval_methods``: which interval each metric carries.

    Raises a one-line ValueError for a single class, mismatched shapes or non-finite scores.
    Memory: the bootstrap holds an (n_boot, n) index array."""
    s = _vector(scores, "scores")
    y = _member_labels(is_member, s.size)
    check_range("confidence", confidence, 0, 1, lo_open=True, hi_open=True)
    check_range("delta", delta, 0, 1, hi_open=True)
    check_array("fprs", fprs, 0, 1, lo_open=True, hi_open=True)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(
            f"is_member: got {n_pos} members and {n_neg} non-members; need both classes"
        )
    y01 = y.astype(np.int64)
    fpr_all, tpr_all = roc_curve_points(y01, s, drop_intermediate=False)
    fpr_plot, tpr_plot = roc_curve_points(y01, s, drop_intermediate=True)
    auc = trapezoid_auc(fpr_all, tpr_all)
    adv = advantage(y01, s)
    iv = attack_intervals(y01, _unit_ranks(s), n_boot=n_boot, seed=seed, confidence=confidence)
    adv_lo, adv_hi = iv["advantage"]

    tpr_rows = _tpr_rows(y01, s, fprs, n_pos, n_neg, confidence)
    out: dict[str, Any] = {
        "n_members": n_pos,
        "n_nonmembers": n_neg,
        "roc_fpr": fpr_plot,
        "roc_tpr": tpr_plot,
        "auc": auc,
        "auc_interval": iv["auc"],
        "advantage": adv,
        "advantage_interval": (adv_lo, adv_hi),
        "balanced_accuracy": (1.0 + adv) / 2.0,
        "balanced_accuracy_interval": ((1.0 + adv_lo) / 2.0, (1.0 + adv_hi) / 2.0),
        "tpr_at_fpr": tpr_rows,
        "tpr_at_0p1_meaningful": bool(n_neg >= 1000),
        "epsilon_lower_bound": empirical_epsilon_lower_bound(
            fpr_all, tpr_all, delta, n_neg=n_neg, n_pos=n_pos, confidence=confidence
        ),
        "epsilon_estimate": empirical_epsilon_lower_bound(fpr_all, tpr_all, delta),
        "delta": float(delta),
        "confidence": float(confidence),
        "interval_methods": dict(INTERVAL_METHODS),
    }
    for row in tpr_rows:
        key = {0.01: "tpr_at_1pct", 0.001: "tpr_at_0p1pct"}.get(row["fpr"])
        if key:
            out[key] = row["tpr"]
            out[key + "_interval"] = row["interval"]
    return out

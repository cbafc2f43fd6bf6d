"""Attacks on an output-perturbed GLM release, to validate Fisher information loss (spec 002 §A10,
issue #11): pure functions of the release w' = w* + N(0, σ²I) (one row per noise draw) and the
attacker's knowledge; the ground truth is used only by the scoring helpers.

- :func:`white_box_attack` (Eq. 30): the attacker knows every training value but the target's
  attribute x_i^S; for each candidate value c it computes the model f(𝒟 \\ x_i^S ∪ c) and picks
  the candidate nearest to w' (the Gaussian likelihood's maximiser; ``prior`` gives the MAP
  variant). Least squares: each candidate fit is EXACT, a rank-2 update of the inverse Hessian
  (remove ω x_i x_iᵀ, add ω x_c x_cᵀ; Woodbury), O(k·d²) per target, no refit. Logistic
  regression: an APPROXIMATION, one Newton step on the candidate's objective from the release
  w' itself (rank-2-updated Hessian at w'). Why from w' and not from the fitted w*: w* is the
  model of the TRUE data, so a step from it is exact at the true candidate and approximate at
  the others — a bias towards the truth the attacker could never have; w' is what the attacker
  holds, and every candidate is treated alike. tests/test_fil_attacks.py checks the step
  against exact refits.
- :func:`black_box_attack` (Eq. 31, Fredrikson et al. 2014): prior × π(φ(w', x_c), y_i), with π
  a Gaussian around the label (variance = the release's training standard error) or the
  release's training confusion matrix (classifiers).
- :func:`prior_attack`: the marginal's mode, the baseline every attack must beat.
- :func:`reconstruct_label` / :func:`reconstruct_feature`: unbiased reconstruction of a label or
  a continuous feature from a least-squares release (A12 item 7): the label estimator
  ŷ_i = a_iᵀ(w' − A Σ_{j≠i} ω_j x_j y_j)/‖a_i‖² is exactly unbiased with variance σ²/‖a_i‖² =
  1/η_{i,y}² (it attains the Cramér–Rao bound); the feature estimator runs Gauss–Newton steps on
  t ↦ ‖w' − f(𝒟 with x_ik = t)‖² through exact rank-2 refits (approximately unbiased for small σ).
- :func:`crb_report`: measured variance over noise draws against the bound 1/η² (Eq. 3), with a
  chi-square interval for the variance.
- :func:`label_white_box` / :func:`label_black_box`: Eqs. 30 and 31 on the label itself.

The registered parts (:mod:`core.foundation.parts`) name the protocol functions ``*_on_release``: each
takes a :class:`GLMRelease` (the noisy weights, one row per draw) and an
:class:`~core.foundation.knowledge.AdversaryKnowledge` whose ``extra`` holds what the threat model grants
(:func:`glm_knowledge`), and returns the guesses (trials, m); the runner calls them through
:func:`core.attacks.protocol.run_attack`.

Every "knows everything but x_i^S" computation removes row i's contribution from the full-data
Hessian by a rank-1 downdate, so the result for target i provably does not depend on the stored
x_i^S; a test changes x_i^S and checks the guesses do not move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from core.bounds.fil_regression import FittedGLM, _check_model, _derivs, check_sigma

__all__ = [
    "AttackGuesses", "GLMRelease", "accuracy_by_decile", "attack_accuracy", "black_box_attack",
    "black_box_on_release", "candidate_models", "crb_report", "glm_knowledge", "label_black_box",
    "label_white_box", "performance_stats", "prior_attack", "prior_on_release",
    "reconstruct_feature", "reconstruct_label", "true_codes", "white_box_attack",
    "white_box_on_release",
]

DEFAULT_CHUNK = 2048  # targets per chunk: memory O(chunk·k·d) (+ O(trials·chunk·k) scores)


@dataclass(frozen=True)
class AttackGuesses:
    """Guessed candidate index per noise draw and target, shape (trials, m), with the scores
    (trials, m, k; higher = more likely) they maximise."""

    guesses: np.ndarray
    scores: np.ndarray
    targets: np.ndarray
    name: str
    approximation: str = ""

    def accuracy(self, codes: np.ndarray) -> np.ndarray:
        """Per-draw accuracy against the true codes of the targets (scoring only)."""
        return attack_accuracy(self.guesses, codes)


# ---------------------------------------------------------------------------------------------
# helpers


def _releases(releases: np.ndarray, d: int) -> np.ndarray:
    r = np.asarray(releases, dtype=np.float64)
    if r.ndim == 1:
        r = r[None, :]
    if r.ndim != 2 or r.shape[1] != d or not np.all(np.isfinite(r)):
        raise ValueError(f"releases: expected finite (trials, {d}) or ({d},) weights; got shape "
                         f"{np.shape(releases)}")
    return r


def _targets(targets: Sequence[int] | np.ndarray | None, n: int) -> np.ndarray:
    if targets is None:
        return np.arange(n)
    t = np.asarray(targets, dtype=np.int64).reshape(-1)
    if t.size == 0 or t.min() < 0 or t.max() >= n:
        raise ValueError(f"targets: allowed: at least one row index in 0..{n - 1}")
    return t


def _attribute(columns: Sequence[int], candidates: np.ndarray, d: int
               ) -> tuple[np.ndarray, np.ndarray]:
    cols = np.asarray(columns, dtype=np.int64).reshape(-1)
    if cols.size == 0 or cols.min() < 0 or cols.max() >= d or np.unique(cols).size != cols.size:
        raise ValueError(f"columns: allowed: distinct feature indices in 0..{d - 1}")
    cand = np.asarray(candidates, dtype=np.float64)
    if cand.ndim == 1:
        cand = cand[:, None]
    if cand.ndim != 2 or cand.shape[1] != cols.size or cand.shape[0] < 2:
        raise ValueError(f"candidates: expected (k >= 2, {cols.size}) values, one row per "
                         f"candidate; got shape {np.shape(candidates)}")
    return cols, cand


def _prior(prior: np.ndarray | None, k: int) -> np.ndarray | None:
    if prior is None:
        return None
    p = np.asarray(prior, dtype=np.float64).reshape(-1)
    if p.shape[0] != k or np.any(p < 0) or p.sum() <= 0:
        raise ValueError(f"prior: expected {k} non-negative probabilities, one per candidate")
    return p / p.sum()


def true_codes(X: np.ndarray, columns: Sequence[int], candidates: np.ndarray) -> np.ndarray:
    """Index of the candidate each row's attribute equals (nearest, for round-off): SCORING
    ONLY — the attacks never call this."""
    cols = np.asarray(columns, dtype=np.int64)
    cand = np.asarray(candidates, dtype=np.float64).reshape(len(candidates), -1)
    v = np.asarray(X, dtype=np.float64)[:, cols]
    return np.argmin(((v[:, None, :] - cand[None]) ** 2).sum(-1), axis=1)


def attack_accuracy(guesses: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Fraction of targets guessed right, per noise draw: shape (trials,)."""
    g = np.asarray(guesses)
    g = g[None] if g.ndim == 1 else g
    return (g == np.asarray(codes)[None, :]).mean(axis=1)


def accuracy_by_decile(guesses: np.ndarray, codes: np.ndarray, eta: np.ndarray,
                       bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Attack accuracy per quantile bin of ``eta`` (Fig. 7b/d: deciles of the initial η):
    (mean η per bin, accuracy per bin averaged over draws)."""
    e = np.asarray(eta, dtype=np.float64)
    order = np.argsort(e, kind="stable")
    parts = np.array_split(order, bins)
    correct = (np.atleast_2d(guesses) == np.asarray(codes)[None, :]).mean(axis=0)
    return (np.array([e[p].mean() for p in parts if p.size]),
            np.array([correct[p].mean() for p in parts if p.size]))


def _fit_arrays(fit: FittedGLM, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if X.ndim != 2 or X.shape != (fit.n, fit.d) or y.shape[0] != fit.n:
        raise ValueError(f"X, y: the attacker's copy of the training data must match the fit "
                         f"({fit.n} rows, {fit.d} columns); got {np.shape(X)}")
    return X, y


def _woodbury2(B: np.ndarray, Bu: np.ndarray, Bv: np.ndarray, u: np.ndarray, v: np.ndarray,
               cu: np.ndarray, cv: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """(H + cu·u uᵀ + cv·v vᵀ)⁻¹ rhs for a batch, from B = H⁻¹ (Woodbury with U = [u, v],
    C = diag(cu, cv), written as (C⁻¹ + UᵀBU)⁻¹ = (I + C UᵀBU)⁻¹C so a zero weight is safe).
    Shapes: Bu, u, rhs (..., d); Bv, v (..., d) broadcastable; cu, cv (...)."""
    Brhs = rhs @ B
    k11 = np.einsum("...j,...j->...", u, Bu)
    k12 = np.einsum("...j,...j->...", u, Bv)
    k22 = np.einsum("...j,...j->...", v, Bv)
    m11, m12, m21, m22 = 1 + cu * k11, cu * k12, cv * k12, 1 + cv * k22
    det = m11 * m22 - m12 * m21
    pu = np.einsum("...j,...j->...", Bu, rhs)  # uᵀ B rhs
    pv = np.einsum("...j,...j->...", Bv, rhs)
    # s = (I + C K)⁻¹ C [pu, pv]
    cu_pu, cv_pv = cu * pu, cv * pv
    s1 = (m22 * cu_pu - m12 * cv_pv) / det
    s2 = (-m21 * cu_pu + m11 * cv_pv) / det
    return Brhs - s1[..., None] * Bu - s2[..., None] * Bv


def _candidate_rows(X: np.ndarray, tg: np.ndarray, cols: np.ndarray, cand: np.ndarray
                    ) -> np.ndarray:
    """x_c for every (target, candidate): (m, k, d)."""
    xc = np.repeat(X[tg][:, None, :], cand.shape[0], axis=1)
    xc[:, :, cols] = cand[None, :, :]
    return xc


def candidate_models(fit: FittedGLM, X: np.ndarray, y: np.ndarray, *, columns: Sequence[int],
                     candidates: np.ndarray, targets: Sequence[int] | None = None,
                     expansion: np.ndarray | None = None) -> np.ndarray:
    """f(𝒟 \\ x_i^S ∪ c) for every target i and candidate c: (m, k, d).

    Least squares: exact (rank-2 update of A = H⁻¹; ``expansion`` ignored). Logistic: one Newton
    step from ``expansion`` (a release w'; default: the fitted w*, which makes the true
    candidate exact — use that only to test the step against refits)."""
    X, y = _fit_arrays(fit, X, y)
    cols, cand = _attribute(columns, candidates, fit.d)
    tg = _targets(targets, fit.n)
    return _candidate_models(fit, X, y, cols, cand, tg, expansion)


def _candidate_models(fit: FittedGLM, X: np.ndarray, y: np.ndarray, cols: np.ndarray,
                      cand: np.ndarray, tg: np.ndarray, expansion: np.ndarray | None
                      ) -> np.ndarray:
    om = np.ones(fit.n) if fit.weights is None else fit.weights
    xi = X[tg]
    xc = _candidate_rows(X, tg, cols, cand)
    w = om[tg]
    yi = fit.encode(y[tg])
    if fit.model == "linear":
        B = fit.hessian_inv
        r = fit.hessian @ fit.theta  # = Xᵀ W y (the normal equations' right-hand side)
        rhs = r[None, None, :] + (w * yi)[:, None, None] * (xc - xi[:, None, :])
        Bxc, Bxi = xc @ B, (xi @ B)[:, None, :]
        wk = np.broadcast_to(w[:, None], xc.shape[:2])
        return _woodbury2(B, Bxc, Bxi, xc, xi[:, None, :], wk, -wk, rhs)
    th0 = fit.theta if expansion is None else np.asarray(expansion, dtype=np.float64)
    d1, d2 = _derivs("logistic", X @ th0, fit.encode(y))
    G = X.T @ (om * d1) + fit.n * fit.l2 * th0  # ∇L(th0) on the full data
    H = (X * (om * d2)[:, None]).T @ X
    H[np.diag_indices_from(H)] += fit.n * fit.l2
    B = np.linalg.inv(H)
    di, hi = d1[tg], d2[tg]
    dc, hc = _derivs("logistic", xc @ th0, yi[:, None])
    # ∇L_c(th0) = G − ω g_i + ω g_c;  H_c = H − ω h_i x_i x_iᵀ + ω h_c x_c x_cᵀ
    grad = G[None, None, :] + w[:, None, None] * (dc[..., None] * xc
                                                  - (di[:, None] * xi)[:, None, :])
    Bxc, Bxi = xc @ B, (xi @ B)[:, None, :]
    step = _woodbury2(B, Bxc, Bxi, xc, xi[:, None, :], w[:, None] * hc,
                      np.broadcast_to(-(w * hi)[:, None], hc.shape), grad)
    return th0[None, None, :] - step


# ---------------------------------------------------------------------------------------------
# attacks


def white_box_attack(releases: np.ndarray, *, fit: FittedGLM, X: np.ndarray, y: np.ndarray,
                     columns: Sequence[int], candidates: np.ndarray,
                     targets: Sequence[int] | None = None, sigma: float | None = None,
                     prior: np.ndarray | None = None,
                     chunk_size: int = DEFAULT_CHUNK) -> AttackGuesses:
    """Eq. 30: x̂_i^S = argmin_c ‖w' − f(𝒟 \\ x_i^S ∪ c)‖₂ for every target and noise draw.

    ``fit``/``X``/``y``: the training algorithm and the data the attacker knows (its copy of
    row i's S columns is never used for target i: see the module docstring). ``prior`` (with
    ``sigma``) gives the MAP variant −‖·‖²/(2σ²) + log p(c) (off by default, as the paper).
    Vectorised over targets (chunks of ``chunk_size``) and draws."""
    X, y = _fit_arrays(fit, X, y)
    cols, cand = _attribute(columns, candidates, fit.d)
    tg = _targets(targets, fit.n)
    R = _releases(releases, fit.d)
    p = _prior(prior, cand.shape[0])
    if p is not None:
        if sigma is None:
            raise ValueError("sigma: the MAP variant (prior given) needs the noise scale σ")
        s2 = 2 * check_sigma(sigma) ** 2
    scores = np.empty((R.shape[0], tg.size, cand.shape[0]))
    for start in range(0, tg.size, chunk_size):
        sl = slice(start, min(start + chunk_size, tg.size))
        if fit.model == "linear":
            th = _candidate_models(fit, X, y, cols, cand, tg[sl], None)  # exact, draw-free
            dist = ((R**2).sum(1)[:, None, None] - 2 * np.einsum("td,mkd->tmk", R, th)
                    + (th**2).sum(-1)[None])
        else:  # a Newton step from each release: the model depends on the draw
            dist = np.stack([((_candidate_models(fit, X, y, cols, cand, tg[sl], r) - r) ** 2)
                             .sum(-1) for r in R])
        scores[:, sl, :] = -dist if p is None else -dist / s2 + np.log(np.maximum(p, 1e-300))
    return AttackGuesses(guesses=np.argmax(scores, axis=2), scores=scores, targets=tg,
                         name="fil_white_box",
                         approximation="" if fit.model == "linear" else
                         "one Newton step from the release per candidate (logistic regression)")


def performance_stats(release: np.ndarray, *, model: str, X: np.ndarray,
                      y: np.ndarray) -> dict:
    """The statistics π the black-box attacker is given about one release (computed by the
    data owner on the training rows, as Fredrikson et al.): ``s2`` = Σℓ_i/(n − d) with
    ℓ_i = ½(w'ᵀx_i − y_i)² (least squares), and ``confusion`` = P(prediction | label) on
    {0, 1}-coded labels (classifiers; prediction = 1[w'ᵀx > 0])."""
    _check_model(model)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    w = np.asarray(release, dtype=np.float64).reshape(-1)
    a = X @ w
    n, d = X.shape
    out: dict = {"s2": float(np.sum(0.5 * (a - y) ** 2) / max(1, n - d))}
    vals = set(np.unique(y).tolist())
    if vals <= {0.0, 1.0} or vals <= {-1.0, 1.0}:
        # the coding is read from every training label; the attacker scores its targets with
        # the same cut and threshold (stored here), whatever labels the targets happen to hold
        label_cut = 0.0 if -1.0 in vals else 0.5
        threshold = 0.5 if model == "linear" and vals <= {0.0, 1.0} else 0.0
        y01 = (y > label_cut).astype(int)
        pred = (a > threshold).astype(int)
        conf = np.zeros((2, 2))
        np.add.at(conf, (y01, pred), 1.0)
        out["confusion"] = conf / np.maximum(conf.sum(1, keepdims=True), 1.0)
        out["label_cut"], out["threshold"] = label_cut, threshold
    return out


def black_box_attack(releases: np.ndarray, *, model: str, X_targets: np.ndarray,
                     y_targets: np.ndarray, columns: Sequence[int], candidates: np.ndarray,
                     prior: np.ndarray, stats: Sequence[dict],
                     pi: Literal["gaussian", "confusion"] | None = None) -> AttackGuesses:
    """Eq. 31: x̂ = argmax_c p(c)·π(φ(w', x_i \\ x_i^S ∪ c), y_i), per draw and target.

    ``X_targets``: the target rows (their S columns are overwritten by each candidate, never
    read); ``stats``: one :func:`performance_stats` dict per release. ``pi``: ``gaussian``
    (N(w'ᵀx; y, s²), least squares default) or ``confusion`` (P(ŷ | y), logistic default)."""
    _check_model(model)
    Xt = np.asarray(X_targets, dtype=np.float64)
    if Xt.ndim != 2:
        raise ValueError(f"X_targets: expected (m, d) rows; got shape {Xt.shape}")
    yt = np.asarray(y_targets, dtype=np.float64).reshape(-1)
    R = _releases(releases, Xt.shape[1])
    cols, cand = _attribute(columns, candidates, Xt.shape[1])
    p = _prior(prior, cand.shape[0])
    if len(stats) != R.shape[0]:
        raise ValueError(f"stats: expected one dict per release ({R.shape[0]}); got {len(stats)}")
    pi = pi or ("gaussian" if model == "linear" else "confusion")
    xc = _candidate_rows(Xt, np.arange(Xt.shape[0]), cols, cand)
    a = np.einsum("mkd,td->tmk", xc, R)
    if pi == "gaussian":
        s2 = np.array([max(st["s2"], 1e-300) for st in stats])[:, None, None]
        loglik = -((a - yt[None, :, None]) ** 2) / (2 * s2)
    elif pi == "confusion":
        if any("threshold" not in st for st in stats):
            raise ValueError("stats: the confusion π needs binary training labels ({0, 1} or "
                             "{-1, 1}); performance_stats found others")
        # the label coding and the prediction threshold of the performance statistics (read
        # from every training label), so π is looked up exactly as it was tallied
        y01 = (yt > stats[0]["label_cut"]).astype(int)
        pred = (a > stats[0]["threshold"]).astype(int)
        conf = np.stack([st["confusion"] for st in stats])  # (T, 2, 2)
        lik = conf[np.arange(R.shape[0])[:, None, None], y01[None, :, None], pred]
        loglik = np.log(np.maximum(lik, 1e-300))
    else:
        raise ValueError(f"pi: got {pi!r}; allowed: 'gaussian' or 'confusion'")
    # the prior breaks ties (equal π for every candidate: the prior mode, as the baseline)
    scores = loglik + np.log(np.maximum(p, 1e-300))[None, None, :]
    return AttackGuesses(guesses=np.argmax(scores, axis=2), scores=scores,
                         targets=np.arange(Xt.shape[0]), name="fil_black_box")


def prior_attack(prior: np.ndarray, *, m: int, trials: int = 1) -> AttackGuesses:
    """Baseline: every target gets the marginal's mode argmax p(c) (no model)."""
    p = _prior(prior, len(np.asarray(prior).reshape(-1)))
    scores = np.broadcast_to(np.log(np.maximum(p, 1e-300)), (trials, m, p.size)).copy()
    return AttackGuesses(guesses=np.argmax(scores, axis=2), scores=scores,
                         targets=np.arange(m), name="fil_prior")


# ---------------------------------------------------------------------------------------------
# unbiased reconstruction and the Cramér–Rao bound (A12 item 7)


def _need_linear(fit: FittedGLM) -> None:
    if fit.model != "linear":
        raise ValueError("model: unbiased reconstruction is implemented for least squares, whose "
                         "minimiser is known in closed form; logistic regression's is not (use "
                         "the white-box attack)")


def reconstruct_label(releases: np.ndarray, *, fit: FittedGLM, X: np.ndarray, y: np.ndarray,
                      targets: Sequence[int] | None = None) -> np.ndarray:
    """ŷ_i = a_iᵀ(w' − A Σ_{j≠i} ω_j x_j y_j)/‖a_i‖², a_i = ω_i A x_i (least squares: w* = A XᵀWy
    is linear in y, so ŷ is exactly unbiased and Var ŷ_i = σ²/‖a_i‖² = 1/η_{i,y}², the CRB).
    Shape (trials, m). The attacker knows A (it depends on X only) and every y_j, j ≠ i."""
    _need_linear(fit)
    X, y = _fit_arrays(fit, X, y)
    tg = _targets(targets, fit.n)
    R = _releases(releases, fit.d)
    om = np.ones(fit.n) if fit.weights is None else fit.weights
    A = fit.hessian_inv
    a = (X[tg] @ A) * om[tg, None]  # a_i
    r = fit.hessian @ fit.theta  # XᵀWy
    known = (r[None, :] - (om[tg] * y[tg])[:, None] * X[tg]) @ A  # A Σ_{j≠i} ω_j x_j y_j
    proj = np.einsum("td,md->tm", R, a) - np.einsum("md,md->m", known, a)[None, :]
    return proj / np.einsum("md,md->m", a, a)[None, :]


def reconstruct_feature(releases: np.ndarray, *, fit: FittedGLM, X: np.ndarray, y: np.ndarray,
                        column: int, targets: Sequence[int] | None = None,
                        start: np.ndarray | float | None = None, steps: int = 8) -> np.ndarray:
    """Gauss–Newton on t ↦ ‖w' − f(𝒟 with x_ik = t)‖² (least squares): f(t) exactly by a rank-2
    update, its derivative J_i[:, k](t) = −ω(θ_k(t) a(t) + ℓ'(t) A(t) e_k) from A7.3, and
    t ← t + jᵀ(w' − f(t))/‖j‖². Starts at ``start`` (default: the mean of column k over the
    other rows). Approximately unbiased for small σ; biased once σ is large (A5's caveat).
    Shape (trials, m)."""
    _need_linear(fit)
    X, y = _fit_arrays(fit, X, y)
    tg = _targets(targets, fit.n)
    R = _releases(releases, fit.d)
    k = int(column)
    if not 0 <= k < fit.d:
        raise ValueError(f"column: got {column!r}; allowed: a feature index 0..{fit.d - 1}")
    T, m = R.shape[0], tg.size
    om = np.ones(fit.n) if fit.weights is None else fit.weights
    w = om[tg]
    if start is None:
        t0 = (X[:, k].sum() - X[tg, k]) / (fit.n - 1)
    else:
        t0 = np.broadcast_to(np.asarray(start, dtype=np.float64), (m,))
    t = np.broadcast_to(t0, (T, m)).copy()
    B = fit.hessian_inv
    r = fit.hessian @ fit.theta
    xi = X[tg]
    Bxi = xi @ B
    ek = np.zeros(fit.d)
    ek[k] = 1.0
    for _ in range(max(1, int(steps))):
        xt = np.broadcast_to(xi, (T, m, fit.d)).copy()
        xt[:, :, k] = t
        yi = y[tg][None, :]
        rhs = r[None, None, :] + (w * y[tg])[None, :, None] * (xt - xi[None])
        Bxt = xt @ B
        cu = np.broadcast_to(w, (T, m))
        theta = _woodbury2(B, Bxt, Bxi[None], xt, xi[None], cu, -cu, rhs)
        # A(t) applied to x(t) and e_k through the same rank-2 update
        a_t = _woodbury2(B, Bxt, Bxi[None], xt, xi[None], cu, -cu, xt)
        Aek = _woodbury2(B, Bxt, Bxi[None], xt, xi[None], cu, -cu,
                         np.broadcast_to(ek, xt.shape))
        d1 = np.einsum("tmd,tmd->tm", theta, xt) - yi  # ℓ' = θᵀx − y (ℓ'' = 1)
        j = -w[None, :, None] * (theta[..., k:k + 1] * a_t + d1[..., None] * Aek)
        res = R[:, None, :] - theta
        jj = np.maximum(np.einsum("tmd,tmd->tm", j, j), 1e-300)
        t = t + np.einsum("tmd,tmd->tm", j, res) / jj
    return t


def crb_report(estimates: np.ndarray, truth: np.ndarray, eta: np.ndarray, *,
               confidence: float = 0.95) -> dict[str, np.ndarray]:
    """Measured variance of an (intended) unbiased estimator over noise draws against the
    Cramér–Rao bound 1/η² (Eq. 3), per target: ``variance``, ``bias``, ``mse``, ``bound``,
    ``ratio`` = variance/bound and its chi-square interval (``ratio_lo``, ``ratio_hi``; the
    variance of T Gaussian draws is σ²χ²_{T−1}/(T−1)). A ratio below 1 beyond the interval
    would contradict the bound for an unbiased estimator."""
    from scipy.stats import chi2

    est = np.asarray(estimates, dtype=np.float64)
    T = est.shape[0]
    if est.ndim != 2 or T < 2:
        raise ValueError("estimates: expected (trials >= 2, m) values")
    tr = np.asarray(truth, dtype=np.float64).reshape(-1)
    e = np.asarray(eta, dtype=np.float64).reshape(-1)
    var = est.var(axis=0, ddof=1)
    bound = 1.0 / e**2
    ratio = var / bound
    a = 1 - confidence
    lo = (T - 1) / chi2.ppf(1 - a / 2, T - 1)
    hi = (T - 1) / chi2.ppf(a / 2, T - 1)
    return {"variance": var, "bias": est.mean(0) - tr, "mse": ((est - tr[None]) ** 2).mean(0),
            "bound": bound, "ratio": ratio, "ratio_lo": ratio * lo, "ratio_hi": ratio * hi,
            "trials": np.full(var.shape, T)}


# ---------------------------------------------------------------------------------------------
# attacks on the label (the engine's white-box attack above targets feature columns)


def _label_candidate_models(fit, X: np.ndarray, y: np.ndarray, tg: np.ndarray,
                            cand: np.ndarray, release: np.ndarray | None) -> np.ndarray:
    """f(𝒟 with y_i = c) for targets ``tg`` and label candidates ``cand``: (m, k, d).

    Least squares, exact: w*(c) = A(r − ω_i y_i x_i) + ω_i c A x_i (r = XᵀWy; the attacker
    knows every y_j, j ≠ i, so the first term never reads y_i). Logistic, an approximation:
    one Newton step from the release w' (as the engine's feature attack): the candidate's
    gradient Σ_{j≠i} ω_j ℓ'_j x_j + ω_i (s_i − c) x_i + nλw' needs no y_i either."""
    om = np.ones(fit.n) if fit.weights is None else fit.weights
    xi, w = X[tg], om[tg]
    if fit.model == "linear":
        A = fit.hessian_inv
        r = fit.hessian @ fit.theta
        known = (r[None, :] - (w * y[tg])[:, None] * xi) @ A
        a = (xi @ A) * w[:, None]
        return known[:, None, :] + cand[None, :, None] * a[:, None, :]
    th0 = np.asarray(release, dtype=np.float64)
    d1, d2 = _derivs("logistic", X @ th0, fit.encode(y))
    H = (X * (om * d2)[:, None]).T @ X
    H[np.diag_indices_from(H)] += fit.n * fit.l2
    G = X.T @ (om * d1) + fit.n * fit.l2 * th0
    s_i = d1[tg] + fit.encode(y[tg])  # σ(w'ᵀx_i), label-free
    # remove row i's true term, add the candidate's: G − ω(s − y_i)x + ω(s − c)x
    G_c = (G[None, None, :] - (w * d1[tg])[:, None, None] * xi[:, None, :]
           + (w[:, None] * (s_i[:, None] - cand[None, :]))[..., None] * xi[:, None, :])
    return th0[None, None, :] - np.linalg.solve(H, G_c.reshape(-1, fit.d).T).T.reshape(G_c.shape)


def label_white_box(releases: np.ndarray, *, fit, X: np.ndarray, y: np.ndarray,
                    targets: np.ndarray) -> np.ndarray:
    """Eq. 30 on the label: argmin_c ‖w' − f(𝒟 with y_i = c)‖ per draw and target (guesses are
    candidate indices into the label coding; shape (trials, m))."""
    cand = np.asarray(fit.label_values, dtype=np.float64)
    R = np.atleast_2d(releases)
    if fit.model == "linear":
        th = _label_candidate_models(fit, X, y, targets, cand, None)
        dist = ((R**2).sum(1)[:, None, None] - 2 * np.einsum("td,mkd->tmk", R, th)
                + (th**2).sum(-1)[None])
    else:
        dist = np.stack([((_label_candidate_models(fit, X, y, targets, cand, r) - r) ** 2).sum(-1)
                         for r in R])
    return np.argmin(dist, axis=2)


def label_black_box(releases: np.ndarray, *, model: str, X_targets: np.ndarray,
                    prior: np.ndarray, stats: list[dict], label_values) -> np.ndarray:
    """Eq. 31 on the label (the attacker queries φ(w', x_i) and knows x_i): argmax_c p(c)·π,
    with π = N(w'ᵀx; c, s²) (least squares) or the training confusion P(ŷ | y = c)."""
    R = np.atleast_2d(releases)
    a = X_targets @ R.T  # (m, T)
    cand = np.asarray(label_values, dtype=np.float64)
    logp = np.log(np.maximum(prior, 1e-300))
    if model == "linear":
        s2 = np.array([max(s["s2"], 1e-300) for s in stats])
        ll = -((a.T[:, :, None] - cand[None, None, :]) ** 2) / (2 * s2[:, None, None])
    else:
        pred = (a.T > 0).astype(int)  # (T, m)
        conf = np.stack([s["confusion"] for s in stats])  # (T, 2, 2): P(pred | y)
        ll = np.log(np.maximum(np.stack([conf[:, c, :][np.arange(len(R))[:, None], pred]
                                         for c in range(2)], axis=2), 1e-300))
    return np.argmax(ll + logp[None, None, :], axis=2)


# ---------------------------------------------------------------------------------------------
# the protocol: what the attacker observes, and the functions the registered parts name


@dataclass(frozen=True)
class GLMRelease:
    """The released noisy weights w' = w* + N(0, σ²I), one row per noise draw (trials, d)."""

    kind: ClassVar[str] = "model"
    weights: np.ndarray


def glm_knowledge(*, fit: FittedGLM, X: np.ndarray, y: np.ndarray, targets: np.ndarray,
                  prior: np.ndarray, columns: Sequence[int] | None = None,
                  candidates: np.ndarray | None = None) -> Any:
    """What the FIL attackers know: the training rows ``X`` and coded labels ``y`` (the
    white-box attacker: all but the target value, which its functions never read), the fit's
    algorithm (loss, λ, weights) in ``fit``, the attacked rows ``targets``, the target's
    marginal ``prior`` and, for an attribute, its ``columns`` and value ``candidates`` (None:
    the target is the label)."""
    from core.foundation.knowledge import AdversaryKnowledge

    return AdversaryKnowledge(n_classes=max(2, len(prior)), prior=np.asarray(prior),
                              extra={"fit": fit, "X": X, "y": y, "targets": targets,
                                     "columns": columns, "candidates": candidates})


def white_box_on_release(release: GLMRelease, knowledge: Any, **_: Any) -> np.ndarray:
    """Eq. 30 on the attribute (:func:`white_box_attack`) or the label (:func:`label_white_box`)."""
    e = knowledge.extra
    if e["columns"] is None:
        return label_white_box(release.weights, fit=e["fit"], X=e["X"], y=e["y"],
                               targets=e["targets"])
    return white_box_attack(release.weights, fit=e["fit"], X=e["X"], y=e["y"],
                            columns=e["columns"], candidates=e["candidates"],
                            targets=e["targets"]).guesses


def black_box_on_release(release: GLMRelease, knowledge: Any, **_: Any) -> np.ndarray:
    """Eq. 31 on the attribute (:func:`black_box_attack`) or the label (:func:`label_black_box`),
    from the release's own training error statistics."""
    e = knowledge.extra
    fit, X, y, tg = e["fit"], e["X"], e["y"], e["targets"]
    R = release.weights
    stats = [performance_stats(r, model=fit.model, X=X, y=y) for r in R]
    if e["columns"] is None:
        return label_black_box(R, model=fit.model, X_targets=X[tg], prior=knowledge.prior,
                               stats=stats, label_values=fit.label_values)
    return black_box_attack(R, model=fit.model, X_targets=X[tg], y_targets=y[tg],
                            columns=e["columns"], candidates=e["candidates"],
                            prior=knowledge.prior, stats=stats).guesses


def prior_on_release(release: GLMRelease, knowledge: Any, **_: Any) -> np.ndarray:
    """The marginal's mode for every target and draw (:func:`prior_attack`)."""
    return prior_attack(knowledge.prior, m=np.asarray(knowledge.extra["targets"]).size,
                        trials=len(np.atleast_2d(release.weights))).guesses

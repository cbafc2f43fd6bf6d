"""Attribute-inference attacks on representations (TAPPFL spec B8 [MINE], B10), as pure
functions over arrays (ML Privacy Meter v2 style):

- :func:`fresh_attacker`: the server trains a new classifier u ← r on frozen representations of
  auxiliary data with known u (logistic regression or a small MLP), then scores it on test r;
- :func:`prior_attack`: the no-model baseline (predict from the aux class frequencies);
- :func:`score_in_training`: scores probabilities produced elsewhere (the in-training
  adversary Ψ of the FL loop).

Attribute values are integer codes 0..k-1; k is inferred from the data (or given) and every
outcome's ``proba`` has k columns even when some values are absent from a split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from core.metrics import attack_scores, prior_proba


@dataclass
class AttackOutcome:
    """One attack's result: ``scores`` from :func:`core.metrics.attack_scores`, test
    probabilities ``proba`` (n, k), and the test cross-entropy ``ce_nats`` (an upper estimate of
    H(u|r) in nats for a calibrated attacker)."""

    name: str
    scores: dict[str, float]
    proba: np.ndarray
    ce_nats: float
    info: dict[str, str | int | float] = field(default_factory=dict)


def _labels(u: np.ndarray, name: str) -> np.ndarray:
    u = np.asarray(u)
    if u.ndim != 1:
        raise ValueError(f"{name}: got shape {u.shape}; expected a 1-D array of attribute codes")
    if u.size and (u.min() < 0 or not np.all(np.equal(np.mod(u, 1), 0))):
        raise ValueError(f"{name}: expected integer attribute codes >= 0")
    return u.astype(np.int64)


def _n_classes(*arrays: np.ndarray, n_classes: int | None) -> int:
    hi = max((int(a.max()) for a in arrays if a.size), default=0)
    if n_classes is None:
        return max(2, hi + 1)
    if n_classes < hi + 1 or n_classes < 2:
        raise ValueError(
            f"n_classes: got {n_classes}; the data hold code {hi}, "
            f"so allowed range >= {max(2, hi + 1)}"
        )
    return int(n_classes)


def _outcome(name: str, u_test: np.ndarray, proba: np.ndarray, **info) -> AttackOutcome:
    scores = attack_scores(u_test, proba)
    return AttackOutcome(
        name=name,
        scores=scores,
        proba=proba.astype(np.float64),
        ce_nats=scores["cross_entropy_nats"],
        info=info,
    )


def _expand(proba_seen: np.ndarray, seen: np.ndarray, k: int) -> np.ndarray:
    """Columns for the classes a model saw -> k columns (zeros for classes it never saw)."""
    out = np.zeros((proba_seen.shape[0], k), dtype=np.float64)
    out[:, seen] = proba_seen
    return out


def prior_attack(
    u_aux: np.ndarray, u_test: np.ndarray, *, n_classes: int | None = None
) -> AttackOutcome:
    """No-model baseline: every test point gets the aux class frequencies (add-one smoothed);
    it predicts the aux-majority value. AUC 0.5, advantage 0, CE ≈ H(u) in nats."""
    ua = _labels(u_aux, "u_aux")
    ut = _labels(u_test, "u_test")
    k = _n_classes(ua, ut, n_classes=n_classes)
    return _outcome("prior", ut, prior_proba(ua, ut.size, k))


def score_in_training(
    proba: np.ndarray, u_test: np.ndarray, *, name: str = "in_training"
) -> AttackOutcome:
    """Score the in-training adversary's probabilities (n,) binary or (n, k) on test data."""
    ut = _labels(u_test, "u_test")
    p = np.asarray(proba, dtype=np.float64)
    if p.ndim == 1:
        p = np.stack([1.0 - p, p], axis=1)
    return _outcome(name, ut, p)


def _split_rows(n: int, rng: np.random.Generator, max_train: int) -> np.ndarray:
    idx = rng.permutation(n)
    return np.sort(idx[:max_train]) if n > max_train else np.arange(n)


def _fit_logreg(X: np.ndarray, u: np.ndarray, seed: int):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # lbfgs is multinomial for k > 2 (sklearn >= 1.5 has no multi_class switch any more)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000, random_state=seed))
    model.fit(X, u)
    return model


def _mlp_proba(
    X: np.ndarray, u: np.ndarray, X_test: np.ndarray, k: int, *, seed: int, hidden: int, epochs: int
) -> tuple[np.ndarray, dict]:
    """One-hidden-layer ReLU MLP (torch, Adam 1e-3, batch 256), standardised inputs, early
    stopping on the validation CE of a held-out 10 % of the aux rows (patience 8 epochs; the best
    epoch's weights are kept). Deterministic from ``seed`` (own RNG; global torch RNG untouched).
    On CPU it runs with one torch thread (restored afterwards)."""
    import torch

    from core.device import get_device

    dev = get_device("auto")
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    perm = rng.permutation(n)
    n_val = max(1, round(0.1 * n)) if n >= 20 else 0
    val_idx, tr_idx = perm[:n_val], perm[n_val:]
    mu = X[tr_idx].mean(axis=0)
    sd = X[tr_idx].std(axis=0)
    sd = np.where(sd > 1e-12, sd, 1.0)

    def prep(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(((a - mu) / sd).astype(np.float32), device=dev)

    # a model this small trains ~10x faster on one CPU thread than on two busy ones
    threads = torch.get_num_threads()
    if dev.type == "cpu":
        torch.set_num_threads(1)
    try:
        return _mlp_train(
            X,
            u,
            X_test,
            k,
            prep,
            tr_idx,
            val_idx,
            n_val,
            seed=seed,
            hidden=hidden,
            epochs=epochs,
            dev=dev,
        )
    finally:
        torch.set_num_threads(threads)


def _mlp_train(X, u, X_test, k, prep, tr_idx, val_idx, n_val, *, seed, hidden, epochs, dev):
    import torch

    Xtr, ytr = prep(X[tr_idx]), torch.as_tensor(u[tr_idx], device=dev)
    Xva, yva = prep(X[val_idx]), torch.as_tensor(u[val_idx], device=dev)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = torch.nn.Sequential(
            torch.nn.Linear(X.shape[1], hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, k)
        ).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    ce = torch.nn.functional.cross_entropy
    best = (float("inf"), None, 0)
    patience, bad, ran = 8, 0, 0
    bs = 256
    for ep in range(epochs):
        net.train()
        order = torch.randperm(Xtr.shape[0], generator=gen).to(dev)
        for i in range(0, Xtr.shape[0], bs):
            b = order[i : i + bs]
            opt.zero_grad(set_to_none=True)
            ce(net(Xtr[b]), ytr[b]).backward()
            opt.step()
        ran = ep + 1
        if n_val == 0:
            continue
        net.eval()
        with torch.no_grad():
            v = float(ce(net(Xva), yva))
        if v < best[0] - 1e-6:
            best, bad = (
                (v, {kk: t.detach().clone() for kk, t in net.state_dict().items()}, ep + 1),
                0,
            )
        else:
            bad += 1
            if bad >= patience:
                break
    if best[1] is not None:
        net.load_state_dict(best[1])
    net.eval()
    with torch.no_grad():
        p = torch.softmax(net(prep(X_test)).double(), dim=1).cpu().numpy()
    return p, {"epochs_run": ran, "best_epoch": best[2], "val_ce_nats": best[0]}


def fresh_attacker(
    R_aux: np.ndarray,
    u_aux: np.ndarray,
    R_test: np.ndarray,
    u_test: np.ndarray,
    *,
    model: Literal["logreg", "mlp"],
    seed: int,
    mlp_hidden: int = 64,
    mlp_epochs: int = 60,
    max_train: int = 10_000,
    n_classes: int | None = None,
) -> AttackOutcome:
    """Train a fresh attribute classifier u ← r on (``R_aux``, ``u_aux``) and score it on
    (``R_test``, ``u_test``) — the server's post-hoc attacker of spec B8 [MINE].

    ``logreg``: StandardScaler + LogisticRegression (lbfgs, multinomial for k > 2, C = 1).
    ``mlp``: see :func:`_mlp_proba`. At most ``max_train`` aux rows are used (seeded subsample).
    If the aux data hold a single attribute value the attacker cannot be trained and the
    outcome is the prior baseline (``info['fallback'] = 'prior'``)."""
    Ra = np.asarray(R_aux, dtype=np.float64)
    Rt = np.asarray(R_test, dtype=np.float64)
    ua = _labels(u_aux, "u_aux")
    ut = _labels(u_test, "u_test")
    if Ra.ndim != 2 or Ra.shape[0] != ua.size:
        raise ValueError(f"R_aux: got shape {Ra.shape}; expected (n_aux, d) with n_aux = {ua.size}")
    if Rt.ndim != 2 or Rt.shape[0] != ut.size or Rt.shape[1] != Ra.shape[1]:
        raise ValueError(f"R_test: got shape {Rt.shape}; expected ({ut.size}, {Ra.shape[1]})")
    if model not in ("logreg", "mlp"):
        raise ValueError(f"model: got {model!r}; allowed: logreg, mlp")
    if max_train < 2:
        raise ValueError(f"max_train: got {max_train}; allowed range >= 2")
    k = _n_classes(ua, ut, n_classes=n_classes)
    rng = np.random.default_rng(seed)
    rows = _split_rows(ua.size, rng, max_train)
    Ra, ua_fit = Ra[rows], ua[rows]
    seen = np.unique(ua_fit)
    if seen.size < 2:
        out = _outcome(model, ut, prior_proba(ua_fit, ut.size, k), fallback="prior")
        return out
    if not (np.all(np.isfinite(Ra)) and np.all(np.isfinite(Rt))):
        raise ValueError("R_aux, R_test: got NaN or inf in the representations")
    if model == "logreg":
        clf = _fit_logreg(Ra, ua_fit, seed)
        p = _expand(clf.predict_proba(Rt), clf.classes_.astype(np.int64), k)
        return _outcome("logreg", ut, p, n_train=int(ua_fit.size))
    # mlp: relabel the seen classes to 0..m-1 so the output layer has no dead classes
    remap = np.full(k, -1, dtype=np.int64)
    remap[seen] = np.arange(seen.size)
    p_seen, info = _mlp_proba(
        Ra, remap[ua_fit], Rt, seen.size, seed=seed, hidden=mlp_hidden, epochs=mlp_epochs
    )
    return _outcome("mlp", ut, _expand(p_seen, seen, k), n_train=int(ua_fit.size), **info)

"""Attribute-inference attacks on representations (TAPPFL spec B8 [MINE], B10), as pure
functions over arrays (ML Privacy Meter v2 style):

- :func:`fresh_attacker`: the server trains a new classifier u ← r on frozen representations of
  auxiliary data with known u (logistic regression or a small MLP), then scores it on test r;
- :func:`prior_attack`: the no-model baseline (predict from the aux class frequencies);
- :func:`score_in_training`: scores probabilities produced elsewhere (the in-training
  adversary Ψ of the FL loop);
- :func:`fresh_on_release`, :func:`prior_on_release`: the registered fresh attackers and prior
  as protocol functions (release, knowledge) -> :class:`core.attacks.protocol.AttackOutput`.

Attribute values are integer codes 0..k-1; k is inferred from the data (or given) and every
outcome's ``proba`` has k columns even when some values are absent from a split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from core.data.splits import subsample
from core.foundation.checks import check_int
from core.foundation.knowledge import AdversaryKnowledge
from core.foundation.metrics import attack_scores, cross_entropy_nats, prior_proba

if TYPE_CHECKING:  # the output type only: protocol imports nothing from here at run time
    from core.attacks.protocol import AttackOutput

#: the fresh attackers' models (the registered ``logreg`` and ``mlp`` attacks run them)
FRESH_MODELS = ("logreg", "mlp")


@dataclass
class AttackOutcome:
    """One attack's result: ``scores`` from :func:`core.foundation.metrics.attack_scores`, test
    probabilities ``proba`` (n, k), and the test cross-entropy ``ce_nats`` (an upper estimate of
    H(u|r) in nats for a calibrated attacker); ``decision_weights`` w of its decision
    argmax_c p_c·w_c (None = plain argmax, :func:`core.foundation.metrics.decide`)."""

    name: str
    scores: dict[str, float]
    proba: np.ndarray
    ce_nats: float
    info: dict[str, str | int | float] = field(default_factory=dict)
    decision_weights: np.ndarray | None = None

    @property
    def prediction(self) -> np.ndarray:
        """The attacker's decided value per target row."""
        from core.foundation.metrics import decide

        return decide(self.proba, self.decision_weights)


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
    return check_int("n_classes", n_classes, max(2, hi + 1),
                     note=f"the data hold class code {hi}")


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


def majority_rate(labels: np.ndarray, n_classes: int) -> float:
    """Share of the most frequent value among ``labels``: the accuracy of always guessing the
    majority (a model-free attacker's), the baseline an accuracy gap is measured against — on
    an attribute whose majority holds 86 % of the rows, chance 1/k would read 0.86 − 1/k as
    leakage."""
    lab = _labels(labels, "labels")
    return float(np.bincount(lab, minlength=n_classes).max() / max(1, lab.size))


def prior_shift_weights(u_known: np.ndarray, n_classes: int) -> np.ndarray:
    """Decision weights w_c = 1 / π_c of the class-balanced decision argmax_c p_c / π_c, with
    π the class frequencies of the rows the attacker knows (``u_known``): the Bayes decision
    under a uniform prior for a model whose probabilities are calibrated to π, so an imbalanced
    attribute cannot collapse the decision to the majority value. Classes absent from
    ``u_known`` get weight 0 (never chosen). Shared by the fresh attackers and the in-training
    adversaries, so every attacker decides the same way."""
    u = _labels(u_known, "u_known")
    counts = np.bincount(u, minlength=n_classes).astype(np.float64)[:n_classes]
    w = np.zeros(n_classes, dtype=np.float64)
    seen = counts > 0
    w[seen] = u.size / counts[seen]
    return w


def score_in_training(
    proba: np.ndarray, u_test: np.ndarray, *, name: str = "in_training",
    u_known: np.ndarray | None = None,
) -> AttackOutcome:
    """Score the in-training adversary's probabilities (n,) binary or (n, k) on test data; with
    ``u_known`` (the attribute values the adversary's side knows, e.g. the aux split) it decides
    class-balanced (:func:`prior_shift_weights`) as the fresh attackers do."""
    ut = _labels(u_test, "u_test")
    p = np.asarray(proba, dtype=np.float64)
    if p.ndim == 1:
        p = np.stack([1.0 - p, p], axis=1)
    if u_known is None:
        return _outcome(name, ut, p)
    w = prior_shift_weights(u_known, p.shape[1])
    scores = attack_scores(ut, p, decision_weights=w)
    return AttackOutcome(name=name, scores=scores, proba=p, ce_nats=scores["cross_entropy_nats"],
                         decision_weights=w)


def _fit_logreg(X: np.ndarray, u: np.ndarray, seed: int, *, class_weight=None):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # lbfgs is multinomial for k > 2 (sklearn >= 1.5 has no multi_class switch any more)
    model = make_pipeline(
        StandardScaler(),
        LogisticRegression(max_iter=5000, random_state=seed, class_weight=class_weight),
    )
    model.fit(X, u)
    return model


def _mlp_net(d: int, hidden: int, k: int, generator, dev):
    """The attacker MLP d → hidden → ReLU → k, initialised from ``generator`` by
    :func:`core.models.nn.init_module_` (the global torch RNG plays no part in its weights)."""
    import torch

    from core.models.nn import init_module_

    net = torch.nn.Sequential(
        torch.nn.Linear(d, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, k)
    )
    return init_module_(net, generator).to(dev)


def _mlp_proba(
    X: np.ndarray,
    u: np.ndarray,
    X_test: np.ndarray,
    k: int,
    *,
    seed: int,
    hidden: int,
    epochs: int,
    class_weight: Literal["balanced"] | None = "balanced",
) -> tuple[np.ndarray, dict, np.ndarray]:
    """One-hidden-layer ReLU MLP trained by :func:`core.engine.training.train_classifier` (Adam 1e-3,
    batch 256, cross-entropy weighted by ``class_weight``), standardised inputs, trained until
    the weighted validation CE of a stratified 10 % of the aux rows stops falling
    (:func:`core.engine.training.train_until_plateau`: patience :data:`core.engine.training.PATIENCE` epochs
    and at least :data:`core.engine.training.MIN_PATIENCE_STEPS` steps,
    the split drawn by ``core.foundation.seeds.stream(seed, "early_stopping", "attribute_mlp")``, at most
    ``epochs`` epochs; the best epoch's weights are kept). Deterministic from ``seed`` (a local
    torch.Generator for init and shuffles). Returns the test probabilities (of the weighted
    model), the info (``stopped_early`` False: the cap was hit) and the k class weights used."""
    import torch

    from core.engine.training import MIN_PATIENCE_STEPS, PATIENCE, train_classifier, validation_rows
    from core.foundation.device import get_device

    dev = get_device("auto")
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd = np.where(sd > 1e-12, sd, 1.0)

    def prep(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(((a - mu) / sd).astype(np.float32), device=dev)

    net = _mlp_net(X.shape[1], hidden, k, gen, dev)
    info = train_classifier(
        net,
        prep(X),
        torch.as_tensor(u, device=dev),
        class_weight=class_weight,
        epochs=epochs,
        batch_size=256,
        lr=1e-3,
        generator=gen,
        val_mask=validation_rows(u.size, 0.1, seed, "attribute_mlp", strata=u),
        patience=PATIENCE,
        min_patience_steps=MIN_PATIENCE_STEPS,
    )
    with torch.no_grad():
        p = torch.softmax(net(prep(X_test)).double(), dim=1).cpu().numpy()
    out = {
        "epochs_run": info["epochs_run"],
        "best_epoch": info["best_epoch"],
        "stopped_early": int(info["log"].stopped_early),
        "val_ce_nats": info["val_ce_nats"] if info["n_val"] else float("inf"),
    }
    return p, out, info["class_weight"]


def _prior_corrected(p: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Undo the class weighting of a weighted classifier's probabilities: a model fitted with
    per-class weights w_c estimates the posterior under the reweighted prior π^w_c ∝ π_c·w_c,
    so p_c ∝ p_c · π_c / π^w_c ∝ p_c / w_c restores the aux class frequencies π. Columns of
    weight 0 (classes the attacker never saw) stay 0."""
    inv = np.zeros_like(w, dtype=np.float64)
    inv[w > 0] = 1.0 / w[w > 0]
    q = p * inv[None, :]
    s = q.sum(axis=1, keepdims=True)
    return np.where(s > 0, q / np.where(s > 0, s, 1.0), p)


ClassWeight = Literal["prior_shift", "balanced"] | None
CLASS_WEIGHTS = ("prior_shift", "balanced", None)


@dataclass
class FreshAttack:
    """What a fresh attacker outputs for the target rows (no ground truth involved):
    ``proba`` for the ROC / AUC / advantage, ``calibrated`` for the cross-entropy,
    ``decision_weights`` w for its decision argmax_c p_c·w_c (None = plain argmax), ``info``."""

    proba: np.ndarray
    calibrated: np.ndarray
    decision_weights: np.ndarray | None
    info: dict


def fresh_attacker_proba(
    R_aux: np.ndarray,
    u_aux: np.ndarray,
    R_test: np.ndarray,
    *,
    model: Literal["logreg", "mlp"],
    seed: int,
    mlp_hidden: int = 64,
    mlp_epochs: int = 500,
    max_train: int = 10_000,
    n_classes: int | None = None,
    class_weight: ClassWeight = "prior_shift",
) -> FreshAttack:
    """The attacker's side of :func:`fresh_attacker`: train on (``R_aux``, ``u_aux``) and
    return its :class:`FreshAttack` for ``R_test``, never seeing the targets' attribute.
    ``n_classes`` defaults to 1 + the largest code in ``u_aux`` (at least 2).

    ``class_weight`` (the attacker protocol's class balance):

    - ``"prior_shift"`` (default): train unweighted (calibrated probabilities: the best ranking
      and cross-entropy) and decide class-balanced, argmax_c p_c / π_c with π the aux training
      frequencies — the Bayes decision under a uniform prior, so an imbalanced attribute cannot
      collapse the decision to the majority value;
    - ``"balanced"``: train with class weights n / (m · count_c); the CE uses probabilities
      prior-corrected back to π (p_c ∝ p_c / w_c);
    - ``None``: unweighted training and plain argmax (the majority-prone attacker).

    Measured on Adult marital status (7 values, the rarest 10 of 6,512 aux rows; TAPPFL λ = 0.25
    representations): balanced training gave the MLP AUC 0.738 / balanced accuracy 0.302 (it
    over-fits the up-weighted rare rows and stops early), prior shift 0.831 / 0.393, unweighted
    argmax 0.831 / 0.321; logistic: 0.804 / 0.461, 0.835 / 0.442, 0.835 / 0.343."""
    Ra = np.asarray(R_aux, dtype=np.float64)
    Rt = np.asarray(R_test, dtype=np.float64)
    ua = _labels(u_aux, "u_aux")
    if Ra.ndim != 2 or Ra.shape[0] != ua.size:
        raise ValueError(f"R_aux: got shape {Ra.shape}; expected (n_aux, d) with n_aux = {ua.size}")
    if Rt.ndim != 2 or Rt.shape[1] != Ra.shape[1]:
        raise ValueError(f"R_test: got shape {Rt.shape}; expected (n_test, {Ra.shape[1]})")
    if model not in FRESH_MODELS:
        raise ValueError(f"model: got {model!r}; allowed: {', '.join(FRESH_MODELS)}")
    check_int("max_train", max_train, 2)
    if class_weight not in CLASS_WEIGHTS:
        raise ValueError(f"class_weight: got {class_weight!r}; allowed: 'prior_shift', 'balanced', None")
    k = _n_classes(ua, n_classes=n_classes)
    rows = subsample(ua.size, max_train, seed, strata=ua)
    Ra, ua_fit = Ra[rows], ua[rows]
    seen = np.unique(ua_fit)
    if seen.size < 2:
        p = prior_proba(ua_fit, Rt.shape[0], k)
        return FreshAttack(p, p, None, {"fallback": "prior"})
    if not (np.all(np.isfinite(Ra)) and np.all(np.isfinite(Rt))):
        raise ValueError("R_aux, R_test: got NaN or inf in the representations")
    train_weight = "balanced" if class_weight == "balanced" else None
    cw = class_weight or "none"
    w = np.zeros(k, dtype=np.float64)
    if model == "logreg":
        clf = _fit_logreg(Ra, ua_fit, seed, class_weight=train_weight)
        p = _expand(clf.predict_proba(Rt), clf.classes_.astype(np.int64), k)
        w[seen] = 1.0
        if train_weight == "balanced":  # sklearn's rule, the same as core.engine.training's
            w[seen] = ua_fit.size / (seen.size * np.bincount(ua_fit)[seen])
        info: dict = {"n_train": int(ua_fit.size), "class_weight": cw}
    else:
        # mlp: relabel the seen classes to 0..m-1 so the output layer has no dead classes
        remap = np.full(k, -1, dtype=np.int64)
        remap[seen] = np.arange(seen.size)
        p_seen, mlp_info, w_seen = _mlp_proba(
            Ra, remap[ua_fit], Rt, seen.size, seed=seed, hidden=mlp_hidden, epochs=mlp_epochs,
            class_weight=train_weight)
        p = _expand(p_seen, seen, k)
        w[seen] = w_seen
        info = {"n_train": int(ua_fit.size), "class_weight": cw, **mlp_info}
    decision = prior_shift_weights(ua_fit, k) if class_weight == "prior_shift" else None
    calibrated = _prior_corrected(p, w) if train_weight == "balanced" else p
    return FreshAttack(p, calibrated, decision, info)


def fresh_attacker(
    R_aux: np.ndarray,
    u_aux: np.ndarray,
    R_test: np.ndarray,
    u_test: np.ndarray,
    *,
    model: Literal["logreg", "mlp"],
    seed: int,
    mlp_hidden: int = 64,
    mlp_epochs: int = 500,
    max_train: int = 10_000,
    n_classes: int | None = None,
    class_weight: ClassWeight = "prior_shift",
) -> AttackOutcome:
    """Train a fresh attribute classifier u ← r on (``R_aux``, ``u_aux``) and score it on
    (``R_test``, ``u_test``) — the server's post-hoc attacker of spec B8 [MINE].

    ``logreg``: StandardScaler + LogisticRegression (lbfgs, multinomial for k > 2, C = 1).
    ``mlp``: see :func:`_mlp_proba`. At most ``max_train`` aux rows are used (seeded subsample,
    stratified by u: :func:`core.data.splits.subsample`). If the aux data hold a single
    attribute value the attacker cannot be trained and the outcome is the prior baseline
    (``info['fallback'] = 'prior'``).

    Class balance: see :func:`fresh_attacker_proba` (default: calibrated training, class-balanced
    decision). Accuracy and balanced accuracy come from the attacker's decision; AUC, advantage
    and ROC from ``proba``; the cross-entropy (``ce_nats``, an upper estimate of H(u|r)) from
    the calibrated probabilities."""
    ua = _labels(u_aux, "u_aux")
    ut = _labels(u_test, "u_test")
    if np.asarray(R_test).ndim != 2 or np.asarray(R_test).shape[0] != ut.size:
        raise ValueError(f"R_test: got shape {np.shape(R_test)}; expected ({ut.size}, d)")
    k = _n_classes(ua, ut, n_classes=n_classes)
    fa = fresh_attacker_proba(
        R_aux, ua, R_test, model=model, seed=seed, mlp_hidden=mlp_hidden, mlp_epochs=mlp_epochs,
        max_train=max_train, n_classes=k, class_weight=class_weight)
    scores = attack_scores(ut, fa.proba, decision_weights=fa.decision_weights)
    out = AttackOutcome(name=model, scores=scores, proba=fa.proba.astype(np.float64),
                        ce_nats=scores["cross_entropy_nats"], info=dict(fa.info),
                        decision_weights=fa.decision_weights)
    if fa.info.get("fallback") == "prior" or fa.calibrated is fa.proba:
        return out
    out.info["ce_nats_weighted"] = out.ce_nats
    if ut.size:
        ce = cross_entropy_nats(ut, fa.calibrated)
        out.scores["cross_entropy_nats"] = ce
        out.ce_nats = ce
    return out


def strongest(outcomes: dict[str, AttackOutcome], by: str = "auc") -> str:
    """Name of the strongest attacker in ``outcomes`` by ``scores[by]`` (higher is stronger;
    for ``cross_entropy_nats`` lower is). NaN scores are ignored, ties go to the first in
    order; if every score is NaN the first name is returned. Raises ValueError when
    ``outcomes`` is empty or an outcome lacks ``by``."""
    if not outcomes:
        raise ValueError("outcomes: got none; expected at least one attack outcome")
    sign = -1.0 if by == "cross_entropy_nats" else 1.0
    best_name, best = next(iter(outcomes)), -np.inf
    for name, o in outcomes.items():
        if by not in o.scores:
            raise ValueError(f"by: got {by!r}; allowed: {', '.join(sorted(o.scores))}")
        v = float(o.scores[by])
        if np.isfinite(v) and sign * v > best:
            best_name, best = name, sign * v
    return best_name


# ---------------------------------------------------------------------------------------------
# the registered attacks' protocol functions (core.catalog.attribute_attacks)


def in_training_attack(release, knowledge: AdversaryKnowledge, *, proba: np.ndarray | None = None,
                       **_: Any) -> AttackOutput:
    """The adversary the defense trained against: its probabilities on the target rows were
    produced with the trained defense (the release's ``adversary_proba``, or ``proba``). It
    decides class-balanced, as the fresh attackers do (its probabilities are calibrated to the
    training prior, so a plain argmax would collapse to the majority value)."""
    proba = release.adversary_proba if proba is None else proba
    if proba is None:
        raise ValueError("release.adversary_proba: the release carries no in-training adversary")
    from core.attacks.protocol import AttackOutput, finite_proba

    return AttackOutput("in_training", finite_proba(proba),
                        decision_weights=_balanced_decision(knowledge, np.shape(proba)[1]))


def _balanced_decision(knowledge: AdversaryKnowledge | None, k: int) -> np.ndarray | None:
    """The class-balanced decision of the fresh attackers (argmax p_c / π_c, π from the
    knowledge's aux labels: :func:`prior_shift_weights`); None (plain
    argmax) when the knowledge holds no labels."""
    labels = getattr(knowledge, "aux_labels", None)
    return None if labels is None else prior_shift_weights(labels, k)


def fresh_on_release(release: Any, knowledge: Any, *, model: str, seed: int,
                     mlp_hidden: int = 64, mlp_epochs: int = 500, max_train: int = 10_000,
                     **_: Any) -> Any:
    """A fresh attacker trained on the knowledge's aux rows (calibrated, class-balanced
    decision: :func:`fresh_attacker_proba`) applied to the release's target rows, as an
    :class:`core.attacks.protocol.AttackOutput`."""
    from core.attacks.protocol import AttackOutput

    if knowledge.aux_features is None:
        raise ValueError("knowledge.aux_features: a fresh attacker needs auxiliary rows")
    fa = fresh_attacker_proba(
        knowledge.aux_features, knowledge.aux_labels, release.targets, model=model, seed=seed,
        n_classes=knowledge.n_classes, mlp_hidden=mlp_hidden, mlp_epochs=mlp_epochs,
        max_train=max_train)
    return AttackOutput(model, fa.proba, fa.calibrated, fa.info, fa.decision_weights)


def prior_on_release(release: Any, knowledge: Any, **_: Any) -> Any:
    """No model: every target gets the aux class frequencies (add-one smoothed)."""
    from core.attacks.protocol import AttackOutput

    n = len(release.targets)
    return AttackOutput("prior", prior_proba(knowledge.aux_labels, n, knowledge.n_classes))


def self_test_records(n: int = 24, d: int = 4, classes: int = 2):
    """The attribute family's self-test input (:attr:`core.foundation.parts.Family.self_test`): seeded
    representations whose first coordinate carries the attribute, ``n`` target rows and ``2n``
    auxiliary rows with their values, an in-training adversary's probabilities, and a few
    epochs for a fresh MLP; the registry refuses a second attack whose outputs on it equal an
    existing attack's."""
    from core.foundation.releases import RepresentationRelease

    rng = np.random.default_rng(0)
    u = rng.integers(0, classes, 3 * n)
    R = rng.normal(size=(3 * n, d))
    R[:, 0] += 1.5 * u
    proba = rng.dirichlet(np.ones(classes), n)
    knowledge = AdversaryKnowledge(n_classes=classes, aux_features=R[n:], aux_labels=u[n:])
    return (RepresentationRelease(targets=R[:n], adversary_proba=proba), knowledge,
            {"mlp_epochs": 5})

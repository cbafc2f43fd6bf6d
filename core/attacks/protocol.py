"""One attacker protocol (ML Privacy Meter v2's habit: attacks are functions from what the
attacker sees to scores; one function from scores to the report).

An attack function takes a release (:mod:`core.foundation.releases`), an
:class:`~core.foundation.knowledge.AdversaryKnowledge` and its parameters, and returns an
:class:`AttackOutput` — class probabilities for the target rows, never a score. Only
:func:`score_attack` sees the :class:`~core.foundation.knowledge.GroundTruth`; it returns the scores with
the number of rows scored and 95 % intervals. Fresh attackers are calibrated with
a class-balanced decision (:func:`core.attacks.attribute.fresh_attacker_proba`) so an
imbalanced attribute cannot collapse them to the majority class.

:func:`run_attack` is the one call every runner scores attacks through: it looks the attack up
(by registry name, or by the name a family's config uses), checks that it accepts the release,
and calls the protocol function the part names with the part's fixed options and the
``cfg.attack`` fields it declares (:func:`attack_params`). What the function returns is the
family's output type (class probabilities here; membership scores, reconstructions and guesses
in :mod:`core.attacks.membership`, :mod:`core.attacks.reconstruction`,
:mod:`core.attacks.gradient_inversion`, :mod:`core.attacks.fil_attacks`), scored by the
family's one scoring function.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.foundation.knowledge import AdversaryKnowledge, GroundTruth
from core.foundation.parts import ATTACKS, AttackPart, attack_by_config_name
from core.foundation.registry import load_object

#: the attack statistics every attribute attacker reports, metric suffix -> attack_scores key
STATS = {"acc": "accuracy", "bacc": "balanced_accuracy", "auc": "auc", "adv": "advantage",
         "ce_nats": "cross_entropy_nats"}


@dataclass
class AttackOutput:
    """An attack's output on the target rows: ``proba`` (n, k) for the ROC, AUC and advantage,
    ``calibrated`` (n, k) for the cross-entropy (None = proba), ``decision_weights`` (k,) for
    its decision argmax_c p_c·w_c (None = plain argmax)."""

    name: str
    proba: np.ndarray
    calibrated: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)
    decision_weights: np.ndarray | None = None


@dataclass
class AttackScores:
    """Scores of one attack: ``values`` (STATS names), ``intervals`` (name -> (lo, hi), 95 %),
    ``n`` rows scored."""

    name: str
    values: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    n: int


def finite_proba(P: np.ndarray) -> np.ndarray:
    """Rows with a NaN/inf (an adversary trained on a diverged representation) become uniform:
    they carry no information."""
    P = np.asarray(P, dtype=np.float64)
    bad = ~np.all(np.isfinite(P), axis=1)
    if not bad.any():
        return P
    out = P.copy()
    out[bad] = 1.0 / P.shape[1]
    return out


def attack_part(name: str, family: str | None = None) -> AttackPart:
    """The part of registry name ``name``, or of config name ``name`` in ``family``."""
    return ATTACKS.get(name) if family is None else attack_by_config_name(family, name)


def attack_params(part: AttackPart, spec: Any) -> dict[str, Any]:
    """The ``cfg.attack`` fields the attack declares (its settings block's and ``params``),
    read from ``spec``."""
    return {p: getattr(spec, p) for p in part.setting_names()}


def release_kinds(release: Any) -> tuple[str, ...]:
    """What a release object offers: its ``kinds`` when it offers several (a model and its
    encoder's representations), else its ``kind``."""
    kinds = getattr(release, "kinds", None)
    return tuple(kinds) if kinds else (release.kind,)


def run_attack(name: str, release, knowledge: AdversaryKnowledge, *, family: str | None = None,
               **params: Any) -> Any:
    """Run the registered attack ``name`` (a registry name; with ``family``, the name the
    family's config uses) on ``release``: ``function(release, knowledge, **options, **params)``.
    The release must be of a kind the attack accepts."""
    part = attack_part(name, family)
    kinds = release_kinds(release)
    if not set(kinds) & set(part.accepts):
        raise ValueError(f"attack: {name!r} accepts {', '.join(part.accepts)} releases; "
                         f"got a {' / '.join(kinds)} release")
    return load_object(part.function)(release, knowledge, **dict(part.options), **params)


def score_attack(out: AttackOutput, truth: GroundTruth, *, n_boot: int = 200, seed: int = 0) -> AttackScores:
    """Scores with 95 % intervals: accuracy and balanced accuracy of the attacker's decision,
    AUC and advantage from ``proba``, cross-entropy from ``calibrated``."""
    from core.foundation.metrics import attack_intervals, attack_scores, cross_entropy_nats

    y = np.asarray(truth.labels)
    s = attack_scores(y, out.proba, decision_weights=out.decision_weights)
    if out.calibrated is not None:
        s["cross_entropy_nats"] = cross_entropy_nats(y, out.calibrated)
    values = {suffix: float(s[key]) for suffix, key in STATS.items()}
    iv = attack_intervals(y, out.proba, n_boot=n_boot, seed=seed, decision_weights=out.decision_weights)
    intervals = {suffix: tuple(map(float, iv[key])) for suffix, key in STATS.items() if key in iv}
    return AttackScores(out.name, values, intervals, int(y.size))


def strongest(scores: dict[str, AttackScores], by: str = "auc") -> str | None:
    """The name of the attack with the highest ``by`` (NaN ignored; ties -> first listed)."""
    best, best_v = None, -np.inf
    for name, sc in scores.items():
        v = sc.values.get(by, np.nan)
        if np.isfinite(v) and v > best_v:
            best, best_v = name, v
    return best

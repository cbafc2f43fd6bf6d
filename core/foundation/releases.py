"""Releases: typed objects for what an adversary observes, and nothing more (DESIGN:
Architecture). A defense declares the release kind it produces; an attack declares the kinds
it accepts; :mod:`core.foundation.parts` checks the pair at config validation.

- :class:`RepresentationRelease` — representations r = f(x) of the rows the threat model
  exposes (TAPPFL's uploaded-encoder outputs, Inf2Guard's encoders) and, for white-box
  attacks, the encoder itself;
- :class:`ModelRelease` — a trained model: per-example losses and logits on the rows the
  attacker queries, and its parameters (membership, model inversion, FIL);
- :class:`UpdateRelease` — per-device uploads per round with the global model each started
  from (gradient inversion).

The ground truth an attack is scored against is never part of a release
(:class:`core.foundation.knowledge.GroundTruth`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

ReleaseKind = Literal["representation", "model", "update", "raw", "adversary_output"]
RELEASE_KINDS: tuple[str, ...] = ("representation", "model", "update", "raw", "adversary_output")
RELEASE_TITLES = {
    "representation": "representations r = f(x) and the encoder",
    "model": "a trained model (losses, logits, parameters)",
    "update": "per-device uploads per round with their global model",
    "raw": "the raw features x (the undefended reference)",
    "adversary_output": "the outputs of the adversary a game defense trained against (scored "
                        "beside the fresh attacks, not something the system publishes)",
}


def finite_representation(R: np.ndarray) -> tuple[np.ndarray, float]:
    """Replace non-finite entries (a diverged encoder, e.g. under heavy DP noise) by 0.

    A NaN/inf entry carries nothing a head or an attacker can use, so zeroing it measures what
    the released representation still holds; the returned fraction is reported with the run."""
    R = np.asarray(R)
    bad = ~np.isfinite(R)
    frac = float(bad.mean()) if R.size else 0.0
    return (np.where(bad, 0.0, R).astype(np.float32) if frac else R), frac


@dataclass(frozen=True)
class RepresentationRelease:
    """Representations of the exposed rows: ``targets`` (the rows whose attribute is attacked,
    the test split) and ``encoder`` (white-box access; ``None`` for black-box threat models).
    The attacker encodes its own auxiliary rows with the released encoder; those encodings
    live in :class:`core.foundation.knowledge.AdversaryKnowledge`, not here.

    ``nonfinite_frac``: the fraction of entries a diverged encoder produced as NaN/inf (zeroed);
    ``adversary_proba``: the defense's own adversary's class probabilities on the targets (the
    in-training attacker, trained inside the defense's game), when it has one.
    """

    kind: ClassVar[str] = "representation"
    targets: np.ndarray
    encoder: Any | None = None
    nonfinite_frac: float = 0.0
    adversary_proba: np.ndarray | None = None

    def __post_init__(self) -> None:
        if np.asarray(self.targets).ndim != 2:
            raise ValueError(f"targets: got shape {np.shape(self.targets)}; expected (n, d)")


@dataclass(frozen=True)
class RawRelease:
    """The raw features of the target rows: the undefended reference every defense starts
    from (the ``raw_*`` attackers), not something a defended system publishes."""

    kind: ClassVar[str] = "raw"
    targets: np.ndarray


@dataclass(frozen=True)
class ModelRelease:
    """A trained model as a membership / inversion / FIL attacker sees it: per-example
    ``losses`` and ``logits`` on the queried rows, and (white-box) its ``parameters``."""

    kind: ClassVar[str] = "model"
    losses: np.ndarray
    logits: np.ndarray | None = None
    parameters: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class UpdateRelease:
    """Per-device uploads per round with the global model each started from (gradient
    inversion): ``uploads[t][k]`` maps parameter names to arrays, ``global_models[t]`` the
    global parameters of round t, ``devices[t]`` the sampled device ids."""

    kind: ClassVar[str] = "update"
    uploads: list[list[dict[str, np.ndarray]]]
    global_models: list[dict[str, np.ndarray]]
    devices: list[np.ndarray]


Release = RepresentationRelease | RawRelease | ModelRelease | UpdateRelease

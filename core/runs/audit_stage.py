"""The one-run audit as a cached stage of the membership and gradient-leakage runners
(Steinke, Nasr & Jagielski 2023; :mod:`core.attacks.audit`): every defense of those families,
DP or not, gets an audited ε lower bound on one ε axis beside the accountant's claim.

The audit trains the defense's own procedure (:attr:`core.foundation.builds.DefenseBuild.train`)
once more on the target's training rows, with canaries: the released target stays free of
canaries, so no attack number moves when the audit is switched on, and the audited run is the
same algorithm the accountant speaks about. ``auto`` picks the white-box audit (gradient
canaries of norm C where a clipped example's gradient goes) except for a defense that noises
the inputs (the κ channel: its noise is in data space, the gradient canaries would bypass it),
which is audited black box (mislabelled canary records, scored by −loss of the released model).

The confidence of the config is joint over ``tests`` audits (a grid of G settings): each run is
audited at 1 − (1 − confidence)/G (:func:`core.bounds.audit.bonferroni`); inside one run the
guess counts tried are corrected again (:func:`core.attacks.audit.audit_scores`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from core.foundation.stages import StageOutput, Stages

__all__ = ["AuditOutcome", "audit_kind", "run_audit_stage"]


@dataclass
class AuditOutcome:
    """The audit's metrics (``audit_*``), info (kind, guesses tried) and notes for the Result."""

    metrics: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def audit_kind(spec: Any, build: Any) -> str:
    """The audit kind run for ``spec.kind`` (``auto``: black box for a data-space defense)."""
    if spec.kind != "auto":
        return str(spec.kind)
    return "black_box" if build.perturb is not None else "white_box"


def _compute(spec: Any, kind: str, build: Any, defense: Any, *,
             model_factory: Callable[[], torch.nn.Module], X: torch.Tensor, y: torch.Tensor,
             records: tuple[torch.Tensor, torch.Tensor], n_classes: int, seed: int) -> StageOutput:
    from core.attacks.audit import audit_one_run, black_box_canaries
    from core.bounds.audit import bonferroni
    from core.foundation.seeds import derive

    t0 = time.perf_counter()
    conf = bonferroni(spec.confidence, spec.tests)
    # a DP claim is (ε, δ): Theorem 3.1's δ term at the claim's δ; ε-only otherwise
    delta = float(getattr(defense, "delta", 0.0))
    canary_seed = derive(seed, "audit", "canaries", bits=31)
    if kind == "white_box":
        # a canary is audited as one example: DP-SGD bounds an example's gradient by S
        norm = float(getattr(defense, "clip_norm", 1.0))

        def train_white(canary) -> None:
            build.train(model_factory(), X, y, seed=seed, canary=canary)

        res = audit_one_run(train_white, kind=kind, canaries=spec.canaries, confidence=conf,
                            seed=canary_seed, delta=delta, direction=spec.direction, norm=norm)
    else:
        rec = black_box_canaries(records[0], records[1], spec.canaries, n_classes,
                                 seed=canary_seed)

        def train_black(X_in: torch.Tensor, y_in: torch.Tensor):
            trained = build.train(model_factory(), torch.cat([X, X_in]), torch.cat([y, y_in]),
                                  seed=seed)

            def loss(Xq: torch.Tensor, yq: torch.Tensor) -> np.ndarray:
                p = trained.predict(Xq).gather(1, yq.view(-1, 1)).squeeze(1)
                return (-torch.log(p.double().clamp_min(1e-300))).cpu().numpy()

            return loss

        res = audit_one_run(train_black, kind=kind, confidence=conf, seed=canary_seed,
                            delta=delta, records=rec)
    meta = {k: v for k, v in res.to_dict().items() if k != "guesses_tried"}
    if kind == "white_box":
        meta["canary_norm"] = norm
    meta.update(guesses_tried=[int(r) for r in res.guesses_tried],
                joint_confidence=float(spec.confidence), tests=int(spec.tests),
                seconds=time.perf_counter() - t0)
    return StageOutput(meta=meta)


def run_audit_stage(spec: Any, build: Any, defense: Any, stages: Stages, part: dict[str, Any],
                    *, model_factory: Callable[[], torch.nn.Module], X: torch.Tensor,
                    y: torch.Tensor, records: tuple[torch.Tensor, torch.Tensor],
                    n_classes: int, seed: int, claimed: float | None = None) -> AuditOutcome:
    """Audit ``build``'s procedure trained on (``X``, ``y``) (a stage keyed by ``part`` and the
    audit block); ``records`` are rows the training never sees (black-box canaries are drawn
    from them); ``claimed`` the accountant's ε, when the defense claims one. Returns nothing
    (empty outcome) when ``spec.kind`` is ``off``."""
    out = AuditOutcome()
    if not spec.enabled:
        return out
    kind = audit_kind(spec, build)
    if kind == "black_box" and len(records[0]) < spec.canaries:
        if len(records[0]) < 10:
            raise ValueError(f"audit.canaries: a black-box audit needs at least 10 rows outside "
                             f"the training pool; {len(records[0])} are left")
        # one audit block serves every defense of a comparison: the black-box audit takes
        # the canary records there are, and says so
        out.notes.append(f"audit: {len(records[0])} black-box canaries (the rows outside the "
                         f"training pool), not the {spec.canaries} asked for")
        spec = spec.model_copy(update={"canaries": len(records[0])})
    if kind == "white_box":
        n_params = sum(p.numel() for p in model_factory().parameters())
        if spec.canaries > n_params:
            raise ValueError(f"audit.canaries: got {spec.canaries}; at most the {n_params} "
                             "parameters of the model for a white-box audit")
    key = {**part, "audit": spec.model_dump(mode="json"), "audit_kind": kind}
    try:
        res, _ = stages.get("audit", key, lambda: _compute(
            spec, kind, build, defense, model_factory=model_factory, X=X, y=y,
            records=records, n_classes=n_classes, seed=seed))
    except ValueError as exc:
        if not str(exc).startswith("train_fn:"):
            raise
        # a procedure that takes no step (0 epochs) has nothing to audit
        out.notes.append("audit: the defense's training takes no step here (0 epochs): "
                         "nothing to audit")
        return out
    m = res.meta
    out.metrics.update(
        audit_epsilon_lower=float(m["epsilon_lower"]), audit_canaries=float(m["canaries"]),
        audit_correct=float(m["correct"]), audit_guesses=float(m["guesses"]),
        audit_max_provable=float(m["max_provable"]), audit_confidence=float(m["confidence"]),
        audit_seconds=float(m["seconds"]))
    if claimed is not None and not math.isnan(claimed):
        # a correct accountant is never exceeded (at the audit's confidence); ε = ∞ never is
        out.metrics["audit_exceeds_claim"] = float(m["epsilon_lower"] > claimed)
    out.info = {"kind": kind, "guesses_tried": list(m["guesses_tried"]),
                "joint_confidence": float(m["joint_confidence"]), "tests": int(m["tests"]),
                "delta": float(m["delta"]), "included": int(m["included"]),
                "claimed": claimed is not None}
    if "canary_norm" in m:
        out.info["canary_norm"] = float(m["canary_norm"])
    how = ("gradient canaries of norm C beside the clipped gradient" if kind == "white_box"
           else "mislabelled canary records scored by loss")
    out.notes.append(
        f"one-run audit ({kind.replace('_', '-')}, {how}): ε ≥ {m['epsilon_lower']:.2f} from "
        f"{m['correct']} of {m['guesses']} guesses correct over {m['canaries']} canaries, at "
        f"{m['confidence']:.4g} confidence ({m['joint_confidence']:.3g} joint over "
        f"{m['tests']} audit(s), Bonferroni); at most {m['max_provable']:.2f} provable")
    return out

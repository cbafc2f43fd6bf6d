"""Runner for ``kind: membership``: train the target under its defense, train K shadow /
reference models with the same procedure (defense included: the attacker knows the
algorithm, as LiRA assumes), score every pool row with each attack, one ROC report per attack.

The pool is 2·members train rows; the target trains on a seeded half (the members), the other
half are the non-members it is scored against, so members and non-members are balanced by
construction. Each shadow trains on a half of the same pool with every row in exactly half the
shadows (:func:`core.engine.shadow_training.shadow_splits`). The defense is a
:class:`core.foundation.builds.DefenseBuild`: its training procedure trains the target and every
shadow (plain training's batched form trains the shadows together over stacked weights). The
attacks are the registered parts of the membership family (:mod:`core.foundation.parts`), each called
through :func:`core.attacks.protocol.run_attack` on one :class:`core.attacks.membership.
MembershipRelease` (the target's outputs, the shadows' outputs and membership masks, the
population rows z from the aux split) and scored by :func:`core.attacks.membership.
membership_report`; the attacks that pool targets are also run with each of ``targets − 1``
shadow models as the target. An attack that needs ``shadow_encoders`` (representation LiRA on
Inf2Guard's r) gets a ``shadow_representations`` stage instead of ``shadows``: the K shadow
models trained the target's way once, their r of the pool and of the population records and
their outputs (which the model-level shadow attacks read). The registered signals the chosen
attacks declare (:data:`core.foundation.parts.SIGNALS`) are computed once per model inside the target and
shadow stages and reach the attacks as ``release.signals`` / ``release.shadow_signals``.

A model trained elsewhere (``cfg.target``, ``privlab audit``; :mod:`core.runs.trained_target`)
replaces the target's training by loading its weights: its members make the pool, every other
stage runs unchanged, and the Result says the target was trained elsewhere.

:func:`run_membership` is glue over the stage functions of :mod:`core.runs.membership_stages`.
"""

from __future__ import annotations

import time

import numpy as np

from core.config.schema import MembershipConfig
from core.foundation import caveats
from core.foundation.progress import Progress
from core.foundation.result import Result
from core.foundation.stages import Stages


def run_membership(cfg: MembershipConfig, progress: Progress, stages: Stages | None = None) -> Result:
    """The membership pipeline, composed of the stages of :mod:`core.runs.membership_stages`."""
    from core.engine.shadow_training import shadow_splits
    from core.runs import membership_stages as S

    stages = stages or Stages(None)
    t0 = time.perf_counter()
    ctx = S.context(cfg, progress)
    build = ctx.build
    notes: list[str] = list(build.notes)
    metrics: dict[str, float] = dict(build.metrics)
    artifacts: dict[str, np.ndarray] = dict(build.artifacts)

    tgt_out, target_key = S.target_stage(ctx, stages, progress)
    A = tgt_out.arrays
    metrics.update(S.utility_metrics(ctx, A))
    budget = build.report(tgt_out.meta, steps=int(tgt_out.meta.get("steps", 0)))
    metrics.update(budget.metrics)
    notes.extend(budget.notes)
    audit = None
    if cfg.audit.enabled or (ctx.trained is not None and ctx.trained.canaries is not None):
        audit = S.audit_stage(ctx, stages, progress, metrics.get("epsilon_accountant"))
        metrics.update(audit.metrics)
        notes.extend(audit.notes)

    in_mask = shadow_splits(len(ctx.pool), cfg.attack.shadows, seed=cfg.seed)
    shadows = S.shadow_stage(ctx, stages, A, in_mask, progress.sub(0.2, 0.85))
    progress.update(0.88, "scoring")
    release = S.release(ctx, A, shadows, in_mask)
    outputs, scores, labels = S.attack_scores(ctx, release, in_mask, notes)
    rep = S.reports(ctx, scores, labels)
    metrics.update(rep.metrics)
    artifacts.update(rep.artifacts)
    artifacts.update(S.record_arrays(ctx, scores, labels))
    notes.extend(rep.notes)
    intervals = rep.intervals
    S.inf2guard_bound(outputs, metrics, notes)
    artifacts.update(S.projection_stage(ctx, stages, A, target_key, progress))
    best = S.best_attack(ctx.parts, scores, metrics, intervals)
    metrics["seconds_total"] = time.perf_counter() - t0
    info = {"notes": notes, "best_attack": best, "stages": dict(stages.log),
            "accountant": budget.info.get("accountant"), "scored": rep.scored,
            "projection_release": "r" if "r_pool" in A else "log_probs"}
    if audit is not None and audit.info:
        info["audit"] = audit.info
    info.update(S.trained_elsewhere(ctx, notes))
    raised = rep.raised
    fallback = tgt_out.meta.get("accountant_note")
    if fallback:
        raised.append(caveats.raised("accountant_fallback", ["epsilon_accountant"],
                                     str(fallback)))
    info["caveats"] = caveats.collect(cfg.kind, metrics, info, cfg.model_dump(mode="json"),
                                      intervals=intervals, explicit=raised)
    return Result(kind=cfg.kind, config=cfg.model_dump(mode="json"), seed=cfg.seed,
                  metrics=metrics, intervals=intervals, artifacts=artifacts, info=info)

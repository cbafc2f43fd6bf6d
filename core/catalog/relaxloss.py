"""RelaxLoss (Chen, Yu & Fritz, ICLR 2022, "RelaxLoss: Defending Membership Inference Attacks
without Losing Utility") against membership inference: train to a loss level α, not to zero.

Algorithm 1 of the paper, per minibatch B of epoch t (1-based) with mean cross-entropy L(B):

- L(B) ≥ α: gradient descent on L (plain training);
- L(B) < α and t even: gradient ascent, as descent on |L(B) − α| (= α − L(B) here);
- L(B) < α and t odd: posterior flattening: each correctly classified row's target becomes the
  soft label that keeps the model's probability p_y of its class and spreads 1 − p_y evenly
  over the C − 1 others (a constant of the step); misclassified rows keep their one-hot label;
  descent on the cross-entropy to these targets.

Members' losses then sit near α instead of near 0, so they look like non-members' to a loss
(and a LiRA / RMIA) attacker, while the flattening keeps the arg-max, hence the accuracy.
α = 0 is plain training (every batch descends). The block, its knob (range read from the
block's constraints), its budget metric and the registration are the part's one declaration
(:mod:`core.catalog`); the loss hook and the builder are below (the engine owns the loop).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from annotated_types import Ge, Gt, Le
from pydantic import Field

from core.config.base import Block
from core.engine.hooks import Hook, StepState
from core.engine.recipe import Recipe
from core.foundation.parts import DEFENSES, DefensePart, Knob, PageSpec

if TYPE_CHECKING:  # the declaration is read without torch (the config schema, the pages)
    from torch import Tensor


class RelaxLossDefense(Block):
    """RelaxLoss (Chen et al. 2022, Algorithm 1): minibatch training that descends while the
    batch's mean cross-entropy is at least ``alpha`` and otherwise alternates, by epoch,
    gradient ascent and posterior flattening. ``parity``: which epochs ascend ("reference":
    the authors' code, epochs counted from 0, the first epoch ascends; "paper": Algorithm 1's
    1-based count, the first epoch flattens); ``upper`` caps the kept probability p_y of the
    flattened target as the reference code does (1 = no cap). The recipe is the train
    block's unless given here (the reference code trains with SGD, momentum 0.9, weight decay
    and a step schedule)."""

    kind: Literal["relaxloss"] = "relaxloss"
    alpha: Annotated[float, Ge(0.0), Le(3.0)] = Field(
        1.0, description="RelaxLoss target loss level α (nats of cross-entropy): 0 = plain "
        "training; above ln C (2.3 for 10 classes) the model is held near chance")
    parity: Literal["reference", "paper"] = Field(
        "reference", description="ascent epochs: 'reference' = even epochs counted from 0 "
        "(the first epoch ascends), 'paper' = even epochs counted from 1")
    upper: Annotated[float, Gt(0.0), Le(1.0)] = Field(
        1.0, description="cap on the kept probability p_y of a flattened target (1 = no cap)")
    optimizer: Literal["sgd", "adam"] | None = Field(
        None, description="RelaxLoss's optimiser; None = the train block's")
    momentum: Annotated[float, Ge(0.0), Le(0.99)] = Field(
        0.0, description="SGD momentum (the reference code: 0.9)")
    weight_decay: Annotated[float, Ge(0.0), Le(0.1)] = Field(
        0.0, description="L2 weight decay (the reference code: 5e-4)")
    schedule: Literal["step", "cosine"] | None = Field(
        None, description="learning-rate schedule over the epochs; None = constant")


#: the budget metric its runs report: α echoed (its spec is generated from the knob,
#: core.foundation.metric_schema.budget_specs)
ALPHA_METRIC = "relaxloss_alpha"


class RelaxLossHook(Hook):
    """RelaxLoss's objective as a loss hook (Algorithm 1), for one model or K together: a
    model whose batch loss L is at least α descends on L; below α it ascends on |L − α| in an
    ascent epoch and otherwise descends on the cross-entropy to flattened targets (each
    correctly classified row keeps p_y, capped at ``upper``, and spreads 1 − p_y evenly over
    the C − 1 other classes; misclassified rows keep their one-hot label). The branch is a
    device-side choice per model (no host read); steps taken below α are counted in
    ``meta["relaxed_steps"]``."""

    per_example = True

    def __init__(self, alpha: float, *, parity: str = "reference", upper: float = 1.0) -> None:
        self.alpha, self.parity, self.upper = float(alpha), parity, float(upper)

    def ascends(self, epoch: int) -> bool:
        """Whether 1-based ``epoch`` is an ascent epoch."""
        return (epoch - 1) % 2 == 0 if self.parity == "reference" else epoch % 2 == 0

    def _ce(self, logits: Tensor, target: Tensor, state: StepState) -> Tensor:
        import torch.nn.functional as F

        if not state.batched:
            return F.cross_entropy(logits, target)
        c = logits.shape[-1]
        flat_t = target.reshape(-1, c) if target.dim() == logits.dim() else target.reshape(-1)
        rows = F.cross_entropy(logits.reshape(-1, c), flat_t, reduction="none")
        return state.mean(rows.view(logits.shape[:-1]))

    def loss(self, logits: Tensor, y: Tensor, state: StepState) -> Tensor:
        import torch

        ce = self._ce(logits, y, state)
        below = ce.detach().double() < self.alpha
        if self.ascends(state.epoch):
            relaxed = (ce - self.alpha).abs()
            if state.meta.get("canaries"):
                state.meta["grad_sign"] = 1.0 - 2.0 * below.to(ce.dtype)
        else:
            relaxed = self._ce(logits, self._flattened(logits.detach(), y), state)
            state.meta.pop("grad_sign", None)
        state.reported = ce
        state.count("relaxed_steps", below.sum())
        return torch.where(below, relaxed, ce)

    def _flattened(self, logits: Tensor, y: Tensor) -> Tensor:
        import torch
        import torch.nn.functional as F

        c = logits.shape[-1]
        p = torch.softmax(logits, -1)
        p_y = p.gather(-1, y.unsqueeze(-1))
        if self.upper < 1.0:
            p_y = p_y.clamp(max=self.upper)
        soft = ((1.0 - p_y) / max(c - 1, 1)).expand(*p.shape).clone()
        soft.scatter_(-1, y.unsqueeze(-1), p_y)
        correct = (p.argmax(-1) == y).unsqueeze(-1)
        return torch.where(correct, soft, F.one_hot(y, c).to(p.dtype))


def relaxloss_recipe(block: RelaxLossDefense, train: Any) -> Recipe:
    """The recipe RelaxLoss trains with: the train block's epochs, batch size and learning
    rate, the block's optimiser settings where given."""
    return Recipe(epochs=int(train.epochs), batch_size=int(train.batch_size), lr=float(train.lr),
                  optimizer=block.optimizer or train.optimizer, momentum=float(block.momentum),
                  weight_decay=float(block.weight_decay), schedule=block.schedule)


def train_relaxloss(model: Any, X: Any, y: Any, *, hook: RelaxLossHook, recipe: Recipe,
                    image_shape: tuple[int, ...], seed: int, X_test: Any = None,
                    y_test: Any = None, progress: Any = None, canary: Any = None
                    ) -> dict[str, Any]:
    """Train ``model`` in place on (X, y) with RelaxLoss through the engine's loop
    (:func:`core.engine.builds.train_hooked`: plain training's order stream, so α = 0
    repeats plain training step for step; audit canaries subtracted on an ascent step, as a
    member's gradient is). Returns ``{"steps", "relaxed_steps", "curves"}``:
    ``curves["train_loss"]`` the batch-weighted mean cross-entropy per epoch,
    ``curves["test_acc"]`` with a test set."""
    from core.engine.builds import train_hooked

    res = train_hooked(model, X, y, hooks=[hook], recipe=recipe, image_shape=image_shape,
                       seed=seed, X_test=X_test, y_test=y_test, progress=progress,
                       canary=canary, label="RelaxLoss epoch")
    return {"steps": res.steps, "relaxed_steps": int(res.meta.get("relaxed_steps", 0)),
            "curves": res.curves}


def hook_of(block: RelaxLossDefense) -> RelaxLossHook:
    """The block's loss hook."""
    return RelaxLossHook(block.alpha, parity=block.parity, upper=block.upper)


def reference_differences(block: RelaxLossDefense, train: Any) -> list[str]:
    """How this run's RelaxLoss differs from the authors' reference code, one note each."""
    notes = []
    if block.parity == "paper":
        notes.append("RelaxLoss: ascent on even epochs counted from 1 (Algorithm 1 as printed); "
                     "the reference code ascends on the first epoch")
    opt = block.optimizer or train.optimizer
    if opt != "sgd" or block.momentum == 0 or block.weight_decay == 0 or block.schedule is None:
        notes.append(f"RelaxLoss: trained with {opt}, momentum {block.momentum:g}, weight decay "
                     f"{block.weight_decay:g}, schedule {block.schedule or 'none'}; the reference "
                     "code uses SGD with momentum 0.9, weight decay 5e-4 and a step schedule")
    notes.append("RelaxLoss: no data augmentation (the reference code crops and flips images)")
    return notes


def build_relaxloss(block: RelaxLossDefense, *, image_shape: tuple[int, ...], train: Any,
                    **_: Any) -> Any:
    """The membership family's builder (:mod:`core.defenses.central`'s signature): the target
    and every shadow model train with RelaxLoss at the block's α under the train block's
    recipe (the shadows batched); the report echoes α and says in a note what share of the
    target's steps were taken below it (none: α never bound, the target trained plainly)."""
    from core.engine.builds import build_hooked
    from core.foundation.builds import Report

    def report(meta, *, steps: int = 0, batch_size: int | None = None) -> Report:
        notes = []
        if steps > 0 and "relaxed_steps" in meta:
            share = float(meta["relaxed_steps"]) / steps
            notes.append(f"RelaxLoss: {share:.0%} of the target's {steps:,} steps were taken "
                         f"below α = {block.alpha:g} (gradient ascent or posterior flattening)"
                         + ("; α never bound: the target trained plainly" if share == 0 else ""))
        notes.extend(reference_differences(block, train))
        return Report({ALPHA_METRIC: float(block.alpha)}, notes=notes)

    # its hooks act per example: the K shadows train together (the engine's batched form)
    return build_hooked("relaxloss", lambda: [hook_of(block)],
                        recipe=relaxloss_recipe(block, train), image_shape=image_shape,
                        label="RelaxLoss epoch", settings=("central",), report=report)


DEFENSES.register("relaxloss", DefensePart(
    config=RelaxLossDefense, page=PageSpec(order=120),
    name="relaxloss", title="RelaxLoss (α)", families=("membership",), release="model",
    knob=Knob.of(RelaxLossDefense, "alpha", "α", "RelaxLoss target loss level (nats)", "linear",
                 "higher_is_more_private", budget_metric=ALPHA_METRIC,
                 grid=(0.25, 0.5, 1.0, 1.5, 2.0), teaching=(0.0, 1.0, 2.0)),
    accounting=None, builder="core.catalog.relaxloss:build_relaxloss",
    description="RelaxLoss (Chen, Yu & Fritz, ICLR 2022): train while the batch loss is above "
                "the target level α; below it, alternate gradient ascent and posterior "
                "flattening by epoch, so members' losses stay near α like non-members'. "
                "α = 0 is plain training; no formal guarantee: measured by attacks."))

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
(:mod:`core.catalog`); the builder and its training loop are below.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from pydantic import Field

from core.config_base import Block
from core.parts import DEFENSES, DefensePart, Knob


class RelaxLossDefense(Block):
    """RelaxLoss (Chen et al. 2022, Algorithm 1): minibatch training that descends while the
    batch's mean cross-entropy is at least ``alpha`` and otherwise alternates, by epoch,
    gradient ascent and posterior flattening; trained with the train block's optimiser,
    learning rate, batch size and epochs."""

    kind: Literal["relaxloss"] = "relaxloss"
    alpha: Annotated[float, Ge(0.0), Le(3.0)] = Field(
        1.0, description="RelaxLoss target loss level α (nats of cross-entropy): 0 = plain "
        "training; above ln C (2.3 for 10 classes) the model is held near chance")


#: the budget metric its runs report: α echoed (its spec is generated from the knob,
#: core.metric_schema.budget_specs)
ALPHA_METRIC = "relaxloss_alpha"


def relaxloss_step_loss(logits: Any, y: Any, alpha: float, epoch: int) -> tuple[Any, str]:
    """The objective of one RelaxLoss step (Algorithm 1) and its branch, ``"descent"``,
    ``"ascent"`` or ``"flatten"``; ``logits`` (n, C), ``y`` (n,) class ids, ``epoch`` 1-based."""
    import torch
    import torch.nn.functional as F

    ce = F.cross_entropy(logits, y)
    if float(ce.detach()) >= alpha:
        return ce, "descent"
    if epoch % 2 == 0:
        return (ce - alpha).abs(), "ascent"
    with torch.no_grad():
        c = logits.shape[1]
        p = torch.softmax(logits, -1)
        p_y = p.gather(1, y.view(-1, 1))
        soft = ((1.0 - p_y) / max(c - 1, 1)).expand(-1, c).clone()
        soft.scatter_(1, y.view(-1, 1), p_y)
        correct = (p.argmax(-1) == y).view(-1, 1)
        target = torch.where(correct, soft, F.one_hot(y, c).to(p.dtype))
    return F.cross_entropy(logits, target), "flatten"


def train_relaxloss(model: Any, X: Any, y: Any, *, alpha: float, image_shape: tuple[int, ...],
                    epochs: int, batch_size: int, lr: float, optimizer: str, seed: int,
                    X_test: Any = None, y_test: Any = None, progress: Any = None,
                    canary: Any = None) -> dict[str, Any]:
    """Train ``model`` in place on (X, y) with RelaxLoss (:func:`relaxloss_step_loss`).

    The rest is plain minibatch training's (:func:`core.defenses.central.build_plain`): rows
    shuffled each epoch by the local generator ``core.seeds.torch_stream(seed, "train",
    "order")``, SGD (no momentum) or Adam at ``lr``, so α = 0 repeats plain training step for
    step. ``canary``: audit canaries added where one row's gradient would go (term / B), with
    the step's sign (subtracted on an ascent step, as a member's gradient is). Returns
    ``{"steps", "relaxed_steps", "curves"}``: ``curves["train_loss"]`` the batch-weighted mean
    cross-entropy per epoch, ``curves["test_acc"]`` with a test set."""
    import torch

    from core.seeds import torch_stream

    shape = tuple(image_shape)
    dev = X.device
    order_gen = torch_stream(seed, "train", "order")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = (torch.optim.SGD(params, lr=lr, momentum=0.0) if optimizer == "sgd"
           else torch.optim.Adam(params, lr=lr))
    if canary is not None:
        canary.bind(params)
    n, b = len(X), int(batch_size)
    per_epoch = -(-n // b)
    every = max(1, per_epoch // 5)
    steps = relaxed = 0
    curves: dict[str, list[float]] = {"train_loss": []}
    for ep in range(1, int(epochs) + 1):
        model.train()
        order = torch.randperm(n, generator=order_gen).to(dev)
        total = 0.0
        for j, i in enumerate(range(0, n, b)):
            idx = order[i:i + b]
            logits = model(X[idx].reshape(len(idx), *shape))
            loss, branch = relaxloss_step_loss(logits, y[idx], alpha, ep)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if canary is not None:
                term = canary.step_term(min(1.0, b / n))
                if term is not None:
                    sign = -1.0 if branch == "ascent" else 1.0
                    with torch.no_grad():
                        for p, t in zip(params, term, strict=True):
                            g = sign * t.reshape(p.shape) / len(idx)
                            p.grad = g if p.grad is None else p.grad + g
            opt.step()
            with torch.no_grad():
                total += float(torch.nn.functional.cross_entropy(logits, y[idx])) * len(idx)
            steps += 1
            relaxed += branch != "descent"
            if progress is not None and (j + 1) % every == 0:
                progress.update((ep - 1 + (j + 1) / per_epoch) / epochs,
                                f"RelaxLoss epoch {ep}/{epochs}: step {j + 1}/{per_epoch}")
        curves["train_loss"].append(total / n)
        if X_test is not None:
            model.eval()
            with torch.no_grad():
                pred = model(X_test.reshape(len(X_test), *shape)).argmax(-1)
            curves.setdefault("test_acc", []).append(float((pred == y_test).float().mean()))
    model.eval()
    return {"steps": steps, "relaxed_steps": relaxed, "curves": curves}


def build_relaxloss(block: RelaxLossDefense, *, image_shape: tuple[int, ...], train: Any,
                    **_: Any) -> Any:
    """The membership family's builder (:mod:`core.defenses.central`'s signature): the target
    and every shadow model train with RelaxLoss at the block's α under the train block's
    recipe; the report echoes α and says in a note what share of the target's steps were
    taken below it (none: α never bound, the target trained plainly)."""
    from core.defenses.builds import DefenseBuild, Report, Trained
    from core.defenses.central import softmax_predict

    def train_fn(model, X, y, *, seed: int, X_test=None, y_test=None, progress=None,
                 canary=None) -> Trained:
        res = train_relaxloss(model, X, y, alpha=float(block.alpha), image_shape=image_shape,
                              epochs=train.epochs, batch_size=train.batch_size, lr=train.lr,
                              optimizer=train.optimizer, seed=seed, X_test=X_test,
                              y_test=y_test, progress=progress, canary=canary)
        return Trained(softmax_predict(model), model, steps=res["steps"], curves=res["curves"],
                       meta={"relaxed_steps": res["relaxed_steps"]})

    def report(meta, *, steps: int = 0, batch_size: int | None = None) -> Report:
        notes = []
        if steps > 0 and "relaxed_steps" in meta:
            share = float(meta["relaxed_steps"]) / steps
            notes.append(f"RelaxLoss: {share:.0%} of the target's {steps:,} steps were taken "
                         f"below α = {block.alpha:g} (gradient ascent or posterior flattening)"
                         + ("; α never bound: the target trained plainly" if share == 0 else ""))
        return Report({ALPHA_METRIC: float(block.alpha)}, notes=notes)

    return DefenseBuild("relaxloss", train=train_fn, settings=("central",), report=report)


DEFENSES.register("relaxloss", DefensePart(
    config=RelaxLossDefense, order=120,
    name="relaxloss", title="RelaxLoss (α)", families=("membership",), release="model",
    knob=Knob.of(RelaxLossDefense, "alpha", "α", "RelaxLoss target loss level (nats)", "linear",
                 "higher_is_more_private", budget_metric=ALPHA_METRIC,
                 grid=(0.25, 0.5, 1.0, 1.5, 2.0), teaching=(0.0, 1.0, 2.0)),
    accounting=None, builder="core.catalog.relaxloss:build_relaxloss",
    description="RelaxLoss (Chen, Yu & Fritz, ICLR 2022): train while the batch loss is above "
                "the target level α; below it, alternate gradient ascent and posterior "
                "flattening by epoch, so members' losses stay near α like non-members'. "
                "α = 0 is plain training; no formal guarantee: measured by attacks."))

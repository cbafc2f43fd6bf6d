"""Adversarial regularisation (Nasr, Shokri & Houmansadr, CCS 2018, "Machine Learning with
Membership Privacy using Adversarial Regularization") against membership inference.

The classifier f and an inference network h play the min-max game

    min_f max_h  L_D(f) + λ · G(h),   G(h) = E_D log h(x, y, f(x)) + E_D' log(1 − h(x', y', f(x')))

over the training set D (members) and a reference set D' of non-members. Algorithm 1, per
classifier step: k steps of h ascending its gain G on a member minibatch and a reference
minibatch, then one step of f descending  CE(f(x), y) + λ · mean log h(x, y, f(x))  on the
loop's own minibatch of members (h's gain on them). h reads the prediction vector f(x) and the
one-hot label y, as the paper's inference model does (one MLP on their concatenation here, in
place of a branch per input joined by a layer); it queries f as f is released (evaluation
mode), so its steps leave f's training untouched: λ = 0 is plain training step for step, with
h trained beside it. The released model is f; the in-game h is scored as the defense's own
adversary beside the fresh attacks. The block, its knob and the registration are the part's
one declaration (:mod:`core.catalog`); its game is an engine :class:`~core.engine.hooks.Game`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le
from pydantic import Field

from core.config.base import Block
from core.engine.hooks import Game, StepState
from core.foundation.parts import DEFENSES, DefensePart, Knob


class AdversarialRegularizationDefense(Block):
    """Adversarial regularisation (Nasr et al. 2018, Algorithm 1): the classifier's loss plus
    λ times an inference network's gain on the members, h trained ``adversary_steps`` times
    per classifier step against the run's reference non-members."""

    kind: Literal["adversarial_regularization"] = "adversarial_regularization"
    tradeoff_lambda: Annotated[float, Ge(0.0), Le(3.0)] = Field(
        1.0, description="λ: weight of the inference network's gain in the classifier's loss "
        "(0 = plain training; the paper trains with λ up to 3)")
    adversary_steps: Annotated[int, Ge(1), Le(10)] = Field(
        1, description="k: inference-network steps per classifier step (Algorithm 1)")
    adversary_lr: Annotated[float, Gt(0.0), Le(0.1)] = Field(
        1e-3, description="the inference network's Adam learning rate")


#: the budget metric its runs report: λ echoed (its spec is generated from the knob)
LAMBDA_METRIC = "advreg_lambda"


def inference_network(n_classes: int, hidden: int = 64) -> Any:
    """h: one logit of Pr(member) from the concatenated f(x) and one-hot y (2C inputs)."""
    from torch import nn

    return nn.Sequential(nn.Linear(2 * n_classes, hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden // 2), nn.ReLU(), nn.Linear(hidden // 2, 1))


class AdversarialGame(Game):
    """Algorithm 1 as an engine :class:`~core.engine.hooks.Game`: ``adversary_steps`` = k, and
    each of h's k turns before a classifier step (:meth:`adversary_turn`, taken by the
    engine's loop) one ascent step on a member and a reference minibatch drawn from
    ``generator``; ``loss`` the classifier's CE + λ·gain; curves ``inference_gain`` (G on h's
    last batch) and ``inference_acc`` (its accuracy there, members and reference rows equally
    many)."""

    def __init__(self, h: Any, model: Any, members: tuple[Any, Any], reference: tuple[Any, Any],
                 *, lam: float, steps: int, recipe: Any, generator: Any,
                 image_shape: tuple[int, ...]) -> None:
        super().__init__([h], recipe, curves=("inference_gain", "inference_acc"),
                         adversary_steps=steps)
        self.h, self.model, self.members, self.reference = h, model, members, reference
        self.lam, self.generator, self.shape = float(lam), generator, image_shape

    def logit(self, probs: Any, y: Any) -> Any:
        """h's member logit of prediction vectors ``probs`` (n, C) with labels ``y`` (n,)."""
        import torch
        import torch.nn.functional as F

        one_hot = F.one_hot(y, probs.shape[-1]).to(probs.dtype)
        return self.h(torch.cat([probs, one_hot], -1)).squeeze(-1)

    def released_probs(self, X: Any) -> Any:
        """f's prediction vectors as released (evaluation mode, no gradient into f)."""
        import torch

        was = self.model.training
        self.model.eval()
        with torch.no_grad():
            p = torch.softmax(self.model(X.reshape(len(X), *self.shape)), -1)
        self.model.train(was)
        return p

    def _draw(self, rows: tuple[Any, Any], b: int) -> tuple[Any, Any]:
        import torch

        X, y = rows
        idx = torch.randperm(len(X), generator=self.generator)[:b].to(X.device)
        return X[idx], y[idx]

    def adversary_turn(self, state: StepState, a: int) -> None:
        import torch.nn.functional as F

        b = state.batch_size
        (xm, ym), (xr, yr) = self._draw(self.members, b), self._draw(self.reference, b)
        z_in, z_out = self.logit(self.released_probs(xm), ym), self.logit(
            self.released_probs(xr), yr)
        gain = F.logsigmoid(z_in).mean() + F.logsigmoid(-z_out).mean()
        self.adversary_step(-gain)
        if a == self.adversary_steps - 1:  # h's last batch of this classifier step
            hits = (z_in > 0).float().mean() + (z_out <= 0).float().mean()
            self.record(inference_gain=float(gain.detach()), inference_acc=float(hits) / 2)

    def loss(self, logits: Any, y: Any, state: StepState) -> Any:
        import torch
        import torch.nn.functional as F

        if self.lam == 0.0:
            return None  # the engine's cross-entropy: plain training
        ce = F.cross_entropy(logits, y)
        state.reported = ce
        return ce + self.lam * F.logsigmoid(self.logit(torch.softmax(logits, -1), y)).mean()


def build_adversarial_regularization(block: AdversarialRegularizationDefense, *,
                                     image_shape: tuple[int, ...], n_classes: int, train: Any,
                                     reference: Any, reference_labels: Any,
                                     **_: Any) -> Any:
    """The membership family's builder: the target and every shadow train with the game at
    the block's λ under the train block's recipe (:func:`core.engine.noisy_training.train_central`
    with the game's hooks) against the run's reference non-members; the trained h is the
    defense's own adversary (Pr(member | f(x), y))."""
    import torch

    from core.engine.noisy_training import train_central
    from core.engine.recipe import Recipe
    from core.foundation.builds import DefenseBuild, Report, Trained, softmax_predict
    from core.foundation.seeds import torch_stream
    from core.models.nn import seeded

    def train_fn(model, X, y, *, seed: int, X_test=None, y_test=None, progress=None,
                 canary=None) -> Trained:
        h = seeded(inference_network(n_classes), torch_stream(seed, "advreg", "init")).to(X.device)
        game = AdversarialGame(
            h, model, (X, y), (reference.reshape(len(reference), -1), reference_labels),
            lam=block.tradeoff_lambda, steps=block.adversary_steps,
            recipe=Recipe(epochs=train.epochs, batch_size=train.batch_size, lr=block.adversary_lr),
            generator=torch_stream(seed, "advreg", "batches"), image_shape=tuple(image_shape))
        res = train_central(model, X, y, image_shape=image_shape, epochs=train.epochs,
                            batch_size=train.batch_size, lr=train.lr, optimizer=train.optimizer,
                            seed=seed, X_test=X_test, y_test=y_test, progress=progress,
                            canary=canary, hooks=[game])
        h.eval()

        def adversary(Xq, yq):
            with torch.no_grad():
                return torch.sigmoid(game.logit(game.released_probs(Xq), yq))

        return Trained(softmax_predict(model), model, adversary=adversary, steps=res.steps,
                       curves={**res.curves, **game.curves})

    def report(meta, *, steps: int = 0, batch_size: int | None = None) -> Report:
        return Report({LAMBDA_METRIC: float(block.tradeoff_lambda)})

    return DefenseBuild("adversarial_regularization", train=train_fn, settings=("central",),
                        report=report)


DEFENSES.register("adversarial_regularization", DefensePart(
    config=AdversarialRegularizationDefense, order=125,
    name="adversarial_regularization", title="Adversarial regularisation (λ)",
    families=("membership",), release="model",
    extra_releases=(("membership", "adversary_output"),),
    knob=Knob.of(AdversarialRegularizationDefense, "tradeoff_lambda", "λ",
                 "adversarial regularisation weight", "linear", "higher_is_more_private",
                 budget_metric=LAMBDA_METRIC, grid=(0.5, 1.0, 2.0, 3.0),
                 teaching=(0.0, 1.0, 3.0)),
    accounting=None,
    builder="core.catalog.adversarial_regularization:build_adversarial_regularization",
    short_title="Adversarial regularisation",
    description="Adversarial regularisation (Nasr, Shokri & Houmansadr, CCS 2018): the "
                "classifier trains against an inference network that learns to tell its "
                "members from reference non-members by f(x) and y, minimising CE + λ · the "
                "network's gain on the members. λ = 0 is plain training; no formal "
                "guarantee: measured by attacks (the in-game network among them)."))

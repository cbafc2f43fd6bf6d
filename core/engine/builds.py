"""A defense that is the engine's loop with hooks, as a :class:`core.foundation.builds.
DefenseBuild`: its one-model training (:func:`train_hooked`) and, where every hook acts per
example, its K shadow models trained together (:func:`stacked_shadows`, the batched form).
RelaxLoss and label smoothing build through it; a new defense of this kind is its block with a
``hooks()`` method and :func:`build_from_hooks` as its builder (``docs/engine.md``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from core.foundation.builds import DefenseBuild, Trained, softmax_predict


class BatchedShadows:
    """K models trained together over stacked weights (:class:`core.engine.shadow_training.
    ShadowModels`) as the membership runner queries them: called as ``(X, y)`` it gives the
    true-class probabilities (K, n); :meth:`probs` the class probabilities (K, n, C);
    :meth:`predictor` one model's query interface (what a registered signal is computed on)."""

    def __init__(self, shadows: Any) -> None:
        self.shadows = shadows

    def __call__(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        from core.engine.shadow_training import per_example_true_prob

        return per_example_true_prob(self.shadows, X, y)

    def probs(self, X: torch.Tensor) -> torch.Tensor:
        """Softmax probabilities (K, n, C) of every model on the flat rows X (n, d)."""
        return torch.softmax(self.shadows.outputs(X), -1)

    def predictor(self, k: int) -> Callable[[torch.Tensor], torch.Tensor]:
        """Model k's class probabilities on X (n, d) -> (n, C): a copy of its weights in the
        template module, so a signal costs one model's forward passes, not K."""
        return softmax_predict(self.shadows.model(k).to(next(iter(
            self.shadows.params.values())).device))


def stacked_shadows(model_factory: Callable[[], torch.nn.Module], X: torch.Tensor,
                    y: torch.Tensor, in_mask: np.ndarray, *, seed: int,
                    image_shape: tuple[int, ...], recipe: Any, hooks: Sequence[Any] = ()
                    ) -> BatchedShadows:
    """K shadow models trained together (:func:`core.engine.batched.fit_batched`) under
    ``recipe`` with the per-example ``hooks``: an MLP over stacked weights, a network with
    convolutions (and BatchNorm) as grouped convolutions, each on the flat rows every
    core.models network takes."""
    from core.engine.shadow_training import train_shadows, train_stacked
    from core.models.common import has_conv

    kw = {"recipe": recipe, "hooks": hooks, "seed": seed}
    if has_conv(model_factory()):
        return BatchedShadows(train_stacked(model_factory, X, y, in_mask, **kw))
    return BatchedShadows(train_shadows(model_factory, X, y, in_mask, image_shape=image_shape,
                                        **kw))


def plain_recipe(train: Any) -> Any:
    """The train block's recipe: its epochs, batch size, learning rate and optimiser."""
    from core.engine.recipe import Recipe

    return Recipe(epochs=int(train.epochs), batch_size=int(train.batch_size),
                  lr=float(train.lr), optimizer=train.optimizer)


def train_hooked(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, *,
                 hooks: Sequence[Any], recipe: Any, image_shape: tuple[int, ...], seed: int,
                 X_test: torch.Tensor | None = None, y_test: torch.Tensor | None = None,
                 progress: Any = None, canary: Any = None, label: str = "epoch") -> Trained:
    """One model trained in place by the engine's loop with a defense's ``hooks`` under
    ``recipe``: rows shuffled each epoch by ``torch_stream(seed, "train", "order")`` (plain
    training's stream, so hooks that change nothing repeat it step for step); ``canary``:
    audit canaries where one row's gradient would go. Its curves: ``train_loss`` (what the
    hooks report, else the objective), ``test_acc`` with a test set; its meta: the hooks'
    counters."""
    from core.engine.hooks import CanaryHook
    from core.engine.loop import Supervised, fit
    from core.engine.noisy_training import evaluate_accuracy
    from core.foundation.seeds import torch_stream

    shape = tuple(image_shape)
    hs = [*hooks, *([CanaryHook(canary)] if canary is not None else [])]
    evaluate = (None if X_test is None else
                lambda: {"test_acc": evaluate_accuracy(model, X_test, y_test, shape)})
    log = fit(model, Supervised(X, y, shape), recipe=recipe,
              order=torch_stream(seed, "train", "order"), hooks=hs, progress=progress,
              label=label, evaluate=evaluate)
    return Trained(softmax_predict(model), model, steps=log.steps,
                   curves={"train_loss": log.train_loss, **log.curves}, meta=dict(log.meta))


def build_hooked(name: str, hooks: Callable[[], Sequence[Any]], *, recipe: Any,
                 image_shape: tuple[int, ...], label: str = "epoch", **fields: Any
                 ) -> DefenseBuild:
    """The build of a defense that is the engine's loop with the hooks ``hooks()`` returns (a
    fresh list per training) under ``recipe``: ``train`` one model (:func:`train_hooked`) and,
    when every hook acts per example, ``train_many``: the K shadows trained together
    (:func:`stacked_shadows`); otherwise they train one by one. ``fields``: the build's other
    fields (report, settings, metrics, notes)."""

    def train_fn(model, X, y, *, seed: int, X_test=None, y_test=None, progress=None,
                 canary=None) -> Trained:
        return train_hooked(model, X, y, hooks=hooks(), recipe=recipe, image_shape=image_shape,
                            seed=seed, X_test=X_test, y_test=y_test, progress=progress,
                            canary=canary, label=label)

    def train_many(model_factory, X, y, in_mask, *, seed: int) -> BatchedShadows:
        return stacked_shadows(model_factory, X, y, in_mask, seed=seed, image_shape=image_shape,
                               recipe=recipe, hooks=hooks())

    batched = all(h.per_example for h in hooks())
    return DefenseBuild(name, train=train_fn, train_many=train_many if batched else None,
                        **fields)


def build_from_hooks(block: Any, *, image_shape: tuple[int, ...], train: Any,
                     **_: Any) -> DefenseBuild:
    """The builder of a defense whose block declares ``hooks()`` (its engine hooks, a fresh
    list per call) and nothing else: :func:`build_hooked` under the train block's recipe,
    the run echoing the knob's value under its budget metric. A new defense of this kind is
    its one catalog file (label smoothing)."""
    from core.foundation.parts import DEFENSES

    knob = DEFENSES.get(block.kind).knob
    metrics = ({} if knob is None or knob.budget_metric is None else
               {knob.budget_metric: float(getattr(block, knob.field))})
    return build_hooked(block.kind, block.hooks, recipe=plain_recipe(train),
                        image_shape=image_shape, settings=("central",), metrics=metrics)

"""The training engine: every model privlab trains goes through it.

- :mod:`core.engine.loop`: :func:`~core.engine.loop.fit`, the one minibatch loop (seeded
  order, optimiser and schedule, device and precision, progress and cancel, curves, early
  stopping, canaries through hooks);
- :mod:`core.engine.batched`: the batched form, K models of one architecture trained together
  over stacked parameters with the same hooks;
- :mod:`core.engine.steps`: the batched form's step driver (K models' steps given ahead, a
  hook's whole step, cancel and progress), which a FedAvg round's devices run through too;
- :mod:`core.engine.order`: which rows each step of ``fit`` takes (a seeded shuffle, Poisson
  sampling, or the steps of a plan);
- :mod:`core.engine.recipe`: :class:`~core.engine.recipe.Recipe`, the optimiser (SGD with
  momentum, Adam, weight decay) and its step or cosine schedule;
- :mod:`core.engine.hooks`: what a defense contributes instead of a loop (a loss term, a
  gradient step, prepare / input / epoch hooks, extra networks of a game);
- :mod:`core.engine.options`: channels-last, bf16 autocast and ``torch.compile``, honoured by
  the loop once for every model.

This package's ``__init__`` stays light (no torch): the options are re-exported here, the loop
is imported from its module.
"""

from core.engine.options import (
    AUTOCAST,
    DEFAULT,
    EngineOptions,
    autocast_for,
    current,
    engine_options,
    prepare_model,
)

__all__ = ["AUTOCAST", "DEFAULT", "EngineOptions", "autocast_for", "current", "engine_options",
           "prepare_model"]

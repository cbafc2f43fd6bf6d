"""The engine's batched form (core/engine/batched.py ``fit_batched``): K models trained together
equal the same K trained one by one through ``fit`` (same seeds, same batches) under every
recipe the engine offers and with a per-example loss hook, in float64 where only a logic error
could leave a difference; hooks that need one model's whole step are refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.catalog.relaxloss import RelaxLossHook
from core.engine.batched import fit_batched
from core.engine.hooks import CanaryHook
from core.engine.recipe import Recipe
from core.engine.shadow_training import shadow_splits, train_shadows, train_stacked
from core.models import build_model
from core.models.nn import ImageMLP


def _data(n: int, classes: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, 64, generator=g, dtype=torch.float64),
            torch.randint(0, classes, (n,), generator=g))


def _unequal_mask(n: int) -> np.ndarray:
    """3 models of 9, 23 and all n rows: idle models at the end of every epoch."""
    rng = np.random.default_rng(3)
    mask = np.zeros((3, n), bool)
    for k, size in enumerate([9, 23, n]):
        mask[k, rng.choice(n, size, replace=False)] = True
    return mask


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max((float((a[n] - b[n]).abs().max()) for n in a), default=0.0)


RECIPES = [
    Recipe(epochs=4, batch_size=8, lr=0.05, optimizer="sgd", momentum=0.9, weight_decay=5e-3,
           schedule="step", step_size=2, gamma=0.5),
    Recipe(epochs=3, batch_size=8, lr=1e-2, optimizer="adam", weight_decay=1e-3),
    Recipe(epochs=3, batch_size=8, lr=0.05, optimizer="sgd", weight_decay=1e-2),
]


@pytest.mark.parametrize("recipe", RECIPES, ids=["sgd_momentum_step", "adam_wd", "sgd_wd"])
@pytest.mark.parametrize("hooked", [False, True], ids=["plain", "relaxloss"])
def test_mlp_together_equals_one_by_one(recipe, hooked):
    X, y = _data(60)
    mask = _unequal_mask(60)
    factory = lambda: ImageMLP((1, 8, 8), 3, hidden=16).double()
    # α = 0.9: every branch taken (descent, ascent, flattening) over the epochs
    hooks = [RelaxLossHook(0.9, parity="paper")] if hooked else []
    kw = {"image_shape": (1, 8, 8), "recipe": recipe, "hooks": hooks, "seed": 1}
    a = train_shadows(factory, X, y, mask, batched=True, **kw)
    b = train_shadows(factory, X, y, mask, batched=False, **kw)
    assert _max_diff(a.params, b.params) < 1e-10
    untrained = train_shadows(factory, X, y, mask, batched=True,
                              **{**kw, "recipe": Recipe(epochs=1, batch_size=8, lr=1e-9)})
    assert _max_diff(a.params, untrained.params) > 1e-3  # it trained


@pytest.mark.parametrize("arch,layout", [("lenet5", "grouped"), ("lenet5", "vmap"),
                                         ("resnet10", "auto")])
def test_conv_and_batchnorm_with_a_loss_hook_together_equal_one_by_one(arch, layout):
    # BatchNorm runs the models in groups of equal batch size: the hook sees each group
    X, y = _data(50, seed=8)
    mask = shadow_splits(50, 3, seed=4)
    factory = lambda: build_model(arch, (1, 8, 8), 3, 0.0625).double()
    kw = {"recipe": Recipe(epochs=2, batch_size=10, lr=1e-2, optimizer="sgd", momentum=0.9),
          "hooks": [RelaxLossHook(1.0)], "seed": 2}
    a = train_stacked(factory, X, y, mask, batched=True, layout=layout, **kw)
    b = train_stacked(factory, X, y, mask, batched=False, **kw)
    assert _max_diff(a.params, b.params) < 1e-10
    assert _max_diff(a.buffers, b.buffers) < 1e-10


def test_hooks_of_one_models_step_are_refused_in_one_line():
    X, y = _data(20)
    models = [ImageMLP((1, 8, 8), 3, hidden=4) for _ in range(2)]
    with pytest.raises(ValueError) as e:
        fit_batched(models, X.float(), y, np.ones((2, 20), bool),
                    recipe=Recipe(epochs=1, batch_size=8, lr=0.1),
                    orders=[torch.Generator() for _ in models], shape=(1, 8, 8),
                    hooks=[CanaryHook(None)])
    assert "\n" not in str(e.value) and str(e.value).startswith("hooks: CanaryHook")

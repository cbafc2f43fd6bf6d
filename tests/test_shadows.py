"""Shadow models (core.engine.shadow_training): batched training equals the looped reference, splits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.engine.shadow_training import (
    ShadowModels,
    per_example_loss,
    per_example_true_prob,
    shadow_splits,
    train_shadows,
)
from core.models.nn import ImageMLP

SHAPE = (1, 4, 4)


def _data(n: int = 60, classes: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.rand(n, 16, generator=g), torch.randint(0, classes, (n,), generator=g)


def _unequal_mask(n: int = 60) -> np.ndarray:
    """4 models of 9, 23, 37 and 60 rows (different step counts per epoch with batch 8)."""
    rng = np.random.default_rng(3)
    mask = np.zeros((4, n), bool)
    for k, size in enumerate([9, 23, 37, 60]):
        mask[k, rng.choice(n, size, replace=False)] = True
    return mask


def _train(opt: str, batched: bool, seed: int = 1) -> ShadowModels:
    X, y = _data()
    lr = 0.2 if opt == "sgd" else 0.01
    return train_shadows(lambda: ImageMLP(SHAPE, 3, hidden=8), X, y, _unequal_mask(),
                         image_shape=SHAPE, epochs=3, batch_size=8, lr=lr, optimizer=opt,
                         seed=seed, batched=batched)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_batched_equals_looped(opt: str) -> None:
    torch.set_num_threads(1)
    a, b = _train(opt, True), _train(opt, False)
    X, _ = _data()
    again = _train(opt, True, seed=1).params  # same seed: identical
    assert set(a.params) == set(b.params)
    for n in a.params:
        assert a.params[n].shape[0] == 4
        torch.testing.assert_close(a.params[n], b.params[n], atol=1e-5, rtol=0)
        torch.testing.assert_close(a.params[n], again[n], atol=0, rtol=0)
    torch.testing.assert_close(a.outputs(X), b.outputs(X), atol=1e-5, rtol=0)
    # the models differ from each other (own init, own rows, own order)
    w = a.params["fc1.weight"]
    assert float((w[0] - w[1]).abs().max()) > 1e-3
    # model(k) is a plain module with model k's weights
    torch.testing.assert_close(a.model(2)(X), a.outputs(X)[2], atol=1e-6, rtol=0)


def test_other_seed_differs() -> None:
    a, b = _train("sgd", True, seed=1), _train("sgd", True, seed=2)
    assert float((a.params["fc2.weight"] - b.params["fc2.weight"]).abs().max()) > 1e-3


def test_outputs_and_per_example_shapes() -> None:
    s = _train("sgd", True)
    X, y = _data()
    assert s.outputs(X[:7]).shape == (4, 7, 3)
    assert s.outputs(X, chunk=5).shape == (4, 60, 3)
    torch.testing.assert_close(s.outputs(X, chunk=5), s.outputs(X))
    p, loss = per_example_true_prob(s, X, y), per_example_loss(s, X, y)
    assert p.shape == loss.shape == (4, 60)
    assert bool(((p > 0) & (p <= 1)).all())
    torch.testing.assert_close(loss, -p.log(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("K", [2, 8, 16])
def test_splits_paired_for_even_k(K: int) -> None:
    m = shadow_splits(101, K, seed=5)
    assert m.dtype == bool and m.shape == (K, 101)
    assert (m.sum(0) == K // 2).all()
    np.testing.assert_array_equal(m, shadow_splits(101, K, seed=5))
    assert not np.array_equal(m, shadow_splits(101, K, seed=6))


def test_splits_odd_k_and_fraction() -> None:
    m = shadow_splits(2000, 5, seed=0)
    assert set(np.unique(m.sum(0))) <= {2, 3}
    assert abs(m.sum(0).mean() - 2.5) < 0.1
    q = shadow_splits(500, 8, seed=0, fraction=0.25)
    assert (q.sum(0) == 2).all()


@pytest.mark.parametrize("kw, field", [
    ({"K": 0}, "K"), ({"K": 1025}, "K"), ({"fraction": 0.0}, "fraction"),
    ({"fraction": 1.0}, "fraction"), ({"fraction": -0.1}, "fraction"),
])
def test_split_errors(kw: dict, field: str) -> None:
    args = {"pool_size": 10, "K": 4, "seed": 0, **kw}
    with pytest.raises(ValueError, match=rf"^{field}: got .*allowed range") as e:
        shadow_splits(args.pop("pool_size"), args.pop("K"), **args)
    assert "\n" not in str(e.value)


def test_train_errors() -> None:
    X, y = _data()
    f = lambda: ImageMLP(SHAPE, 3, hidden=8)
    kw = {"image_shape": SHAPE, "epochs": 1, "batch_size": 8, "lr": 0.1}
    mask = _unequal_mask()
    with pytest.raises(ValueError, match=r"^in_mask rows of model 1: got 0; allowed range 1 <= value \(integer\)$"):
        bad = mask.copy()
        bad[1] = False
        train_shadows(f, X, y, bad, **kw)
    with pytest.raises(ValueError, match="^in_mask: got"):
        train_shadows(f, X, y, mask[:, :10], **kw)
    with pytest.raises(ValueError, match="^optimizer: got 'rmsprop'"):
        train_shadows(f, X, y, mask, optimizer="rmsprop", **kw)
    with pytest.raises(ValueError, match="^K: got 0"):
        train_shadows(f, X, y, mask[:0], **kw)

"""K models of any architecture trained together (stacked state, vmap) against the same K
trained one by one with ``train_central`` (same seeds, same batches): equal up to float
rounding, BatchNorm statistics per model included."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.engine.shadow_training import shadow_splits, train_stacked
from core.models import build_model


@pytest.fixture
def float64():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def _data(n: int, side: int, classes: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, side * side, generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    return X, y


def _compare(factory, X, y, mask, **kw):
    together = train_stacked(factory, X, y, mask, batched=True, **kw)
    alone = train_stacked(factory, X, y, mask, batched=False, **kw)
    for n in together.params:
        assert torch.allclose(together.params[n], alone.params[n], atol=2e-5, rtol=1e-4), n
    for n in together.buffers:
        a, b = together.buffers[n], alone.buffers[n]
        assert (torch.equal(a, b) if not a.is_floating_point()
                else torch.allclose(a, b, atol=2e-5, rtol=1e-4)), n
    pa, pb = together.predict(X), alone.predict(X)
    assert pa.shape == (mask.shape[0], len(X), pa.shape[-1])
    assert torch.allclose(pa, pb, atol=1e-4)
    return together


@pytest.mark.parametrize("optimizer,lr", [("sgd", 0.05), ("adam", 1e-3)])
def test_lenet5_together_equals_one_by_one(optimizer, lr):
    # no BatchNorm: padded batches; training sets of unequal size (last batches differ)
    X, y = _data(60, 8, 3)
    mask = shadow_splits(60, 4, seed=1)
    assert len(set(mask.sum(1).tolist())) > 1
    out = _compare(lambda: build_model("lenet5", (1, 8, 8), 3, 0.5), X, y, mask, epochs=2,
                   batch_size=8, lr=lr, optimizer=optimizer, seed=3)
    # the K models differ from each other (own seeds, own rows)
    assert not torch.allclose(out.params["features.0.weight"][0],
                              out.params["features.0.weight"][1])


@pytest.mark.parametrize("optimizer,lr", [("sgd", 0.05), ("adam", 1e-3)])
def test_batchnorm_resnet_together_equals_one_by_one(optimizer, lr, float64):
    # BatchNorm: models grouped by batch size at the steps where sizes differ, running
    # statistics per model. In float64: BatchNorm over batches of 10 amplifies float32 rounding
    # (summation order differs with the thread count) to 1e-2 in two epochs, which would hide
    # the equality this test is about
    X, y = _data(50, 8, 3, seed=2)
    mask = shadow_splits(50, 3, seed=4)
    sizes = mask.sum(1)
    assert len({int(s) % 10 for s in sizes}) > 1 and (sizes % 10 != 1).all()
    out = _compare(lambda: build_model("resnet10", (1, 8, 8), 3, 0.0625), X, y, mask, epochs=2,
                   batch_size=10, lr=lr, optimizer=optimizer, seed=5)
    rm = next(n for n in out.buffers if n.endswith("running_mean"))
    assert not torch.allclose(out.buffers[rm][0], out.buffers[rm][1])
    nb = next(n for n in out.buffers if n.endswith("num_batches_tracked"))
    steps = [2 * -(-int(s) // 10) for s in sizes]
    assert out.buffers[nb].tolist() == steps


def test_model_k_and_stacked_outputs_agree():
    X, y = _data(40, 8, 3, seed=6)
    mask = shadow_splits(40, 2, seed=7)
    out = train_stacked(lambda: build_model("resnet10", (1, 8, 8), 3, 0.0625), X, y, mask,
                        epochs=1, batch_size=10, lr=0.05, seed=0)
    m1 = out.model(1).eval()
    with torch.no_grad():
        assert torch.allclose(out.outputs(X)[1], m1(X), atol=1e-5)


def test_dropout_and_bad_input_are_one_line_errors():
    X, y = _data(20, 8, 2)
    mask = np.ones((2, 20), dtype=bool)
    with pytest.raises(ValueError, match=r"^model_factory: module has dropout") as e:
        train_stacked(lambda: build_model("tappfl_cifar", (1, 8, 8), 2, 0.0625), X, y, mask,
                      epochs=1, batch_size=10, lr=0.1)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=r"^in_mask: got"):
        train_stacked(lambda: build_model("lenet5", (1, 8, 8), 2), X, y, mask[:, :5],
                      epochs=1, batch_size=10, lr=0.1)
    with pytest.raises(ValueError, match=r"^epochs: got 0"):
        train_stacked(lambda: build_model("lenet5", (1, 8, 8), 2), X, y, mask,
                      epochs=0, batch_size=10, lr=0.1)


@pytest.mark.parametrize("arch", ["lenet5", "resnet10"])
def test_float64_together_equals_one_by_one_exactly(arch):
    # in float64 the rounding of grouped against separate convolutions vanishes: any
    # difference left would be a logic error (batches, padding, grouping, Adam's step counts)
    X, y = _data(50, 8, 3, seed=8)
    X = X.double()
    mask = shadow_splits(50, 3, seed=4)
    kw = {"epochs": 2, "batch_size": 10, "lr": 1e-3, "optimizer": "adam", "seed": 2}
    factory = lambda: build_model(arch, (1, 8, 8), 3, 0.0625).double()
    a = train_stacked(factory, X, y, mask, batched=True, **kw)
    b = train_stacked(factory, X, y, mask, batched=False, **kw)
    assert max(float((a.params[n] - b.params[n]).abs().max()) for n in a.params) < 1e-10
    assert max((float((a.buffers[n] - b.buffers[n]).abs().max()) for n in a.buffers),
               default=0.0) < 1e-10

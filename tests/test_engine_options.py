"""Engine options (core.engine) and the sync-free training loops: the loop that sums its loss
on the device gives the same bits as the loop that read each loss back to the host; the
options are off by default, and on they still train (bf16 autocast, channels-last)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.engine import EngineOptions, current, engine_options
from core.engine.noisy_training import as_images, make_optimizer, train_central
from core.foundation.seeds import torch_stream
from core.models import build_model

SHAPE = (1, 8, 8)


def _data(n: int = 70):
    g = torch.Generator().manual_seed(3)
    return torch.rand(n, 64, generator=g), torch.randint(0, 10, (n,), generator=g)


def _model(arch: str = "lenet5", width: float = 0.25):
    return build_model(arch, SHAPE, 10, width, seed=0)


def _host_sync_reference(model, X, y, *, epochs, batch_size, lr, optimizer, seed):
    """The loop as it was: ``float(loss)`` read back after every step."""
    order_gen = torch_stream(seed, "train", "order")
    opt = make_optimizer(model, optimizer, lr, 0.0)
    n, b, losses = len(X), batch_size, []
    for _ in range(epochs):
        model.train()
        order = torch.randperm(n, generator=order_gen)
        total = 0.0
        for i in range(0, n, b):
            idx = order[i:i + b]
            loss = F.cross_entropy(model(as_images(X[idx], SHAPE)), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        losses.append(total / n)
    return losses


@pytest.mark.parametrize("arch,optimizer", [("lenet5", "adam"), ("mlp", "sgd")])
def test_the_sync_free_loop_equals_the_host_sync_loop_bit_for_bit(arch, optimizer) -> None:
    X, y = _data()
    a, b = _model(arch, 1.0 if arch == "mlp" else 0.25), _model(arch, 1.0 if arch == "mlp" else 0.25)
    ref = _host_sync_reference(a, X, y, epochs=3, batch_size=16, lr=1e-2, optimizer=optimizer,
                               seed=5)
    got = train_central(b, X, y, image_shape=SHAPE, epochs=3, batch_size=16, lr=1e-2,
                        optimizer=optimizer, seed=5)
    assert got.curves["train_loss"] == ref  # exact floats
    for (n, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(p, q), n


def test_options_are_off_by_default_and_scoped_to_the_block() -> None:
    assert current() == EngineOptions()
    with engine_options(autocast="bf16", channels_last=True) as o:
        assert current() is o and o.autocast == "bf16"
    assert current() == EngineOptions()
    with pytest.raises(ValueError, match="autocast"):
        EngineOptions(autocast="fp8")


def test_bf16_autocast_and_channels_last_still_train() -> None:
    X, y = _data()
    base = train_central(_model(), X, y, image_shape=SHAPE, epochs=2, batch_size=16, lr=1e-2,
                         optimizer="adam", seed=1).curves["train_loss"]
    with engine_options(channels_last=True):
        cl = train_central(_model(), X, y, image_shape=SHAPE, epochs=2, batch_size=16, lr=1e-2,
                           optimizer="adam", seed=1).curves["train_loss"]
    np.testing.assert_allclose(cl, base, rtol=1e-4)  # the same arithmetic, another layout
    with engine_options(autocast="bf16"):
        bf = train_central(_model(), X, y, image_shape=SHAPE, epochs=2, batch_size=16, lr=1e-2,
                           optimizer="adam", seed=1).curves["train_loss"]
    assert np.all(np.isfinite(bf)) and bf != base  # bf16 rounds: close, not equal
    np.testing.assert_allclose(bf, base, rtol=0.05)


def test_stacked_conv_shadows_train_under_bf16_autocast() -> None:
    from core.engine.shadow_training import shadow_splits, train_stacked

    X, y = _data(80)
    mask = shadow_splits(80, 2, seed=0)
    with engine_options(autocast="bf16"):
        out = train_stacked(lambda: build_model("lenet5", SHAPE, 10, 0.25), X, y, mask,
                            image_shape=SHAPE, epochs=1, batch_size=16, lr=1e-3,
                            optimizer="adam", seed=0)
    assert all(torch.isfinite(v).all() for v in out.params.values())


def test_adam_train_sums_its_loss_on_the_device_with_the_same_bits() -> None:
    """core.engine.training.adam_train's per-epoch loss equals the host-side float sum it replaced."""
    from core.engine.training import adam_train

    X, y = _data()
    net = _model("mlp", 1.0)
    seen: list[list[float]] = [[]]

    def loss_fn(idx):
        loss = F.cross_entropy(net(X[idx]), y[idx])
        seen[-1].append(float(loss.detach()) * len(idx))
        return loss

    def on_epoch(ep, log):
        seen.append([])

    log = adam_train(net, loss_fn, len(X), epochs=3, batch_size=16, lr=1e-2,
                     generator=torch.Generator().manual_seed(0), on_epoch=on_epoch)
    expected = []
    for parts in seen[:3]:
        total = 0.0
        for v in parts:
            total += v
        expected.append(total / len(X))
    assert log.train_loss == expected

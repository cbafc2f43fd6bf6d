"""The gradient-leakage victim's uploads under DP-SGD come from the one DP-SGD
(core.defenses.dpsgd.train_dpsgd): clipped per-sample gradients, summed, noised, / b."""

from __future__ import annotations

import types

import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from core.config.schema import GradientLeakageConfig
from core.runs.gradient_stages import victim_uploads

SHAPE = (1, 8, 8)
NO_TRANSFORM = types.SimpleNamespace(perturb=None, noise_mode="redraw")


def _setup(T: int, b: int, observation: str, local_steps: int = 2):
    cfg = GradientLeakageConfig.model_validate({
        "kind": "gradient_leakage", "data": {"name": "digits"},
        "defense": {"kind": "dp_sgd", "noise_multiplier": 1.0},
        "attack": {"targets": T, "batch_size": b, "observation": observation,
                   "local_steps": local_steps, "local_lr": 0.5}})
    g = torch.Generator().manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 6), torch.nn.Sigmoid(),
                                torch.nn.Linear(6, 10))
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    x = torch.rand(T, b, *SHAPE, generator=g)
    y = torch.randint(0, 10, (T, b), generator=g)
    return cfg, model, params, x, y


def _clipped_mean(model, W: dict, xb, yb, S: float) -> dict:
    """DP-SGD's noise-free step direction by hand: per-sample gradients clipped to S (Opacus'
    factor S / (‖g‖ + 1e-6), at most 1), averaged over the b rows."""
    def one(p, xi, yi):
        return F.cross_entropy(functional_call(model, p, (xi[None],)), yi[None])

    g = vmap(grad(one), in_dims=(None, 0, 0))(W, xb, yb)
    norms = torch.sqrt(sum(v.flatten(1).pow(2).sum(1) for v in g.values()))
    c = (S / (norms + 1e-6)).clamp(max=1.0)
    return {n: (v * c.view(-1, *[1] * (v.dim() - 1))).sum(0) / len(xb) for n, v in g.items()}


def test_a_noise_free_gradient_upload_is_the_clipped_mean_gradient():
    cfg, model, params, x, y = _setup(T=3, b=4, observation="gradient")
    S = 0.05  # binds: every per-sample gradient is longer
    up, _ = victim_uploads(cfg, model, params, x, y, NO_TRANSFORM, dp=(0.0, S))
    for t in range(3):
        want = _clipped_mean(model, params, x[t], y[t], S)
        for n in params:
            assert torch.allclose(up[n][t], want[n], rtol=1e-5, atol=1e-7), n


def test_a_noise_free_fedavg_upload_is_local_clipped_sgd_steps():
    cfg, model, params, x, y = _setup(T=2, b=3, observation="fedavg", local_steps=2)
    S = 0.05
    up, _ = victim_uploads(cfg, model, params, x, y, NO_TRANSFORM, dp=(0.0, S))
    for t in range(2):
        W = dict(params)
        for _ in range(2):
            g = _clipped_mean(model, W, x[t], y[t], S)
            W = {n: W[n] - 0.5 * g[n] for n in W}
        for n in params:
            assert torch.allclose(up[n][t], W[n] - params[n], rtol=1e-5, atol=1e-7), n


def test_each_device_draws_its_own_noise_of_std_z_s_over_b():
    cfg, model, params, x, y = _setup(T=4, b=2, observation="gradient")
    x[:] = x[0]  # four devices holding the same batch
    y[:] = y[0]
    z, S = 2.0, 0.5
    clean, _ = victim_uploads(cfg, model, params, x, y, NO_TRANSFORM, dp=(0.0, S))
    noisy, _ = victim_uploads(cfg, model, params, x, y, NO_TRANSFORM, dp=(z, S))
    noise = torch.cat([(noisy[n] - clean[n]).flatten(1) for n in params], 1)  # (T, params)
    assert not torch.equal(noise[0], noise[1])
    assert noise.std().item() == pytest.approx(z * S / 2, rel=0.1)  # 4 × 460 draws
    again, _ = victim_uploads(cfg, model, params, x, y, NO_TRANSFORM, dp=(z, S))
    assert all(torch.equal(again[n], noisy[n]) for n in params)  # seeded

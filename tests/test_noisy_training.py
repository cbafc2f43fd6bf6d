"""Noisy-data training (channel defense, spec 001 §2.6/§3.6), DP-SGD via Opacus (§4.1, §5.6),
the FedAvg image objective and the upload observer — on tiny 8×8 digits subsets."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from core.bounds import accountants
from core.bounds.accountants import (
    RDP_ORDERS,
    dpsgd_accounting,
    dpsgd_epsilon,
    dpsgd_noise_multiplier,
)
from core.defenses.dpsgd import train_dpsgd
from core.engine.noisy_training import evaluate_accuracy, train_central
from core.fl import FedAvgState, run_fedavg
from core.fl.image_objective import NoisyImageObjective
from core.models.nn import seeded

SHAPE = (1, 8, 8)


@pytest.fixture(scope="module")
def digits() -> dict[str, torch.Tensor]:
    from sklearn.datasets import load_digits

    d = load_digits()
    X = torch.tensor(d.data, dtype=torch.float32) / 16.0
    y = torch.tensor(d.target, dtype=torch.long)
    return {"X": X[:600], "y": y[:600], "X_test": X[1400:1700], "y_test": y[1400:1700]}


def gaussian(std: float):
    """A simple isotropic perturb: x + N(0, std²) per pixel."""
    return lambda x, gen: x + std * torch.randn(x.shape, generator=gen, device=x.device)


def conv_net() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))


class Spy(nn.Module):
    """A linear classifier that records every training batch it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(64, 10)
        self.seen: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            self.seen.append(x.detach().reshape(len(x), -1).clone())
        return self.fc(x.reshape(len(x), -1))


def _epoch_rows(spy: Spy, steps_per_epoch: int) -> list[torch.Tensor]:
    """Each epoch's rows as a sorted fingerprint (order-free multiset comparison)."""
    proj = torch.linspace(1.0, 2.0, 64)
    out = []
    for e in range(len(spy.seen) // steps_per_epoch):
        rows = torch.cat(spy.seen[e * steps_per_epoch:(e + 1) * steps_per_epoch])
        out.append(torch.sort(rows @ proj).values)
    return out


# ---------------------------------------------------------------------------------------------
# central noisy training


@pytest.mark.parametrize("mode", ["fixed", "redraw"])
def test_fixed_reuses_one_noisy_copy_and_redraw_draws_fresh(digits, mode):
    X, y = digits["X"][:200], digits["y"][:200]
    X0 = X.clone()
    calls: list[int] = []

    def perturb(x, gen):
        calls.append(len(x))
        return gaussian(0.5)(x, gen)

    spy = seeded(Spy(), 0)
    res = train_central(spy, X, y, image_shape=SHAPE, epochs=3, batch_size=50, lr=0.1,
                        perturb=perturb, noise_mode=mode, seed=1)
    e1, e2, e3 = _epoch_rows(spy, 4)
    clean = torch.sort(X @ torch.linspace(1.0, 2.0, 64)).values
    assert torch.equal(X, X0)  # the caller's data is never modified
    assert not torch.allclose(e1, clean, atol=1e-3)  # noise was applied
    assert res.steps == 12 and res.noise_mode == mode
    if mode == "fixed":  # one draw of D̃ before training, the same rows every epoch
        assert calls == [200] and res.perturbed_rows == 200
        assert torch.allclose(e1, e2) and torch.allclose(e1, e3)
    else:  # fresh noise on every minibatch
        assert calls == [50] * 12 and res.perturbed_rows == 600
        assert not torch.allclose(e1, e2, atol=1e-3) and not torch.allclose(e2, e3, atol=1e-3)


def test_clean_training_beats_chance_and_is_reproducible(digits):
    kw = {"image_shape": SHAPE, "epochs": 4, "batch_size": 32, "lr": 0.1, "momentum": 0.9,
          "seed": 3, "X_test": digits["X_test"], "y_test": digits["y_test"]}
    runs = [train_central(seeded(conv_net, 0), digits["X"], digits["y"], **kw) for _ in range(2)]
    assert runs[0].curves["test_acc"] == runs[1].curves["test_acc"]
    assert runs[0].final_test_acc > 0.6  # chance is 0.1
    assert len(runs[0].curves["train_loss"]) == 4 and runs[0].steps == 4 * 19
    assert runs[0].curves["train_loss"][-1] < runs[0].curves["train_loss"][0]
    noisy = train_central(seeded(conv_net, 0), digits["X"], digits["y"], perturb=gaussian(0.3),
                          **kw)
    assert noisy.curves["test_acc"] != runs[0].curves["test_acc"]
    assert noisy.perturbed_rows == 4 * 600


def test_adam_and_evaluate_accuracy(digits):
    m = seeded(conv_net, 0)
    res = train_central(m, digits["X"], digits["y"], image_shape=SHAPE, epochs=2, batch_size=64,
                        lr=1e-2, optimizer="adam", seed=0, X_test=digits["X_test"],
                        y_test=digits["y_test"])
    m.train()
    acc = evaluate_accuracy(m, digits["X_test"], digits["y_test"], SHAPE, batch=7)
    assert acc == pytest.approx(res.final_test_acc) and m.training  # mode restored


# ---------------------------------------------------------------------------------------------
# DP-SGD accounting


def _opacus_eps(kind: str, sigma: float, q: float, steps: int, delta: float) -> float:
    from opacus.accountants import PRVAccountant, RDPAccountant

    acc = PRVAccountant() if kind == "prv" else RDPAccountant()
    acc.history = [(sigma, q, steps)]
    if kind == "prv":
        return acc.get_epsilon(delta=delta)
    return acc.get_epsilon(delta=delta, alphas=RDP_ORDERS)


@pytest.mark.parametrize("kind", ["rdp", "prv"])
def test_dpsgd_epsilon_equals_opacus_accountant(digits, kind):
    m = seeded(conv_net, 0)
    res = train_dpsgd(m, digits["X"], digits["y"], image_shape=SHAPE, epochs=1, batch_size=60,
                      lr=0.5, max_grad_norm=1.0, delta=1e-5, noise_multiplier=1.1,
                      accountant=kind, seed=0, X_test=digits["X_test"], y_test=digits["y_test"])
    assert res.steps == 10 and res.sample_rate == pytest.approx(0.1)
    assert res.accountant == kind and res.fallback_reason == ""
    assert res.epsilon == pytest.approx(_opacus_eps(kind, 1.1, 0.1, 10, 1e-5), rel=1e-9)
    assert res.capacity_bound == pytest.approx(60 / 1.1**2)  # C_DP ≤ B/z² (spec §4.1)
    assert math.isfinite(res.final_test_acc)
    # Opacus' hooks and per-sample attributes are gone: the model is a plain module again
    assert not any(hasattr(p, "grad_sample") for p in m.parameters())
    assert not any(mod._forward_hooks or mod._backward_hooks for mod in m.modules())
    if kind == "rdp":  # an interior optimal order: the same as Opacus' default grid
        from opacus.accountants import RDPAccountant

        acc = RDPAccountant()
        acc.history = [(1.1, 0.1, 10)]
        assert res.epsilon == pytest.approx(acc.get_epsilon(delta=1e-5), rel=1e-9)


def test_dpsgd_is_reproducible(digits):
    kw = {"image_shape": SHAPE, "epochs": 1, "batch_size": 100, "lr": 0.5, "max_grad_norm": 1.0,
          "delta": 1e-5, "noise_multiplier": 1.0, "accountant": "rdp", "seed": 4}
    ms = [seeded(conv_net, 0) for _ in range(2)]
    for m in ms:
        train_dpsgd(m, digits["X"], digits["y"], **kw)
    for p, q in zip(*(m.parameters() for m in ms)):
        assert torch.equal(p, q)


@pytest.mark.filterwarnings("ignore:Optimal order is the")
def test_prv_falls_back_to_rdp_and_says_why(monkeypatch):
    # a very large ε: PRV's grid would be huge, so RDP is used (no memory blow-up)
    out = dpsgd_accounting(0.3, 0.5, 10_000, 1e-5, "prv")
    assert out["accountant"] == "rdp" and "grid" in out["fallback_reason"]
    assert out["epsilon"] == pytest.approx(_opacus_eps("rdp", 0.3, 0.5, 10_000, 1e-5))
    # PRV raising or returning a non-finite value
    from opacus.accountants import PRVAccountant

    for bad in (lambda self, delta, **kw: float("inf"),
                lambda self, delta, **kw: (_ for _ in ()).throw(RuntimeError("boom"))):
        monkeypatch.setattr(PRVAccountant, "get_epsilon", bad)
        eps, used = dpsgd_epsilon(1.0, 0.01, 100, 1e-5, "prv")
        assert used == "rdp" and eps == pytest.approx(_opacus_eps("rdp", 1.0, 0.01, 100, 1e-5))
    out = dpsgd_accounting(1.0, 0.01, 100, 1e-5, "prv")
    assert "boom" in out["fallback_reason"]


def test_train_dpsgd_records_the_fallback(digits, monkeypatch):
    monkeypatch.setattr(accountants, "PRV_MAX_POINTS", 10)
    res = train_dpsgd(seeded(conv_net, 0), digits["X"][:100], digits["y"][:100], image_shape=SHAPE,
                      epochs=1, batch_size=50, lr=0.1, max_grad_norm=1.0, delta=1e-5,
                      noise_multiplier=1.0, seed=0)
    assert res.accountant == "rdp" and "PRV grid" in res.fallback_reason
    assert res.epsilon == pytest.approx(_opacus_eps("rdp", 1.0, 0.5, 2, 1e-5))


@pytest.mark.parametrize("kind", ["rdp", "prv"])
def test_target_epsilon_is_met(digits, kind):
    res = train_dpsgd(seeded(conv_net, 0), digits["X"][:100], digits["y"][:100], image_shape=SHAPE,
                      epochs=2, batch_size=20, lr=0.1, max_grad_norm=1.0, delta=1e-5,
                      target_epsilon=2.0, accountant=kind, seed=0)
    assert res.steps == 10 and res.accountant == kind
    assert 2.0 - 0.02 <= res.epsilon <= 2.0  # met, to Opacus' search tolerance 0.01
    assert dpsgd_epsilon(res.noise_multiplier, 0.2, 10, 1e-5, kind) == (res.epsilon, kind)
    if kind == "prv":  # the tighter accountant needs less noise for the same target
        assert res.noise_multiplier < dpsgd_noise_multiplier(2.0, 0.2, 10, 1e-5, "rdp")


def test_dpsgd_survives_empty_poisson_batches():
    g = torch.Generator().manual_seed(0)
    X, y = torch.rand(10, 64, generator=g), torch.randint(0, 10, (10,), generator=g)
    m = seeded(conv_net, 0)
    res = train_dpsgd(m, X, y, image_shape=SHAPE, epochs=2, batch_size=1, lr=0.1,
                      max_grad_norm=1.0, delta=1e-3, noise_multiplier=1.0, accountant="rdp", seed=0)
    assert res.steps == 20  # P(empty batch) = 0.9^10 ≈ 0.35 per step: some were empty
    assert all(torch.isfinite(p).all() for p in m.parameters())
    # the ghost-clipping path sets an empty batch's clipped sum to zero by hand: same check
    m = seeded(conv_net, 0)
    res = train_dpsgd(m, X, y, image_shape=SHAPE, epochs=2, batch_size=1, lr=0.1,
                      max_grad_norm=1.0, delta=1e-3, noise_multiplier=0.0, accountant="rdp",
                      seed=0)
    assert res.steps == 20 and all(torch.isfinite(p).all() for p in m.parameters())


def test_ghost_clipping_equals_materialised_per_sample_gradients(digits):
    """Opacus' ghost clipping (norms from ‖δᵢ‖·‖aᵢ‖, a second backward of Σ cᵢℓᵢ) trains the
    same model as materialised per-example gradients, to float rounding (same seeds: the same
    Poisson batches and noise)."""
    kw = {"image_shape": SHAPE, "epochs": 2, "sample_rate": 0.25, "lr": 0.5,
          "max_grad_norm": 0.5, "delta": 1e-5, "noise_multiplier": 1.0, "seed": 3}
    ms = {mode: seeded(conv_net, 0) for mode in ("ghost", "hooks")}
    for mode, m in ms.items():
        res = train_dpsgd(m, digits["X"][:200], digits["y"][:200], grad_sample_mode=mode, **kw)
        assert res.steps == 8 and res.sample_rate == pytest.approx(0.25)
    for p, q in zip(ms["ghost"].parameters(), ms["hooks"].parameters()):
        assert torch.allclose(p, q, atol=1e-5), (p - q).abs().max()


def test_noise_multiplier_zero_is_clipping_without_noise(digits):
    X, y = digits["X"][:100], digits["y"][:100]
    res = train_dpsgd(seeded(conv_net, 0), X, y, image_shape=SHAPE, epochs=1, sample_rate=1.0,
                      lr=0.1, max_grad_norm=1.0, delta=1e-5, noise_multiplier=0.0, seed=0)
    assert res.epsilon == math.inf and res.accountant == "none"
    assert res.noise_multiplier == 0.0 and res.capacity_bound == math.inf
    # deterministic: no noise draw, so a second run with another noise seed is identical
    m1, m2 = seeded(conv_net, 0), seeded(conv_net, 0)
    for m, seed in ((m1, 0), (m2, 1)):
        train_dpsgd(m, X, y, image_shape=SHAPE, epochs=1, sample_rate=1.0, lr=0.1,
                    max_grad_norm=1.0, delta=1e-5, noise_multiplier=0.0, seed=seed)
    assert all(torch.equal(p, q) for p, q in zip(m1.parameters(), m2.parameters()))


def test_canary_enters_the_summed_clipped_gradient_before_the_noise(digits):
    """One full-batch step at z = 0: the update is −lr·(Σ clipped gradients + canary)/n."""
    X, y = digits["X"][:50], digits["y"][:50]

    class Canary:
        def bind(self, params):
            self.term = [torch.full_like(p, 0.01) for p in params]

        def step_term(self, sample_rate):
            assert sample_rate == 1.0
            return self.term

    base, with_c = seeded(conv_net, 0), seeded(conv_net, 0)
    before = [p.detach().clone() for p in base.parameters()]
    kw = {"image_shape": SHAPE, "epochs": 1, "sample_rate": 1.0, "lr": 2.0,
          "max_grad_norm": 1.0, "delta": 1e-5, "noise_multiplier": 0.0, "seed": 0}
    train_dpsgd(base, X, y, **kw)
    train_dpsgd(with_c, X, y, canary=Canary(), **kw)
    for p0, p, q in zip(before, base.parameters(), with_c.parameters()):
        assert torch.allclose(q - p, torch.full_like(p, -2.0 * 0.01 / 50), atol=1e-6)
        assert not torch.equal(p, p0)


def test_sample_rate_sets_the_poisson_rate():
    from core.defenses.dpsgd import batch_size_for

    assert batch_size_for(500, 1.0) == 500 and batch_size_for(500, 0.25) == 125
    assert batch_size_for(300, 0.3) == 100  # rounded to 1/k: k = 3 steps per epoch
    with pytest.raises(ValueError, match="^sample_rate"):
        batch_size_for(10, 0.0)


# ---------------------------------------------------------------------------------------------
# argument checks: one line naming the field


def _one_line(exc: pytest.ExceptionInfo, field: str) -> None:
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(field), msg


@pytest.mark.parametrize(("field", "kw"), [
    ("epochs", {"epochs": 0}), ("epochs", {"epochs": 1.5}), ("batch_size", {"batch_size": 0}), ("lr", {"lr": 0.0}),
    ("optimizer", {"optimizer": "rmsprop"}), ("momentum", {"momentum": 1.5}),
    ("noise_mode", {"noise_mode": "sometimes"}), ("image_shape", {"image_shape": (1, 4, 4)}),
    ("X_test/y_test", {"X_test": torch.zeros(3, 64)}), ("perturb", {"perturb": lambda x, g: x[:1]}),
])
def test_train_central_rejects_bad_arguments(digits, field, kw):
    args = {"image_shape": SHAPE, "epochs": 1, "batch_size": 10, "lr": 0.1, "seed": 0} | kw
    with pytest.raises(ValueError) as exc:
        train_central(Spy(), digits["X"][:20], digits["y"][:20], **args)
    _one_line(exc, field)


@pytest.mark.parametrize(("field", "kw"), [
    ("noise_multiplier", {}),
    ("batch_size/sample_rate", {"sample_rate": 0.5, "noise_multiplier": 1.0}),
    ("grad_sample_mode", {"grad_sample_mode": "functorch", "noise_multiplier": 1.0}),
    ("noise_multiplier", {"noise_multiplier": 1.0, "target_epsilon": 1.0}),
    ("noise_multiplier", {"noise_multiplier": -1.0}), ("target_epsilon", {"target_epsilon": 0.0}),
    ("delta", {"delta": 1.0, "noise_multiplier": 1.0}),
    ("max_grad_norm", {"max_grad_norm": 0.0, "noise_multiplier": 1.0}),
    ("accountant", {"accountant": "gdp", "noise_multiplier": 1.0}),
    ("y", {"y": torch.zeros(20), "noise_multiplier": 1.0}),
])
def test_train_dpsgd_rejects_bad_arguments(digits, field, kw):
    args = {"image_shape": SHAPE, "epochs": 1, "batch_size": 10, "lr": 0.1, "max_grad_norm": 1.0,
            "delta": 1e-5, "seed": 0} | kw
    y = args.pop("y", digits["y"][:20])
    with pytest.raises(ValueError) as exc:
        train_dpsgd(Spy(), digits["X"][:20], y, **args)
    _one_line(exc, field)


def test_dpsgd_rejects_batchnorm(digits):
    m = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(144, 10))
    with pytest.raises(ValueError) as exc:
        train_dpsgd(m, digits["X"][:20], digits["y"][:20], image_shape=SHAPE, epochs=1,
                    batch_size=10, lr=0.1, max_grad_norm=1.0, delta=1e-5, noise_multiplier=1.0)
    _one_line(exc, "model")
    assert "BatchNorm" in str(exc.value)


@pytest.mark.parametrize(("fn", "args", "field"), [
    (dpsgd_epsilon, (0.0, 0.1, 10, 1e-5), "noise_multiplier"),
    (dpsgd_epsilon, (1.0, 1.5, 10, 1e-5), "sample_rate"),
    (dpsgd_epsilon, (1.0, 0.1, 0, 1e-5), "steps"),
    (dpsgd_epsilon, (1.0, 0.1, 10, 0.0), "delta"),
    (dpsgd_epsilon, (1.0, 0.1, 10, 1e-5, "moments"), "accountant"),
    (dpsgd_noise_multiplier, (-1.0, 0.1, 10, 1e-5), "target_epsilon"),
])
def test_accountant_helpers_reject_bad_arguments(fn, args, field):
    with pytest.raises(ValueError) as exc:
        fn(*args)
    _one_line(exc, field)


# ---------------------------------------------------------------------------------------------
# FedAvg with per-device noisy image batches


def _fl_setup(digits, sizes=(30, 47, 13, 60)):
    parts = np.split(np.arange(sum(sizes)), np.cumsum(sizes)[:-1])
    data = {"x": digits["X"][:sum(sizes)], "y": digits["y"][:sum(sizes)]}
    return [p.astype(np.int64) for p in parts], data


def _run_fl(digits, vectorised, perturb=None, seed=0, **kw):
    parts, data = _fl_setup(digits)
    model = seeded(conv_net, 0)
    state = FedAvgState(shared=model, private={}, partition=parts)
    obj = NoisyImageObjective(model, SHAPE, perturb=perturb, seed=seed)
    run_fedavg(obj, state, data, rounds=2, fraction_fit=1.0, local_epochs=2, batch_size=8, lr=0.1,
               seed=5, vectorised=vectorised, **kw)
    return state


def test_image_objective_vectorised_equals_sequential(digits):
    a, b = _run_fl(digits, True), _run_fl(digits, False)
    for (n, p), q in zip(a.shared.named_parameters(), b.shared.parameters()):
        assert torch.allclose(p, q, atol=1e-5), n
    for k in ("train_ce", "train_acc"):
        assert np.allclose(a.curves[k], b.curves[k], atol=1e-5), k
    init = seeded(conv_net, 0).parameters()
    moved = [not torch.equal(p, q) for p, q in zip(a.shared.parameters(), init)]
    assert all(moved) and all(0.0 <= v <= 1.0 for v in a.curves["train_acc"])


def test_image_objective_noise_is_seeded_per_objective(digits):
    runs = [_run_fl(digits, True, gaussian(0.3), seed=s) for s in (7, 7, 8)]
    clean = _run_fl(digits, True)
    p = [torch.cat([v.flatten() for v in r.shared.parameters()]) for r in runs + [clean]]
    assert torch.equal(p[0], p[1]) and not torch.equal(p[0], p[2]) and not torch.equal(p[0], p[3])
    seq = _run_fl(digits, False, gaussian(0.3), seed=7)  # a different stream order, same law
    assert np.isfinite(seq.curves["train_ce"]).all()


def test_on_upload_sees_each_round_before_aggregation(digits):
    parts, _ = _fl_setup(digits)
    snapshots = {0: [p.detach().clone() for p in seeded(conv_net, 0).parameters()]}
    calls: list[tuple] = []

    def on_round(r, state):
        snapshots[r] = [p.detach().clone() for p in state.shared.parameters()]

    def on_upload(r, glob, local, plan):
        calls.append((r, glob, local, plan))

    state = _run_fl(digits, True, on_round=on_round, on_upload=on_upload)
    assert [c[0] for c in calls] == [1, 2]
    names = [n for n, _ in state.shared.named_parameters()]
    for r, glob, local, plan in calls:
        k = len(plan.devices)
        assert k == len(parts) and list(glob) == names and list(local) == names
        for (n, p), before in zip(state.shared.named_parameters(), snapshots[r - 1]):
            assert torch.equal(glob[n], before), (r, n)  # the pre-round global model
            assert local[n].shape == (k, *p.shape)
        # identity upload: the new global model is the size-weighted mean of the uploads
        w = torch.tensor(plan.sizes / plan.sizes.sum(), dtype=torch.float32)
        for n, after in zip(names, snapshots[r]):
            assert torch.allclose(torch.tensordot(w, local[n], dims=1), after, atol=1e-6), (r, n)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_paths(digits):
    dev = torch.device("cuda")
    X, y = digits["X"].to(dev), digits["y"].to(dev)
    m = seeded(conv_net, 0).to(dev)
    res = train_central(m, X, y, image_shape=SHAPE, epochs=2, batch_size=32, lr=0.1,
                        perturb=gaussian(0.2), noise_mode="redraw", seed=0,
                        X_test=digits["X_test"].to(dev), y_test=digits["y_test"].to(dev))
    assert res.final_test_acc > 0.1
    res = train_dpsgd(seeded(conv_net, 0).to(dev), X, y, image_shape=SHAPE, epochs=1, batch_size=60,
                      lr=0.5, max_grad_norm=1.0, delta=1e-5, noise_multiplier=1.0, seed=0)
    assert math.isfinite(res.epsilon)
    parts, data = _fl_setup(digits)
    data = {k: v.to(dev) for k, v in data.items()}
    out = []
    for vec in (True, False):
        model = seeded(conv_net, 0).to(dev)
        state = FedAvgState(shared=model, private={}, partition=parts)
        run_fedavg(NoisyImageObjective(model, SHAPE), state, data, rounds=2, fraction_fit=1.0,
                   local_epochs=1, batch_size=8, lr=0.1, seed=5, vectorised=vec)
        out.append(torch.cat([p.flatten() for p in model.parameters()]))
    assert torch.allclose(out[0], out[1], atol=1e-4)

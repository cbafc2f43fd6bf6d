"""DP upload noise, pruning, and attack-level matching."""

import math

import pytest
import torch

from core.defenses.compression import PruneUpload
from core.defenses.dp import (
    DPUpload,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_delta,
)
from core.runs.compare import match_attack_level


def _deltas(K=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {
        "w": 3.0 * torch.randn(K, 20, 10, generator=g),
        "b": torch.randn(K, 10, generator=g),
        "steps": torch.full((K,), 7, dtype=torch.long),
    }


def _flat(d):
    return torch.cat([d["w"].reshape(d["w"].shape[0], -1), d["b"]], dim=1)


def test_analytic_sigma_is_exact_and_beats_classic():
    s = analytic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert gaussian_delta(s, 1.0) == pytest.approx(1e-5, rel=1e-6)
    assert gaussian_delta(s * 0.99, 1.0) > 1e-5
    assert s < classic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert analytic_gaussian_sigma(2.0, 1e-5, 3.0) == pytest.approx(
        3 * analytic_gaussian_sigma(2.0, 1e-5, 1.0)
    )
    assert analytic_gaussian_sigma(5000.0, 1e-5) > 0  # no overflow at huge epsilon
    with pytest.raises(ValueError, match="epsilon"):
        DPUpload("gaussian", epsilon=0.0, delta=1e-5, clip_norm=1.0)


def test_clipping_bounds_the_norm():
    d = _deltas()
    for mech, p in (("gaussian", 2), ("laplace", 1)):
        t = DPUpload(mech, epsilon=1.0, delta=1e-5, clip_norm=2.0)
        c = _flat(t.clip(d)).norm(p=p, dim=1)
        assert torch.all(c <= 2.0 + 1e-5) and torch.allclose(c, torch.full_like(c, 2.0), atol=1e-4)
        assert torch.equal(t.clip(d)["steps"], d["steps"])
    # an update already inside the ball is left alone
    small = {"w": torch.full((2, 3), 0.01)}
    assert torch.equal(
        DPUpload("gaussian", epsilon=1.0, delta=1e-5, clip_norm=1.0).clip(small)["w"], small["w"]
    )
    # end to end with negligible noise (huge epsilon): norms stay about clip_norm
    t = DPUpload("gaussian", epsilon=5000.0, delta=1e-5, clip_norm=1.0)
    out = t(d, generator=torch.Generator().manual_seed(0))
    n = _flat(out).norm(dim=1)
    assert torch.all(n <= 1.0 + 4 * t.sigma * math.sqrt(210)) and torch.equal(
        out["steps"], d["steps"]
    )


def test_noise_scales_and_determinism():
    big = {"w": torch.zeros(2, 200_000)}
    t = DPUpload("gaussian", epsilon=1.0, delta=1e-5, clip_norm=1.0, neighbouring="add_remove")
    noise = t(big, generator=torch.Generator().manual_seed(1))["w"]
    assert noise.std().item() == pytest.approx(t.sigma, rel=0.05)
    assert t.noise_multiplier == pytest.approx(t.sigma)  # clip_norm 1, add/remove -> σ/Δ = σ
    assert t.describe()["sigma"] == t.sigma and t.describe()["clip_p"] == 2
    lap = DPUpload("laplace", epsilon=2.0, delta=1e-5, clip_norm=1.0, neighbouring="add_remove")
    assert lap.b == 0.5 and math.isnan(lap.sigma)
    ln = lap(big, generator=torch.Generator().manual_seed(1))["w"]
    assert ln.abs().mean().item() == pytest.approx(lap.b, rel=0.05)  # E|Laplace(b)| = b
    assert ln.std().item() == pytest.approx(math.sqrt(2) * lap.b, rel=0.05)
    d = _deltas()
    a = t(d, generator=torch.Generator().manual_seed(7))
    b = t(d, generator=torch.Generator().manual_seed(7))
    c = t(d, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a["w"], b["w"]) and not torch.equal(a["w"], c["w"])
    # the default is replace-one-update: the server sees each noisy upload on its own
    r = DPUpload("gaussian", epsilon=1.0, delta=1e-5, clip_norm=1.0)
    assert r.sigma == pytest.approx(2 * t.sigma) and r.describe()["sensitivity"] == 2.0


def test_pruning_zeroes_the_smallest_fraction_per_device():
    d = _deltas(K=3)
    out = PruneUpload(0.7)(d, generator=torch.Generator())
    before, after = _flat(d), _flat(out)
    P = before.shape[1]  # 210 entries per device -> exactly 147 zeroed
    assert torch.all((after == 0).sum(1) == int(0.7 * P))
    for k in range(3):
        kept = after[k] != 0
        assert torch.equal(after[k][kept], before[k][kept])  # survivors are unchanged
        assert before[k][~kept].abs().max() <= before[k][kept].abs().min()  # the largest survive
    assert torch.equal(out["steps"], d["steps"])
    assert torch.equal(PruneUpload(0.0)(d, generator=torch.Generator())["w"], d["w"])
    # pruning the local weights: Θ_k = ref + Δ_k is what gets sparsified
    ref = {"w": torch.ones(20, 10), "b": torch.zeros(10)}
    ow = PruneUpload(0.5, target="weights")(d, generator=torch.Generator(), reference=ref)
    theta = torch.cat([(ow["w"] + ref["w"]).reshape(3, -1), ow["b"] + ref["b"]], dim=1)
    assert torch.all((theta == 0).sum(1) == 105)
    with pytest.raises(ValueError, match="reference"):
        PruneUpload(0.5, target="weights")(d, generator=torch.Generator())
    with pytest.raises(ValueError, match="rate"):
        PruneUpload(1.0)


def test_tuning_finds_the_knob_and_flags_unbracketed_targets():
    # attack accuracy rises with epsilon like a logistic curve in log epsilon; utility likewise
    def evaluate(eps):
        a = 0.5 + 0.3 / (1 + math.exp(-2 * math.log(eps)))
        return a, 0.6 + 0.3 * (a - 0.5)

    res = match_attack_level(
        evaluate,
        target=0.7,
        lo=0.01,
        hi=100.0,
        increasing=True,
        tol=0.002,
        max_evals=20,
        log_scale=True,
    )
    true_eps = math.exp(0.5 * math.log(2.0))  # solves 0.3/(1+eps^-2) = 0.2
    assert res.bracketed and res.converged and abs(res.attack - 0.7) <= 0.002
    assert res.knob == pytest.approx(true_eps, rel=0.05) and res.n_evals <= 20
    assert res.history[0][0] == 0.01 and res.history[1][0] == 100.0
    # decreasing knob (pruning rate): attack falls as rate rises
    dec = match_attack_level(
        lambda r: (0.8 - 0.3 * r, 1 - r), target=0.65, lo=0.0, hi=0.99, increasing=False, tol=0.005
    )
    assert dec.bracketed and dec.knob == pytest.approx(0.5, abs=0.02)
    # out of reach: no bisection, closest end returned
    out = match_attack_level(
        evaluate, target=0.95, lo=0.01, hi=100.0, increasing=True, log_scale=True
    )
    assert not out.bracketed and not out.converged and out.n_evals == 2 and out.knob == 100.0
    with pytest.raises(ValueError, match="lo"):
        match_attack_level(evaluate, target=0.7, lo=0.0, hi=1.0, increasing=True, log_scale=True)

"""Reconstruction from shared representations (issue #10 part 2): the learned-noise sampler and
its entropy, the fixed channels, the decoder at growing ε, Theorem 3's bound, one-line config
errors and a tiny run of the ``repr_reconstruction`` kind."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import stats

from core.bounds import reconstruction as B
from core.config.schema import ConfigError, parse_config
from core.defenses import inf2guard_reconstruction as D


def _learned(eps: float, mu, sigma) -> D.Perturbation:
    p = D.Perturbation(len(mu), "learned", eps)
    with torch.no_grad():
        p.mu.copy_(torch.tensor(mu, dtype=torch.float32))
        p.log_sigma.copy_(torch.log(torch.tensor(sigma, dtype=torch.float32)))
    return p


def test_learned_noise_entropy_matches_an_independent_monte_carlo_estimate():
    """h(ε·tanh(u)), u ~ N(μ, σ²), from the change-of-variables formula (MC over u) against
    the Vasicek spacing estimate on samples of δ itself; δ stays inside [−ε, ε]."""
    mu, sigma, eps = [0.0, 0.8, -1.5, 0.3], [1.0, 0.5, 2.0, 0.2], 1.5
    p = _learned(eps, mu, sigma)
    gen = torch.Generator().manual_seed(0)
    h = p.entropy_per_dim(200_000, gen).detach().numpy()
    delta = p.sample(200_000, torch.Generator().manual_seed(1)).detach().double().numpy()
    assert np.all(np.abs(delta) <= eps)
    h_mc = stats.differential_entropy(delta, axis=0)
    np.testing.assert_allclose(h, h_mc, atol=0.03)
    # a narrower u has less entropy, and a larger ε adds ln of the ratio
    assert h[3] < h[0]
    h2 = _learned(2 * eps, mu, sigma).entropy_per_dim(200_000, torch.Generator().manual_seed(0))
    np.testing.assert_allclose(h2.detach().numpy() - h, math.log(2.0), atol=1e-5)
    # Φ gets a gradient through the entropy (Algorithm 3 maximises β·H)
    p.entropy_per_dim(64, gen).sum().backward()
    assert p.log_sigma.grad is not None and torch.all(p.log_sigma.grad != 0)


@pytest.mark.parametrize("channel,ref", [
    ("gaussian", stats.norm(scale=0.7)), ("laplace", stats.laplace(scale=0.7)),
    ("uniform", stats.uniform(loc=-0.7, scale=1.4)), ("dp", stats.norm(scale=0.7))])
def test_fixed_channels_sample_their_distribution_with_exact_entropy(channel, ref):
    p = D.Perturbation(3, channel, 0.7)
    x = p.sample(100_000, torch.Generator().manual_seed(2)).double().numpy()
    assert stats.kstest(x[:, 0], ref.cdf).pvalue > 1e-3
    np.testing.assert_allclose(p.entropy_per_dim().numpy(), ref.entropy(), rtol=1e-6)
    np.testing.assert_allclose(p.variance_per_dim().numpy(), ref.var(), rtol=1e-6)
    assert not any(q.requires_grad for q in p.parameters())


def test_dp_channel_clips_and_reports_a_budget_that_shrinks_with_the_noise():
    p = D.Perturbation(4, "dp", 1.0, clip_norm=2.0)
    r = torch.tensor([[3.0, 4.0, 0.0, 0.0], [0.1, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(p.prepare(r).norm(dim=1).numpy(), [2.0, 0.1], rtol=1e-6)
    e1 = p.dp_epsilon()
    e2 = D.Perturbation(4, "dp", 4.0, clip_norm=2.0).dp_epsilon()
    assert math.isfinite(e1) and e2 < e1
    from core.defenses.dp import gaussian_delta

    assert gaussian_delta(1.0, e1, 4.0) <= 1e-5 * (1 + 1e-6)
    assert D.Perturbation(4, "gaussian", 1.0).dp_epsilon() is None


def test_fresh_decoder_recovers_at_eps_zero_and_degrades_as_eps_grows():
    """One encoder (λ = 0), released through Gaussian noise of growing ε: the attacker's fresh
    decoder reconstructs the targets well without noise and worse with every step of ε."""
    from core.attacks.reconstruction import decode, train_fresh_decoder
    from core.config.schema import DataSpec
    from core.data import load_dataset
    from core.foundation.threads import thread_limits

    ds = load_dataset(DataSpec(name="digits"), 0)
    X = torch.tensor(np.array(ds.X, dtype=np.float32))
    y = torch.tensor(np.array(ds.y))
    tr, ax, te = (np.array(ds.split(s)) for s in ("train", "aux", "test"))
    te = te[:100]
    # the attacker's images: aux and train rows (more pairs, a faster test; never the targets)
    ax_tr = np.concatenate([ax, tr])
    baseline = float(((X[te] - X[ax].mean(0)) ** 2).mean())  # the mean image's MSE
    mses = []
    with thread_limits():  # one thread, as inside a run (two spinning pools thrash 2 cores)
        m = D.train_inf2guard_dra(X[tr], y[tr], n_classes=10, channel="gaussian", epsilon=0.0,
                                  tradeoff_lambda=0.0, epochs=4, representation_dim=32, seed=0)
        for eps in (0.0, 0.5, 2.0):
            pert = D.Perturbation(32, "gaussian", eps)
            dec = train_fresh_decoder(m.encoder, pert, X[ax_tr], hidden=128, epochs=8, seed=1)
            with torch.no_grad():
                Z = pert.release(m.encoder(X[te]), torch.Generator().manual_seed(3))
            mses.append(float(((decode(dec, Z) - X[te]) ** 2).mean()))
    assert mses[0] < 0.6 * baseline, (mses, baseline)
    assert mses[0] < mses[1] < mses[2], mses


def test_theorem3_bound_is_monotone_and_flags_vacuous_settings():
    d = 784
    # ball volumes against closed forms
    assert math.isclose(B.log_ball_volume(2, 0.3, "l2"), math.log(math.pi * 0.09))
    assert math.isclose(B.log_ball_volume(3, 0.3, "l2"), math.log(4 / 3 * math.pi * 0.027))
    assert math.isclose(B.unit_cube_denominator(d, 0.1, "linf"), d * math.log(5.0))
    # less information, larger guaranteed error; smaller η, larger guaranteed error
    mis = [0.0, 10.0, 100.0, 1000.0]
    for norm, eta in (("linf", 0.1), ("l2", 0.1 * math.sqrt(d))):
        b = [B.theorem3_unit_cube(i, d, eta, norm).bound for i in mis]
        assert all(x > y for x, y in itertools.pairwise(b)), b
    etas = [0.05, 0.1, 0.2, 0.4]
    b = [B.theorem3_unit_cube(50.0, d, e, "linf").bound for e in etas]
    assert all(x > y for x, y in itertools.pairwise(b)), b
    # vacuous: infinite I (no noise), an ℓ∞ ball covering the cube, an ℓ2 ball of volume >= 1
    assert B.theorem3_unit_cube(math.inf, d, 0.1, "linf").vacuous
    assert B.theorem3_unit_cube(0.0, d, 0.5, "linf").vacuous
    assert B.theorem3_unit_cube(0.0, d, 0.3 * math.sqrt(d), "l2").vacuous
    assert B.theorem3_unit_cube(1e6, d, 0.1, "linf").vacuous
    # the information bound falls as the noise grows and is infinite without noise
    var_r = np.full(16, 0.5)
    i = [B.mi_upper_bound_additive(var_r, np.full(16, s**2), B.gaussian_entropy(np.full(16, s)))
         for s in (0.1, 0.5, 2.0)]
    assert i[0] > i[1] > i[2] > 0
    np.testing.assert_allclose(i[2], 8 * math.log(1 + 0.5 / 4.0))  # k/2 ln(1 + P/(kσ²))
    assert math.isinf(B.mi_upper_bound_additive(var_r, np.zeros(16), np.full(16, -np.inf)))


@pytest.mark.parametrize("patch,expected", [
    ({"defense": {"epsilon": -0.5}}, "defense.epsilon: got -0.5; allowed range 0 <= value <= 100"),
    ({"defense": {"tradeoff_lambda": 1.0}},
     "defense.tradeoff_lambda: got 1.0; allowed range 0 <= value < 1"),
    ({"defense": {"tradeoff_lambda": -0.1}},
     "defense.tradeoff_lambda: got -0.1; allowed range 0 <= value < 1"),
    ({"defense": {"mc_samples": 0}}, "defense.mc_samples: got 0; allowed range 1 <= value <= 64"),
    ({"attack": {"attackers": ["dlg"]}}, ("attack.attackers: got 'dlg'; allowed: "
     "decoder_in_training, decoder_fresh, inversion")),
])
def test_invalid_settings_give_one_line_errors(patch, expected):
    with pytest.raises(ConfigError) as exc:
        parse_config({"kind": "repr_reconstruction", **patch})
    assert str(exc.value) == expected
    with pytest.raises(ConfigError, match=r"^data.name: got 'synthetic'; reconstruction needs"):
        parse_config({"kind": "repr_reconstruction", "data": {"name": "synthetic"}})
    with pytest.raises(ValueError, match=r"^tradeoff_lambda: got 1.0; allowed range 0 <= value < 1$"):
        D.train_inf2guard_dra(torch.zeros(4, 3), torch.zeros(4, dtype=torch.long), n_classes=2,
                              tradeoff_lambda=1.0)


def test_tiny_run_scores_every_attacker_and_a_new_attacker_does_not_retrain():
    from core.foundation.metric_schema import HEADLINES, unregistered
    from core.foundation.stages import MemoryStageStore
    from core.runs.experiments import run

    store = MemoryStageStore()
    cfg = {"kind": "repr_reconstruction", "data": {"name": "digits"},
           "defense": {"channel": "learned", "epsilon": 1.0},
           "train": {"epochs": 2, "max_train": 400, "representation_dim": 16},
           "attack": {"targets": 6, "fresh_epochs": 2, "inversion_iterations": 10,
                      "attackers": ["decoder_in_training", "inversion"]}}
    r = run(cfg, stages=store)
    m = r.metrics
    assert not unregistered(list(m) + list(r.curves))
    head = HEADLINES["repr_reconstruction"]
    assert {head.utility, head.attack, head.budget} <= set(m)
    for a in ("decoder_in_training", "inversion"):
        assert 0.0 <= m[f"recon_{a}_mse"] <= 1.0 and -1.0 <= m[f"recon_{a}_ssim"] <= 1.0
        assert r.artifacts[f"recon_{a}"].shape == (6, 1, 8, 8)
        iv = r.intervals[f"recon_{a}_ssim"]
        assert iv["lo"] <= m[f"recon_{a}_ssim"] <= iv["hi"] and iv["n"] == 6
    assert m["recon_ssim"] == max(m["recon_decoder_in_training_ssim"], m["recon_inversion_ssim"])
    assert r.artifacts["originals"].shape == (6, 1, 8, 8) and r.artifacts["noise_sigma"].shape == (16,)
    assert 0.0 <= m["bound_thm3_l2"] <= 1.0 and m["bound_thm3_mi_nats"] > 0
    # under the data's entropy (less than the uniform prior's) the bound can only weaken
    for norm in ("l2", "linf"):
        assert 0.0 <= m[f"bound_thm3_est_{norm}"] <= m[f"bound_thm3_{norm}"] + 1e-12
    assert m["bound_thm3_data_entropy_nats"] < 0 and m["bound_thm3_est_violations"] >= 0
    assert len(r.curves["train_utility_ce"]) == 2
    cfg["attack"] = {**cfg["attack"], "attackers": ["decoder_fresh", "inversion"]}
    r2 = run(cfg, stages=store)
    assert r2.info["stages"] == {"rr_train": "hit", "attack_decoder_fresh": "computed",
                                 "attack_inversion": "hit"}
    assert r2.metrics["recon_inversion_ssim"] == m["recon_inversion_ssim"]

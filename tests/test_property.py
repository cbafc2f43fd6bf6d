"""Property inference (Inf2Guard spec 004 §2.2, §3.2, §4): subsets and binning, aggregation,
the attack on a planted property, the defense's game, the K-ary bound, config errors, and a
tiny run of ``kind: property`` through the stage cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.attacks.property import (
    SubsetRelease,
    fresh_property_attack,
    prior_property_attack,
    score_property,
)
from core.bounds.property import kary_fano_bound, kary_vacuous, property_bounds
from core.bounds.tappfl import fano_accuracy_bound
from core.config.schema import ConfigError, parse_config
from core.data.subsets import (
    aggregate,
    aggregate_torch,
    bin_of,
    property_ratios,
    sample_subsets,
)


def _pool(n: int = 3000, share: float = 0.4, seed: int = 0):
    rng = np.random.default_rng(seed)
    return np.arange(n) + 7, rng.random(n) < share


# -- subsets and binning ------------------------------------------------------------------------


@pytest.mark.parametrize("k", [4, 7, 11])
def test_subsets_fill_every_bin_equally_and_their_share_bins_to_the_label(k):
    pool, hv = _pool()
    s = sample_subsets(pool, hv, n_values=k, per_bin=30, size_min=2, size_max=40, seed=1)
    assert np.array_equal(np.bincount(s.labels, minlength=k), np.full(k, 30))
    assert s.lengths.min() >= 2 and s.lengths.max() <= 40
    value_of = dict(zip(pool.tolist(), hv.tolist(), strict=True))
    for j in range(len(s)):
        rows = s.index[j, :s.lengths[j]]
        assert len(set(rows.tolist())) == rows.size  # no row twice within a subset
        assert set(rows.tolist()) <= value_of.keys()
        share = np.mean([value_of[r] for r in rows])
        assert share == pytest.approx(s.shares[j])
        assert bin_of(share, s.ratios) == s.labels[j]
        # the realised share lies strictly within half the grid spacing of its bin's ratio
        assert abs(share - s.ratios[s.labels[j]]) < 0.05
    # deterministic from the seed, different with another
    again = sample_subsets(pool, hv, n_values=k, per_bin=30, size_min=2, size_max=40, seed=1)
    assert np.array_equal(again.index, s.index)
    other = sample_subsets(pool, hv, n_values=k, per_bin=30, size_min=2, size_max=40, seed=2)
    assert not np.array_equal(other.index, s.index)


def test_binning_is_nearest_ratio_and_bad_grids_or_sizes_are_one_line_errors():
    r = property_ratios(4)
    assert r.tolist() == [0.2, 0.3, 0.4, 0.5] and property_ratios(11)[[0, -1]].tolist() == [0.0, 1.0]
    assert bin_of(np.array([0.0, 0.24, 0.26, 0.45, 0.9]), r).tolist() == [0, 0, 1, 2, 3]
    assert bin_of(0.25, r) == 0  # a tie goes to the lower ratio
    with pytest.raises(ValueError, match=r"^n_values: got 5; allowed: 4, 7, 11"):
        property_ratios(5)
    pool, hv = _pool(40)
    with pytest.raises(ValueError, match=r"^subsets.size_max: .*lower size_max") as exc:
        sample_subsets(pool, hv, n_values=4, per_bin=2, size_min=30, size_max=200, seed=0)
    assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match=r"^subsets.size_max: got 3; .*cannot realise"):
        sample_subsets(*_pool(), n_values=4, per_bin=2, size_min=2, size_max=3, seed=0)


def test_aggregation_mean_and_max_match_their_definitions_and_torch():
    pool, hv = _pool(500)
    s = sample_subsets(pool - 7, hv, n_values=4, per_bin=5, size_min=3, size_max=25, seed=3)
    R = np.random.default_rng(0).normal(size=(500, 6))
    mean, mx = aggregate(R, s, "mean"), aggregate(R, s, "max")
    for j in range(len(s)):
        rows = R[s.index[j, :s.lengths[j]]]
        np.testing.assert_allclose(mean[j], rows.mean(0))
        np.testing.assert_allclose(mx[j], rows.max(0))
    assert np.all(mx >= mean - 1e-12)
    # padding never leaks in: a padded slot holding a huge value changes nothing
    Rt = torch.tensor(R[s.index], dtype=torch.float64)
    Rt[~torch.as_tensor(s.mask)] = 1e6
    for how, ref in (("mean", mean), ("max", mx)):
        got = aggregate_torch(Rt, torch.as_tensor(s.mask), how).numpy()
        np.testing.assert_allclose(got, ref, atol=1e-9)
    with pytest.raises(ValueError, match="aggregation: got 'median'"):
        aggregate(R, s, "median")


# -- the attack and the bound -------------------------------------------------------------------


def test_fresh_attacker_beats_chance_on_a_planted_property_and_the_prior_does_not():
    """Undefended: each row's representation carries its attribute (plus noise), so a subset's
    mean carries its share; the fresh attacker trained on shadow subsets reads the bin."""
    rng = np.random.default_rng(5)
    n = 4000
    hv = rng.random(n) < 0.4
    R = np.c_[hv + rng.normal(0, 0.5, n), rng.normal(size=(n, 3))]
    shadow = sample_subsets(np.arange(2000), hv[:2000], n_values=4, per_bin=60, size_min=40,
                            size_max=80, seed=1)
    target = sample_subsets(np.arange(2000, n), hv[2000:], n_values=4, per_bin=40,
                            size_min=40, size_max=80, seed=2)
    rel = SubsetRelease(aggregate(R, target, "mean"), "mean")
    att = fresh_property_attack(aggregate(R, shadow, "mean"), shadow.labels, rel, n_values=4,
                                model="logreg", seed=0)
    sc, iv = score_property(att, target.labels, n_values=4)
    assert sc["acc"] > 0.6 and iv["acc"][0] > 0.25, (sc, iv)
    prior, _ = score_property(prior_property_attack(shadow.labels, len(target), 4),
                              target.labels, n_values=4)
    assert prior["acc"] == pytest.approx(0.25) and prior["gap"] == pytest.approx(0.0)


def test_kary_bound_is_monotone_vacuous_below_one_bit_and_above_the_tight_form():
    hs = np.linspace(0, 2, 41)
    weak, tight = np.asarray(kary_fano_bound(hs, 4)), np.asarray(fano_accuracy_bound(hs, 4))
    assert np.all(np.diff(weak) <= 1e-12) and np.all(np.diff(tight) <= 1e-12)
    assert np.all(weak >= tight - 1e-12)  # the K-ary closed form is the looser one
    assert np.all(np.asarray(kary_vacuous(hs, 4)) == (hs <= 1.0 + 1e-12))
    # at H = log₂ K the weak form is 1 − 1/log₂ 3, the tight one exactly chance 1/K
    assert float(kary_fano_bound(2.0, 4)) == pytest.approx(1 - 1 / np.log2(3))
    assert float(fano_accuracy_bound(2.0, 4)) == pytest.approx(0.25)
    assert float(fano_accuracy_bound(np.log2(7), 7)) == pytest.approx(1 / 7)
    b = property_bounds(ce_nats=np.log(4) * 0.5, n_values=4)  # Ĥ = 1 bit
    assert b["property_h_bits"] == pytest.approx(1.0) and b["bound_pia_vacuous"] == 1.0
    with pytest.raises(ValueError, match="h_bits: got 2.5"):
        kary_fano_bound(2.5, 4)


# -- the defense --------------------------------------------------------------------------------


def test_the_game_drives_the_in_training_adversary_towards_chance():
    """The private value drives the task label too, so the λ = 0 encoder keeps it and the
    adversary reads subset shares from the aggregates; at λ = 0.9 the encoder hides them from
    it (Algorithm 2's direction)."""
    from core.defenses.inf2guard_property import train_inf2guard_property
    from core.foundation.threads import thread_limits

    rng = np.random.default_rng(0)
    n = 1200
    hv = rng.random(n) < 0.4
    y = np.where(rng.random(n) < 0.8, hv, ~hv).astype(np.int64)
    X = np.c_[hv + rng.normal(0, 0.2, n), rng.normal(size=(n, 3))]
    s = sample_subsets(np.arange(n), hv, n_values=4, per_bin=40, size_min=30, size_max=60, seed=0)
    Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(y)
    acc = {}
    with thread_limits(1):
        for lam in (0.0, 0.9):
            m = train_inf2guard_property(Xt, yt, s, n_classes=2, tradeoff_lambda=lam, epochs=12,
                                         pretrain_epochs=3, batch_subsets=16, seed=0,
                                         representation_dim=8, hidden_dim=16)
            acc[lam] = float(np.mean(m.curves["adversary_acc"][-3:]))
    assert acc[0.0] > 0.45 and acc[0.9] < acc[0.0] - 0.15, acc
    with pytest.raises(ValueError, match=r"^tradeoff_lambda: got 1.5; allowed range 0 <= value <= 1$"):
        train_inf2guard_property(Xt, yt, s, n_classes=2, tradeoff_lambda=1.5)


def test_the_in_training_adversary_reads_shares_hidden_under_a_large_offset():
    """An aggregate whose share signal is small next to its mean (as a mean over many
    representations is) is still read by the in-training adversary at λ = 0: its input is
    standardised (PropertyAdversary); without that it stayed at CE = ln K. One-subset batches
    (batch_subsets = 1) train too."""
    from core.defenses.inf2guard_property import train_inf2guard_property
    from core.foundation.threads import thread_limits
    from core.models.nn import PropertyAdversary

    rng = np.random.default_rng(1)
    n = 1600
    hv = rng.random(n) < 0.4
    y = hv.astype(np.int64)
    X = np.c_[20.0 + 0.3 * hv + rng.normal(0, 0.05, n), 20.0 + rng.normal(0, 0.05, size=(n, 3))]
    s = sample_subsets(np.arange(n), hv, n_values=4, per_bin=50, size_min=40, size_max=80, seed=0)
    Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(y)
    with thread_limits(1):
        m = train_inf2guard_property(Xt, yt, s, n_classes=2, tradeoff_lambda=0.0, epochs=15,
                                     pretrain_epochs=5, batch_subsets=16, seed=0,
                                     representation_dim=8, hidden_dim=16)
        assert isinstance(m.adversary, PropertyAdversary)
        assert float(np.mean(m.curves["adversary_acc"][-3:])) > 0.5, m.curves["adversary_acc"]
        one = train_inf2guard_property(Xt, yt, s, n_classes=2, tradeoff_lambda=0.5, epochs=1,
                                       pretrain_epochs=1, batch_subsets=1, seed=0,
                                       representation_dim=8, hidden_dim=16)
    assert np.isfinite(one.curves["adversary_ce"]).all()


# -- config -------------------------------------------------------------------------------------


@pytest.mark.parametrize("over, start", [
    ({"subsets": {"n_values": 5}}, "subsets.n_values: got 5; allowed: 4, 7, 11"),
    ({"subsets": {"n_values": 12}}, "subsets.n_values: got 12; allowed range 4 <= value <= 11"),
    ({"defense": {"tradeoff_lambda": 1.5}}, "defense.tradeoff_lambda: got 1.5; allowed range 0 <= value <= 1"),
    ({"defense": {"tradeoff_lambda": -0.1}}, "defense.tradeoff_lambda: got -0.1; allowed range"),
    ({"subsets": {"size_min": 50, "size_max": 10}}, "subsets.size_min: got 50; allowed range 2 <= value <= 10 (size_max)"),
    ({"attack": {"attackers": ["lira"]}}, "attack.attackers: got 'lira'; allowed: in_training, mlp, logreg, prior"),
    ({"defense": {"aggregation": "median"}}, "defense.aggregation: got 'median'"),
])
def test_bad_settings_give_one_line_errors(over, start):
    with pytest.raises(ConfigError) as exc:
        parse_config({"kind": "property", **over})
    msg = str(exc.value)
    assert msg.startswith(start) and "\n" not in msg, msg


# -- the runner ---------------------------------------------------------------------------------

TINY = {"kind": "property", "data": {"name": "digits", "private_attribute": "parity"},
        "defense": {"tradeoff_lambda": 0.0},
        "subsets": {"size_min": 8, "size_max": 40, "train_per_bin": 40, "aux_per_bin": 40,
                    "test_per_bin": 20},
        "train": {"epochs": 4, "pretrain_epochs": 2}, "attack": {"mlp_epochs": 30},
        "projection_points": 50}


def test_tiny_run_scores_every_attacker_and_an_attacker_change_does_not_retrain():
    from core.foundation import metric_schema as S
    from core.foundation.stages import MemoryStageStore
    from core.runs.experiments import run

    store = MemoryStageStore()
    r = run(TINY, stages=store)
    m = r.metrics
    assert S.unregistered(m) == [] and S.unregistered(r.curves) == []
    assert m["chance"] == 0.25 and m["property_majority"] == 0.25 and m["subsets_test"] == 80
    for a in ("in_training", "mlp", "logreg", "prior"):
        lo, hi = r.interval(f"property_{a}_acc")
        assert lo <= m[f"property_{a}_acc"] <= hi
    # parity shares follow the digit labels the encoder learns: the undefended release leaks
    assert m["property_mlp_acc"] > 0.4 and m["property_acc_best"] >= m["property_mlp_acc"]
    assert m["utility_acc"] > m["utility_majority"] + 0.3
    assert m["bound_pia_fano_exact"] <= m["bound_pia_fano"] + 1e-12
    assert r.artifacts["proj_repr"].shape == (50, 2) and r.info["attribute_values"][0] == "0.2"
    assert r.info["stages"]["train"] == "computed"
    r2 = run({**TINY, "attack": {"attackers": ["mlp"], "mlp_hidden": 16, "mlp_epochs": 30}},
             stages=store)
    assert r2.info["stages"]["train"] == "hit" and r2.info["stages"]["release"] == "hit"
    assert r2.info["stages"]["attack:mlp"] == "computed" and "property_logreg_acc" not in r2.metrics
    assert r2.metrics["utility_acc"] == m["utility_acc"]

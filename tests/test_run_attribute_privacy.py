"""The attribute-privacy runner end to end on tiny configs: the Result contract, baselines,
errors, intervals, the stage cache and the metric schema."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.config.schema import ConfigError
from core.runs.experiments import run

TINY = {
    "kind": "attribute_privacy",
    "data": {"name": "synthetic", "n_samples": 600, "dependence": 0.6},
    "fl": {"num_devices": 3, "fraction_fit": 1.0, "rounds": 2, "batch_size": 32},
    "pretrain_epochs": 1,
    "projection_points": 80,
    "attack": {"mlp_epochs": 10},
}


def _cfg(**over):
    cfg = {k: (dict(v) if isinstance(v, dict) else v) for k, v in TINY.items()}
    for k, v in over.items():
        if isinstance(v, dict):
            cfg[k] = {**cfg.get(k, {}), **v}
        else:
            cfg[k] = v
    return cfg


@pytest.fixture(scope="module")
def tappfl_result():
    return run(_cfg(defense={"kind": "tappfl", "tradeoff_lambda": 0.5}))


def test_contract(tappfl_result):
    r = tappfl_result
    m = r.metrics
    for who in ("in_training", "logreg", "mlp", "prior", "raw_logreg", "raw_mlp"):
        for s in ("acc", "bacc", "auc", "adv", "ce_nats"):
            assert f"attack_{who}_{s}" in m, (who, s)
        # the gap is to the majority value's rate, not to 1/k (issue #20)
        assert math.isclose(m[f"gap_{who}"], m[f"attack_{who}_acc"] - m["attribute_majority"])
    assert m["attribute_majority"] >= m["chance"]
    for key in ("utility_acc", "utility_acc_paper", "utility_acc_raw", "h_u_given_r_bits",
                "bound_thm2_paper", "bound_thm2_exact", "bound_thm1_rhs", "bound_thm1_vacuous"):
        assert key in m and not math.isnan(m[key]), key
    assert 0.0 <= m["utility_acc"] <= 1.0
    assert m["attack_prior_auc"] == pytest.approx(0.5)
    # Theorem 2: the exact form is tighter than the paper's closed form
    assert m["bound_thm2_exact"] <= m["bound_thm2_paper"] + 1e-12
    assert len(r.curves["round"]) == 2
    for key in ("ce_loss", "jsd_loss", "utility_acc", "attack_logreg_auc", "in_training_acc"):
        assert len(r.curves[key]) == 2, key
    assert r.artifacts["proj_raw"].shape == (80, 2) == r.artifacts["proj_repr"].shape
    assert r.artifacts["proj_attribute"].shape == (80,)
    assert r.artifacts["roc_mlp_fpr"].shape == r.artifacts["roc_mlp_tpr"].shape
    assert r.key and r.info["private_attribute"] == "u"


def test_deterministic(tappfl_result):
    again = run(_cfg(defense={"kind": "tappfl", "tradeoff_lambda": 0.5}))
    for key in ("utility_acc", "attack_logreg_auc", "attack_in_training_acc", "ce_loss"):
        assert again.metrics[key] == pytest.approx(tappfl_result.metrics[key], abs=1e-6), key


@pytest.mark.parametrize("defense,expect", [
    ("dp_gaussian", ("dp_sigma", "dp_epsilon_total")),
    ("dp_laplace", ("dp_laplace_b", "dp_epsilon_total")),
    ("pruning", ("pruning_rate",)),
])
def test_baselines_report_their_knobs(defense, expect):
    block = {"kind": defense, **({"rate": 0.7} if defense == "pruning" else
                                 {"epsilon": 2.0, "delta": 1e-5, "clip_norm": 1.0})}
    r = run(_cfg(defense=block, projection_points=0, attack={"attackers": ["logreg"]}))
    for key in expect:
        assert key in r.metrics and r.metrics[key] > 0, key
    if defense.startswith("dp"):
        assert r.info["accountant"] in {"rdp", "basic", "advanced"}
        assert "no subsampling amplification" in r.info["dp_threat_model"]
        assert r.info["dp"]["sensitivity"] == 2.0  # replace-one-update, clip 1
        # composition over 2 rounds can only grow the per-round epsilon (sampling rate 1)
        assert r.metrics["dp_epsilon_total"] >= 2.0 - 1e-9
        assert r.metrics["epsilon_accountant"] == r.metrics["dp_epsilon_total"]
    assert "proj_raw" not in r.artifacts


def test_multivalued_attribute_on_adult(adult_dir):
    r = run(_cfg(data={"name": "adult", "private_attribute": "marital_status", "data_dir": str(adult_dir),
                       "max_samples": 1500},
                 projection_points=0, attack={"attackers": ["logreg"]}))
    m = r.metrics
    assert m["n_values"] == 7 and m["chance"] == pytest.approx(1 / 7)
    assert m["bound_thm2_valid"] == 0.0 and math.isnan(m["bound_thm2_exact"])
    assert "binary" in r.info["thm2_message"]
    assert 0.0 <= m["attack_logreg_auc"] <= 1.0


def test_too_many_devices_is_a_clear_error():
    # valid for the config (<= 1000) but more devices than the 300-row set has training rows
    with pytest.raises(ConfigError, match=r"fl.num_devices: got 500; allowed range 1 <= value <= \d+ \(the number"):
        run(_cfg(fl={"num_devices": 500, "fraction_fit": 0.1}, data={"n_samples": 300}))


def test_invalid_lambda_and_fraction():
    with pytest.raises(ConfigError, match="defense.tradeoff_lambda: got 2"):
        run(_cfg(defense={"kind": "tappfl", "tradeoff_lambda": 2}))
    with pytest.raises(ConfigError, match="fl.fraction_fit: got 0"):
        run(_cfg(fl={"fraction_fit": 0}))
    with pytest.raises(ConfigError, match="fl.num_devices: got 0"):
        run(_cfg(fl={"num_devices": 0}))


def test_projections_show_the_attribute_mixing():
    """Raw inputs of synthetic data separate u far better than chance (the reference leak)."""
    r = run(_cfg(defense={"kind": "none"}, projection_points=0, attack={"attackers": ["logreg"]}))
    assert r.metrics["attack_raw_logreg_auc"] > 0.8
    assert np.isfinite(r.metrics["utility_acc_raw"])


def test_diverged_extractor_is_reported_not_fatal():
    """Absurd DP noise blows the extractor up: the run still completes, says so, and the
    attackers on a NaN representation are no better than the prior."""
    r = run(_cfg(defense={"kind": "dp_gaussian", "epsilon": 0.01, "delta": 1e-5, "clip_norm": 1000.0},
                 fl={"lr": 5.0, "rounds": 3}, projection_points=0, attack={"attackers": ["logreg"]}))
    m = r.metrics
    assert m["representation_nonfinite_frac"] > 0
    assert any("diverged" in n for n in r.info["notes"])
    assert m["attack_logreg_auc"] <= 0.6


def test_headline_metrics_and_intervals(tappfl_result):
    r = tappfl_result
    m = r.metrics
    best = r.info["best_attacker"]
    assert best in ("in_training", "logreg", "mlp")
    assert m["attack_auc_best"] == max(m[f"attack_{w}_auc"] for w in ("in_training", "logreg", "mlp"))
    assert m["attack_bacc_best"] == m[f"attack_{best}_bacc"] and m["advantage_best"] == m[f"attack_{best}_adv"]
    assert 0.0 <= m["tpr_at_0p1pct_fpr"] <= m["tpr_at_1pct_fpr"] <= 1.0
    assert m["tradeoff_lambda"] == 0.5 and 0.0 < m["utility_majority"] < 1.0
    for name in ("attack_mlp_auc", "attack_logreg_bacc", "attack_auc_best", "attack_prior_acc"):
        lo, hi = r.interval(name)
        assert lo <= m[name] <= hi and hi - lo < 0.5, name
        assert r.intervals[name]["n"] == 120  # the test split of 600 rows
    # the prior's AUC is exactly chance and its interval says so
    assert r.interval("attack_prior_auc") == (0.5, 0.5)


def test_every_emitted_metric_is_registered(tappfl_result):
    from core.foundation.metric_schema import unregistered

    assert unregistered(tappfl_result.metrics) == []
    assert unregistered(tappfl_result.intervals) == []


def test_attacker_change_reuses_the_trained_stage_and_a_source_change_misses_it(monkeypatch):
    from core.foundation.stages import MemoryStageStore

    stages = MemoryStageStore()
    base = _cfg(projection_points=0, attack={"attackers": ["logreg"]})
    first = run(base, stages=stages)
    assert first.info["stages"]["train"] == "computed"
    second = run(_cfg(projection_points=0, attack={"attackers": ["logreg", "mlp"], "mlp_epochs": 5}),
                 stages=stages)
    assert second.info["stages"]["train"] == "hit" and second.info["stages"]["release"] == "hit"
    assert second.info["stages"]["logreg"] == "hit" and second.info["stages"]["mlp"] == "computed"
    assert second.metrics["utility_acc"] == first.metrics["utility_acc"]
    assert second.metrics["attack_logreg_auc"] == first.metrics["attack_logreg_auc"]
    # another engine source: every stage key changes
    import core.foundation.stages as stages_mod

    monkeypatch.setattr(stages_mod, "engine_id", lambda: "0.0.0+feedfacecafe")
    third = run(base, stages=stages)
    assert third.info["stages"]["train"] == "computed"


def test_old_config_runs_through_the_migration():
    r = run({"kind": "tappfl", "defense": "none", "tradeoff_lambda": 0.5, "utility_epochs": 2,
             "data": TINY["data"], "fl": TINY["fl"], "pretrain_epochs": 0, "projection_points": 0,
             "attack": {"attackers": ["logreg"]}})
    assert r.kind == "attribute_privacy" and r.config["defense"] == {"kind": "none"}
    assert any("utility_epochs" in n for n in r.info["config_migrated"])


def test_a_conv_model_on_tabular_data_is_one_line_naming_both():
    with pytest.raises(ConfigError) as exc:
        run(_cfg(model={"arch": "tappfl_cifar", "width": 0.25}))
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("model.arch: got 'tappfl_cifar'")
    assert "'synthetic' is tabular" in msg


def test_a_conv_model_reaches_the_runs_notes():
    r = run({"kind": "attribute_privacy", "model": {"arch": "lenet5", "width": 0.0625},
             "data": {"name": "digits", "private_attribute": "parity", "max_samples": 300},
             "fl": {"num_devices": 2, "fraction_fit": 1.0, "rounds": 1}, "pretrain_epochs": 0,
             "projection_points": 0, "attack": {"attackers": ["logreg"]}})
    assert any(n.startswith("extractor: lenet5's encoder at width 0.0625") for n in r.info["notes"])
    assert np.isfinite(r.metrics["utility_acc"]) and "model" in r.config

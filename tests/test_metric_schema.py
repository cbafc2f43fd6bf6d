"""The metric schema (core.foundation.metric_schema) and the uncertainty helpers of core.foundation.metrics."""

import time

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from core.foundation import metric_schema as S
from core.foundation import metrics as M


@pytest.fixture
def scratch_registry(monkeypatch):
    """A copy of the registry, so a test may register names without leaking them."""
    monkeypatch.setattr(S, "_REGISTRY", dict(S._REGISTRY))


# ---------------------------------------------------------------------------------------------
# registry


def test_round_trip_and_errors(scratch_registry):
    spec = S.MetricSpec("test_metric_x", "a metric for the test", "fraction", "leakage", 0.5,
                        "attack")
    assert not S.is_registered("test_metric_x")
    assert S.register(spec) is spec and S.register(spec) is spec  # identical again: no-op
    assert S.get("test_metric_x") == spec and S.is_registered("test_metric_x")
    assert S.all_specs()[-1] == spec
    assert S.unregistered(["utility_acc", "nope", "test_metric_x", "nope"]) == ["nope"]
    with pytest.raises(ValueError, match="already registered"):
        S.register(S.MetricSpec("test_metric_x", "another", "AUC", "leakage"))
    with pytest.raises(ValueError, match="direction"):
        S.MetricSpec("y", "d", "AUC", "more")
    with pytest.raises(ValueError, match="one non-empty line"):
        S.MetricSpec("y", "two\nlines", "AUC", "neither")


def test_unknown_name_message():
    with pytest.raises(KeyError) as e:
        S.get("attack_mlp_acu")
    msg = str(e.value)
    assert "\n" not in msg and "'attack_mlp_acu'" in msg and "attack_mlp_auc" in msg
    with pytest.raises(ValueError, match="unknown metric 'zzz_qqq'"):
        S.get("zzz_qqq")


def test_family_helper(scratch_registry):
    out = S.register_family("test_{who}_{m}", {"who": {"a": "attacker A", "b": "attacker B"},
                                               "m": ["acc", "auc"]},
                            description="{m} of {who_text}", unit="fraction",
                            direction="leakage", chance="test_{who}_chance", group="attack")
    assert [s.name for s in out] == ["test_a_acc", "test_a_auc", "test_b_acc", "test_b_auc"]
    assert S.get("test_b_auc").description == "auc of attacker B"
    assert S.get("test_b_auc").chance == "test_b_chance"
    with pytest.raises(ValueError, match="needs"):
        S.register_family("test_{who}", {"m": ["x"]}, description="d", unit="u",
                          direction="neither")


def test_a_defense_knob_budget_metric_is_generated_from_its_knob():
    from core.foundation.parts import DEFENSES, DefensePart, Knob

    assert not S.is_registered("test_budget_x")
    knob = Knob("level", "β", "a test level", 0.0, 1.0, "linear", "higher_is_more_private",
                budget_metric="test_budget_x")
    DEFENSES.register("test_defense_x", DefensePart(
        "test_defense_x", "Test defense", ("membership",), "model", knob, None, "x.y:z"))
    try:
        spec = S.get("test_budget_x")
        assert (spec.unit, spec.direction, spec.group) == ("β", "neither", "defense")
        assert "a test level" in spec.description and "Test defense" in spec.description
        assert S.unregistered(["test_budget_x", "nope"]) == ["nope"]
        assert spec in S.all_specs()
        # a budget registered by name keeps its own spec (κ, ε, λ are)
        assert S.get("kappa").description == S._REGISTRY["kappa"].description
        assert [s.name for s in S.all_specs()].count("kappa") == 1
    finally:
        DEFENSES.unregister("test_defense_x")
    assert not S.is_registered("test_budget_x")


def test_headline_budgets_do_not_depend_on_what_is_imported_first():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    code = ("from core.foundation import metric_schema as S; "
            "print(S.HEADLINES['attribute_privacy'].budget_for('tappfl'), "
            "S.HEADLINES['membership'].budget_for('inf2guard'))")
    # the catalog loaded first (a catalog module importing the schema would snapshot the
    # registry half-loaded), then the schema first
    for first in ("from core.foundation.parts import DEFENSES; DEFENSES.names(); ", ""):
        out = subprocess.run([sys.executable, "-c", first + code], capture_output=True, cwd=root,
                             env=env, text=True, timeout=300, check=True).stdout.split()
        assert out == ["tradeoff_lambda", "tradeoff_lambda"], (first, out)


def test_registry_contents():
    for who in ("in_training", "logreg", "mlp", "prior", "raw_logreg", "raw_mlp"):
        for m in ("acc", "bacc", "auc", "adv", "ce_nats"):
            assert S.is_registered(f"attack_{who}_{m}")
        assert S.get(f"gap_{who}").chance == 0.0
    assert S.get("attack_mlp_auc").chance == 0.5 and S.get("attack_mlp_acc").chance == "chance"
    assert S.get("utility_acc").direction == "utility"
    assert S.get("utility_acc").chance == "utility_majority"
    for spec in S.all_specs():
        assert spec.direction in S.DIRECTIONS
        assert "\n" not in spec.description and len(spec.description) <= 100, spec.name
        assert spec.unit and len(spec.unit) <= 12, spec.name
        if isinstance(spec.chance, str):
            assert S.is_registered(spec.chance), spec.name
    for kind, head in S.HEADLINES.items():
        budgets = list(head.budget.values()) if isinstance(head.budget, dict) else [head.budget]
        for name in (head.utility, head.attack, *budgets):
            assert name is None or S.is_registered(name), (kind, name)
    # every federated defense's knob reports its budget under a registered metric
    assert S.HEADLINES["attribute_privacy"].budget_for("dp_gaussian") == "epsilon_accountant"
    assert S.HEADLINES["attribute_privacy"].budget_for("tappfl") == "tradeoff_lambda"
    assert S.chance_value("attack_mlp_acc", {"chance": 0.25}) == 0.25
    assert S.chance_value("attack_mlp_auc", {}) == 0.5
    assert S.chance_value("utility_acc", {}) is None
    h = S.Headline("utility_acc", "attack_auc_best", {"dp_gaussian": "dp_epsilon_total"})
    assert h.budget_for("dp_gaussian") == "dp_epsilon_total" and h.budget_for("none") is None


def test_every_emitted_metric_is_registered():
    from core.runs.experiments import run

    proj = run({"kind": "projection", "data": {"name": "digits"}, "method": "tsne",
                "max_points": 120})
    assert S.unregistered(proj.metrics) == []
    res = run({"kind": "tappfl", "data": {"name": "synthetic", "n_samples": 400},
               "fl": {"num_devices": 4, "rounds": 1, "fraction_fit": 1.0},
               "attack": {"mlp_epochs": 2}, "projection_points": 0, "pretrain_epochs": 0})
    assert S.unregistered(res.metrics) == []
    assert S.unregistered(res.curves) == []


# ---------------------------------------------------------------------------------------------
# intervals


def test_clopper_pearson_matches_scipy():
    for k, n in ((5, 10), (0, 10), (10, 10), (37, 200)):
        ci = binomtest(k, n).proportion_ci(0.95, method="exact")
        assert M.clopper_pearson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)
    ci = binomtest(5, 10).proportion_ci(0.9, method="exact")
    assert M.clopper_pearson(5, 10, 0.9) == pytest.approx((ci.low, ci.high), abs=1e-12)
    with pytest.raises(ValueError, match="k: got 11"):
        M.clopper_pearson(11, 10)
    with pytest.raises(ValueError, match="n: got 0"):
        M.clopper_pearson(0, 0)


def test_attack_intervals_known_cases():
    y = np.array([0] * 50 + [1] * 50)
    perfect = np.r_[np.linspace(0.0, 0.4, 50), np.linspace(0.6, 1.0, 50)]
    iv = M.attack_intervals(y, perfect)
    assert iv["auc"] == (1.0, 1.0) and iv["advantage"] == (1.0, 1.0)
    assert iv["balanced_accuracy"] == (1.0, 1.0) and iv["accuracy"][1] == 1.0
    rng = np.random.default_rng(0)
    yr = rng.integers(0, 2, 4000)
    iv = M.attack_intervals(yr, rng.random(4000))
    lo, hi = iv["auc"]
    assert lo < 0.5 < hi and hi - lo < 0.1
    assert M.near_chance(iv["auc"], 0.5) and M.near_chance(iv["balanced_accuracy"], 0.5)
    assert iv["advantage"][0] >= 0.0


def test_attack_intervals_agree_with_the_generic_bootstrap():
    """The vectorised intervals are the percentile bootstrap of attack_scores itself."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 600)
    s = 1 / (1 + np.exp(-(rng.normal(size=600) + y)))
    s = np.round(s, 2)  # ties
    iv = M.attack_intervals(y, s, n_boot=50, seed=7)
    for key, fn in (("auc", lambda a, b: roc_auc_score(a, b)),
                    ("advantage", M.advantage),
                    ("balanced_accuracy",
                     lambda a, b: balanced_accuracy_score(a, (b > 0.5).astype(int)))):
        assert iv[key] == pytest.approx(M.bootstrap_interval(fn, y, s, n_boot=50, seed=7)), key
    y3 = rng.integers(0, 3, 500)
    logits = rng.normal(size=(500, 3)) + np.eye(3)[y3]
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    iv3 = M.attack_intervals(y3, p, n_boot=30, seed=1)
    for key in ("auc", "advantage", "balanced_accuracy"):
        ref = M.bootstrap_interval(lambda a, b, key=key: M.attack_scores(a, b)[key], y3, p,
                                   n_boot=30, seed=1)
        assert iv3[key] == pytest.approx(ref), key
    point = M.attack_scores(y3, p)
    for key in ("auc", "advantage", "balanced_accuracy", "accuracy"):
        assert iv3[key][0] <= point[key] <= iv3[key][1], key


def test_attack_intervals_edge_cases_and_speed():
    nan = M.attack_intervals(np.zeros(0, int), np.zeros((0, 2)))
    assert all(np.isnan(v).all() for v in nan.values())
    one = M.attack_intervals(np.zeros(20, int), np.full(20, 0.3))
    assert np.isnan(one["auc"]).all() and one["accuracy"][1] == 1.0
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 16_000)
    s = rng.random(16_000)
    t0 = time.perf_counter()
    M.attack_intervals(y, s)
    assert time.perf_counter() - t0 < 5.0  # ~0.1 s alone on a 2-core CPU; generous for load


def test_near_chance_and_text():
    assert M.near_chance((0.48, 0.53), 0.5) and not M.near_chance((0.51, 0.53), 0.5)
    assert not M.near_chance((float("nan"), 0.6), 0.5)
    assert M.within_chance_text(0.512, (0.49, 0.53), 0.5) == "within 0.012 of chance"
    assert M.within_chance_text(0.52, (0.51, 0.53), 0.5) is None


def test_one_advantage_meaning():
    y = np.array([0, 0, 1, 1])
    s = np.array([0.1, 0.2, 0.8, 0.9])
    assert M.advantage(y, s) == 1.0 and M.advantage(y, -s) == 0.0
    assert np.isnan(M.advantage(np.zeros(3, int), np.arange(3.0)))
    from core.bounds.tappfl import empirical_advantage

    rng = np.random.default_rng(2)
    u = rng.integers(0, 2, 300)
    sc = rng.normal(size=300) + u
    assert empirical_advantage(u, sc) == M.advantage(u, sc)
    assert M.attack_scores(u, 1 / (1 + np.exp(-sc)))["advantage"] == pytest.approx(
        M.advantage(u, sc))


def test_a_privacy_metric_says_its_direction_in_the_field():
    """Every metric whose description tells a reader that less of it is more leakage is typed
    ``protection`` (the advisor, the report and Compare read the field, not the words), and
    only privacy metrics are."""
    for spec in S.all_specs():
        says_less_is_leakier = any(t in spec.description
                                   for t in ("lower = leakier", "lower = more leakage"))
        assert says_less_is_leakier == (spec.direction == "protection"), spec.name

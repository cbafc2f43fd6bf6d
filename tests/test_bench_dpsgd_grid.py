"""The membership and gradient-leakage benchmarks sweep DP-SGD by target ε with its own recipe,
plus the ε = ∞ point, and report utility above the majority class (issue #22 item 2). The
benchmarks' own point loops run here with the engine replaced by a stub that records each
config and answers fixed metrics (no training: seconds)."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import pytest

from core.config.schema import parse_config


class _Stub:
    """A run result: every metric ``value`` (``utility_acc`` from ``utility``), as the
    benchmarks read it."""

    def __init__(self, cfg: dict[str, Any], utility: float) -> None:
        self.metrics: dict[str, float] = defaultdict(lambda: 0.5)
        self.metrics.update(utility_acc=utility, utility_majority=0.1,
                            utility_majority_images=0.1, recon_targets=1, recon_batch_size=1)
        d = cfg["defense"]
        if d["kind"] == "dp_sgd":
            self.metrics.update(epsilon_accountant=d.get("target_epsilon") or math.inf,
                                dp_noise_multiplier=d.get("noise_multiplier", 1.5))
        self.info = {"scored": defaultdict(lambda: (0, 0)), "best_inverter": "idlg"}

    def interval(self, _name: str) -> tuple[float, float]:
        return 0.4, 0.6


def _recipe(cfg: dict[str, Any]) -> dict[str, Any]:
    """DP-SGD's training arguments for a benchmark's config, through the config schema."""
    c = parse_config(cfg)
    return c.defense.training(c.train)


def _dp_checks(cfgs: list[dict[str, Any]]) -> None:
    dp = [c for c in cfgs if c["defense"]["kind"] == "dp_sgd"]
    targets = sorted(c["defense"]["target_epsilon"] for c in dp if "target_epsilon" in c["defense"])
    assert targets == [1.0, 2.0, 4.0, 8.0]
    for c in dp:
        r = _recipe(c)
        # the recipe that trains (core.catalog.dp_sgd.DPSGDDefense defaults), not the train block's
        assert (r["optimizer"], r["lr"], r["sample_rate"], r["epochs"]) == ("sgd", 2.0, 1.0, 150)
    no_noise = [_recipe(c) for c in dp if "target_epsilon" not in c["defense"]]
    assert len(no_noise) == 1
    assert no_noise[0]["noise_multiplier"] == 0.0 and no_noise[0]["target_epsilon"] is None


def test_membership_grid_is_target_epsilon_with_ratio_above_majority(monkeypatch):
    import benchmarks.membership_bench as M

    cfgs: list[dict[str, Any]] = []

    def run(cfg):
        cfgs.append(cfg)
        # undefended 0.9; DP-SGD at the majority rate; everything else 0.5
        u = 0.9 if cfg["defense"]["kind"] == "none" else (
            0.1 if cfg["defense"]["kind"] == "dp_sgd" else 0.5)
        return _Stub(cfg, u)

    monkeypatch.setattr(M, "_run", run)
    rows = M._points("mnist5k", 500, 60, 784, quick=False)
    _dp_checks(cfgs)
    dp = [r for r in rows if r["point"].startswith("dp_sgd")]
    assert [r["knob"] for r in dp] == [1.0, 2.0, 4.0, 8.0, None]
    assert all({"target_epsilon", "epsilon_accountant", "noise_multiplier"} <= set(r) for r in dp)
    assert dp[-1]["epsilon_accountant"] == math.inf and dp[-1]["target_epsilon"] is None
    by = {r["point"]: r["utility_ratio_above_majority"] for r in rows}
    assert by["undefended"] == pytest.approx(1.0)
    assert by["dp_sgd"] == pytest.approx(0.0)  # at the majority rate: nothing above it
    assert by["channel"] == pytest.approx(0.5)
    assert M.above_majority(0.5, 0.5, 0.5) is None


def test_gradient_leakage_grid_is_target_epsilon_with_ratio_above_majority(monkeypatch):
    import benchmarks.gradient_leakage as G

    cfgs: list[dict[str, Any]] = []

    def run(cfg, _store):
        cfgs.append(cfg)
        u = {"none": 0.9, "dp_sgd": 0.1}.get(cfg["defense"]["kind"], 0.5) + 0.01 * cfg["seed"]
        return _Stub(cfg, u)

    monkeypatch.setattr(G, "_run", run)
    rows = G._defense_rows(None, quick=True)
    _dp_checks(cfgs)
    dp = [r for r in rows if r["defense"].startswith("dp_sgd")]
    assert [r["target_epsilon"] for r in dp] == [1.0, 2.0, 4.0, 8.0, math.inf]
    assert dp[-1]["z"] == 0.0 and dp[0]["z"] == 1.5
    assert all(r["utility_ratio_above_majority"] == pytest.approx(0.0) for r in dp)
    nat = [r for r in rows if r["defense"] == "natural"]
    assert all(r["utility_ratio_above_majority"] == pytest.approx(0.5) for r in nat)

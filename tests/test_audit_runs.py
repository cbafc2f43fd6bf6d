"""The one-run audit wired into the runners (core/runs/audit_stage.py), on tiny runs (seconds):
audited ε ≤ accountant ε for DP-SGD through the membership runner, a large audited ε for an
undefended model, a broken accountant (noise removed) caught, the κ channel audited black box,
the gradient-leakage runner audited, and ``noise_multiplier: 0`` carried as ε = ∞ from the
config through the run and its Result JSON to Compare."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from core.config.schema import parse_config
from core.foundation.progress import Progress
from core.foundation.result import Result
from core.runs.membership import run_membership

AUDIT = {"kind": "auto", "canaries": 500, "confidence": 0.95}
BASE = {"kind": "membership", "data": {"name": "digits"}, "seed": 0, "device": "cpu",
        "train": {"members": 100, "epochs": 20, "lr": 0.1, "optimizer": "sgd"},
        "attack": {"attackers": ["loss"], "shadows": 2, "rmia_references": 1},
        "projection_points": 0}
DPSGD = {"kind": "dp_sgd", "epochs": 20}


def _run(defense: dict, audit: dict | None = None) -> Result:
    cfg = parse_config({**BASE, "defense": defense, "audit": audit or AUDIT})
    return run_membership(cfg, Progress())


@pytest.fixture(scope="module")
def dpsgd_eps2() -> Result:
    return _run({**DPSGD, "target_epsilon": 2.0})


def test_audit_is_off_by_default_and_costs_nothing():
    cfg = parse_config({**BASE, "defense": {"kind": "none"}})
    assert cfg.audit.kind == "off" and not cfg.audit.enabled
    with pytest.raises(ValueError, match="audit.canaries"):
        parse_config({**BASE, "audit": {"kind": "white_box", "canaries": 5}})


def test_audited_epsilon_stays_below_the_accountant_for_dpsgd(dpsgd_eps2):
    m = dpsgd_eps2.metrics
    assert m["epsilon_accountant"] <= 2.0
    assert 0.0 <= m["audit_epsilon_lower"] <= m["epsilon_accountant"]
    assert m["audit_exceeds_claim"] == 0.0
    assert m["audit_canaries"] == 500 and 0 < m["audit_correct"] <= m["audit_guesses"]
    # the audit could have proved more than the claim: the bound is not capped by its size
    assert m["audit_max_provable"] > m["epsilon_accountant"]
    assert dpsgd_eps2.info["audit"]["kind"] == "white_box"
    assert dpsgd_eps2.info["audit"]["delta"] == pytest.approx(1e-5)


def test_undefended_models_get_a_large_audited_epsilon():
    clip_only = _run({**DPSGD, "noise_multiplier": 0.0})
    assert clip_only.metrics["epsilon_accountant"] == math.inf
    assert clip_only.metrics["audit_epsilon_lower"] > 3.0  # near the most 500 canaries prove
    assert "audit_exceeds_claim" in clip_only.metrics  # ∞ is never exceeded
    assert clip_only.metrics["audit_exceeds_claim"] == 0.0
    plain = _run({"kind": "none"})
    assert plain.metrics["audit_epsilon_lower"] > 1.5
    assert "audit_exceeds_claim" not in plain.metrics  # no claim to check


def test_broken_accountant_is_caught_through_the_runner(dpsgd_eps2):
    from core.attacks.audit import noise_removed

    with noise_removed():
        broken = _run({**DPSGD, "target_epsilon": 2.0})
    m = broken.metrics
    assert m["epsilon_accountant"] <= 2.0  # the accountant still claims ε ≤ 2
    assert m["audit_epsilon_lower"] > 2.0 and m["audit_exceeds_claim"] == 1.0
    assert m["audit_epsilon_lower"] > dpsgd_eps2.metrics["audit_epsilon_lower"]


def test_bonferroni_over_a_grid_lowers_each_runs_confidence_and_the_provable_epsilon():
    one = _run({**DPSGD, "noise_multiplier": 0.0})
    four = _run({**DPSGD, "noise_multiplier": 0.0}, {**AUDIT, "tests": 4})
    assert four.metrics["audit_confidence"] == pytest.approx(1 - 0.05 / 4)
    assert four.metrics["audit_max_provable"] < one.metrics["audit_max_provable"]


def test_kappa_channel_is_audited_black_box_with_the_rows_left():
    res = _run({"kind": "channel", "kappa": 4.0}, {**AUDIT, "canaries": 100})
    assert res.info["audit"]["kind"] == "black_box"
    assert res.metrics["audit_canaries"] == 100 and res.metrics["audit_epsilon_lower"] >= 0.0


def test_gradient_leakage_runner_audits_its_defense():
    from core.runs.gradient_leakage import run_gradient_leakage

    cfg = parse_config({"kind": "gradient_leakage", "data": {"name": "digits"}, "seed": 0,
                        "device": "cpu", "defense": {**DPSGD, "target_epsilon": 1.0},
                        "train": {"epochs": 1},
                        "attack": {"attackers": ["idlg"], "targets": 1, "iterations": 5,
                                   "model_inversion": False},
                        "audit": {"kind": "white_box", "canaries": 200}})
    res = run_gradient_leakage(cfg, Progress())
    m = res.metrics
    assert m["audit_canaries"] == 200 and 0.0 <= m["audit_epsilon_lower"] <= m["epsilon_accountant"]


def test_noise_multiplier_zero_is_infinite_from_config_to_compare(tmp_path):
    from cache.store import ResultStore
    from core.runs import compare as C

    cfg = parse_config({**BASE, "defense": {**DPSGD, "noise_multiplier": 0.0}})
    assert cfg.defense.target_epsilon is None
    res = run_membership(cfg, Progress())
    text = res.to_json()
    assert json.loads(text)["metrics"]["epsilon_accountant"] == "inf"  # strict JSON
    back = Result.from_parts(res.to_json_dict(), res.artifacts_npz_bytes())
    assert back.metrics["epsilon_accountant"] == math.inf
    store = ResultStore(tmp_path / "cache")
    spec = C.ComparisonSpec(
        family="membership", data="digits", utility="utility_acc",
        privacy="audit_epsilon_lower", defenses=(C.DPSGD_NO_NOISE,), seeds=(0,),
        base={k: v for k, v in BASE.items() if k in ("train", "attack")}
        | {"audit": {"canaries": 200}})
    sweeps, _ = C.comparison_sweeps(spec)
    assert [s["grid"] for _, s in sweeps] == [{}, {}]  # ε = ∞ is one point, not a grid
    assert all(s["base"]["audit"]["kind"] == "auto" and s["base"]["audit"]["tests"] == 2
               for _, s in sweeps)
    cmp = C.run_comparison(spec, store)
    clip = next(c for c in cmp.curves if c.defense == "dp_sgd")
    assert clip.name == "DP-SGD · clipping only (ε = ∞)" and clip.knob_field is None
    assert clip.budget.tolist() == [[math.inf]]
    assert np.isfinite(clip.leakage).all() and clip.leakage[0, 0] > 0.0
    d = json.loads(json.dumps(cmp.to_dict(), allow_nan=False))
    assert next(c for c in d["curves"] if c["defense"] == "dp_sgd")["budget"] == [["inf"]]


def test_a_persistent_store_never_serves_the_correct_run_for_the_broken_one(tmp_path):
    """Correct and broken (noise removed) runs of the same config in one persistent store: the
    broken run is not read from the correct run's cached result or audit stage, so it is still
    caught; and the correct run is not served the broken one's afterwards."""
    from cache.store import ResultStore
    from core.attacks.audit import noise_removed

    store = ResultStore(tmp_path / "store")
    cfg = parse_config({**BASE, "defense": {**DPSGD, "target_epsilon": 2.0}, "audit": AUDIT})
    correct = store.get_or_run(cfg)
    assert correct.metrics["audit_exceeds_claim"] == 0.0
    with noise_removed():
        broken = store.get_or_run(cfg)
    assert broken.metrics["audit_exceeds_claim"] == 1.0
    again = store.get_or_run(cfg)
    assert again.metrics["audit_epsilon_lower"] == correct.metrics["audit_epsilon_lower"]


def test_the_audited_epsilon_without_a_dp_claim_is_labelled_with_its_canary_norm():
    plain = _run({"kind": "none"}, {**AUDIT, "kind": "white_box"})
    assert plain.info["audit"]["canary_norm"] == 1.0 and not plain.info["audit"]["claimed"]
    flagged = [c for c in plain.info["caveats"] if c["key"] == "audit_canary_norm"]
    assert flagged and "C = 1" in flagged[0]["text"]
    assert flagged[0]["metrics"] == ["audit_epsilon_lower"]
    dp = _run({**DPSGD, "noise_multiplier": 0.0}, {**AUDIT, "kind": "white_box"})
    assert not [c for c in dp.info["caveats"] if c["key"] == "audit_canary_norm"]

"""The ``membership`` kind end to end on tiny settings: every defense, every attack, the
report's metrics registered, and the combination checks."""

from __future__ import annotations

import pytest

from core.config.schema import ConfigError, parse_config
from core.foundation.metric_schema import unregistered
from core.runs.experiments import run

TINY = {"kind": "membership", "data": {"name": "digits"},
        "train": {"members": 80, "epochs": 8, "batch_size": 32},
        "attack": {"shadows": 4, "rmia_references": 2}}


def _run(**over):
    return run({**TINY, **over})


def test_undefended_target_leaks_and_every_metric_is_registered():
    r = _run(train={**TINY["train"], "epochs": 40},
             attack={**TINY["attack"], "attackers": ["loss", "confidence", "entropy",
                                                     "lira_offline", "lira_online", "rmia"]})
    m = r.metrics
    assert m["members"] == m["nonmembers"] == 80
    assert m["train_test_gap"] > 0  # an overfit target: what membership inference feeds on
    # the strongest attack reads membership (0.62-0.67 over seeds 0-4); online LiRA alone is
    # noisy with 4 shadows (2 IN, 2 OUT per row: 0.50-0.63 over the same seeds)
    assert m["mia_auc_best"] > 0.6 and m["mia_auc_best"] >= m["mia_loss_auc"]
    assert m["mia_lira_online_auc"] > 0.45
    lo, hi = r.interval("mia_loss_auc")
    assert lo <= m["mia_loss_auc"] <= hi
    assert unregistered(m) == []
    assert r.artifacts["roc_rmia_fpr"].shape == r.artifacts["roc_rmia_tpr"].shape
    assert any("0.1 % FPR" in n and "not meaningful" in n for n in r.info["notes"])


@pytest.mark.parametrize("defense", [
    {"kind": "inf2guard", "tradeoff_lambda": 0.5},
    {"kind": "dp_sgd", "noise_multiplier": 1.0},
    {"kind": "channel", "kappa": 8.0},
])
def test_each_defense_runs_with_shadows_trained_the_same_way(defense):
    attackers = ["loss", "lira_offline", "rmia"] + (
        ["representation", "in_training"] if defense["kind"] == "inf2guard" else [])
    r = _run(defense=defense, attack={**TINY["attack"], "attackers": attackers})
    for a in attackers:
        assert 0.0 <= r.metrics[f"mia_{a}_auc"] <= 1.0
    if defense["kind"] == "inf2guard":
        m = r.metrics  # Theorem 1: the tight form is never looser than the paper's
        assert 0.5 <= m["bound_mia_exact"] <= m["bound_mia_paper"] <= 1.0
    if defense["kind"] == "dp_sgd":
        assert r.metrics["epsilon_accountant"] > 0 and r.info["accountant"] in ("prv", "rdp")
    assert unregistered(r.metrics) == []


def test_invalid_settings_give_one_line_errors():
    for patch, expected in (
        ({"attack": {"shadows": 3}}, "attack.shadows: got 3; must be even"),
        ({"attack": {"shadows": 4, "rmia_references": 3}}, "attack.rmia_references: got 3"),
        ({"attack": {"attackers": ["representation"]}}, "attack.attackers: 'representation'"),
        ({"defense": {"kind": "inf2guard", "tradeoff_lambda": -0.1}},
         "defense.tradeoff_lambda: got -0.1"),
        ({"defense": {"kind": "pruning"}}, "defense.kind: got 'pruning'"),
    ):
        with pytest.raises(ConfigError) as exc:
            parse_config({"kind": "membership", **patch})
        assert str(exc.value).startswith(expected) and "\n" not in str(exc.value), str(exc.value)
    with pytest.raises(ValueError, match="train.members: got 2000; at most"):
        run({**TINY, "train": {"members": 2000}})


def test_target_and_shadows_are_stages_and_pooled_targets_score_thousands():
    from core.foundation.stages import MemoryStageStore

    store = MemoryStageStore()
    base = {**TINY, "attack": {"shadows": 6, "rmia_references": 1,
                               "attackers": ["loss", "lira_offline"]}}
    first = run(base, stages=store)
    assert first.info["stages"] == {"target": "computed", "shadows": "computed",
                                    "projection": "computed"}
    assert first.info["scored"]["lira_offline"] == [80, 80]
    # another attack and pooling over 4 target models: nothing retrains
    again = run({**base, "attack": {**base["attack"], "targets": 4,
                                    "attackers": ["loss", "lira_online", "rmia"]}}, stages=store)
    assert set(again.info["stages"].values()) == {"hit"}
    n_mem, n_non = again.info["scored"]["lira_online"]
    # balanced; each shadow target holds about half the pool (3 of 6 shadows per row: the
    # pooled member count is 314 at the median over seeds, 292 at the 0.1 % quantile)
    assert n_mem == n_non and 4 * 80 - 30 <= n_mem <= 4 * 80
    assert again.info["scored"]["rmia"] == again.info["scored"]["lira_online"]
    assert again.metrics["mia_loss_auc"] != first.metrics["mia_loss_auc"]  # 4× the rows scored
    assert any("pooled over 4 target models" in n for n in again.info["notes"])
    # the release projected and coloured by membership
    emb, mem = again.artifacts["proj_release"], again.artifacts["proj_member"]
    assert emb.shape == (160, 2) and mem.sum() == 80


def test_pooled_targets_are_validated():
    for patch, expected in (
        ({"shadows": 4, "targets": 6}, "attack.targets: got 6; allowed range 1 <= value <= 5 (shadows + 1)"),
        ({"shadows": 4, "targets": 2, "rmia_references": 2, "attackers": ["rmia"]},
         "attack.rmia_references: got 2"),
    ):
        with pytest.raises(ConfigError) as exc:
            parse_config({"kind": "membership", "attack": patch})
        assert str(exc.value).startswith(expected) and "\n" not in str(exc.value), str(exc.value)


def test_pooled_lira_is_not_biased_by_unequal_in_out_counts():
    """A shadow target leaves its members K/2 − 1 IN models and its non-members K/2: with no
    membership signal at all, pooled LiRA must still sit at chance (it read 0.42 before every
    row got equal counts)."""
    import numpy as np

    from core.attacks.membership import MembershipRelease, membership_report
    from core.attacks.protocol import run_attack
    from core.engine.shadow_training import shadow_splits

    rng = np.random.default_rng(0)
    n = 6000
    ins = shadow_splits(n, 4, seed=1)  # (K, n)
    probs = rng.uniform(0.05, 0.95, size=(n, 4))  # no model has learned anything
    # shadow 0 as a pooled target against the other three, as the runner scores it
    release = MembershipRelease(p_true=probs[:, 0], shadow_p=probs, shadow_in=ins.T)
    shadow_target = release.shadow_as_target(0)
    for name in ("lira_offline", "lira_online"):
        sc = run_attack(name, shadow_target, None, family="membership").member_scores()
        auc = membership_report(sc, ins[0], seed=0)["auc"]
        assert abs(auc - 0.5) < 0.03, (name, auc)


def test_projection_can_be_switched_off_and_comparisons_do():
    from core.runs.compare import ComparisonSpec, DefenseSpec, comparison_sweeps

    r = _run(attack={**TINY["attack"], "attackers": ["loss"]}, projection_points=0)
    assert "proj_release" not in r.artifacts and "projection" not in r.info["stages"]
    sweeps, _ = comparison_sweeps(ComparisonSpec(
        family="membership", data="digits", utility="utility_acc", privacy="mia_auc_best",
        defenses=(DefenseSpec.of("inf2guard", (0.0,)),), seeds=(0,)))
    assert all(sw["base"]["projection_points"] == 0 for _, sw in sweeps)


def test_noise_multiplier_zero_is_epsilon_infinity_end_to_end(tmp_path):
    """Clipping without noise: config → run → Result → store → a fresh store's read, ε = ∞
    all the way (strict JSON carries it as "inf")."""
    import json
    import math

    from cache.store import ResultStore
    from core.foundation.metric_schema import infinite_ok

    cfg = {**TINY, "defense": {"kind": "dp_sgd", "noise_multiplier": 0, "epochs": 5},
           "attack": {**TINY["attack"], "attackers": ["loss"]}, "projection_points": 0}
    parsed = parse_config(cfg)
    assert parsed.defense.noise_multiplier == 0.0 and parsed.defense.target_epsilon is None
    r = ResultStore(tmp_path / "cache").get_or_run(cfg)
    assert r.metrics["epsilon_accountant"] == math.inf and r.info["accountant"] == "none"
    assert r.metrics["dp_noise_multiplier"] == 0.0 and infinite_ok("epsilon_accountant")
    text = json.dumps(r.to_json_dict(), allow_nan=False)  # strict JSON
    assert json.loads(text)["metrics"]["epsilon_accountant"] == "inf"
    back = ResultStore(tmp_path / "cache").get(r.key)
    assert back is not None and back.metrics["epsilon_accountant"] == math.inf
    listed = ResultStore(tmp_path / "cache").list(kind="membership")
    assert [rec.metrics["epsilon_accountant"] for rec in listed] == [math.inf]


def test_batched_plain_shadows_answer_as_one_model_each():
    import numpy as np
    import torch

    from core.defenses.central import build_plain
    from core.models.nn import image_classifier

    class Train:
        epochs, batch_size, lr, optimizer = 2, 16, 1e-2, "adam"

    g = torch.Generator().manual_seed(0)
    X, y = torch.rand(40, 64, generator=g), torch.randint(0, 10, (40,), generator=g)
    in_mask = np.zeros((4, 40), bool)
    in_mask[[0, 2], :20] = in_mask[[1, 3], 20:] = True
    many = build_plain(None, image_shape=(1, 8, 8), train=Train()).train_many(
        lambda: image_classifier("mlp", (1, 8, 8), 10), X, y, in_mask, seed=0)
    probs = many.probs(X)
    assert probs.shape == (4, 40, 10) and torch.allclose(probs.sum(-1), torch.ones(4, 40))
    assert torch.allclose(many(X, y), probs.gather(2, y.view(1, -1, 1).expand(4, -1, 1))[..., 0],
                          atol=1e-6)
    for k in range(4):  # one model's query interface gives that model's probabilities
        assert torch.allclose(many.predictor(k)(X), probs[k], atol=1e-5)

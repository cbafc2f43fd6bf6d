"""Registered parts, combination checks, stored-config migration and the stage store."""

from __future__ import annotations

import numpy as np
import pytest

from core.config.migrations import migrate
from core.config.schema import ConfigError, parse_config
from core.foundation.knowledge import ThreatModel
from core.foundation.parts import ATTACKS, DEFENSES, AttackPart, applicable_attacks
from core.foundation.registry import Registry, UnknownName
from core.foundation.stages import MemoryStageStore, StageOutput, Stages, stage_key

# -- registry -----------------------------------------------------------------------------------


def test_registry_round_trip_and_errors():
    reg: Registry[int] = Registry("widget")
    reg.register("a", 1)

    @reg.register("b")
    def _b():  # decorator form
        return 2

    assert reg.get("a") == 1 and reg.get("b")() == 2 and list(reg) == ["a", "b"] and "a" in reg
    with pytest.raises(UnknownName) as exc:
        reg.get("zzz")
    assert str(exc.value) == "widget: got 'zzz'; allowed: a, b"
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a", 3)
    reg.unregister("a")
    assert reg.names() == ("b",)


def test_every_defense_declares_release_knob_and_accounting():
    for part in DEFENSES.values():
        assert part.release.main in ("representation", "model", "update")
        assert all(part.builder_for(f).count(":") == 1 for f in part.families)
        if part.knob is not None:
            assert part.knob.low < part.knob.high and part.knob.scale in ("linear", "log")
    assert DEFENSES.get("dp_gaussian").accounting == "rdp"
    assert DEFENSES.get("tappfl").knob.field == "tradeoff_lambda"
    assert DEFENSES.get("none").knob is None
    for part in ATTACKS.values():
        assert isinstance(part.threat, ThreatModel) and part.threat.sees and part.threat.goal
    assert {"logreg", "mlp", "in_training"} <= set(applicable_attacks("representation"))


def test_combination_check_rejects_an_attack_of_another_release():
    ATTACKS.register("loss_threshold_test", AttackPart(
        name="loss_threshold_test", title="t", accepts=("model",),
        threat=ThreatModel("losses", "nothing", "membership"), function="x:y", fresh=True))
    try:
        with pytest.raises(ConfigError) as exc:
            parse_config({"kind": "attribute_privacy", "attack": {"attackers": ["loss_threshold_test"]}})
        msg = str(exc.value)
        assert msg.startswith("attack.attackers: 'loss_threshold_test' attacks model releases")
        assert "\n" not in msg and "releases representations" in msg
    finally:
        ATTACKS.unregister("loss_threshold_test")


def test_defense_builders_apply_only_their_parameters():
    from core.config.schema import FedAvgSpec
    from core.defenses.federated import build_defense

    cfg = parse_config({"kind": "attribute_privacy", "defense": {"kind": "dp_gaussian", "epsilon": 4.0}})
    d = build_defense(cfg.defense, FedAvgSpec(rounds=3))
    assert d.tradeoff_lambda == 0.0 and d.upload_transform is not None
    assert d.info["accountant"] == "rdp" and d.metrics["epsilon_accountant"] > 4.0
    t = build_defense(parse_config({"kind": "attribute_privacy"}).defense, FedAvgSpec())
    assert t.tradeoff_lambda == 0.5 and t.upload_transform is None


# -- migration of stored configs ----------------------------------------------------------------

V1 = {"kind": "tappfl", "seed": 3, "defense": "pruning", "tradeoff_lambda": 0.5, "pruning_rate": 0.7,
      "pruning_target": "update", "dp": {"epsilon": 1.0, "delta": 1e-5, "clip_norm": 1.0},
      "utility_epochs": 30, "fl": {"rounds": 2}}


def test_old_stored_config_loads_through_the_migration():
    notes: list[str] = []
    cfg = parse_config(V1, notes)
    assert cfg.kind == "attribute_privacy" and cfg.seed == 3 and cfg.fl.rounds == 2
    assert cfg.defense.kind == "pruning" and cfg.defense.rate == 0.7 and cfg.defense.target == "update"
    text = " | ".join(notes)
    assert "utility_epochs" in text and "'tappfl' is now 'attribute_privacy'" in text
    assert "dropped" in text and "tradeoff_lambda" in text  # λ is not a pruning parameter


def test_migration_is_idempotent_and_keeps_v1_set_paths():
    new, _ = migrate(V1)
    again, notes2 = migrate(new)
    assert again == new and notes2 == []
    # the README's old override path on a new-shape file
    cfg = parse_config({"kind": "attribute_privacy", "defense": {"kind": "tappfl"}, "tradeoff_lambda": 0.75})
    assert cfg.defense.tradeoff_lambda == 0.75
    for defense in ("none", "tappfl", "dp_gaussian", "dp_laplace", "pruning"):
        assert parse_config({**V1, "defense": defense}).defense.kind == defense


# -- stages -------------------------------------------------------------------------------------


def test_stages_compute_once_and_key_on_their_part():
    calls = []

    def compute():
        calls.append(1)
        return StageOutput(arrays={"a": np.arange(3)}, meta={"x": 1})

    st = Stages(MemoryStageStore())
    _, k1 = st.get("train", {"p": 1}, compute)
    _, k2 = st.get("train", {"p": 1}, compute)
    assert len(calls) == 1 and k1 == k2 and st.log["train"] == "hit"
    st.get("train", {"p": 2}, compute)
    assert len(calls) == 2 and stage_key("train", {"p": 1}) != stage_key("attack", {"p": 1})


def test_dir_stage_store_round_trip_with_weights(tmp_path):
    import torch

    from cache.stages import DirStageStore

    store = DirStageStore(tmp_path)
    w = {"enc": {"weight": torch.arange(6.0).reshape(2, 3)}}
    store.save("train", "ab" * 32, StageOutput({"p": np.ones((2, 2))}, {"m": [1, 2]}, w))
    got = store.load("train", "ab" * 32)
    assert got.meta == {"m": [1, 2]} and np.array_equal(got.arrays["p"], np.ones((2, 2)))
    assert torch.equal(got.weights["enc"]["weight"], w["enc"]["weight"])
    # a corrupt entry is a miss, never served, and is removed
    (tmp_path / "train" / "ab" / ("ab" * 32) / "arrays.npz").write_bytes(b"garbage")
    assert store.load("train", "ab" * 32) is None
    assert store.load("train", "cd" * 32) is None


def test_defense_part_groups_its_concerns():
    """At most 12 fields (the page's and the paper's concerns in typed groups), and a
    declaration in the first, flat keywords reads the same as the grouped one."""
    import dataclasses

    from core.foundation.parts import Control, DefensePart, PageSpec, Releases

    assert len(dataclasses.fields(DefensePart)) <= 12
    common = {"name": "x", "title": "x", "families": ("membership",), "knob": None,
              "accounting": None, "builder": "core.catalog.relaxloss:build_relaxloss"}
    flat = DefensePart(**common, release="model", order=5, controls=(Control("alpha"),),
                       extra_releases=(("membership", "representation"),))
    grouped = DefensePart(**common, page=PageSpec(order=5, controls=(Control("alpha"),)),
                          release=Releases("model", extra=(("membership", "representation"),)))
    assert flat == grouped and flat.releases_for("membership") == ("model", "representation")
    with pytest.raises(TypeError, match="unknown keyword 'colour'"):
        DefensePart(**common, release="model", colour="red")

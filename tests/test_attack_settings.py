"""Attack settings belong to the attack (DESIGN: Architecture): each attack declares its
settings block with ranges in its own catalog module, the family's attack config carries every
block (:func:`core.config.schema.attack_spec`), and the chosen attacks' settings are validated by
their declarations before anything trains."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from benchmarks import registry_bench as R
from core.attacks.membership import MembershipScores
from core.attacks.protocol import attack_params
from core.config.schema import ConfigError, MembershipAttackSpec, parse_config
from core.foundation.knowledge import ThreatModel
from core.foundation.parts import ATTACKS, AttackPart, attack_by_config_name

TINY = {"kind": "membership", "data": {"name": "digits"},
        "train": {"members": 40, "epochs": 1}, "attack": {"shadows": 4, "rmia_references": 1}}


def _squared_confidence(release, knowledge=None, **_):
    """p_y²: a score no registered attack computes (the registry refuses a twin)."""
    return MembershipScores(np.asarray(release.p_true) ** 2)


@contextlib.contextmanager
def _temporary(**kw):
    part = AttackPart(name="mia_tmp_setting", title="temporary", accepts=("model",),
                      threat=ThreatModel(sees="-", knows="-", goal="-"),
                      function=_squared_confidence, family="membership",
                      config_name="tmp_setting", **kw)
    ATTACKS.register(part.name, part)
    try:
        yield part
    finally:
        ATTACKS.unregister(part.name)


def test_no_attack_setting_is_declared_outside_its_attack_module():
    assert R.attack_settings_outside_attack_modules() == []
    rmia = attack_by_config_name("membership", "rmia")
    assert rmia.settings.__module__ == "core.catalog.membership_attacks"
    assert set(rmia.settings.model_fields) <= set(MembershipAttackSpec.model_fields)


def test_the_counter_sees_a_setting_named_outside_the_attack():
    with _temporary(params=("shadows",)):
        assert R.attack_settings_outside_attack_modules() == ["mia_tmp_setting: shadows"]


def test_a_setting_the_config_does_not_carry_fails_at_validation():
    with _temporary(params=("temperature",)):
        cfg = {**TINY, "attack": {**TINY["attack"], "attackers": ["loss", "tmp_setting"]}}
        with pytest.raises(ConfigError) as exc:
            parse_config(cfg)
    msg = str(exc.value)
    assert "attack.temperature" in msg and "tmp_setting" in msg and "\n" not in msg


def test_an_attack_block_checks_its_range_and_reaches_the_attack():
    with pytest.raises(ConfigError, match="rmia_a"):
        parse_config({**TINY, "attack": {**TINY["attack"], "rmia_a": 2.0}})
    cfg = parse_config({**TINY, "attack": {**TINY["attack"], "rmia_a": 0.5}})
    assert attack_params(attack_by_config_name("membership", "rmia"), cfg.attack) == \
        {"rmia_references": 1, "rmia_a": 0.5}
    assert attack_params(attack_by_config_name("membership", "loss"), cfg.attack) == {}

"""The representation membership attacks (head statistic, representation LiRA) as registered
parts: in the config's allowed attackers, the metric schema and the Membership page's list,
and run end to end on a tiny Inf2Guard config with the shadow-encoder stage."""

from __future__ import annotations

import pytest

from core.config.schema import MEMBERSHIP_ATTACKS, ConfigError, parse_config
from core.foundation.metric_schema import unregistered
from core.foundation.parts import attack_titles, attacks_for, check_combination
from core.runs.experiments import run
from tests.test_pages import open_page, store  # noqa: F401  (fixture)

NEW = ("representation_head", "representation_lira")
TINY = {"kind": "membership", "data": {"name": "digits"}, "projection_points": 0,
        "train": {"members": 60, "epochs": 6, "batch_size": 32},
        "defense": {"kind": "inf2guard", "tradeoff_lambda": 0.0},
        "attack": {"shadows": 4, "rmia_references": 1,
                   "attackers": ["lira_online", *NEW]}}


def test_registered_in_config_schema_and_page_list():
    for a in NEW:
        assert a in MEMBERSHIP_ATTACKS
        assert a in attack_titles("membership")
        assert f"mia_{a}" in [p.name for p in attacks_for("membership")]
        assert unregistered({f"mia_{a}_auc": 0.5, f"mia_{a}_epsilon_lower_bound": 0.0}) == []
    check_combination("membership", "inf2guard", NEW)
    with pytest.raises(ValueError, match="representation"):
        check_combination("membership", "none", ["representation_lira"])
    with pytest.raises(ConfigError):
        parse_config({**TINY, "defense": {"kind": "none"}})


def test_tiny_inf2guard_run_scores_both_from_the_shadow_encoder_stage():
    r = run(TINY)
    m = r.metrics
    for a in NEW:
        assert 0.0 <= m[f"mia_{a}_auc"] <= 1.0
        lo, hi = r.interval(f"mia_{a}_auc")
        assert lo <= m[f"mia_{a}_auc"] <= hi
    # the shadow encoders served LiRA on the model too (one training of the K shadows)
    assert 0.0 <= m["mia_lira_online_auc"] <= 1.0
    assert "shadow_representations" in r.info["stages"]
    assert "shadows" not in r.info["stages"]
    assert unregistered(m) == []


def test_membership_page_offers_them_for_inf2guard_with_the_recipe(store):  # noqa: F811
    from core.foundation.parts import ATTACKS

    at = open_page("views/membership.py")
    titles = attack_titles("membership")
    assert all(titles[a] not in at.multiselect(key="mi_attackers").options for a in NEW)
    at.selectbox(key="mi_defense").set_value("inf2guard").run()
    assert not at.exception
    assert all(titles[a] in at.multiselect(key="mi_attackers").options for a in NEW)
    # the recipe is stated on the attack's threat card (shown on the page)
    assert "16 shadows" in ATTACKS.get("mia_representation_lira").threat.knows

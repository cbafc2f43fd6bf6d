"""The registry refuses a second attack that computes an existing one's score: a family
may declare a small seeded self-test input (:attr:`core.foundation.parts.Family.self_test`), and an attack
registered after the catalog is compared on it with every attack of its family."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from core.attacks.membership import MembershipScores
from core.foundation.parts import ATTACKS, FAMILIES, attacks_for, same_score_as, self_test_scores


def test_the_catalog_has_no_two_attacks_with_one_score():
    for family, least in (("membership", 7), ("attribute_privacy", 4)):
        computed = [a for a in attacks_for(family) if self_test_scores(a) is not None]
        assert len(computed) >= least, [a.name for a in computed]
    for fam in FAMILIES.values():
        if fam.self_test is not None:
            assert {a.name: same_score_as(a) for a in attacks_for(fam.name)} == \
                {a.name: None for a in attacks_for(fam.name)}


def test_a_twin_of_an_existing_attack_is_refused():
    twin = replace(ATTACKS.get("mia_loss"), name="mia_loss_again", config_name="loss_again",
                   title="loss again")
    with pytest.raises(ValueError) as exc:
        ATTACKS.register(twin.name, twin)
    assert "'mia_loss'" in str(exc.value) and "\n" not in str(exc.value)
    assert twin.name not in ATTACKS


def _root_confidence(release, knowledge=None, **_):
    """√p_y: ranks as the confidence attack does, but another score."""
    return MembershipScores(np.sqrt(release.p_true))


def test_a_new_score_is_accepted():
    new = replace(ATTACKS.get("mia_loss"), name="mia_root", config_name="root",
                  title="root confidence", function=_root_confidence)
    ATTACKS.register(new.name, new)
    try:
        assert new.name in ATTACKS
    finally:
        ATTACKS.unregister(new.name)

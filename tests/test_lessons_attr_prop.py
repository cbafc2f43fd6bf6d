"""The Attribute and Property pages' lessons are generated from stored results (issue #20):
every number in the sentence comes from the Results given, none is typed in."""

from __future__ import annotations

from types import SimpleNamespace

from core.runs.attribute_privacy import teaching_lesson
from core.runs.property import fresh_attacker_finding


def _r(metrics, intervals=None, info=None):
    return SimpleNamespace(metrics=metrics, intervals=intervals or {}, info=info or {})


def _iv(lo, hi):
    return {"lo": lo, "hi": hi, "n": 100}


def test_attribute_lesson_reads_both_ends_and_says_whether_the_move_beats_the_intervals():
    a = _r({"attack_auc_best": 0.93, "attack_in_training_bacc": 0.66, "utility_acc": 0.95,
            "chance": 0.5}, {"attack_auc_best": _iv(0.91, 0.95),
                             "attack_in_training_bacc": _iv(0.61, 0.69)})
    b = _r({"attack_auc_best": 0.71, "attack_in_training_bacc": 0.50, "utility_acc": 0.90,
            "chance": 0.5}, {"attack_auc_best": _iv(0.66, 0.76)}, {"best_attacker": "mlp"})
    out = teaching_lesson({0.0: a, 0.5: None, 1.0: b}, "λ")
    assert out["beyond_intervals"] and out["auc"] == [0.93, 0.71]
    for s in ("0.93 [0.91, 0.95]", "0.71 [0.66, 0.76]", "0.950", "0.900", "from 0 to 1", "mlp"):
        assert s in out["text"], s
    b.metrics["attack_auc_best"], b.intervals["attack_auc_best"] = 0.92, _iv(0.90, 0.94)
    out = teaching_lesson({0.0: a, 1.0: b}, "λ")
    assert not out["beyond_intervals"] and "within" in out["text"]
    assert "fools the adversary it trains against" in out["text"]  # Ψ fell, the AUC did not
    assert teaching_lesson({0.0: a}, "λ") is None


def test_property_finding_says_when_the_defense_makes_fresh_attackers_stronger():
    r0 = _r({"property_mlp_acc": 0.31, "utility_acc": 0.95},
            {"property_mlp_acc": _iv(0.26, 0.37)})
    r1 = _r({"property_mlp_acc": 0.50, "utility_acc": 0.93},
            {"property_mlp_acc": _iv(0.44, 0.56)})
    out = fresh_attacker_finding({0.0: r0, 0.75: r1}, "mlp")
    assert out["kind"] == "stronger_with_defense" and out["lambda"] == 0.75
    assert out["beyond_intervals"]
    for s in ("0.50 [0.44, 0.56]", "0.31 [0.26, 0.37]", "0.950", "0.930", "easier"):
        assert s in out["text"], s
    r1.metrics["property_mlp_acc"], r1.intervals["property_mlp_acc"] = 0.33, _iv(0.28, 0.38)
    out = fresh_attacker_finding({0.0: r0, 0.75: r1}, "mlp")
    assert out["kind"] == "no_effect_on_fresh" and "overlap" in out["text"]
    assert "easier" not in out["text"]
    r1.metrics["property_mlp_acc"] = 0.25
    out = fresh_attacker_finding({0.0: r0, 0.75: r1}, "mlp")
    assert out["kind"] == "defended" and "easier" not in out["text"]
    assert fresh_attacker_finding({0.75: r1}, "mlp") is None  # no λ = 0 point: no finding

"""The Property benchmark's fresh-attacker finding is generated from stored results: every
number in the sentence comes from the Results given, none is typed in."""

from __future__ import annotations

from types import SimpleNamespace

from core.runs.property import fresh_attacker_finding


def _r(metrics, intervals=None, info=None):
    return SimpleNamespace(metrics=metrics, intervals=intervals or {}, info=info or {})


def _iv(lo, hi):
    return {"lo": lo, "hi": hi, "n": 100}


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

"""The defense advisor (core.report.advisor): synthetic comparisons with hand-worked answers
(tests/advisor_cases.py), its one-line boundary errors, a comparison read from a store, and
the Compare page's Advisor panel through AppTest."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from core.report import advisor as A
from core.runs import compare as C

sys.path.insert(0, str(Path(__file__).parent))

from advisor_cases import CASES, comparison, rows, run_case


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_preset_cases(case):
    advice = run_case(case)
    section = advice.report_section()
    assert set(section) == {"title", "sentences", "rows", "figure"}
    assert section["sentences"] == [advice.sentence] and "\n" not in advice.sentence
    assert all(isinstance(v, str | float | int) for r in section["rows"] for v in r.values())
    json.dumps(advice.to_dict())  # plain JSON for the benchmark and bundles


def test_privacy_direction_and_range_are_read_from_the_schema_fields(monkeypatch):
    """The advisor reads a metric's typed direction and span, never its description's words: a
    ``neither`` metric whose prose says "lower = leakier" is no privacy metric, and a spec's
    span decides its range whatever its description says."""
    from dataclasses import replace

    from core.foundation import metric_schema as S

    assert A.higher_is_private("recon_best_mse") and not A.higher_is_private("mia_loss_auc")
    assert A.metric_range("train_test_gap") == (-1.0, 1.0)
    assert A.metric_range("mia_loss_adv") == (0.0, 1.0)
    specs = {"prose_mse": S.MetricSpec("prose_mse", "MSE minus nothing (lower = leakier)",
                                       "fraction", "neither"),
             "typed_gap": S.MetricSpec("typed_gap", "a gap", "fraction", "leakage",
                                       span=(-1.0, 1.0))}
    monkeypatch.setattr(S, "_REGISTRY", {**S._REGISTRY, **specs})
    with pytest.raises(ValueError, match="of direction 'neither'"):
        A.higher_is_private("prose_mse")
    assert A.metric_range("prose_mse") == (0.0, 1.0)
    assert A.metric_range("typed_gap") == (-1.0, 1.0)
    monkeypatch.setitem(S._REGISTRY, "prose_mse", replace(specs["prose_mse"],
                                                          direction="protection"))
    assert A.higher_is_private("prose_mse")


def test_at_least_three_presets_cover_the_issue():
    names = {c.name for c in CASES}
    assert len(CASES) >= 3
    assert {"no defense reaches the level", "runner-up within seed noise",
            "missing points to run"} <= names


def test_the_chosen_point_is_the_most_useful_point_meeting_both():
    """Against a brute force over the seed-mean points (not the advisor's own code path)."""
    cmp, _, _ = CASES[0].build()
    for level in (0.53, 0.59, 0.61, 0.66, 0.71):
        for share in (0.0, 0.5, 0.9):
            a = A.advise(cmp, threat=A.Threat("membership", "mia_auc_best", level),
                         floor=A.Floor(share))
            ok = [(u, n, k) for n, k, u, p in cmp.points() if p <= level and u >= a.floor_utility]
            if not ok:
                assert a.chosen is None and a.status != "met"
                continue
            u, n, _ = max(ok)
            assert (a.chosen.curve, a.chosen.utility) == (n, u)
            assert a.runner_up is None or a.runner_up.curve != a.chosen.curve


@pytest.mark.parametrize("make, message", [
    (lambda: A.Threat("membership", "mia_auc_best", 1.5),
     "threat.level: got 1.5; allowed range 0 <= value <= 1"),
    (lambda: A.Threat("membership", "mia_auc_best", float("nan")), "threat.level: got nan"),
    (lambda: A.Threat("membership", "utility_acc", 0.5),
     "threat.metric: got 'utility_acc', a metric of direction 'utility'"),
    (lambda: A.Threat("membership", "no_such_metric", 0.5), "unknown metric 'no_such_metric'"),
    (lambda: A.Threat("nope", "mia_auc_best", 0.5), "threat.family: got 'nope'; allowed:"),
    (lambda: A.Floor(1.2), "floor: got 1.2; allowed range 0 <= value <= 1"),
    (lambda: A.Floor(-0.1), "floor: got -0.1; allowed range 0 <= value <= 1"),
    (lambda: A.Floor(math.inf, share=False), "floor: got inf"),
])
def test_boundary_errors_are_one_line_naming_the_field(make, message):
    with pytest.raises(ValueError) as err:
        make()
    assert message in str(err.value) and "\n" not in str(err.value)


def test_advise_refuses_a_threat_or_floor_that_does_not_fit_the_comparison():
    cmp, threat, _ = CASES[0].build()
    with pytest.raises(ValueError, match=r"^threat.family: got 'gradient_leakage'; this "
                                         r"comparison is of 'membership'$"):
        A.advise(cmp, threat=A.Threat("gradient_leakage", "recon_best_psnr_median", 20.0),
                 floor=A.Floor(0.5))
    with pytest.raises(ValueError, match="threat.metric: got 'mia_loss_auc'; this comparison "
                                         "measures 'mia_auc_best'"):
        A.advise(cmp, threat=A.Threat("membership", "mia_loss_auc", 0.6), floor=A.Floor(0.5))
    with pytest.raises(ValueError, match=r"floor: got 1.5; allowed range 0 <= value <= 1"):
        A.advise(cmp, threat=threat, floor=A.Floor(1.5, share=False))
    # a share needs the undefended utility
    cmp.curves = cmp.defended
    with pytest.raises(ValueError, match="floor: a share needs the undefended utility"):
        A.advise(cmp, threat=threat, floor=A.Floor(0.5))
    assert A.advise(cmp, threat=threat, floor=A.Floor(0.7, share=False)).status == "met"


def test_one_seed_has_no_paired_test():
    from advisor_cases import DP, I2G, SEEDS

    cmp = comparison([(DP, (1, 8), rows(.5, .86), rows(.52, .58)),
                      (I2G, (.5, .9), rows(.84, .81), rows(.62, .59))], ([[.9] * 3], rows(.7)))
    for c in cmp.curves:  # keep seed 0 only
        c.seeds, c.utility, c.leakage = [SEEDS[0]], c.utility[:, :1], c.leakage[:, :1]
    a = A.advise(cmp, threat=A.Threat("membership", "mia_auc_best", 0.6), floor=A.Floor(0.5))
    assert a.test.seeds == 1 and not a.test.significant
    assert "rests on 1 shared seed: no paired test" in a.sentence


def test_default_threat_sits_between_the_undefended_point_and_chance():
    cmp, _, _ = CASES[0].build()
    t = A.default_threat(cmp)
    assert t.metric == "mia_auc_best" and t.level == round(0.70 - 0.25 * (0.70 - 0.5), 2)


# ---------------------------------------------------------------------------------------------
# a comparison read from a store (its points stored by the page tests' stand-in runner through
# the real store and sweep runner: nothing trains)


@pytest.fixture
def store(tmp_path, monkeypatch):
    from cache.store import default_store

    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    return default_store()


def test_advice_on_a_comparison_read_from_a_store(store):
    from test_compare_page import populate, tiny_preset

    spec = tiny_preset()
    populate(store, spec)
    cmp = C.read_comparison(spec, store)
    threat = A.default_threat(cmp)
    advice = A.advise(cmp, threat=threat, floor=A.Floor(0.8))
    # every number of the answer is a stored point's seed mean
    pts = {(n, k): (u, p) for n, k, u, p in cmp.points()}
    assert advice.status == "met"
    u, p = pts[(advice.chosen.curve, advice.chosen.knob)]
    assert (advice.chosen.utility, advice.chosen.privacy) == (u, p) and p <= threat.level
    best = max(u for (n, k), (u, p) in pts.items()
               if p <= threat.level and u >= advice.floor_utility)
    assert advice.chosen.utility == best
    assert f"{advice.chosen.utility:.3f}" in advice.sentence
    if advice.missing is not None:  # the job reads back as a comparison of the same family
        sweeps, _ = C.comparison_sweeps(advice.missing)
        assert all(s["seeds"] == list(spec.seeds) for _, s in sweeps)


# ---------------------------------------------------------------------------------------------
# the Compare page's panel


def test_compare_page_advisor_panel(store, monkeypatch):
    from test_compare_page import chart, open_page, populate, tiny_preset

    from dashboard.base.format import display_name

    monkeypatch.setattr(C, "PRESETS", {"teaching: tiny": tiny_preset, **C.PRESETS})
    populate(store, tiny_preset())
    n_runs = len(store.list())
    at = open_page("views/compare.py")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "Advisor" in [s.value for s in at.subheader]
    said = " ".join(m.value for m in [*at.success, *at.warning])
    assert said.startswith("Threat: ") and "floor:" in said, said
    # the stand-in runner's utility falls fast: a floor of 80 % of the undefended one
    at.text_input(key="adv_floor__text").set_value("0.8").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    said = " ".join(m.value for m in at.success)
    assert said.startswith("Threat: ") and " Use " in said and "Runner-up: " in said, said
    fig = chart(at, "cmp_plane")
    roles = [t["name"] for t in fig["data"] if t.get("name", "").startswith("advisor: ")]
    assert roles and roles[0] == "advisor: chosen", roles
    assert any("threat level" in str(a.get("text", "")) for a in fig["layout"]["annotations"])
    assert at.button(key="adv_run") is not None
    # a level no point reaches: the panel says so, and the closest point is ringed
    at.text_input(key="adv_level__text").set_value("0.3").run()
    assert not at.exception
    said = " ".join(m.value for m in at.warning)
    assert "No setting reaches the level" in said, said
    roles = [t["name"] for t in chart(at, "cmp_plane")["data"]
             if t.get("name", "").startswith("advisor: ")]
    assert roles == ["advisor: closest"], roles
    # an out-of-range floor: one line naming it; the plane stays, without picks
    at.text_input(key="adv_floor__text").set_value("1.5").run()
    assert not at.exception
    errs = [e.value for e in at.error]
    assert any(e.startswith("floor: got '1.5'; allowed range 0 <= value <= 1") for e in errs), errs
    assert chart(at, "cmp_plane") is not None
    # an absolute floor: the box turns to 90 % of the undefended utility, in its units
    at.radio(key="adv_floor_kind").set_value("absolute utility").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    base = C.read_comparison(tiny_preset(), store).undefended.utility_mean[0]
    assert abs(float(at.text_input(key="adv_floor__text").value) - 0.9 * base) <= 5e-4 + 1e-12
    # another threat metric switches the page's privacy metric (plane and advice agree)
    at.selectbox(key="adv_metric").set_value("mia_loss_auc").run()
    assert not at.exception
    assert at.selectbox(key="cmp_privacy").value == "mia_loss_auc"
    fig = chart(at, "cmp_plane")
    assert fig["layout"]["yaxis"]["title"]["text"].startswith(display_name("mia_loss_auc"))
    said = " ".join(m.value for m in [*at.success, *at.warning])
    assert said.startswith(f"Threat: {A._words('mia_loss_auc')} ≤ "), said
    assert len(store.list()) == n_runs  # the advisor runs nothing by itself

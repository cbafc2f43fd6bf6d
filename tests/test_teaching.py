"""core.report.teaching: teaching sweeps from the registered parts, lessons measured from stored
points (fake Results: no run), intervals, claims, and the one real tiny sweep."""

from __future__ import annotations

import json
import math

import pytest

from core.config.schema import parse_config
from core.config.sweeps import expand
from core.foundation import metric_schema
from core.foundation.parts import DEFENSES
from core.foundation.result import Result
from core.report import teaching
from dashboard.base.format import titled
from tests.test_pages import store  # noqa: F401  (fixture)


def _key(cfg) -> str:
    return json.dumps(cfg, sort_keys=True)


def _fake_store(spec, fn, dim=None, skip=()):
    """config -> Result with metrics ``fn(knob value, seed)`` (name -> (value, half-width))."""
    out = {}
    for v in spec.values(dim):
        for s in spec.seeds:
            if (v, s) in skip:
                continue
            cfg = spec.point_config(v, s)
            ms = fn(v, s)
            out[_key(cfg)] = Result(
                kind=spec.kind, config=cfg, seed=s,
                metrics={n: m for n, (m, _) in ms.items()},
                intervals={n: {"lo": m - h, "hi": m + h, "n": 500}
                           for n, (m, h) in ms.items() if h})
    return lambda cfg: out.get(_key(cfg))


@pytest.mark.parametrize("page", teaching.PAGES)
def test_every_page_sweep_is_valid_and_reads_registered_metrics(page):
    spec = teaching.teaching_sweep(page)
    part = DEFENSES.get(spec.defense)
    assert spec.knob == part.knob.for_family(spec.family)
    dim = 64 if spec.dim_scaled else None
    if spec.grid is None:  # the grid is the part's teaching grid, never the page's copy
        assert spec.values(dim) == part.knob.for_family(spec.family).teaching_grid()
    points = expand(parse_config(spec.sweep_config(dim)))
    assert len(points) == len(spec.values(dim)) * len(spec.seeds)
    for c in spec.reference_configs():
        parse_config(c)
    for m in (*spec.privacy, spec.utility):
        assert metric_schema.is_registered(m.metric), m.metric
    for c in teaching.CLAIMS.get(page, ()):
        assert metric_schema.is_registered(c.metric)


def test_page_config_with_another_knobbed_defense_teaches_that_knob():
    cfg = teaching.default_config("membership")
    cfg["defense"] = {"kind": "inf2guard", "tradeoff_lambda": 0.5}
    spec = teaching.teaching_sweep("membership", cfg)
    assert spec.defense == "inf2guard" and spec.knob.symbol == "λ"
    assert spec.values() == DEFENSES.get("inf2guard").knob.teaching_grid()
    # the undefended page config teaches the registered default (DP-SGD's target ε)
    assert teaching.teaching_sweep("membership").defense == "dp_sgd"


def test_estimate_combines_run_intervals_and_seed_spread():
    one = teaching.estimate([0.6], [(0.55, 0.65)])
    assert one.value == pytest.approx(0.6) and (one.lo, one.hi) == pytest.approx((0.55, 0.65))
    bare = teaching.estimate([0.6], [None])
    assert not bare.has_interval and bare.lo == bare.hi == 0.6
    two = teaching.estimate([0.5, 0.7], [(0.49, 0.51), (0.69, 0.71)])
    # the seeds disagree far more than each run's interval: their spread sets the width
    sd = 0.2 / 2 ** 0.5
    assert two.value == pytest.approx(0.6)
    assert (two.hi - two.lo) / 2 == pytest.approx(1.959964 * sd / 2 ** 0.5)
    agree = teaching.estimate([0.6, 0.6], [(0.5, 0.7), (0.5, 0.7)])
    # the seeds agree: each run's own interval sets it, narrowed by √n
    assert (agree.hi - agree.lo) / 2 == pytest.approx(0.1 / 2 ** 0.5)
    assert teaching.estimate([float("nan")], [None]) is None


def test_lesson_numbers_come_from_the_results():
    spec = teaching.teaching_sweep("attribute_privacy")

    def fn(lam, seed):
        return {"attack_auc_best": (0.71 - 0.01 * lam, 0.02),
                "attack_in_training_bacc": (0.62 - 0.12 * lam + 0.001 * seed, 0.02),
                "utility_acc": (0.90 - 0.03 * lam, 0.01), "chance": (0.5, 0)}

    les = teaching.lesson(spec, _fake_store(spec, fn))
    assert les.ready and les.exceeds is False and les.missing == 0
    text = " ".join(les.sentences)
    assert "Raising λ from 0 to 1 leaves the strongest attacker's AUC within" in text
    assert "(0.71 ± 0.01 → 0.70 ± 0.01)" in text
    assert "costs 0.03 in utility" in text
    assert "the in-training adversary's balanced accuracy reads 0.50" in text
    assert "(chance)" in text
    # the strongest attacker barely moves: TAPPFL's claim about it is not confirmed, both said
    assert any("does not confirm TAPPFL" in c and "0.71" in c and "0.70" in c
               for c in les.contradictions)
    summary = les.summary(spec)
    assert summary["less_private"]["knob"] == 0.0 and summary["more_private"]["knob"] == 1.0
    assert summary["privacy_metric"] == "attack_auc_best"
    assert summary["less_private"]["attack_auc_best"]["value"] == pytest.approx(0.71)


@pytest.mark.parametrize("page", teaching.PAGES)
def test_the_lesson_leads_with_the_pages_strongest_attacker(page):
    """The lesson's main measure is the page's headline attack (the strongest attacker by the
    page's rule), the one its tables and tradeoff plot show."""
    spec = teaching.teaching_sweep(page)
    assert spec.privacy[0].metric == metric_schema.HEADLINES[spec.kind].attack


def test_lesson_changes_when_the_measurements_change():
    spec = teaching.teaching_sweep("property")

    def rising(lam, seed):  # the strongest (fresh) attacker gets *stronger* with λ
        return {"property_in_training_bacc": (0.5 - 0.3 * lam, 0.02),
                "property_acc_best": (0.3 + 0.4 * lam, 0.02), "utility_acc": (0.9, 0.01)}

    les = teaching.lesson(spec, _fake_store(spec, rising))
    assert les.exceeds is True and "raises the strongest property attack's accuracy" in \
        les.sentences[0]
    # the property teaching grid ends at λ = 0.75 (core.foundation.parts): 0.3 + 0.4 · 0.75 = 0.60
    assert any(c.startswith("This contradicts Inf2Guard") and "0.30" in c and "0.60" in c
               for c in les.contradictions), les.contradictions


def test_lower_is_more_private_knob_moves_toward_its_low_end_and_reference_ratio():
    spec = teaching.teaching_sweep("membership")

    def fn(eps, seed):
        return {"mia_auc_best": (0.5 + 0.01 * eps, 0.01), "utility_acc": (0.6 + 0.03 * eps, 0.01),
                "utility_majority": (0.11, 0)}

    get = _fake_store(spec, fn)
    ref = {_key(c): Result(kind="membership", config=c, seed=0,
                           metrics={"utility_acc": 0.86, "mia_auc_best": 0.7,
                                    "utility_majority": 0.11})
           for c in spec.reference_configs()}
    les = teaching.lesson(spec, lambda c: ref.get(_key(c)) or get(c))
    assert "Lowering ε from 8 to 1" in les.sentences[0]
    assert les.ratio == pytest.approx((0.84 - 0.11) / (0.86 - 0.11))
    assert any("keeps at best 97%" in s for s in les.sentences)


def test_missing_points_are_said_and_no_lesson_is_invented():
    spec = teaching.teaching_sweep("fisher_information")
    vals = spec.values()
    skip = {(v, s) for v in vals[1:] for s in spec.seeds}
    les = teaching.lesson(spec, _fake_store(
        spec, lambda v, s: {"fil_attack_acc_best": (0.6, 0.02), "fil_utility_acc": (0.9, 0.01)},
        skip=skip))
    assert not les.ready and les.exceeds is None
    assert f"{len(skip)} of {les.total} points missing" in les.sentences[0]
    assert teaching.lesson(spec, lambda c: None).missing == les.total


def test_unknown_page_is_one_line():
    with pytest.raises(ValueError, match="page: got 'nope'; allowed: attribute_privacy"):
        teaching.teaching_sweep("nope")


def test_real_tiny_sweep_through_a_store(tmp_path):
    """A real two-point sweep of the FIL page (closed form: seconds) stored and read back."""
    from dataclasses import replace

    from cache.store import ResultStore

    spec = teaching.teaching_sweep("fisher_information")
    spec = replace(spec, seeds=(0,), grid=(0.1, 10.0))
    rs = ResultStore(tmp_path / "store")
    for c in spec.job_configs():
        rs.get_or_run(c)
    les = teaching.lesson(spec, rs.peek)
    assert les.ready and les.missing == 0
    hi = les.ends[0].estimates["fil_attack_acc_best"]
    lo = les.ends[1].estimates["fil_attack_acc_best"]
    point = rs.peek(spec.point_config(10.0, 0))
    assert hi.value == pytest.approx(point.metrics["fil_attack_acc_best"])
    assert lo.value <= hi.value + 1e-9


def test_fil_page_lesson_box_then_teaching_sweep_as_one_job(store):  # noqa: F811
    """The page shows what is missing and the button; once the sweep is stored the lesson's
    sentences come from the store, numbers from the runs, and the button is off."""
    from tests.test_pages import open_page

    at = open_page("views/fisher_information.py")
    assert not at.exception and not at.error, [e.value for e in at.error]
    text = " ".join(m.value for m in at.markdown)
    assert "The teaching sweep is not stored yet" in text
    button = next(b for b in at.button if b.key == "fi_teaching_sweep")
    assert not button.disabled and "points missing" in button.label
    # the sweep as the page declares it (its current config), stored directly: the same keys
    spec = teaching.teaching_sweep("fisher_information", store.get(
        store.list(kind="fisher_information")[0].key).config)
    for c in spec.job_configs():
        store.get_or_run(c)
    at.run()
    assert not at.exception and not at.error
    text = " ".join(m.value for m in at.markdown)
    les = teaching.lesson(spec, store.peek)
    assert les.ready and titled(les.sentences[0]) in text  # the page names parts by title
    assert next(b for b in at.button if b.key == "fi_teaching_sweep").disabled


def test_compare_lesson_reads_the_comparison_and_checks_inf2guard_against_dp_sgd():
    import numpy as np

    from core.runs.compare import Comparison, ComparisonSpec, Curve, DefenseSpec

    def curve(name, defense, knob, util, leak, sym):
        u, a = np.array(util, float), np.array(leak, float)
        return Curve(name=name, defense=defense, params={}, symbol=sym,
                     knob_field="x" if sym else None, budget_metric=None,
                     knob=np.array(knob, float), seeds=[0, 1], utility=u, leakage=a,
                     budget=np.full(u.shape, np.nan), leak_lo=a - 0.01, leak_hi=a + 0.01,
                     keys=[["", ""] for _ in knob])

    spec = ComparisonSpec(family="membership", data="digits", utility="utility_acc",
                          privacy="mia_auc_best", defenses=(DefenseSpec.of("inf2guard"),),
                          seeds=(0, 1))
    curves = [curve("no defense", "none", [np.nan], [[0.9, 0.9]], [[0.7, 0.7]], None),
              curve("Inf2Guard (λ)", "inf2guard", [0.0, 0.9], [[0.9, 0.9], [0.6, 0.6]],
                    [[0.70, 0.70], [0.55, 0.55]], "λ"),
              curve("DP-SGD (Opacus)", "dp_sgd", [8.0, 1.0], [[0.88, 0.88], [0.8, 0.8]],
                    [[0.60, 0.60], [0.52, 0.52]], "ε")]
    cmp_ = Comparison(spec=spec, curves=curves, refused=[], chance_leakage=0.5,
                      chance_utility=None, points_run=10, points_cached=0, seconds=1.0)
    les = teaching.compare_lesson(cmp_)
    text = " ".join(les.sentences)
    assert "Inf2Guard (λ): λ 0 → 0.9 lowers the strongest attack's AUC from 0.70" in text
    assert "DP-SGD (Opacus): ε 8 → 1 lowers" in text
    # DP-SGD keeps more utility at equal attack success here: the claim is contradicted
    assert les.contradictions and "This contradicts Inf2Guard" in les.contradictions[0]


def test_fil_sweep_over_a_sigma_setting_replaces_sigma_by_the_target_eta():
    cfg = teaching.default_config("fisher_information")
    cfg["defense"] = {"kind": "fil_output_perturbation", "sigma": 0.01}
    spec = teaching.teaching_sweep("fisher_information", cfg)
    for c in (spec.point_config(0.3, 0), spec.sweep_config()):
        parse_config(c)
    assert spec.point_config(0.3, 0)["defense"]["sigma"] is None


def test_tradeoff_plot_draws_every_matching_stored_run_off_grid_included(store):  # noqa: F811
    """λ = 0.5 and an off-grid λ = 0.35 of the page's settings are drawn; a run of another seed
    is not (it is not these settings); the teaching sweep's lesson box is on the page."""
    from tests.test_pages import contract_runner, open_page, tappfl_base

    for lam in (0.5, 0.35):
        store.get_or_run(tappfl_base(tradeoff_lambda=lam), runner=contract_runner)
    store.get_or_run(tappfl_base(tradeoff_lambda=1.0, seed=7), runner=contract_runner)
    at = open_page("views/attribute_privacy.py")
    at.selectbox(key="ap_dataset").set_value("synthetic").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    spec = json.loads(next(c for c in at.get("plotly_chart") if "ap_tradeoff" in c.id).proto.spec)
    assert sorted(spec["data"][0]["text"]) == ["λ=0.35", "λ=0.5"]
    assert any("teaching sweep is not stored yet" in m.value for m in at.markdown)


@pytest.mark.parametrize("channel", ["natural", "white", "personalized", "laplace"])
def test_reconstruction_sweep_follows_the_page_channel_and_the_lesson_names_it(channel):
    """κ per channel (issue #20): the page's chosen channel is the one swept, every point on
    it, and the lesson (stored or not) names it."""
    cfg = teaching.default_config("reconstruction")
    cfg["defense"] = {"kind": "channel", "channel": channel, "kappa": 3.0,
                      "noise_mode": "fixed"}
    spec = teaching.teaching_sweep("reconstruction", cfg)
    assert spec.defense == "channel" and spec.variant == channel
    points = expand(parse_config(spec.sweep_config(64)))
    assert points and {p.config.defense.channel for p in points} == {channel}
    assert {p.config.defense.noise_mode for p in points} == {"fixed"}  # the page's other fields kept
    assert sorted(p.config.defense.kappa for p in points) == sorted(
        v for v in spec.values(64) for _ in spec.seeds)
    name = f"the {channel.capitalize()} channel"
    assert name in teaching.lesson(spec, lambda c: None, 64).sentences[0]

    def fn(kappa, seed):
        return {"recon_best_psnr_median": (10.0 + 2.0 * math.log10(kappa), 0.3),
                "utility_acc": (0.9, 0.01)}

    les = teaching.lesson(spec, _fake_store(spec, fn, 64), 64)
    assert les.ready and f"Lowering κ from 64 to 0.64 on {name}" in les.sentences[0]
    others = {"natural", "white", "personalized", "laplace"} - {channel}
    assert not any(f"the {o.capitalize()} channel" in s for s in les.sentences for o in others)


def test_reconstruction_with_dp_sgd_sweeps_target_epsilon_without_the_kappa_claim():
    """DP-SGD picked on the κ page: its lesson is a target-ε grid (the registered teaching
    grid), the block's other fields kept, and the κ channel's claim is not checked against it."""
    cfg = teaching.default_config("reconstruction")
    cfg["defense"] = {"kind": "dp_sgd", "target_epsilon": 3.0, "clip_norm": 0.5,
                      "delta": 1e-5}
    spec = teaching.teaching_sweep("reconstruction", cfg)
    assert spec.defense == "dp_sgd" and spec.knob.field == "target_epsilon"
    assert spec.values() == DEFENSES.get("dp_sgd").knob.for_family(
        "gradient_leakage").teaching_grid()
    assert spec.variant is None
    points = expand(parse_config(spec.sweep_config()))
    assert {p.config.defense.clip_norm for p in points} == {0.5}
    assert sorted({p.config.defense.target_epsilon for p in points}) == sorted(spec.values())

    def rising(eps, seed):  # PSNR falls as ε grows: against the κ claim's direction on κ
        return {"recon_best_psnr_median": (30.0 - eps, 0.3), "utility_acc": (0.9, 0.01)}

    les = teaching.lesson(spec, _fake_store(spec, rising))
    assert les.ready and les.sentences[0].startswith("Lowering ε from 8 to 1")
    assert not any("κ channel" in c for c in les.contradictions)
    # the same numbers on the κ channel do contradict the channel paper's claim
    cfg["defense"] = {"kind": "channel", "channel": "natural", "kappa": 3.0}
    kspec = teaching.teaching_sweep("reconstruction", cfg)
    kles = teaching.lesson(kspec, _fake_store(kspec, lambda k, s: rising(k / 8, s), 64), 64)
    assert any("κ channel" in c for c in kles.contradictions), kles.sentences

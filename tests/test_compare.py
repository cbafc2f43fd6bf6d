"""The comparison engine (core.runs.compare): Pareto front and matched attack levels on hand-made
points (ties, dominated curves, non-monotone curves), refusals read from the parts registry,
the sweeps it builds, bisection to a target level, and one tiny comparison through a store."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from core.config.schema import ConfigError
from core.foundation.parts import DEFENSES
from core.runs import compare as C

# ---------------------------------------------------------------------------------------------
# Pareto front


def test_pareto_front_keeps_ties_and_drops_dominated_points():
    u = [0.9, 0.8, 0.8, 0.7, 0.9, 0.95, 0.6]
    a = [0.7, 0.6, 0.6, 0.65, 0.7, 0.9, 0.5]
    front = C.pareto_front(u, a)
    # (0.9, 0.7) twice: equal points do not dominate each other; (0.8, 0.6) twice likewise;
    # (0.7, 0.65) is beaten by (0.8, 0.6) on both axes
    assert front.tolist() == [True, True, True, False, True, True, True]


def test_pareto_front_equal_utility_lower_leakage_dominates():
    # same utility, one leaks less: the other is dominated; same leakage, one more useful
    assert C.pareto_front([0.8, 0.8], [0.6, 0.7]).tolist() == [True, False]
    assert C.pareto_front([0.8, 0.9], [0.6, 0.6]).tolist() == [False, True]


def test_pareto_front_a_dominated_curve_contributes_nothing_and_nan_is_skipped():
    good = ([0.9, 0.85, 0.8], [0.8, 0.7, 0.6])
    bad = ([0.85, 0.8, 0.75], [0.85, 0.75, 0.65])  # each point below-right of a good one
    u = good[0] + bad[0] + [math.nan]
    a = good[1] + bad[1] + [0.1]
    front = C.pareto_front(u, a)
    assert front.tolist() == [True, True, True, False, False, False, False]
    assert C.pareto_front([], []).tolist() == []
    with pytest.raises(ValueError, match="expected equal 1-D"):
        C.pareto_front([1.0], [1.0, 2.0])


def test_pareto_front_matches_brute_force_on_random_points():
    rng = np.random.default_rng(0)
    u = rng.integers(0, 6, 200) / 5  # many ties on both axes
    a = rng.integers(0, 6, 200) / 5
    front = C.pareto_front(u, a)
    for i in range(len(u)):
        dominated = any(u[j] >= u[i] and a[j] <= a[i] and (u[j] > u[i] or a[j] < a[i])
                        for j in range(len(u)))
        assert front[i] == (not dominated), i


# ---------------------------------------------------------------------------------------------
# utility at matched attack levels


def test_utility_at_level_measured_interpolated_and_unreachable():
    knob = [0.0, 0.5, 1.0]  # λ: more private to the right
    leak = [0.8, 0.7, 0.6]
    util = [0.9, 0.8, 0.5]
    m = C.utility_at_level(knob, leak, util, 0.7)
    assert (m.how, m.utility, m.knob) == ("measured", 0.8, 0.5)
    m = C.utility_at_level(knob, leak, util, 0.65)  # halfway between λ = 0.5 and 1
    assert m.how == "interpolated" and m.utility == pytest.approx(0.65)
    assert m.knob == pytest.approx(0.75)
    m = C.utility_at_level(knob, leak, util, 0.5)
    assert (m.how, m.utility) == ("unreachable", None)
    # at a level above every point, the most useful point counts
    assert C.utility_at_level(knob, leak, util, 0.95).utility == 0.9


def test_utility_at_level_non_monotone_curve_takes_the_best_crossing():
    # the attack dips below the level, rises again, then falls: two crossings and a dip point
    knob = [1, 2, 3, 4, 5]
    leak = [0.9, 0.6, 0.8, 0.55, 0.5]
    util = [0.95, 0.7, 0.9, 0.6, 0.4]
    m = C.utility_at_level(knob, leak, util, 0.7)
    # crossings: 1→2 at t = 2/3 (u = 0.95 − 0.25·2/3 ≈ 0.783), 2→3 at t = 0.5 (u = 0.8),
    # 3→4 at t = 0.4 (u = 0.78); measured points below: 0.7, 0.6, 0.4
    assert m.how == "interpolated" and m.utility == pytest.approx(0.8)
    assert m.knob == pytest.approx(2.5)
    # grid order comes from the knob, not from the order given
    perm = [4, 2, 0, 3, 1]
    m2 = C.utility_at_level(np.array(knob)[perm], np.array(leak)[perm], np.array(util)[perm], 0.7)
    assert m2 == m


def test_beats_at_level_is_the_measured_dominance_test():
    best, better = C.beats_at_level(0.8, [0.7, 0.6, 0.9], [0.75, 0.7, 0.85], 0.7)
    assert best == 0.75 and better
    best, better = C.beats_at_level(0.7, [0.7, 0.6], [0.75, 0.7], 0.7)
    assert best == 0.75 and not better
    assert C.beats_at_level(0.8, [0.9, 0.95], [0.8, 0.8], 0.7) == (None, False)


def test_dominance_over_seeds():
    assert C.dominance([0.8, 0.82, 0.81], [0.7, 0.71, 0.69]) == "A"
    assert C.dominance([0.7, 0.71, 0.69], [0.8, 0.82, 0.81]) == "B"
    assert C.dominance([0.8, 0.7, 0.9], [0.79, 0.72, 0.88]) == "tie"  # within seed noise
    assert C.dominance([0.8], [0.7]) == "A"  # one seed: the sign decides
    assert C.dominance([None, None], [0.7, 0.7]) == "n/a"


def _curve(name, knob, leak, util):
    leak, util = np.asarray(leak, float), np.asarray(util, float)
    if leak.ndim == 1:
        leak, util = leak[:, None], util[:, None]
    n, s = leak.shape
    nan = np.full((n, s), np.nan)
    return C.Curve(name=name, defense=name, params={}, symbol="k", knob_field="k",
                   budget_metric=None, knob=np.asarray(knob, float), seeds=list(range(s)),
                   utility=util, leakage=leak, budget=nan, leak_lo=nan, leak_hi=nan,
                   keys=[[""] * s for _ in range(n)])


def test_equal_privacy_rows_with_a_dominated_curve_and_seeds():
    top = _curve("A", [0, 1, 2], [[0.8, 0.82], [0.7, 0.7], [0.6, 0.62]],
                 [[0.9, 0.91], [0.85, 0.86], [0.8, 0.8]])
    low = _curve("B", [0, 1, 2], [[0.8, 0.8], [0.7, 0.71], [0.6, 0.6]],
                 [[0.8, 0.79], [0.7, 0.71], [0.5, 0.52]])
    only = _curve("C", [0, 1], [0.9, 0.85], [0.95, 0.9])  # never reaches 0.7
    rows = C.equal_privacy_rows([top, low, only], [0.7, 0.95])
    r = rows[0]
    assert r["best"] == "A" and r["C"] is None and r["C ·how"] == "unreachable"
    # B's mean attack at knob 1 is 0.705 > 0.7: read on its segment to knob 2 (0.6, 0.51)
    assert r["A"] == pytest.approx(0.855) and r["B ·how"] == "interpolated"
    assert r["B"] == pytest.approx(0.705 + (0.005 / 0.105) * (0.51 - 0.705))
    assert r["dominance"].startswith("A above B") and r["dominance"].endswith("2 seeds")
    assert rows[1]["best"] == "C"  # every curve reaches 0.95: C keeps the most utility
    levels = C.matched_levels([0.6, 0.8, 0.7, math.nan], 3, chance=0.65)
    assert levels == pytest.approx([0.65, 0.725, 0.8])
    assert C.matched_levels([0.55695, 0.6], 2)[0] == 0.55695  # the lowest point is reachable


# ---------------------------------------------------------------------------------------------
# bisection (moved from core/defenses/tuning.py)


def test_match_attack_level_finds_the_knob_and_flags_unbracketed_targets():
    def evaluate(eps: float) -> tuple[float, float]:  # attack grows with ε, monotone
        return 0.5 + 0.4 * (1 - math.exp(-eps / 5)), 0.6 + 0.2 * (1 - math.exp(-eps / 5))

    res = C.match_attack_level(evaluate, target=0.7, lo=0.1, hi=100.0, increasing=True,
                               tol=0.005, max_evals=30, log_scale=True)
    assert res.bracketed and res.converged and abs(res.attack - 0.7) <= 0.005
    assert res.knob == pytest.approx(-5 * math.log(0.5), rel=0.05)
    out = C.match_attack_level(evaluate, target=0.99, lo=0.1, hi=10.0, increasing=True)
    assert not out.bracketed and out.n_evals == 2 and out.knob == 10.0
    with pytest.raises(ValueError, match="lo, hi"):
        C.match_attack_level(evaluate, target=0.7, lo=2.0, hi=1.0, increasing=True)


# ---------------------------------------------------------------------------------------------
# what applies


def test_refusal_comes_from_the_registry():
    assert C.refusal("membership", "dp_sgd") is None
    why = C.refusal("membership", "dp_gaussian")
    assert why is not None and "\n" not in why
    assert "does not apply to membership inference" in why and "attribute inference" in why
    assert "representation" in why and "model" in why  # its release vs the plane's
    assert "not a registered defense" in C.refusal("membership", "nope")
    assert "no defense is registered" in C.refusal("no_such_family", "dp_sgd")


def test_comparison_sweeps_refuse_what_does_not_apply_and_add_the_undefended_point():
    spec = C.ComparisonSpec(
        family="membership", data="digits", utility="utility_acc", privacy="mia_auc_best",
        defenses=(C.DefenseSpec.of("dp_sgd", (0.5, 1.0)), C.DefenseSpec.of("tappfl"),
                  C.DefenseSpec.of("channel", (4.0,), channel="white")),
        seeds=(0, 1), base={"train": {"members": 50}})
    sweeps, refused = C.comparison_sweeps(spec)
    assert [d.defense for d, _ in sweeps] == ["none", "dp_sgd", "channel"]
    assert [(d.defense, "does not apply to membership inference" in why) for d, why in refused] == \
        [("tappfl", True)]
    none, dp, ch = (cfg for _, cfg in sweeps)
    assert none["grid"] == {} and none["seeds"] == [0, 1]
    assert dp["grid"] == {"defense.target_epsilon": [0.5, 1.0]}  # the knob: target ε
    assert ch["base"]["defense"] == {"kind": "channel", "channel": "white"}
    assert ch["base"]["data"]["name"] == "digits" and ch["base"]["train"]["members"] == 50
    from core.config.schema import parse_config

    assert parse_config(ch).kind == "sweep"  # every sweep validates
    # the default grid is the knob's registered one
    assert C.default_grid(DEFENSES.get("inf2guard")) == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert C.block_variants("membership", "channel")["channel"] == \
        ["natural", "white", "personalized", "laplace"]


def test_teaching_preset_builds_valid_sweeps_that_fit_the_data_and_teach_each_knob():
    """The Compare page's default (issue #20, item 2): every defense applies and is swept over
    at least its two ends, the pool of 2·members fits digits' train split, there are seeds
    enough for an interval, and DP-SGD's grid holds a point at ε ≤ 8 (where its recipe's
    utility ratio is measured) below a larger one (its leaky end)."""
    from core.config.schema import DataSpec, parse_config
    from core.data import load_dataset

    spec = C.teaching_spec()
    sweeps, refused = C.comparison_sweeps(spec)
    assert refused == []
    assert [d.defense for d, _ in sweeps] == ["none", "inf2guard", "dp_sgd", "channel", "channel"]
    for d, cfg in sweeps[1:]:
        assert len(d.grid) >= 2, d.name
        parse_config(cfg)
    members = spec.base["train"]["members"]
    assert 2 * members <= len(load_dataset(DataSpec(name=spec.data), 0).split("train"))
    assert len(spec.seeds) >= 3
    dp = next(d for d in spec.defenses if d.defense == "dp_sgd")
    assert min(dp.grid) <= 8.0 < max(dp.grid)


def test_bad_metrics_are_one_line_errors(tmp_path):
    base = {"family": "membership", "data": "digits", "defenses": ()}
    with pytest.raises(ValueError, match="privacy: got 'utility_acc'"):
        C.comparison_sweeps(C.ComparisonSpec(utility="utility_acc", privacy="utility_acc", **base))
    with pytest.raises(ValueError, match="unknown metric 'mia_auc_bset'"):
        C.comparison_sweeps(C.ComparisonSpec(utility="utility_acc", privacy="mia_auc_bset", **base))
    with pytest.raises(ValueError, match="family: got 'sweep'"):
        C.family_defaults("sweep")
    bad = C.ComparisonSpec(family="membership", data="digits", utility="utility_acc",
                           privacy="mia_auc_best",
                           defenses=(C.DefenseSpec.of("dp_sgd", (50_000.0,)),))
    from cache.store import ResultStore

    store = ResultStore(tmp_path / "cache")
    with pytest.raises(ConfigError, match="grid.defense.target_epsilon: got 50000"):
        C.run_comparison(bad, store)
    assert store.list() == []  # every sweep is validated before any runs


def test_metric_choices_read_the_schema():
    leak = C.metric_choices("membership", "leakage")
    assert leak[0] == "mia_auc_best" and "mia_tpr_at_0p1pct_fpr_best" in leak
    assert "mia_lira_offline_epsilon_lower_bound" in leak
    assert C.metric_choices("gradient_leakage", "leakage")[0] == "recon_best_psnr_median"
    assert C.metric_choices("membership", "utility") == ["utility_acc"]


# ---------------------------------------------------------------------------------------------
# one tiny comparison through a store


def test_tiny_comparison_runs_then_reads_from_the_store(tmp_path):
    from cache.store import ResultStore

    store = ResultStore(tmp_path / "cache")
    spec = C.ComparisonSpec(
        family="membership", data="digits", utility="utility_acc", privacy="mia_loss_auc",
        defenses=(C.DefenseSpec.of("channel", (1.0, 30.0)), C.DefenseSpec.of("dp_gaussian")),
        seeds=(0,), base={"train": {"members": 60, "epochs": 3},
                          "attack": {"attackers": ["loss"], "shadows": 2, "rmia_references": 1}})
    seen = []
    cmp = C.run_comparison(spec, store, progress=lambda f, m: seen.append(f))
    assert [c.name for c in cmp.curves] == ["no defense", "κ channel (data-space noise)"]
    assert cmp.refused and cmp.refused[0][0] == "DP-Gaussian on uploads"
    assert cmp.points_run == 3 and cmp.points_cached == 0 and seen[-1] == 1.0
    ch = cmp.curves[1]
    assert ch.knob.tolist() == [1.0, 30.0] and np.isfinite(ch.utility).all()
    assert np.isfinite(ch.leakage).all() and ch.budget.tolist() == [[1.0], [30.0]]
    assert cmp.chance_leakage == 0.5 and len(cmp.pareto()) == 3 and cmp.pareto().any()
    again = C.run_comparison(spec, store)
    assert again.points_run == 0 and again.points_cached == 3
    np.testing.assert_array_equal(again.curves[1].leakage, ch.leakage)
    d = json.loads(json.dumps(again.to_dict(), allow_nan=False))  # plain JSON, no NaN
    assert d["curves"][1]["knob"] == [1.0, 30.0] and d["refused"][0][0] == "DP-Gaussian on uploads"
    assert d["curves"][0]["knob"] == [None]  # the undefended point has no knob
    wrong = C.ComparisonSpec(**{**spec.__dict__, "privacy": "recon_best_psnr_median"})
    with pytest.raises(ValueError, match="membership runs do not report 'recon_best_psnr_median'"):
        C.run_comparison(wrong, store)


def test_run_comparison_runs_only_missing_points_and_reads_each_point_once(tmp_path):
    """One lookup per point, one run per missing point (no sweep is run or stored to read the
    points back), one read per point it ran; a second call runs and reads nothing more."""
    from collections import Counter

    from cache.store import ResultStore
    from core.config.schema import cache_key, parse_config
    from core.config.sweeps import expand
    from core.foundation.result import Result

    def fake(cfg, progress=None, cancel=None) -> Result:
        kappa = getattr(cfg.defense, "kappa", 100.0)
        return Result(kind="membership", config=cfg.model_dump(mode="json"), seed=cfg.seed,
                      metrics={"utility_acc": 0.9 - 0.1 / kappa, "utility_majority": 0.1,
                               "mia_auc_best": 0.5 + 0.1 * kappa / (kappa + 1)})

    class Counting:
        """The store, counting what run_comparison asks of it (its points run ``fake``)."""

        def __init__(self, store: ResultStore) -> None:
            self.store, self.calls, self.ran = store, Counter(), []

        def peek(self, config):
            self.calls["peek"] += 1
            return self.store.peek(config)

        def get(self, key, **kw):
            self.calls["get"] += 1
            return self.store.get(key, **kw)

        def get_or_run(self, config, *, progress=None, cancel=None):
            cfg = parse_config(config)
            self.calls["get_or_run"] += 1
            self.ran.append((cfg.kind, cache_key(cfg)))
            return self.store.get_or_run(cfg, runner=fake, progress=progress, cancel=cancel)

    spec = C.ComparisonSpec(
        family="membership", data="digits", utility="utility_acc", privacy="mia_auc_best",
        defenses=(C.DefenseSpec.of("channel", (1.0, 30.0)),), seeds=(0, 1),
        base={"train": {"members": 60, "epochs": 1}})
    points = [p for _, sw in C.comparison_sweeps(spec)[0] for p in expand(parse_config(sw))]
    assert len(points) == 6  # the undefended point and κ 1, 30, each over two seeds
    inner = ResultStore(tmp_path / "cache")
    for p in points[:2]:  # the undefended points are stored already
        inner.get_or_run(p.config, runner=fake)
    store = Counting(inner)
    cmp = C.run_comparison(spec, store)
    missing = sorted(p.key for p in points[2:])
    assert sorted(k for _, k in store.ran) == missing and {kind for kind, _ in store.ran} == {"membership"}
    assert store.calls == Counter(peek=6, get_or_run=4, get=4)
    assert (cmp.points_run, cmp.points_cached) == (4, 2)
    assert inner.list(kind="sweep") == []  # only points are stored
    assert cmp.curves[1].utility[1, 0] == pytest.approx(0.9 - 0.1 / 30)
    store.calls.clear()
    again = C.run_comparison(spec, store)
    assert store.calls == Counter(peek=6) and (again.points_run, again.points_cached) == (0, 6)
    np.testing.assert_array_equal(again.curves[1].leakage, cmp.curves[1].leakage)
    read = C.read_comparison(spec, inner)
    np.testing.assert_array_equal(read.curves[1].utility, cmp.curves[1].utility)
    inner.delete(points[-1].key)
    with pytest.raises(C.MissingPoints, match="not stored"):
        C.read_comparison(spec, inner)


def test_model_reaches_every_point_and_bad_models_are_one_line(tmp_path):
    from cache.store import ResultStore
    from core.config.schema import parse_config

    tiny = {"arch": "lenet5", "width": 0.0625}
    spec = C.ComparisonSpec(
        family="attribute_privacy", data="digits", utility="utility_acc",
        privacy="attack_auc_best", defenses=(C.DefenseSpec.of("tappfl", (0.5,)),), model=tiny,
        base={"data": {"private_attribute": "parity", "max_samples": 300},
              "pretrain_epochs": 0, "attack": {"attackers": ["logreg"]},
              "fl": {"num_devices": 2, "fraction_fit": 1.0, "rounds": 1}})
    sweeps, _ = C.comparison_sweeps(spec)
    assert [cfg["base"]["model"] for _, cfg in sweeps] == [tiny, tiny]
    assert all(parse_config(cfg).base["model"] == tiny for _, cfg in sweeps)
    cmp = C.run_comparison(spec, ResultStore(tmp_path / "cache"))
    assert cmp.points_run == 2 and all(np.isfinite(c.utility).all() for c in cmp.curves)
    for over, msg in (({"family": "fisher_information"},
                       r"^model: fisher_information runs take no architecture \(allowed for: "),
                      ({"model": {"arch": "lenet5", "width": 9}},
                       r"^model\.width: got 9\.0; allowed: \[0\.0625, 4\] for 'lenet5'$"),
                      ({"model": {"arch": "nope"}}, r"^model\.arch: got 'nope'; allowed: mlp, ")):
        with pytest.raises(ValueError, match=msg):
            C.comparison_sweeps(C.ComparisonSpec(**{**spec.__dict__, **over}))

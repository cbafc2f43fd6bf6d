"""Every knob end is safe: for every registered defense with a knob and every family it serves,
at the knob's declared ends (``Knob.low``, ``Knob.high`` as ``knob.for_family(family)`` reads
them from the block's constraints) and a middle value,

(a) the block and the family's config validate, and so does every position the knob widget
    offers;
(b) what a page computes from the knob without a run is finite or explicitly flagged: the
    (ε, δ)-DP region, DP-SGD's z for a target ε, the analytic Gaussian σ for ε, the κ
    channel's live cards and bound curves, FIL's closed-form numbers, the cost estimate;
(c) the Membership page with a stored run at ε = high (the ε = 1000 ``OverflowError`` of
    ``dp_region``) draws without raising, on the visit that stores it and on a later one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.config.schema import parse_config
from core.foundation.parts import DEFENSES


def _cases() -> list[tuple[str, str]]:
    return [(name, fam) for name, part in DEFENSES.items() if part.knob is not None
            for fam in part.families]


CASES = _cases()


def _knob(name: str, family: str):
    return DEFENSES.get(name).knob.for_family(family)


def _values(knob) -> tuple[float, float, float]:
    """low, a middle value on the knob's scale, high."""
    lo, hi = float(knob.low), float(knob.high)
    mid = math.sqrt(lo * hi) if knob.scale == "log" and lo > 0 else (lo + hi) / 2
    return lo, mid, hi


def _config(name: str, family: str, value: float, **block):
    return parse_config({"kind": family, "data": {"name": "digits"},
                         "defense": {"kind": name, _knob(name, family).field: value, **block}})


def _finite(x) -> bool:
    return bool(np.all(np.isfinite(np.asarray(x, dtype=float))))


def test_every_registered_knob_is_covered():
    assert len(CASES) >= 10, CASES
    assert {fam for _, fam in CASES} >= {"membership", "gradient_leakage", "attribute_privacy",
                                         "fisher_information", "property",
                                         "repr_reconstruction"}


@pytest.mark.parametrize(("name", "family"), CASES)
def test_block_and_config_validate_at_the_ends_and_every_widget_position(name, family):
    part, knob = DEFENSES.get(name), _knob(name, family)
    for v in _values(knob):
        assert getattr(part.config(**{knob.field: v}), knob.field) == pytest.approx(v)
        assert getattr(_config(name, family, v).defense, knob.field) == pytest.approx(v)
    # what the knob widget can produce (dashboard/components/knob.py): its select-slider
    # positions, or a linear slider's ends
    positions = knob.positions()
    if not positions:
        step = knob.slider_step()
        top = round(math.floor(round((knob.high - knob.low) / step, 6)) * step + knob.low, 10)
        positions = (knob.low, top)
    for v in positions:
        assert knob.low <= v <= knob.high, (v, knob.low, knob.high)
        part.config(**{knob.field: v})


DP_CASES = [(n, f) for n, f in CASES if DEFENSES.get(n).knob.budget_metric == "epsilon_accountant"]


@pytest.mark.parametrize(("name", "family"), DP_CASES)
def test_dp_region_is_finite_over_the_epsilon_range(name, family):
    """TPR ≤ min(1, e^ε·FPR + δ, 1 − e^−ε(1 − δ − FPR)) without forming e^ε (ε up to 10⁴)."""
    from core.bounds.dp_region import dp_region

    assert DP_CASES, "no ε knob registered"
    f = np.r_[0.0, np.logspace(-4, 0, 60)]
    for v in _values(_knob(name, family)):
        delta = float(getattr(_config(name, family, v).defense, "delta", 1e-5))
        region = dp_region(v, delta, f)
        assert _finite(region) and region.min() >= 0.0 and region.max() <= 1.0, (v, region)
        assert np.all(np.diff(region) >= -1e-12)  # a region, monotone in FPR
    # the large-ε end is the whole square above FPR > 0 (every TPR allowed)
    assert dp_region(1e4, 1e-5, [1e-4])[0] == pytest.approx(1.0)
    assert dp_region(1.0, 0.0, [0.1])[0] == pytest.approx(math.e * 0.1)


def test_dp_sgd_noise_multiplier_for_target_epsilon_at_the_ends():
    """The Reconstruction page's live z (RDP solve) for DP-SGD's target ε at low, middle, high."""
    from core.defenses.channel_live import _live_noise_multiplier

    zs = [_live_noise_multiplier(_config("dp_sgd", "gradient_leakage", v))
          for v in _values(_knob("dp_sgd", "gradient_leakage"))]
    assert all(z is not None and _finite(z) and z > 0 for z in zs), zs
    assert zs[0] > zs[1] > zs[2]  # more privacy, more noise


@pytest.mark.parametrize("name", ["dp_gaussian"])
def test_gaussian_calibration_at_the_ends(name):
    from core.defenses.dp import analytic_gaussian_sigma

    for v in _values(_knob(name, "attribute_privacy")):
        block = _config(name, "attribute_privacy", v).defense
        s = analytic_gaussian_sigma(v, block.delta)
        assert _finite(s) and s > 0, (v, s)


@pytest.fixture(scope="module")
def digits_spectrum():
    from core.bounds.channel_readout import image_spectrum
    from core.config.schema import DataSpec
    from core.data import load_dataset

    ds = load_dataset(DataSpec(name="digits"), 0)
    return image_spectrum(np.asarray(ds.X)[ds.split("train")]), tuple(ds.image_shape)


@pytest.mark.parametrize("family", DEFENSES.get("channel").families)
@pytest.mark.parametrize("channel", ["natural", "white", "personalized", "laplace"])
def test_channel_live_panel_at_the_kappa_ends(digits_spectrum, family, channel):
    """The κ channel's live cards (σ, noise std, κ/d, Theorem 1 floor, Wiener MMSE) and bound
    curves: every number finite, or the κ flagged ("cannot be certified") with no cards; a
    Wiener curve point is NaN only where the channel cannot reach κ (drawn as a gap)."""
    from core.bounds.channel_readout import bound_curves, personalized_basis
    from core.defenses.channel import channel_beta
    from core.defenses.channel_live import live_channel

    spec, shape = digits_spectrum
    for v in _values(_knob("channel", family)):
        cfg = _config("channel", "gradient_leakage", v, channel=channel)
        basis = (personalized_basis(spec, channel_beta(cfg.defense, shape))
                 if channel == "personalized" else None)
        live = live_channel(cfg, spec, shape, basis=basis)
        if live["cards"]:
            for label, text, _ in live["cards"]:
                assert _finite(float(text.split()[0])), (v, label, text)
        else:
            assert any("cannot be certified" in n for n in live["notes"]), (v, live["notes"])
        curves = bound_curves(spec, np.array([v]), channel=cfg.defense.channel, basis=basis)
        for curve, ys in curves.items():
            if curve.startswith("Theorem 1"):
                assert _finite(ys), (v, curve, ys)
            else:
                assert all(math.isfinite(y) or (math.isnan(y) and not live["cards"])
                           for y in ys), (v, curve, ys)


@pytest.mark.parametrize("model", ["linear", "logistic"])
@pytest.mark.parametrize("granularity", ["example", "label", "attribute", "group", "dataset"])
def test_fil_closed_form_at_the_eta_ends(model, granularity):
    """FIL's numbers the page redraws on every slider move (σ, η, composed η, local RDP, and
    ε for logistic regression) from a fit's η arrays at σ = 1: finite at every η_target end."""
    from core.runs.fisher_information import closed_form

    rng = np.random.default_rng(0)
    n = 50
    arrays = {"eta_example": rng.uniform(0.01, 3, n), "eta_label": rng.uniform(0.01, 3, n),
              "eta_attr": rng.uniform(0.01, 3, n), "group_eta": rng.uniform(0.1, 3, 2),
              "eta_dataset": np.array([5.0])}
    for v in _values(_knob("fil_output_perturbation", "fisher_information")):
        block = _config("fil_output_perturbation", "fisher_information", v).defense
        out = closed_form(arrays, defense=block, granularity=granularity, model=model, n=n,
                          l2=1e-3, feature_norm=1.0)
        bad = {k: x for k, x in out.items() if isinstance(x, float) and not math.isfinite(x)}
        assert not bad and out["sigma"] > 0, (v, bad)


@pytest.mark.parametrize("name", [n for n, f in CASES if f == "membership"])
def test_membership_cost_estimate_at_the_ends(name):
    from core.foundation.costs import estimate

    for v in _values(_knob(name, "membership")):
        est = estimate("membership", _config(name, "membership", v).model_dump(mode="json"))
        assert est is not None and _finite(est[0]) and est[0] > 0, (name, v, est)


def test_membership_page_with_a_run_at_the_top_epsilon_draws(monkeypatch, tmp_path):
    """DP-SGD at target ε = high on the Membership page: Run stores a run whose accountant ε
    is that high, the page draws its ROC with the DP region, and a later visit does too."""
    import core.runs.experiments
    from cache.store import default_store
    from core.foundation.result import Result
    from tests.test_pages import has_chart, open_page

    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    store = default_store()
    high = _knob("dp_sgd", "membership").high

    def fake_run(cfg, progress=None, cancel=None, **_):
        fpr = np.linspace(0.0, 1.0, 50)
        return Result(kind="membership", config={}, seed=cfg.seed,
                      metrics={"epsilon_accountant": float(cfg.defense.target_epsilon),
                               "utility_acc": 0.9, "utility_majority": 0.1,
                               "train_test_gap": 0.05, "mia_auc_best": 0.6,
                               "mia_tpr_at_0p1pct_fpr_best": 0.01, "mia_loss_auc": 0.6,
                               "mia_loss_adv": 0.1, "mia_loss_epsilon_lower_bound": 0.2,
                               "members": 20.0, "nonmembers": 20.0},
                      artifacts={"roc_loss_fpr": fpr, "roc_loss_tpr": np.sqrt(fpr)},
                      info={"scored": {"loss": [20, 20]}, "accountant": "prv"})

    monkeypatch.setattr(core.runs.experiments, "run", fake_run)

    def page():
        at = open_page("views/membership.py")
        at.selectbox(key="mi_dataset").set_value("digits").run()
        at.selectbox(key="mi_defense").set_value("dp_sgd").run()
        at.multiselect(key="mi_attackers").set_value(["loss"]).run()
        at.select_slider(key="mi_eps").set_value(high).run()
        return at

    at = page()
    at.button(key="mi_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    runs = store.list(kind="membership")
    assert len(runs) == 1 and runs[0].config["defense"]["target_epsilon"] == high
    assert runs[0].metrics["epsilon_accountant"] == high
    assert has_chart(at, "mi_roc") and has_chart(at, "mi_roc_log")
    again = page()  # a later visit with the same settings shows the stored run
    assert not again.exception, again.exception
    assert has_chart(again, "mi_roc")

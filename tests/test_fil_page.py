"""The Fisher information page through AppTest, and the speed of its closed-form parts."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.test_pages import chart_keys, has_chart, open_page, store  # noqa: F401  (fixture)

CHARTS = ("fi_hist", "fi_most", "fi_least", "fi_scatter", "fi_sweep", "fi_deciles", "fi_irfil",
          "fi_crb")


def _shown(at) -> dict[str, str]:
    # a tile's label may carry its caveat flag ("DP ε at this σ ⚠ no ε"): keyed without it
    return {m.label.split(" ⚠")[0]: m.value for m in at.metric}


def test_page_fits_digits_by_itself_and_the_eta_slider_reuses_the_fit(store):  # noqa: F811
    at = open_page("views/fisher_information.py")
    assert not at.exception and not at.error, [e.value for e in at.error]
    for key in CHARTS:
        assert has_chart(at, key), (key, chart_keys(at))
    runs = store.list(kind="fisher_information")
    assert len(runs) == 1  # digits is quick: the default settings ran on opening the page
    # FIL against membership: the verdict generated from the measured ρ and its interval
    assert has_chart(at, "fi_lira_scatter")
    assert any(m.value.startswith("η identifies the leaking examples: ")
               for m in at.markdown), [m.value for m in at.markdown]
    before = _shown(at)
    # the default target η is a teaching-grid point of the part's knob (core.foundation.parts)
    assert before["η (example, worst)"] == "3" and before["DP ε at this σ"] == "none"
    assert any(m.label == "DP ε at this σ ⚠ no ε" for m in at.metric)  # least squares: no ε
    at.select_slider(key="fi_eta").set_value(10.0).run()
    after = _shown(at)
    assert after["η (example, worst)"] == "10"
    assert float(after["σ"]) == pytest.approx(float(before["σ"]) * 3.0 / 10, rel=5e-3)  # η ∝ 1/σ
    assert not at.exception and not at.error
    runs = store.list(kind="fisher_information")
    assert len(runs) == 2  # the attacks at the new σ ran; the fit came from the stage cache
    stages = [store.get(r.key).info["stages"]["fil_fit"] for r in runs]
    assert sorted(stages) == ["computed", "hit"], stages
    # logistic regression: ε appears (sensitivity 2/(nλ)); λ = 0 is refused in one line
    at.segmented_control(key="fi_model").set_value("logistic").run()
    assert _shown(at)["DP ε at this σ"] != "none"
    at.select_slider(key="fi_l2").set_value(0.0).run()
    assert any(e.value.startswith("Fisher information: invalid settings: model.l2: got 0")
               for e in at.error), [e.value for e in at.error]


def test_closed_form_updates_within_100_ms():
    """σ ↔ η ↔ ε and every η at σ from Adult-sized arrays (30,162 rows): what a slider move
    recomputes (before drawing)."""
    from core.catalog.fil_output_perturbation import FilOutputPerturbation
    from core.runs.fisher_information import closed_form

    rng = np.random.default_rng(0)
    n = 30_162
    arrays = {k: rng.gamma(2.0, 0.01, n) for k in ("eta_example", "eta_label", "eta_attr")}
    arrays.update(group_eta=np.array([0.3, 0.4]), eta_dataset=np.array([0.5]))
    blocks = [FilOutputPerturbation(sigma=0.01), FilOutputPerturbation(eta_target=2.0),
              FilOutputPerturbation(epsilon=1.0, delta=1e-5)]
    times = []
    for _ in range(5):
        for b in blocks:
            t0 = time.perf_counter()
            out = closed_form(arrays, defense=b, granularity="example", model="logistic",
                              n=n, l2=1e-3, feature_norm=1.0)
            times.append(time.perf_counter() - t0)
    assert out["fil_epsilon"] > 0 and np.isfinite(out["fil_eta"])
    assert float(np.median(times)) < 0.1, times

"""The one knob widget (dashboard.components.knob) and the one page tail
(dashboard.components.page_tail): pages draw their knobs from the registered parts alone, take
their teaching grids from them, and close with the same section."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from cache.store import default_store
from core.foundation.parts import DEFENSES, Knob

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    return default_store()


def open_page(page: str, **state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


# -- the Knob's own answers -------------------------------------------------------------------


def test_knob_grids_positions_and_family_fields():
    k = Knob("kappa", "κ", "capacity", 0.01, 1e5, "log", "lower_is_more_private",
             grid=(2.0, 8.0), family_fields=(("membership", (("teaching", (20.0, 80.0)),)),))
    assert k.teaching_grid() == k.comparison_grid() == (2.0, 8.0)  # teaching defaults to grid
    assert k.for_family("membership").teaching_grid() == (20.0, 80.0)
    assert k.for_family("gradient_leakage") == k and k.more_private == "lower"
    pos = k.positions()  # a 1-2-5 ladder over [low, high] with the teaching grid added
    assert pos[0] == 0.01 and pos[-1] == 1e5 and {2.0, 5.0, 8.0} <= set(pos)
    assert list(pos) == sorted(pos)
    lin = Knob("tradeoff_lambda", "λ", "weight", 0.0, 1.0, "linear", "higher_is_more_private")
    assert lin.positions() == () and lin.slider_step() == 0.05
    assert lin.comparison_grid() == (0.0, 0.25, 0.5, 0.75, 1.0)  # no grid: spread over the range
    assert Knob("x", "x", "x", 1e-2, 1e2, "log", "lower_is_more_private").spread(3) == \
        (0.01, 1.0, 100.0)


# -- pages draw the knob from the part --------------------------------------------------------


def test_membership_sliders_have_the_parts_range_and_positions(store):
    at = open_page("views/membership.py", mi_defense="inf2guard")
    lam = at.slider(key="mi_lambda")
    knob = DEFENSES.get("inf2guard").knob
    assert (lam.min, lam.max, lam.step) == (knob.low, knob.high, knob.slider_step())
    assert lam.label.startswith("λ · Inf2Guard privacy weight (higher is more private)")
    at.selectbox(key="mi_defense").set_value("channel").run()
    kappa = at.select_slider(key="mi_kappa")
    expected = DEFENSES.get("channel").knob.for_family("membership").positions()
    assert [float(o) for o in kappa.options] == list(expected)
    assert kappa.value == 80.0 and "(lower is more private)" in kappa.label
    at.selectbox(key="mi_defense").set_value("dp_sgd").run()
    eps = at.select_slider(key="mi_eps")
    assert [float(o) for o in eps.options] == list(DEFENSES.get("dp_sgd").knob.positions())
    assert eps.value == 8.0 and "(lower is more private)" in eps.label
    assert not at.exception


def test_a_value_off_the_positions_snaps_to_the_nearest(store):
    at = open_page("views/membership.py", mi_defense="channel", mi_kappa=70.0)
    assert at.select_slider(key="mi_kappa").value == 80.0  # log-nearest of 40 / 80
    assert not at.exception


def test_changing_the_parts_grid_changes_the_pages_grid(store, monkeypatch):
    part = DEFENSES.get("tappfl")
    at = open_page("views/attribute_privacy.py")
    assert re.search(r"λ ∈ \{0, 0\.5, 1\}", at.button(key="ap_sweep").help)
    patched = dataclasses.replace(part, knob=dataclasses.replace(part.knob, teaching=(0.1, 0.9)))
    monkeypatch.setitem(DEFENSES._entries, "tappfl", patched)  # same place in the registry
    at.run()
    assert re.search(r"λ ∈ \{0\.1, 0\.9\}", at.button(key="ap_sweep").help)
    # a defense whose part has a knob gets the sweep too (not only λ): DP-Gaussian's ε
    at.selectbox(key="ap_defense").set_value("dp_gaussian").run()
    assert at.button(key="ap_sweep").label == "Run ε sweep"
    assert "ε ∈ {1, 4, 16, 64, 256}" in at.button(key="ap_sweep").help
    assert not at.exception


def test_no_page_spells_a_knob_range_or_grid_again():
    """The knob sliders and teaching grids of the pages come from core.foundation.parts: no page keeps a
    GRIDS / LAMBDAS / EPS_OPTIONS / ETA_GRID table or a hand-written '… is more private'
    label."""
    for page in (ROOT / "dashboard" / "views").glob("*.py"):
        text = page.read_text(encoding="utf-8")
        # (the FIL page's σ and DP-ε ladders stay: they are other ways to set the same block,
        # not its registered knob η)
        for name in ("GRIDS =", "LAMBDAS =", "EPS_OPTIONS =", "ETA_GRID =", "LAMBDA_GRID"):
            assert name not in text, (page.name, name)
        if page.name != "fisher_information.py":  # σ there is not the registered knob (η is)
            assert "is more private)\"" not in text, page.name


# -- the page tail ----------------------------------------------------------------------------

RESULT_PAGES = ("attribute_privacy", "membership", "property", "reconstruction",
                "repr_reconstruction", "fisher_information", "data")


def test_every_page_that_runs_something_closes_with_the_tail():
    """Through the one page-run scaffold (run_panel draws page_tail), or page_tail itself on a
    page that runs without a Run button (Data)."""
    scaffold = (ROOT / "dashboard" / "components" / "run_panel.py").read_text(encoding="utf-8")
    assert "page_tail(" in scaffold
    for name in RESULT_PAGES:
        text = (ROOT / "dashboard" / "views" / f"{name}.py").read_text(encoding="utf-8")
        assert text.count("page_tail(") + text.count("run_panel(") == 1, name
        assert "config_and_metrics(" not in text and 'info.get("notes"' not in text, name


def test_the_tail_shows_notes_metrics_export_and_this_kinds_history(store):
    at = open_page("views/data.py")  # digits PCA runs on opening the page
    runs = store.list(kind="projection")
    assert len(runs) == 1
    assert at.get("download_button") and any(
        b.proto.id and "data_download_json" in b.proto.id for b in at.get("download_button"))
    labels = [e.label for e in at.expander]
    assert "Config and all metrics" in labels and "Earlier runs of this kind (projection)" in labels
    assert any(e.label.startswith("Copy this run") for e in at.expander)
    at.session_state["data_show_history"] = True  # open the history box
    at.run()
    assert not at.exception
    frames = [d.value for d in at.dataframe]
    hist = next(f for f in frames if "settings" in f.columns and "shown" in f.columns)
    assert list(hist["key"]) == [runs[0].key[:12]] and list(hist["shown"]) == ["▶"]

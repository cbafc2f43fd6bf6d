"""The one control builder (dashboard.components.part_controls): a defense registered in one
place gets its knob and its declared controls on its family's page with no page edit, and
the pages build the same configs from the same widget states as before."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from annotated_types import Ge, Le
from streamlit.testing.v1 import AppTest

from cache.store import default_store
from core.config.base import Block
from core.foundation.parts import DEFENSES, Control, DefensePart, Knob

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
TEMP = "temp_jitter"


class TempJitter(Block):
    """A temporary membership defense: a knob and two declared controls."""

    kind: Literal["temp_jitter"] = "temp_jitter"
    strength: Annotated[float, Ge(0.0), Le(2.0)] = 1.0
    mode: Literal["gaussian", "uniform"] = "uniform"
    scale: Annotated[float, Ge(0.5), Le(4.0)] = 2.0
    clipped: bool = True


def _never_built(*_: Any, **__: Any) -> Any:
    raise AssertionError("the page test never runs the temporary defense")


@contextlib.contextmanager
def temporary_defense() -> Iterator[DefensePart]:
    part = DefensePart(
        name=TEMP, title="temporary jitter", families=("membership",), release="model",
        knob=Knob.of(TempJitter, "strength", "s", "jitter strength", "linear",
                     "higher_is_more_private"),
        accounting=None, builder=_never_built, config=TempJitter,
        controls=(Control("mode", "jitter law"), Control("scale", families=("membership",)),
                  Control("clipped", help="clip before the jitter"),
                  Control("strength", families=("gradient_leakage",))))
    DEFENSES.register(TEMP, part)
    try:
        yield part
    finally:
        DEFENSES.unregister(TEMP)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    return default_store()


def _membership_page(**state: Any) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    at.switch_page("views/membership.py").run()
    assert not at.exception, at.exception
    return at


def test_a_registered_defense_gets_its_controls_on_its_page(store):
    with temporary_defense() as part:
        at = _membership_page(mi_defense=TEMP)
        assert part.title in at.selectbox(key="mi_defense").options
        knob = at.slider(key=f"mi_{TEMP}")
        assert (knob.min, knob.max, knob.step) == (0.0, 2.0, part.knob.slider_step())
        assert knob.label.startswith("s · jitter strength (higher is more private)")
        law = at.selectbox(key=f"mi_{TEMP}_mode")
        assert law.label == "jitter law" and law.value == "uniform"
        assert list(law.options) == ["gaussian", "uniform"]
        scale = at.text_input(key=f"mi_{TEMP}_scale__text")
        assert scale.value == "2" and scale.label == "scale"
        assert at.checkbox(key=f"mi_{TEMP}_clipped").value is True
        # a control declared for another family is not drawn here
        assert not [w for w in at.text_input if w.key == f"mi_{TEMP}_strength__text"]
    at = _membership_page()
    assert "temporary jitter" not in at.selectbox(key="mi_defense").options


def test_the_reconstruction_page_slides_kappa_over_the_knobs_per_dimension_ladder(store):
    """The κ slider runs over the channel knob's per-dimension ladder for digits (d = 64),
    starting at the knob's middle teaching value κ/d = 0.1 snapped to it; each position shows
    its κ/d."""
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("views/reconstruction.py").run()
    assert not at.exception, at.exception
    kappa = at.select_slider(key="gl_kappa")
    knob = DEFENSES.get("channel").knob.for_family("gradient_leakage").for_dim(64)
    assert list(kappa.options) == [f"{p:g} (κ/d {p / 64:.3g})" for p in knob.positions()]
    assert knob.positions()[0] == 0.1 and knob.positions()[-1] == 500.0
    assert kappa.value == 5.0  # 0.1·64 = 6.4 snapped to the 1-2-5 ladder
    at.selectbox(key="gl_defense").set_value("dp_sgd").run()
    assert not at.exception, at.exception
    eps = at.select_slider(key="gl_eps")
    assert [float(o) for o in eps.options] == list(DEFENSES.get("dp_sgd").knob.positions())

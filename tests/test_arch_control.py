"""The architecture control (dashboard.components.part_controls.architecture_ui, drawn by the
run scaffold on every page whose kind trains a registered architecture): titles generated from
the registry, only the architectures the page's data and kind take (a one-line reason for the
others), the cost before Run, and the default MLP leaving the page's config as it was."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from cache.store import default_store
from core.config.schema import ModelSpec
from core.foundation.parts import ARCHITECTURES
from dashboard.components import cost_later

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
TIMEOUT = 120


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    return default_store()


def _page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def _arch_box(at: AppTest, key: str):
    boxes = [s for s in at.selectbox if s.key == key]
    assert len(boxes) == 1, [s.key for s in at.selectbox]
    return boxes[0]


def _cost_captions(at: AppTest) -> list[str]:
    """The cost lines, once the background work a first draw left them to is done."""
    if any(c.value.startswith("Counting the parameters") for c in at.caption):
        assert cost_later.settle()
        at.run()
        assert not at.exception, at.exception
    return [c.value for c in at.caption if "parameters" in c.value and "FLOPs" in c.value]


def _yaml(at: AppTest) -> str:
    return "\n".join(c.value for c in at.code if c.language == "yaml")


@pytest.mark.parametrize("page,key", [("views/membership.py", "mi"),
                                      ("views/reconstruction.py", "gl"),
                                      ("views/repr_reconstruction.py", "rr"),
                                      ("views/property.py", "pr")])
def test_each_image_page_offers_the_architecture_with_its_cost(store, page, key) -> None:
    at = _page(page)
    box = _arch_box(at, f"{key}_arch")
    assert box.value == ModelSpec().arch  # the default stays the MLP
    titles = {a.title for _, a in ARCHITECTURES.items()}
    assert box.options and set(box.options) <= titles  # titles, never registered names
    (cost,) = _cost_captions(at)
    assert "on a CPU" in cost and "on a GPU" in cost
    # the CPU rate is this machine's, its step timed on first use (core.engine.calibration),
    # and says so; no repository path, no file from another machine
    assert "measured on this machine: " in cost and "another machine" not in cost
    assert "benchmarks/results" not in cost and "refresh with" not in cost
    # a conv net of the registry: its CPU width, its own count and a longer time
    conv = next(n for n, a in ARCHITECTURES.items() if a.title in box.options and a.cpu_width < 1)
    box.set_value(conv).run()
    assert not at.exception, at.exception
    width = next(n for n in at.number_input if n.key == f"{key}_width")
    assert width.value == ARCHITECTURES.get(conv).cpu_width
    (cost2,) = _cost_captions(at)
    assert ARCHITECTURES.get(conv).title in cost2 and cost2 != cost
    assert f"arch: {conv}" in _yaml(at)  # the run the page validates trains it


def test_attribute_privacy_offers_the_architecture_its_runner_now_takes(store) -> None:
    """The FedAvg runner trains a registered conv extractor too: the page draws the control and
    the MLP stays its default (the config the page validates trains it)."""
    at = _page("views/attribute_privacy.py")
    box = _arch_box(at, "ap_arch")
    assert box.value == ModelSpec().arch
    assert box.options and set(box.options) <= {a.title for _, a in ARCHITECTURES.items()}
    assert _cost_captions(at)
    assert not re.search(r"arch: (?!mlp\b)", _yaml(at)), _yaml(at)


def _script(config_json: str) -> None:
    import json as _json

    import streamlit as st

    from dashboard.components.part_controls import architecture_ui

    out = architecture_ui(_json.loads(config_json), kind="membership", key="t")
    st.code(_json.dumps(out, sort_keys=True), language="json")


def _run_script(config: dict) -> tuple[AppTest, dict]:
    at = AppTest.from_function(_script, args=(json.dumps(config),), default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    (code,) = [c.value for c in at.code if c.language == "json"]
    return at, json.loads(code)


def test_the_default_model_leaves_the_config_as_it_was(store) -> None:
    config = {"kind": "membership", "seed": 0, "data": {"name": "digits"},
              "train": {"members": 40, "epochs": 1}}
    at, out = _run_script(config)
    assert out == config  # no `model` block: stored runs keep their keys
    at.selectbox(key="t_arch").set_value("lenet5").run()
    (code,) = [c.value for c in at.code if c.language == "json"]
    assert json.loads(code)["model"] == {"arch": "lenet5", "width": 1.0}


def test_tabular_data_offer_the_mlp_and_say_why_not_the_conv_nets(store) -> None:
    config = {"kind": "membership", "seed": 0, "data": {"name": "synthetic"},
              "train": {"members": 40, "epochs": 1}}
    at, out = _run_script(config)
    assert out == config
    assert at.selectbox(key="t_arch").options == [ARCHITECTURES.get(ModelSpec().arch).title]
    (exp,) = [e for e in at.expander if "not offered" in e.label]
    text = "\n".join(m.value for m in exp.markdown)
    others = [a for n, a in ARCHITECTURES.items() if n != ModelSpec().arch]
    assert len(text.splitlines()) == len(others)
    for a in others:
        assert f"{a.title}: " in text
    assert "tabular" in text and "wrn28_2" not in text  # titles, one reason per line


def test_compare_offers_the_architecture_for_every_point(store) -> None:
    """Compare draws the same control with its cost: the MLP stays the default (the presets'
    points keep their keys)."""
    at = _page("views/compare.py")
    box = _arch_box(at, "cmp_arch")
    assert box.value == ModelSpec().arch
    conv = next(n for n, a in ARCHITECTURES.items() if a.title in box.options and a.cpu_width < 1)
    box.set_value(conv).run()
    assert not at.exception, at.exception
    assert _cost_captions(at)


def test_a_comparison_spec_carries_its_model_as_plain_data() -> None:
    from core.runs.compare import comparison_sweeps, spec_from_dict, spec_to_dict, teaching_spec

    spec = teaching_spec()
    conv = {"arch": "lenet5", "width": 0.5}
    with_model = spec_from_dict({**spec_to_dict(spec), "model": conv})
    assert with_model.model == conv and spec_from_dict(spec_to_dict(with_model)) == with_model
    assert "model" not in spec_to_dict(spec)  # the default spec's data is as it was
    sweeps, *_ = comparison_sweeps(with_model)
    assert all(sw["base"]["model"]["arch"] == "lenet5" for _, sw in sweeps)


def test_reconstruction_names_its_network_once(store) -> None:
    """On Reconstruction a registered architecture chosen below sets the page's own legacy
    Model choice to the small MLP and disables it: the config names one network."""
    at = _page("views/reconstruction.py")
    legacy = next(s for s in at.selectbox if s.key == "gl_model")
    assert not legacy.disabled
    box = _arch_box(at, "gl_arch")
    box.set_value("lenet5").run()
    assert not at.exception, at.exception
    legacy = next(s for s in at.selectbox if s.key == "gl_model")
    assert legacy.disabled and legacy.value == "mlp"
    assert "arch: lenet5" in _yaml(at)
    _arch_box(at, "gl_arch").set_value(ModelSpec().arch).run()
    assert not next(s for s in at.selectbox if s.key == "gl_model").disabled

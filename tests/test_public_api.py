"""The public module ``privlab``: run, sweep, compare and load through the result store, with
config input as a mapping, YAML text or a file, and one-line errors; bundles and reports are
delegated to their own modules."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import numpy as np
import pytest
import yaml

import privlab
from core.runs.compare import spec_from_dict, spec_to_dict

ROOT = Path(__file__).resolve().parents[1]
#: the cheapest attribute-privacy run (tests/test_sweeps.py's TINY): a few seconds on one core
BASE = {"fl": {"num_devices": 2, "rounds": 1, "fraction_fit": 1.0, "local_epochs": 1},
        "attack": {"attackers": ["logreg"]}, "pretrain_epochs": 0, "representation_dim": 8,
        "hidden_dim": 16, "critic_hidden": 16}
TINY = {"kind": "attribute_privacy", "data": {"name": "synthetic", "n_samples": 400},
        "projection_points": 0, **BASE}
LAM = "defense.tradeoff_lambda"
SPEC = {"family": "attribute_privacy", "data": "synthetic", "utility": "utility_acc",
        "privacy": "attack_auc_best", "defenses": [{"defense": "tappfl", "grid": [0.0, 1.0]}],
        "seeds": [0], "base": {"data": {"n_samples": 400}, **BASE}}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return privlab.store(tmp_path_factory.mktemp("api") / "cache")


@pytest.fixture(scope="module")
def tiny(store):
    return privlab.run(TINY, store=store)


def test_run_computes_once_then_serves_from_the_store_for_every_config_form(tiny, store, tmp_path):
    assert not tiny.from_cache and tiny.kind == "attribute_privacy" and len(tiny.key) == 64
    assert 0.0 <= tiny.metrics["utility_acc"] <= 1.0
    text = yaml.safe_dump(TINY)
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    for form in (TINY, text, str(path), path, privlab.validate(TINY)):
        again = privlab.run(form, store=store)
        assert again.from_cache and again.key == tiny.key
        np.testing.assert_equal(again.metrics, tiny.metrics)  # NaN bounds compare equal
    seen: list[float] = []
    privlab.run({**TINY, "seed": 1}, store=store, progress=lambda f, m: seen.append(f))
    assert seen and seen[-1] == 1.0


def test_bad_config_is_one_line_naming_the_field(store):
    with pytest.raises(privlab.ConfigError) as err:
        privlab.run({**TINY, "fl": {"rounds": 0}}, store=store)
    assert "\n" not in str(err.value) and "fl.rounds" in str(err.value)
    with pytest.raises(privlab.ConfigError, match="no_such.yaml"):
        privlab.run("no_such.yaml", store=store)


def test_load_by_key_or_prefix_and_a_clear_error_for_an_unknown_key(tiny, store):
    np.testing.assert_equal(privlab.load(tiny.key[:12], store=store).metrics, tiny.metrics)
    assert privlab.load(tiny.key, store=store).key == tiny.key
    with pytest.raises(LookupError, match=r"^key: no stored run matches 'abcdef0123'"):
        privlab.load("abcdef0123", store=store)
    assert tiny.key in [r.key for r in privlab.runs("attribute_privacy", store=store)]


def test_sweep_returns_its_table_and_the_executor_changes_no_key(tiny, store):
    cfg = {"kind": "sweep", "base": TINY, "grid": {LAM: [0.0, 1.0]}, "seeds": [0]}
    sw = privlab.sweep(cfg, store=store)
    assert isinstance(sw, privlab.SweepTable) and sw.points_run == 2 and len(sw.rows) == 2
    assert sw.grid == [LAM] and sw.columns[:2] == [LAM, "seed"]
    assert {"utility_acc", "attack_auc_best"} <= set(sw.metric_names)
    assert [r[LAM] for r in sw.rows] == [0.0, 1.0]
    assert sw.to_frame().shape == (2, len(sw.columns)) and sw.to_csv().startswith(LAM)
    again = privlab.sweep(cfg, store=store, executor="serial", workers=1)
    assert again.key == sw.key and again.points_run == 0
    with pytest.raises(privlab.ConfigError, match="privlab.sweep takes kind: sweep"):
        privlab.sweep(TINY, store=store)


def test_compare_takes_a_mapping_and_reads_its_points_back(store):
    cmp = privlab.compare(SPEC, store=store)
    assert isinstance(cmp, privlab.Comparison)
    assert [c.name for c in cmp.curves] == ["no defense", "TAPPFL (λ)"]
    again = privlab.compare(yaml.safe_dump(SPEC), store=store, executor="serial")
    assert again.points_run == 0 and again.points_cached == cmp.points_run + cmp.points_cached
    assert privlab.headline(again) == privlab.headline(cmp)
    stored = privlab.compare(SPEC, store=store, compute=False)
    assert stored.points_run == 0 and privlab.headline(stored) == privlab.headline(cmp)
    with pytest.raises(privlab.MissingPoints):
        privlab.compare({**SPEC, "seeds": [5]}, store=store, compute=False)
    with pytest.raises(ValueError, match="comparison.colour: unknown field"):
        privlab.compare({**SPEC, "colour": 1}, store=store)


def test_comparison_spec_round_trips_as_plain_data():
    spec = spec_from_dict(SPEC)
    assert spec_from_dict(spec_to_dict(spec)) == spec
    assert yaml.safe_load(yaml.safe_dump(spec_to_dict(spec))) == spec_to_dict(spec)
    with pytest.raises(ValueError, match="comparison.privacy: got None; expected a name"):
        spec_from_dict({k: v for k, v in SPEC.items() if k != "privacy"})


def test_headline_of_a_run_is_its_kinds_headline_with_intervals(tiny):
    nums = privlab.headline(tiny)
    assert list(nums) == ["utility_acc", "attack_auc_best", "tradeoff_lambda"]
    auc = nums["attack_auc_best"]
    lo, hi = tiny.interval("attack_auc_best")
    assert (auc.value, auc.lo, auc.hi) == (tiny.metrics["attack_auc_best"], lo, hi)
    assert auc.tolerance == pytest.approx(hi - lo)
    assert nums["utility_acc"].tolerance == pytest.approx(0.05)  # no interval: the stated one


def test_bundle_and_report_delegate_or_say_they_are_missing(tiny, store, monkeypatch, tmp_path):
    from dashboard.components.bundle_figures import figures_for

    for module in ("cache.bundle", "core.bundle", "core.report"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails
    with pytest.raises(RuntimeError, match="^bundles are not available"):
        privlab.bundle(tiny, tmp_path / "b.zip", store=store)
    with pytest.raises(RuntimeError, match="^bundles are not available"):
        privlab.import_bundle(tmp_path / "b.zip", store=store)
    with pytest.raises(RuntimeError, match="^reports are not available"):
        privlab.report(tiny, store=store)
    calls = []
    fake = types.ModuleType("bundle")
    fake.write_bundle = lambda target, path, **kw: calls.append((target, path, kw)) or "info"
    monkeypatch.setitem(sys.modules, "cache.bundle", fake)
    assert privlab.bundle(tiny, tmp_path / "b.zip", store=store, figures=False) == "info"
    (target, path, kw), = calls
    assert (target, path, kw["store"], kw["figures"]) == (tiny.key, tmp_path / "b.zip", store, False)
    privlab.bundle(tiny, tmp_path / "c.zip", store=store, companions=False)
    assert calls[-1][2]["companions"] is False
    assert calls[-1][2]["figures"] is figures_for  # the default draws the dashboard's figures


def test_bundle_as_the_readme_calls_it_carries_the_dashboards_figures(store, tmp_path):
    """``privlab.bundle(result, path)`` with nothing else, in a fresh process (no builder
    registered by an earlier test), as the README writes it."""
    code = ("import sys, zipfile, privlab\n"
            "assert 'streamlit' not in sys.modules and 'dashboard' not in sys.modules\n"
            f"r = privlab.run({TINY!r}, store={str(store.root)!r})\n"
            "privlab.bundle(r, 'run.zip', store=" + repr(str(store.root)) + ", companions=False)\n"
            "names = zipfile.ZipFile('run.zip').namelist()\n"
            "print(sorted(n for n in names if n.startswith('figures/') and n.endswith('.html')))\n")
    out = subprocess.run([sys.executable, "-c", code], check=False, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "figures/roc.html" in out.stdout, out.stdout


def test_import_privlab_loads_neither_streamlit_nor_the_figures():
    code = ("import sys, privlab\n"
            "print(sorted(m for m in ('streamlit', 'dashboard.components.bundle_figures', 'plotly')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "[]"


def test_parts_and_presets():
    parts = privlab.parts()
    assert parts["defenses"] and parts["attacks"]
    presets = privlab.presets()
    assert presets and all(hasattr(c, "kind") for c in presets.values())


def test_privlab_is_an_installed_module_importable_from_elsewhere(tmp_path):
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "privlab" in setup["py-modules"]
    out = subprocess.run([sys.executable, "-c", "import privlab; print(privlab.__file__)"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert Path(out.stdout.strip()) == ROOT / "privlab.py"

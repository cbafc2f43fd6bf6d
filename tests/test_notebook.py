"""Notebooks that recreate a stored run, sweep or comparison (core.report.notebook): they import only
the public ``privlab`` module (and plotly), state the config as YAML, run headless in a kernel of
this interpreter, and their last cell checks every headline number: equal when read from the
store, within tolerance when recomputed, an AssertionError otherwise."""

from __future__ import annotations

import ast

import nbformat
import numpy as np
import pytest
import yaml
from test_public_api import LAM, SPEC, TINY

import privlab
from core.config.schema import cache_key, parse_config
from core.report.notebook import execute, notebook_for, script_for
from core.runs.compare import MissingPoints, spec_from_dict

ALLOWED_IMPORTS = {"privlab", "plotly", "numpy"}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return privlab.store(tmp_path_factory.mktemp("nb") / "cache")


@pytest.fixture(scope="module")
def tiny(store):
    return privlab.run(TINY, store=store)


def _imports(nb) -> set[str]:
    found = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                found.add((node.module or "").split(".")[0])
    return found


def _stdout(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs if o.get("output_type") == "stream")


def _run_script(src: str, store, monkeypatch) -> dict:
    """The script in this process, against ``store`` as the default store."""
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(store.root))
    ns: dict = {}
    exec(compile(src, "notebook.py", "exec"), ns)  # noqa: S102 - our own generated script
    return ns


def test_a_run_notebook_states_its_config_and_imports_only_the_public_module(tiny, store):
    nb = notebook_for(tiny.key[:12], store=store)
    nbformat.validate(nb)
    assert nb.nbformat == 4 and nb.metadata.kernelspec.name == "python3"
    assert _imports(nb) <= ALLOWED_IMPORTS and "privlab" in _imports(nb)
    config_cell = next(c.source for c in nb.cells if c.source.startswith("CONFIG = "))
    ns: dict = {}
    exec(config_cell, ns)  # noqa: S102
    assert cache_key(parse_config(yaml.safe_load(ns["CONFIG"]))) == tiny.key
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "privlab.run(CONFIG)" in code and "roc_" in code and code.rstrip().endswith('{how}")')
    with pytest.raises(LookupError, match="key: no stored run matches 'abcdef0123'"):
        notebook_for("abcdef0123", store=store)


def test_the_notebook_executes_with_the_store_and_its_numbers_are_equal(tiny, store):
    out = execute(notebook_for(tiny.key, store=store), store=store, timeout=300)
    text = _stdout(out)
    assert "read from the result store" in text
    assert "all 3 headline numbers equal (read from the store)" in text
    plots = [o for c in out.cells if c.cell_type == "code" for o in c.outputs
             if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(plots) == 2  # the ROC and the curves
    assert not [o for c in out.cells if c.cell_type == "code" for o in c.outputs
                if o.get("name") == "stderr" or o.get("output_type") == "error"]


def test_the_notebook_recomputes_into_an_empty_store_within_tolerance(tiny, store, tmp_path):
    empty = privlab.store(tmp_path / "empty")
    out = execute(notebook_for(tiny.key, store=store), store=empty, timeout=300)
    text = _stdout(out)
    assert "recomputed and stored" in text
    assert "all 3 headline numbers within tolerance (recomputed)" in text
    assert [r.key for r in empty.list()] == [tiny.key]  # the same config, the same key


def test_the_script_is_the_same_cells_and_its_check_fails_on_a_changed_number(
        tiny, store, monkeypatch, capsys):
    src = script_for(tiny.key, store=store)
    nb = notebook_for(tiny.key, store=store)
    assert src.count("# %%") == len(nb.cells)
    ns = _run_script(src, store, monkeypatch)
    assert ns["FROM_STORE"] and "headline numbers equal" in capsys.readouterr().out
    want = repr(tiny.metrics["utility_acc"])
    assert f"'utility_acc': ({want}, " in src
    bumped = src.replace(f"'utility_acc': ({want}, ", f"'utility_acc': ({want} + 1e-12, ")
    with pytest.raises(AssertionError, match="utility_acc: exported"):
        _run_script(bumped, store, monkeypatch)


def test_a_sweep_notebook_recreates_its_table_and_checks_every_point(store, monkeypatch, capsys):
    sw = privlab.sweep({"kind": "sweep", "base": TINY, "grid": {LAM: [0.0, 1.0]}, "seeds": [0]},
                       store=store)
    nb = notebook_for(sw.key, store=store)
    assert _imports(nb) <= ALLOWED_IMPORTS and "privlab.sweep(CONFIG)" in script_for(sw, store=store)
    ns = _run_script(script_for(sw.key, store=store), store, monkeypatch)
    assert ns["FROM_STORE"] and len(ns["EXPECTED"]) == 2 * len(sw.metric_names)
    assert "all 6 headline numbers equal" in capsys.readouterr().out
    assert ns["fig"].data and ns["fig"].layout.xaxis.title.text == "utility_acc"


def test_a_comparison_notebook_needs_its_points_stored_then_checks_them(
        store, monkeypatch, capsys):
    spec = spec_from_dict(SPEC)
    with pytest.raises(MissingPoints):
        notebook_for(spec, store=store)
    cmp = privlab.compare(spec, store=store)
    src = script_for(cmp, store=store)
    assert "privlab.compare(SPEC)" in src
    ns = _run_script(src, store, monkeypatch)
    assert ns["FROM_STORE"] and len(ns["EXPECTED"]) == 2 * len(cmp.points())
    assert "headline numbers equal (read from the store)" in capsys.readouterr().out
    assert [t.name for t in ns["fig"].data] == [c.name for c in cmp.curves]


def test_projection_and_reconstruction_runs_redraw_their_embedding_and_images(
        store, monkeypatch, capsys):
    proj = privlab.run({"kind": "projection", "data": {"name": "digits"}, "method": "pca",
                        "max_points": 200}, store=store)
    ns = _run_script(script_for(proj, store=store), store, monkeypatch)
    assert ns["fig"].layout.title.text == "Embedding coloured by the task label"
    assert len(ns["fig"].data[0].x) == len(proj.artifacts["embedding"])

    # a stored reconstruction run (its arrays made up here: the notebook only reads the store)
    from core.foundation.result import Result

    rng = np.random.default_rng(0)
    images = {"targets": rng.random((3, 1, 8, 8)), "recon_idlg": rng.random((3, 1, 8, 8))}

    def made_up(cfg, progress=None, cancel=None) -> Result:
        return Result(kind="gradient_leakage", config=cfg.model_dump(mode="json"), seed=cfg.seed,
                      metrics={"utility_acc": 0.5, "recon_best_psnr_median": 10.0},
                      artifacts=images)

    gl = store.get_or_run({"kind": "gradient_leakage", "data": {"name": "digits"}},
                          runner=made_up)
    nb = notebook_for(gl.key, store=store)
    assert _imports(nb) <= ALLOWED_IMPORTS
    ns = _run_script(script_for(gl.key, store=store), store, monkeypatch)
    assert [a.text for a in ns["fig"].layout.annotations] == ["targets", "recon_idlg"]
    assert ns["fig"].data[0].z.shape == (8, 3 * 8, 3)  # three 8×8 tiles side by side, RGB
    assert "headline numbers equal" in capsys.readouterr().out


def test_a_bundles_notebook_executes_against_the_store_it_was_imported_into(tiny, store,
                                                                            tmp_path):
    """The notebook a bundle carries, run offline against an empty store the bundle was
    imported into: an imported run is never served as computed here, so the notebook runs it
    and every headline number lies within its tolerance of the bundle's."""
    import json
    import zipfile

    from cache.bundle import import_bundle, write_bundle

    write_bundle(tiny.key, tmp_path / "run.zip", store=store, figures=False)
    empty = privlab.store(tmp_path / "empty")
    import_bundle(tmp_path / "run.zip", store=empty)
    with zipfile.ZipFile(tmp_path / "run.zip") as zf:
        nb = nbformat.reads(zf.read("notebook.ipynb").decode(), as_version=4)
        stored = json.loads(zf.read("result.json"))
    out = execute(nb, store=empty, timeout=300)
    text = _stdout(out)
    n = len(privlab.headline(tiny))
    assert f"all {n} headline numbers within tolerance (recomputed)" in text
    for name, number in privlab.headline(tiny).items():  # the bundle holds the same numbers
        assert stored["metrics"][name] == number.value

"""Bundles (cache.bundle): a run, a sweep and a comparison exported and imported into an empty
store come back equal (metrics, intervals, curves, arrays, info); a changed file, a pickled
array and a bundle of another engine are refused with one line and nothing imported, the last
imported read-only on request and marked in History; figures are offline HTML and PNG; the CLI
commands; extras are stored and checked like every file."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from cache.bundle import BundleError, import_bundle, read_manifest, spec_from_dict, write_bundle
from cache.store import ResultStore
from cli.main import main
from core.runs import compare as C

sys.path.insert(0, str(Path(__file__).parent))
from _tappfl_contract import contract_runner

# the smallest configs the other tests use: test_compare's tiny comparison (3 points) and
# test_sweeps' tiny TAPPFL sweep (2 points)
SPEC = C.ComparisonSpec(
    family="membership", data="digits", utility="utility_acc", privacy="mia_loss_auc",
    defenses=(C.DefenseSpec.of("channel", (1.0, 30.0)),), seeds=(0,),
    base={"train": {"members": 60, "epochs": 3},
          "attack": {"attackers": ["loss"], "shadows": 2, "rmia_references": 1}})
TINY = {"kind": "attribute_privacy", "data": {"name": "synthetic", "n_samples": 400},
        "fl": {"num_devices": 2, "rounds": 2, "fraction_fit": 1.0, "local_epochs": 1},
        "attack": {"attackers": ["logreg"]}, "projection_points": 0, "pretrain_epochs": 0,
        "representation_dim": 8, "hidden_dim": 16, "critic_hidden": 16}
SWEEP = {"kind": "sweep", "base": TINY, "grid": {"defense.tradeoff_lambda": [0.0, 1.0]},
         "seeds": [0]}


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A store holding the tiny comparison's points and the tiny sweep (with its points)."""
    store = ResultStore(tmp_path_factory.mktemp("bundle-src"))
    cmp = C.run_comparison(SPEC, store)
    sweep = store.get_or_run(SWEEP)
    return store, cmp, sweep


def same_result(a, b) -> None:
    """Every number of two Results equal (NaN equal to NaN), arrays bit for bit."""
    assert a.key == b.key and a.kind == b.kind and a.config == b.config and a.seed == b.seed
    assert a.engine_version == b.engine_version
    assert a.metrics.keys() == b.metrics.keys() and a.intervals.keys() == b.intervals.keys()
    names = sorted(a.metrics)
    np.testing.assert_array_equal([a.metrics[k] for k in names], [b.metrics[k] for k in names])
    for k in a.intervals:
        assert a.intervals[k].keys() == b.intervals[k].keys()
        np.testing.assert_array_equal([a.intervals[k][f] for f in sorted(a.intervals[k])],
                                      [b.intervals[k][f] for f in sorted(a.intervals[k])])
    assert a.curves.keys() == b.curves.keys()
    for k in a.curves:
        np.testing.assert_array_equal(a.curves[k], b.curves[k])
    assert sorted(a.artifacts) == sorted(b.artifacts)
    for k in a.artifacts:
        assert a.artifacts[k].dtype == b.artifacts[k].dtype
        np.testing.assert_array_equal(a.artifacts[k], b.artifacts[k])
    assert json.dumps(a.info, sort_keys=True) == json.dumps(b.info, sort_keys=True)


def rewrite(src: Path, dst: Path, change) -> None:
    """Copy a bundle, passing each (name, bytes) through ``change`` (None drops the file)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            data = change(name, zin.read(name))
            if data is not None:
                zout.writestr(name, data)


# ---------------------------------------------------------------------------------------------
# round trips into an empty store


def test_run_roundtrip_into_an_empty_store(filled, tmp_path):
    store, cmp, _ = filled
    key = cmp.curves[1].keys[0][0]
    src = store.get(key)
    info = write_bundle(key[:10], tmp_path / "run.zip", store=store, figures=False,
                        extras={"notebook.py": b"print('hello')\n"})
    assert info.kind == "run" and info.keys == [key] and info.points == []
    man = read_manifest(tmp_path / "run.zip")
    with zipfile.ZipFile(tmp_path / "run.zip") as zf:
        names = set(zf.namelist())
        assert yaml.safe_load(zf.read("config.yaml")) == src.config
    assert names == {"manifest.json", *man["files"]}
    assert {"config.yaml", "result.json", "arrays.npz", "notebook.py"} <= names
    assert man["kind"] == "run" and man["keys"] == [key] and man["seeds"] == [src.seed]
    assert man["engine"]["id"] == src.engine_version and len(man["engine"]["fingerprint"]) == 64
    assert {"python", "torch", "numpy", "scikit-learn", "opacus", "scipy", "pydantic"} <= \
        set(man["packages"]) and man["packages"]["numpy"] == np.__version__
    # the companions (notebook, script, report) travel with every bundle; a given extra wins
    assert man["extras"] == ["notebook.ipynb", "notebook.py", "report.html"] and man["created"]
    with zipfile.ZipFile(tmp_path / "run.zip") as zf:
        assert zf.read("notebook.py") == b"print('hello')\n"
        assert b"Release recommendation" in zf.read("report.html")
        assert b"import privlab" in zf.read("notebook.ipynb")

    empty = ResultStore(tmp_path / "empty")
    report = import_bundle(tmp_path / "run.zip", store=empty)
    assert report.imported == [key] and not report.read_only and report.already == []
    same_result(src, empty.get(key))
    # same engine: kept apart from the runs computed here, never served to a run request
    assert empty.peek(src.config) is None
    hit = empty.peek(src.config, imported=True)
    assert hit is not None and hit.key == key
    assert empty.get(key, imported=False) is None and empty.get(key, imported=True) is not None
    (rec,) = empty.list()
    assert rec.origin["bundle"] == "run.zip" and rec.origin["read_only"] is False
    assert rec.origin["engine"] == src.engine_version
    # a second import keeps what is stored
    again = import_bundle(tmp_path / "run.zip", store=empty)
    assert again.imported == [] and again.already == [key]


def test_sweep_roundtrip_brings_every_point(filled, tmp_path):
    store, _, sweep = filled
    info = write_bundle(sweep.key, tmp_path / "sweep.zip", store=store, figures=False)
    keys = [r["key"] for r in sweep.info["rows"]]
    assert info.kind == "sweep" and info.points == keys
    empty = ResultStore(tmp_path / "empty")
    report = import_bundle(tmp_path / "sweep.zip", store=empty)
    assert sorted(report.imported) == sorted([sweep.key, *keys])
    same_result(sweep, empty.get(sweep.key))
    for k in keys:
        same_result(store.get(k), empty.get(k))
    # never served to a run request: the sweep and its points run here, beside the imported
    again = empty.get_or_run(SWEEP)
    assert not again.from_cache and again.key == sweep.key
    assert empty.get(sweep.key, imported=True) is not None
    assert len([r for r in empty.list() if r.key == sweep.key]) == 2


def test_comparison_roundtrip_reads_the_same_curves(filled, tmp_path):
    store, cmp, _ = filled
    info = write_bundle(SPEC, tmp_path / "cmp.zip", store=store, figures=False)
    assert info.kind == "comparison" and info.keys == cmp.sweep_keys and len(info.points) == 3
    empty = ResultStore(tmp_path / "empty")
    report = import_bundle(tmp_path / "cmp.zip", store=empty)
    assert sorted(report.imported) == sorted(info.points) and report.kind == "comparison"
    spec = spec_from_dict(report.spec)
    assert spec == dataclasses.replace(SPEC, executor="serial", workers=None)
    with pytest.raises(C.MissingPoints):  # a comparison of this engine reads no imported run
        C.read_comparison(spec, empty)
    back = C.read_comparison(spec, empty, imported=True)
    assert sorted(back.imported) == sorted(info.points)
    assert [c.name for c in back.curves] == [c.name for c in cmp.curves]
    for a, b in zip(cmp.curves, back.curves, strict=True):
        for f in ("knob", "utility", "leakage", "budget", "leak_lo", "leak_hi"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
        assert a.keys == b.keys
    for k in info.points:
        same_result(store.get(k), empty.get(k))
    with zipfile.ZipFile(tmp_path / "cmp.zip") as zf:
        assert json.loads(zf.read("comparison.json"))["curves"][1]["knob"] == [1.0, 30.0]


# ---------------------------------------------------------------------------------------------
# figures


def test_figures_open_offline_as_html_and_png(filled, tmp_path):
    import dashboard.components.bundle_figures  # noqa: F401 -- registers the figures

    store, cmp, sweep = filled
    key = cmp.curves[0].keys[0][0]
    info = write_bundle(key, tmp_path / "fig.zip", store=store)  # figures=True
    assert info.figures == ["roc", "roc_log"] and info.notes == []
    with zipfile.ZipFile(tmp_path / "fig.zip") as zf:
        html = zf.read("figures/roc.html").decode()
        png = zf.read("figures/roc_log.png")
    assert "<script src=" not in html and "Plotly.newPlot" in html and len(html) > 1_000_000
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    from dashboard.components.bundle_figures import figures_for

    assert list(figures_for(sweep)) == ["sweep"] and list(figures_for(cmp)) == ["comparison"]
    assert "curves" in figures_for(store.get(sweep.info["rows"][0]["key"]))


# ---------------------------------------------------------------------------------------------
# refusals: nothing imported


def _contract_bundle(tmp_path) -> tuple[Path, str]:
    """A fast bundle: one contract-shaped attribute-privacy run (no training)."""
    store = ResultStore(tmp_path / "src")
    r = store.get_or_run(TINY, runner=contract_runner)
    path = tmp_path / "contract.zip"
    write_bundle(r.key, path, store=store, figures=False)
    return path, r.key


def test_a_changed_file_is_refused_by_name_and_nothing_is_imported(tmp_path):
    path, _ = _contract_bundle(tmp_path)
    bad = tmp_path / "bad.zip"
    rewrite(path, bad, lambda n, d: d.replace(b'"seed": 0', b'"seed": 1') if n == "result.json"
            else d)
    empty = ResultStore(tmp_path / "empty")
    with pytest.raises(BundleError, match=r"result\.json does not match its checksum") as exc:
        import_bundle(bad, store=empty)
    assert "\n" not in str(exc.value) and empty.list() == []
    extra = tmp_path / "extra.zip"
    rewrite(path, extra, lambda n, d: d)
    with zipfile.ZipFile(extra, "a") as zf:
        zf.writestr("sneaky.txt", b"x")
    with pytest.raises(BundleError, match="sneaky.txt is not listed"):
        import_bundle(extra, store=empty)
    gone = tmp_path / "gone.zip"
    rewrite(path, gone, lambda n, d: None if n == "arrays.npz" else d)
    with pytest.raises(BundleError, match="arrays.npz is listed in manifest.json but missing"):
        import_bundle(gone, store=empty)
    (tmp_path / "plain.zip").write_bytes(b"not a zip")
    with pytest.raises(BundleError, match="plain.zip is not a zip file"):
        import_bundle(tmp_path / "plain.zip", store=empty)
    assert empty.list() == []


def test_no_pickle_in_the_npz_and_a_pickled_array_is_refused(tmp_path):
    path, _ = _contract_bundle(tmp_path)
    with zipfile.ZipFile(path) as zf:
        npz = zf.read("arrays.npz")
        man = json.loads(zf.read("manifest.json"))
    with np.load(io.BytesIO(npz), allow_pickle=False) as z:  # raises on any object array
        assert z.files and all(not z[k].dtype.hasobject for k in z.files)
    # a bundle whose npz needs pickle (checksum updated to match) is refused on reading it
    buf = io.BytesIO()
    np.savez(buf, evil=np.array([{"a": 1}], dtype=object))
    evil = buf.getvalue()
    import hashlib

    man["files"]["arrays.npz"] = hashlib.sha256(evil).hexdigest()
    bad = tmp_path / "pickled.zip"
    rewrite(path, bad, lambda n, d: evil if n == "arrays.npz" else
            json.dumps(man).encode() if n == "manifest.json" else d)
    empty = ResultStore(tmp_path / "empty")
    with pytest.raises(BundleError, match=r"arrays\.npz holds .evil\.npy. of dtype object .*pickle"):
        import_bundle(bad, store=empty)
    assert empty.list() == []


def test_a_key_that_is_not_its_config_is_refused(tmp_path):
    path, _ = _contract_bundle(tmp_path)
    with zipfile.ZipFile(path) as zf:
        man = json.loads(zf.read("manifest.json"))
        meta = json.loads(zf.read("result.json"))
    meta["config"]["fl"]["rounds"] = 3  # the numbers of another config under this key
    import hashlib

    data = json.dumps(meta).encode()
    man["files"]["result.json"] = hashlib.sha256(data).hexdigest()
    bad = tmp_path / "rekeyed.zip"
    rewrite(path, bad, lambda n, d: data if n == "result.json" else
            json.dumps(man).encode() if n == "manifest.json" else d)
    empty = ResultStore(tmp_path / "empty")
    with pytest.raises(BundleError, match="result.json: its key is not its config's"):
        import_bundle(bad, store=empty)
    assert empty.list() == []


def test_another_engine_is_refused_then_imported_read_only_and_marked(tmp_path, monkeypatch):
    import cache.bundle.write as W
    import core.foundation.fingerprint as F

    other = "0.1.9+abcdefabcdef"
    with monkeypatch.context() as m:  # a bundle written by another engine, its run computed by it
        m.setattr(F, "engine_id", lambda: other)
        m.setattr(W, "engine_id", lambda: other)
        m.setattr(W, "engine_fingerprint", lambda: "ab" * 32)
        store = ResultStore(tmp_path / "src")
        r = store.get_or_run(TINY, runner=lambda cfg, **kw: dataclasses.replace(
            contract_runner(cfg), engine_version=other))
        write_bundle(r.key, tmp_path / "old.zip", store=store, figures=False)
    empty = ResultStore(tmp_path / "empty")
    with pytest.raises(BundleError, match=f"holds runs of engine {re.escape(other)}, this is .*--read-only") \
            as exc:
        import_bundle(tmp_path / "old.zip", store=empty)
    assert "\n" not in str(exc.value) and empty.list() == []
    report = import_bundle(tmp_path / "old.zip", store=empty, read_only=True)
    assert report.read_only and report.imported == [r.key]
    assert report.notes == [("notebook.ipynb and notebook.py: the bundle author's code, never "
                             "run on import; read it before running it")]
    assert "read-only" in report.sentence and other in report.sentence
    same_result(r, empty.get(r.key))
    assert empty.peek(TINY) is None  # never served in place of a run of this engine
    (rec,) = empty.list()
    assert rec.origin["read_only"] is True and rec.origin["engine"] == other
    # the origin survives a lost index (it has its own file beside the entry)
    empty.imports().index.close()
    for p in (empty.root / "imported").glob("index.sqlite*"):
        p.unlink()
    rebuilt = ResultStore(empty.root)
    with pytest.warns(RuntimeWarning, match="rebuilt it from 1 stored runs"):
        assert rebuilt.list()[0].origin == rec.origin
    check = rebuilt.verify()
    assert check.clean and check.entries_ok == 1  # an imported entry is a sound entry

    from cache.bundle.origin import origin_text

    assert origin_text(rec.origin) == (f"imported from old.zip on {rec.origin['imported'][:10]} "
                                       f"(engine {other}; read-only)")
    assert origin_text(None) == ""


def test_history_shows_where_an_imported_run_came_from(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    path, key = _contract_bundle(tmp_path)
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "page"))
    from cache.store import default_store

    import_bundle(path, store=default_store())
    app = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
    at = AppTest.from_file(app, default_timeout=60).run()
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    table = at.table[0].value
    assert list(table["origin"]) == [f"imported from contract.zip on {table['created (UTC)'][0][:10]}"]
    assert f"Run {key[:12]} was imported from contract.zip" in " ".join(c.value for c in at.caption)
    assert any(b.label == "Bundle (.zip)" for b in at.get("download_button"))


def test_bad_extras_and_targets_are_one_line_errors(filled, tmp_path):
    store, _, _ = filled
    for name in ("manifest.json", "../x", "figures/a.png", ".hidden", "a/b"):
        with pytest.raises(BundleError, match="extras: got the name"):
            write_bundle(store.list()[0].key, tmp_path / "x.zip", store=store, figures=False,
                         extras={name: b"x"})
    with pytest.raises(BundleError, match="no stored run matches 'abcdef123456'"):
        write_bundle("abcdef123456", tmp_path / "x.zip", store=store, figures=False)
    missing = dataclasses.replace(SPEC, seeds=(5,))
    with pytest.raises(BundleError, match="comparison: .* is not stored; run the comparison first"):
        write_bundle(missing, tmp_path / "x.zip", store=store, figures=False)
    assert not (tmp_path / "x.zip").exists()


# ---------------------------------------------------------------------------------------------
# the command line


def test_cli_bundle_and_import(filled, tmp_path, capsys):
    store, cmp, _ = filled
    src = ["--cache-dir", str(store.root)]
    dst = ["--cache-dir", str(tmp_path / "dst")]
    key = cmp.curves[1].keys[1][0]
    out = tmp_path / "one.zip"
    assert main(["bundle", key[:8], "-o", str(out), "--no-figures", *src]) == 0
    assert "a run bundle" in capsys.readouterr().out
    assert main(["bundle", key[:8], "-o", str(out), "--no-figures", *src]) == 2
    assert "exists; give --force" in capsys.readouterr().err
    assert main(["bundle", "-o", str(out), *src]) == 2
    assert "give a run or sweep KEY, or --comparison" in capsys.readouterr().err
    spec_file = tmp_path / "spec.yaml"
    from cache.bundle import spec_to_dict

    spec_file.write_text(yaml.safe_dump(spec_to_dict(SPEC)))
    assert main(["bundle", "--comparison", str(spec_file), "-o", str(tmp_path / "c.zip"),
                 "--no-figures", *src]) == 0
    assert "a comparison bundle" in capsys.readouterr().out
    assert main(["import", str(out), "--json", *dst]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["imported"] == [key] and got["read_only"] is False
    assert main(["import", str(tmp_path / "c.zip"), *dst]) == 0
    assert "imported 2 runs of a comparison bundle; 1 already stored" in capsys.readouterr().out
    # privlab list / show say where an imported run came from
    assert main(["list", *dst]) == 0
    assert "imported from one.zip on" in capsys.readouterr().out
    assert main(["show", key[:12], *dst]) == 0
    assert "origin   imported from one.zip on" in capsys.readouterr().out
    assert main(["list", *src]) == 0
    assert "imported from" not in capsys.readouterr().out  # runs computed here: no column
    bad = tmp_path / "bad.zip"
    rewrite(out, bad, lambda n, d: d + b" " if n == "config.yaml" else d)
    assert main(["import", str(bad), "--cache-dir", str(tmp_path / "d3")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "config.yaml does not match its checksum" in err


def test_the_dashboard_builds_a_bundle_once_per_target(monkeypatch):
    """Two clicks (two sessions at once, or one after the other) build one bundle."""
    import threading
    import time

    import cache.bundle
    from dashboard.components import bundle_button as B

    calls = []

    def fake(target, buf, *, store):
        calls.append(target)
        time.sleep(0.3)  # long enough for the other clicks to arrive while it builds
        buf.write(b"zip of " + target.encode())

    monkeypatch.setattr(cache.bundle, "write_bundle", fake)
    monkeypatch.setattr(B, "_BUILT", type(B._BUILT)())
    got = []
    threads = [threading.Thread(target=lambda: got.append(B.bundle_bytes("ab" * 32)))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [b"zip of " + b"ab" * 32] * 3 and calls == ["ab" * 32]
    B.bundle_bytes("cd" * 32)
    assert calls == ["ab" * 32, "cd" * 32]

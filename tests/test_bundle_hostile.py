"""Hostile and forged bundles (cache.bundle.read, .limits, .decode): each class of attack is
refused with one line and leaves the store as it was, or, where the bundle is well formed but
its numbers are not this engine's, is imported apart and never served to a run request.

Classes: path escapes, links, inflation beyond the declared size, oversized manifests, nesting,
damaged streams (deflate, UTF-8, npz, YAML), forged metrics, foreign engines, duplicate names,
half imports, concurrent imports, code in notebooks."""

from __future__ import annotations

import io
import json
import stat
import sys
import threading
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

import cache.bundle.limits as L
from cache.bundle import BundleError, import_bundle, write_bundle
from cache.errors import StoreIOError
from cache.store import ImportedRuns, ResultStore

sys.path.insert(0, str(Path(__file__).parent))
from _tappfl_contract import contract_runner
from test_bundle import SWEEP, TINY

from benchmarks.bundle_trust import edit_result, entries, forge, shrink_declared


def contract_bundle(tmp: Path, config=TINY) -> tuple[Path, ResultStore, str]:
    store = ResultStore(tmp / "src")
    r = store.get_or_run(config, runner=contract_runner)
    path = tmp / "run.zip"
    write_bundle(r.key, path, store=store, figures=False)
    return path, store, r.key


@pytest.fixture
def bundle(tmp_path):
    return contract_bundle(tmp_path)


@pytest.fixture(scope="module")
def sweep_bundle(tmp_path_factory):
    """A sweep of two contract-shaped points (no training): three runs in one bundle."""
    import core.runs.experiments as E

    tmp = tmp_path_factory.mktemp("sweep")
    real = E.run
    mp = pytest.MonkeyPatch()
    mp.setattr(E, "run", lambda cfg, **kw: contract_runner(cfg) if cfg.kind == "attribute_privacy"
               else real(cfg, **kw))
    try:
        store = ResultStore(tmp / "src")
        sweep = store.get_or_run(SWEEP)
        path = tmp / "sweep.zip"
        write_bundle(sweep.key, path, store=store, figures=False)
    finally:
        mp.undo()
    return path, sweep.key


def refused(path, store: ResultStore, match: str, **kw) -> str:
    """The one-line refusal of importing ``path``; the store holds nothing afterwards."""
    with pytest.raises(BundleError, match=match) as exc:
        import_bundle(path, store=store, **kw)
    msg = str(exc.value)
    assert "\n" not in msg and len(msg) < 400, msg
    assert store.list() == [] and not (store.root / "imported").exists()
    return msg


# ---------------------------------------------------------------------------------------------
# names: path escapes, links, duplicates


@pytest.mark.parametrize("name", ["../evil.txt", "/etc/evil", "points/../../evil", "a\\b.txt",
                                  "figures/../../x.html", "dir/", ".hidden", "C:evil"])
def test_path_escapes_are_refused(bundle, tmp_path, name):
    path, _, _ = bundle
    bad = forge(path, tmp_path / "bad.zip", add=[(name, b"x")])
    refused(bad, ResultStore(tmp_path / "empty"), "is not a file a bundle holds")


def test_links_are_refused(bundle, tmp_path):
    path, _, _ = bundle
    link = zipfile.ZipInfo("notes.txt")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    bad = forge(path, tmp_path / "link.zip", add=[(link, b"/etc/passwd")])
    refused(bad, ResultStore(tmp_path / "empty"), "notes.txt is a link")


def test_duplicate_names_are_refused(bundle, tmp_path):
    path, _, _ = bundle
    bad = tmp_path / "dup.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        for info, data in entries(path):
            zf.writestr(info.filename, data)
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("result.json", b"{}")
    refused(bad, ResultStore(tmp_path / "empty"), "holds a file name twice")


# ---------------------------------------------------------------------------------------------
# sizes: inflation beyond the declared size, oversized manifests and directories


def test_inflation_beyond_the_declared_size_stops_and_is_refused(bundle, tmp_path):
    path, _, _ = bundle
    big = b"\x00" * (200 << 20)  # 200 MB of zeros: about 200 kB deflated
    bad = forge(path, tmp_path / "bomb.zip", add=[("padding.txt", big)])
    del big
    data = shrink_declared(bad.read_bytes(), "padding.txt", 1000)
    empty = ResultStore(tmp_path / "empty")
    tracemalloc.start()
    try:
        msg = refused(data, empty, r"padding\.txt is damaged .*CRC")
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 40 << 20, (peak, msg)  # the stream stopped at the declared 1000 bytes


def test_a_file_larger_than_the_cap_is_refused_while_it_streams(bundle, tmp_path, monkeypatch):
    path, _, _ = bundle
    bad = forge(path, tmp_path / "large.zip", add=[("padding.txt", b"a" * (3 << 20))])
    monkeypatch.setattr(L, "MAX_ENTRY", 1 << 20)
    refused(bad, ResultStore(tmp_path / "e1"), r"padding\.txt declares 3,145,728 bytes")
    monkeypatch.setattr(L, "MAX_TOTAL", 2 << 20)
    monkeypatch.setattr(L, "MAX_ENTRY", 8 << 20)
    refused(bad, ResultStore(tmp_path / "e2"), "inflate to more than 2 MB")


def test_oversized_manifests_and_directories_are_refused(bundle, tmp_path):
    path, _, _ = bundle
    empty = ResultStore(tmp_path / "empty")
    huge = forge(path, tmp_path / "m1.zip", manifest=lambda m: m.update(
        padding=["x" * 10] * 500_000))  # about 7 MB of small items
    refused(huge, empty, r"manifest\.json declares .* allowed: at most 4 MB")
    many = forge(path, tmp_path / "m2.zip", manifest=lambda m: m["files"].update(
        {f"f{i}.txt": "0" * 64 for i in range(L.MAX_ENTRIES + 1)}))
    refused(many, empty, "lists more than 5,000 files, runs or keys")
    crowd = forge(path, tmp_path / "m3.zip", add=[(f"f{i}.txt", b"") for i in range(5001)])
    refused(crowd, empty, "lists 5,00[0-9] files .* allowed: at most 5,000 files")


# ---------------------------------------------------------------------------------------------
# decoders: nesting, damaged streams, bad UTF-8, bad npz, YAML


def test_deeply_nested_json_and_yaml_are_one_line_refusals(bundle, tmp_path):
    path, _, _ = bundle
    empty = ResultStore(tmp_path / "empty")
    deep = b"[" * 200_000 + b"]" * 200_000
    bad = forge(path, tmp_path / "n1.zip", rehash=False)
    bad = _replace_entry(bad, tmp_path / "n1b.zip", "manifest.json", deep)
    refused(bad, empty, r"manifest\.json is nested deeper than 64 levels")
    nested = forge(path, tmp_path / "n2.zip", change=lambda n, d: edit_result(
        d, lambda m: m["info"].update(x=_nest(100))) if n == "result.json" else d)
    refused(nested, empty, r"result\.json is nested deeper than 64 levels")
    yaml_deep = forge(path, tmp_path / "n3.zip", change=lambda n, d:
                      b"a: " + b"[" * 5000 + b"]" * 5000 if n == "config.yaml" else d)
    refused(yaml_deep, empty, r"config\.yaml is nested deeper than 64 levels")
    laughs = b"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n"
    bomb = forge(path, tmp_path / "n4.zip", change=lambda n, d: laughs if n == "config.yaml" else d)
    refused(bomb, empty, r"config\.yaml uses a YAML alias")


def _nest(depth: int):
    v: list = []
    for _ in range(depth):
        v = [v]
    return v


def _replace_entry(src: Path, dst: Path, name: str, data: bytes) -> Path:
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, d in entries(src):
            zf.writestr(info.filename, data if info.filename == name else d)
    return dst


def test_damaged_streams_are_one_line_refusals(bundle, tmp_path):
    path, _, _ = bundle
    empty = ResultStore(tmp_path / "empty")
    # a corrupt deflate stream: bytes in the middle of result.json's compressed data flipped
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("result.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + 10, start + 40):
        raw[i] ^= 0xFF
    refused(bytes(raw), empty, r"result\.json is damaged|result\.json does not match")
    # a truncated zip, and not a zip at all
    refused(path.read_bytes()[:-300], empty, "is not a zip file")
    refused(b"PK\x05\x06" + b"\0" * 10, empty, "is not a zip file")
    # bad UTF-8, a bad npz, a broken YAML: checksums recomputed, so only the decoder can tell
    cases = {"result.json": (b'{"kind": "\xff\xfe"}', r"result\.json is not UTF-8 text"),
             "arrays.npz": (b"PK\x03\x04 not an npz", r"arrays\.npz is not a zip file"),
             "config.yaml": (b"a: [unclosed\n", r"config\.yaml is not YAML"),
             "notebook.ipynb": (b"{not json", r"notebook\.ipynb is not JSON"),
             "report.html": (b"<p>\xc3</p>", r"report\.html is not UTF-8 text")}
    for name, (data, match) in cases.items():
        bad = forge(path, tmp_path / "d.zip", change=lambda n, d, name=name, data=data:
                    data if n == name else d)
        refused(bad, empty, match)


def test_an_npz_whose_header_lies_about_its_size_is_refused(bundle, tmp_path):
    """An .npy header declaring a billion doubles over 80 bytes: refused before np.load could
    make the array."""
    path, _, _ = bundle
    npy = io.BytesIO()
    np.lib.format.write_array_header_1_0(npy, {"descr": "<f8", "fortran_order": False,
                                               "shape": (10**9,)})
    npy.write(b"\0" * 80)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.npy", npy.getvalue())
    bad = forge(path, tmp_path / "npz.zip", change=lambda n, d: buf.getvalue()
                if n == "arrays.npz" else d)
    refused(bad, ResultStore(tmp_path / "empty"), r"arrays\.npz holds 'a\.npy' whose header "
            "declares another size")


# ---------------------------------------------------------------------------------------------
# forged numbers and foreign engines: refused, or imported apart and never served


@pytest.mark.parametrize("metric, value, match", [
    ("attack_logreg_auc", 7.0, r"metric attack_logreg_auc: got 7.0; allowed range 0 <= value <= 1"),
    ("utility_acc", -3.0, r"metric utility_acc: got -3.0; allowed range -1 <= value <= 1"),
    ("attack_logreg_acc", None, "attack_logreg_acc: got nan"),
    ("attack_logreg_acc", "inf", "attack_logreg_acc: got inf"),
    ("mia_fake_auc", 0.5, "metric mia_fake_auc: not a metric this engine reports"),
])
def test_forged_metrics_are_refused(bundle, tmp_path, metric, value, match):
    path, _, _ = bundle
    bad = forge(path, tmp_path / "forged.zip", change=lambda n, d: edit_result(
        d, lambda m: m["metrics"].update({metric: value})) if n == "result.json" else d)
    refused(bad, ResultStore(tmp_path / "empty"), match)


def test_a_forged_interval_is_refused(bundle, tmp_path):
    path, _, _ = bundle
    bad = forge(path, tmp_path / "iv.zip", change=lambda n, d: edit_result(
        d, lambda m: m["intervals"]["attack_logreg_auc"].update(lo=0.9, hi=0.1))
        if n == "result.json" else d)
    refused(bad, ResultStore(tmp_path / "empty"), "interval of attack_logreg_auc")


def test_a_plausible_forgery_is_imported_apart_and_never_served(bundle, tmp_path):
    """The issue's case: a result.json edited to other (possible) numbers, checksums
    recomputed. It imports (nothing proves it false), but a run of the same config computes
    here, and the forged numbers stay marked as imported beside it."""
    path, _, key = bundle
    forged = forge(path, tmp_path / "forged.zip", change=lambda n, d: edit_result(
        d, lambda m: m["metrics"].update(attack_logreg_acc=0.999)) if n == "result.json" else d)
    store = ResultStore(tmp_path / "victim")
    report = import_bundle(forged, store=store)
    assert report.imported == [key] and not report.read_only
    assert store.peek(TINY) is None
    served = store.get_or_run(TINY, runner=contract_runner)
    assert not served.from_cache and served.metrics["attack_logreg_acc"] != 0.999
    assert store.get_or_run(TINY, runner=contract_runner).from_cache  # its own run, from now on
    assert store.get(key).metrics["attack_logreg_acc"] != 0.999  # a run request's view
    assert store.get(key, imported=True).metrics["attack_logreg_acc"] == 0.999
    origins = sorted(bool(r.origin) for r in store.list())
    assert origins == [False, True]
    with pytest.raises(TypeError):
        store.imports().get_or_run(TINY)


def test_a_read_only_import_with_this_engines_key_is_never_served(bundle, tmp_path, monkeypatch):
    """A bundle claiming another engine while its key is the one this engine computes."""
    path, _, key = bundle
    bad = forge(path, tmp_path / "foreign.zip",
                manifest=lambda m: m["engine"].update(id="9.9.9+forged", fingerprint="cd" * 32))
    store = ResultStore(tmp_path / "victim")
    refused(bad, store, r"holds runs of engine 9\.9\.9\+forged, this is .* --read-only")
    report = import_bundle(bad, store=store, read_only=True)
    assert report.read_only and report.imported == [key]
    assert store.peek(TINY) is None
    assert not store.get_or_run(TINY, runner=contract_runner).from_cache


def test_foreign_engine_fields_of_the_wrong_type_are_refused(bundle, tmp_path):
    path, _, _ = bundle
    bad = forge(path, tmp_path / "e.zip", manifest=lambda m: m.update(engine=["x"]))
    refused(bad, ResultStore(tmp_path / "empty"), "engine must name its id and fingerprint")
    bad = forge(path, tmp_path / "e2.zip", change=lambda n, d: edit_result(
        d, lambda m: m.update(engine_version="../../x y")) if n == "result.json" else d)
    refused(bad, ResultStore(tmp_path / "empty2"), "engine_version must be an engine id",
            read_only=True)


# ---------------------------------------------------------------------------------------------
# half and concurrent imports


def test_a_damaged_file_read_last_leaves_nothing(sweep_bundle, tmp_path):
    path, _ = sweep_bundle
    # report.html sorts after every run's files: a half import would have stored them already
    bad = forge(path, tmp_path / "late.zip", change=lambda n, d: b"\xff" if n == "report.html"
                else d)
    refused(bad, ResultStore(tmp_path / "empty"), r"report\.html is not UTF-8")


def test_a_write_failing_midway_takes_back_what_it_added(sweep_bundle, tmp_path, monkeypatch):
    path, _ = sweep_bundle
    store = ResultStore(tmp_path / "store")
    real = ImportedRuns.add
    calls = []

    def failing(self, result, *, origin):
        calls.append(result.key)
        if len(calls) == 2:
            raise StoreIOError("write run: no space left on device (injected)")
        return real(self, result, origin=origin)

    monkeypatch.setattr(ImportedRuns, "add", failing)
    with pytest.raises(StoreIOError):
        import_bundle(path, store=store)
    assert len(calls) == 2 and store.list() == []
    monkeypatch.setattr(ImportedRuns, "add", real)
    assert len(import_bundle(path, store=store).imported) == 3


def test_concurrent_imports_store_each_run_once(sweep_bundle, tmp_path):
    path, sweep_key = sweep_bundle
    store = ResultStore(tmp_path / "store")
    reports, errors = [], []

    def one() -> None:
        try:
            reports.append(import_bundle(path, store=ResultStore(store.root)))
        except Exception as exc:  # noqa: BLE001 -- collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(len(r.imported) for r in reports) == [0, 0, 0, 3]
    assert all(len(r.imported) + len(r.already) == 3 for r in reports)
    keys = [r.key for r in store.list()]
    assert len(keys) == 3 == len(set(keys)) and sweep_key in keys
    assert store.verify().clean


# ---------------------------------------------------------------------------------------------
# code in notebooks


def test_code_in_a_notebook_is_never_run_and_is_named(bundle, tmp_path):
    path, _, key = bundle
    marker = tmp_path / "ran.txt"
    code = f"open({str(marker)!r}, 'w').write('ran')\n"
    nb = {"cells": [{"cell_type": "code", "source": code, "metadata": {}, "outputs": [],
                     "execution_count": None}], "metadata": {}, "nbformat": 4,
          "nbformat_minor": 5}
    bad = forge(path, tmp_path / "nb.zip", change=lambda n, d: json.dumps(nb).encode()
                if n == "notebook.ipynb" else code.encode() if n == "notebook.py" else d)
    store = ResultStore(tmp_path / "store")
    report = import_bundle(bad, store=store)
    assert report.imported == [key] and not marker.exists()
    assert any("never run on import" in n for n in report.notes)


def test_the_zip_crc_still_guards_a_stored_entry(bundle, tmp_path):
    """A stored (not deflated) file whose bytes changed without its CRC: zipfile's CRC check
    is a damaged stream, one line."""
    path, _, _ = bundle
    out = tmp_path / "stored.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for info, d in entries(path):
            zf.writestr(info.filename, d)
    raw = bytearray(out.read_bytes())
    with zipfile.ZipFile(out) as zf:
        info = zf.getinfo("config.yaml")
    at = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[at] ^= 0x01
    assert zlib.crc32(bytes(raw[at:at + info.file_size])) != info.CRC
    refused(bytes(raw), ResultStore(tmp_path / "empty"), r"config\.yaml is damaged .*CRC")


# ---------------------------------------------------------------------------------------------
# privlab verify --recompute


def test_verify_recompute_says_whether_an_imported_run_agrees(bundle, tmp_path, monkeypatch,
                                                               capsys):
    import core.runs.experiments as E
    from cache.bundle.recompute import recompute
    from cli.main import main

    monkeypatch.setattr(E, "run", lambda cfg, **kw: contract_runner(cfg))
    path, _, key = bundle
    forged = forge(path, tmp_path / "forged.zip", change=lambda n, d: edit_result(
        d, lambda m: m["metrics"].update(attack_logreg_acc=0.999)) if n == "result.json" else d)
    honest_store = ResultStore(tmp_path / "honest")
    import_bundle(path, store=honest_store)
    root = str(honest_store.root)
    assert main(["verify", "--recompute", key[:10], "--cache-dir", root]) == 0
    out = capsys.readouterr().out
    assert "metrics agree with this engine's run" in out and "attack_logreg_acc" in out
    forged_store = ResultStore(tmp_path / "forged")
    import_bundle(forged, store=forged_store)
    got = recompute(forged_store, key)
    assert got.from_cache is False and not got.agree  # the second call reads the run stored here
    (bad,) = [c for c in got.checks if not c.agrees]
    assert bad.name == "attack_logreg_acc" and bad.imported == 0.999
    assert bad.how == "outside the other's interval"
    assert main(["verify", "--recompute", key, "--json", "--cache-dir",
                 str(forged_store.root)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["agree"] is False and data["from_cache"] is True
    # a key that is no imported run: one line, exit 2
    assert main(["verify", "--recompute", "abcdef0123", "--cache-dir", root]) == 2
    assert "no imported run matches" in capsys.readouterr().err

"""Store faults (issue 21): a full disk keeps the history, an I/O error is never called
corruption, a lost / emptied / truncated / damaged index is rebuilt from the entries, stages
are verified like results, ``verify`` and ``show`` on corrupt entries, ``gc`` of leftovers,
SIGKILL during writes, safe exports, and the CLI's one-line store errors."""

from __future__ import annotations

import errno
import json
import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cache import entry as entry_mod
from cache.entry import CorruptEntry
from cache.errors import StoreIOError
from cache.export import neutralise
from cache.stages import DirStageStore
from cache.store import ResultStore
from cli.main import main
from core.config.schema import ProjectionConfig
from core.foundation.result import Result
from core.foundation.stages import StageOutput, Stages

ROOT = Path(__file__).resolve().parents[1]


def runner(cfg, progress=None, cancel=None) -> Result:
    return Result(kind=cfg.kind, config={}, seed=cfg.seed, metrics={"x": float(cfg.seed)},
                  artifacts={"a": np.arange(50, dtype=np.float64) * cfg.seed})


def cfg(seed: int) -> ProjectionConfig:
    return ProjectionConfig(seed=seed, max_points=100)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every stored byte that is history: entries and the index's rows."""
    files = {str(p.relative_to(root)): p.read_bytes() for p in (root / "runs").rglob("*")
             if p.is_file()}
    return files


def rows(root: Path) -> list[tuple]:
    c = sqlite3.connect(root / "index.sqlite")
    try:
        return sorted(c.execute("SELECT key, sha_result, sha_artifacts FROM runs").fetchall())
    finally:
        c.close()


@pytest.fixture
def filled(tmp_path):
    store = ResultStore(tmp_path / "s")
    keys = [store.get_or_run(cfg(s), runner=runner).key for s in range(3)]
    return store, keys


# -- full disk, read-only, permission: reported as such, nothing already stored changes -------

def test_full_disk_on_the_entry_write_keeps_history(filled, monkeypatch):
    store, keys = filled
    before, before_rows = snapshot(store.root), rows(store.root)

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(entry_mod, "_write_synced", full)
    with pytest.raises(StoreIOError) as err:
        store.get_or_run(cfg(9), runner=runner)
    msg = str(err.value)
    assert "no space left on device" in msg and "needs" in msg and "\n" not in msg
    assert "nothing already stored was changed" in msg
    monkeypatch.undo()
    assert snapshot(store.root) == before and rows(store.root) == before_rows
    assert list(store.tmp_dir.iterdir()) == []
    fresh = ResultStore(store.root)  # reopening: no rebuild, no index set aside
    assert not fresh.notes and not list(store.root.glob("index.sqlite.corrupt-*"))
    assert {r.key for r in fresh.list()} == set(keys)


def test_full_disk_on_the_index_write_rolls_the_entry_back(filled):
    """SQLite's own 'database or disk is full' (SQLITE_FULL, via max_page_count) is an I/O
    error: the new entry is taken back out, the healthy index is kept, nothing is renamed."""
    store, _ = filled
    before, before_rows = snapshot(store.root), rows(store.root)
    c = store.index.conn()
    pages = c.execute("PRAGMA page_count").fetchone()[0]
    c.execute(f"PRAGMA max_page_count={pages}")
    big = {f"m{i}": float(i) for i in range(3000)}  # a row too large for the pages left

    def fat(cfg_, progress=None, cancel=None):
        return Result(kind=cfg_.kind, config={}, seed=cfg_.seed, metrics=big)

    with pytest.raises(StoreIOError, match="no space left on device"):
        store.get_or_run(cfg(7), runner=fat)
    assert snapshot(store.root) == before and rows(store.root) == before_rows
    store.index.close()
    fresh = ResultStore(store.root)
    assert not fresh.notes and not list(store.root.glob("index.sqlite.corrupt-*"))
    assert fresh.get_or_run(cfg(1), runner=runner).from_cache


def test_disk_refused_before_writing_when_free_space_is_short(filled, monkeypatch):
    store, _ = filled
    import cache.store as store_mod

    monkeypatch.setattr(store_mod, "_free", lambda root: 10)
    with pytest.raises(StoreIOError, match=r"needs \d[\d.]* (B|kB), 10 B free"):
        store.get_or_run(cfg(8), runner=runner)
    assert list(store.tmp_dir.iterdir()) == []


def test_read_only_store_serves_history_and_stores_nothing(filled, monkeypatch):
    store, keys = filled
    store.index.close()
    import cache.store as store_mod

    monkeypatch.setattr(store_mod, "writable", lambda path: False)
    ro = ResultStore(store.root)
    assert ro.read_only and {r.key for r in ro.list()} == set(keys)
    assert ro.get(keys[0]).metrics == {"x": 0.0}
    assert ro.get_or_run(cfg(2), runner=runner).from_cache
    with pytest.raises(StoreIOError, match="read-only file system"):
        ro.get_or_run(cfg(5), runner=runner)
    with pytest.raises(StoreIOError, match="read-only"):
        ro.delete(keys[0])
    assert len(ro.list()) == 3


def test_permission_error_on_read_is_not_corruption(filled, monkeypatch):
    store, keys = filled
    real = Path.read_bytes

    def denied(self):
        if self.name == "artifacts.npz":
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(StoreIOError, match="permission denied"):
        store.get_or_run(cfg(1), runner=runner)
    monkeypatch.undo()
    assert store.entry_dir(keys[1]).is_dir() and len(store.list()) == 3  # nothing removed


# -- the index: lost, emptied, truncated, damaged -> rebuilt from the entries ------------------

@pytest.mark.parametrize("how", ["missing", "empty", "truncated", "garbage", "no_table"])
def test_index_rebuilt_from_entries(filled, how):
    store, keys = filled
    store.index.close()
    idx = store.root / "index.sqlite"
    data = idx.read_bytes()
    for p in store.root.glob("index.sqlite*"):
        p.unlink()
    if how == "empty":
        idx.write_bytes(b"")
    elif how == "truncated":
        idx.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        idx.write_bytes(b"not a database" * 100)
    elif how == "no_table":
        sqlite3.connect(idx).execute("CREATE TABLE other (x)").connection.close()
    with pytest.warns(RuntimeWarning, match="rebuilt it from 3 stored runs"):
        fresh = ResultStore(store.root)
    assert {r.key for r in fresh.list()} == set(keys)
    assert fresh.get_or_run(cfg(2), runner=runner).from_cache


def test_cli_list_on_a_broken_index_is_one_line(filled, capsys, monkeypatch):
    store, keys = filled
    store.index.close()
    (store.root / "index.sqlite").write_bytes(b"\x00" * 4096)
    for p in store.root.glob("index.sqlite-*"):
        p.unlink()
    import cache.store as store_mod

    monkeypatch.setattr(store_mod, "_STORES", {})
    assert main(["list", "--cache-dir", str(store.root)]) == 0
    out = capsys.readouterr()
    assert all(k[:12] in out.out for k in keys)
    assert out.err.count("\n") == 1 and "privlab: note: result store:" in out.err
    # an index the file system refuses: one line, exit 1, history untouched
    monkeypatch.setattr(store_mod, "_STORES", {})

    def refuse(*a, **k):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(sqlite3, "connect", refuse)
    assert main(["list", "--cache-dir", str(store.root)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("privlab: error: result store: cannot open")


def test_damaged_index_row_is_rewritten_from_a_sound_entry(filled):
    store, keys = filled
    store.index._write("UPDATE runs SET sha_result = ?, metrics = ? WHERE key = ?",
                       ("0" * 64, '{"x": 99.0}', keys[1]))
    rep = store.verify()
    assert len(rep.rows_damaged) == 1 and not rep.entries_corrupt and not rep.clean
    hit = store.get_or_run(cfg(1), runner=runner)  # the entry proves itself: served, row fixed
    assert hit.from_cache and hit.metrics == {"x": 1.0}
    assert store.verify().clean


# -- corrupt entries: show says so and leaves it, verify --repair removes only what fails -----

def test_show_on_a_corrupt_entry_says_so_and_leaves_it(filled, capsys):
    store, keys = filled
    npz = store.entry_dir(keys[0]) / "artifacts.npz"
    b = bytearray(npz.read_bytes())
    b[len(b) // 2] ^= 0x01
    npz.write_bytes(bytes(b))
    d = ["--cache-dir", str(store.root)]
    assert main(["show", keys[0][:10], *d]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "corrupt" in err and "artifacts.npz checksum mismatch" in err
    assert npz.exists() and keys[0] in {r.key for r in store.list()}
    assert main(["verify", *d]) == 1
    out = capsys.readouterr().out
    assert "1 corrupt" in out and "verify --repair" in out
    assert main(["verify", "--repair", "--json", *d]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["repaired"] == [keys[0]] and rep["entries_ok"] == 2
    assert not store.entry_dir(keys[0]).exists() and len(store.list()) == 2
    assert main(["verify", *d]) == 0


def test_bit_flips_in_every_file_of_an_entry_are_never_served(filled):
    store, keys = filled
    d = store.entry_dir(keys[2])
    for name in ("result.json", "artifacts.npz", "sha256.json"):
        f = d / name
        good = f.read_bytes()
        for pos in (0, len(good) // 2, len(good) - 1):
            b = bytearray(good)
            b[pos] ^= 0x10
            f.write_bytes(bytes(b))
            r = store.get(keys[2])
            assert r is None or (r.metrics == {"x": 2.0}
                                 and np.array_equal(r.artifacts["a"], np.arange(50) * 2.0)), (name, pos)
            f.write_bytes(good)
        assert store.get(keys[2], strict=True).metrics == {"x": 2.0}


# -- stages carry checksums: a flipped byte is discarded, recomputed and noted ----------------

@pytest.mark.parametrize("name", ["weights.pt", "arrays.npz", "meta.json", "sha256.json"])
def test_flipped_stage_byte_is_discarded_recomputed_and_noted(tmp_path, name):
    import torch

    store = DirStageStore(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return StageOutput({"r": np.arange(6.0)}, {"m": 1}, {"net": {"w": torch.ones(3)}})

    Stages(store).get("train", {"p": 1}, compute)
    d = next((tmp_path / "train").glob("??/*"))
    f = d / name
    b = bytearray(f.read_bytes())
    b[len(b) // 2] ^= 0x01
    f.write_bytes(bytes(b))
    view = Stages(store)
    out, _ = view.get("train", {"p": 1}, compute)
    assert len(calls) == 2 and view.log["train"] == "computed"
    assert len(view.notes) == 1 and "discarded and recomputed" in view.notes[0]
    assert np.array_equal(out.arrays["r"], np.arange(6.0))
    again = Stages(store)
    again.get("train", {"p": 1}, compute)  # the recomputed entry is sound again
    assert again.log["train"] == "hit" and not again.notes and len(calls) == 2


def test_a_run_notes_a_recomputed_stage(tmp_path):
    store = ResultStore(tmp_path)
    base = {"kind": "fisher_information", "data": {"name": "synthetic", "n_samples": 200,
                                                   "n_features": 4},
            "irfil": {"iterations": 0}, "lira": {"enabled": False},
            "attack": {"noise_trials": 2, "crb_trials": 10, "sigma_grid": 2, "max_targets": 20}}
    first = store.get_or_run(base)
    assert first.info["stages"] == {"fil_fit": "computed"}
    (d,) = [d for d in (tmp_path / "stages").glob("*/??/*")]
    f = d / "arrays.npz"
    b = bytearray(f.read_bytes())
    b[100] ^= 0x01
    f.write_bytes(bytes(b))
    second = store.get_or_run({**base, "attack": {**base["attack"], "noise_trials": 3}})
    assert second.info["stages"] == {"fil_fit": "computed"}
    assert any("checksum mismatch; discarded and recomputed" in n for n in second.info["notes"])
    assert second.metrics["fil_eta"] == first.metrics["fil_eta"]


# -- gc collects temporary leftovers older than the grace period ------------------------------

def test_gc_collects_old_leftovers_only(filled, capsys):
    store, keys = filled
    old = time.time() - 7200
    left = [store.tmp_dir / f"{'ab' * 32}.123.deadbeef", store.tmp_dir / "trash.0123",
            store.stages.root / ".tmp" / f"{'cd' * 32}.0a0b"]
    for p in left:
        p.mkdir(parents=True)
        (p / "result.json").write_bytes(b"x" * 100)
        os.utime(p, (old, old))
    fresh = store.tmp_dir / f"{'ef' * 32}.456.cafebabe"
    fresh.mkdir()
    held = store.tmp_dir / f"{keys[0]}.789.feedface"  # its writer is alive (lock held)
    held.mkdir()
    os.utime(held, (old, old))
    from cache.gc import collect
    from cache.lock import key_lock

    with key_lock(store._lock_path(keys[0])):
        dry = collect(store, dry_run=True)
        assert dry.count("tmp") == 3 and all(p.exists() for p in left)
        report = collect(store)
    assert report.count("tmp") == 3 and report.count("run") == 0
    assert not any(p.exists() for p in left) and fresh.exists() and held.exists()
    assert len(store.list()) == 3
    assert main(["gc", "--grace", "0", "--cache-dir", str(store.root)]) == 0
    assert "2 temporary leftovers" in capsys.readouterr().out and not fresh.exists()


# -- SIGKILL during writes never serves anything corrupt --------------------------------------

def _writer(root: str, start: int) -> None:
    store = ResultStore(root)
    for s in range(start, start + 10_000):
        store.get_or_run(cfg(s), runner=runner)


def test_sigkill_during_writes_never_serves_corrupt(tmp_path):
    ctx = mp.get_context("spawn")
    root = tmp_path / "s"
    ResultStore(root)
    for i in range(4):
        p = ctx.Process(target=_writer, args=(str(root), 1000 * i))
        p.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(list((root / "runs").glob("??/*"))) < 3 * (i + 1):
            time.sleep(0.01)
        time.sleep(0.05 * (i + 1))
        os.kill(p.pid, signal.SIGKILL)
        p.join(10)
    store = ResultStore(root)
    listed = store.list()
    assert len(listed) >= 4
    for rec in listed:
        r = store.get(rec.key)
        assert r is not None and r.metrics == {"x": float(r.seed)}
        assert np.array_equal(r.artifacts["a"], np.arange(50) * float(r.seed))
    rep = store.verify(repair=True)
    assert not rep.entries_corrupt and not rep.unreadable
    assert store.verify().clean


# -- export: atomic, no overwrite without --force, no symlink followed, formulas neutralised --

def test_export_overwrite_symlink_and_formulas(filled, tmp_path, capsys):
    store, _ = filled
    store.set_label(store.list()[0].key, "=HYPERLINK(\"http://x\",\"y\")")
    out = tmp_path / "runs.csv"
    d = ["--cache-dir", str(store.root)]
    assert main(["export", str(out), *d]) == 0
    first = out.read_bytes()
    assert main(["export", str(out), *d]) == 2
    assert "exists; give --force" in capsys.readouterr().err and out.read_bytes() == first
    assert main(["export", str(out), "--force", *d]) == 0
    df = pd.read_csv(out)
    assert "'=HYPERLINK(\"http://x\",\"y\")" in set(df["label"].fillna(""))
    assert not any(str(v).startswith(("=", "+", "@")) for v in df.astype(str).values.ravel())
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "link.csv"
    link.symlink_to(victim)
    assert main(["export", str(link), *d]) == 2
    assert "symbolic link" in capsys.readouterr().err and victim.read_text() == "keep me"
    assert main(["export", str(link), "--force", *d]) == 0
    assert victim.read_text() == "keep me" and not link.is_symlink() and link.stat().st_size > 0
    assert main(["export", str(tmp_path), *d]) == 2  # a folder
    assert not list(tmp_path.glob(".*.part"))
    for cell, want in (("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@x", "'@x"),
                       ("\tx", "'\tx"), ("\rx", "'\rx"), ("a=1", "a=1"), (-1.5, -1.5)):
        assert neutralise(cell) == want


def test_export_failure_leaves_the_target_untouched(filled, tmp_path, monkeypatch):
    store, _ = filled
    out = tmp_path / "runs.json"
    out.write_text("old")
    import cache.export as ex

    def boom(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ex.os, "fsync", boom)
    with pytest.raises(OSError):
        store.export(out, fmt="json", force=True)
    assert out.read_text() == "old" and not list(tmp_path.glob(".*.part"))


# -- every command with bad arguments: one line, exit non-zero, nothing stored ----------------

BAD = [
    ([], 2), (["frobnicate"], 2), (["run"], 2), (["run", "/nonexistent.yaml"], 2),
    (["run", "/dev/zero"], 2), (["run", "{cfg}", "--set", "x"], 2),
    (["run", "{cfg}", "--set", "seed=-1"], 2), (["run", "{cfg}", "--progress", "loud"], 2),
    (["sweep", "{cfg}"], 2), (["sweep", "{cfg}", "--workers", "x"], 2),
    (["sweep", "{cfg}", "--executor", "gpu"], 2), (["list", "--limit", "-1"], 2),
    (["list", "--limit", "x"], 2), (["show"], 2), (["show", "zz"], 2), (["show", "abcdef"], 2),
    (["delete", "abc"], 2), (["delete", "abcdef12"], 2), (["export"], 2),
    (["export", "{tmp}", "--format", "xlsx"], 2), (["export", "{tmp}"], 2),
    (["datasets", "--bogus"], 2), (["data"], 2), (["data", "add", "x"], 2),
    (["data", "add", "Bad Name", "--csv", "/nonexistent.csv", "--task", "a", "--private", "b"], 2),
    (["data", "add", "x", "--csv", "/dev/zero", "--task", "a", "--private", "b"], 2),
    (["data", "add", "x", "--images", "/nonexistent"], 2), (["data", "remove", "nope"], 2),
    (["du", "--bogus"], 2), (["gc", "--max-size", "2XB"], 2), (["gc", "--grace", "nan"], 2),
    (["gc", "--grace", "x"], 2), (["verify", "--bogus"], 2),
]


@pytest.mark.parametrize("argv,code", BAD, ids=[" ".join(a) or "(none)" for a, _ in BAD])
def test_every_command_with_bad_arguments(argv, code, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PRIVLAB_DATA_REGISTRY", str(tmp_path / "reg"))
    conf = tmp_path / "c.yaml"
    conf.write_text("kind: projection\ndata: {name: digits}\n")
    argv = [a.format(cfg=conf, tmp=tmp_path) for a in argv]
    cache = tmp_path / "cache"
    if argv and argv[0] in ("run", "sweep", "list", "show", "delete", "export", "du", "gc",
                            "verify"):
        argv += ["--cache-dir", str(cache)]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("privlab: error: "), err
    assert not list(cache.glob("runs/??/*"))


def test_store_error_in_a_subprocess_is_one_line_exit_1(tmp_path):
    """A real process: a cache dir that is a file cannot hold a store."""
    bad = tmp_path / "file"
    bad.write_text("x")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "cli.main", "list", "--cache-dir", str(bad)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
                       check=False)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("privlab: error: result store:")


def test_corrupt_entry_error_is_an_exception_type():
    assert issubclass(CorruptEntry, Exception) and issubclass(StoreIOError, OSError)

"""Result store: hits/misses, atomic writes, corruption recovery, two-process locking, history."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cache.entry import CorruptEntry
from cache.errors import StoreIOError
from cache.store import ResultStore, default_store
from core.config.schema import ConfigError, ProjectionConfig
from core.foundation.progress import Cancelled, CancelToken
from core.foundation.result import Result


class CountingRunner:
    """A trivial runner: metrics/artifacts derived from the config, no ML; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, cfg, progress=None, cancel=None) -> Result:
        self.calls += 1
        return Result(
            kind=cfg.kind, config={}, seed=cfg.seed,
            metrics={"x": cfg.max_points, "seed": cfg.seed},
            curves={"c": [1.0, float("nan")]},
            artifacts={"a": np.arange(3), "emb": np.full((4, 2), cfg.seed, dtype=np.float32)},
            info={"note": "trivial"},
        )


def cfg(seed: int = 0, **kw) -> ProjectionConfig:
    return ProjectionConfig(seed=seed, max_points=100 + seed, **kw)


def entry_files(store: ResultStore) -> list[Path]:
    return sorted(p for p in store.runs_dir.rglob("*") if p.is_file())


def test_miss_then_hit(tmp_path):
    store, run = ResultStore(tmp_path), CountingRunner()
    first = store.get_or_run(cfg(), runner=run)
    # a mapping with the same content is the same key
    second = store.get_or_run({"kind": "projection", "max_points": 100}, runner=run)
    assert (first.from_cache, second.from_cache, run.calls) == (False, True, 1)
    assert first.key == second.key and len(first.key) == 64
    assert second.metrics == {"x": 100.0, "seed": 0.0} == first.metrics
    assert np.array_equal(second.artifacts["a"], np.arange(3))
    assert second.artifacts["emb"].dtype == np.float32
    assert second.curves["c"][0] == 1.0 and np.isnan(second.curves["c"][1])
    assert second.config == cfg().model_dump(mode="json") and second.info == {"note": "trivial"}
    assert store.peek(cfg()).from_cache and store.peek(cfg(seed=1)) is None
    d = store.entry_dir(first.key)
    assert d == tmp_path / "runs" / first.key[:2] / first.key
    assert sorted(p.name for p in d.iterdir()) == ["artifacts.npz", "result.json", "sha256.json"]
    rec = store.list()[0]
    assert rec.key == first.key and rec.kind == "projection" and rec.metrics["x"] == 100.0
    assert rec.created.endswith("+00:00") and rec.seconds is not None
    assert store.index.conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_root_from_env_and_default_store_shared(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "envroot"))
    assert ResultStore().root == (tmp_path / "envroot").resolve()
    assert default_store() is default_store(tmp_path / "envroot")
    assert default_store(tmp_path / "other") is not default_store()


def test_failing_run_stores_nothing(tmp_path):
    store, run = ResultStore(tmp_path), CountingRunner()

    def crash(c, progress=None, cancel=None):
        run(c)
        raise RuntimeError("boom mid-run")

    with pytest.raises(RuntimeError, match="boom"):
        store.get_or_run(cfg(), runner=crash)
    assert store.list() == [] and entry_files(store) == [] and list(store.tmp_dir.iterdir()) == []
    assert store.get_or_run(cfg(), runner=run).from_cache is False


def test_crash_during_write_leaves_no_entry(tmp_path, monkeypatch):
    """A failure while writing the files (e.g. disk full) leaves neither row, entry nor tmp."""
    store = ResultStore(tmp_path)
    from cache import entry

    def failing_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(entry.os, "rename", failing_rename)
    with pytest.raises(StoreIOError, match="no space left on device"):
        store.get_or_run(cfg(), runner=CountingRunner())
    monkeypatch.undo()
    assert store.list() == [] and entry_files(store) == [] and list(store.tmp_dir.iterdir()) == []


def test_cancelled_run_stores_nothing(tmp_path):
    store, token = ResultStore(tmp_path), CancelToken()

    def cancelling(c, progress=None, cancel=None):
        token.cancel()
        cancel.raise_if_cancelled()

    with pytest.raises(Cancelled):
        store.get_or_run(cfg(), runner=cancelling, cancel=token)
    assert store.list() == [] and entry_files(store) == []


def test_invalid_config_leaves_store_untouched(tmp_path):
    store, run = ResultStore(tmp_path), CountingRunner()
    store.get_or_run(cfg(), runner=run)
    before = (store.list(), entry_files(store))
    with pytest.raises(ConfigError, match="max_points: got 5"):
        store.get_or_run({"kind": "projection", "max_points": 5}, runner=run)
    with pytest.raises(ConfigError):
        store.peek({"kind": "nope"})
    assert run.calls == 1 and (store.list(), entry_files(store)) == before


def test_object_artifacts_refused_not_pickled(tmp_path):
    store = ResultStore(tmp_path)

    def bad(c, progress=None, cancel=None):
        return Result(kind=c.kind, config={}, seed=0, artifacts={"o": np.array([{}, 1], dtype=object)})

    with pytest.raises(TypeError, match=r"artifacts\['o'\]: got dtype object"):
        store.get_or_run(cfg(), runner=bad)
    assert store.list() == [] and entry_files(store) == []


@pytest.mark.parametrize(
    "damage",
    ["truncate_npz", "flip_npz_byte", "edit_json", "garbage_json", "remove_npz", "remove_dir"],
)
def test_corrupt_entry_is_recomputed(tmp_path, damage):
    store, run = ResultStore(tmp_path), CountingRunner()
    key = store.get_or_run(cfg(), runner=run).key
    d = store.entry_dir(key)
    npz, js = d / "artifacts.npz", d / "result.json"
    if damage == "truncate_npz":
        npz.write_bytes(npz.read_bytes()[:20])
    elif damage == "flip_npz_byte":
        b = bytearray(npz.read_bytes())
        b[len(b) // 2] ^= 0xFF
        npz.write_bytes(bytes(b))
    elif damage == "edit_json":  # valid JSON, wrong numbers: only the checksum catches it
        meta = json.loads(js.read_text())
        meta["metrics"]["x"] = 1e9
        js.write_text(json.dumps(meta))
    elif damage == "garbage_json":
        js.write_text("{not json")
    elif damage == "remove_npz":
        npz.unlink()
    else:  # index row whose files vanished
        import shutil

        shutil.rmtree(d)
    assert store.get(key) is None  # detected on read, never served, left for verify
    with pytest.raises(CorruptEntry, match=key[:12]):
        store.get(key, strict=True)
    assert [r.key for r in store.list()] == [key]
    again = store.get_or_run(cfg(), runner=run)  # a run of its config recomputes it
    assert run.calls == 2 and again.from_cache is False and again.metrics["x"] == 100.0
    hit = store.get_or_run(cfg(), runner=run)
    assert hit.from_cache and run.calls == 2 and np.array_equal(hit.artifacts["a"], np.arange(3))


def test_corrupt_entry_recomputed_by_get_or_run_directly(tmp_path):
    store, run = ResultStore(tmp_path), CountingRunner()
    key = store.get_or_run(cfg(), runner=run).key
    (store.entry_dir(key) / "artifacts.npz").write_bytes(b"PK\x03\x04 partial")
    r = store.get_or_run(cfg(), runner=run)
    assert run.calls == 2 and not r.from_cache
    assert store.get_or_run(cfg(), runner=run).from_cache and len(store.list()) == 1


def test_files_without_row_are_adopted(tmp_path):
    """A writer that died between the rename and the index row left a sound entry: it proves
    itself against its sha256.json and is indexed again, not recomputed."""
    store, run = ResultStore(tmp_path), CountingRunner()
    key = store.get_or_run(cfg(), runner=run).key
    store.index.delete(key)  # as if the process died between rename and the index write
    assert store.peek(cfg()).from_cache and [r.key for r in store.list()] == [key]
    store.index.delete(key)
    report = store.verify()
    assert report.orphans_sound == [key[:12]] and not report.clean
    assert store.verify(repair=True).repaired == [key]
    assert store.verify().clean and store.verify().entries_ok == 1
    assert store.get_or_run(cfg(), runner=run).from_cache and run.calls == 1
    # an orphan that fails its own checksums is corrupt: removed and recomputed
    store.index.delete(key)
    (store.entry_dir(key) / "result.json").write_text("{}")
    assert store.peek(cfg()) is None and not store.entry_dir(key).exists()
    assert store.get_or_run(cfg(), runner=run).from_cache is False and run.calls == 2


def test_list_get_prefix_delete_label(tmp_path):
    store, run = ResultStore(tmp_path), CountingRunner()
    keys = [store.get_or_run(cfg(seed=s), runner=run).key for s in range(3)]
    assert [r.key for r in store.list()] == keys[::-1]  # newest first
    assert len(store.list(limit=2)) == 2 and store.list(kind="tappfl") == []
    assert store.get(keys[1][:6]).metrics["seed"] == 1.0
    assert store.get("abcdef" if not any(k.startswith("abcdef") for k in keys) else "fedcba") is None
    with pytest.raises(ValueError, match="key: got 'abc'"):
        store.get("abc")
    with pytest.raises(ValueError, match="key: got 'zzzzzz'"):
        store.get("zzzzzz")
    assert store.set_label(keys[0][:8], "baseline") and store.list()[-1].label == "baseline"
    assert store.delete(keys[0][:10]) is True and store.delete(keys[0]) is False
    assert store.get(keys[0]) is None and not store.entry_dir(keys[0]).exists()
    assert sorted(r.key for r in store.list()) == sorted(keys[1:])


def test_ambiguous_prefix(tmp_path):
    store = ResultStore(tmp_path)
    k = store.get_or_run(cfg(), runner=CountingRunner()).key
    # a second row sharing the first 6 hex chars of k (differs at the 7th)
    row = store.index.conn().execute("SELECT * FROM runs WHERE key = ?", (k,)).fetchone()
    twin = k[:6] + ("0" if k[6] != "0" else "1") + k[7:]
    marks = ",".join("?" * len(row))
    store.index.conn().execute(f"INSERT INTO runs VALUES ({marks})", (twin, *tuple(row)[1:]))
    with pytest.raises(ValueError, match=f"prefix '{k[:6]}' is ambiguous"):
        store.get(k[:6])
    assert store.get(k[:7]).key == k and store.get(k).key == k


def test_export_csv_and_json(tmp_path):
    store, run = ResultStore(tmp_path / "s"), CountingRunner()
    for s in range(2):
        store.get_or_run(cfg(seed=s, method="pca"), runner=run)
    store.set_label(store.list()[0].key, "two")
    (tmp_path / "out").mkdir()
    csv = store.export(tmp_path / "out" / "runs.csv", fmt="csv")
    df = pd.read_csv(csv)
    assert len(df) == 2
    for col in ["key", "kind", "created", "seconds", "label", "config.seed", "config.data.name",
                "config.method", "metrics.x", "metrics.seed"]:
        assert col in df.columns, col
    assert sorted(df["config.seed"]) == [0, 1] and sorted(df["metrics.x"]) == [100.0, 101.0]
    assert set(df["label"].fillna("")) == {"", "two"}
    js = store.export(tmp_path / "runs.json", fmt="json", kind="projection")
    rows = json.loads(js.read_text())
    assert isinstance(rows, list) and len(rows) == 2
    assert {r["config.data.name"] for r in rows} == {"synthetic"} and "metrics.x" in rows[0]
    assert json.loads(store.export(tmp_path / "none.json", fmt="json", kind="tappfl").read_text()) == []
    with pytest.raises(ValueError, match="fmt: got 'xlsx'"):
        store.export(tmp_path / "x.xlsx", fmt="xlsx")


def test_hit_is_fast(tmp_path):
    store, run = ResultStore(tmp_path), CountingRunner()
    store.get_or_run(cfg(), runner=run)
    t0 = time.perf_counter()
    for _ in range(20):
        assert store.get_or_run(cfg(), runner=run).from_cache
    assert (time.perf_counter() - t0) / 20 < 0.05  # DESIGN target: a cached result at once


# -- two processes, one key ------------------------------------------------------------------


def _worker(root: str, counter: str, barrier, queue) -> None:
    def slow_runner(c, progress=None, cancel=None):
        time.sleep(1.0)
        with open(counter, "a") as f:
            f.write(f"{os.getpid()}\n")
        return CountingRunner()(c)

    barrier.wait(timeout=60)
    try:
        r = ResultStore(root).get_or_run(cfg(), runner=slow_runner)
        queue.put(("ok", r.key, r.metrics, r.artifacts["a"].tolist(), r.from_cache))
    except BaseException as exc:  # noqa: BLE001 -- report instead of dying silently
        queue.put(("error", repr(exc)))


def test_processes_same_key_compute_once(tmp_path):
    """Three processes open a fresh store at once (concurrent index creation) and ask for the
    same key: one computes, the others wait on the key lock and read its entry."""
    ctx = mp.get_context("spawn")
    counter = tmp_path / "counter.txt"
    barrier, queue = ctx.Barrier(3), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(str(tmp_path / "s"), str(counter), barrier, queue))
        for _ in range(3)
    ]
    for p in procs:
        p.start()
    out = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert all(o[0] == "ok" for o in out), out
    assert out[0][1:4] == out[1][1:4] == out[2][1:4]  # same key, metrics, artifacts
    assert sorted(o[4] for o in out) == [False, True, True]  # one computed, others waited, read
    assert len(counter.read_text().splitlines()) == 1
    store = ResultStore(tmp_path / "s")
    assert len(store.list()) == 1 and len(entry_files(store)) == 3
    assert list(store.tmp_dir.iterdir()) == []


def test_threads_share_one_store_and_compute_once(tmp_path):
    """The dashboard shares one store across session threads: one run per key, no errors."""
    from concurrent.futures import ThreadPoolExecutor

    store, run = default_store(tmp_path), CountingRunner()

    def slow(c, progress=None, cancel=None):
        time.sleep(0.3)
        return run(c)

    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(lambda _: store.get_or_run(cfg(), runner=slow), range(4)))
    assert run.calls == 1 and sorted(r.from_cache for r in results) == [False, True, True, True]
    assert len(store.list()) == 1


def test_cancel_while_waiting_for_another_writer(tmp_path):
    """Waiting on another process's lock stays cancellable; nothing is stored."""
    import threading

    from cache.lock import key_lock
    from core.config.schema import cache_key

    store, token, errors = ResultStore(tmp_path), CancelToken(), []

    def wait_then_fail():
        try:
            store.get_or_run(cfg(), runner=CountingRunner(), cancel=token)
        except Cancelled as exc:
            errors.append(exc)

    with key_lock(store.locks_dir / f"{cache_key(cfg())}.lock"):
        t = threading.Thread(target=wait_then_fail)
        t.start()
        time.sleep(0.2)
        token.cancel()
        t.join(timeout=5)
    assert len(errors) == 1 and store.list() == [] and entry_files(store) == []


@pytest.mark.parametrize("how", ["garbage", "missing"])
def test_lost_index_is_rebuilt_from_entries(tmp_path, how):
    store, run = ResultStore(tmp_path), CountingRunner()
    keys = {store.get_or_run(cfg(seed=s), runner=run).key for s in range(2)}
    store.index.close()
    idx = tmp_path / "index.sqlite"
    for p in tmp_path.glob("index.sqlite*"):
        p.unlink()
    if how == "garbage":
        idx.write_bytes(b"this is not a database" * 100)
    with pytest.warns(RuntimeWarning, match="rebuilt it from 2 stored runs"):
        fresh = ResultStore(tmp_path)
    assert {r.key for r in fresh.list()} == keys
    assert fresh.get_or_run(cfg(seed=1), runner=run).from_cache and run.calls == 2
    assert (how == "garbage") == bool(list(tmp_path.glob("index.sqlite.corrupt-*")))

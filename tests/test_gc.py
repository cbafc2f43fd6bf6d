"""Store tidiness (cache.gc): usage by kind / engine, removal of older engines' runs and stage
entries, LRU beyond a size (hits keep a run), locked keys never touched, dry run, CLI, and the
``last_used`` column added to an index written before it existed."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from cache.gc import collect, parse_size, store_usage
from cache.stages import ENGINE_KEY
from cache.store import ResultStore
from cli.main import main
from core.config.schema import ProjectionConfig
from core.foundation.fingerprint import engine_id
from core.foundation.result import Result
from core.foundation.stages import StageOutput

OLD = "0.0.1+000000000000"


def runner(engine: str | None = None, n: int = 10):
    def run(cfg, progress=None, cancel=None) -> Result:
        kw = {} if engine is None else {"engine_version": engine}
        return Result(kind=cfg.kind, config={}, seed=cfg.seed, metrics={"m": 1.0},
                      artifacts={"a": np.arange(n * (cfg.seed + 1), dtype=np.float64)}, **kw)
    return run


def cfg(seed: int) -> ProjectionConfig:
    return ProjectionConfig(seed=seed, max_points=100)


def put(store: ResultStore, seed: int, engine: str | None = None) -> str:
    return store.get_or_run(cfg(seed), runner=runner(engine)).key


def stage(store: ResultStore, key: str, *, engine: str | None = "current", name: str = "train") -> Path:
    store.stages.save(name, key, StageOutput(arrays={"r": np.ones((20, 4))}, meta={"m": 1}))
    d = store.stages.root / name / key[:2] / key
    if engine != "current":  # rewrite the tag: another engine's entry, or an untagged (old) one
        meta = json.loads((d / "meta.json").read_text())
        meta.pop(ENGINE_KEY)
        if engine is not None:
            meta[ENGINE_KEY] = engine
        (d / "meta.json").write_text(json.dumps(meta))
    return d


def files_bytes(root: Path, *, skip: str | None = None) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and (skip is None or skip not in p.parts))


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and not p.name.startswith("index.sqlite") and "locks" not in p.parts}


def test_usage_adds_up(tmp_path):
    store = ResultStore(tmp_path)
    keys = [put(store, 0), put(store, 1), put(store, 2, OLD)]
    stage(store, "ab" * 32)
    stage(store, "cd" * 32, engine=OLD, name="release")
    stage(store, "ef" * 32, engine=None, name="release")
    u = store_usage(store)
    assert u["runs_count"] == len(keys) == sum(r["runs"] for r in u["runs"])
    assert {(r["engine"], r["runs"], r["current"]) for r in u["runs"]} == {(engine_id(), 2, True), (OLD, 1, False)}
    assert u["runs_bytes"] == sum(r["bytes"] for r in u["runs"]) == files_bytes(store.runs_dir)
    assert u["stages_bytes"] == sum(r["bytes"] for r in u["stages"]) == files_bytes(store.stages.root, skip=".tmp")
    assert {(r["stage"], r["engine"]) for r in u["stages"]} == {
        ("train", engine_id()), ("release", OLD), ("release", "unknown")}
    assert u["total_bytes"] == files_bytes(tmp_path)
    assert u["runs_bytes"] + u["stages_bytes"] + u["index_bytes"] + u["other_bytes"] == u["total_bytes"]
    assert u["index_bytes"] > 0 and u["other_bytes"] >= 0
    by = {r["engine"]: r for r in u["by_engine"]}
    assert (by[OLD]["runs"], by[OLD]["stage_entries"], by[engine_id()]["runs"]) == (1, 1, 2)
    assert sum(r["bytes"] for r in u["by_engine"]) == u["runs_bytes"] + u["stages_bytes"]


def test_older_engines_removed_current_kept(tmp_path):
    store = ResultStore(tmp_path)
    cur, old = put(store, 0), put(store, 1, OLD)
    s_cur, s_old, s_untagged = stage(store, "ab" * 32), stage(store, "cd" * 32, engine=OLD), stage(store, "ef" * 32, engine=None)
    rep = collect(store, older_engines=True)
    assert sorted((r["what"], r["key"]) for r in rep.removed) == sorted(
        [("run", old), ("stage", "cd" * 32), ("stage", "ef" * 32)])
    assert {r["reason"] for r in rep.removed} == {"older engine"} and not rep.skipped_locked
    assert store.get(old) is None and not store.entry_dir(old).exists()
    assert [r.key for r in store.list()] == [cur] and store.get(cur).from_cache
    assert s_cur.exists() and not s_old.exists() and not s_untagged.exists()
    assert store.stages.load("train", "ab" * 32).meta == {"m": 1}  # the engine tag is not meta
    assert rep.after_bytes == store_usage(store)["total_bytes"] < rep.before_bytes
    assert collect(store, older_engines=True).removed == []


def test_lru_beyond_size_removes_least_recently_used_first(tmp_path):
    store = ResultStore(tmp_path)
    a, b, c, d = (put(store, s) for s in range(4))
    for i, k in enumerate((a, b, c, d)):  # a used longest ago ... d most recently
        store.index.touch(k, 1000.0 + 100 * i)
    st = stage(store, "ab" * 32)
    os.utime(st / "meta.json", (1050.0, 1050.0))  # between a and b
    assert store.get_or_run(cfg(0), runner=runner()).from_cache  # a hit: a is now the newest
    assert store.index.lookup(a)[2] > 1300.0
    u = store_usage(store)
    size = {r["key"]: r["bytes"] for r in collect(store, max_bytes=0, dry_run=True).removed}
    limit = u["total_bytes"] - size["ab" * 32] - size[b]
    rep = collect(store, max_bytes=limit)
    assert [r["key"] for r in rep.removed] == ["ab" * 32, b]  # oldest first, then stop
    assert {r["reason"] for r in rep.removed} == {"beyond size"} and not rep.over_limit
    assert sorted(r.key for r in store.list()) == sorted([a, c, d]) and not st.exists()
    assert rep.after_bytes <= limit
    rep = collect(store, max_bytes=0)  # everything goes, newest last
    assert [r["key"] for r in rep.removed] == [c, d, a] and store.list() == []


def _hold_lock(path: str, held, release) -> None:
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    held.set()
    release.wait(30)
    os.close(fd)


def test_run_locked_by_another_process_is_never_removed(tmp_path):
    store = ResultStore(tmp_path)
    busy, free = put(store, 0, OLD), put(store, 1, OLD)
    ctx = mp.get_context("spawn")
    held, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold_lock, args=(str(store._lock_path(busy)), held, release))
    p.start()
    try:
        assert held.wait(30)
        rep = collect(store, older_engines=True, max_bytes=0)
        assert rep.skipped_locked == [busy] and [r["key"] for r in rep.removed] == [free]
        assert store.get(busy) is not None and store.entry_dir(busy).exists()
        assert "skipped 1 run in use" in rep.summary()
    finally:
        release.set()
        p.join(30)
    assert [r["key"] for r in collect(store, older_engines=True).removed] == [busy]
    assert store.list() == []


def test_dry_run_removes_nothing(tmp_path):
    store = ResultStore(tmp_path)
    keys = [put(store, 0, OLD), put(store, 1), put(store, 2)]
    stage(store, "ab" * 32, engine=OLD)
    before, rows = snapshot(tmp_path), store.list()
    rep = collect(store, older_engines=True, max_bytes=0, dry_run=True)
    assert len(rep.removed) == 4 and rep.count("run") == 3 and rep.dry_run
    assert rep.after_bytes == rep.before_bytes - rep.freed_bytes
    assert snapshot(tmp_path) == before and store.list() == rows
    assert all(store.get(k) is not None for k in keys)


def test_index_without_last_used_is_migrated(tmp_path):
    store = ResultStore(tmp_path)
    key = put(store, 0)
    store.index.close()
    con = sqlite3.connect(tmp_path / "index.sqlite")  # rebuild the table in the first schema
    con.executescript(
        "CREATE TABLE old AS SELECT key, kind, created, seconds, engine_version, config, metrics, "
        "sha_result, sha_artifacts, label FROM runs; DROP TABLE runs; ALTER TABLE old RENAME TO runs;")
    con.close()
    again = ResultStore(tmp_path)
    assert again.index.lookup(key)[2] is None  # column added, old row NULL
    assert collect(again, max_bytes=0, dry_run=True).removed[0]["key"] == key  # LRU by created
    assert again.get(key).from_cache and again.index.lookup(key)[2] is not None


def test_parse_size():
    assert parse_size("2GB") == 2 * 10**9 and parse_size("500mb") == 5 * 10**8
    assert parse_size("1.5GiB") == int(1.5 * 2**30) and parse_size("1024") == 1024 == parse_size(1024)
    for bad in ("two GB", "2XB", "-1", ""):
        with pytest.raises(ValueError, match="max size: got"):
            parse_size(bad)


def test_cli_du_and_gc(tmp_path, capsys):
    root = tmp_path / "s"
    store = ResultStore(root)
    cur, old = put(store, 0), put(store, 1, OLD)
    d = ["--cache-dir", str(root)]
    assert main(["du", *d]) == 0
    out = capsys.readouterr().out
    assert "2 runs" in out and f"{OLD} (older)" in out and "projection" in out
    assert main(["du", "--json", *d]) == 0
    assert json.loads(capsys.readouterr().out)["runs_count"] == 2

    # no option: only temporary leftovers older than the grace period go
    assert main(["gc", *d]) == 0
    assert "removed 0 runs, 0 stage entries and 0 temporary leftovers" in capsys.readouterr().out
    assert len(store.list()) == 2
    assert main(["gc", "--grace", "-1", *d]) == 2
    assert "--grace: got -1.0; allowed range 0 <= value" in capsys.readouterr().err
    assert main(["gc", "--max-size", "2XB", *d]) == 2
    assert "max size: got '2XB'" in capsys.readouterr().err

    assert main(["gc", "--older-engines", "--dry-run", *d]) == 0
    out = capsys.readouterr().out
    assert "would remove 1 run," in out and old[:12] in out and "dry run" in out
    assert len(store.list()) == 2
    assert main(["gc", "--older-engines", "--json", *d]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["removed_runs"] == 1 and rep["removed"][0]["key"] == old and not rep["dry_run"]
    assert [r.key for r in store.list()] == [cur]
    assert main(["gc", "--max-size", "0", *d]) == 0
    assert "removed 1 run," in capsys.readouterr().out and store.list() == []


def test_history_store_section_cleans_older_engines(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from cache.store import default_store

    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    store = default_store()
    cur, old = put(store, 0), put(store, 1, OLD)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py"),
                           default_timeout=60).run()
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    usage = at.dataframe[-1].value
    assert set(usage["engine"]) == {f"{engine_id()} (current)", f"{OLD} (older engine)"}
    assert usage["count"].sum() == 2
    assert any("would remove 1 run," in c.value for c in at.caption)
    assert at.button(key="history_gc_run").disabled
    at.checkbox(key="history_gc_confirm").check().run()
    at.button(key="history_gc_run").click().run()
    assert not at.exception, at.exception
    assert [r.key for r in store.list()] == [cur] and store.get(old) is None

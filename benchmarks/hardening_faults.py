"""Store faults for the hardening benchmark (issue 21): each scenario injects faults into a
result store that holds known entries, then reads everything back.

Counts per scenario: ``faults`` injected, ``corrupt_served`` (a read that returned content
other than what was stored), ``lost`` (an entry stored before the fault that cannot be read
intact after ``verify --repair``), ``unhandled`` (an exception other than the store's own
one-line errors) and ``hangs``. Real faults where the machine allows them (a small tmpfs for a
full disk, a read-only remount; both need root), injected ``ENOSPC`` / read-only otherwise.
"""

from __future__ import annotations

import contextlib
import errno
import json
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from cache.errors import StoreError, StoreIOError
from cache.stages import DirStageStore
from cache.store import ResultStore
from core.config.schema import ProjectionConfig
from core.foundation.result import Result
from core.foundation.stages import StageOutput, Stages

ROOT = Path(__file__).resolve().parents[1]


def runner(cfg, progress=None, cancel=None) -> Result:
    """A deterministic Result per seed (incompressible artifacts of a few kB)."""
    rng = np.random.default_rng(cfg.seed)
    return Result(kind=cfg.kind, config={}, seed=cfg.seed, metrics={"x": float(cfg.seed)},
                  artifacts={"a": rng.standard_normal(400)})


def cfg(seed: int) -> ProjectionConfig:
    return ProjectionConfig(seed=seed, max_points=100)


def intact(r: Result | None, seed: int) -> bool:
    return (r is not None and r.metrics == {"x": float(seed)}
            and np.array_equal(r.artifacts["a"], np.random.default_rng(seed).standard_normal(400)))


def _tally(**kw: int) -> dict[str, int]:
    base = {"faults": 0, "corrupt_served": 0, "lost": 0, "unhandled": 0, "hangs": 0}
    base.update(kw)
    return base


def _read_back(root: Path, seeds: dict[str, int], t: dict[str, int], notes: list[str]) -> None:
    """First reads after a fault (anything served must be intact), then verify --repair, then
    every entry must be there and intact."""
    try:
        store = ResultStore(root)
        for key, seed in seeds.items():
            try:
                r = store.get(key)
            except StoreError:
                r = None
            if r is not None and not intact(r, seed):
                t["corrupt_served"] += 1
            hit = store.get_or_run(cfg(seed), runner=runner)
            if not intact(hit, seed):
                t["corrupt_served"] += 1
        store.verify(repair=True)
        for key, seed in seeds.items():
            r = store.get(key)
            if not intact(r, seed):
                t["lost"] += 1
        store.index.close()
    except StoreError as exc:
        notes.append(f"read back: {exc}")
        t["lost"] += len(seeds)
    except Exception as exc:  # noqa: BLE001 - counted, not hidden
        notes.append(f"read back: {type(exc).__name__}: {exc}")
        t["unhandled"] += 1


def _fill(root: Path, n: int, start: int = 0) -> dict[str, int]:
    store = ResultStore(root)
    keys = {store.get_or_run(cfg(s), runner=runner).key: s for s in range(start, start + n)}
    store.index.checkpoint()
    store.index.close()
    return keys


# -- a full disk ----------------------------------------------------------------------------

@contextlib.contextmanager
def tmpfs(size: str) -> Iterator[Path | None]:
    """A fresh tmpfs of ``size`` (None when this machine cannot mount one: not root, or no
    mount permission in the container)."""
    d = Path(tempfile.mkdtemp(prefix="privlab-tmpfs-"))
    ok = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)],
        capture_output=True, check=False).returncode == 0
    try:
        yield d if ok else None
    finally:
        if ok:
            subprocess.run(["umount", "-l", str(d)], capture_output=True, check=False)
        shutil.rmtree(d, ignore_errors=True)


def _fill_disk(path: Path) -> Path:
    filler = path / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (1 << 16, 1 << 12, 1 << 9, 1):  # to the last byte
            chunk = os.urandom(size)
            try:
                while True:
                    os.write(fd, chunk)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def full_disk(notes: list[str]) -> dict[str, Any]:
    """Entries written into a store on a nearly full disk at many levels of free space, with
    and without the store's free-space check; every refusal must be a StoreIOError and leave
    the history as it was."""
    import cache.store as store_mod

    t = _tally()
    with tmpfs("3m") as mnt:
        real = mnt is not None
        root = (mnt or Path(tempfile.mkdtemp(prefix="privlab-full-"))) / "s"
        seeds = _fill(root, 5)
        attempts = 0
        for precheck in (True, False):
            for leave in (0, 2048, 4096, 8192, 12288, 16384, 24576, 40960):
                attempts += 1
                if real:
                    filler = _fill_disk(mnt)
                    size = filler.stat().st_size
                    os.truncate(filler, max(0, size - leave))
                saved = store_mod._free
                if not precheck:
                    store_mod._free = lambda root: None
                try:
                    store = ResultStore(root)
                    with _inject_enospc(not real, leave):
                        store.get_or_run(cfg(1000 + attempts), runner=runner)
                    seeds[store.get_or_run(cfg(1000 + attempts), runner=runner).key] = 1000 + attempts
                except StoreIOError as exc:
                    t["faults"] += 1
                    if "no space left" not in str(exc) and "quota" not in str(exc):
                        notes.append(f"full disk: unexpected message: {exc}")
                except Exception as exc:  # noqa: BLE001
                    t["unhandled"] += 1
                    notes.append(f"full disk: {type(exc).__name__}: {exc}")
                finally:
                    store_mod._free = saved
                    with contextlib.suppress(Exception):
                        store.index.close()
                    if real:
                        (mnt / "filler").unlink(missing_ok=True)
                _read_back(root, seeds, t, notes)
        if not real:
            shutil.rmtree(root.parent, ignore_errors=True)
    return {**t, "how": "tmpfs of 3 MB filled up" if real else "injected ENOSPC",
            "entries": len(seeds)}


@contextlib.contextmanager
def _inject_enospc(active: bool, leave: int) -> Iterator[None]:
    """Without a tmpfs: the entry write fails after ``leave`` bytes, as a full disk would."""
    if not active:
        yield
        return
    import cache.entry as entry_mod

    real = entry_mod._write_synced
    budget = [leave]

    def write(path, data):
        if len(data) > budget[0]:
            raise OSError(errno.ENOSPC, "No space left on device")
        budget[0] -= len(data)
        real(path, data)

    entry_mod._write_synced = write
    try:
        yield
    finally:
        entry_mod._write_synced = real


# -- a read-only store -----------------------------------------------------------------------

def read_only(notes: list[str]) -> dict[str, Any]:
    import cache.store as store_mod

    t = _tally()
    with tmpfs("8m") as mnt:
        real = mnt is not None
        root = (mnt or Path(tempfile.mkdtemp(prefix="privlab-ro-"))) / "s"
        seeds = _fill(root, 4)
        before = {p: p.read_bytes() for p in (root / "runs").rglob("*") if p.is_file()}
        if real:
            subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        saved = store_mod.writable
        if not real:
            store_mod.writable = lambda path: False
        try:
            store = ResultStore(root)
            for key, seed in seeds.items():
                if not intact(store.get(key), seed):
                    t["corrupt_served"] += 1
                if not intact(store.get_or_run(cfg(seed), runner=runner), seed):
                    t["corrupt_served"] += 1
            for action in (lambda: store.get_or_run(cfg(99), runner=runner),
                           lambda: store.delete(next(iter(seeds))),
                           lambda: store.verify(repair=True),
                           lambda: store.set_label(next(iter(seeds)), "x")):
                try:
                    action()
                    notes.append("read-only: a write went through")
                except StoreIOError:
                    t["faults"] += 1
                except Exception as exc:  # noqa: BLE001
                    t["unhandled"] += 1
                    notes.append(f"read-only: {type(exc).__name__}: {exc}")
            store.index.close()
        except Exception as exc:  # noqa: BLE001
            t["unhandled"] += 1
            notes.append(f"read-only open: {type(exc).__name__}: {exc}")
        finally:
            store_mod.writable = saved
            if real:
                subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=True)
        after = {p: p.read_bytes() for p in (root / "runs").rglob("*") if p.is_file()}
        t["lost"] += sum(before[p] != after.get(p) for p in before)
        _read_back(root, seeds, t, notes)
        if not real:
            shutil.rmtree(root.parent, ignore_errors=True)
    return {**t, "how": "tmpfs remounted read-only" if real else "injected read-only"}


# -- SIGKILL at each write step ---------------------------------------------------------------

_KILL_CHILD = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    import cache.entry as E, cache.index as I, cache.stages as S
    from pathlib import Path
    from benchmarks.hardening_faults import cfg, runner
    from cache.store import ResultStore
    from core.foundation.stages import StageOutput, Stages
    step, root, seed = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    count = [0]
    def hook(fn):
        def wrapped(*a, **k):
            count[0] += 1
            if count[0] == step:
                os.kill(os.getpid(), signal.SIGKILL)
            out = fn(*a, **k)
            count[0] += 1
            if count[0] == step:
                os.kill(os.getpid(), signal.SIGKILL)
            return out
        return wrapped
    E._write_synced = hook(E._write_synced)
    E._fsync_dir = hook(E._fsync_dir)
    E.os.rename = hook(E.os.rename)
    I.RunIndex._write = hook(I.RunIndex._write)
    S.os.rename = hook(S.os.rename)
    Path.write_bytes = hook(Path.write_bytes)
    store = ResultStore(root)
    import torch
    Stages(store.stages).get("train", {"seed": seed}, lambda: StageOutput(
        {"r": np.arange(5.0) * seed}, {"seed": seed}, {"net": {"w": torch.ones(3) * seed}}))
    store.get_or_run(cfg(seed), runner=runner)
    print("steps", count[0])
""")


def _stage_ok(store: DirStageStore, seed: int) -> bool | None:
    """True: served intact; False: served corrupt; None: a miss (recomputed)."""
    view = Stages(store)
    hit = store.load("train", _stage_key(seed))
    if hit is None:
        return None
    return (np.array_equal(hit.arrays["r"], np.arange(5.0) * seed) and hit.meta == {"seed": seed}
            and float(hit.weights["net"]["w"].sum()) == 3.0 * seed) and not view.notes


def _stage_key(seed: int) -> str:
    from core.foundation.stages import stage_key

    return stage_key("train", {"seed": seed})


def sigkill(notes: list[str], max_steps: int = 60) -> dict[str, Any]:
    """A child stores a stage entry and a run; it is SIGKILLed just before and just after each
    write step (file writes, fsyncs, renames, index transactions) in turn; after every kill
    the store is read back (nothing corrupt served, nothing stored before lost)."""
    t = _tally()
    root = Path(tempfile.mkdtemp(prefix="privlab-kill-")) / "s"
    seeds = _fill(root, 3)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def child(step: int, seed: int) -> subprocess.CompletedProcess | None:
        try:
            return subprocess.run([sys.executable, "-c", _KILL_CHILD, str(step), str(root),
                                   str(seed)], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=180, check=False)
        except subprocess.TimeoutExpired:
            t["hangs"] += 1
            return None

    dry = child(0, 499)  # no kill: how many hook points one store write passes
    total = int(dry.stdout.split()[-1]) if dry is not None and dry.returncode == 0 else 0
    if total:
        seeds[_key(499)] = 499
    for step in range(1, min(total, max_steps) + 1):
        seed = 500 + step
        p = child(step, seed)
        if p is None:
            continue
        if p.returncode == -signal.SIGKILL:
            t["faults"] += 1
        elif p.returncode != 0:
            t["unhandled"] += 1
            notes.append(f"kill step {step}: exit {p.returncode}: {p.stderr[-300:]}")
        if _stage_ok(DirStageStore(root / "stages"), seed) is False:
            t["corrupt_served"] += 1
        store = ResultStore(root)
        try:
            r = store.get(_key(seed))
        except StoreError:
            r = None
        if r is not None and not intact(r, seed):
            t["corrupt_served"] += 1
        store.index.close()
        _read_back(root, seeds, t, notes)
    shutil.rmtree(root.parent, ignore_errors=True)
    return {**t, "write_steps": total}


def _key(seed: int) -> str:
    from core.config.schema import cache_key

    return cache_key(cfg(seed))


# -- bit flips in every file of an entry, a stage and the index; a truncated index -----------

def _flip(path: Path, pos: int, bit: int = 0x10) -> None:
    b = bytearray(path.read_bytes())
    if not b:
        return
    b[pos % len(b)] ^= bit
    path.write_bytes(bytes(b))


def bit_flips(notes: list[str], positions: int = 12) -> dict[str, Any]:
    import torch

    t = _tally()
    base = Path(tempfile.mkdtemp(prefix="privlab-flip-"))
    root = base / "s"
    seeds = _fill(root, 4)
    key, seed = next(iter(seeds.items()))
    store = ResultStore(root)
    for name in ("result.json", "artifacts.npz", "sha256.json"):
        for i in range(positions):
            f = store.entry_dir(key) / name
            size = f.stat().st_size
            _flip(f, (i * size) // positions + i)
            t["faults"] += 1
            try:
                r = store.get(key)
                if r is not None and not intact(r, seed):
                    t["corrupt_served"] += 1
                if not intact(store.get_or_run(cfg(seed), runner=runner), seed):
                    t["corrupt_served"] += 1
            except Exception as exc:  # noqa: BLE001
                t["unhandled"] += 1
                notes.append(f"entry flip {name}@{i}: {type(exc).__name__}: {exc}")
    store.index.close()
    _read_back(root, seeds, t, notes)

    stages = DirStageStore(base / "stages")
    want = StageOutput({"r": np.arange(50.0)}, {"m": 1}, {"net": {"w": torch.arange(8.0)}})
    calls = [0]

    def compute():
        calls[0] += 1
        return want

    Stages(stages).get("train", {"p": 1}, compute)
    (d,) = list((base / "stages" / "train").glob("??/*"))
    for name in ("meta.json", "arrays.npz", "weights.pt", "sha256.json"):
        for i in range(positions):
            f = d / name
            _flip(f, (i * f.stat().st_size) // positions + i)
            t["faults"] += 1
            view = Stages(stages)
            try:
                out, _ = view.get("train", {"p": 1}, compute)
                if not (np.array_equal(out.arrays["r"], want.arrays["r"]) and out.meta == want.meta
                        and torch.equal(out.weights["net"]["w"], want.weights["net"]["w"])):
                    t["corrupt_served"] += 1
                if view.log["train"] == "hit" and i == 0 and name != "sha256.json":
                    notes.append(f"stage flip {name}@{i} served as a hit")
            except Exception as exc:  # noqa: BLE001
                t["unhandled"] += 1
                notes.append(f"stage flip {name}@{i}: {type(exc).__name__}: {exc}")
    t["stage_recomputes"] = calls[0] - 1

    pristine = base / "pristine"
    shutil.copytree(root, pristine)
    idx_size = (pristine / "index.sqlite").stat().st_size
    cases = [("flip", (i * idx_size) // (2 * positions) + i) for i in range(2 * positions)]
    cases += [("truncate", n) for n in (0, 1, 100, 4096, idx_size // 2, idx_size - 1)]
    for how, at in cases:
        trial = base / f"trial-{how}-{at}"
        shutil.copytree(pristine, trial)
        if how == "flip":
            _flip(trial / "index.sqlite", at)
        else:
            os.truncate(trial / "index.sqlite", at)
        t["faults"] += 1
        _read_back(trial, seeds, t, notes)
        shutil.rmtree(trial, ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)
    return t


# -- concurrent writers ------------------------------------------------------------------------

def _writer(root: str, seeds: list[int], q) -> None:
    try:
        store = ResultStore(root)
        out = [(store.get_or_run(cfg(s), runner=runner).key, s) for s in seeds]
        q.put(("ok", out))
    except Exception as exc:  # noqa: BLE001
        q.put(("error", f"{type(exc).__name__}: {exc}"))


def concurrent(notes: list[str], procs: int = 4, rounds: int = 3) -> dict[str, Any]:
    t = _tally()
    root = Path(tempfile.mkdtemp(prefix="privlab-conc-")) / "s"
    ResultStore(root).index.close()
    ctx = mp.get_context("spawn")
    seeds: dict[str, int] = {}
    for r in range(rounds):
        q = ctx.Queue()
        base = list(range(100 * r, 100 * r + 6))
        ps = [ctx.Process(target=_writer, args=(str(root), base[i:] + base[:i], q))
              for i in range(procs)]
        for p in ps:
            p.start()
        for _ in ps:
            try:
                status, out = q.get(timeout=300)
            except Exception:  # noqa: BLE001 - a writer that never answers
                t["hangs"] += 1
                continue
            if status != "ok":
                t["unhandled"] += 1
                notes.append(f"concurrent: {out}")
                continue
            seeds.update(dict(out))
        for p in ps:
            p.join(60)
        t["faults"] += procs
        _read_back(root, seeds, t, notes)
    rep = ResultStore(root).verify()
    if not rep.clean:
        notes.append(f"concurrent: {rep.summary()}")
    shutil.rmtree(root.parent, ignore_errors=True)
    return {**t, "entries": len(seeds)}


def run_all(quick: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
    notes: list[str] = []
    rows = []
    for name, fn in (("full disk", full_disk), ("read-only store", read_only),
                     ("SIGKILL at each write step", sigkill), ("bit flips and truncations", bit_flips),
                     ("concurrent writers", concurrent)):
        t0 = time.perf_counter()
        kw = {}
        if quick and name.startswith("bit"):
            kw = {"positions": 4}
        res = fn(notes, **kw)
        rows.append({"case": name, **res, "seconds": round(time.perf_counter() - t0, 1)})
    return rows, notes


if __name__ == "__main__":  # pragma: no cover - a manual run
    rows, notes = run_all(quick="--quick" in sys.argv)
    print(json.dumps(rows, indent=1))
    print("\n".join(notes))

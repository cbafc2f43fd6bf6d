"""``python -m benchmarks bundle_trust``: hostile and forged bundles against the import, each in
its own process with its peak memory, and the per-record arrays reproducing every membership
attack's AUC through a bundle.

Every case of :func:`cases` builds a bundle of one class (path escapes, links, inflation beyond
the declared size, oversized manifests, nesting, damaged streams, forged metrics, foreign
engines, duplicate names, half imports, concurrent imports, code in notebooks, and the largest
run the caps accept: the worst case for memory) from a contract-shaped run (no training) and
imports it in a child process. The import's peak memory is the child's peak resident memory
during it (``VmHWM``, reset through ``/proc/self/clear_refs`` just before; ``ru_maxrss`` where
that is refused) less its resident memory just before it, after a warm-up import (the modules
an import loads are counted once, not as the bundle's), with tracemalloc's peak of Python
allocations beside it. Outcomes: ``refused`` (one line, the store
left empty), ``imported`` (kept apart: a run request afterwards computes here), or
``unhandled`` (anything else: another exception, a message of more than one line, a store not
empty after a refusal, a forged run served).

Headline (merged into ``results/trust.json``): ``bundle_classes_tried``,
``bundle_import_unhandled`` (0), ``bundle_import_peak_rss_mb`` (the worst case tried, at most
256), ``forged_runs_served`` (0), ``half_imports`` (0),
``per_record_auc_recomputed_max_abs_diff`` (at most 1e-9).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TINY = {"kind": "attribute_privacy", "data": {"name": "synthetic", "n_samples": 400},
        "fl": {"num_devices": 2, "rounds": 2, "fraction_fit": 1.0, "local_epochs": 1},
        "attack": {"attackers": ["logreg"]}, "projection_points": 0, "pretrain_epochs": 0,
        "representation_dim": 8, "hidden_dim": 16, "critic_hidden": 16}
SWEEP = {"kind": "sweep", "base": TINY, "grid": {"defense.tradeoff_lambda": [0.0, 1.0]},
         "seeds": [0]}
MEMBERSHIP = {"kind": "membership", "data": {"name": "digits"},
              "train": {"members": 60, "epochs": 6, "batch_size": 32},
              "attack": {"shadows": 4, "rmia_references": 1, "targets": 2,
                         "attackers": ["loss", "confidence", "lira_offline", "rmia"]},
              "projection_points": 0}
CLASSES = ("path escapes", "links", "inflation beyond declared size", "oversized manifests",
           "nesting", "damaged streams", "forged metrics", "foreign engines", "duplicate names",
           "half imports", "concurrent imports", "code in notebooks", "largest accepted run")
PEAK_LIMIT_MB = 256


# ---------------------------------------------------------------------------------------------
# building hostile bundles (tests/test_bundle_hostile.py uses the same helpers)


def entries(path: Path) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(path) as zf:
        return [(i, zf.read(i)) for i in zf.infolist()]


def forge(src: Path, dst: Path, change: Callable[[str, bytes], bytes | None] | None = None,
          add: Any = (), manifest: Callable[[dict], None] | None = None,
          rehash: bool = True) -> Path:
    """Copy a bundle: ``change(name, bytes)`` -> new bytes (None drops the file); ``add``: more
    (name or ZipInfo, bytes); ``manifest(m)`` edits the manifest; checksums recomputed."""
    files: list[tuple[Any, bytes]] = []
    man = None
    for info, data in entries(src):
        if info.filename == "manifest.json":
            man = json.loads(data)
            continue
        new = change(info.filename, data) if change else data
        if new is not None:
            files.append((info.filename, new))
    files.extend(add)
    assert man is not None
    if rehash:
        man["files"] = {(n.filename if isinstance(n, zipfile.ZipInfo) else n):
                        hashlib.sha256(d).hexdigest() for n, d in files}
    if manifest:
        manifest(man)
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(man))
        for n, d in files:
            zf.writestr(n, d)
    return dst


def edit_result(data: bytes, fn: Callable[[dict], None]) -> bytes:
    meta = json.loads(data)
    fn(meta)
    return json.dumps(meta).encode()


def shrink_declared(zip_bytes: bytes, name: str, size: int) -> bytes:
    """Patch ``name``'s uncompressed size in its local header and central directory entry."""
    b = bytearray(zip_bytes)
    enc = name.encode()
    for sig, off, head in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
        at = 0
        while (at := b.find(sig, at)) >= 0:
            if b[at + head:at + head + len(enc)] == enc:
                b[at + off:at + off + 4] = struct.pack("<L", size)
                break
            at += 4
    return bytes(b)


def contract_bundle(tmp: Path) -> tuple[Path, str]:
    """A run bundle of one contract-shaped attribute-privacy run (no training)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from _tappfl_contract import contract_runner

    from cache.bundle import write_bundle
    from cache.store import ResultStore

    store = ResultStore(tmp / "src")
    r = store.get_or_run(TINY, runner=contract_runner)
    path = tmp / "run.zip"
    write_bundle(r.key, path, store=store, figures=False)
    return path, str(r.key)


def sweep_bundle(tmp: Path) -> tuple[Path, str]:
    """A sweep of two contract-shaped points: three runs in one bundle."""
    sys.path.insert(0, str(ROOT / "tests"))
    from _tappfl_contract import contract_runner

    import core.runs.experiments as E
    from cache.bundle import write_bundle
    from cache.store import ResultStore

    real = E.run
    E.run = lambda cfg, **kw: (contract_runner(cfg) if cfg.kind == "attribute_privacy"
                               else real(cfg, **kw))
    try:
        store = ResultStore(tmp / "sweep-src")
        sweep = store.get_or_run(SWEEP)
        path = tmp / "sweep.zip"
        write_bundle(sweep.key, path, store=store, figures=False)
    finally:
        E.run = real
    return path, str(sweep.key)


@dataclass
class Case:
    cls: str
    name: str
    path: Path
    expect: str  # "refused" or "imported"
    read_only: bool = False


def _nest(depth: int) -> list:
    v: list = []
    for _ in range(depth):
        v = [v]
    return v


def _padded_arrays(path: Path, dst: Path, mb: int) -> Path:
    """An honest-looking run whose arrays are ``mb`` MB (the largest accepted case)."""
    import io

    import numpy as np

    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read("result.json"))
        with np.load(io.BytesIO(zf.read("arrays.npz")), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    arrays["padding"] = np.random.default_rng(0).integers(0, 255, mb << 20, dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    meta["artifact_names"] = sorted(arrays)
    data = buf.getvalue()
    return forge(path, dst, change=lambda n, d: data if n == "arrays.npz" else
                 json.dumps(meta).encode() if n == "result.json" else d)


def cases(tmp: Path) -> list[Case]:
    """Every hostile bundle, built under ``tmp``."""
    run, _ = contract_bundle(tmp)
    sweep, _ = sweep_bundle(tmp)
    out: list[Case] = []

    def add(cls: str, name: str, path: Path | bytes, expect: str = "refused",
            read_only: bool = False) -> None:
        if isinstance(path, bytes):
            p = tmp / f"{len(out):02d}.zip"
            p.write_bytes(path)
            path = p
        out.append(Case(cls, name, path, expect, read_only))

    def f(name: str, **kw: Any) -> Path:
        return forge(run, tmp / f"{name}.zip", **kw)

    for esc in ("../evil.txt", "/etc/evil", "points/../../evil", "a\\b.txt"):
        add("path escapes", esc, f(f"esc{len(out)}", add=[(esc, b"x")]))
    link = zipfile.ZipInfo("notes.txt")
    link.create_system, link.external_attr = 3, (stat.S_IFLNK | 0o777) << 16
    add("links", "symlink entry", f("link", add=[(link, b"/etc/passwd")]))
    bomb = f("bomb", add=[("padding.txt", b"\0" * (1 << 30))])
    add("inflation beyond declared size", "1 GiB of zeros declared as 1000 bytes",
        shrink_declared(bomb.read_bytes(), "padding.txt", 1000))
    add("inflation beyond declared size", "1 GiB of zeros declared honestly", bomb)
    add("oversized manifests", "7 MB manifest of small items",
        f("bigman", manifest=lambda m: m.update(padding=["x" * 10] * 500_000)))
    add("oversized manifests", "5,001 files listed",
        f("manyfiles", add=[(f"f{i}.txt", b"") for i in range(5001)]))
    deep = tmp / "deep.zip"
    with zipfile.ZipFile(deep, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", b"[" * 500_000 + b"]" * 500_000)
    add("nesting", "JSON manifest nested 500,000 deep", deep)
    add("nesting", "result.json nested 100 deep", f("deepres", change=lambda n, d: edit_result(
        d, lambda m: m["info"].update(x=_nest(100))) if n == "result.json" else d))
    add("nesting", "config.yaml nested 5,000 deep", f("deepyaml", change=lambda n, d:
        b"a: " + b"[" * 5000 + b"]" * 5000 if n == "config.yaml" else d))
    add("nesting", "YAML alias bomb", f("laughs", change=lambda n, d:
        b"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n" if n == "config.yaml" else d))
    raw = bytearray(run.read_bytes())
    with zipfile.ZipFile(run) as zf:
        info = zf.getinfo("result.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + 10, start + 40):
        raw[i] ^= 0xFF
    add("damaged streams", "corrupt deflate stream", bytes(raw))
    add("damaged streams", "truncated zip", run.read_bytes()[:-300])
    add("damaged streams", "bad UTF-8 in result.json",
        f("utf8", change=lambda n, d: b'{"kind": "\xff"}' if n == "result.json" else d))
    add("damaged streams", "not an npz", f("npz", change=lambda n, d: b"PK\x03\x04junk"
                                             if n == "arrays.npz" else d))
    add("damaged streams", "broken YAML", f("yaml", change=lambda n, d: b"a: [unclosed\n"
                                            if n == "config.yaml" else d))
    add("forged metrics", "AUC of 7", f("auc7", change=lambda n, d: edit_result(
        d, lambda m: m["metrics"].update(attack_logreg_auc=7.0)) if n == "result.json" else d))
    add("forged metrics", "NaN accuracy", f("nan", change=lambda n, d: edit_result(
        d, lambda m: m["metrics"].update(attack_logreg_acc=None)) if n == "result.json" else d))
    add("forged metrics", "plausible forgery, checksums recomputed", f(
        "plausible", change=lambda n, d: edit_result(d, lambda m: m["metrics"].update(
            attack_logreg_acc=0.999)) if n == "result.json" else d), expect="imported")
    foreign = f("foreign", manifest=lambda m: m["engine"].update(id="9.9.9+forged",
                                                                  fingerprint="cd" * 32))
    add("foreign engines", "another engine, no --read-only", foreign)
    add("foreign engines", "--read-only with this engine's key", foreign, expect="imported",
        read_only=True)
    dup = tmp / "dup.zip"
    import warnings

    with zipfile.ZipFile(dup, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, d in entries(run):
            zf.writestr(i.filename, d)
        zf.writestr("result.json", b"{}")
    add("duplicate names", "result.json twice", dup)
    add("half imports", "damaged file after three valid runs",
        forge(sweep, tmp / "late.zip", change=lambda n, d: b"\xff" if n == "report.html"
              else d))
    add("largest accepted run", "60 MB of arrays under the 64 MB cap",
        _padded_arrays(run, tmp / "padded.zip", 60), expect="imported")
    code = "open('ran.txt', 'w').write('ran')\n"
    nb = {"cells": [{"cell_type": "code", "source": code, "metadata": {}, "outputs": [],
                     "execution_count": None}], "metadata": {}, "nbformat": 4,
          "nbformat_minor": 5}
    add("code in notebooks", "notebook that writes a file", f(
        "nb", change=lambda n, d: json.dumps(nb).encode() if n == "notebook.ipynb"
        else code.encode() if n == "notebook.py" else d), expect="imported")
    return out


# ---------------------------------------------------------------------------------------------
# one import in a child process


_CHILD = r"""
import json, resource, sys, tracemalloc, traceback
from pathlib import Path
sys.path.insert(0, {tests!r})
from cache.bundle import BundleError, import_bundle
from cache.store import ResultStore
from _tappfl_contract import contract_runner
warm, path, root, read_only = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
import_bundle(warm, store=ResultStore(Path(root) / "warm"))  # load what an import loads
def status(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":"))
store = ResultStore(Path(root) / "store")
try:  # reset the peak (VmHWM) to the resident memory now: the import's own peak, then
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    how = "VmHWM"
except OSError:
    how = "ru_maxrss"
before = status("VmRSS")
tracemalloc.start()
out = {{}}
try:
    rep = import_bundle(path, store=store, read_only=read_only)
    out["outcome"] = "imported"
    out["message"] = rep.sentence
except BundleError as exc:
    out["outcome"] = "refused"
    out["message"] = str(exc)
except BaseException as exc:
    out["outcome"] = "unhandled"
    out["message"] = "".join(traceback.format_exception_only(type(exc), exc))[-400:]
peak_py = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
peak = status("VmHWM") if how == "VmHWM" else \
    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out["peak_rss_mb"] = (peak - before) / 2**20
out["peak_how"] = how
out["tracemalloc_mb"] = peak_py / 2**20
out["stored"] = len(store.list())
if out["outcome"] == "imported":
    out["peek_served"] = any(store.peek(r.config) is not None for r in store.list())
    served = [store.get_or_run(r.config, runner=contract_runner).from_cache
              for r in store.list() if r.kind == "attribute_privacy"]
    out["served"] = int(any(served))
out["ran_notebook"] = Path("ran.txt").exists()
print(json.dumps(out))
"""


def import_in_child(case: Case, warm: Path, tmp: Path) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(dir=tmp, prefix="child"))
    code = _CHILD.format(tests=str(ROOT / "tests"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code, str(warm), str(case.path), str(root),
                        "1" if case.read_only else "0"], check=False, capture_output=True,
                       text=True,
                       cwd=root, env=env, timeout=600)
    try:
        got = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        got = {"outcome": "unhandled", "message": (p.stderr or p.stdout)[-400:]}
    return got


def concurrent_imports(sweep: Path, tmp: Path, n: int = 4) -> dict[str, Any]:
    """``n`` processes import one sweep bundle into one store at once."""
    from cache.store import ResultStore

    root = tmp / "concurrent"
    code = ("import sys, json; from cache.bundle import import_bundle; "
            "from cache.store import ResultStore; "
            "r = import_bundle(sys.argv[1], store=ResultStore(sys.argv[2])); "
            "print(json.dumps([len(r.imported), len(r.already)]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(sweep), str(root)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(n)]
    outs = [p.communicate(timeout=600) for p in procs]
    counts = []
    for out, err in outs:
        try:
            counts.append(json.loads(out.strip().splitlines()[-1]))
        except (IndexError, ValueError):
            counts.append(err[-300:])
    store = ResultStore(root)
    keys = [r.key for r in store.list()]
    ok = (all(isinstance(c, list) and sum(c) == 3 for c in counts)
          and sorted(c[0] for c in counts) == [0] * (n - 1) + [3]
          and len(keys) == 3 == len(set(keys)) and store.verify().clean)
    return {"class": "concurrent imports", "case": f"{n} processes, one sweep bundle",
            "outcome": "imported" if ok else "unhandled", "expected": "imported",
            "message": json.dumps(counts), "stored": len(keys)}


def injected_failure(sweep: Path, tmp: Path) -> dict[str, Any]:
    """A write failing at the second run of three: what was added is taken back."""
    from cache.bundle import import_bundle
    from cache.errors import StoreIOError
    from cache.store import ImportedRuns, ResultStore

    store = ResultStore(tmp / "injected")
    real, calls = ImportedRuns.add, []

    def failing(self, result, *, origin):
        calls.append(1)
        if len(calls) == 2:
            raise StoreIOError("write run: no space left on device (injected)")
        return real(self, result, origin=origin)

    ImportedRuns.add = failing
    try:
        import_bundle(sweep, store=store)
        outcome, msg = "unhandled", "the failure did not surface"
    except StoreIOError as exc:
        outcome, msg = "refused", str(exc)
    finally:
        ImportedRuns.add = real
    return {"class": "half imports", "case": "a write failing at the second of three runs",
            "outcome": outcome, "expected": "refused", "message": msg,
            "stored": len(store.list())}


def per_record_auc(tmp: Path) -> tuple[float, list[dict[str, Any]]]:
    """(max |AUC recomputed from a bundle's imported arrays − AUC stored|, rows) over the
    attacks of a tiny membership run."""
    from cache.bundle import import_bundle, write_bundle
    from cache.store import ResultStore
    from core.report.exposure import recomputed_auc

    src = ResultStore(tmp / "mia-src")
    r = src.get_or_run(MEMBERSHIP)
    path = tmp / "mia.zip"
    write_bundle(r.key, path, store=src, figures=False)
    dst = ResultStore(tmp / "mia-dst")
    import_bundle(path, store=dst)
    imported = dst.get(str(r.key), imported=True)
    rows = []
    for name in MEMBERSHIP["attack"]["attackers"]:
        got, stored = recomputed_auc(imported, name)
        rows.append({"attack": name, "auc_stored": stored, "auc_recomputed": got,
                     "abs_diff": abs(got - stored)})
    return max(r["abs_diff"] for r in rows), rows


def main(quick: bool = False) -> dict[str, Any]:
    from benchmarks.userfiles_bench import merge_trust

    t0 = time.perf_counter()
    load_before = os.getloadavg()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="privlab_bundle_trust_") as d:
        tmp = Path(d)
        built = cases(tmp)
        warm, _ = contract_bundle(tmp / "warm")
        for case in built:
            got = import_in_child(case, warm, tmp)
            bad = (got["outcome"] != case.expect
                   or (got["outcome"] == "refused" and ("\n" in got.get("message", "")
                                                        or got.get("stored", 0) != 0))
                   or got.get("ran_notebook"))
            rows.append({"class": case.cls, "case": case.name, "expected": case.expect,
                         **got, "outcome": "unhandled" if bad else got["outcome"]})
        sweep = tmp / "sweep.zip"
        rows.append(injected_failure(sweep, tmp))
        rows.append(concurrent_imports(sweep, tmp))
        auc_diff, auc_rows = per_record_auc(tmp)
    tried = sorted({r["class"] for r in rows}, key=CLASSES.index)
    headline = {
        "bundle_classes_tried": tried,
        "bundle_import_unhandled": sum(r["outcome"] == "unhandled" for r in rows),
        "bundle_import_peak_rss_mb": round(max(r.get("peak_rss_mb", 0.0) for r in rows), 1),
        "forged_runs_served": sum(int(r.get("served", 0)) + int(r.get("peek_served", False))
                                  for r in rows),
        "half_imports": sum(r["outcome"] == "refused" and r.get("stored", 0) != 0
                            for r in rows),
        "per_record_auc_recomputed_max_abs_diff": auc_diff,
    }
    merge_trust(headline)
    worst = max(rows, key=lambda r: r.get("peak_rss_mb", 0.0))
    return {"name": "bundle_trust", "headline": headline, "rows": rows + auc_rows,
            "notes": (f"{len(rows)} hostile imports ({len(CLASSES)} classes), each in its own "
                      f"process; worst peak {worst.get('peak_rss_mb', 0):.1f} MB above the "
                      f"process before the import ({worst['case']}); load "
                      f"{load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after; "
                      f"{time.perf_counter() - t0:.0f} s"),
            "targets": {"bundle_import_unhandled": 0, "bundle_import_peak_rss_mb": PEAK_LIMIT_MB,
                        "forged_runs_served": 0, "half_imports": 0,
                        "per_record_auc_recomputed_max_abs_diff": 1e-9}}


if __name__ == "__main__":
    print(json.dumps(main()["headline"], indent=1))

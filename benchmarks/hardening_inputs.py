"""Hostile inputs for the hardening benchmark (issue 21): config files, ``--set`` values, CSVs
and image folders built to hang, exhaust memory or crash, each fed to the real CLI in its own
process under a time limit. A case is handled when the process exits 1 or 2 with exactly one
line ``privlab: error: ...`` on stderr; its peak memory (``VmHWM``, the process's own peak
resident set) is measured inside the process, so the largest hostile input's cost is known.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: the child reports its own peak resident memory: VmHWM of /proc/self/status (Linux). Not
#: ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux carries the parent's high-water mark across
#: fork + exec into it (a child of a 1.3 GB pytest reports 1.3 GB), so it would measure the
#: parent, not the input. ru_maxrss is the fallback where /proc is missing.
_CHILD = """import resource, sys
from cli.main import main
rc = main(sys.argv[1:])
try:
    kb = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))
except (OSError, StopIteration):
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
sys.stderr.write('\\n__RSS_KB__ %d\\n' % kb)
sys.exit(rc)
"""

LOL = "\n".join(
    ["kind: projection", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]) + "\n"


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` (a decompression bomb's first bytes)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(b"\x00" * 1024)) + chunk(b"IEND", b""))


def _cases(d: Path, quick: bool) -> list[tuple[str, list[str]]]:
    """(name, CLI argv) of every hostile input (files are created under ``d``)."""
    def put(name: str, data: bytes | str) -> str:
        p = d / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        return str(p)

    fifo = d / "fifo.yaml"
    os.mkfifo(fifo)
    csv_fifo = d / "fifo.csv"
    os.mkfifo(csv_fifo)
    cases: list[tuple[str, list[str]]] = [
        ("config: FIFO", ["run", str(fifo)]),
        ("config: /dev/zero", ["run", "/dev/zero"]),
        ("config: /dev/urandom", ["run", "/dev/urandom"]),
        ("config: a folder", ["run", str(d)]),
        ("config: 2 MB file", ["run", put("big.yaml", b"kind: projection\n" + b"#" * (2 << 20))]),
        ("config: 1 MiB at the cap", ["run", put("cap.yaml", b"kind: nope\n" + b"#" * ((1 << 20) - 12))]),
        ("config: duplicate keys", ["run", put("dup.yaml", "kind: projection\nseed: 1\nseed: 2\n")]),
        ("config: invalid UTF-8", ["run", put("utf.yaml", b"kind: projection\nmethod: \xff\xfe\n")]),
        ("config: billion laughs", ["run", put("lol.yaml", LOL)]),
        ("config: nested 600 deep", ["run", put("deep.yaml", "kind: projection\nx: " + "[" * 600
                                                + "]" * 600)]),
        ("config: nested 10^5 deep (YAML)", ["run", put("deeper.yaml", "x: " + "[" * 100_000
                                                        + "]" * 100_000)]),
        ("config: nested 10^5 deep (JSON)", ["run", put("deep.json", '{"x": ' + "[" * 100_000
                                                        + "]" * 100_000 + "}")]),
        ("config: self-referencing alias", ["run", put("cyc.yaml", "kind: projection\nx: &a [*a]\n")]),
        ("config: kind a list", ["run", put("k1.yaml", "kind: [1, 2]\n")]),
        ("config: kind a mapping", ["run", put("k2.yaml", "kind: {a: 1}\n")]),
        ("config: python tag", ["run", put("tag.yaml", "kind: !!python/object/apply:os.system [id]\n")]),
        ("config: δ = 1e-320", ["run", put("d.yaml", "kind: attribute_privacy\ndefense: {kind: "
                                          "dp_gaussian, delta: 1.0e-320}\n")]),
        ("config: κ = 1e-300", ["run", put("k.yaml", "kind: gradient_leakage\ndefense: {kind: "
                                          "channel, kappa: 1.0e-300}\n")]),
        ("config: η = 1e-300", ["run", put("e.yaml", "kind: fisher_information\ndefense: "
                                          "{eta_target: 1.0e-300}\n")]),
        ("config: target ε = 1e-300", ["run", put("t.yaml", "kind: membership\ndefense: {kind: "
                                                 "dp_sgd, target_epsilon: 1.0e-300}\n")]),
        ("config: classic ε = 1", ["run", put("c.yaml", "kind: fisher_information\nmodel: {model: "
                                             "logistic}\ndefense: {epsilon: 1.0, dp_method: "
                                             "classic}\n")]),
        ("config: FIL without attackers", ["run", put("f.yaml", "kind: fisher_information\n"
                                                     "attack: {attackers: []}\n")]),
        ("config: data_dir elsewhere", ["run", put("dd.yaml", "kind: projection\ndata: {name: "
                                                  "adult, data_dir: /nonexistent/x}\n")]),
        ("config: sweep of 12,000 points", ["run", put("sw.yaml", "kind: sweep\nbase: {kind: "
                                                      "projection}\ngrid: {max_points: ["
                                                      + ", ".join(str(10 + i) for i in range(2000))
                                                      + "]}\nseeds: [0, 1, 2, 3, 4, 5]\n")]),
        ("--set billion laughs", ["run", put("ok.yaml", "kind: projection\n"), "--set",
                                  "x={" + LOL.split("\n", 1)[1].replace("\n", ", ") + "}"]),
        ("csv: 10^6 columns", ["data", "add", "w", "--csv", put(
            "wide.csv", ",".join("c" for _ in range(10**6)) + "\n" + ",".join("1" for _ in range(10**6))),
            "--task", "c", "--private", "c"]),
        ("csv: 5,000 columns", ["data", "add", "w", "--csv", put(
            "w5.csv", ",".join(f"c{i}" for i in range(5000)) + "\n" + ",".join("1" * 5000)),
            "--task", "c0", "--private", "c1"]),
        ("csv: binary", ["data", "add", "b", "--csv", put("bin.csv", b"a,b\n\x00\x01\x02" * 1000),
                         "--task", "a", "--private", "b"]),
        ("csv: FIFO", ["data", "add", "f", "--csv", str(csv_fifo), "--task", "a", "--private", "b"]),
        ("csv: /dev/zero", ["data", "add", "z", "--csv", "/dev/zero", "--task", "a", "--private", "b"]),
    ]
    sparse = d / "sparse.csv"
    with open(sparse, "wb") as f:
        f.write(b"a,b,c\n")
    os.truncate(sparse, 600 * 1024**2)  # 600 MB (sparse): refused from its size alone
    cases.append(("csv: 600 MB", ["data", "add", "s", "--csv", str(sparse), "--task", "a",
                                  "--private", "b"]))
    if not quick:  # 200 MB of real rows: refused while streaming, at row 1,000,001
        long = d / "long.csv"
        block = b"1,x,y,2.5,abc,def\n" * 50_000
        with open(long, "wb") as f:
            f.write(b"a,b,c,d,e,f\n")
            f.writelines(block for _ in range(200 * 1024**2 // len(block)))
        cases.append(("csv: 200 MB, 11 M rows", ["data", "add", "l", "--csv", str(long),
                                                 "--task", "a", "--private", "b"]))
    bomb = d / "bomb"
    for c in ("a", "b"):
        (bomb / c).mkdir(parents=True)
        (bomb / c / "x.png").write_bytes(_png_header(30_000, 30_000))
    cases.append(("images: 30,000² pixel bomb", ["data", "add", "p", "--images", str(bomb)]))
    leak = d / "leak"
    (leak / "a").mkdir(parents=True)
    (leak / "b").mkdir()
    (leak / "a" / "x.png").symlink_to("/etc/hostname")
    (leak / "b" / "y.png").symlink_to("/etc/passwd")
    cases.append(("images: symlink out of the folder", ["data", "add", "q", "--images", str(leak)]))
    many = d / "many"
    n = 1_000 if quick else 100_001
    for c in ("a", "b"):
        (many / c).mkdir(parents=True)
    for i in range(n):
        (many / ("a" if i % 2 else "b") / f"{i}.png").touch()
    cases.append((f"images: {n:,} files", ["data", "add", "m", "--images", str(many)]))
    return cases


def run_cases(quick: bool = False, timeout_s: float = 120.0) -> tuple[list[dict[str, Any]], list[str]]:
    """Every hostile input through the CLI in its own process; rows with the outcome, the
    seconds and the peak memory."""
    d = Path(tempfile.mkdtemp(prefix="privlab-hostile-"))
    notes: list[str] = []
    rows = []
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PRIVLAB_DATA_REGISTRY": str(d / "reg"),
               "PRIVLAB_CACHE_DIR": str(d / "cache")}
        for name, argv in _cases(d, quick):
            t0 = time.perf_counter()
            try:
                p = subprocess.run([sys.executable, "-c", _CHILD, *argv], cwd=ROOT, env=env,
                                   capture_output=True, text=True, timeout=timeout_s, check=False)
            except subprocess.TimeoutExpired:
                rows.append({"case": name, "outcome": "hang", "seconds": timeout_s})
                continue
            secs = time.perf_counter() - t0
            lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
            rss = next((int(ln.split()[1]) // 1024 for ln in lines if ln.startswith("__RSS_KB__")),
                       None)
            msg = [ln for ln in lines if not ln.startswith("__RSS_KB__")]
            handled = (p.returncode in (1, 2) and len(msg) == 1
                       and msg[0].startswith("privlab: error: "))
            if not handled:
                notes.append(f"{name}: exit {p.returncode}: {' | '.join(msg)[-400:]}")
            rows.append({"case": name, "outcome": "handled" if handled else "unhandled",
                         "exit": p.returncode, "seconds": round(secs, 2), "peak_rss_mb": rss,
                         "message": (msg[0][16:120] if msg else "")})
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return rows, notes

"""The README's code, run as written: every ``bash`` / ``sh`` / ``shell`` / ``python`` block of
README.md and of the docs pages it links, in a scratch directory and a scratch store.

A block runs unless the line above its fence is ``<!-- not run: REASON -->`` (a server, an
install, a placeholder path; the reason is required). Shell blocks run in ``bash -e -o
pipefail`` with the environment's ``bin/`` first on ``PATH`` (``privlab`` is
``.venv/bin/privlab``), Python blocks in a fresh interpreter, both with the repository on
``PYTHONPATH``. All blocks share one scratch directory (holding a link to ``examples/``, as the
repository root does) and one store (``$PRIVLAB_CACHE_DIR``, ``$PRIVLAB_DATA_REGISTRY``,
``$PRIVLAB_MODEL_REGISTRY``), in the
README's link order, as a reader following the pages would.

``python -m benchmarks.readme_blocks`` prints ``readme_blocks_executed`` / ``_failed`` /
``_not_run`` and each failure; ``tests/test_readme_blocks.py`` requires no failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LANGS = {"bash": "shell", "sh": "shell", "shell": "shell", "python": "python"}
_FENCE = re.compile(r"^```(\w*)\s*$")
_NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->\s*$")
_LINK = re.compile(r"\]\(((?:docs/)?[\w./-]+\.md)(?:#[\w-]*)?\)")
#: one block's limit: the slowest (the Python API page's) takes about a minute on a busy core
TIMEOUT_S = 600


@dataclass(frozen=True)
class Block:
    """A fenced code block: its page, first line (1-based, the fence), kind (``shell`` or
    ``python``), code, and the reason it is not run (None: it runs)."""

    page: Path
    line: int
    kind: str
    code: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page}" \
               f":{self.line}"


def pages(readme: Path = README) -> list[Path]:
    """The README and the local Markdown pages it links, in link order, each once."""
    out = [readme]
    for target in _LINK.findall(readme.read_text(encoding="utf-8")):
        p = (readme.parent / target).resolve()
        if p.is_file() and p not in out:
            out.append(p)
    return out


def blocks(page: Path) -> list[Block]:
    """The runnable-language blocks of ``page`` (other fences, e.g. plain text, are skipped)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
        if m.group(1) in LANGS:
            mark = _NOT_RUN.match(lines[i - 1]) if i > 0 else None
            out.append(Block(page, i + 1, LANGS[m.group(1)], "\n".join(lines[i + 1:end]) + "\n",
                             mark.group(1) if mark else None))
        i = end + 1
    return out


def scratch_env(work: Path) -> dict[str, str]:
    """The environment a block runs in: this interpreter's ``bin/`` first on PATH, the
    repository importable, and the store and data registry inside ``work``."""
    return {**os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(ROOT),
            "PRIVLAB_CACHE_DIR": str(work / "store"),
            "PRIVLAB_DATA_REGISTRY": str(work / "datasets"),
            "PRIVLAB_MODEL_REGISTRY": str(work / "models")}


def run_block(block: Block, work: Path, env: dict[str, str], timeout: float = TIMEOUT_S
              ) -> str | None:
    """Run one block in ``work``; None when it exits 0, else its exit and the end of its
    output (one failure's message)."""
    cmd = (["bash", "-e", "-o", "pipefail", "-c", block.code] if block.kind == "shell"
           else [sys.executable, "-c", block.code])
    try:
        out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                             timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return f"{block.where}: still running after {timeout:g} s"
    if out.returncode == 0:
        return None
    tail = (out.stderr.strip() or out.stdout.strip()).splitlines()[-5:]
    return f"{block.where}: exit {out.returncode}: " + " | ".join(tail)


def run_all(page_list: list[Path] | None = None, work: Path | None = None) -> dict[str, Any]:
    """Every block of ``page_list`` (default: :func:`pages`), in order, in one scratch
    directory (``work``, else a new temporary one): the counts, the failures, the time."""
    page_list = pages() if page_list is None else page_list
    with tempfile.TemporaryDirectory(prefix="privlab-readme-") as tmp:
        work = Path(tmp) if work is None else work
        (work / "examples").symlink_to(ROOT / "examples")
        env = scratch_env(work)
        t0 = time.perf_counter()
        executed, failures, not_run = 0, [], []
        for page in page_list:
            for b in blocks(page):
                if b.not_run is not None:
                    not_run.append(f"{b.where}: {b.not_run}")
                    continue
                executed += 1
                if (err := run_block(b, work, env)) is not None:
                    failures.append(err)
        return {"readme_blocks_executed": executed, "readme_blocks_failed": len(failures),
                "readme_blocks_not_run": len(not_run), "failures": failures,
                "not_run": not_run, "pages": [str(p.relative_to(ROOT)) for p in page_list
                                              if p.is_relative_to(ROOT)],
                "seconds": round(time.perf_counter() - t0, 1)}


#: trust.json's figures from this check
TRUST_KEYS = ("readme_blocks_executed", "readme_blocks_failed")


def write_trust(res: dict[str, Any]) -> None:
    """Merge the counts into ``benchmarks/results/trust.json``'s headline (other keys kept)."""
    path = ROOT / "benchmarks" / "results" / "trust.json"
    doc = json.loads(path.read_text())
    doc["headline"].update({k: res[k] for k in TRUST_KEYS})
    doc.setdefault("sources", {}).update(
        {k: f"benchmarks.readme_blocks over {', '.join(res['pages'])}" for k in TRUST_KEYS})
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def main(quick: bool = False) -> dict[str, Any]:
    """The harness's entry: every runnable block, its counts merged into trust.json."""
    res = run_all()
    write_trust(res)
    rows = [{"failure": f} for f in res["failures"]] + [{"not_run": n} for n in res["not_run"]]
    return {"name": "readme_blocks", "headline": {k: res[k] for k in TRUST_KEYS}, "rows": rows,
            **res}


if __name__ == "__main__":
    res = run_all()
    print(json.dumps(res, indent=2, ensure_ascii=False))
    raise SystemExit(1 if res["readme_blocks_failed"] else 0)

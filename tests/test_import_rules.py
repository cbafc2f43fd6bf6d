"""Layering rules of the engine, checked on the source (ast): every ``import`` statement counts,
top-level, function-local and ``if TYPE_CHECKING:`` alike.

- nothing under ``core/`` imports ``dashboard``, ``cache`` or ``streamlit`` (``core/cli.py``
  excepted: the command line reads and writes the result store);
- ``core/data/`` does not import ``core.config`` (data functions take plain arguments or the
  :class:`core.data.base.DataSpecLike` protocol; config → data is the allowed direction);
- ``core/fl/`` does not import ``core.defenses`` or ``core.experiments`` (the FL loop is generic
  over a local objective; the thread budget lives in ``core.threads``).

A failure lists every violation as ``file:line: module``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core"

#: (file prefix relative to the repo, forbidden module prefixes, files exempt)
RULES: list[tuple[str, tuple[str, ...], frozenset[str]]] = [
    ("core/", ("dashboard", "cache", "streamlit"), frozenset({"core/cli.py"})),
    ("core/data/", ("core.config",), frozenset()),
    ("core/fl/", ("core.defenses", "core.experiments"), frozenset()),
]

#: (file, imported module) pairs tolerated for now, each with the reason. The test fails when
#: one is no longer needed, so this list only shrinks.
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(source: str, package: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """(line, absolute module) for every import in ``source`` (a module of ``package``);
    ``from a import b`` yields both ``a`` and ``a.b`` (b may be a submodule)."""
    tree = ast.parse(source, filename=filename)
    pkg = package.split(".") if package else []
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(pkg[: len(pkg) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            out.append((node.lineno, base))
            out.extend((node.lineno, f"{base}.{a.name}") for a in node.names if a.name != "*")
    return out


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _violations() -> tuple[list[str], set[tuple[str, str]]]:
    found: list[str] = []
    excused: set[tuple[str, str]] = set()
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        seen: set[tuple[int, str]] = set()
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for line, module in _imports(path.read_text(encoding="utf-8"), package, rel):
            for scope, forbidden, exempt in RULES:
                if not rel.startswith(scope) or rel in exempt:
                    continue
                for prefix in forbidden:
                    if not _matches(module, prefix) or (line, prefix) in seen:
                        continue
                    seen.add((line, prefix))
                    key = next((k for k in KNOWN_EXCEPTIONS if k[0] == rel and _matches(module, k[1])), None)
                    if key is not None:
                        excused.add(key)
                        continue
                    found.append(f"{rel}:{line}: imports {module} (rule: {scope} must not import {prefix})")
    return found, excused


def test_import_rules():
    found, _ = _violations()
    assert not found, "import-rule violations:\n" + "\n".join(found)


def test_known_exceptions_are_still_needed():
    _, excused = _violations()
    stale = sorted(set(KNOWN_EXCEPTIONS) - excused)
    assert not stale, f"remove from KNOWN_EXCEPTIONS (no longer imported): {stale}"


def test_the_checker_sees_local_relative_and_type_checking_imports():
    src = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from core.config import DataSpec\n"
        "def f():\n    from streamlit import x\n    import cache.store\n"
        "from ..experiments import run\nfrom . import splits\n"
    )
    mods = {m for _, m in _imports(src, "core.data")}
    assert {"core.config", "streamlit", "cache.store", "core.experiments", "core.data.splits"} <= mods

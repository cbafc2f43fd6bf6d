"""Where a part's knowledge is written, counted on the source and the history (the registry
benchmark's declaration figures):

- :func:`knob_range_declarations`: for every registered defense knob (``part.field``), the
  places whose numbers bound that field: the constraint on the part's config block (the
  declaration, counted once even when it is a shared type such as ``DPEpsilon``), every
  ``Knob(...)`` written with literal ``low``/``high`` for it, every ``check_range`` /
  ``range_error`` / ``check_array`` / ``check_int`` / ``check_positive`` call whose first
  argument is the field's name in the code a knob's value travels through — the defenses
  (``core/defenses/``, ``core/catalog/``), the runners, configs, Compare and teaching, the
  store and the pages (a function that re-checks the knob writes its range again;
  :func:`core.foundation.checks.check_field` reads the block's and is not counted) —, and every widget call
  (``slider``, ``number_input``, ``select_slider``) with literal ``min_value``/``max_value``
  whose ``key`` or label names the field. Bounds (``core/bounds/``) and generic helpers
  (``core/data/``, ``core/foundation/metrics.py``, ...) are left out: they state a formula's domain (κ > 0
  for a capacity, a Dirichlet α > 0) under a name that may coincide with a knob's, which is not
  the knob's range.
- :func:`edits_to_add`: the files other than tests and benchmarks that the commits adding a
  part's module changed (``git log`` of that file's first commit; 1 = the module alone).
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_CHECKERS = {"check_range", "range_error", "check_array", "check_int", "check_positive"}
_WIDGETS = {"slider", "number_input", "select_slider"}


def _py(root: Path, dirs: tuple[str, ...]) -> list[Path]:
    out: list[Path] = []
    for d in dirs:
        out += sorted(p for p in (root / d).rglob("*.py") if "__pycache__" not in p.parts)
    return out


def _num(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
        and not isinstance(node.value, bool)


def _strs(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)]


def knob_range_declarations(root: Path = ROOT) -> dict[str, list[str]]:
    """``"defense.field"`` -> the places its bounds are written (``file:line``), the block's
    constraint first."""
    import inspect

    from core.foundation.parts import DEFENSES

    out: dict[str, list[str]] = {}
    knobs = {(n, d.knob.field, d.config) for n, d in DEFENSES.items() if d.knob is not None}
    files = _py(root, ("core/defenses", "core/catalog", "core/runs", "cache", "dashboard"))
    files += [root / "core" / f for f in ("config/schema.py", "report/teaching.py")
              if (root / "core" / f).exists()]
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in files}
    for name, field, block in sorted(knobs, key=lambda t: t[0]):
        places: list[str] = []
        if block is not None:
            src = Path(inspect.getsourcefile(block)).resolve()
            line = inspect.getsourcelines(block)[1]
            places.append(f"{src.relative_to(root).as_posix()}:{line} ({block.__name__}.{field})")
        for path, tree in trees.items():
            rel = path.relative_to(root).as_posix()
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                fn = node.func.attr if isinstance(node.func, ast.Attribute) else \
                    node.func.id if isinstance(node.func, ast.Name) else ""
                args = node.args
                if fn == "Knob" and args and _strs(args[0]) == [field] and len(args) >= 5 \
                        and _num(args[3]) and _num(args[4]):
                    places.append(f"{rel}:{node.lineno} (Knob literal)")
                elif fn in _CHECKERS and args and isinstance(args[0], ast.Constant) \
                        and args[0].value == field:
                    places.append(f"{rel}:{node.lineno} ({fn})")
                elif fn in _WIDGETS:
                    kw = {k.arg: k.value for k in node.keywords if k.arg}
                    if _num(kw.get("min_value", ast.Constant(None))) \
                            and _num(kw.get("max_value", ast.Constant(None))) \
                            and any(re.search(rf"(?<![\w]){re.escape(field)}(?![\w])", s)
                                    for s in _strs(node)):
                        places.append(f"{rel}:{node.lineno} (widget {fn})")
        out[f"{name}.{field}"] = places
    return out


def knob_range_declarations_max(root: Path = ROOT) -> int:
    """The most places any one knob's bounds are written (1: its block alone)."""
    return max(len(v) for v in knob_range_declarations(root).values())


def edits_to_add(module: str, root: Path = ROOT) -> tuple[int | None, list[str]]:
    """(files changed outside ``tests/`` and ``benchmarks/``, their paths) by the commits that
    touched ``module`` (a repository path) up to and including the one that added it and any
    later one on the same branch before a merge: every commit that touched it. None when git
    has no history of it."""
    try:
        shas = subprocess.run(["git", "log", "--format=%H", "--no-merges", "--", module],
                              cwd=root, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None, []
    if not shas:
        return None, []
    files: set[str] = set()
    for sha in shas:
        names = subprocess.run(["git", "show", "--name-only", "--format=", sha], cwd=root,
                               capture_output=True, text=True, check=True).stdout.split()
        files.update(n for n in names if not n.startswith(("tests/", "benchmarks/")))
    return len(files), sorted(files)


def edits_when_added(module: str, root: Path = ROOT) -> tuple[int | None, list[str]]:
    """(files changed outside ``tests/`` and ``benchmarks/``, their paths) by the commit that
    added ``module`` (a repository path): what adding that part took, not what later moves of
    the whole tree touched. None when git has no history of it."""
    try:
        shas = subprocess.run(["git", "log", "--format=%H", "--diff-filter=A", "--", module],
                              cwd=root, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None, []
    if not shas:
        return None, []
    names = subprocess.run(["git", "show", "--name-only", "--format=", shas[-1]], cwd=root,
                           capture_output=True, text=True, check=True).stdout.split()
    files = sorted(n for n in names if not n.startswith(("tests/", "benchmarks/")))
    return len(files), files

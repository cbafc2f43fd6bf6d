"""The layer rule of privlab, written once (DESIGN: Architecture):

    pages  →  runs  →  attacks / defenses / bounds  →  numerics

A module may use its own layer and the layers below it, never one above. Two more rules: a page
never imports a private (``_name``) function of the engine or the store, and the finer rules of
:data:`RULES` (the engine never imports streamlit, the store or the pages; ``core/data`` is
independent of the config; the FL loop is generic over its objective).

Which layer a module is in is read from its folder: :data:`FOLDERS` gives each folder of
``core/`` and each top-level package its layer, and a module sits in the layer of the folder it
is in. The folders, bottom up:

- numerics: ``core/foundation`` (checks, seeds, the registry and the parts' declarations, the
  metric schema, metrics, results, stages, progress, caveats, releases), ``core/data``,
  ``core/config`` (over the data sets' specs), ``core/models``, ``core/engine`` (the one
  training loop), and the few modules directly in ``core/`` (this one);
- parts: ``core/bounds``, ``core/fl``, ``core/catalog`` (the parts' declarations with their
  builders), ``core/attacks``, ``core/defenses``;
- runs: ``core/runs`` (runners, the experiment entry point, comparisons), ``core/report``
  (the privacy report, advisor, notebooks, exposure, teaching sweeps), ``core/paper_check``, and
  ``cache``, the result store (it calls :func:`core.runs.experiments.run`);
- pages: ``dashboard``, ``cli`` (the command line: it runs, stores and draws bundles with the
  dashboard's figures) and ``privlab`` (the public Python module at the repository root).

A folder of ``core/`` that :data:`FOLDERS` does not name is itself a violation: a new folder
states its layer here before anything imports it.

An edge is every ``import`` statement (top level, inside functions, under ``TYPE_CHECKING``)
and every registry string naming a module, ``"package.module:attr"`` (``builder=``,
``function=`` in :mod:`core.foundation.parts`): a registry entry pointing into a runner is the
lower layer reaching up just as an import would. :func:`violations` lists what breaks the rule;
the import test (``tests/test_import_rules.py``) and the registry benchmark count it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

#: the layers, highest first, each with its folders: a top-level package (or module) by name,
#: a folder of core/ as ``core/<name>``; ``core`` holds the modules directly in core/
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pages", ("dashboard", "cli", "privlab")),
    ("runs", ("core/runs", "core/report", "core/paper_check", "cache")),
    ("parts", ("core/attacks", "core/defenses", "core/bounds", "core/fl", "core/catalog")),
    ("numerics", ("core/engine", "core/models", "core/config", "core/data", "core/foundation",
                  "core")),
)
#: folder -> its layer
FOLDERS: dict[str, str] = {folder: name for name, folders in LAYERS for folder in folders}

#: finer rules on import statements: (module prefix, forbidden module prefixes)
RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("dashboard", "cache", "cli", "streamlit")),
    ("core.data", ("core.config",)),
    ("core.fl", ("core.defenses", "core.runs")),
)

#: the folders scanned (relative to the repository root); this module, whose tables name every
#: layer, is not
PACKAGES = ("core", "cache", "dashboard", "cli")
#: single-file modules at the repository root, scanned too
MODULES = ("privlab.py",)
_SELF = "core/layers.py"

_RANK = {name: i for i, (name, _) in enumerate(LAYERS)}  # 0 = highest
_REGISTRY_STR = re.compile(r"((?:core|cache|dashboard|cli)(?:\.\w+)+)(?::([\w.]+))?")


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``file`` (relative, posix) line ``line`` reaches ``target`` (a module,
    or ``module:attr`` for a registry string or a private name)."""

    file: str
    line: int
    target: str
    rule: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.target} ({self.rule})"


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def folder_of(module: str) -> str | None:
    """The folder a dotted module is in: ``core/<name>`` for a module in a folder of core/,
    ``core`` for core itself and the modules directly in it, the top-level package otherwise
    (None outside privlab: numpy, streamlit, ...)."""
    parts = module.split(".")
    if parts[0] == "core":
        folder = f"core/{parts[1]}" if len(parts) > 1 else "core"
        return folder if folder in FOLDERS else "core"
    return parts[0] if parts[0] in FOLDERS else None


def layer_of(module: str) -> str | None:
    """The layer of a dotted module, read from its folder (None outside privlab)."""
    folder = folder_of(module)
    return None if folder is None else FOLDERS[folder]


def undeclared_folders(root: str | Path) -> list[str]:
    """Folders of core/ (packages) under ``root`` that :data:`FOLDERS` gives no layer."""
    core = Path(root) / "core"
    return sorted(f"core/{p.parent.name}" for p in core.glob("*/__init__.py")
                  if f"core/{p.parent.name}" not in FOLDERS)


def level(module: str) -> int:
    """The height of a module's layer: 0 numerics, 1 parts, 2 runs, 3 pages (a module may use
    its own height and below); 0 outside privlab."""
    name = layer_of(module)
    return 0 if name is None else len(LAYERS) - 1 - _RANK[name]


def _higher(a: str | None, b: str) -> str | None:
    """The higher of two layers (``a`` None: outside the table)."""
    return None if a is None else min(a, b, key=_RANK.__getitem__)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _exists(root: Path, module: str) -> bool:
    base = root.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _registry_ref(node: ast.AST) -> str | None:
    """``"core.x.y:attr"`` or ``"core.x.y"`` of a whole string constant, or the leading
    ``"core.x.y:"`` of an f-string (``f"core.attacks.membership:{name}"``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        m = _REGISTRY_STR.fullmatch(node.value)
        return None if m is None else node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            m = _REGISTRY_STR.match(first.value)
            if m and first.value[m.end():m.end() + 1] == ":":
                return m.group(1) + ":{...}"
    return None


def edges(source: str, package: str, filename: str = "<source>"
          ) -> list[tuple[int, str, str, tuple[str, ...]]]:
    """``(line, kind, module, names)`` for every import (kind ``import``) and every registry
    string (kind ``names``, names = the attribute) in ``source``, a module of ``package``;
    relative imports are resolved."""
    tree = ast.parse(source, filename=filename)
    pkg = package.split(".") if package else []
    out: list[tuple[int, str, str, tuple[str, ...]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, "import", a.name, ()) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(pkg[: len(pkg) - (node.level - 1)]
                                + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names = tuple(a.name for a in node.names if a.name != "*")
            out.append((node.lineno, "import", base, names))
        else:
            ref = _registry_ref(node)
            if ref is not None:
                module, _, attr = ref.partition(":")
                out.append((node.lineno, "names", module, (attr,) if attr else ()))
    return out


def _sources(root: Path) -> list[Path]:
    return sorted([p for pkg in PACKAGES if (root / pkg).is_dir()
                   for p in (root / pkg).rglob("*.py")]
                  + [root / m for m in MODULES if (root / m).is_file()])


def violation_records(root: str | Path | None = None) -> list[Violation]:
    """Every broken rule under ``root`` (default: this checkout), in file and line order."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[1]
    found = [Violation(folder, 0, folder, "a folder of core/ without a layer in core.layers.FOLDERS")
             for folder in undeclared_folders(root)]
    for path in _sources(root):
        rel = path.relative_to(root).as_posix()
        if rel == _SELF:
            continue
        name = _module_name(root, path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        here = layer_of(name)
        seen: set[tuple[int, str, str]] = set()
        for line, kind, module, names in edges(path.read_text(encoding="utf-8"), package, rel):
            # ``from a import b`` may name a submodule b: judge a.b where it is one
            targets = [module] + [f"{module}.{n}" for n in names
                                  if kind == "import" and _exists(root, f"{module}.{n}")]
            for target in targets:
                there = layer_of(target)
                if (kind == "names" and not _exists(root, target)) or there is None:
                    continue
                shown = target + (f":{names[0]}" if kind == "names" and names else "")
                # a registry entry is loaded by a runner: it may name a part from any layer
                # below the runs, never a runner or a page
                ceiling = here if kind == "import" else _higher(here, "parts")
                if ceiling is not None and _RANK[there] < _RANK[ceiling] \
                        and (line, shown, "layer") not in seen:
                    seen.add((line, shown, "layer"))
                    found.append(Violation(rel, line, shown, f"{here} must not reach {there}"
                                           + (", by a registry string" if kind == "names" else "")))
            if kind != "import":
                continue
            for prefix, forbidden in RULES:
                if not _matches(name, prefix):
                    continue
                for bad in forbidden:
                    hit = next((t for t in targets if _matches(t, bad)), None)
                    if hit is not None and (line, hit, bad) not in seen:
                        seen.add((line, hit, bad))
                        found.append(Violation(rel, line, hit,
                                               f"{prefix} must not import {bad}"))
            if here == "pages" and layer_of(module) not in (None, "pages"):
                for n in names:
                    if n.startswith("_") and not n.startswith("__"):
                        found.append(Violation(rel, line, f"{module}:{n}",
                                               "a page must not import a private name"))
    return found


def violations(root: str | Path | None = None) -> list[str]:
    """The broken layer rules under ``root`` as ``file:line: target (rule)`` lines (empty when
    the code keeps the rule)."""
    return [str(v) for v in violation_records(root)]


if __name__ == "__main__":  # python -m core.layers: list them
    for v in violations():
        print(v)

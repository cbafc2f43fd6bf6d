"""The registry as the one source of names and dispatch (issue #19), measured on the source.

Every figure is counted by an AST walk of the repository, so it moves only when the code does:

- ``runners_scoring_attacks``: registered runners whose kind is an attack family
  (:data:`core.parts.FAMILIES`); ``runners_using_protocol``: those of them whose module (or a
  ``core.runs`` module it imports) calls :func:`core.attacks.protocol.run_attack`;
- ``attack_name_branches`` / ``defense_kind_branches``: comparisons in ``core/runs/``
  (``x == "<name>"``, ``x != ...``, ``x in ("...", ...)``) against a registered attack name or
  config name, or a registered defense name;
- ``edits_to_add_attack``: source files a temporary attack is defined in when the test of
  ``tests/test_registry_dispatch.py`` registers it and finds it in the config's allowed names,
  the metric schema, the page's attacker list and ``privlab parts`` (and runs it end to end);
- ``seed_mixers``: seed-mixing implementations in ``core/``: :mod:`core.seeds` plus every
  other place that builds a ``SeedSequence``, calls ``default_rng`` on a list or tuple, hands a
  function a list or tuple holding a seed (``[seed, 11]``), or does arithmetic on a seed
  (``seed + 4243``, ``seed * 7919 + 17``);
- ``range_checkers``: :mod:`core.checks` plus every other function in ``core/`` that writes an
  "allowed range" ValueError naming the field it was handed (a private checker);
- ``layer_violations``: imports from a lower layer to a higher one (dashboard → core.runs →
  core.attacks / core.defenses / core.bounds → the rest of core), or of a runner's private name
  from a page.
- ``upward_imports``: import statements (module level, inside functions, under
  ``TYPE_CHECKING``) in ``core/``, ``cache/`` and ``dashboard/`` that reach a higher layer of
  :func:`layer_rank` (the rest of core → bounds / attacks / defenses → runs → cache →
  dashboard), or sideways between ``core.attacks`` and ``core.defenses`` (either way), or from
  ``core.bounds`` (pure numpy) into either of them;
- ``import_cycles``: strongly connected components of two or more modules in the project's
  import graph over ``core/``, ``cache/`` and ``dashboard/`` (every import statement an edge,
  function-level ones included: a lazy import still ties the two modules together).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core"
RUNS = CORE / "runs"

# ---------------------------------------------------------------------------------------------
# helpers


def _py(root: Path) -> Iterator[Path]:
    yield from sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _rel(path: Path) -> str:
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:  # a file outside the repository (the counters' own test)
        return path.as_posix()


def _strings(node: ast.AST) -> list[str]:
    """The string constants a comparison operand spells (a literal or a literal collection)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def registered_names() -> tuple[set[str], set[str]]:
    """(attack names and config names, defense names) of the registry."""
    from core.parts import ATTACKS, DEFENSES

    attacks = set(ATTACKS.names()) | {a.key for a in ATTACKS.values()}
    return attacks, set(DEFENSES.names())


def name_branches(root: Path = RUNS) -> dict[str, list[str]]:
    """``file:line: source`` of every comparison with a registered name under ``root``, split
    into ``attack`` and ``defense`` branches."""
    attacks, defenses = registered_names()
    out: dict[str, list[str]] = {"attack": [], "defense": []}
    for path in _py(root):
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.Compare):
                continue
            if not any(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops):
                continue
            spelled = [s for part in (node.left, *node.comparators) for s in _strings(part)]
            where = f"{_rel(path)}:{node.lineno}: {ast.unparse(node)}"
            if any(s in attacks for s in spelled):
                out["attack"].append(where)
            if any(s in defenses for s in spelled):
                out["defense"].append(where)
    return out


# ---------------------------------------------------------------------------------------------
# runner length: a runner reads as glue when no function of core/runs is long


def runner_function_lines(root: Path = RUNS) -> dict[str, int]:
    """``module.qualname`` -> lines (``def`` to the last line of the body, decorators
    excluded) of every function and method, nested ones included, in ``root/*.py``."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}.{child.name}"
                out[name] = child.end_lineno - child.lineno + 1
                visit(child, name)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}.{child.name}")
            else:
                visit(child, prefix)

    for path in sorted(root.glob("*.py")):
        module = _rel(path).removesuffix(".py").replace("/", ".")
        visit(_tree(path), module)
    return out


def longest_runner_function(root: Path = RUNS) -> tuple[str, int]:
    """(qualified name, lines) of the longest function or method in ``root/*.py``."""
    lines = runner_function_lines(root)
    name = max(lines, key=lambda n: (lines[n], n))
    return name, lines[name]


# ---------------------------------------------------------------------------------------------
# runners on the protocol


def _module_file(module: str) -> Path:
    return ROOT / (module.replace(".", "/") + ".py")


def _calls(tree: ast.AST, name: str) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute)
                                                             and f.attr == name):
                return True
    return False


def _runs_imports(tree: ast.AST) -> set[str]:
    """``core.runs`` modules a runner imports (its stage modules)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("core.runs."):
                out.add(node.module)
            elif node.module == "core.runs":
                out.update(f"core.runs.{a.name}" for a in node.names)
    return out


def runners_on_protocol() -> dict[str, bool]:
    """Kind -> whether its runner calls ``run_attack``, for every kind that is an attack family."""
    from core.experiments import RUNNERS
    from core.parts import FAMILIES

    out = {}
    for kind in RUNNERS:
        if kind not in FAMILIES:
            continue
        module = RUNNERS.get(kind).partition(":")[0]
        tree = _tree(_module_file(module))
        trees = [tree] + [_tree(_module_file(m)) for m in _runs_imports(tree)
                          if _module_file(m).exists()]
        out[kind] = any(_calls(t, "run_attack") for t in trees)
    return out


# ---------------------------------------------------------------------------------------------
# seed mixers


def _is_seed(node: ast.AST) -> bool:
    """A seed operand: a name or attribute called ``*seed*``, or ``int(...)`` of one."""
    if isinstance(node, ast.Name):
        return "seed" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "seed" in node.attr.lower()
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "int" and node.args:
        return _is_seed(node.args[0])
    return False


_MIXING_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Mod, ast.BitXor, ast.LShift, ast.RShift)


def seed_mixer_sites(root: Path = CORE) -> list[str]:
    """Places outside :mod:`core.seeds` that mix a seed by hand."""
    sites = []
    for path in _py(root):
        if path == CORE / "seeds.py":
            continue
        for node in ast.walk(_tree(path)):
            where = f"{_rel(path)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                seqs = [a for a in (*node.args, *(k.value for k in node.keywords))
                        if isinstance(a, ast.List | ast.Tuple) and any(map(_is_seed, a.elts))]
                if name == "SeedSequence":
                    sites.append(f"{where}: SeedSequence")
                elif name == "default_rng" and node.args and isinstance(
                        node.args[0], ast.List | ast.Tuple):
                    sites.append(f"{where}: default_rng({ast.unparse(node.args[0])})")
                elif seqs:  # a hand-made key such as subsample(n, cap, [seed, 11])
                    sites.append(f"{where}: {name}(... {ast.unparse(seqs[0])} ...)")
            elif isinstance(node, ast.BinOp) and isinstance(node.op, _MIXING_OPS) and (
                    _is_seed(node.left) or _is_seed(node.right)):
                sites.append(f"{where}: {ast.unparse(node)}")
    return sites


# ---------------------------------------------------------------------------------------------
# range checkers


def _writes_allowed_range(raise_node: ast.Raise) -> ast.JoinedStr | None:
    exc = raise_node.exc
    if not (isinstance(exc, ast.Call) and getattr(exc.func, "id", None) == "ValueError" and exc.args):
        return None
    msg = exc.args[0]
    text = "".join(v.value for v in ast.walk(msg)
                   if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return msg if "allowed range" in text and isinstance(msg, ast.JoinedStr) else None


def range_checker_functions(root: Path = CORE) -> list[str]:
    """Functions outside :mod:`core.checks` that write an "allowed range" message for a field
    name handed to them (the message starts with one of their parameters)."""
    out = []
    for path in _py(root):
        if path == CORE / "checks.py":
            continue
        for fn in ast.walk(_tree(path)):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
            for node in ast.walk(fn):
                msg = _writes_allowed_range(node) if isinstance(node, ast.Raise) else None
                first = msg.values[0] if msg is not None and msg.values else None
                if (isinstance(first, ast.FormattedValue) and isinstance(first.value, ast.Name)
                        and first.value.id in params):
                    out.append(f"{_rel(path)}:{fn.lineno}: {fn.name}")
                    break
    return out


# ---------------------------------------------------------------------------------------------
# layers

def layer_violation_list() -> list[str]:
    """The layer rule's violations (:func:`core.layers.violations`: imports and registry
    strings from a lower layer to a higher one, pages importing private engine names)."""
    from core.layers import violations

    return violations(ROOT)


# ---------------------------------------------------------------------------------------------
# upward imports and import cycles

#: the folders whose modules make up the import graph
PACKAGES = ("core", "cache", "dashboard")

#: (importer prefix, forbidden prefix): packages of one layer that must not import each other;
#: the bounds are pure functions of arrays, below the attacks and defenses that use them
SIDEWAYS: tuple[tuple[str, str], ...] = (
    ("core.attacks", "core.defenses"), ("core.defenses", "core.attacks"),
    ("core.bounds", "core.attacks"), ("core.bounds", "core.defenses"))


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_rank(module: str) -> int | None:
    """The height of a module in the import order, lowest first: 0 the rest of core (config,
    data, nn, training, seeds, metrics, ...), 1 bounds / attacks / defenses (and the other
    parts: fl, fil), 2 runs (runners, experiments, compare, teaching), 3 cache, 4 dashboard
    (and core.cli); None outside the project. The layers are :data:`core.layers.LAYERS`'
    with the result store above the runs it calls."""
    from core.layers import layer_of

    name = layer_of(module)
    if name is None:
        return None
    if _under(module, "cache"):
        return 3
    return {"numerics": 0, "parts": 1, "runs": 2, "pages": 4}[name]


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file of every module under the project's packages (a package is
    its ``__init__.py``)."""
    out = {}
    for pkg in PACKAGES:
        if not (root / pkg).is_dir():
            continue
        for path in _py(root / pkg):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def import_edges(root: Path = ROOT) -> list[tuple[str, int, str, str]]:
    """``(file, line, importer, imported)`` for every import statement under ``root`` that names
    a module of the project. ``from pkg import name`` imports ``pkg.name`` where that is a
    module and ``pkg`` otherwise; relative imports are resolved (:func:`core.layers.edges`)."""
    from core.layers import edges

    modules = _modules(root)
    out = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        rel = path.relative_to(root).as_posix()
        seen = set()
        for line, kind, module, names in edges(path.read_text(encoding="utf-8"), package, rel):
            if kind != "import":
                continue
            subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in modules]
            whole = not names or len(subs) < len(names)  # some name is an attribute of module
            for target in subs + ([module] if whole else []):
                if target in modules and target != name and (line, target) not in seen:
                    seen.add((line, target))
                    out.append((rel, line, name, target))
    return out


def upward_import_list(root: Path = ROOT) -> list[str]:
    """``file:line: importer -> imported (why)`` for every import that reaches a higher layer
    of :func:`layer_rank` or crosses a :data:`SIDEWAYS` pair."""
    out = []
    for rel, line, src, dst in import_edges(root):
        here, there = layer_rank(src), layer_rank(dst)
        if here is not None and there is not None and there > here:
            out.append(f"{rel}:{line}: {src} -> {dst} (layer {here} imports layer {there})")
        for a, b in SIDEWAYS:
            if _under(src, a) and _under(dst, b):
                out.append(f"{rel}:{line}: {src} -> {dst} ({a} imports {b})")
    return out


def upward_imports(root: Path = ROOT) -> int:
    """How many imports run upward or sideways (:func:`upward_import_list`)."""
    return len(upward_import_list(root))


def import_cycle_list(root: Path = ROOT) -> list[list[str]]:
    """The import cycles under ``root``: each strongly connected component of two or more
    modules of the import graph (:func:`import_edges`), its modules sorted; sorted."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    names = sorted(_modules(root))
    index = {n: i for i, n in enumerate(names)}
    pairs = sorted({(index[a], index[b]) for _, _, a, b in import_edges(root)})
    if not pairs:
        return []
    rows, cols = np.array(pairs).T
    graph = coo_matrix((np.ones(len(pairs)), (rows, cols)), shape=(len(names), len(names)))
    _, label = connected_components(graph, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for name, c in zip(names, label):
        groups.setdefault(int(c), []).append(name)
    return sorted(g for g in groups.values() if len(g) >= 2)


def import_cycles(root: Path = ROOT) -> int:
    """How many import cycles (:func:`import_cycle_list`)."""
    return len(import_cycle_list(root))


# ---------------------------------------------------------------------------------------------
# the benchmark


def edits_to_add_attack() -> tuple[int | None, dict[str, Any]]:
    """Files the temporary attack of ``tests/test_registry_dispatch.py`` is defined in, when
    the config, the metric schema, the membership page, ``privlab parts`` and a run all see it
    (None, with what missed it, otherwise)."""
    import inspect

    from tests import test_registry_dispatch as T

    with T.temporary_attack() as part:
        seen = T.surfaces_seeing(part, page=True, run=True)
        files = {inspect.getsourcefile(inspect.unwrap(T.temporary_attack)),
                 inspect.getsourcefile(T.margin_on_release)}
    ok = all(seen.values())
    return (len(files) if ok else None), {"surfaces": seen,
                                          "files": sorted(_rel(Path(f)) for f in files)}


def main(quick: bool = False) -> dict[str, Any]:
    branches = name_branches()
    protocol = runners_on_protocol()
    mixers = seed_mixer_sites()
    checkers = range_checker_functions()
    layers = layer_violation_list()
    upward = upward_import_list()
    cycles = import_cycle_list()
    edits, seen = edits_to_add_attack()
    headline = {
        "runners_using_protocol": sum(protocol.values()),
        "runners_scoring_attacks": len(protocol),
        "attack_name_branches": len(branches["attack"]),
        "defense_kind_branches": len(branches["defense"]),
        "edits_to_add_attack": edits,
        "seed_mixers": 1 + len(mixers),
        "range_checkers": 1 + len(checkers),
        "layer_violations": len(layers),
        "upward_imports": len(upward),
        "import_cycles": len(cycles),
    }
    rows = [{"figure": k, "value": v} for k, v in headline.items()]
    notes = ("counted by AST walks of the source (benchmarks/registry_bench.py); seed_mixers "
             "and range_checkers count core/seeds.py and core/checks.py as the one each. "
             f"Private range checkers besides core/checks.py: {len(checkers)}.")
    return {"name": "registry", "headline": headline, "rows": rows, "notes": notes,
            "targets": {"runners_using_protocol": "= runners_scoring_attacks",
                        "attack_name_branches": 0, "defense_kind_branches": 0,
                        "edits_to_add_attack": 1, "seed_mixers": 1, "range_checkers": 1,
                        "layer_violations": 0, "upward_imports": 0, "import_cycles": 0},
            "details": {"runners": protocol, "branches": branches, "seed_mixer_sites": mixers,
                        "range_checker_functions": checkers, "layer_violations": layers,
                        "upward_imports": upward, "import_cycles": cycles,
                        "temporary_attack": seen}}

"""The registry as the one source of names and dispatch (issue #19), measured on the source.

Every figure is counted by an AST walk of the repository, so it moves only when the code does:

- ``runners_scoring_attacks``: registered runners whose kind is an attack family
  (:data:`core.foundation.parts.FAMILIES`); ``runners_using_protocol``: those of them whose module (or a
  ``core.runs`` module it imports) calls :func:`core.attacks.protocol.run_attack`;
- ``attack_name_branches`` / ``defense_kind_branches``: comparisons in ``core/runs/``
  (``x == "<name>"``, ``x != ...``, ``x in ("...", ...)``) against a registered attack name or
  config name, or a registered defense name;
- ``edits_to_add_attack``: source files a temporary attack is defined in when the test of
  ``tests/test_registry_dispatch.py`` registers it and finds it in the config's allowed names,
  the metric schema, the page's attacker list and ``privlab parts`` (and runs it end to end);
- ``edits_to_add_defense_label_smoothing`` / ``edits_to_add_game_defense``: files that differ
  from this tree in a copy of it where label smoothing's / adversarial regularisation's module
  was written once more under a new name, when every surface sees the copy
  (:func:`benchmarks.declaration_counts.edits_to_add_by_copy`; ``tests/test_defense_copy.py``);
- ``seed_mixers``: seed-mixing implementations in ``core/``: :mod:`core.foundation.seeds` plus every
  other place that builds a ``SeedSequence``, calls ``default_rng`` on a list or tuple, hands a
  function a list or tuple holding a seed (``[seed, 11]``), or does arithmetic on a seed
  (``seed + 4243``, ``seed * 7919 + 17``);
- ``range_checkers``: :mod:`core.foundation.checks` plus every other function in ``core/`` that writes an
  "allowed range" ValueError naming the field it was handed (a private checker);
- ``layer_violations``: imports from a lower layer to a higher one (dashboard → core.runs →
  core.attacks / core.defenses / core.bounds → the rest of core), or of a runner's private name
  from a page;
- ``upward_imports``: import statements (module level, inside functions, under
  ``TYPE_CHECKING``) in ``core/``, ``cache/`` and ``dashboard/`` that reach a higher layer of
  :func:`layer_rank` (the rest of core → bounds / attacks / defenses → runs → cache →
  dashboard), or sideways between ``core.attacks`` and ``core.defenses`` (either way), or from
  ``core.bounds`` (pure numpy) into either of them;
- ``import_cycles``: strongly connected components of two or more modules in the project's
  import graph over ``core/``, ``cache/`` and ``dashboard/`` (every import statement an edge,
  function-level ones included: a lazy import still ties the two modules together);
- ``defense_name_literals_outside_parts``: comparisons in ``core/``, ``cache/`` and ``dashboard/``
  outside the parts' own modules (``core/catalog/``, ``core/foundation/parts.py``) against a registered
  defense, attack or attack config name (:func:`defense_name_literals_outside_parts`).
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
    from core.foundation.parts import ATTACKS, DEFENSES

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


#: the trees searched for part-name literals, and the parts' own modules left out of it
NAME_LITERAL_TREES = ("core", "cache", "dashboard", "cli")
PARTS_OWN = ("core/catalog/", "core/foundation/parts.py")


def _function_module(function: Any) -> str | None:
    """The repository path of the module an ``AttackPart.function`` lives in."""
    module = (function.partition(":")[0] if isinstance(function, str)
              else getattr(function, "__module__", None))
    return None if not module else module.replace(".", "/") + ".py"


def _implemented_words() -> dict[str, set[str]]:
    """Module path -> the attack names and config names of the attacks it implements (the
    module of their ``AttackPart.function``)."""
    from core.foundation.parts import ATTACKS

    out: dict[str, set[str]] = {}
    for name, part in ATTACKS.items():
        module = _function_module(part.function)
        if module is not None:
            out.setdefault(module, set()).update({name, part.key})
    return out


def defense_name_literals_outside_parts(root: Path = ROOT) -> list[str]:
    """``file:line: source`` of every comparison (``ast.Compare``: ``==``, ``!=``, ``in``,
    ``is``, ...) one of whose operands spells, as a string literal or a literal tuple, list or
    set of them, a registered defense name, attack name or attack config name, in
    ``core/``, ``cache/`` and ``dashboard/`` under ``root`` except the parts' own modules
    (``core/catalog/``, ``core/foundation/parts.py``). ``match`` cases and dict-key lookups are not
    counted.

    Generic words: an attack's name may also be a plain option value (``model == "mlp"``, a
    label mode ``"idlg"``). Such a comparison is left out only where it sits in the module that
    implements that very attack (the module of its ``AttackPart.function``), where the word is
    the attack's own option; the same word anywhere else counts, and a defense name counts
    everywhere (a defense's module names it through its block)."""
    from core.foundation.parts import ARCHITECTURES

    attacks, defenses = registered_names()
    defenses = defenses | set(ARCHITECTURES.names())  # never exempt, like a defense's name
    own = _implemented_words() if root == ROOT else {}
    out = []
    for tree_name in NAME_LITERAL_TREES:
        if not (root / tree_name).is_dir():
            continue
        for path in _py(root / tree_name):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(PARTS_OWN):
                continue
            exempt = own.get(rel, set())
            for node in ast.walk(_tree(path)):
                if not isinstance(node, ast.Compare):
                    continue
                spelled = {s for part in (node.left, *node.comparators) for s in _strings(part)}
                hits = (spelled & defenses) | ((spelled & attacks) - exempt)
                if hits:
                    out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
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
    from core.foundation.parts import FAMILIES
    from core.runs.experiments import RUNNERS

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
    """Places outside :mod:`core.foundation.seeds` that mix a seed by hand."""
    sites = []
    for path in _py(root):
        if path == CORE / "foundation" / "seeds.py":
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
    """Functions outside :mod:`core.foundation.checks` that write an "allowed range" message for a field
    name handed to them (the message starts with one of their parameters)."""
    out = []
    for path in _py(root):
        if path == CORE / "foundation" / "checks.py":
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
PACKAGES = ("core", "cache", "dashboard", "cli")

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
    (and cli); None outside the project. The layers are :data:`core.layers.LAYERS`'
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
# "module:attr" strings: every one resolved by one test (tests/test_registry_strings.py)


def _registry_modules(root: Path = ROOT) -> list[str]:
    """Modules under the project's packages that create a :class:`core.foundation.registry.Registry` at
    module level (importing them fills :data:`core.foundation.registry.Registry.instances`)."""
    out = []
    for name, path in _modules(root).items():
        for node in _tree(path).body:
            value = getattr(node, "value", None)
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Registry":
                out.append(name)
                break
    return sorted(out)


def dotted_string_sites(root: Path = ROOT) -> list[tuple[str, str]]:
    """``(where, "module:attr")`` for every object path the project names by string: each entry
    of every registry (its fields and typed groups, :func:`core.foundation.registry.object_paths`;
    ``where`` = ``"<registry>:<name>"``) and every string constant in the source that is one
    (``where`` = ``file:line``: tables such as the data sets' loaders)."""
    import importlib

    from core.foundation.registry import OBJECT_PATH, Registry, object_paths

    for module in _registry_modules(root):
        importlib.import_module(module)
    out = []
    for reg in Registry.instances:
        for name, entry in reg.items():
            out.extend((f"{reg.what}:{name}", p) for p in object_paths(entry))
    for pkg in PACKAGES:
        for path in _py(root / pkg):
            for node in ast.walk(_tree(path)):
                if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                        and OBJECT_PATH.fullmatch(node.value)):
                    out.append((f"{_rel(path)}:{node.lineno}", node.value))
    return list(dict.fromkeys(out))


def unresolved_dotted_strings(root: Path = ROOT) -> list[str]:
    """``where: path (why)`` for every object path of :func:`dotted_string_sites` that does not
    import (a misspelt module or attribute). Target: none."""
    from core.foundation.registry import resolve_path

    out = []
    for where, path in dotted_string_sites(root):
        try:
            resolve_path(path)
        except (ImportError, AttributeError) as e:
            out.append(f"{where}: {path} ({type(e).__name__}: {e})")
    return out


# ---------------------------------------------------------------------------------------------
# attack settings: each attack's own block, in its catalog module


def attack_settings_outside_attack_modules() -> list[str]:
    """``attack: setting`` for every ``cfg.attack`` field an attack reads that its own settings
    block in :mod:`core.catalog` does not declare: one named in ``params`` (declared by the
    family's config) or a block defined elsewhere. Target: none."""
    from core.foundation.parts import ATTACKS

    out = []
    for name, part in ATTACKS.items():
        block = part.settings
        own = (set(block.model_fields) if block is not None
               and block.__module__.startswith("core.catalog.") else set())
        out.extend(f"{name}: {s}" for s in part.setting_names() if s not in own)
    return out


# ---------------------------------------------------------------------------------------------
# training loops, function lengths, loose modules, folder-level cycles


def _call_name(call: ast.Call) -> str:
    """``a.b.c`` of a call's callee (the last parts that are names or attributes)."""
    parts = []
    f = call.func
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
    return ".".join(reversed(parts))


def _grad_names(fn: ast.AST | None) -> set[str]:
    """Names ``fn`` binds to a torch.func gradient (``g = vmap(grad(loss))``)."""
    out: set[str] = set()
    for n in ast.walk(fn) if fn is not None else ():
        if isinstance(n, ast.Assign) and any(
                isinstance(c, ast.Call) and _call_name(c).split(".")[-1] == "grad"
                for c in ast.walk(n.value)):
            out.update(t.id for t in n.targets if isinstance(t, ast.Name))
    return out


def _calls_one_of(call: ast.Call, names: set[str], local: set[str]) -> bool:
    """Whether ``call`` calls a function of ``names`` (by its last name: a module's function or
    a method) or of ``local`` (functions defined inside the enclosing function: by bare name
    only, so a nested ``step`` is not every ``.step()``)."""
    return (_call_name(call).split(".")[-1] in names
            or isinstance(call.func, ast.Name) and call.func.id in local)


def _gradient_line(node: ast.AST, grads: set[str], steps: set[str],
                   local: set[str] | frozenset[str] = frozenset()) -> int | None:
    """The first line in ``node`` that computes a gradient: ``.backward()``,
    ``torch.autograd.grad``, a torch.func gradient of ``grads``, or a call of a step function
    of ``steps`` / ``local`` (a function that computes a gradient and updates: an objective's
    local step)."""
    lines = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            name = _call_name(n)
            last = name.split(".")[-1]
            if (last == "backward" or name.endswith("autograd.grad") or name in grads
                    or _calls_one_of(n, steps, local)):
                lines.append(n.lineno)
    return min(lines) if lines else None


#: in-place tensor updates that change parameters by hand (``p.sub_(lr * g)``)
_UPDATES = ("add_", "sub_", "addcmul_", "mul_", "copy_", "_foreach_add_", "_foreach_sub_")


def _mentions_lr(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name | ast.Attribute)
               and "lr" in (n.id if isinstance(n, ast.Name) else n.attr).lower()
               for n in ast.walk(node))


def _updates_after(node: ast.AST, line: int, steps: set[str],
                   local: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether ``node`` steps an optimiser (``.step()``, a step or update function of
    ``steps`` / ``local``, :func:`_update_functions`) or updates tensors at or after ``line``
    (in place, or ``w - lr * g``)."""
    for n in ast.walk(node):
        if getattr(n, "lineno", 0) < line:
            continue
        if isinstance(n, ast.Call):
            last = _call_name(n).split(".")[-1]
            if (last.endswith("step") or last.lstrip("_").startswith("sgd") or last in _UPDATES
                    or _calls_one_of(n, steps, local)):
                return True
        if isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Sub):
            return True
        if (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub)
                and _mentions_lr(n.right)):
            return True
    return False


def _lr_update(node: ast.AST) -> bool:
    """Whether ``node`` changes tensors in place by a learning rate (``p.sub_(g, alpha=lr)``,
    ``_foreach_add_(ps, gs, alpha=-lr)``, ``w -= lr * g``)."""
    if isinstance(node, ast.Call):
        return _call_name(node).split(".")[-1] in _UPDATES and _mentions_lr(node)
    return (isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Sub)
            and _mentions_lr(node.value))


def _functions(root: Path) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    """Every function under ``root`` with whether it is defined inside another function."""
    def visit(node: ast.AST, nested: bool) -> Iterator:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield child, nested
                yield from visit(child, True)
            else:
                yield from visit(child, nested)

    for path in _py(root):
        yield from visit(_tree(path), False)


def _update_functions(root: Path) -> set[str]:
    """Names of the module-level functions and methods under ``root`` that compute no gradient
    and update tensors in place by a learning rate (:func:`_lr_update`: a hand-written SGD
    helper such as ``_sgd_(params, grads, lr)``): calling one after a gradient is an update,
    whatever its name."""
    return {fn.name for fn, nested in _functions(root) if not nested
            and _gradient_line(fn, _grad_names(fn), set()) is None
            and any(_lr_update(n) for n in ast.walk(fn))}


#: modules that optimise an attack's inputs throughout (gradient inversion: dummy data through
#: a simulated local update of the victim), not a model: their loops are not training loops
INPUT_OPTIMISERS = ("core/attacks/gradient_inversion.py",)


def _optimises_inputs(fn: ast.AST) -> bool:
    """Whether ``fn`` optimises an attack's inputs, not a model: it builds an optimiser over a
    literal list of bare tensors (``Adam([x])``: gradient inversion's dummy data, a
    representation inversion's image; a module's tensors such as ``[m.noise.mu]`` are model
    training), or differentiates through a simulated step (``create_graph=True``: the
    inversion replaying the victim's local update)."""
    for n in ast.walk(fn):
        if not isinstance(n, ast.Call):
            continue
        if (".optim." in f".{_call_name(n)}" and n.args
                and isinstance(n.args[0], ast.List | ast.Tuple)
                and all(isinstance(e, ast.Name) for e in n.args[0].elts)):
            return True
        if any(k.arg == "create_graph" and isinstance(k.value, ast.Constant) and k.value.value
               for k in n.keywords):
            return True
    return False


def _is_step(fn: ast.AST, updates: set[str]) -> bool:
    """Whether ``fn`` computes a gradient and updates (``updates``: update functions) without
    a loop of its own."""
    if any(isinstance(n, ast.For | ast.While) for n in ast.walk(fn)):
        return False
    line = _gradient_line(fn, _grad_names(fn), set())
    return line is not None and _updates_after(fn, line, updates)


def _step_functions(root: Path, updates: set[str]) -> set[str]:
    """Names of the module-level functions and methods under ``root`` that compute a gradient
    and update without a loop of their own (an FL objective's ``module_step`` /
    ``stacked_step``): a loop calling one is a training loop. A function defined inside
    another is a local name, matched only there (:func:`_local_steps`)."""
    return {fn.name for fn, nested in _functions(root) if not nested and _is_step(fn, updates)}


def _local_steps(fn: ast.AST | None, updates: set[str]) -> set[str]:
    """Names of the step functions (:func:`_is_step`) defined inside ``fn``."""
    return {n.name for n in ast.walk(fn) if n is not fn
            and isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and _is_step(n, updates)} if fn is not None else set()


def _without_nested_functions(node: ast.AST) -> ast.AST:
    """A copy of ``node`` with every function defined inside it emptied."""
    import copy

    class Strip(ast.NodeTransformer):
        def visit_FunctionDef(self, n: ast.FunctionDef) -> ast.AST:
            n.body = [ast.Pass()]
            return n

        visit_AsyncFunctionDef = visit_FunctionDef

    return Strip().visit(copy.deepcopy(node))


def training_loop_list(root: Path = CORE) -> dict[str, list[str]]:
    """``{"loops": [...], "excluded": [...]}``: ``file:function:line`` of every minibatch loop
    over a model's parameters under ``root`` (a ``for`` / ``while`` loop whose body computes a
    gradient, :func:`_gradient_line`, and then steps an optimiser or updates the weights,
    :func:`_updates_after`; the innermost such loop of a nest counts once), and those left out
    because their function optimises an attack's inputs (:func:`_optimises_inputs`)."""
    out: dict[str, list[str]] = {"loops": [], "excluded": []}
    updates = _update_functions(root)
    steps = _step_functions(root, updates)

    def trains(loop: ast.AST, grads: set[str], local: set[str]) -> bool:
        # a function defined inside a loop is not that loop's step: its body runs where the
        # function is called (the batched form's epoch loop defines the step its driver runs)
        loop = _without_nested_functions(loop)
        line = _gradient_line(loop, grads, steps, local)
        return line is not None and _updates_after(loop, line, steps | updates, local)

    def visit(node: ast.AST, fn: ast.AST | None, name: str, path: Path) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child, child.name if fn is None else f"{name}.{child.name}", path)
                continue
            if isinstance(child, ast.For | ast.While):
                grads, local = _grad_names(fn), _local_steps(fn, updates)
                inner = [n for n in ast.walk(child) if n is not child
                         and isinstance(n, ast.For | ast.While) and trains(n, grads, local)]
                if trains(child, grads, local) and not inner:
                    where = f"{_rel(path)}:{name}:{child.lineno}"
                    bad = (_rel(path) in INPUT_OPTIMISERS
                           or fn is not None and _optimises_inputs(fn))
                    out["excluded" if bad else "loops"].append(where)
            visit(child, fn, name, path)

    for path in _py(root):
        visit(_tree(path), None, "<module>", path)
    return out


def function_lines(roots: tuple[Path, ...] = (CORE, ROOT / "dashboard")) -> dict[str, int]:
    """``file:qualname`` -> lines (``def`` to its last line) of every function and method,
    nested ones included, in every module under ``roots``."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str, path: Path) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}.{child.name}" if prefix else child.name
                out[f"{_rel(path)}:{name}"] = child.end_lineno - child.lineno + 1
                visit(child, name, path)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}.{child.name}" if prefix else child.name, path)
            else:
                visit(child, prefix, path)

    for root in roots:
        for path in _py(root):
            visit(_tree(path), "", path)
    return out


def longest_functions(n: int = 5) -> list[tuple[str, int]]:
    """The ``n`` longest functions of ``core/`` and ``dashboard/`` (:func:`function_lines`)."""
    lines = function_lines()
    return sorted(lines.items(), key=lambda t: (-t[1], t[0]))[:n]


def loose_core_module_list(root: Path = CORE) -> list[str]:
    """The modules directly in ``core/`` (its ``__init__`` aside)."""
    return sorted(p.name for p in root.glob("*.py") if p.name != "__init__.py")


def _folder(module: str, modules: dict[str, Path]) -> str:
    """The folder (package) a module sits in: a package is its own folder."""
    return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]


def folder_import_cycle_list(root: Path = ROOT) -> list[list[str]]:
    """The import cycles between folders: strongly connected components of two or more
    folders of the graph whose nodes are the project's packages (``core``, ``core.attacks``,
    ``dashboard.components``, ...; a loose module is in its parent's folder) and whose edges
    are :func:`import_edges` between modules of different folders."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    modules = _modules(root)
    folders = sorted({_folder(m, modules) for m in modules})
    index = {f: i for i, f in enumerate(folders)}
    pairs = sorted({(index[_folder(a, modules)], index[_folder(b, modules)])
                    for _, _, a, b in import_edges(root)} - {(i, i) for i in index.values()})
    if not pairs:
        return []
    rows, cols = np.array(pairs).T
    graph = coo_matrix((np.ones(len(pairs)), (rows, cols)), shape=(len(folders),) * 2)
    _, label = connected_components(graph, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for name, c in zip(folders, label):
        groups.setdefault(int(c), []).append(name)
    return sorted(g for g in groups.values() if len(g) >= 2)


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


def defense_edits_by_copy(name: str) -> tuple[int | None, dict[str, Any], int | None, list[str]]:
    """For ``core/catalog/<name>.py``: (files by experiment, its details, files by the history
    of the commits that added it, their paths) (:mod:`benchmarks.declaration_counts`)."""
    from benchmarks.declaration_counts import edits_to_add_by_copy, edits_when_added

    module = f"core/catalog/{name}.py"
    edits, details = edits_to_add_by_copy(module, f"copy_of_{name}")
    history, files = edits_when_added(module)
    return edits, details, history, files


def main(quick: bool = False) -> dict[str, Any]:
    from benchmarks.declaration_counts import (
        edits_when_added,
        knob_range_declarations,
    )

    branches = name_branches()
    protocol = runners_on_protocol()
    mixers = seed_mixer_sites()
    checkers = range_checker_functions()
    layers = layer_violation_list()
    upward = upward_import_list()
    cycles = import_cycle_list()
    edits, seen = edits_to_add_attack()
    literals = defense_name_literals_outside_parts()
    defense_edits, defense_files = edits_when_added("core/catalog/relaxloss.py")
    signal_edits, signal_files = edits_when_added("core/catalog/label_only.py")
    (smoothing_edits, smoothing_copy, smoothing_history, smoothing_files), (
        game_edits, game_copy, game_history, game_files) = (
        defense_edits_by_copy(m) for m in ("label_smoothing", "adversarial_regularization"))
    smoothing_lines = len((ROOT / "core/catalog/label_smoothing.py").read_text().splitlines())
    knob_places = knob_range_declarations()
    scaffolds = page_run_scaffold_list()
    runner, runner_lines = longest_runner_function()
    validations = validations_per_page_run()
    import dataclasses

    from core.foundation.parts import DefensePart

    unresolved = unresolved_dotted_strings()
    outside = attack_settings_outside_attack_modules()
    loops = training_loop_list()
    longest = longest_functions()
    loose = loose_core_module_list()
    folder_cycles = folder_import_cycle_list()
    headline = {
        "runners_using_protocol": sum(protocol.values()),
        "runners_scoring_attacks": len(protocol),
        "attack_name_branches": len(branches["attack"]),
        "defense_kind_branches": len(branches["defense"]),
        "edits_to_add_attack": edits,
        "seed_mixers": 1 + len(mixers),
        "range_checkers": 1 + len(checkers),
        "layer_violations": len(layers),
        "edits_to_add_defense": defense_edits,
        "edits_to_add_defense_label_smoothing": smoothing_edits,
        "label_smoothing_lines": smoothing_lines,
        "edits_to_add_game_defense": game_edits,
        "edits_to_add_attack_new_signal": signal_edits,
        "knob_range_declarations_max": max(len(v) for v in knob_places.values()),
        "validations_per_run": validations,
        "defense_name_literals_outside_parts": len(literals),
        "page_run_scaffolds": len(scaffolds),
        "upward_imports": len(upward),
        "import_cycles": len(cycles),
        "longest_runner_function_lines": runner_lines,
        "unresolved_dotted_strings": len(unresolved),
        "attack_settings_outside_attack_modules": len(outside),
        "defense_part_fields": len(dataclasses.fields(DefensePart)),
        "training_loops": len(loops["loops"]),
        "longest_function_lines": longest[0][1],
        "loose_core_modules": len(loose),
        "folder_import_cycles": len(folder_cycles),
    }
    rows = [{"figure": k, "value": v} for k, v in headline.items()]
    notes = ("counted by AST walks of the source (benchmarks/registry_bench.py, "
             "benchmarks/declaration_counts.py) and git history; seed_mixers and range_checkers "
             "count core/foundation/seeds.py and core/foundation/checks.py as the one each. "
             f"Private range checkers besides core/foundation/checks.py: {len(checkers)}. "
             "edits_to_add_defense / _attack_new_signal: files outside tests/ and benchmarks/ "
             "changed by the commit that added core/catalog/relaxloss.py / label_only.py (not later moves of the whole tree). "
             "edits_to_add_defense_label_smoothing / edits_to_add_game_defense: by experiment "
             "(benchmarks/declaration_counts.py:edits_to_add_by_copy): label_smoothing.py / "
             "adversarial_regularization.py copied under a new name into a copy of the working "
             "tree, nothing else written; the files that differ from this tree when privlab "
             "parts, the Membership page, Compare's choices and sweeps, the advisor and a tiny "
             "privlab run all see the copy (null when one misses it); the history figure of "
             f"the commits that added them is {smoothing_history} / {game_history} (details; "
             "those commits also built the engine's hook and game protocol). "
             "validations_per_run: validations of the run's config in the script run where Run "
             "is clicked on the Membership page (AppTest, tiny settings). "
             f"longest_runner_function_lines: {runner}. "
             f"unresolved_dotted_strings: of {len(dotted_string_sites())} object paths (every "
             "registry entry's and every object-path constant in the source), those that do "
             "not import. training_loops: innermost for/while loops in core/ that compute a "
             "gradient then step an optimiser or update weights (AST scan; loops optimising an "
             "attack's inputs left out): " + ", ".join(loops["loops"])
             + f"; left out: {', '.join(loops['excluded'])}. "
             f"longest_function_lines: {longest[0][0]} (core/ and dashboard/). "
             "folder_import_cycles: strongly connected components of the import graph between "
             "folders (a loose module in its parent's folder).")
    return {"name": "registry", "headline": headline, "rows": rows, "notes": notes,
            "targets": {"runners_using_protocol": "= runners_scoring_attacks",
                        "attack_name_branches": 0, "defense_kind_branches": 0,
                        "edits_to_add_attack": 1, "seed_mixers": 1, "range_checkers": 1,
                        "layer_violations": 0, "edits_to_add_defense": 1,
                        "edits_to_add_attack_new_signal": 1, "knob_range_declarations_max": 1,
                        "edits_to_add_defense_label_smoothing": 1,
                        "edits_to_add_game_defense": 1,
                        "validations_per_run": 1, "defense_name_literals_outside_parts": 0,
                        "page_run_scaffolds": 1, "upward_imports": 0, "import_cycles": 0,
                        "longest_runner_function_lines": "< 100",
                        "unresolved_dotted_strings": 0,
                        "attack_settings_outside_attack_modules": 0,
                        "defense_part_fields": "<= 12", "training_loops": "<= 2",
                        "longest_function_lines": "<= 80", "loose_core_modules": "<= 8",
                        "folder_import_cycles": 0},
            "details": {"runners": protocol, "branches": branches, "seed_mixer_sites": mixers,
                        "range_checker_functions": checkers, "layer_violations": layers,
                        "upward_imports": upward, "import_cycles": cycles,
                        "name_literals": literals, "temporary_attack": seen,
                        "defense_files": defense_files, "signal_attack_files": signal_files,
                        "label_smoothing_files": smoothing_files, "game_defense_files": game_files,
                        "edits_when_added": {"label_smoothing": smoothing_history,
                                             "adversarial_regularization": game_history},
                        "label_smoothing_copy": smoothing_copy, "game_defense_copy": game_copy,
                        "knob_range_places": knob_places, "page_run_scaffolds": scaffolds,
                        "longest_runner_function": runner,
                        "unresolved_dotted_strings": unresolved,
                        "attack_settings_outside_attack_modules": outside,
                        "training_loops": loops, "longest_functions": longest,
                        "loose_core_modules": loose, "folder_import_cycles": folder_cycles}}


# ---------------------------------------------------------------------------------------------
# a run has one path: validations per page Run, page-run scaffolds

#: the Membership page's tiny settings (widget key -> value) for :func:`validations_per_page_run`
TINY_MEMBERSHIP: dict[str, Any] = {
    "mi_dataset": "digits", "mi_attackers": ["loss"], "mi_members__text": "20",
    "mi_epochs__text": "1", "mi_shadows__text": "2", "mi_refs__text": "1",
    "mi_targets__text": "1",
}


class _Counting:
    """A stand-in for a pydantic ``SchemaValidator`` (or a ``TypeAdapter``) that records what
    every ``validate_*`` call returned, then hands the call on."""

    def __init__(self, inner: Any, seen: list[Any]) -> None:
        self._inner, self._seen = inner, seen

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not name.startswith("validate_"):
            return attr

        def counted(*args: Any, **kw: Any) -> Any:
            out = attr(*args, **kw)
            # a model's __init__ validates into ``self_instance`` (and returns it or None)
            self._seen.append(kw.get("self_instance") if out is None else out)
            return out

        return counted


def count_validations():
    """A context manager yielding the list of every config validated while it is open: it
    wraps the pydantic entry :func:`core.config.schema.parse_config` uses (``core.config.schema._ADAPTER``)
    and the validator of every experiment model (``Model(...)``, ``Model.model_validate``), in
    every thread of the process (AppTest runs the page, the job queue runs the engine, both
    here)."""
    import contextlib

    import core.config.schema as C

    @contextlib.contextmanager
    def _cm():
        seen: list[Any] = []
        adapter = C._ADAPTER
        models = {m: m.__dict__["__pydantic_validator__"] for m in C.CONFIG_MODELS.values()}
        C._ADAPTER = _Counting(adapter, seen)
        for m, v in models.items():
            m.__pydantic_validator__ = _Counting(v, seen)
        try:
            yield seen
        finally:
            C._ADAPTER = adapter
            for m, v in models.items():
                m.__pydantic_validator__ = v

    return _cm()


def validations_of(seen: list[Any], config: dict[str, Any]) -> int:
    """How many of the validated configs in ``seen`` are ``config`` (its JSON dump)."""
    from pydantic import BaseModel

    return sum(1 for s in seen if isinstance(s, BaseModel) and s.model_dump(mode="json") == config)


def _widget(at: Any, key: str) -> Any:
    """The AppTest widget under ``key``, whatever its type."""
    for kind in ("selectbox", "multiselect", "text_input", "select_slider", "slider", "radio",
                 "checkbox", "toggle", "number_input"):
        try:
            return getattr(at, kind)(key=key)
        except KeyError:
            continue
    raise KeyError(f"no widget with key {key!r} on the page")


def validations_per_page_run(page: str = "views/membership.py",
                             settings: dict[str, Any] | None = None, *,
                             timeout: float = 300.0) -> int:
    """Validations of the run's config in the script run where Run is clicked on ``page``
    (AppTest, a fresh store in a temporary folder, ``settings``: widget key -> value, default
    :data:`TINY_MEMBERSHIP`). Counted by :func:`count_validations`: every validation in the
    process while the click's script run lasts (the page, the queue, the store, the runner)
    whose result equals the stored run's config; grid points and other configs a page peeks
    are other configs and do not count. Target: 1."""
    import os
    import tempfile

    from streamlit.testing.v1 import AppTest

    from cache.store import default_store

    settings = TINY_MEMBERSHIP if settings is None else settings
    old = os.environ.get("PRIVLAB_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="privlab-validations-") as root:
        os.environ["PRIVLAB_CACHE_DIR"] = root
        try:
            at = AppTest.from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=timeout)
            at.run()
            at.switch_page(page).run()
            for key, value in settings.items():
                _widget(at, key).set_value(value).run()
            run_key = next(w.key for w in at.button if (w.key or "").endswith("_run"))
            with count_validations() as seen:
                at.button(key=run_key).click().run()
            problems = [str(e.value) for e in (*at.exception, *at.error)]
            records = default_store(root).list()
            if problems or len(records) != 1:
                raise RuntimeError(f"{page}: the Run did not store one run: {problems}")
            return validations_of(seen, records[0].config)
        finally:
            if old is None:
                os.environ.pop("PRIVLAB_CACHE_DIR", None)
            else:
                os.environ["PRIVLAB_CACHE_DIR"] = old


def _scope_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of one scope (a module or a function), not those of functions in it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _is_run_button(node: ast.AST) -> bool:
    """``<something>.button("Run", ...)``: a page's Run button."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "button" and bool(node.args)
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == "Run")


def page_run_scaffold_list(root: Path = ROOT / "dashboard") -> list[str]:
    """``file:scope`` of every function (or module body) under ``root`` that draws a page's
    Run button and submits the run to the job queue (calls ``run_with_progress``) itself."""
    out = []
    for path in _py(root):
        tree = _tree(path)
        scopes = [("<module>", tree)] + [(n.name, n) for n in ast.walk(tree)
                                         if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        for name, scope in scopes:
            nodes = list(_scope_nodes(scope))
            submits = any(isinstance(n, ast.Call) and _callee(n) == "run_with_progress"
                          for n in nodes)
            if submits and any(map(_is_run_button, nodes)):
                out.append(f"{_rel(path)}:{name}")
    return out


def page_run_scaffolds() -> int:
    """Distinct functions (or page scripts) in ``dashboard/`` that hold a page's Run path: the
    Run button and the job submission in one scope (:func:`page_run_scaffold_list`). Target 1."""
    return len(page_run_scaffold_list())

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


# ---------------------------------------------------------------------------------------------
# the experiment: a defense copied to a new file under a new name, nothing else touched

#: the tiny membership run each surface check trains (Compare's points and ``privlab run``)
TINY_RUN = {"kind": "membership", "data": {"name": "digits"}, "projection_points": 0,
            "train": {"members": 40, "epochs": 1, "batch_size": 32},
            "attack": {"attackers": ["loss"], "shadows": 2, "rmia_references": 1}}


def renamed_copy(module: str, new: str) -> str:
    """The source of the defense module ``module`` (a repository path under ``core/catalog/``)
    as a new defense ``new``: every string literal that spells the registered part's name,
    title, short title, budget metric or the module's own import path is replaced (``new``,
    its title ``"<title> (copy)"``, ``"<metric>_copy"``, the new module's path); nothing
    else changes (a keyword such as ``label_smoothing=`` of torch's cross-entropy stays)."""
    import io
    import json
    import tokenize

    from core.foundation.parts import DEFENSES

    old_mod = Path(module).with_suffix("").as_posix().replace("/", ".")
    part = next(p for p in DEFENSES.values()
                if _part_module(p, old_mod) and p.config is not None)
    swap = {part.name: new, part.title: f"{part.title} (copy)"}
    if part.short != part.title:
        swap[part.short] = f"{part.short} (copy)"
    if part.knob is not None and part.knob.budget_metric:
        swap[part.knob.budget_metric] = f"{part.knob.budget_metric}_copy"
    new_mod = f"core.catalog.{new}"
    src = (ROOT / module).read_text(encoding="utf-8")
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        text = tok.string
        if tok.type == tokenize.STRING and text[:1] in "\"'":
            value = ast.literal_eval(text)
            if value in swap:
                text = json.dumps(swap[value], ensure_ascii=False)
            elif isinstance(value, str) and value.startswith(old_mod + ":"):
                text = json.dumps(new_mod + value[len(old_mod):], ensure_ascii=False)
        out.append(tok._replace(string=text))
    return tokenize.untokenize(out)


def _part_module(part, module: str) -> bool:
    """Whether a defense part is declared in ``module`` (its config block's module)."""
    return getattr(part.config, "__module__", None) == module


def defense_surfaces(name: str) -> dict[str, bool]:
    """Where the registered defense ``name`` shows up, run in the checkout it is imported
    from: ``privlab parts``, the Membership page (offered, its knob drawn), Compare's defense
    choices and sweeps, the advisor (its curve among those it weighs) and a tiny ``privlab
    run`` that trains under it and reports its budget metric."""
    import contextlib
    import io
    import json
    import os
    import sys
    import tempfile

    from streamlit.testing.v1 import AppTest

    from cache.store import default_store
    from cli.main import main
    from core.foundation.parts import DEFENSES
    from core.report import advisor as A
    from core.runs import compare as C

    part = DEFENSES.get(name)
    out: dict[str, bool] = {}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["parts", "--family", "membership", "--json"])
    out["parts"] = rc == 0 and any(d["name"] == name for d in json.loads(buf.getvalue())["defenses"])
    app = str(Path.cwd() / "dashboard" / "app.py")
    at = AppTest.from_file(app, default_timeout=120).run()
    at.switch_page("views/membership.py").run()
    offered = part.title in at.selectbox(key="mi_defense").options
    if offered:
        at.selectbox(key="mi_defense").set_value(name).run()
    knob = part.knob is None or any(s.key == f"mi_{name}" for s in at.slider)
    out["membership_page"] = offered and knob and not at.exception
    at = AppTest.from_file(app, default_timeout=120)
    # the custom preset: the teaching one starts its comparison on its own
    at.session_state["cmp_preset"], at.session_state["cmp_family"] = "custom", "membership"
    at.run()
    at.switch_page("views/compare.py").run()
    out["compare_page"] = (not at.exception
                           and part.title in at.multiselect(key="cmp_defenses").options)
    grid = (part.knob.grid or part.knob.teaching)[:1] if part.knob is not None else None
    spec = C.ComparisonSpec(family="membership", data="digits", utility="utility_acc",
                            privacy="mia_auc_best", defenses=(C.DefenseSpec.of(name, grid),),
                            seeds=(0,), base={k: v for k, v in TINY_RUN.items()
                                              if k not in ("kind", "data")})
    sweeps, refused = C.comparison_sweeps(spec)
    out["compare"] = refused == [] and [d.defense for d, _ in sweeps] == ["none", name]
    cmp = C.run_comparison(spec, default_store())
    mine = [c.name for c in cmp.curves if c.defense == name]
    advice = A.advise(cmp, threat=A.Threat("membership", "mia_auc_best", 1.0),
                      floor=A.Floor(0.0))
    weighed = {p.curve for p in (advice.chosen, advice.runner_up, advice.closest) if p}
    out["advisor"] = bool(mine) and mine[0] in weighed
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "tiny.json"
        cfg.write_text(json.dumps({**TINY_RUN, "defense": {"kind": name}}), encoding="utf-8")
        res = subprocess.run([sys.executable, "-m", "cli.main", "run", str(cfg), "--json",
                              "--no-cache"], capture_output=True, text=True, check=False,
                             env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    metrics = json.loads(res.stdout)["metrics"] if res.returncode == 0 else {}
    budget = part.knob.budget_metric if part.knob is not None else None
    out["run"] = bool(metrics) and 0.0 <= metrics.get("utility_acc", -1.0) <= 1.0 and (
        budget is None or budget in metrics)
    return out


def _tree_files(root: Path) -> dict[str, bytes]:
    """Path -> bytes of every file git would commit in ``root`` (tracked and untracked, not
    ignored), as the working tree holds them."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=root, capture_output=True, check=True).stdout.split(b"\0")
    out = {}
    for n in filter(None, names):
        p = root / n.decode()
        if p.is_file():
            out[n.decode()] = p.read_bytes()
    return out


def edits_to_add_by_copy(module: str, new: str, timeout: float = 900.0
                         ) -> tuple[int | None, dict]:
    """The experiment behind ``edits_to_add_defense``: copy the repository's working tree to
    a temporary folder, write the defense ``module`` there as ``core/catalog/<new>.py``
    (:func:`renamed_copy`) and nothing else, and check in a fresh process from that folder
    that every surface sees ``new`` (:func:`defense_surfaces`). Returns (the files that differ
    between the copy and this tree when all surfaces see it: 1 = the new module alone;
    None otherwise, with the surfaces that missed it)."""
    import json
    import os
    import shutil
    import sys
    import tempfile

    files = _tree_files(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "repo"
        for rel, data in files.items():
            dst = copy / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
        shared = ROOT.parent / "shared"
        if shared.is_dir() and not (Path(tmp) / "shared").exists():
            os.symlink(shared, Path(tmp) / "shared")
        new_file = f"core/catalog/{new}.py"
        (copy / new_file).write_text(renamed_copy(module, new), encoding="utf-8")
        subprocess.run(["git", "init", "-q"], cwd=copy, check=True)  # ls-files in the copy
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(PYTHONPATH=str(copy), PRIVLAB_CACHE_DIR=str(Path(tmp) / "cache"))
        code = ("import json, sys\nfrom benchmarks.declaration_counts import defense_surfaces\n"
                "print('SURFACES ' + json.dumps(defense_surfaces(sys.argv[1])))")
        res = subprocess.run([sys.executable, "-c", code, new], cwd=copy, env=env,
                             capture_output=True, text=True, timeout=timeout, check=False)
        line = [x for x in res.stdout.splitlines() if x.startswith("SURFACES ")]
        seen = json.loads(line[-1][9:]) if line else {"error": res.stderr[-2000:]}
        after = _tree_files(copy)
        shutil.rmtree(copy / ".git", ignore_errors=True)
    changed = sorted(k for k in set(files) | set(after) if files.get(k) != after.get(k))
    ok = bool(seen) and all(v is True for v in seen.values())
    return (len(changed) if ok else None), {"surfaces": seen, "files": changed,
                                            "module": module, "copy": new_file}

"""The import-graph counters of ``benchmarks/registry_bench.py``: ``upward_imports`` (imports
from a lower layer to a higher one, or sideways between attacks, defenses and bounds) and
``import_cycles`` (strongly connected components of two or more modules), on the repository and
on planted trees.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks import registry_bench as R

#: cycles that changes outside this test's reach are removing (the config's sweep expansion,
#: the store's sweep worker); once they are gone this is empty and any cycle fails the test
BEING_BROKEN = [["cache.store", "cache.sweep_worker"]]


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        for parent in p.relative_to(root).parents:  # every folder a package
            if parent != Path("."):
                (root / parent / "__init__.py").touch()
    return root


def _pairs(found: list[str]) -> set[tuple[str, str]]:
    """(file, imported module) of each ``file:line: importer -> imported (why)`` line."""
    return {(f.split(":", 1)[0], f.split(" -> ", 1)[1].split(" ", 1)[0]) for f in found}


def test_the_repository_imports_downward_only_and_has_no_new_cycle():
    assert R.upward_import_list() == []
    assert R.upward_imports() == 0
    cycles = R.import_cycle_list()
    assert [c for c in cycles if c not in BEING_BROKEN] == [], cycles
    assert R.import_cycles() == len(cycles)
    # nor a circle between the dashboard's folders: its views, top-level modules, components
    # and base import downward only
    assert [c for c in R.folder_import_cycle_list()
            if any(f.startswith("dashboard") for f in c)] == []
    # the moved training modules sit below both their users
    assert R.layer_rank("core.engine.shadow_training") == R.layer_rank("core.engine.noisy_training") == 0
    assert [R.layer_rank(m) for m in ("core.foundation.metrics", "core.attacks.membership", "core.runs.sweep",
                                      "cache.store", "dashboard.views.membership", "numpy")] \
        == [0, 1, 2, 3, 4, None]


def test_upward_imports_flags_every_kind_of_upward_and_sideways_reach(tmp_path):
    root = _tree(tmp_path, {
        # upward: module level, inside a function, relative, under TYPE_CHECKING
        "core/foundation/metrics.py": "def f():\n    from core.runs.r import run\n",
        "core/runs/r.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                          "    import cache.s\nfrom core.attacks import a\ndef run(): ...\n",
        "cache/s.py": "from ..dashboard import p\n",
        # sideways, both ways, and the bounds reaching into a defense
        "core/attacks/a.py": "import core.defenses.d\nfrom core.foundation.metrics import f\n",
        "core/defenses/d.py": "def g():\n    from core.attacks import a\n",
        "core/bounds/b.py": "from core.defenses.d import g\nimport numpy\n",
        # downward: not counted
        "dashboard/p.py": "import cache.s\nfrom core.runs import r\nfrom core.bounds import b\n",
    })
    found = R.upward_import_list(root)
    assert _pairs(found) == {
        ("core/foundation/metrics.py", "core.runs.r"), ("core/runs/r.py", "cache.s"),
        ("cache/s.py", "dashboard.p"), ("core/attacks/a.py", "core.defenses.d"),
        ("core/defenses/d.py", "core.attacks.a"), ("core/bounds/b.py", "core.defenses.d"),
    }, found
    assert R.upward_imports(root) == 6
    # the same tree with each upward line removed is clean
    clean = _tree(tmp_path / "clean", {
        "core/foundation/metrics.py": "def f(): ...\n", "core/runs/r.py": "from core.attacks import a\n",
        "cache/s.py": "from core.runs import r\n",
        "core/attacks/a.py": "from core.foundation.metrics import f\n",
        "core/defenses/d.py": "from core.bounds import b\n", "core/bounds/b.py": "import numpy\n",
        "dashboard/p.py": "import cache.s\nfrom core.runs import r\nfrom core.bounds import b\n",
    })
    assert R.upward_import_list(clean) == [] and R.import_cycles(clean) == 0


def test_import_cycles_counts_components_with_lazy_and_relative_imports(tmp_path):
    root = _tree(tmp_path, {
        # a pair tied by a function-level import
        "core/data/registry.py": "def names():\n    from core.data import user\n",
        "core/data/user.py": "from core.data.registry import names\n",
        # a triangle through a relative import and a package __init__
        "core/x.py": "from core import y\n",
        "core/y.py": "import core.fl\n",
        "core/fl/__init__.py": "from ..x import X\n",
        # a chain without a cycle
        "core/a.py": "from core.b import B\n",
        "core/b.py": "import numpy\n",
    })
    assert R.import_cycle_list(root) == [["core.data.registry", "core.data.user"],
                                         ["core.fl", "core.x", "core.y"]]
    assert R.import_cycles(root) == 2
    assert R.upward_imports(root) == 1  # core.y (layer 0) imports core.fl (layer 1)

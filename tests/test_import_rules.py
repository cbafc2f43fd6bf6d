"""The layer rule (``core.layers``: pages → runs → attacks / defenses / bounds → numerics) and
the finer import rules, checked on the source (ast): every ``import`` statement counts
(top-level, function-local and ``if TYPE_CHECKING:`` alike), and so does every registry string
``"package.module:attr"``; a page may not import a private (``_name``) function of the engine.

A failure lists every violation as ``file:line: target (rule)``.
"""

from __future__ import annotations

from pathlib import Path

from core import layers as L
from core.layers import LAYERS, edges, violation_records, violations

ROOT = Path(__file__).resolve().parents[1]

#: the layer rule as benchmarks/registry_bench.py reads it from this module (a height:
#: 0 numerics ... 3 pages; a module may import its own height and below)
layer_of = L.level

def test_no_layer_violations():
    found = [str(v) for v in violation_records(ROOT)]
    assert not found, "layer-rule violations:\n" + "\n".join(found)
    assert violations(ROOT) == []


def test_every_core_module_has_a_layer():
    for path in (ROOT / "core").rglob("*.py"):
        mod = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        assert L.layer_of(mod) is not None, mod
    assert [n for n, _ in LAYERS] == ["pages", "runs", "parts", "numerics"]
    assert L.layer_of("core.runs.membership") == "runs" and L.layer_of("cli.main") == "pages"
    assert L.layer_of("core.bounds.fil_regression") == "parts"
    assert L.layer_of("core.config.schema") == "numerics"
    assert L.layer_of("numpy") is None
    # the layer is the folder's: a module directly in core/ is numerics, a new folder needs a row
    assert L.layer_of("core.report.teaching") == "runs" and L.layer_of("core.layers") == "numerics"
    assert L.undeclared_folders(ROOT) == []
    assert [layer_of(m) for m in ("core.foundation.metrics", "core.bounds.fil", "cache.store",
                                  "dashboard.views.membership")] == [0, 1, 2, 3]


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        for parent in p.relative_to(tmp_path).parents:  # packages
            if parent != Path("."):
                (tmp_path / parent / "__init__.py").touch()
    return tmp_path


def test_the_checker_flags_each_kind_of_upward_reach(tmp_path):
    root = _tree(tmp_path, {
        "core/runs/membership.py": "def run_membership(): ...\ndef _helper(): ...\n",
        "core/foundation/metrics.py": "def f():\n    from core.runs.membership import run_membership\n",
        "core/bounds/x.py": "from ..runs import membership\n",
        "core/foundation/parts.py": ('B = "core.runs.membership:_helper"\n'
                          'OK = "core.bounds.x:f"\n'
                          'def g(n):\n    return f"core.runs.membership:{n}"\n'),
        "core/data/d.py": "import core.config.schema\n",
        "core/config/__init__.py": "",
        "core/engine/training.py": "import streamlit\n",
        "dashboard/views/page.py": ("from core.runs.membership import _helper, run_membership\n"
                                    "from dashboard.components import _figures\n"),
        "dashboard/components/_figures.py": "",
    })
    got = {(v.file, v.target, v.rule) for v in violation_records(root)}
    expected = {
        ("core/foundation/metrics.py", "core.runs.membership", "numerics must not reach runs"),
        ("core/bounds/x.py", "core.runs", "parts must not reach runs"),
        ("core/bounds/x.py", "core.runs.membership", "parts must not reach runs"),
        ("core/foundation/parts.py", "core.runs.membership:_helper",
         "numerics must not reach runs, by a registry string"),
        ("core/foundation/parts.py", "core.runs.membership:{...}",
         "numerics must not reach runs, by a registry string"),
        ("core/data/d.py", "core.config.schema", "core.data must not import core.config"),
        ("core/engine/training.py", "streamlit", "core must not import streamlit"),
        ("dashboard/views/page.py", "core.runs.membership:_helper",
         "a page must not import a private name"),
    }
    assert got == expected, sorted(got ^ expected)


def test_a_folder_without_a_layer_is_a_violation(tmp_path):
    root = _tree(tmp_path, {"core/newstuff/x.py": "import numpy\n",
                            "core/foundation/metrics.py": "import numpy\n"})
    rule = "a folder of core/ without a layer in core.layers.FOLDERS"
    assert violations(root) == [f"core/newstuff:0: core/newstuff ({rule})"]


def test_the_cli_has_no_exemption(tmp_path):
    figures = "import dashboard.components.bundle_figures\n"
    root = _tree(tmp_path, {"core/foundation/cli.py": figures,
                            "cli/main.py": figures + "import cache.store\n",
                            "dashboard/components/bundle_figures.py": "", "cache/store.py": ""})
    assert {(v.file, v.rule) for v in violation_records(root)} == {
        ("core/foundation/cli.py", "numerics must not reach pages"),
        ("core/foundation/cli.py", "core must not import dashboard")}


def test_a_clean_tree_has_no_violation(tmp_path):
    root = _tree(tmp_path, {
        "core/foundation/metrics.py": "import numpy as np\n",
        "core/bounds/x.py": "from core.foundation.metrics import np\n",
        "core/runs/r.py": "from core.bounds import x\nR = 'core.bounds.x:f'\n",
        "core/foundation/parts.py": 'F = "core.attacks.a:attack"\n',
        "core/attacks/a.py": "def attack(): ...\n",
        "dashboard/views/p.py": "from core.runs.r import R\nimport streamlit\n",
    })
    assert violations(root) == []


def test_the_checker_sees_local_relative_and_type_checking_imports():
    src = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from core.config.schema import DataSpec\n"
        "def f():\n    from streamlit import x\n    import cache.store\n"
        "from ..runs import sweep\nfrom . import splits\n"
        "R = 'core.runs.sweep:run_sweep'\n"
    )
    mods = {m for _, _, m, _ in edges(src, "core.data")}
    assert {"core.config.schema", "streamlit", "cache.store", "core.runs", "core.data",
            "core.runs.sweep"} <= mods

"""Start-up: what a fresh process imports (lazy imports hold) and the dashboard's warm start
(dashboard.warmup) breaks nothing. Each check runs in a fresh subprocess: this process has
imported everything already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: heavy modules no run or engine import needs (the dashboard's, projections', scikit-learn's
#: and scipy.stats' imports alone cost a tiny run more than its training)
NOT_FOR_RUNS = ("plotly", "streamlit", "umap", "sklearn", "scipy.stats", "pandas", "pyarrow",
                "matplotlib")


def _python(code: str, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter at the repository root; it prints one JSON line."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=False, cwd=ROOT, env={
        **os.environ, "PYTHONPATH": str(ROOT), **env}, capture_output=True, text=True,
        timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _loaded_after(code: str, **env: str) -> list[str]:
    return _python(f"""
        import json, sys
        {code}
        print(json.dumps([m for m in {NOT_FOR_RUNS!r} if m in sys.modules]))
    """, **env)


def test_engine_imports_leave_the_dashboard_and_sklearn_out():
    assert _loaded_after("import core.runs.experiments, cli.main, privlab, cache.store") == []


def test_a_tiny_membership_run_imports_no_dashboard_sklearn_or_scipy_stats(tmp_path):
    cfg = {"kind": "membership", "data": {"name": "digits"}, "projection_points": 0,
           "train": {"members": 40, "epochs": 1, "batch_size": 32},
           "attack": {"shadows": 2, "rmia_references": 1}}
    assert _loaded_after(f"""
        from cache.store import ResultStore
        r = ResultStore({str(tmp_path)!r}).get_or_run({cfg!r})
        assert 0.0 <= r.metrics["mia_auc_best"] <= 1.0
    """) == []


def test_page_modules_are_the_views_top_level_imports():
    from dashboard import warmup

    mods = warmup.page_modules()
    assert mods[0] == "streamlit" and len(mods) == len(set(mods))
    # app.py's own first, then the default page's; every view's imports are in
    assert mods.index("dashboard.sidebar") < mods.index("dashboard.components.lesson")
    for view in (ROOT / "dashboard" / "views").glob("*.py"):
        assert set(warmup.script_imports(view)) - {"__future__"} <= set(mods), view.name
    assert "core.runs.experiments" in warmup.run_modules()


def test_a_page_needs_its_own_imports_and_lazy_modules_only():
    from dashboard import warmup

    app = warmup.app_modules()
    # app.py's imports inside its ``with warmup.drawing():`` block count
    assert app[0] == "streamlit" and {"dashboard.sidebar", "cache.errors"} <= set(app)
    membership, home = warmup.view_modules("membership.py"), warmup.view_modules("home.py")
    assert "dashboard.components.run_panel" in membership and "plotly.graph_objects" in membership
    # the architecture's cost line is drawn after the page: its first draw waits on no torch
    assert not any(m.split(".")[0] == "torch" for m in membership + home)
    assert "plotly.graph_objects" in home
    assert "dashboard.components.run_panel" not in home


def test_a_drawing_page_gets_what_it_asks_for_first_and_nothing_else():
    got = _python("""
        import json, sys
        from dashboard import warmup
        warmup.RUNS_AFTER_S = 300.0
        with warmup.drawing():
            warmup.start()
            ok = warmup.need(["core.foundation.checks"], timeout=300)
            asked = "core.foundation.checks" in sys.modules
            # the background waits while the page draws: none of the pages' other modules
            others = [m for m in ("torch", "plotly.subplots", "pandas", "dashboard.sidebar")
                      if m in sys.modules]
        assert warmup.wait_pages(300)
        pages = [m for m in warmup.page_modules() if m not in sys.modules]
        print(json.dumps({"ok": ok, "asked": asked, "others": others, "pages": pages}))
    """, PRIVLAB_PREWARM="1")
    assert got == {"ok": True, "asked": True, "others": [], "pages": []}


def test_warm_start_imports_the_pages_then_after_a_page_the_runs():
    got = _python("""
        import json, sys, time
        from dashboard import warmup
        warmup.RUNS_AFTER_S = 300.0
        assert "torch" not in sys.modules
        t = warmup.start()
        assert warmup.start() is t  # once per process
        assert warmup.wait_pages(300)
        pages = [m for m in warmup.page_modules() if m not in sys.modules]
        time.sleep(1.0)
        early = [m for m in ("opacus", "core.runs.attribute_privacy") if m in sys.modules]
        warmup.page_drawn()
        assert warmup.wait_runs(300)
        runs = [m for m in warmup.run_modules() if m not in sys.modules]
        print(json.dumps({"pages": pages, "early": early, "runs": runs,
                          "status": warmup.status()}))
    """, PRIVLAB_PREWARM="1")
    assert got["pages"] == [] and got["runs"] == []
    assert got["early"] == []  # the runs phase waited for a page
    assert got["status"]["done"] and "failed" not in got["status"], got["status"]


def test_warm_start_off_waits_for_nothing():
    got = _python("""
        import json, sys
        from dashboard import warmup
        print(json.dumps({"thread": warmup.start() is None, "wait": warmup.wait_pages(0.0),
                          "need": warmup.need(["torch"], timeout=0.0),
                          "torch": "torch" in sys.modules}))
    """, PRIVLAB_PREWARM="0")
    assert got == {"thread": True, "wait": True, "need": True, "torch": False}


def test_a_failing_module_is_skipped_and_kept():
    got = _python("""
        import json
        from dashboard import warmup
        warmup._import_all(["json", "privlab_no_such_module"], "pages")
        print(json.dumps(warmup.status()))
    """)
    assert list(got["failed"]) == ["privlab_no_such_module"]
    assert got["failed"]["privlab_no_such_module"].startswith("ModuleNotFoundError")


@pytest.mark.filterwarnings("ignore")
def test_pages_draw_with_the_warm_start_running(tmp_path):
    """app.py with the warm start on (the local pool's start left out): the Membership and
    Compare pages draw without an exception while the runs phase may still be importing."""
    got = _python(f"""
        import json
        import core.runs.pool as pool
        pool.prewarm_in_background = lambda *a, **k: None  # no worker processes here
        from streamlit.testing.v1 import AppTest
        from dashboard import warmup
        errors = []
        for page in ("views/membership.py", "views/home.py"):
            at = AppTest.from_file({str(ROOT / "dashboard" / "app.py")!r}, default_timeout=300)
            at.switch_page(page).run()
            errors += [str(e.value) for e in at.exception]
        warmup.start()
        assert warmup.wait_runs(300)
        print(json.dumps({{"errors": errors, "status": warmup.status()}}))
    """, PRIVLAB_PREWARM="1", PRIVLAB_CACHE_DIR=str(tmp_path))
    assert got["errors"] == []
    assert got["status"]["done"] and "failed" not in got["status"], got["status"]


def test_the_membership_pages_imports_leave_torch_out():
    """``app.py``'s and the Membership page's imports (the config schema, the catalog's
    declarations, the cache store, the components) read declarations only: none imports torch,
    so a first page never waits on it."""
    got = _python("""
        import importlib, json, sys
        from dashboard import warmup
        for m in (*warmup.app_modules(), *warmup.view_modules("membership.py")):
            importlib.import_module(m)
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "torch")[:5]))
    """, PRIVLAB_PREWARM="0")
    assert got == []


def test_the_membership_page_draws_before_its_cost_line(tmp_path):
    """The Membership page's first draw imports no torch: its architecture's cost line (FLOP
    counting, the step timed here) is left to the background, a caption saying so in its
    place; once that is done the next run draws the cost line itself."""
    got = _python(f"""
        import json, sys, threading
        from streamlit.testing.v1 import AppTest
        from dashboard.components import cost_later
        gate, started = threading.Event(), []
        real = cost_later._warm

        def held(key):
            started.append(key[0])
            gate.wait(300)
            real(key)

        cost_later._warm = held
        at = AppTest.from_file({str(ROOT / "dashboard" / "app.py")!r}, default_timeout=300)
        at.switch_page("views/membership.py").run()
        torch_at_draw = "torch" in sys.modules
        heading = [h.value for h in at.title] + [h.value for h in at.header]
        waiting = [c.value for c in at.caption if c.value.startswith("Counting the parameters")]
        gate.set()
        assert cost_later.settle()
        at.run()
        costs = [c.value for c in at.caption if "parameters**" in c.value and "FLOPs" in c.value]
        print(json.dumps(dict(torch=torch_at_draw, started=started, waiting=waiting,
                              exc=[str(e.value) for e in at.exception], heading=heading,
                              costs=costs)))
    """, PRIVLAB_PREWARM="0", PRIVLAB_CACHE_DIR=str(tmp_path / "cache"))
    assert not got["exc"], got["exc"]
    assert got["torch"] is False and got["started"] and got["waiting"] and got["heading"], got
    assert "timing a few of its training steps" in got["waiting"][0]
    assert len(got["costs"]) == 1 and "measured on this machine: " in got["costs"][0], got

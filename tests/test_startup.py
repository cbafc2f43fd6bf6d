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
    assert "dashboard.components.run_panel" in membership and "torch._dynamo" in membership
    assert "torch._dynamo" not in home and "plotly.graph_objects" in home
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
        t.join(300)
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
        warmup.start().join(300)
        print(json.dumps({{"errors": errors, "status": warmup.status()}}))
    """, PRIVLAB_PREWARM="1", PRIVLAB_CACHE_DIR=str(tmp_path))
    assert got["errors"] == []
    assert got["status"]["done"] and "failed" not in got["status"], got["status"]

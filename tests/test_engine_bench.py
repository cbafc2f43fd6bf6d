"""benchmarks/engine_bench.py: the figures other modules contribute are merged into the
headline when their module is there and null with the reason when it is not."""

from __future__ import annotations

import sys
import types

from benchmarks import BENCHMARKS
from benchmarks import engine_bench as E


def test_contributed_figures_merge_or_are_null_with_the_reason(monkeypatch):
    assert BENCHMARKS["engine"] == "benchmarks.engine_bench:main"
    fake = types.ModuleType("benchmarks.engine_dpsgd")
    fake.measure = lambda: {"dpsgd_vs_bare_opacus": {"mlp": 0.97}, "images_per_s": {"mlp": 1.0}}
    monkeypatch.setitem(sys.modules, "benchmarks.engine_dpsgd", fake)
    monkeypatch.setitem(sys.modules, "benchmarks.engine_startup", None)  # import fails
    head, extra, reasons = E.contributed()
    assert head["dpsgd_vs_bare_opacus"] == {"mlp": 0.97}
    assert extra == {"engine_dpsgd": {"images_per_s": {"mlp": 1.0}}}
    for f in ("tiny_run_over_torch_floor", "first_page_open_s", "compare_cold_from_navigation_s"):
        assert head[f] is None and reasons[f] == "not measured: module missing"
    assert "dpsgd_vs_bare_opacus" not in reasons

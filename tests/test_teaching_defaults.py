"""The config a page runs on its first visit (fresh session, default sidebar) is the one its
teaching sweep, the lessons benchmark and the README measure (``core.report.teaching.default_config``):
a lesson or a timing measured on another config would describe a run the user never sees."""

from __future__ import annotations

import pytest

from core.report.teaching import default_differences

#: experiment kind -> the teaching page that shows it
PAGES = {"membership": "membership", "gradient_leakage": "reconstruction",
         "repr_reconstruction": "repr_reconstruction", "attribute_privacy": "attribute_privacy",
         "property": "property", "fisher_information": "fisher_information"}


@pytest.mark.parametrize("kind", sorted(PAGES))
def test_the_page_default_is_the_teaching_default(kind):
    from streamlit.testing.v1 import AppTest

    from dashboard.components.caveat_check import APP, _Patched
    from dashboard.components.caveat_check import PAGES as VIEWS

    with _Patched(kind) as p:
        at = AppTest.from_file(APP, default_timeout=120).run()
        at.switch_page(VIEWS[kind]).run()
        run = [b for b in at.button if b.label == "Run"]
        if p.config is None and run:
            run[0].click()
            at.run()
    assert not at.exception, at.exception
    assert p.config is not None, f"the {kind} page built no config"
    diff = default_differences(PAGES[kind], p.config)
    assert not diff, f"page vs teaching default: {diff}"


def test_the_membership_default_measured_is_todays_and_shows_a_threat():
    """benchmarks/results/membership_default.json measured the page's current default (so its
    figures in trust.json still describe the page), and that default has a visible threat: the
    strongest undefended attack at AUC >= 0.65 with its whole interval above chance."""
    import json

    from benchmarks import membership_default as M
    from core.report.teaching import default_config

    doc = json.loads(M.OUT.read_text())
    assert doc["config"] == default_config("membership"), "rerun python -m benchmarks.membership_default"
    first = doc["runs"][0]
    assert first["best_auc"] >= 0.65 and first["best_auc_interval"][0] > 0.5
    assert doc["headline"]["membership_default_cold_s"] == min(r["cold_s"] for r in doc["runs"])

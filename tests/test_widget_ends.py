"""Every page's widgets at their ends (dashboard/widget_sweep.py, the test-sized share of
``python -m benchmarks widget_sweep``), and buttons that read the store after their job ends."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from dashboard import widget_sweep as W
from tests.test_pages import open_page, store  # noqa: F401  (fixture)

#: the pages whose widgets the test drives (Compare runs its preset on opening: its widgets are
#: in tests/test_compare_page.py and the benchmark's full sweep)
SWEPT = [p for p in W.PAGES if p != "views/compare.py"]


@pytest.fixture(scope="module")
def label_options():
    with W._labels_pass_through():
        yield


@pytest.mark.parametrize("page", SWEPT)
def test_every_widget_end_draws_the_page(store, label_options, page):  # noqa: F811
    """Each widget at its declared ends (first and last option of a choice; the knob a
    choice reveals too): no exception, no non-finite number on screen, no section dropped by
    a number inside its range, no registered identifier where a title exists. Nothing runs
    (the benchmark's full sweep clicks Run with tiny settings)."""
    t0 = time.perf_counter()
    with W.TinyRuns(run=False) as tiny:
        cases = W.sweep_page(page, ends=True, depth=1, timeout=120)
    assert cases, f"no widget driven on {page}"
    bad = [(c.widget, c.value, c.exception) for c in cases if c.exception]
    assert not bad, bad
    assert not tiny.errors, tiny.errors
    assert not [(c.widget, c.value, c.nonfinite) for c in cases if c.nonfinite]
    assert not [(c.widget, c.value, c.missing) for c in cases if c.missing_counted]
    assert not [(c.widget, c.value, c.raw_ids) for c in cases if c.raw_ids]
    assert time.perf_counter() - t0 < 60


def test_nonfinite_rule_reads_numbers_not_symbols():
    assert W.nonfinite_tokens("AUC nan · TPR inf")
    assert W.nonfinite_tokens("bound = ∞ here")
    assert not W.nonfinite_tokens("DP ε = ∞ (no DP) · κ ∈ (0, ∞) · ℓ∞ error · NaN/inf entries "
                                  "· Inf2Guard · inference")


def test_teaching_sweep_button_reads_the_store_when_its_job_ends(store, monkeypatch):  # noqa: F811
    """After the sweep finishes, the button no longer says points are missing (it was drawn
    before the job ended and kept '(k of n points missing)' until the next page visit)."""
    import dashboard.components.lesson as lesson_mod
    from core.report import teaching

    def tiny(page, config=None):  # one seed, the grid's two ends, no reference runs
        spec = teaching.teaching_sweep(page, config)
        grid = spec.values()
        return replace(spec, seeds=spec.seeds[:1], grid=(grid[0], grid[-1]), reference=None)

    monkeypatch.setattr(lesson_mod, "teaching_sweep", tiny)
    at = open_page("views/fisher_information.py")
    button = at.button(key="fi_teaching_sweep")
    assert "points missing" in button.label and not button.disabled, button.label
    t0 = time.perf_counter()
    button.click().run(timeout=240)
    # the job runs on the queue's thread; the page polls it. The run in which the lesson turns
    # measured is the one where the button must already read the store.
    while not _measured(at) and time.perf_counter() - t0 < 240:
        time.sleep(0.5)
        at.run(timeout=240)
    assert not at.exception, at.exception
    assert _measured(at), [m.value for m in at.markdown]
    after = at.button(key="fi_teaching_sweep")
    assert "points missing" not in after.label and after.disabled, after.label


def _measured(at) -> bool:
    from dashboard.browser_check import MEASURED

    return any(MEASURED.search(m.value) for m in at.markdown)

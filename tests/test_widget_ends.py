"""Every page's widgets at their ends (dashboard/widget_sweep.py, the test-sized share of
``python -m benchmarks widget_sweep``), and buttons that read the store after their job ends."""

from __future__ import annotations

import time
from dataclasses import replace

from tests.test_pages import open_page, store  # noqa: F401  (fixture)


def test_teaching_sweep_button_reads_the_store_when_its_job_ends(store, monkeypatch):  # noqa: F811
    """After the sweep finishes, the button no longer says points are missing (it was drawn
    before the job ended and kept '(k of n points missing)' until the next page visit)."""
    import dashboard.components.lesson as lesson_mod
    from core import teaching

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

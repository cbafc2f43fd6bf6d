"""Every button that starts a job follows Run (issue #20, items 5 and 7): with Adult missing,
the sweep and teaching-sweep buttons are off like Run, with the same message; and each page
has one teaching-sweep button (the lesson box's), not a second one in an empty plot."""

from __future__ import annotations

import pytest

from tests.test_pages import no_real_data, open_page, store  # noqa: F401  (fixture)

#: pages that can pick Adult: (page, its data-set box, its Run button)
ADULT_PAGES = [
    ("views/attribute_privacy.py", "ap_dataset", "ap_run"),
    ("views/property.py", "pr_dataset", "pr_run"),
    ("views/membership.py", "mi_dataset", "mi_run"),
    ("views/fisher_information.py", "fi_dataset", "fi_run"),
]


def _starts_a_job(b) -> bool:
    """Run, a sweep, the teaching sweep, an audit or an undefended point: what queues a job."""
    key, label = str(b.key or ""), str(b.label or "")
    return (key.endswith(("_run", "_sweep", "_audit", "_run_undefended"))
            or label.startswith(("Run", "Audit")))


@pytest.mark.parametrize("page, data_key, run_key", ADULT_PAGES)
def test_every_job_button_is_off_when_adult_is_missing(store, tmp_path, monkeypatch,  # noqa: F811
                                                       page, data_key, run_key):
    from dashboard.base.jobs import get_queue

    no_real_data(monkeypatch, tmp_path / "empty")
    at = open_page(page)
    before = get_queue().counts()
    at.selectbox(key=data_key).set_value("adult").run()
    assert not at.exception, at.exception
    jobs = [b for b in at.button if _starts_a_job(b)]
    keys = {b.key for b in jobs}
    prefix = run_key.removesuffix("_run")
    assert {run_key, f"{prefix}_teaching_sweep"} <= keys, keys
    on = [b.key for b in jobs if not b.disabled]
    assert not on, f"job buttons left on with Adult missing: {on}"
    # the sweep buttons say why, with the message the page shows (how to get Adult)
    for b in jobs:
        if b.key != run_key:
            assert "PRIVLAB_DATA_DIR" in (b.help or ""), (b.key, b.help)
    assert get_queue().counts() == before
    # back on an embedded set the teaching sweep is on again (points missing)
    at.selectbox(key=data_key).set_value("digits").run()
    assert not at.button(key=f"{prefix}_teaching_sweep").disabled


@pytest.mark.parametrize("page", [
    "views/reconstruction.py", "views/repr_reconstruction.py", "views/attribute_privacy.py",
    "views/membership.py", "views/property.py", "views/fisher_information.py"])
def test_one_teaching_sweep_button_per_page(store, page):  # noqa: F811
    """Nothing stored: every tradeoff plot is a sentence pointing at the lesson box, whose
    button is the page's only teaching-sweep button."""
    at = open_page(page)
    assert not at.exception, at.exception
    teach = [b.key for b in at.button if str(b.key or "").endswith("_teaching_sweep")]
    assert len(teach) == 1, teach
    for i in at.info:
        if "needs at least two" in i.value:
            assert "What this page teaches" in i.value


@pytest.mark.parametrize("page, kind, data_key, prefix, pick, shown", [
    ("views/membership.py", "membership", "mi_dataset", "mi",
     {"mi_defense": "dp_sgd"}, {"mi_sweep", "mi_audit"}),
    ("views/property.py", "property", "pr_dataset", "pr", {}, {"pr_sweep"}),
    ("views/attribute_privacy.py", "attribute_privacy", "ap_dataset", "ap", {},
     {"ap_sweep", "ap_run_undefended"}),
])
def test_result_section_sweep_buttons_are_off_when_adult_is_missing(
        store, tmp_path, monkeypatch, page, kind, data_key, prefix, pick, shown):  # noqa: F811
    """A result on screen (a tiny real run, shown as the page's stored result) with Adult
    missing: the result sections' sweep and audit buttons are off like Run, saying why."""
    import copy

    import dashboard.base.widgets as w
    from dashboard.base.jobs import get_queue
    from dashboard.components.caveat_check import _base_result, _Patched

    no_real_data(monkeypatch, tmp_path / "empty")
    with _Patched(kind) as p:
        shown_run = w.run_with_progress

        def undefended_not_stored(config, **kw):  # the undefended point's button is drawn
            c = config if isinstance(config, dict) else config.model_dump(mode="json")
            none = (c.get("defense") or {}).get("kind") == "none" and kind == "attribute_privacy"
            return None if none else shown_run(config, **kw)

        w.run_with_progress = undefended_not_stored  # _Patched restores the original
        at = open_page(page)
        for key, value in pick.items():
            at.selectbox(key=key).set_value(value).run()
        assert p.config is not None
        # the page's config on digits (the tiny overrides of the caveat check): it runs here
        r = copy.deepcopy(_base_result(kind, p.config))
        r.from_cache = True
        p.result = r
        before = get_queue().counts()
        at.selectbox(key=data_key).set_value("adult").run()
        assert not at.exception, at.exception
        jobs = {b.key: b for b in at.button if _starts_a_job(b)}
        assert shown <= set(jobs), set(jobs)
        on = [k for k, b in jobs.items() if not b.disabled]
        assert not on, f"job buttons left on with Adult missing: {on}"
        for k in shown:
            assert "PRIVLAB_DATA_DIR" in (jobs[k].help or ""), (k, jobs[k].help)
        assert get_queue().counts() == before

"""Missing data said plainly (issue #20 item 7), and the pre-run estimate's cost model."""

from __future__ import annotations

import pytest

from core.foundation import costs
from tests.test_compare_page import open_page as open_with_state
from tests.test_pages import no_real_data, open_page, store  # noqa: F401  (fixture)


def _says_how_to_get_adult(at, where) -> None:
    errors = " ".join(e.value for e in at.error)
    for part in ("PRIVLAB_DATA_DIR", "adult.data", "adult.test", str(where)):
        assert part in errors, (part, errors)


@pytest.mark.parametrize("page, data_key, run_key", [
    ("views/membership.py", "mi_dataset", "mi_run"),
    ("views/property.py", "pr_dataset", "pr_run"),
    ("views/fisher_information.py", "fi_dataset", "fi_run"),
])
def test_page_on_missing_adult_says_how_and_keeps_run_off(store, tmp_path, monkeypatch,  # noqa: F811
                                                          page, data_key, run_key):
    from dashboard.base.jobs import get_queue

    no_real_data(monkeypatch, tmp_path / "empty")
    at = open_page(page)
    before, stored = get_queue().counts(), len(store.list())  # Fisher runs its default
    at.selectbox(key=data_key).set_value("adult").run()
    assert not at.exception, at.exception
    _says_how_to_get_adult(at, tmp_path / "empty")
    assert at.button(key=run_key).disabled
    assert at.sidebar.selectbox(key="privlab_dataset").value == "digits"  # never switched
    assert "sidebar's data set (**digits**) is unchanged" in " ".join(c.value for c in at.caption)
    assert len(store.list()) == stored and get_queue().counts() == before
    # back on an embedded set: Run is on again
    at.selectbox(key=data_key).set_value("digits").run()
    assert not at.button(key=run_key).disabled


def test_compare_preset_on_missing_adult_says_how_and_keeps_run_off(store, tmp_path,  # noqa: F811
                                                                    monkeypatch):
    no_real_data(monkeypatch, tmp_path / "empty")
    at = open_with_state("views/compare.py", cmp_preset="custom")
    at.selectbox(key="cmp_preset").set_value("attribute inference on adult").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="cmp_data").value == "adult"
    _says_how_to_get_adult(at, tmp_path / "empty")
    assert at.button(key="cmp_run").disabled
    assert store.list() == []


def test_home_leads_with_the_embedded_sets(tmp_path, monkeypatch):
    no_real_data(monkeypatch, tmp_path / "empty")
    at = open_page()
    text = " ".join(m.value for m in at.markdown)
    assert "A fresh clone runs every page with no download" in text
    lead = text[text.index("A fresh clone"):]
    assert lead.index("digits") < lead.index("Adult")
    table = at.table[0].value
    assert table["available"].iloc[0] == "yes" and list(table["name"])[:3] == [
        "digits", "mnist5k", "faces"]


def test_cost_model_measured_and_fitted():
    cfg = {"data": {"name": "mnist5k"}, "train": {"members": 500, "epochs": 60},
           "attack": {"shadows": 16}}
    s, based = costs.estimate("membership", cfg)
    assert based == ("an estimate from another machine: two cold mnist5k runs timed on its "
                     "loaded 2-core CPU")
    assert s == pytest.approx(3.0 + 4.65e-5 * 17 * 60 * 500)
    small = {**cfg, "train": {"members": 100, "epochs": 10}, "attack": {"shadows": 2}}
    assert costs.estimate("membership", small)[0] < s  # less work, less time
    # enough stored runs: fitted on them (seconds = 2 + 1e-5 · work exactly)
    runs = [({**cfg, "train": {"members": m, "epochs": 20}, "attack": {"shadows": k}},
             2.0 + 1e-5 * (1 + k) * 20 * m) for m, k in ((100, 4), (200, 8), (400, 8), (800, 16))]
    s2, based2 = costs.estimate("membership", cfg, runs)
    assert based2 == "fitted on 4 stored membership runs on mnist5k of this machine"
    assert s2 == pytest.approx(2.0 + 1e-5 * 17 * 60 * 500, rel=1e-6)
    # too few: the measured constants again; DP-SGD's own epochs count
    assert costs.estimate("membership", cfg, runs[:2])[1] == based
    # runs of another data set are not this one's; a set never measured borrows mnist5k's line
    faces = {**cfg, "data": {"name": "faces"}}
    assert costs.estimate("membership", faces, runs)[1] == based + "; not measured on faces"
    assert costs.estimate("membership", {**cfg, "data": {"name": "digits"}})[1].startswith(
        "an estimate from another machine: two cold digits runs")
    dp = {**cfg, "defense": {"kind": "dp_sgd", "epochs": 150}}
    assert costs.work("membership", dp) == 17 * 150 * 500
    assert costs.estimate("property", {}) is None
    assert costs.format_seconds(26.7) == "about 27 s"
    assert costs.format_seconds(200) == "about 3.3 min"

"""The Membership page through AppTest."""

from __future__ import annotations

from tests.test_pages import chart_keys, has_chart, open_page, store  # noqa: F401  (fixture)

#: the page's title of the representation attack (dashboard/views/membership.py TITLES)
TITLES = {"representation": "representation attack (fresh MLP on r)"}


def test_membership_page_runs_stores_and_draws_the_rocs(store):  # noqa: F811
    at = open_page("views/membership.py")
    at.selectbox(key="mi_dataset").set_value("digits").run()
    at.text_input(key="mi_members__text").set_value(str(60)).run()
    at.text_input(key="mi_epochs__text").set_value(str(5)).run()
    at.text_input(key="mi_refs__text").set_value(str(1)).run()
    at.text_input(key="mi_targets__text").set_value(str(4)).run()
    at.text_input(key="mi_shadows__text").set_value(str(4)).run()
    at.button(key="mi_run").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(store.list(kind="membership")) == 1
    assert has_chart(at, "mi_roc") and has_chart(at, "mi_roc_log"), chart_keys(at)
    assert has_chart(at, "mi_proj_member") and has_chart(at, "mi_proj_class"), chart_keys(at)
    cards = [e for e in at.expander if e.label == "Threat models"]
    assert cards and "**LiRA (offline)** — sees" in cards[0].markdown[0].value
    table = next(t.value for t in at.table if "scored (in / out)" in t.value.columns)
    assert table["scored (in / out)"].str.match(r"^\d+ / \d+$").all()
    # pooled over 4 targets: the loss attack scores about 4 × 60 non-members, not 60
    assert int(table["scored (in / out)"][0].split(" / ")[1]) > 200
    shown = {m.label: m.value for m in at.metric}
    assert shown["strongest AUC"] != "n/a"


def test_membership_page_inf2guard_lists_its_attacks_and_bad_settings_error(store):  # noqa: F811
    at = open_page("views/membership.py")
    assert TITLES["representation"] not in at.multiselect(key="mi_attackers").options
    at.selectbox(key="mi_defense").set_value("inf2guard").run()
    assert TITLES["representation"] in at.multiselect(key="mi_attackers").options
    at.text_input(key="mi_shadows__text").set_value(str(2)).run()
    at.text_input(key="mi_refs__text").set_value(str(2)).run()
    assert any("rmia_references" in e.value for e in at.error), [e.value for e in at.error]
    assert len(store.list()) == 0

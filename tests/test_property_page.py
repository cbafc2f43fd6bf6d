"""The Property page through AppTest."""

from __future__ import annotations

from tests.test_pages import chart_keys, has_chart, open_page, store  # noqa: F401  (fixture)


def _small(at):
    at.selectbox(key="pr_dataset").set_value("digits").run()
    at.text_input(key="pr_per_bin__text").set_value(str(30)).run()
    at.text_input(key="pr_epochs__text").set_value(str(3)).run()
    return at


def test_property_page_runs_stores_and_draws_attacks_bound_tradeoff_and_projection(store):  # noqa: F811
    at = _small(open_page("views/property.py"))
    assert at.slider(key="pr_lambda").value == 0.75 and at.selectbox(key="pr_k").value == 4
    at.button(key="pr_run").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(store.list(kind="property")) == 1
    for key in ("pr_attack_bars", "pr_bound_curve", "pr_proj_repr", "pr_curves"):
        assert has_chart(at, key), (key, chart_keys(at))
    # one λ stored: no tradeoff axes, a sentence pointing at the lesson box's teaching-sweep
    # button instead (the page's only one)
    assert not has_chart(at, "pr_tradeoff")
    assert any("needs at least two λ values" in i.value and "What this page teaches" in i.value
               for i in at.info)
    assert [b.key for b in at.button if str(b.key or "").endswith("teaching_sweep")] == [
        "pr_teaching_sweep"]
    shown = {m.label: m.value for m in at.metric}
    assert shown["majority-class rate"] != "n/a" and shown["in-training Ψ attack accuracy"] != "n/a"
    assert "Run the λ sweep (2 missing)" in [b.label for b in at.button]  # 0 and 0.25
    # the what-if slider recomputes the bound live
    at.slider(key=next(s.key for s in at.slider if s.key.startswith("pr_what_if_h"))).set_value(2.0).run()
    shown = {m.label: m.value for m in at.metric}
    assert shown["tight Fano at what-if H"] == "0.250"


def test_property_page_bad_settings_error_and_store_nothing(store):  # noqa: F811
    at = _small(open_page("views/property.py"))
    at.multiselect(key="pr_attackers").set_value([]).run()
    assert any("attack.attackers: got an empty list" in e.value for e in at.error), \
        [e.value for e in at.error]
    assert len(store.list()) == 0

"""The Reconstruction → gradient leakage page through AppTest (app.py + st.navigation)."""

from __future__ import annotations

from tests.test_pages import chart_keys, has_chart, open_page, store  # noqa: F401  (fixture)


def _tiny(at) -> None:
    at.text_input(key="gl_epochs__text").set_value(str(1)).run()
    at.text_input(key="gl_targets__text").set_value(str(2)).run()
    at.text_input(key="gl_iters__text").set_value(str(20)).run()
    at.toggle(key="gl_mi").set_value(False).run()


def test_live_panel_updates_with_kappa_and_channel_without_a_run(store):  # noqa: F811
    at = open_page("views/reconstruction.py")
    assert not at.exception
    cards = {m.label: m.value for m in at.metric}
    assert {"σ (noise variance)", "κ/d", "Thm 1 floor / round", "Wiener MMSE"} <= set(cards)
    assert has_chart(at, "gl_spectrum") and has_chart(at, "gl_bounds")
    before = cards["σ (noise variance)"]
    at.select_slider(key="gl_kappa").set_value(100.0).run()
    after = {m.label: m.value for m in at.metric}["σ (noise variance)"]
    assert after != before  # a larger κ solves to less noise
    at.selectbox(key="gl_defense").set_value("personalized").run()
    assert not at.exception and at.toggle(key="gl_beta_paper").value is True
    at.selectbox(key="gl_defense").set_value("dp_sgd").run()
    assert any(m.label == "capacity B/z² (Thm 4)" for m in at.metric)
    assert len(store.list()) == 0  # nothing runs without Run


def test_run_button_runs_stores_and_shows_the_gallery(store):  # noqa: F811
    at = open_page("views/reconstruction.py")
    _tiny(at)
    at.button(key="gl_run").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs = store.list(kind="gradient_leakage")
    assert len(runs) == 1 and runs[0].config["attack"]["targets"] == 2
    assert has_chart(at, "gl_gallery"), chart_keys(at)
    # one κ stored: no tradeoff axes, a sentence and the teaching-sweep button instead
    assert not has_chart(at, "gl_tradeoff")
    assert any("needs at least two κ or ε values" in i.value for i in at.info)
    # Theorem 1 against the mean over targets and seeds; single images shown, not counted
    assert has_chart(at, "gl_thm1_mean"), chart_keys(at)
    assert any(c.value.startswith("Seed means below the bound: ") and "(shown, not counted)"
               in c.value for c in at.caption), [c.value for c in at.caption]
    shown = {m.label: m.value for m in at.metric}
    assert shown["utility (test accuracy)"] != "n/a"
    at.run()  # the same settings again: from the store at once
    assert any("from the cache" in c.value for c in at.caption)
    assert len(store.list()) == 1


def test_invalid_beta_rectangle_errors_and_stores_nothing(store):  # noqa: F811
    at = open_page("views/reconstruction.py")
    at.selectbox(key="gl_defense").set_value("personalized").run()
    at.toggle(key="gl_beta_paper").set_value(False).run()
    at.slider(key="gl_beta_rows").set_value((3, 3)).run()
    assert any("beta_rect" in e.value for e in at.error), [e.value for e in at.error]
    assert len(store.list()) == 0


def test_sweep_button_is_one_stored_sweep_over_the_defense_blocks(store):  # noqa: F811
    from core.config.schema import parse_config
    from core.config.sweeps import expand
    from dashboard import reconstruction_settings as page

    at = open_page("views/reconstruction.py")
    config = {"kind": "gradient_leakage", "data": {"name": "digits"}}
    series = page.sweep_configs(config, 64)
    sweep = parse_config(page.sweep_config(config, series))
    points = expand(sweep)
    assert len(points) == 19  # 3 channels × 5 values of κ/d, and 4 target ε of DP-SGD
    kinds = {p.config.defense.kind for p in points}
    assert kinds == {"channel", "dp_sgd"}
    assert at.button(key="gl_sweep").label.startswith("Run the sweeps (19 of 19 points missing)")


def test_dp_sgd_and_white_channel_runs_through_the_page(store):  # noqa: F811
    at = open_page("views/reconstruction.py")
    _tiny(at)
    at.selectbox(key="gl_defense").set_value("dp_sgd").run()
    at.button(key="gl_run").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.selectbox(key="gl_defense").set_value("white").run()
    at.button(key="gl_run").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    kinds = sorted(r.config["defense"]["kind"] for r in store.list(kind="gradient_leakage"))
    assert kinds == ["channel", "dp_sgd"]
    assert has_chart(at, "gl_gallery")


def test_dlg_setting_preset_sets_the_controls_and_says_the_init(store):  # noqa: F811
    from core.config.schema import ImageTrainSpec
    from dashboard.reconstruction_settings import DLG_SETTING

    at = open_page("views/reconstruction.py")
    assert not any("U(−0.5, 0.5)" in c.value for c in at.caption if "initialised" in c.value
                   and "Preset" not in c.value)  # the default model is the MLP
    at.button(key="gl_preset_dlg").click().run()
    assert not at.exception
    t, a = DLG_SETTING["train"], DLG_SETTING["attack"]
    assert at.selectbox(key="gl_model").value == "lenet_sigmoid"
    assert at.selectbox(key="gl_defense").value == "none"
    assert float(at.text_input(key="gl_epochs__text").value) == t["epochs"]
    assert float(at.text_input(key="gl_targets__text").value) == a["targets"]
    assert list(at.multiselect(key="gl_attackers").value) == a["attackers"]
    assert any("initialised as in the DLG setting" in c.value for c in at.caption)
    # the page sends no lr / optimiser / batch: the config's defaults are the preset's recipe
    d = ImageTrainSpec()
    assert (d.lr, d.optimizer, d.batch_size) == (t["lr"], t["optimizer"], t["batch_size"])
    assert len(store.list()) == 0  # the preset only sets the controls


def test_lesson_box_follows_the_chosen_channel_and_dp_sgd(store):  # noqa: F811
    """κ per channel (issue #20): the lesson box teaches κ on the channel the page runs (its
    words and its button's help name it); DP-SGD's box teaches its target-ε grid."""
    at = open_page("views/reconstruction.py")
    for ch in ("natural", "white", "personalized"):
        at.selectbox(key="gl_defense").set_value(ch).run()
        assert not at.exception, at.exception
        name = f"the {ch.capitalize()} channel"
        texts = [m.value for m in at.markdown]
        assert any("What this page teaches" in t and name in t for t in texts), texts
        assert any(name in t and "teaching sweep" in t for t in texts)
        assert name in (at.button(key="gl_teaching_sweep").help or "")
    at.selectbox(key="gl_defense").set_value("dp_sgd").run()
    texts = " ".join(m.value for m in at.markdown)
    assert "(ε: " in texts and "channel" not in at.button(key="gl_teaching_sweep").help
    assert "ε ∈ {1, 2, 4, 8}" in at.button(key="gl_teaching_sweep").help
    assert len(store.list()) == 0

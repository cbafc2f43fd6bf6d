"""The "Reconstruction: from representations" page through AppTest."""

from __future__ import annotations

from tests.test_pages import chart_keys, has_chart, open_page, store  # noqa: F401  (fixture)


def test_repr_reconstruction_page_runs_stores_and_draws_grid_and_tradeoff(store):  # noqa: F811
    at = open_page("views/repr_reconstruction.py")
    assert not at.exception, at.exception
    # the bound preview is there before any run (instant, from the formula)
    assert any("Theorem 3 on [0, 1]^64" in c.value for c in at.caption)
    at.selectbox(key="rr_channel").set_value("uniform").run()
    at.text_input(key="rr_epochs__text").set_value(str(2)).run()
    at.text_input(key="rr_targets__text").set_value(str(6)).run()
    at.multiselect(key="rr_attackers").set_value(["decoder_in_training", "inversion"]).run()
    at.button(key="rr_run").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs = store.list(kind="repr_reconstruction")
    assert len(runs) == 1
    assert has_chart(at, "rr_gallery") and has_chart(at, "rr_tradeoff"), chart_keys(at)
    shown = {m.label: m.value for m in at.metric}
    assert shown["strongest SSIM"] != "n/a" and shown["utility on r + δ"] != "n/a"
    assert any(b.label.startswith("Run the ε sweep over every channel (24 missing)")
               for b in at.button)


def test_repr_reconstruction_page_offers_every_embedded_image_set_and_channel(store):  # noqa: F811
    at = open_page("views/repr_reconstruction.py")
    shown = {o.split(" · ")[0] for o in at.selectbox(key="rr_dataset").options}
    assert {"digits", "mnist5k", "faces"} <= shown and "synthetic" not in shown
    assert len(at.selectbox(key="rr_channel").options) == 5
    at.multiselect(key="rr_attackers").set_value([]).run()
    assert any("attack.attackers: got an empty list" in e.value for e in at.error), \
        [e.value for e in at.error]
    assert len(store.list()) == 0

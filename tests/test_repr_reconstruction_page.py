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
    assert has_chart(at, "rr_gallery"), chart_keys(at)
    # one ε stored: no tradeoff axes, a sentence and the teaching-sweep button instead
    assert not has_chart(at, "rr_tradeoff")
    assert any("needs at least two ε values" in i.value for i in at.info)
    # Theorem 3 drawn under the estimated entropy, labelled an estimate with its estimator; the
    # uniform-x form named as not drawn, and the points below the drawn bound counted
    assert has_chart(at, "rr_thm3"), chart_keys(at)
    caps = [c.value for c in at.caption]
    assert any("Theorem 3 under the data's estimated entropy, labelled an estimate" in c
               and "Estimator: Gaussian maximum-entropy estimator" in c
               and "Points below the drawn bound: " in c for c in caps), caps
    assert any(c.startswith("Not drawn: the paper's form, which assumes x uniform") for c in caps)
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

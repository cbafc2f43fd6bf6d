"""Per-record exposure (:mod:`core.report.exposure`): each family's extractor on a tiny run, the
ranking's order and direction, Jaccard and the always-exposed set on hand-checked sets, the
sentences' numbers, and the per-record arrays leaving every metric as it was."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from core.foundation.result import Result
from core.report.exposure import (
    chance_jaccard,
    comparison_results,
    exposure_overlap,
    jaccard,
    record_exposure,
    record_scores,
)
from core.runs.experiments import run
from tests.test_pages import store  # noqa: F401  (fixture)

MEMBERSHIP = {"kind": "membership", "data": {"name": "digits"},
              "train": {"members": 60, "epochs": 6, "batch_size": 32},
              "attack": {"shadows": 4, "rmia_references": 1, "targets": 2,
                         "attackers": ["loss", "lira_offline"]},
              "projection_points": 0}
GRADIENT = {"kind": "gradient_leakage", "data": {"name": "digits"},
            "train": {"model": "mlp", "epochs": 1, "batch_size": 64},
            "attack": {"attackers": ["idlg"], "targets": 3, "batch_size": 2, "iterations": 20,
                       "model_inversion": False}}
FIL = {"kind": "fisher_information", "data": {"name": "digits"}, "irfil": {"iterations": 2},
       "attack": {"noise_trials": 2, "crb_trials": 50, "sigma_grid": 2}}
ATTRIBUTE = {"kind": "attribute_privacy",
             "data": {"name": "synthetic", "n_samples": 400, "dependence": 0.6},
             "fl": {"num_devices": 2, "fraction_fit": 1.0, "rounds": 1, "batch_size": 32},
             "pretrain_epochs": 1, "projection_points": 0, "attack": {"mlp_epochs": 5}}
TINY = {"membership": MEMBERSHIP, "gradient_leakage": GRADIENT, "fisher_information": FIL,
        "attribute_privacy": ATTRIBUTE}


@pytest.fixture(scope="module")
def runs() -> dict[str, Result]:
    return {k: run(c) for k, c in TINY.items()}


# ---------------------------------------------------------------------------------------------
# the extractors on tiny runs


def test_each_family_extractor_reads_its_records(runs):
    for kind, r in runs.items():
        rs = record_scores(r)
        assert rs.family == kind and rs.index.dtype == np.int64
        assert rs.index.shape == rs.values.shape and len(rs.index) > 0
        assert len(np.unique(rs.index)) == len(rs.index)  # each record once
        ex = record_exposure(r, top_n=3)
        assert ex.direction == "higher = more exposed"
        assert len(ex.top) == 3 and np.all(np.diff(ex.top_values) <= 0)
        rec = ex.records()
        assert len(rec.labels) == 3
        assert (rec.images is not None and rec.images.shape[0] == 3
                and 0.0 <= rec.images.min() and rec.images.max() <= 1.0) or len(rec.rows) == 3


def test_membership_records_are_the_pool_and_members_of_some_target(runs):
    r = runs["membership"]
    a = r.artifacts
    pool = a["record_index"]
    assert len(pool) == 2 * MEMBERSHIP["train"]["members"] and a["record_index"].dtype == np.int32
    assert a["record_score_loss"].dtype == np.float32
    # a record is scored exactly where some target model (the target or a shadow as target)
    # trained on it; the target's own members always are
    scored = np.isfinite(a["record_score_lira_offline"])
    assert np.array_equal(scored, a["record_targets_in"] > 0)
    assert np.all(scored[a["record_member"] == 1])
    assert a["record_targets_in"].max() <= MEMBERSHIP["attack"]["targets"]
    ex = record_exposure(r, attack="loss")
    assert ex.score == "record_score_loss" and ex.attack == "loss"
    assert set(ex.ranked.tolist()) <= set(pool.tolist())


def test_gradient_records_are_the_targets_rows_in_psnr_order(runs):
    from core.config.schema import parse_config
    from core.data import load_dataset

    r = runs["gradient_leakage"]
    idx = r.artifacts["record_index"]
    assert len(idx) == 3 * 2 == len(r.artifacts["recon_idlg_psnr"])
    cfg = parse_config(r.config)
    ds = load_dataset(cfg.data, cfg.seed)
    # the gallery's first target images are the data set's rows record_index names
    gallery = r.artifacts["targets"]
    assert np.allclose(gallery, ds.images(idx[:len(gallery)]))
    assert record_exposure(r).unit == "dB"


def test_fil_records_are_eta_of_the_release(runs):
    r = runs["fisher_information"]
    rs = record_scores(r)
    eta = r.artifacts["eta_example"] / r.metrics["fil_sigma"]
    assert np.allclose(rs.values, eta)
    assert record_exposure(r, top_n=1).top_values[0] == pytest.approx(r.metrics["fil_eta_max"])


def test_attribute_records_are_the_strongest_attackers_confidence(runs):
    r = runs["attribute_privacy"]
    conf = r.artifacts["record_confidence"]
    assert np.all((conf >= 0) & (conf <= 1))
    rs = record_scores(r)
    assert rs.reference == pytest.approx(1 / len(r.info["attribute_values"]))
    assert rs.attack == r.info["best_attacker"]
    from core.config.schema import parse_config
    from core.data import load_dataset

    cfg = parse_config(r.config)
    assert np.array_equal(rs.index, load_dataset(cfg.data, cfg.seed).split("test"))


def test_a_family_without_records_and_an_old_run_say_so_in_one_line():
    with pytest.raises(ValueError, match="per-record exposure is kept for") as exc:
        record_scores(Result(kind="property", config={}, seed=0))
    assert "\n" not in str(exc.value)
    old = Result(kind="membership", config={"defense": {"kind": "none"}}, seed=0,
                 info={"best_attack": "loss"})
    with pytest.raises(ValueError, match="run it again"):
        record_exposure(old)


def test_every_membership_auc_is_recomputed_from_the_stored_arrays(runs):
    from core.report.exposure import recomputed_auc

    r = runs["membership"]
    diffs = {}
    for name in MEMBERSHIP["attack"]["attackers"]:
        got, stored = recomputed_auc(r, name)
        diffs[name] = abs(got - stored)
    assert max(diffs.values()) <= 1e-9, diffs
    # non-members are kept too: each pool record's mean score over the models it was out of
    a = r.artifacts
    out = ~a["record_model_members_lira_offline"].astype(bool)
    assert np.array_equal(np.isfinite(a["record_nonmember_score_lira_offline"]), out.any(0))
    assert np.all(np.isfinite(a["record_nonmember_score_loss"][a["record_member"] == 0]))
    # a changed score moves the recomputed AUC: the check can fail
    bad = Result(kind=r.kind, config=r.config, seed=r.seed, metrics=dict(r.metrics),
                 artifacts={**a, "record_model_scores_loss": -a["record_model_scores_loss"]})
    got, stored = recomputed_auc(bad, "loss")
    assert abs(got - stored) > 1e-3
    with pytest.raises(ValueError, match="keeps no per-model scores"):
        recomputed_auc(Result(kind="membership", config={}, seed=0), "loss")


# ---------------------------------------------------------------------------------------------
# the per-record arrays move no metric


def _metrics(r: Result) -> dict[str, float]:
    return {k: v for k, v in r.metrics.items() if "seconds" not in k}


@pytest.mark.parametrize("kind, module", [
    ("membership", "core.runs.membership_stages"),
    ("gradient_leakage", "core.runs.gradient_leakage"),
    ("attribute_privacy", "core.runs.attribute_privacy"),
])
def test_the_per_record_arrays_move_no_metric(runs, monkeypatch, kind, module):
    import importlib

    monkeypatch.setattr(importlib.import_module(module), "record_arrays", lambda *a, **k: {})
    without = run(TINY[kind])
    assert "record_index" not in without.artifacts and "record_index" in runs[kind].artifacts
    a, b = _metrics(runs[kind]), _metrics(without)
    assert a.keys() == b.keys()
    assert [k for k in a if not (a[k] == b[k] or (np.isnan(a[k]) and np.isnan(b[k])))] == []


def test_membership_record_arrays_pool_over_the_targets_that_trained_on_a_record():
    from core.runs.membership_stages import record_arrays

    ctx = SimpleNamespace(pool=np.array([10, 11, 12, 13]),
                          member=np.array([True, False, True, False]))
    # two target models: the target (members 10, 12) and a shadow (members 11, 12)
    scores = {"lira": np.array([1.0, 9.0, 3.0, 9.0, 9.0, 5.0, np.inf, 9.0]),
              "loss": np.array([2.0, 0.0, 4.0, 0.0])}
    labels = {"lira": np.array([1, 0, 1, 0, 0, 1, 1, 0], bool),
              "loss": np.array([1, 0, 1, 0], bool)}
    out = record_arrays(ctx, scores, labels)
    assert out["record_index"].tolist() == [10, 11, 12, 13]
    assert out["record_member"].tolist() == [1, 0, 1, 0]
    # 10: 1 (target); 11: 5 (shadow); 12: 3 (its shadow score is not finite); 13: never IN
    assert np.allclose(out["record_score_lira"][:3], [1.0, 5.0, 3.0])
    assert np.isnan(out["record_score_lira"][3])
    # out of a model: 10 out of the shadow (9), 11 of the target (9), 12 of none, 13 of both
    assert np.allclose(out["record_nonmember_score_lira"][[0, 1, 3]], [9.0, 9.0, 9.0])
    assert np.isnan(out["record_nonmember_score_lira"][2])
    assert out["record_model_scores_lira"].shape == (2, 4)
    assert out["record_model_members_lira"].tolist() == [[1, 0, 1, 0], [0, 1, 1, 0]]
    assert np.allclose(out["record_score_loss"], [2.0, np.nan, 4.0, np.nan], equal_nan=True)
    assert out["record_targets_in"].tolist() == [1, 1, 2, 0]
    assert out["record_score_lira"].dtype == np.float32


# ---------------------------------------------------------------------------------------------
# ranking, Jaccard, the always-exposed set and the sentences (synthetic runs)


def _mia(scores: dict[int, float], defense: dict | None = None) -> Result:
    idx = np.array(sorted(scores), dtype=np.int32)
    return Result(kind="membership", seed=0,
                  config={"kind": "membership", "data": {"name": "digits"},
                          "defense": defense or {"kind": "none"}, "attack": {"targets": 1}},
                  info={"best_attack": "loss"},
                  artifacts={"record_index": idx,
                             "record_score_loss": np.array([scores[i] for i in idx],
                                                           dtype=np.float32)})


def test_top_n_is_most_exposed_first_ties_by_index_nan_left_out():
    r = _mia({5: 0.1, 3: 0.9, 8: np.nan, 1: 0.5, 9: 0.5, 2: 0.5, 7: -1.0})
    ex = record_exposure(r, top_n=2)
    assert ex.top.tolist() == [3, 1] and ex.top_values.tolist() == pytest.approx([0.9, 0.5])
    assert ex.ranked.tolist() == [3, 1, 2, 9, 5, 7]  # 8 (NaN) was not scored
    assert ex.n_scored == 6 and ex.ties_at_cut == 2  # 2 and 9 tie with the 2nd score
    s = ex.sentence
    assert "the 2 most exposed of 6 scored records" in s and "records 3, 1" in s
    assert "0.5 to 0.9" in s and "median of 0.5" in s and "2 more records tie" in s
    with pytest.raises(ValueError, match="top_n: got 0"):
        record_exposure(r, top_n=0)
    one = record_exposure(_mia({5: 0.1, 3: 0.9, 1: 0.5, 9: 0.5}), top_n=2)
    assert one.ties_at_cut == 1 and "1 more record ties with" in one.sentence


def test_jaccard_on_hand_checked_sets():
    assert jaccard([1, 2, 3], [2, 3, 4]) == pytest.approx(2 / 4)
    assert jaccard([1, 2], [3, 4]) == 0.0 and jaccard([1, 2], [2, 1]) == 1.0
    assert jaccard([], []) == 1.0
    assert chance_jaccard(10, 100) == pytest.approx(10 / 190)


def test_overlap_matrix_always_exposed_set_and_its_sentence():
    base = {i: float(100 - i) for i in range(20)}  # top 4: 0, 1, 2, 3
    a = _mia(base)
    b = _mia({**base, 2: -5.0, 10: 99.5},
             {"kind": "dp_sgd", "target_epsilon": 8.0})  # top 4: 0, 10, 1, 3
    c = _mia({**base, 0: -5.0, 1: -6.0, 15: 200.0, 16: 150.0},
             {"kind": "relaxloss", "alpha": 1.0})  # top 4: 15, 16, 2, 3
    ov = exposure_overlap({"none": a, "DP-SGD": b, "RelaxLoss": c}, k=4)
    assert [s.tolist() for s in ov.sets] == [[0, 1, 2, 3], [0, 10, 1, 3], [15, 16, 2, 3]]
    # |{0,1,2,3} ∩ {0,1,3,10}| = 3 of 5; with {2,3,15,16}: 2 of 6; b with c: {3}, 1 of 7
    expected = np.array([[1, 3 / 5, 2 / 6], [3 / 5, 1, 1 / 7], [2 / 6, 1 / 7, 1]])
    assert np.allclose(ov.jaccard, expected)
    assert ov.always.tolist() == [3]
    assert ov.n_common == 20 and ov.chance == pytest.approx(4 / 36)
    s = ov.sentence
    assert s.startswith("1 of the 4 most exposed records stay in the top 4 under every defense "
                        "(3: none, DP-SGD, RelaxLoss): records 3.")
    assert "0.143 to 0.6" in s and "0.111" in s
    sec = ov.report_section()
    assert sec["title"] and sec["sentences"] == [s] and sec["figure"] is not None
    assert {(r["defense A"], r["defense B"], r["shared"]) for r in sec["rows"]} == {
        ("none", "DP-SGD", 3), ("none", "RelaxLoss", 2), ("DP-SGD", "RelaxLoss", 1)}


def test_overlap_with_none_always_exposed_and_bad_input():
    a = _mia({i: float(i) for i in range(10)})
    b = _mia({i: float(-i) for i in range(10)})
    ov = exposure_overlap({"a": a, "b": b}, k=3)
    assert ov.always.tolist() == [] and ov.jaccard[0, 1] == 0.0
    assert ov.sentence.startswith("None of the 3 most exposed records stays in the top 3")
    assert exposure_overlap({"a": a, "b": b}, k=50).k == 10  # cut to the records scored
    with pytest.raises(ValueError, match="two or more"):
        exposure_overlap({"a": a})
    with pytest.raises(ValueError, match="k: got 0"):
        exposure_overlap({"a": a, "b": b}, k=0)


def test_record_section_rows_follow_the_ranking(runs):
    sec = record_exposure(runs["membership"], top_n=4).report_section()
    assert [row["rank"] for row in sec["rows"]] == [1, 2, 3, 4]
    assert all(isinstance(row["record"], int) for row in sec["rows"])
    assert sec["figure"] is not None and sec["sentences"][0].startswith("Under no defense")


def test_comparison_results_pick_one_point_per_curve():
    r1, r2 = _mia({1: 1.0}), _mia({1: 2.0})
    curves = [SimpleNamespace(name="no defense", knob_field=None, symbol=None,
                              knob=np.array([np.nan]), seeds=[0, 1], keys=[["k0", "k1"]]),
              SimpleNamespace(name="DP-SGD", knob_field="target_epsilon", symbol="ε",
                              knob=np.array([1.0, 8.0]), seeds=[0, 1],
                              keys=[["a0", "a1"], ["b0", "b1"]])]
    held = SimpleNamespace(get=lambda key: {"k1": r1, "b1": r2}.get(key))
    got = comparison_results(SimpleNamespace(curves=curves), held, position=5, seed_index=1)
    assert got == {"no defense": r1, "DP-SGD at ε = 8": r2}
    assert comparison_results(SimpleNamespace(curves=curves), held, position=0) == {}


# ---------------------------------------------------------------------------------------------
# the pages


def _component_script() -> None:
    """Both components on synthetic digits runs (AppTest.from_function)."""
    from types import SimpleNamespace

    import numpy as np

    import dashboard.base.widgets
    from dashboard.components.exposure import exposure_ui, overlap_ui
    from tests.test_exposure import _mia

    a = _mia({i: float(100 - i) for i in range(30)})
    b = _mia({i: float(100 - i) if i % 2 else -float(i) for i in range(30)},
             {"kind": "dp_sgd", "target_epsilon": 8.0})
    exposure_ui(a, key="t_exposure")
    dashboard.base.widgets.get_store = lambda: SimpleNamespace(get={"ka": a, "kb": b}.get)
    curves = [SimpleNamespace(name="no defense", knob_field=None, symbol=None,
                              knob=np.array([np.nan]), seeds=[0], keys=[["ka"]]),
              SimpleNamespace(name="DP-SGD", knob_field="target_epsilon", symbol="ε",
                              knob=np.array([8.0]), seeds=[0], keys=[["kb"]])]
    cmp = SimpleNamespace(spec=SimpleNamespace(family="membership", seeds=(0,)), curves=curves)
    overlap_ui(cmp, 0, k=10)
    exposure_ui(SimpleNamespace(kind="property"), key="t_none")


def test_components_draw_records_sentence_and_overlap():
    from streamlit.testing.v1 import AppTest

    import dashboard.base.widgets

    keep = dashboard.base.widgets.get_store
    try:
        at = AppTest.from_function(_component_script, default_timeout=60).run()
    finally:
        dashboard.base.widgets.get_store = keep
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "the 10 most exposed of 30 scored records" in text and "records 0, 1, 2" in text
    # DP-SGD keeps the odd records 1, 3, …, 19 in its top 10: 5 shared, Jaccard 5/15
    assert "5 of the 10 most exposed records stay in the top 10 under every defense" in text
    assert "0.333 to 0.333" in text
    ids = [str(getattr(c, "id", "")) for c in at.get("plotly_chart")]
    assert any("t_exposure_records" in i for i in ids), ids
    assert any("cmp_exposure_heatmap" in i for i in ids) and any(
        "cmp_exposure_always" in i for i in ids), ids
    assert any("per-record exposure is kept for" in c.value for c in at.caption)


def test_membership_page_shows_the_most_exposed_records(store):  # noqa: F811
    from tests.test_pages import has_chart, open_page

    at = open_page("views/membership.py")
    at.selectbox(key="mi_dataset").set_value("digits").run()
    for k, v in (("mi_members", 40), ("mi_epochs", 3), ("mi_refs", 1), ("mi_targets", 2),
                 ("mi_shadows", 4)):
        at.text_input(key=f"{k}__text").set_value(str(v)).run()
    at.button(key="mi_run").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert has_chart(at, "mi_exposure_records")
    assert any("most exposed of" in m.value for m in at.markdown)

"""Every caveat beside its number (issue #20 items 3 and 6): the registry of core/foundation/caveats.py,
the runners' records, the CLI's JSON, the formatting of tiny values and raw keys, and every
caveat key rendered by its page (dashboard/components/caveat_check.py)."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from core.foundation import caveats
from core.foundation.result import Result


def _keys(raised: list[dict]) -> set[str]:
    return {r["key"] for r in raised}


def test_every_caveat_has_a_label_kinds_and_a_way_to_be_raised():
    assert len(caveats.REGISTRY) >= 25
    for key, c in caveats.REGISTRY.items():
        assert c.key == key and c.label and c.kinds and c.qualifies
    # explicit caveats are raised by a runner with its own sentence; the rest are derived
    explicit = {k for k, c in caveats.REGISTRY.items() if c.detect is None}
    assert explicit == {"accountant_fallback", "recon_nonfinite_restart", "mia_scores_nonfinite"}
    with pytest.raises(KeyError, match="registered"):
        caveats.raised("no_such_caveat", [], "text")


def test_tpr_from_too_few_nonmembers_is_flagged_on_its_metric_and_the_roc():
    cfg = {"attack": {"attackers": ["loss", "rmia"]}}
    info = {"scored": {"loss": [157, 157], "rmia": [4000, 4000]}}
    m = {"mia_loss_tpr_at_0p1pct_fpr": 0.096, "mia_rmia_tpr_at_0p1pct_fpr": 0.01,
         "mia_tpr_at_0p1pct_fpr_best": 0.096}
    got = caveats.collect("membership", m, info, cfg)
    few = [r for r in got if r["key"] == "tpr_0p1pct_few_negatives"]
    assert len(few) == 1, got
    assert set(few[0]["metrics"]) == {"mia_loss_tpr_at_0p1pct_fpr", "mia_tpr_at_0p1pct_fpr_best"}
    assert "157 non-members" in few[0]["text"] and few[0]["label"] == "few non-members"
    # the ROC is greyed up to 10 false positives' worth of FPR
    assert few[0]["where"]["fpr_max"] == pytest.approx(10 / 157)
    # 1,000 non-members or more: nothing to flag
    info["scored"]["loss"] = [1000, 1000]
    assert "tpr_0p1pct_few_negatives" not in _keys(caveats.collect("membership", m, info, cfg))


def test_gradient_leakage_vacuous_floors_and_points_below_read_the_numbers():
    q = (1 / 255) ** 2 / 12
    m = {"steps": 10.0, "bound_thm1_round": 7.55e-10, "bound_thm1_total": 1e-30,
         "bound_quantization_floor": q, "bound_thm1_round_vacuous": 1.0,
         "bound_thm1_total_vacuous": 1.0, "bound_below_count": 2.0, "bound_thm1_mean_below": 0.0,
         "recon_best_mse": 0.02}
    got = caveats.collect("gradient_leakage", m, {}, {"defense": {"kind": "channel"}},
                          intervals={"recon_best_mse": {"lo": 0.01, "hi": 0.03, "n": 32}})
    keys = _keys(got)
    assert {"thm1_vacuous", "thm1_points_below", "thm1_gaussian_plugin"} <= keys
    vac = [r for r in got if r["key"] == "thm1_vacuous"]
    assert {tuple(r["metrics"]) for r in vac} == {("bound_thm1_round",), ("bound_thm1_total",)}
    assert any("quantisation floor" in r["text"] and "7.55e-10" in r["text"] for r in vac)
    below = next(r for r in got if r["key"] == "thm1_points_below")
    assert below["text"].startswith("2 of 32 targets") and "stays above" in below["text"]
    # no floor at all (a defense that bounds no information)
    none = caveats.collect("gradient_leakage", {"steps": 10.0}, {}, {"defense": {"kind": "none"}})
    assert _keys(none) == {"thm1_no_floor"}


def test_theorem3_points_below_and_the_estimate():
    m = {"bound_thm3_l2": 0.6, "bound_thm3_l2_vacuous": 0.0, "bound_thm3_linf": 0.0,
         "bound_thm3_linf_vacuous": 1.0, "bound_thm3_est_l2": 0.1, "bound_thm3_est_l2_vacuous": 0.0,
         "bound_thm3_est_linf": 0.0, "bound_thm3_est_linf_vacuous": 1.0,
         "bound_thm3_mi_nats": 40.0, "bound_thm3_violations": 1.0,
         "bound_thm3_data_entropy_nats": -120.0,
         "recon_inversion_frac_l2_ge_eta": 0.25, "recon_inversion_frac_linf_ge_eta": 0.9}
    got = caveats.collect("repr_reconstruction", m, {}, {"attack": {"attackers": ["inversion"]}})
    keys = _keys(got)
    assert {"thm3_uniform_prior", "thm3_points_below", "thm3_estimate", "thm3_vacuous"} <= keys
    # 0.25 is above the estimate 0.1: not below it
    assert "thm3_est_points_below" not in keys
    below = next(r for r in got if r["key"] == "thm3_points_below")
    assert below["where"] == {"plot": "thm3", "attack": "inversion", "norm": "l2"}
    assert "25% of errors ≥ η" in below["text"] and "60%" in below["text"]


def test_bounds_of_tappfl_and_property_and_fil():
    m = {"bound_thm2_valid": 1.0, "bound_thm2_exact": 0.6, "bound_thm2_paper": 0.7,
         "attack_acc_best": 0.8, "h_u_given_r_bits": 0.9, "bound_thm1_rhs": -0.1,
         "bound_thm1_vacuous": 1.0, "n_values": 2.0, "representation_nonfinite_frac": 0.0}
    keys = _keys(caveats.collect("attribute_privacy", m, {}, {}))
    assert keys == {"tappfl_thm2_estimate", "tappfl_thm2_exceeded", "tappfl_thm1_estimate",
                    "tappfl_thm1_vacuous"}
    p = {"bound_pia_fano": 1.0, "bound_pia_fano_exact": 0.4, "bound_pia_vacuous": 1.0,
         "property_acc_best": 0.5}
    assert _keys(caveats.collect("property", p, {}, {})) == {
        "property_bound_estimate", "property_bound_vacuous", "property_bound_exceeded"}
    fil = caveats.collect("fisher_information", {"fil_epsilon": 3.0}, {"max_norm": 2.0},
                          {"model": {"model": "logistic"}, "attack": {"attackers": []}})
    assert _keys(fil) == {"fil_unit_ball", "fil_crb_least_squares_only"}


def test_an_old_result_without_recorded_caveats_gets_them_derived():
    r = Result(kind="property", config={}, seed=0,
               metrics={"bound_pia_fano": 0.9, "bound_pia_fano_exact": 0.4,
                        "bound_pia_vacuous": 0.0, "property_acc_best": 0.5},
               info={"notes": ["an old note"]})
    assert _keys(caveats.of_result(r)) == {"property_bound_estimate", "property_bound_exceeded"}
    r.info["caveats"] = []
    assert caveats.of_result(r) == []


def test_format_value_and_raw_keys():
    from dashboard.base.format import display_name, format_value, raw_metric_keys_visible

    assert format_value(7.55e-10, 4) == "< 1e-9"
    assert format_value(0.0, 4) == "0.0000"
    assert format_value(3e-5, 3) == "3.00e-05"
    assert format_value(math.inf) == "∞" and format_value(None) == "n/a"
    assert format_value(0.8456) == "0.846"
    assert "utility_acc" not in display_name("utility_acc")
    assert raw_metric_keys_visible("TPR mia_tpr_at_0p1pct_fpr_best and utility_acc here") == [
        "mia_tpr_at_0p1pct_fpr_best", "utility_acc"]
    assert raw_metric_keys_visible("Test accuracy 0.85; TPR at 0.1 % FPR 0.01") == []


def test_display_names_keep_formulas_whole():
    """A caveat names its numbers by display name: a formula's parenthesis or the ";" inside
    I(u; r) must not cut the name ("K-ary bound 1 −")."""
    from core.foundation import metric_schema
    from dashboard.base.format import display_name

    assert display_name("bound_pia_fano").startswith("K-ary bound 1 − (H − 1)/log₂(K − 1)")
    for spec in metric_schema.all_specs():
        name = display_name(spec.name)
        assert name.count("(") == name.count(")"), (spec.name, name)
        assert not name.rstrip().endswith(("−", "-", "+", "=", "/", ",", "(")), (spec.name, name)


def test_log_axes_read_powers_of_ten():
    from dashboard.base import plots

    fig = plots.membership_roc_figure([("loss", (0.0, 0.001, 1.0), (0.0, 0.01, 1.0))], log=True,
                                      grey_below=0.06)
    assert fig.layout.xaxis.exponentformat == "power"
    assert any("few non-members" in (a.text or "") for a in fig.layout.annotations)
    assert fig.layout.shapes and fig.layout.shapes[0].x1 == pytest.approx(0.06)


TINY_MI = {"kind": "membership", "data": {"name": "digits"},
           "train": {"members": 60, "epochs": 3, "batch_size": 32},
           "attack": {"attackers": ["loss"], "shadows": 2, "targets": 1,
                      "rmia_references": 1}, "projection_points": 0}


def test_cli_run_and_show_json_carry_notes_and_caveats(tmp_path, monkeypatch, capsys):
    from cli.main import main

    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "mi.yaml"
    path.write_text(yaml.safe_dump(TINY_MI))
    assert main(["run", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"notes", "caveats"} <= set(out)
    few = [c for c in out["caveats"] if c["key"] == "tpr_0p1pct_few_negatives"]
    assert few and "mia_loss_tpr_at_0p1pct_fpr" in few[0]["metrics"]
    assert any("not meaningful" in n for n in out["notes"])
    assert main(["show", out["key"][:12], "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["caveats"] == out["caveats"] and shown["notes"] == out["notes"]
    assert shown["info"]["caveats"] == out["caveats"]
    assert main(["show", out["key"][:12]]) == 0
    assert "[few non-members]" in capsys.readouterr().out


def test_every_caveat_key_is_rendered_by_its_page():
    """AppTest: each kind's page drawn with Results carrying each of its caveats."""
    from dashboard.components.caveat_check import caveat_keys_rendered

    got = caveat_keys_rendered()
    assert not got["errors"], got["errors"]
    assert got["caveat_keys_total"] == len(caveats.REGISTRY)
    assert got["caveat_keys_rendered"] == got["caveat_keys_total"], got["missing"]
    assert got["caveat_keys_beside"] == got["caveat_keys_total"], got["not_beside"]


def test_history_pair_figure_puts_a_knob_on_a_numeric_axis_and_labels_by_name():
    from dashboard.base.format import display_name, raw_metric_keys_visible
    from dashboard.components.history_diff import metric_rows, pair_figure

    def run(eps: float, auc: float) -> Result:
        return Result(kind="membership", config={}, seed=0,
                      metrics={"mia_auc_best": auc, "epsilon_accountant": eps})

    a, b = run(2.0, 0.6), run(8.0, 0.7)
    fig = pair_figure(["mia_auc_best", "epsilon_accountant"], a, b, ("A", "B"))
    assert all(t.type == "scatter" for t in fig.data)  # the knob is never a bar
    assert list(fig.data[0].x) == [2.0, 8.0] and fig.layout.xaxis.title.text == display_name(
        "epsilon_accountant")
    # without the knob in both runs: bars of the results only, named for a reader
    bars = pair_figure(["mia_auc_best", "epsilon_accountant"], a, None, ("A", "B"))
    assert all(t.type == "bar" for t in bars.data)
    assert list(bars.data[0].x) == [display_name("mia_auc_best")]
    rows = metric_rows(["mia_auc_best"], a, b)
    assert not raw_metric_keys_visible(json.dumps(rows, ensure_ascii=False))


def test_chance_label_and_flagged_tradeoff_points():
    from core.report.tradeoff import TradeoffPoint
    from dashboard.base import plots

    pts = [TradeoffPoint(knob=k, utility=0.8, attack=0.1 * k, attack_lo=None, attack_hi=None,
                         series="s") for k in (1.0, 2.0)]
    fig = plots.tradeoff_figure(pts, chance=0.001, flagged=((2.0, "few non-members"),))
    assert any(a.text == "chance 0.001" for a in fig.layout.annotations)
    ring = [t for t in fig.data if (t.name or "").startswith("⚠")]
    assert len(ring) == 1 and list(ring[0].x) == [0.8] and list(ring[0].y) == [0.2]


def test_tradeoff_points_carry_their_own_series_knob_and_names_keep_greek_letters():
    from core.report.tradeoff import TradeoffPoint
    from dashboard.base import plots
    from dashboard.base.format import display_name

    pts = [TradeoffPoint(knob=k, utility=0.8, attack=0.1 * k, attack_lo=None, attack_hi=None,
                         series=s) for k in (1.0, 2.0) for s in ("κ channel", "DP-SGD")]
    fig = plots.tradeoff_figure(pts, current=2.0, symbol={"κ channel": "κ", "DP-SGD": "ε"})
    texts = [t for tr in fig.data for t in (tr.text or ())] + [tr.name or "" for tr in fig.data]
    assert "κ=1" in texts and "current κ=2" in texts and not any("|" in t for t in texts)
    assert display_name("mia_loss_epsilon_lower_bound").startswith("ε")

"""The FIL runner's FIL-LiRA stage (issue #22 item 5): LiRA against the page's own release,
η against the per-example LiRA score, IRFIL on LiRA's most exposed rows, and the sentence."""

from __future__ import annotations

from core.attacks.fil_membership import eta_verdict
from core.foundation.metric_schema import unregistered
from core.runs.experiments import run

TINY = {"kind": "fisher_information", "data": {"name": "digits", "pca_dim": 8},
        "irfil": {"iterations": 2}, "attack": {"noise_trials": 3, "sigma_grid": 2,
                                               "crb_trials": 10},
        "lira": {"shadows": 8, "draws": 6}}


def test_fil_lira_stage_metrics_in_range_and_sentence_from_numbers():
    r = run(TINY)
    m = r.metrics
    assert 0.0 <= m["fil_lira_auc"] <= 1.0
    assert -1.0 <= m["fil_lira_spearman_lo"] <= m["fil_lira_spearman"] <= m[
        "fil_lira_spearman_hi"] <= 1.0
    for k in ("fil_lira_top_tpr_plain", "fil_lira_top_tpr_irfil", "fil_lira_top_overlap_eta"):
        assert 0.0 <= m[k] <= 1.0
    assert m["fil_lira_shadows"] == 8
    assert r.info["fil_lira_sentence"] == eta_verdict(
        m["fil_lira_spearman"], m["fil_lira_spearman_lo"], m["fil_lira_spearman_hi"])
    assert r.artifacts["fil_lira_score"].shape == r.artifacts["eta_example"].shape
    assert unregistered(m) == []
    off = run({**TINY, "lira": {"enabled": False}})
    assert "fil_lira_auc" not in off.metrics and "fil_lira_sentence" not in off.info


def test_verdict_reads_the_interval():
    assert eta_verdict(0.8, 0.6, 0.9).startswith("η identifies the leaking examples: yes")
    assert ": no, ρ = 0.30 [0.10, 0.50] (weakly positive" in eta_verdict(0.3, 0.1, 0.5)
    assert "distinguishable from 0" in eta_verdict(0.1, -0.02, 0.2)


def test_fil_lira_setup_is_a_caveat_key_beside_the_lira_numbers():
    """The FIL-LiRA note is a registered caveat (core.foundation.caveats ``fil_lira_setup``) qualifying the
    LiRA numbers, not a note a page picks out by its text; none without LiRA."""
    from core.foundation import caveats

    assert "fil_lira_setup" in caveats.keys_for("fisher_information")
    r = run(TINY)
    got = [c for c in r.info["caveats"] if c["key"] == "fil_lira_setup"]
    assert len(got) == 1
    c = got[0]
    assert {"fil_lira_auc", "fil_lira_spearman", "fil_lira_top_tpr_plain"} <= set(c["metrics"])
    assert c["text"].startswith("online LiRA with 8 shadow GLMs") and "6 draws" in c["text"]
    assert not c["text"].startswith("FIL-LiRA")
    # the note list keeps the sentence (the CLI and page tail), the caveat carries it
    assert any(n.endswith(c["text"]) for n in r.info["notes"])
    # re-derived for a stored Result (of_result) from the same info
    assert [x["text"] for x in caveats.collect(r.kind, r.metrics, r.info, r.config)
            if x["key"] == "fil_lira_setup"] == [c["text"]]
    off = run({**TINY, "lira": {"enabled": False}})
    assert not [x for x in off.info["caveats"] if x["key"] == "fil_lira_setup"]

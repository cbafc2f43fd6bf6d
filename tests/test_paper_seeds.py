"""The paper check over seeds: claims that read per-seed values get a Student-t interval,
Fig. 4 reads the per-seed tuned baselines when that file exists (else the one-run point with
why no interval), and every open claim is listed with its reason and counted."""

from __future__ import annotations

import json
import math
from pathlib import Path

from core.paper_check.papers import build_table, headline, open_claims
from core.paper_check.verdicts import FAILS, HOLDS, UNRESOLVED

R = "benchmarks/results"


def _put(root: Path, rel: str, obj) -> None:
    path = root / R / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def _rows(root: Path) -> dict[str, dict]:
    return {r["claim_id"]: r for r in build_table(root, cuda=False, runs=[])}


def _tappfl(root: Path, in_acc) -> None:
    """tappfl_seeds.json with sex rows at λ 0 / 1 over three seeds (``in_acc(lam, seed)``)."""
    _put(root, "tappfl_seeds.json", {"rows": [
        {"attribute": "sex", "lambda": lam, "seed": s, "in_acc": in_acc(lam, s),
         "utility": 0.85 - 0.02 * lam + 0.001 * s, "best_auc": 0.9}
        for lam in (0.0, 1.0) for s in (0, 1, 2)]})


def test_tappfl_lambda_claims_pair_seeds_and_decide_by_the_interval(tmp_path):
    root = tmp_path
    _tappfl(root, lambda lam, s: 0.75 - 0.08 * lam + 0.01 * s)
    rows = _rows(root)
    tin = rows["tappfl_lambda_in_training"]
    assert tin["verdict"] == HOLDS and tin["ours_default"]["interval"]["n"] == 3
    assert math.isclose(tin["ours_default"]["interval"]["estimate"], -0.08)
    assert rows["tappfl_lambda_utility"]["verdict"] == HOLDS
    # the in-training head gets better at λ = 1 in one seed, worse in two: the data cannot decide
    _tappfl(root, lambda lam, s: 0.75 + lam * (0.1, -0.05, -0.06)[s])
    rows = _rows(root)
    assert rows["tappfl_lambda_in_training"]["verdict"] == UNRESOLVED
    reason = {o["claim_id"]: o["reason"] for o in open_claims(list(rows.values()))["not_resolved"]}
    assert "contains 0" in reason["tappfl_lambda_in_training"]
    assert "Student-t over 3 seeds" in reason["tappfl_lambda_in_training"]


def test_fig4_reads_the_seeds_file_when_present_else_the_one_run_point(tmp_path):
    root = tmp_path
    _put(root, "tappfl_adult.json", {"tuned_baselines": {
        "dp_gaussian": {"baseline_best_utility_at_or_below_target": 0.76,
                        "tappfl_utility": 0.85}}})
    row = _rows(root)["tappfl_beats_dp_gaussian"]
    assert row["verdict"] == UNRESOLVED and row["ours_default"]["value"] == [0.76, 0.85]
    assert "tappfl_fig4_seeds" in row["why"]  # the command that gives it seeds
    opened = open_claims([row])
    assert [o["claim_id"] for o in opened["without_interval"]] == ["tappfl_beats_dp_gaussian"]
    _put(root, "tappfl_fig4_seeds.json", {"rows": [
        {"baseline": "dp_gaussian", "seed": s, "end": e, "utility": u}
        for s in (0, 1, 2) for e, u in (("tappfl", 0.85 + 0.01 * s), ("baseline", 0.70))]})
    row = _rows(root)["tappfl_beats_dp_gaussian"]
    assert row["verdict"] == HOLDS and row["ours_default"]["interval"]["n"] == 3
    assert row["ours_default"]["sources"][0].startswith("tappfl_fig4_seeds.json")
    assert open_claims([row])["without_interval"] == []


def test_kappa_vs_dpsgd_reads_one_ratio_per_seed(tmp_path):
    root = tmp_path
    key = "natural_over_dpsgd_utility_equal_psnr_per_seed"
    _put(root, "kappa_channels.json", {key: [0.90, 0.88, None, 0.91]})
    row = _rows(root)["kappa_vs_dpsgd"]
    iv = row["ours_default"]["interval"]
    assert row["verdict"] == FAILS and iv["n"] == 3 and iv["hi"] < 0  # ratio below 1
    _put(root, "kappa_channels.json", {key: [0.9, 1.2, 1.05]})
    assert _rows(root)["kappa_vs_dpsgd"]["verdict"] == UNRESOLVED


def test_property_claims_read_per_seed_values_by_aggregator(tmp_path):
    root = tmp_path

    def row(agg, lam, acc, util):
        return {"aggregation": agg, "lambda": lam, "in_training_acc_per_seed": acc,
                "fresh_mlp_acc_per_seed": acc, "utility_per_seed": util}

    _put(root, "property.json", {"rows": [
        row("mean", 0.0, [0.65, 0.64, 0.66], [0.85, 0.84, 0.85]),
        row("mean", 0.75, [0.27, 0.30, 0.26], [0.85, 0.84, 0.85]),
        row("mean", 1.0, [0.25, 0.26, 0.25], [0.82, 0.81, 0.83]),
        row("max", 0.0, [0.60, 0.62, 0.61], [0.85, 0.84, 0.85]),
        row("max", 0.75, [0.61, 0.60, 0.62], [0.85, 0.84, 0.85])]})
    rows = _rows(root)
    assert rows["inf2guard_pia_in_training"]["verdict"] == HOLDS
    assert rows["inf2guard_pia_utility"]["verdict"] == HOLDS
    mx = rows["inf2guard_pia_max_aggregator"]
    assert mx["verdict"] == UNRESOLVED and mx["ours_default"]["value"][0] == 0.61  # max rows
    assert mx["ours_default"]["interval"]["n"] == 3


def test_headline_counts_claims_without_interval_from_the_rows(tmp_path):
    rows = list(_rows(tmp_path).values())  # no result file: nothing has an interval
    h = headline(rows)
    opened = open_claims(rows)
    paper = [r for r in rows if r["origin"] == "paper"]
    assert h["paper_claims_without_interval"] == len(opened["without_interval"]) == len(paper)
    assert h["paper_claims_not_resolved"] == len(opened["not_resolved"]) == len(paper)
    assert all(o["reason"] for o in opened["not_resolved"])
    _tappfl(tmp_path, lambda lam, s: 0.75 - 0.08 * lam + 0.01 * s)
    h2 = headline(list(_rows(tmp_path).values()))
    # the two sex claims now have an interval; the fresh-attacker claim reads marital-status
    # rows, which this file lacks
    assert h2["paper_claims_without_interval"] == h["paper_claims_without_interval"] - 2


def test_benchmark_helpers_per_seed(tmp_path):
    from benchmarks.kappa_channels import per_seed_equal_psnr
    from benchmarks.tappfl_seeds import _paired_means

    rows = [{"attribute": "sex", "lambda": lam, "seed": s, "in_acc": 0.7 - 0.1 * lam,
             "utility": 0.8, "best_auc": 0.9} for lam in (0.0, 1.0) for s in (0, 1, 2)]
    m = _paired_means(rows)
    assert math.isclose(m["sex_in_acc_lambda1_minus_lambda0"], -0.1)
    assert m["marital_status_best_auc_lambda1_minus_lambda0"] is None
    gl = []
    for s in (0, 1):
        for k, p, u in ((0.01, 5.0, 0.80), (1.0, 30.0, 0.92)):
            gl.append({"seed": s, "defense": "natural", "kappa_per_dim": k,
                       "target_epsilon": None, "psnr_median": p, "utility": u})
        for e, p, u in ((1.0, 5.0, 0.85), (8.0, 30.0, 0.90)):
            gl.append({"seed": s, "defense": "dp_sgd", "kappa_per_dim": None,
                       "target_epsilon": e, "psnr_median": p + 40 * s, "utility": u})
    ratios = per_seed_equal_psnr(gl)
    assert ratios[1] is None  # seed 1's curves reach no common PSNR
    assert ratios[0] is not None and 0.9 < ratios[0] < 1.05

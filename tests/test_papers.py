"""Paper check: the claims table from fixture result files, verdicts decided by intervals at
the largest scale measured, 'not measured' where a number is missing, the page section on CPU
with the CUDA presets marked as estimates, ``privlab papers --json`` and ``--preset``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from core.paper_check import papers
from core.paper_check.papers import (
    CLAIMS,
    NOT_MEASURED,
    PRESETS,
    build_table,
    headline,
    preset_config,
)
from core.paper_check.verdicts import FAILS, HOLDS, UNRESOLVED


def _put(root: Path, rel: str, obj) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def _fixture_root(tmp_path: Path) -> Path:
    """Result files for three claims: Inf2Guard λ (two seeds, a resolved fall: holds),
    Inf2Guard vs DP-SGD (three seeds, Inf2Guard below: does not hold), FIL ρ at the default
    scale (holds); the other claims' files are absent."""
    root = tmp_path / "repo"
    _put(root, "benchmarks/results/faithfulness_raw/repr_mia_runner.json", {"summary": {
        "0": {"representation_lira_auc": {"values": [0.80, 0.82]}},
        "0.5": {"representation_lira_auc": {"values": [0.60, 0.61]}}}})
    _put(root, "benchmarks/results/equal_privacy.json", {
        "at_equal_lira_auc": {"inf2guard": {"knob": 0.9}, "dpsgd": {"knob": 8.0}},
        "points": [{"defense": "Inf2Guard (λ)", "knob": 0.9, "utility_per_seed": [0.4, 0.42, 0.41]},
                   {"defense": "DP-SGD (Opacus)", "knob": 8.0,
                    "utility_per_seed": [0.70, 0.71, 0.69]}]})
    _put(root, "benchmarks/results/faithfulness_raw/fil_lira_runner.json", {"summary": {
        "fil_lira_spearman": {"mean": 0.25, "lo": 0.1, "hi": 0.4}}})
    _put(root, "benchmarks/results/papers.json", {"preset_costs": {
        pid: {"seconds_per_step": 0.5, "preset_seconds_per_step": 0.01} for pid in PRESETS}})
    return root


def _rows(root: Path, **kw) -> dict[str, dict]:
    return {r["claim_id"]: r for r in build_table(root, cuda=False, **kw)}


def test_table_builds_from_fixtures_with_interval_verdicts(tmp_path):
    rows = _rows(_fixture_root(tmp_path))
    assert set(rows) == {c.claim_id for c in CLAIMS}
    lam = rows["inf2guard_mia_lambda"]
    assert lam["verdict"] == HOLDS and lam["ours_default"]["value"] == [0.81, 0.605]
    iv = lam["ours_default"]["interval"]
    assert iv["hi"] < 0 and iv["n"] == 2 and "Student-t" in iv["method"]
    assert "0.810" in lam["ours_default"]["text"] and "0.605" in lam["ours_default"]["text"]
    assert lam["paper_number"].startswith("CIFAR-10")  # the paper's number beside ours
    dp = rows["inf2guard_mia_vs_dpsgd"]
    assert dp["verdict"] == FAILS  # Inf2Guard's utility below DP-SGD's in every seed
    # a claim whose file is absent: not resolved, saying it is not measured and how to measure
    miss = rows["kappa_psnr"]
    assert miss["verdict"] == UNRESOLVED and miss["decided_by"] is None
    assert miss["ours_default"]["text"].startswith(NOT_MEASURED)
    assert "python -m benchmarks kappa_channels" in miss["ours_default"]["text"]
    h = headline(list(rows.values()))
    n_paper = sum(c.origin == "paper" for c in CLAIMS)
    assert h["paper_claims_checked"] == n_paper
    assert (h["paper_claims_holds"], h["paper_claims_does_not_hold"]) == (1, 1)
    assert h["paper_claims_holds"] + h["paper_claims_does_not_hold"] \
        + h["paper_claims_not_resolved"] == n_paper
    assert h["claims_with_interval_verdict"] == n_paper
    assert h["paper_claims_with_interval"] == 2
    assert h["own_findings"] == sum(c.origin == "own" for c in CLAIMS)


def test_overlapping_seeds_and_points_read_not_resolved(tmp_path):
    root = _fixture_root(tmp_path)
    _put(root, "benchmarks/results/faithfulness_raw/repr_mia_runner.json", {"summary": {
        "0": {"representation_lira_auc": {"values": [0.72, 0.73]}},
        "0.5": {"representation_lira_auc": {"values": [0.68, 0.71]}}}})
    _put(root, "benchmarks/results/tappfl_adult.json", {"tuned_baselines": {"pruning": {
        "baseline_best_utility_at_or_below_target": 0.5, "tappfl_utility": 0.9}}})
    rows = _rows(root)
    lam = rows["inf2guard_mia_lambda"]
    assert lam["verdict"] == UNRESOLVED and lam["ours_default"]["interval"]["lo"] < 0 \
        < lam["ours_default"]["interval"]["hi"]
    # a large point difference with no interval is still not a verdict, and says why
    tin = rows["tappfl_beats_pruning"]
    assert tin["ours_default"]["value"] == [0.5, 0.9] and tin["verdict"] == UNRESOLVED
    assert "one tuned run" in tin["why"] and "no interval" in tin["ours_default"]["text"]


def test_the_larger_scale_decides_even_against_a_resolved_smaller_one(tmp_path):
    root = _fixture_root(tmp_path)
    fil = _rows(root)["fil_identifies_leakers"]
    assert fil["origin"] == "own" and fil["verdict"] == HOLDS  # only the small scale exists
    adult = "benchmarks/results/faithfulness_raw/fil_lira_adult.json"
    _put(root, adult, {"rows": [{"eta_target": 3.2, "spearman_eta_lira_score": {
        "rho": -0.014, "lo": -0.025, "hi": -0.002}}]})
    fil = _rows(root)["fil_identifies_leakers"]
    assert fil["verdict"] == FAILS and fil["decided_by"].startswith("UCI Adult")
    assert [c["verdict"] for c in fil["cells"]] == [HOLDS, FAILS]
    _put(root, adult, {"rows": [{"eta_target": 3.2, "spearman_eta_lira_score": {
        "rho": 0.01, "lo": -0.02, "hi": 0.04}}]})
    assert _rows(root)["fil_identifies_leakers"]["verdict"] == UNRESOLVED


def test_cpu_preset_cells_are_estimates_from_measured_costs(tmp_path):
    root = _fixture_root(tmp_path)
    rows = _rows(root)
    big = rows["inf2guard_mia_lambda"]["ours_largest"]
    p = PRESETS["inf2guard_mia_cifar10"]
    assert big["estimate"] is True and big["holds"] is None
    assert big["text"].startswith(NOT_MEASURED) and "CPU only" in big["text"]
    assert math.isclose(big["estimate_seconds"], 0.5 * p.steps)
    assert "privlab papers --preset inf2guard_mia_cifar10" in big["command"]
    # the preset trains the paper's architecture itself: no smaller stand-in model to time
    assert "the preset trains" not in big["text"] and "s per SGD step" in big["text"]
    assert preset_config("inf2guard_mia_cifar10").model.arch == "inf2guard_mia"
    # an estimate is not a measurement: the default scale still decides
    assert rows["inf2guard_mia_lambda"]["decided_by"] == CLAIMS[
        [c.claim_id for c in CLAIMS].index("inf2guard_mia_lambda")].scales[0].setting
    rows = _rows(root, costs={})
    assert "estimate not measured" in rows["inf2guard_mia_lambda"]["ours_largest"]["text"]


def test_every_preset_validates_and_points_at_paper_data():
    for pid, p in PRESETS.items():
        cfg = papers.preset_config(pid)
        assert cfg.data.name == p.data in ("cifar10", "celeba")
        assert cfg.device == "auto"  # CUDA when present
        assert p.steps > 0 and len(p.batch_shape) == 4


def _section(root: str) -> None:
    from pathlib import Path

    from dashboard.components.paper_check import paper_check_section

    paper_check_section(Path(root), cuda=False)


def test_section_renders_the_three_counts_and_a_narrow_table(tmp_path):
    from streamlit.testing.v1 import AppTest

    from dashboard.components.paper_check import COLUMNS

    root = _fixture_root(tmp_path)
    at = AppTest.from_function(_section, kwargs={"root": str(root)}, default_timeout=30).run()
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader] == ["Paper check"]
    assert [m.label for m in at.metric] == ["holds", "does not hold", "not resolved"]
    assert [m.value for m in at.metric][:2] == ["1", "1"]
    paper_df, own_df = at.table[0].value, at.table[1].value
    assert tuple(paper_df.columns) == COLUMNS and len(COLUMNS) <= 5  # fits 1280 px
    assert len(paper_df) == sum(c.origin == "paper" for c in CLAIMS)
    assert len(own_df) == sum(c.origin == "own" for c in CLAIMS)
    assert set(paper_df["verdict"]) == {HOLDS, FAILS, UNRESOLVED}
    i = list(paper_df["claim"]).index(next(c.statement for c in CLAIMS
                                          if c.claim_id == "inf2guard_mia_lambda"))
    assert "Δ" in paper_df["ours (largest scale measured)"][i]
    assert any("estimate" in c.value for c in at.caption)


def test_cli_papers_json_and_preset(capsys):
    from cli.main import main

    assert main(["papers", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["headline"]) >= {"paper_claims_holds", "paper_claims_does_not_hold",
                                    "paper_claims_not_resolved", "claims_with_interval_verdict"}
    assert len(out["rows"]) == len(CLAIMS)
    assert {r["paper"] for r in out["rows"]} == {"TAPPFL", "Inf2Guard", "κ channel", "FIL"}
    assert main(["papers"]) == 0
    text = capsys.readouterr().out
    assert "Our own findings" in text and "hold," in text.splitlines()[-1]
    assert main(["papers", "--preset", "kappa_lenet_cifar10"]) == 0
    import yaml

    from core.config.schema import parse_config

    cfg = parse_config(yaml.safe_load(capsys.readouterr().out))
    assert cfg.data.name == "cifar10" and cfg.train.model == "lenet5"
    assert main(["papers", "--preset", "nope"]) == 2


def _preset_run(pid: str, key: str, knob: tuple[str, str], value: float, metrics: dict,
                epochs: int | None = None) -> dict:
    cfg = papers.preset_config(pid).model_dump(mode="json")
    cfg[knob[0]][knob[1]] = value
    if epochs is not None:
        cfg["train"]["epochs"] = epochs
    return {"key": key, "kind": cfg["kind"], "config": cfg, "metrics": metrics}


def test_stored_preset_runs_are_the_largest_scale_and_smaller_runs_are_not(tmp_path):
    root = _fixture_root(tmp_path)
    knob = ("defense", "tradeoff_lambda")
    runs = [_preset_run("inf2guard_mia_cifar10", "a" * 64, knob, 0.75,
                        {"mia_representation_auc": 0.52}),
            _preset_run("inf2guard_mia_cifar10", "b" * 64, knob, 0.0,
                        {"mia_representation_auc": 0.69})]
    row = _rows(root, runs=runs)["inf2guard_mia_lambda"]
    big = row["ours_largest"]
    assert big["estimate"] is False and big["value"] == [0.69, 0.52]
    assert "bbbbbbbb" in big["text"] and "aaaaaaaa" in big["text"]
    # one run per end is a point: the preset, being the largest scale, decides "not resolved"
    assert row["verdict"] == UNRESOLVED and row["decided_by"].startswith("paper-scale preset")
    # the same kind on the same data at fewer epochs is not the preset: still an estimate
    small = [_preset_run("inf2guard_mia_cifar10", "c" * 64, knob, v, {"mia_representation_auc": m},
                         epochs=5) for v, m in ((0.75, 0.5), (0.0, 0.7))]
    row = _rows(root, runs=small)["inf2guard_mia_lambda"]
    assert row["ours_largest"]["estimate"] is True and row["verdict"] == HOLDS


@pytest.mark.parametrize("pid", ["inf2guard_mia_cifar10", "inf2guard_pia_celeba"])
def test_preset_data_absent_is_one_clear_error_and_nothing_downloads(pid, tmp_path, monkeypatch):
    import core.data.files
    from core.data import DataError, load_dataset

    monkeypatch.setenv("PRIVLAB_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(core.data.files, "network_available", lambda *a, **k: False)
    cfg = papers.preset_config(pid)
    with pytest.raises(DataError) as err:
        load_dataset(cfg.data, 0)
    msg = str(err.value)
    assert cfg.data.name in msg and str(tmp_path / "empty") in msg
    assert not (tmp_path / "empty").exists()  # nothing created, nothing fetched


def test_fig14_channel_ordering_reads_every_seed_and_kappa_cell(tmp_path):
    root = _fixture_root(tmp_path)

    def rows(white_over_natural):
        out = []
        for seed in (0, 1, 2):
            for i, k in enumerate((0.01, 0.1, 1.0)):
                nat = 0.1 * (i + 1) * (1 + 0.05 * seed)
                out += [{"part": "defended", "seed": seed, "defense": "natural",
                         "kappa_per_dim": k, "mse": nat},
                        {"part": "defended", "seed": seed, "defense": "white",
                         "kappa_per_dim": k, "mse": nat * white_over_natural(seed, i)}]
        return {"rows": out}

    _put(root, "benchmarks/results/kappa_channels.json", rows(lambda s, i: 2.0 + 0.1 * i))
    row = _rows(root)["kappa_white_over_natural_mse"]
    assert row["verdict"] == HOLDS and row["ours_default"]["interval"]["n"] == 9
    assert math.isclose(row["ours_default"]["value"][1], (2.0 * 2.1 * 2.2) ** (1 / 3))
    # the ratio flips with κ inside every seed: the seed means agree, the cells do not
    _put(root, "benchmarks/results/kappa_channels.json", rows(lambda s, i: (0.5, 1.1, 2.0)[i]))
    assert _rows(root)["kappa_white_over_natural_mse"]["verdict"] == UNRESOLVED
    # wholly below 1: the paper's ordering does not hold
    _put(root, "benchmarks/results/kappa_channels.json", rows(lambda s, i: 0.8 - 0.05 * i))
    assert _rows(root)["kappa_white_over_natural_mse"]["verdict"] == FAILS

"""Paper check (issue #22 item 6): the claims table from fixture result files, 'not measured'
where a number is missing, the page section on CPU with the CUDA presets marked as estimates,
``privlab papers --json`` and ``--preset``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from core import papers
from core.papers import CLAIMS, NOT_MEASURED, PRESETS, Ref, build_table, headline, read_ref


def _put(root: Path, rel: str, obj) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def _fixture_root(tmp_path: Path) -> Path:
    """Result files for three claims: Inf2Guard λ (holds), Inf2Guard vs DP-SGD (fails) and
    FIL ρ (holds); the other claims' files are absent."""
    root = tmp_path / "repo"
    _put(root, "benchmarks/results/faithfulness_raw/repr_mia.json", {"summary": {
        "0": {"representation_lira_auc": {"mean": 0.80, "lo": 0.75, "hi": 0.85}},
        "0.5": {"representation_lira_auc": {"mean": 0.60, "lo": 0.55, "hi": 0.65}}}})
    _put(root, "benchmarks/results/equal_privacy.json", {"headline": {
        "dpsgd_utility_at_equal_lira_auc": 0.7, "inf2guard_utility_at_equal_lira_auc": 0.4}})
    _put(root, "benchmarks/results/faithfulness_raw/fil_lira_digits.json",
         {"headline": {"fil_lira_spearman": 0.25}})
    _put(root, "benchmarks/results/papers.json", {"preset_costs": {
        pid: {"seconds_per_step": 0.5, "preset_seconds_per_step": 0.01} for pid in PRESETS}})
    return root


def test_read_ref_walks_keys_indices_and_row_filters(tmp_path):
    _put(tmp_path, "r.json", {"rows": [{"lam": 0, "seed": 0, "v": 1.0},
                                       {"lam": 0, "seed": 1, "v": 3.0},
                                       {"lam": 1, "seed": 0, "v": 9.0},
                                       {"lam": 1, "seed": 1, "v": None}],
                              "h": {"flag": True, "nan": float("nan"), "list": [5, 6]}})
    assert read_ref(Ref("r.json", ("rows", (("lam", 0),), "v")), tmp_path) == 2.0  # mean
    assert read_ref(Ref("r.json", ("rows", (("lam", 1),), "v")), tmp_path) == 9.0  # None skipped
    assert read_ref(Ref("r.json", ("rows", (("lam", 2),), "v")), tmp_path) is None
    assert read_ref(Ref("r.json", ("h", "flag")), tmp_path) == 1.0
    assert read_ref(Ref("r.json", ("h", "nan")), tmp_path) is None  # NaN reads as missing
    assert read_ref(Ref("r.json", ("h", "list", 1)), tmp_path) == 6.0
    assert read_ref(Ref("r.json", ("h", "absent")), tmp_path) is None
    assert read_ref(Ref("missing.json", ("h",)), tmp_path) is None


def test_table_builds_from_fixtures_and_missing_reads_not_measured(tmp_path):
    root = _fixture_root(tmp_path)
    rows = {r["claim_id"]: r for r in build_table(root, cuda=False)}
    assert set(rows) == {c.claim_id for c in CLAIMS}
    lam = rows["inf2guard_mia_lambda"]
    assert lam["direction_holds"] is True and lam["ours_default"]["value"] == [0.8, 0.6]
    assert "0.800" in lam["ours_default"]["text"] and "0.600" in lam["ours_default"]["text"]
    assert lam["paper_number"].startswith("CIFAR-10")  # the paper's number beside ours
    dp = rows["inf2guard_mia_vs_dpsgd"]
    assert dp["direction_holds"] is False  # 0.4 < 0.7: the claim fails and says so
    assert rows["fil_identifies_leakers"]["direction_holds"] is True
    # a claim whose file is absent: not measured, with the command that measures it
    miss = rows["kappa_psnr"]
    assert miss["direction_holds"] is None
    assert miss["ours_default"]["text"].startswith(NOT_MEASURED)
    assert "python -m benchmarks.gradient_leakage" in miss["ours_default"]["text"]
    h = headline(list(rows.values()))
    assert h == {"paper_claims_checked": 3, "paper_claims_direction_holds": 2,
                 "paper_claims_declared": len(CLAIMS), "paper_claims_within_intervals": 0}
    assert lam["ours_default"]["resolved"] is True and "intervals apart" in lam["ours_default"]["text"]


def test_overlapping_intervals_say_the_direction_is_not_resolved(tmp_path):
    root = _fixture_root(tmp_path)
    _put(root, "benchmarks/results/faithfulness_raw/repr_mia.json", {"summary": {
        "0": {"representation_lira_auc": {"mean": 0.70, "lo": 0.60, "hi": 0.80}},
        "0.5": {"representation_lira_auc": {"mean": 0.65, "lo": 0.55, "hi": 0.75}}}})
    rows = build_table(root, cuda=False)
    lam = next(r for r in rows if r["claim_id"] == "inf2guard_mia_lambda")
    assert lam["direction_holds"] is True and lam["ours_default"]["resolved"] is False
    assert "not resolved" in lam["ours_default"]["text"]
    assert headline(rows)["paper_claims_within_intervals"] == 1


def test_cpu_preset_cells_are_estimates_from_measured_costs(tmp_path):
    root = _fixture_root(tmp_path)
    rows = {r["claim_id"]: r for r in build_table(root, cuda=False)}
    big = rows["inf2guard_mia_lambda"]["ours_largest"]
    p = PRESETS["inf2guard_mia_cifar10"]
    assert big["estimate"] is True and big["holds"] is None
    assert big["text"].startswith(NOT_MEASURED) and "CPU only" in big["text"]
    assert math.isclose(big["estimate_seconds"], 0.5 * p.steps)
    assert "privlab papers --preset inf2guard_mia_cifar10" in big["command"]
    # the preset's own (smaller) model is timed too and said apart from the paper's
    assert "MLP encoder" in big["text"] and "0.01 s/step" in big["text"]
    # without measured costs the cell says how to measure them, never a made-up time
    rows = {r["claim_id"]: r for r in build_table(root, costs={}, cuda=False)}
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


def test_section_renders_on_cpu_with_presets_marked_as_estimates(tmp_path):
    from streamlit.testing.v1 import AppTest

    from dashboard.components.paper_check import ESTIMATE_MARK

    root = _fixture_root(tmp_path)
    at = AppTest.from_function(_section, kwargs={"root": str(root)}, default_timeout=30).run()
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader] == ["Paper check"]
    df = at.dataframe[0].value
    assert len(df) == len(CLAIMS)
    big = list(df["ours (largest preset)"])
    assert any(c.startswith(ESTIMATE_MARK) for c in big)
    # a preset-backed claim's cell is an estimate; the measured default beside it is not
    i = list(df["claim"]).index(next(c.statement for c in CLAIMS
                                    if c.claim_id == "inf2guard_mia_lambda"))
    assert big[i].startswith(ESTIMATE_MARK) and "≈" in big[i]
    assert not df["ours (default)"][i].startswith(ESTIMATE_MARK)
    assert set(df["direction"]) == {"holds", "does not hold", NOT_MEASURED}
    assert any("estimate" in c.value for c in at.caption)


def test_cli_papers_json_and_preset(capsys):
    from core.cli import main

    assert main(["papers", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["headline"]) >= {"paper_claims_checked", "paper_claims_direction_holds"}
    assert len(out["rows"]) == len(CLAIMS)
    assert {r["paper"] for r in out["rows"]} == {"TAPPFL", "Inf2Guard", "κ channel", "FIL"}
    assert main(["papers", "--preset", "kappa_lenet_cifar10"]) == 0
    import yaml

    from core.config import parse_config

    text = capsys.readouterr().out
    cfg = parse_config(yaml.safe_load(text))
    assert cfg.data.name == "cifar10" and cfg.train.model == "lenet5"
    assert main(["papers", "--preset", "nope"]) == 2


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.claim_id)
def test_every_claim_names_where_ours_is_read(claim):
    sides = [claim.base, claim.test]
    assert any(s.refs for s in sides)  # at least one side is a measurement, not a constant
    for s in sides:
        assert s.refs or s.constant is not None
        for r in s.refs:
            assert r.file.startswith("benchmarks/results/") and r.file.endswith(".json")
    assert claim.relation in ("<", ">", "=") and claim.command


def _preset_run(pid: str, key: str, knob: tuple[str, str], value: float, metrics: dict,
                epochs: int | None = None) -> dict:
    cfg = papers.preset_config(pid).model_dump(mode="json")
    cfg[knob[0]][knob[1]] = value
    if epochs is not None:
        cfg["train"]["epochs"] = epochs
    return {"key": key, "kind": cfg["kind"], "config": cfg, "metrics": metrics}


def test_stored_preset_runs_answer_the_largest_cell_and_smaller_runs_do_not(tmp_path):
    root = _fixture_root(tmp_path)
    knob = ("defense", "tradeoff_lambda")
    runs = [_preset_run("inf2guard_mia_cifar10", "a" * 64, knob, 0.75,
                        {"mia_representation_auc": 0.52}),
            _preset_run("inf2guard_mia_cifar10", "b" * 64, knob, 0.0,
                        {"mia_representation_auc": 0.69})]
    rows = {r["claim_id"]: r for r in build_table(root, cuda=False, runs=runs)}
    big = rows["inf2guard_mia_lambda"]["ours_largest"]
    assert big["estimate"] is False and big["holds"] is True and big["value"] == [0.69, 0.52]
    assert "bbbbbbbb" in big["text"] and "aaaaaaaa" in big["text"]
    # the same kind on the same data at fewer epochs is not the preset: still an estimate
    small = [_preset_run("inf2guard_mia_cifar10", "c" * 64, knob, v, {"mia_representation_auc": m},
                         epochs=5) for v, m in ((0.75, 0.5), (0.0, 0.7))]
    rows = {r["claim_id"]: r for r in build_table(root, cuda=False, runs=small)}
    assert rows["inf2guard_mia_lambda"]["ours_largest"]["estimate"] is True
    # the default-setting column and the headline never read the store
    assert rows["inf2guard_mia_lambda"]["ours_default"]["value"] == [0.8, 0.6]


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

"""The verdicts recorded in benchmarks/results/papers.json: recomputed from the stored results,
a row whose verdict changed without being recorded fails; the counts in papers.json and
trust.json; one source per figure across papers.json and faithfulness.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmarks import faithfulness, papers_check
from core.paper_check import arch as paper_arch
from core.paper_check.claims import CLAIMS, PAPER
from core.paper_check.papers import (
    PAPERS_JSON,
    ROOT,
    TRUST_KEYS,
    build_table,
    headline,
    recorded_arch_verdicts,
    recorded_verdicts,
    unrecorded_arch_changes,
    unrecorded_changes,
)

RESULTS = ROOT / "benchmarks" / "results"


def test_every_verdict_is_recorded_in_papers_json():
    rows = build_table(ROOT, cuda=False, runs=[])
    changes = unrecorded_changes(rows, recorded_verdicts(ROOT))
    assert not changes, ("verdicts changed without being recorded; run `python -m "
                         "benchmarks.papers_check --verdicts` and commit papers.json: "
                         + "; ".join(changes))


def test_every_paper_architecture_verdict_is_recorded_in_papers_json():
    rows = build_table(ROOT, cuda=False, runs=[])
    changes = unrecorded_arch_changes(rows, recorded_arch_verdicts(ROOT))
    assert not changes, ("paper-architecture verdicts changed without being recorded; run "
                         "`python -m benchmarks.papers_check --verdicts` and commit papers.json: "
                         + "; ".join(changes))
    data = json.loads((ROOT / PAPERS_JSON).read_text())
    ah = paper_arch.headline(rows, PAPER)
    assert {k: data["paper_arch"][k] for k in ah} == ah
    for r in data["rows"]:  # per claim: arch, width, data, verdict, interval, seeds, seconds
        assert set(papers_check.ARCH_KEYS) <= set(r["paper_arch"]), r["claim_id"]
        assert r["paper_arch_differs"] == (r["paper_arch"]["measured"]
                                           and r["paper_arch"]["verdict"] != r["verdict"])
    models = json.loads((RESULTS / "models.json").read_text())["headline"]
    assert {k: models[k] for k in papers_check.MODELS_KEYS} == {
        k: ah[k] for k in papers_check.MODELS_KEYS}


def test_recorded_counts_match_the_rows_and_trust_json():
    data = json.loads((ROOT / PAPERS_JSON).read_text())
    h = headline(build_table(ROOT, cuda=False, runs=[]))
    assert data["headline"] == {k: h[k] for k in papers_check.HEADLINE_KEYS}
    trust = json.loads((RESULTS / "trust.json").read_text())["headline"]
    assert {k: trust[k] for k in TRUST_KEYS} == {k: h[k] for k in TRUST_KEYS}
    assert (trust["paper_claims_holds"] + trust["paper_claims_does_not_hold"]
            + trust["paper_claims_not_resolved"]) == h["paper_claims_checked"]
    assert trust["claims_with_interval_verdict"] == h["paper_claims_checked"]


def _copy_results(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(RESULTS, root / "benchmarks" / "results")
    return root


def test_a_flipped_result_fails_until_it_is_recorded_and_logged(tmp_path):
    root = _copy_results(tmp_path)
    assert not unrecorded_changes(build_table(root, cuda=False, runs=[]), recorded_verdicts(root))
    # the Adult view now ranks like LiRA: the larger scale flips the own finding to "holds"
    path = root / "benchmarks/results/faithfulness_raw/fil_lira_adult.json"
    doc = json.loads(path.read_text())
    for r in doc["rows"]:
        r["spearman_eta_lira_score"] = {"rho": 0.3, "lo": 0.2, "hi": 0.4}
    path.write_text(json.dumps(doc))
    changes = unrecorded_changes(build_table(root, cuda=False, runs=[]), recorded_verdicts(root))
    assert len(changes) == 1 and changes[0].startswith("fil_identifies_leakers")
    out = papers_check.record(root)
    assert out["verdict_changes"][-1]["claim_id"] == "fil_identifies_leakers"
    assert out["verdict_changes"][-1]["to"] == "holds"
    assert "preset_costs" in out  # the timed costs are kept, not re-measured
    assert not unrecorded_changes(build_table(root, cuda=False, runs=[]), recorded_verdicts(root))
    trust = json.loads((root / "benchmarks/results/trust.json").read_text())
    assert set(TRUST_KEYS) <= set(trust["headline"])
    # models.json: only the two paper-architecture keys are written, the others kept
    before = json.loads((RESULTS / "models.json").read_text())["headline"]
    after = json.loads((root / "benchmarks/results/models.json").read_text())["headline"]
    assert {k: v for k, v in after.items() if k not in papers_check.MODELS_KEYS} == {
        k: v for k, v in before.items() if k not in papers_check.MODELS_KEYS}
    # the two keys' values are the recorded ones: the file is rewritten byte for byte in its
    # own encoding (UTF-8 or ASCII escapes, final newline or not)
    assert (root / "benchmarks/results/models.json").read_bytes() == (
        RESULTS / "models.json").read_bytes()


def test_one_source_per_figure_across_papers_and_faithfulness():
    by_id = {c.claim_id: c for c in CLAIMS}
    reads = {
        "repr_mia_undefended": by_id["inf2guard_mia_lambda"].scales[0].measure.file,
        "fil_lira_spearman": by_id["fil_identifies_leakers"].scales[0].measure.file,
    }
    assert reads == faithfulness.FIGURE_SOURCES
    faith = json.loads((RESULTS / "faithfulness.json").read_text())
    for key, file in faithfulness.FIGURE_SOURCES.items():
        assert faith["sources"][key].startswith(file)
    # the published ρ is the FIL runner's, the one the paper check shows at that scale
    runner = json.loads((RESULTS / faithfulness.FIGURE_SOURCES["fil_lira_spearman"]).read_text())
    assert faith["headline"]["fil_lira_spearman"] == runner["headline"]["fil_lira_spearman"]
    row = next(r for r in build_table(ROOT, cuda=False, runs=[])
               if r["claim_id"] == "fil_identifies_leakers")
    assert row["cells"][0]["value"][1] == runner["summary"]["fil_lira_spearman"]["mean"]

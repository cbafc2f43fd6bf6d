"""Every figure shown from a committed result file names the engine and commit that made it,
and one made by another engine is marked with the command that refreshes it
(:mod:`core.foundation.provenance`)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from core.engine import costs as model_costs
from core.foundation import provenance
from core.foundation.fingerprint import engine_id
from core.paper_check import provenance_scan
from core.paper_check.claims import CLAIMS
from core.paper_check.papers import PAPERS_JSON

ROOT = provenance.ROOT
RESULTS = ROOT / provenance.RESULTS


def read_files() -> set[str]:
    """Every result file the paper check and the pages read: each claim's measures and
    paper-architecture file, the preset costs, the cost model's step rates."""
    out = {Path(PAPERS_JSON).name, "gpu.json", "models.json", "gpu.cuda.json"}
    for c in CLAIMS:
        for m in [s.measure for s in c.scales] + ([c.arch.measure] if c.arch else []):
            for one in getattr(m, "measures", (m,)):  # FirstMeasured: each of its readers
                out.update(f for f in [getattr(one, "file", None), *getattr(one, "files", ())]
                           if f)
        if c.arch and c.arch.file:
            out.add(c.arch.file)
    return {f for f in out if (RESULTS / f).is_file()}


def test_every_read_file_records_its_provenance() -> None:
    files = read_files()
    assert len(files) >= 15  # the claims' files, papers.json and the cost model's
    lacking = [f for f in sorted(files) if not provenance.origin(f).recorded]
    assert lacking == [], f"result files shown without provenance: {lacking}"
    for f in files:
        p = json.loads((RESULTS / f).read_text())["provenance"]
        assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", p["commit"]), f
        # an engine id is never invented: a back-filled file says it is unknown
        assert p["engine_id"] or p["engine_note"] == provenance.UNKNOWN_ENGINE, f


def test_the_scan_covers_the_read_files_and_finds_nothing_unmarked() -> None:
    figs = provenance_scan.shown_figures()
    shown = {f for _, fs in figs for f in fs}
    assert shown >= read_files() - {"gpu.json", "gpu.cuda.json"}
    s = provenance_scan.scan()
    assert s["shown_figures"] == len(figs) > 50
    assert s["shown_figures_without_provenance"] == 0
    assert s["stale_figures_unmarked"] == 0
    for text, _ in figs:
        assert "measured here" not in text and "benchmarks/results" not in text


def test_a_stale_file_is_marked_and_a_missing_block_is_counted(tmp_path) -> None:
    root = tmp_path
    shutil.copytree(RESULTS, root / provenance.RESULTS)
    path = root / provenance.RESULTS / "tappfl_adult.json"
    doc = json.loads(path.read_text())
    doc["provenance"]["commit"] = "a" * 40
    path.write_text(json.dumps(doc))
    mark = provenance.origin("tappfl_adult.json", root).mark()
    assert mark == ("made by an older engine on aaaaaaaaaa; refresh with: "
                    "`python -m benchmarks tappfl_adult`")
    assert any(mark in t for t, fs in provenance_scan.shown_figures(root) if "tappfl_adult.json" in fs)
    # the same file made by the running engine carries no mark
    doc["provenance"]["engine_id"] = engine_id()
    path.write_text(json.dumps(doc) + " ")  # a new version of the file
    assert provenance.origin("tappfl_adult.json", root).mark() == ""
    del doc["provenance"]
    path.write_text(json.dumps(doc))
    assert provenance_scan.scan(root)["shown_figures_without_provenance"] >= 1


def test_the_cost_caption_says_where_its_rate_was_measured() -> None:
    got = model_costs.cpu_rate("mlp")
    assert got is not None, "benchmarks/results/models.json (committed) holds the MLP's step rate"
    _, what, files = got
    assert files and "another machine" in what and "measured here" not in what
    assert "benchmarks/results" not in what
    assert provenance.STALE in what or provenance.origin(files[0]).current


def test_the_harness_stamps_every_file(tmp_path, monkeypatch) -> None:
    import benchmarks.__main__ as H

    monkeypatch.setitem(H.BENCHMARKS, "tiny", "tests.test_provenance:_tiny")
    assert H.main(["tiny", "--results-dir", str(tmp_path)]) == 0
    p = json.loads((tmp_path / "tiny.json").read_text())["provenance"]
    assert p["engine_id"] == engine_id() and p["refresh"] == "python -m benchmarks tiny"
    assert len(p["load_average_1_5_15"]) == 3 and p["commit"]


def _tiny(quick: bool = False) -> dict:
    return {"name": "tiny", "headline": {"n": 3}, "rows": []}

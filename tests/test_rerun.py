"""``python -m benchmarks rerun``: a committed headline rerun on the current engine, each figure
checked against its noise, the committed file untouched unless --write."""

from __future__ import annotations

import json

import benchmarks.rerun as R
from benchmarks import BENCHMARKS

NOISE = {"rate": 0.5}  # this module stands in for a benchmark declaring its noise


def fake(quick: bool = False) -> dict:
    return {"name": "fake", "rows": [], "headline": {
        "count": 3, "speed": 1.05, "rate": 1.4, "auc": 0.7, "auc_interval": [0.65, 0.75]}}


def test_noise_rules() -> None:
    h = {"n": 3, "t": 2.5, "auc": 0.7, "auc_ci": [0.6, 0.8], "names": ["a"]}
    assert R.noise_of("n", h, {}) == ("exact", None)
    assert R.noise_of("t", h, {}) == ("relative", R.DEFAULT_REL)
    assert R.noise_of("t", h, {"t": 0.3}) == ("relative", 0.3)
    assert R.noise_of("auc", h, {}) == ("interval", [0.6, 0.8])
    assert R.noise_of("names", h, {}) == ("exact", None)
    assert R.moved(3, 4, ("exact", None)) and not R.moved(3, 3, ("exact", None))
    assert R.moved(2.5, 2.8, ("relative", 0.1)) and not R.moved(2.5, 2.7, ("relative", 0.1))
    assert R.moved(0.7, 0.85, ("interval", [0.6, 0.8]))


def test_rerun_reports_moved_figures_and_writes_only_when_asked(tmp_path, monkeypatch,
                                                                  capsys) -> None:
    monkeypatch.setitem(BENCHMARKS, "fake", "tests.test_rerun:fake")
    committed = {"name": "fake", "headline": {
        "count": 3, "speed": 1.0, "rate": 1.0, "auc": 0.7, "auc_interval": [0.6, 0.8],
        "gone": 1}}
    path = tmp_path / "fake.json"
    path.write_text(json.dumps(committed))
    assert R.main(["fake", "--results-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "ok    fake.count" in out and "ok    fake.speed" in out  # exact; within 10 %
    assert "ok    fake.rate" in out  # its declared 50 %
    assert "ok    fake.auc" in out  # inside the committed interval
    assert "MOVED fake.gone" in out and "1 of 5 figures moved" in out
    assert json.loads(path.read_text()) == committed  # untouched without --write
    assert R.main(["fake", "--write", "--results-dir", str(tmp_path)]) == 1
    written = json.loads(path.read_text())
    assert written["headline"]["speed"] == 1.05 and "provenance" in written
    assert R.main(["fake", "--results-dir", str(tmp_path)]) == 0  # now it matches itself
    assert R.main(["nope", "--results-dir", str(tmp_path)]) == 2

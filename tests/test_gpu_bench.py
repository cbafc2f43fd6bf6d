"""``python -m benchmarks gpu`` on a tiny setting (one step per architecture and precision),
and the cost model reading what it writes."""

from __future__ import annotations

import json
import math
import time

import pytest
import torch

from core.engine import costs as model_costs
from core.foundation.parts import ARCHITECTURES


@pytest.fixture(scope="module")
def quick_run():
    from benchmarks.gpu_bench import main

    t0 = time.perf_counter()
    out = main(quick=True)
    return out, time.perf_counter() - t0


def test_the_tiny_gpu_bench_measures_every_architecture_and_precision(quick_run) -> None:
    out, seconds = quick_run
    head = out["headline"]
    assert set(head) == {"cpu_images_per_s", "cpu_peak_fraction", "cuda_images_per_s",
                         "cuda_peak_fraction", "cuda_reason"}
    assert set(head["cpu_images_per_s"]) == set(ARCHITECTURES.names())
    for arch, by_precision in head["cpu_images_per_s"].items():
        assert set(by_precision) == {"fp32", "bf16"}, arch
        for p, rate in by_precision.items():
            assert math.isfinite(rate) and rate > 0, (arch, p)
            frac = head["cpu_peak_fraction"][arch][p]
            assert 0 < frac < 2, (arch, p, frac)  # of a measured matmul on the same thread
    if torch.cuda.is_available():
        assert head["cuda_images_per_s"] and out["file_stem"] == "gpu.cuda"
    else:
        assert head["cuda_images_per_s"] is None and head["cuda_peak_fraction"] is None
        assert head["cuda_reason"] == "no GPU lent to this task" and out["file_stem"] == "gpu"
    rows = [r for r in out["rows"] if r.get("part") == "cpu_step"]
    for r in rows:  # achieved = 3 × forward FLOPs × images/s
        assert r["gflops_per_s"] == pytest.approx(
            3 * r["forward_mflops"] * 1e6 * r["images_per_s"] / 1e9, rel=0.02, abs=5e-3)
    assert seconds < 120  # one step each: seconds, not minutes (a loaded 2-core machine)


def test_the_cost_model_prefers_the_gpu_bench_rows(quick_run, tmp_path, monkeypatch) -> None:
    out, _ = quick_run
    (tmp_path / "gpu.json").write_text(json.dumps(out), encoding="utf-8")
    monkeypatch.setattr(model_costs, "RESULTS", tmp_path)
    model_costs._measured_rows.cache_clear()
    try:
        rate, what, files = model_costs.cpu_rate("wrn28_2", 0.0625)
        row = next(r for r in out["rows"] if r.get("arch") == "wrn28_2"
                   and r.get("precision") == "fp32" and r.get("part") == "cpu_step")
        assert rate == pytest.approx(row["gflops_per_s"] * 1e9)
        assert files == ("gpu.json",)
        # a figure from a committed file: never "measured here", never a repository path
        assert "another machine" in what and "measured here" not in what
        assert "benchmarks/results" not in what and "no record of the engine" in what
        # a GPU estimate without a CUDA measurement says it is one
        _, gpu_what, measured = model_costs.gpu_rate("wrn28_2")
        assert not measured and "assumed" in gpu_what
    finally:
        model_costs._measured_rows.cache_clear()


def test_image_passes_and_durations() -> None:
    cfg = {"kind": "membership", "train": {"members": 100, "epochs": 3},
           "attack": {"shadows": 4}}
    assert model_costs.image_passes(cfg, 1000) == 5 * 3 * 100
    assert model_costs.image_passes({"kind": "fisher_information"}, 10) is None
    assert model_costs.format_duration(30) == "≈ 30 s"
    assert model_costs.format_duration(3 * 86400).endswith("days")
    assert model_costs.format_duration(float("nan")) == "n/a"


def _stemmed(quick: bool = False) -> dict:
    return {"name": "stemmed", "file_stem": "stemmed.cuda", "headline": {"x": 1}, "rows": [],
            "notes": ""}


def test_the_harness_writes_where_a_benchmark_names_its_file(tmp_path, monkeypatch) -> None:
    import benchmarks.__main__ as harness

    monkeypatch.setitem(harness.BENCHMARKS, "stemmed", f"{__name__}:_stemmed")
    assert harness.main(["stemmed", "--results-dir", str(tmp_path)]) == 0
    out = json.loads((tmp_path / "stemmed.cuda.json").read_text())
    assert out["headline"] == {"x": 1} and "file_stem" not in out
    assert not (tmp_path / "stemmed.json").exists()

"""The cost captions' step rate measured on this machine (core.engine.calibration): a fresh cache
times the step, a second call reads what it kept, another engine or machine times it again, and
the caption says "measured on this machine" only once it was, else "another machine"."""

from __future__ import annotations

import json

import pytest

from core.engine import calibration as C
from core.engine import costs
from core.foundation import fingerprint

ARCH, WIDTH, SHAPE, CLASSES = "lenet5", 0.5, (1, 28, 28), 10


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """A private cache root, and the list of the calibrations actually timed."""
    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    timed: list[tuple] = []
    real = C._measure

    def measure(*args):
        timed.append(args)
        return real(*args)

    monkeypatch.setattr(C, "_measure", measure)
    return timed


def test_a_fresh_cache_calibrates_and_a_second_call_reads_it(counted) -> None:
    assert C.cached_rate(ARCH, WIDTH, SHAPE, CLASSES) is None
    assert C.step_rate(ARCH, WIDTH, SHAPE, CLASSES, measure=False) is None  # nothing timed
    assert counted == []
    rate = C.step_rate(ARCH, WIDTH, SHAPE, CLASSES)
    assert len(counted) == 1 and rate is not None and rate.images_per_s > 0
    assert 2 <= rate.batch <= C.BATCH and 1 <= rate.steps <= C.MAX_STEPS
    # images/s is what was timed: batch × steps over the seconds
    assert rate.images_per_s == pytest.approx(rate.batch * rate.steps / rate.seconds, rel=1e-3)
    path = C.cache_file()
    assert path.is_file() and fingerprint.machine_fingerprint()[:16] in str(path)
    assert fingerprint.engine_fingerprint()[:16] in path.name
    again = C.step_rate(ARCH, WIDTH, SHAPE, CLASSES)
    assert again == rate and len(counted) == 1  # read from the file, not timed again
    # another width is another calibration, kept beside the first
    C.step_rate(ARCH, 0.25, SHAPE, CLASSES)
    assert len(counted) == 2 and len(json.loads(path.read_text())) == 2


@pytest.mark.parametrize("which", ["engine_fingerprint", "machine_fingerprint"])
def test_another_engine_or_machine_calibrates_again(counted, monkeypatch, which) -> None:
    first = C.step_rate(ARCH, WIDTH, SHAPE, CLASSES)
    assert first is not None and len(counted) == 1
    monkeypatch.setattr(fingerprint, which, lambda: "f" * 64)
    assert C.cached_rate(ARCH, WIDTH, SHAPE, CLASSES) is None
    assert C.step_rate(ARCH, WIDTH, SHAPE, CLASSES) is not None and len(counted) == 2
    assert C.cache_file().parent.exists()


def test_the_caption_says_measured_here_only_once_it_was(counted) -> None:
    passes = 10_000.0
    before = costs.arch_cost(ARCH, WIDTH, SHAPE, CLASSES, passes, calibrate=False)
    assert counted == []
    assert "another machine" in before.cpu_based_on
    assert "measured on this machine" not in before.cpu_based_on
    after = costs.arch_cost(ARCH, WIDTH, SHAPE, CLASSES, passes)
    rate = C.cached_rate(ARCH, WIDTH, SHAPE, CLASSES)
    assert len(counted) == 1 and rate is not None
    assert after.cpu_based_on == rate.text() and "another machine" not in after.cpu_based_on
    assert after.cpu_based_on.startswith("measured on this machine: ")
    assert after.cpu_seconds == pytest.approx(passes / rate.images_per_s)
    # kept: the uncalibrated call now reads it too
    assert costs.arch_cost(ARCH, WIDTH, SHAPE, CLASSES, passes, calibrate=False) == after


def test_a_damaged_or_unwritable_cache_costs_only_the_keeping(counted, monkeypatch) -> None:
    path = C.cache_file()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert C.cached_rate(ARCH, WIDTH, SHAPE, CLASSES) is None
    assert C.step_rate(ARCH, WIDTH, SHAPE, CLASSES) is not None  # rewritten whole
    assert len(json.loads(path.read_text())) == 1

    def refuse(*_):
        raise PermissionError("read-only")

    monkeypatch.setattr(C, "_write", refuse)
    assert C.step_rate(ARCH, 0.25, SHAPE, CLASSES) is not None
    assert C.cached_rate(ARCH, 0.25, SHAPE, CLASSES) is None and len(counted) == 2

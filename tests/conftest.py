"""Shared fixtures: the shared Adult files, and a private result cache for the whole session."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def adult_dir() -> Path:
    """../shared/data/adult next to the repo (tests and benchmarks read Adult from there)."""
    d = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"
    if not d.is_dir():
        pytest.skip(f"Adult files not found in {d}")
    return d


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(tmp_path_factory):
    """No test writes to the user's cache or sees the user's registered data sets:
    PRIVLAB_CACHE_DIR, PRIVLAB_DATA_REGISTRY and PRIVLAB_MODEL_REGISTRY point at session tmp dirs; the dashboard
    starts no pool in the background (PRIVLAB_PREWARM=0)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIVLAB_CACHE_DIR", str(tmp_path_factory.mktemp("privlab-cache")))
        mp.setenv("PRIVLAB_DATA_REGISTRY", str(tmp_path_factory.mktemp("privlab-data-registry")))
        mp.setenv("PRIVLAB_MODEL_REGISTRY", str(tmp_path_factory.mktemp("privlab-model-registry")))
        mp.setenv("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")  # silences Ray's FutureWarning
        # page tests run dashboard/app.py in this process: no background pool start there
        mp.setenv("PRIVLAB_PREWARM", "0")
        yield


@pytest.fixture(scope="session")
def ray_session():
    """Ray started once for the whole session (2 CPUs, no dashboard) and shut down at its end;
    skips the test where Ray is not installed."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()

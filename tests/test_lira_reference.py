"""The LiRA reference preset (core.attacks.lira_reference): it validates with the paper's WRN-28-2,
refuses in one line without CIFAR-10, states a finite cost, and its pipeline runs end to end
on synthetic CIFAR-shaped data at a tiny width."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.attacks import lira_reference as L
from core.data.errors import DataError


def test_the_preset_validates_with_the_papers_architecture() -> None:
    cfg = L.reference_config()
    assert cfg.model.arch == "wrn28_2" and cfg.model.width == 1.0
    assert cfg.data.name == "cifar10"
    assert cfg.attack.shadows == 16
    assert set(cfg.attack.attackers) == set(L.PUBLISHED)
    # a pool of 2·members rows fits CIFAR-10's train split at the preset's fractions
    assert 2 * cfg.train.members <= L.TRAIN_ROWS <= 60_000 * (
        1 - cfg.data.test_fraction - cfg.data.aux_fraction) + 1


def test_without_cifar10_the_refusal_is_one_line_naming_where(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PRIVLAB_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError) as err:
        L.check_data()
    msg = str(err.value)
    assert "\n" not in msg
    assert str(tmp_path / "cifar10") in msg and "cifar-10-batches-py" in msg


def test_the_cost_estimate_is_finite_and_positive() -> None:
    c = L.cost()
    assert c.params > 1_000_000 and c.forward_flops > 1e8
    assert c.passes == (1 + 16) * 100 * 25_000
    for s in (c.cpu_seconds, c.gpu_seconds):
        assert s is not None and math.isfinite(s) and s > 0
    assert c.cpu_seconds > c.gpu_seconds
    assert "assumed" in c.gpu_based_on or c.gpu_measured


def test_comparison_rows_put_ours_beside_the_published() -> None:
    from types import SimpleNamespace

    result = SimpleNamespace(metrics={"mia_lira_online_auc": 0.7,
                                      "mia_lira_online_tpr_at_0p1pct_fpr": 0.02})
    rows = {r["attack"]: r for r in L.comparison_rows(result)}
    assert rows["lira_online"]["published_auc"] == 0.6676
    assert rows["lira_online"]["ours_auc"] == 0.7
    assert rows["lira_offline"]["ours_auc"] is None
    assert rows["lira_offline"]["published_tpr_at_0p1pct_fpr"] == 0.0130


@pytest.fixture
def fake_cifar10(tmp_path, monkeypatch):
    """CIFAR-shaped synthetic images (3×32×32, 10 classes) where the data layer reads CIFAR-10:
    the marker file in $PRIVLAB_DATA_DIR/cifar10 and the decoder replaced."""
    import core.data.torchvision_sets as tv

    marker = tmp_path / "cifar10" / "cifar-10-batches-py" / "data_batch_1"
    marker.parent.mkdir(parents=True)
    marker.write_bytes(b"")
    monkeypatch.setenv("PRIVLAB_DATA_DIR", str(tmp_path))
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), 40)
    X = rng.random((len(y), 3 * 32 * 32), dtype=np.float32) * 0.5
    X += (y[:, None] / 20.0).astype(np.float32)  # a little class signal
    monkeypatch.setattr(tv, "_cifar10", lambda root: (X, y))
    return tmp_path


def test_the_preset_pipeline_runs_end_to_end_on_cifar_shaped_data(fake_cifar10) -> None:
    from core.runs.experiments import run

    L.check_data()  # the marker is found: no refusal
    cfg = L.reference_config(width=0.0625, epochs=1, members=40, shadows=2)
    assert cfg.model.arch == "wrn28_2" and cfg.data.name == "cifar10"
    result = run(cfg)
    rows = L.comparison_rows(result)
    for r in rows:
        assert r["ours_auc"] is not None and 0.0 <= r["ours_auc"] <= 1.0
        assert r["ours_tpr_at_0p1pct_fpr"] is not None
    assert math.isfinite(result.metrics["utility_acc"])


def test_the_membership_page_shows_the_preset_its_cost_and_the_refusal(tmp_path, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PRIVLAB_DATA_DIR", str(tmp_path / "data"))
    app = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
    at = AppTest.from_file(app, default_timeout=120).run()
    at.switch_page("views/membership.py").run()
    assert not at.exception, at.exception
    (box,) = [e for e in at.expander if "LiRA reference" in e.label]
    text = " ".join(m.value for m in box.markdown)
    assert "Wide ResNet 28-2" in text and "on a CPU" in text and "on a GPU" in text
    (info,) = [i.value for i in box.info]
    assert str(tmp_path / "data" / "cifar10") in info and "\n" not in info
    assert not [b for b in box.button if "LiRA" in b.label]  # no Run without CIFAR-10
    (table,) = box.table
    cells = table.value.to_string()
    assert "0.6676" in cells and "1.69 %" in cells and "not run" in cells

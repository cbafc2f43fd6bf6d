"""The ``fisher_information`` kind end to end on tiny settings: the FIL data views, σ from each
noise mode, the attacks against η, the Cramér–Rao panel, one-line config errors, and the fit
stage reused when only σ changes."""

from __future__ import annotations

import numpy as np
import pytest

from core.config.schema import ConfigError, parse_config
from core.foundation.metric_schema import unregistered
from core.foundation.stages import MemoryStageStore
from core.runs.experiments import run

TINY = {"kind": "fisher_information", "data": {"name": "digits"},
        "irfil": {"iterations": 3},
        "attack": {"noise_trials": 4, "crb_trials": 200, "sigma_grid": 3}}


def _cfg(**over) -> dict:
    out = {**TINY}
    for k, v in over.items():
        out[k] = {**out[k], **v} if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def test_digits_view_unit_ball_pca_and_images():
    from core.data.fil_views import fil_view

    v = fil_view("digits", classes=(3, 8), pca_dim=12)
    assert v.X.shape[1] == 12 and v.max_norm == pytest.approx(1.0)
    assert set(np.unique(v.y)) == {0, 1} and v.label_names == ("3", "8")
    assert v.images.shape == (v.n, 64) and v.image_shape == (1, 8, 8)
    with pytest.raises(ValueError, match="classes"):
        fil_view("digits", classes=(2, 2))


def test_adult_paper_view_has_86_columns(adult_dir, monkeypatch):
    from core.data.fil_views import fil_view

    monkeypatch.setenv("PRIVLAB_DATA_DIR", str(adult_dir.parent))
    v = fil_view("adult", data_dir=str(adult_dir))
    assert v.X.shape == (30_162, 86) and v.X_test.shape == (15_060, 86)
    assert v.groups["marital_status"] == (24,) and "relationship" not in v.groups
    a = v.attributes["marital_status"]
    assert a.value_names == ("married", "unmarried") and a.k == 2
    assert np.array_equal(v.X[:, 24] == 1.0, a.codes == 0)  # the kept column is "married"


def test_run_reaches_its_target_eta_and_every_metric_is_registered():
    r = run(_cfg(defense={"eta_target": 2.0}))
    m, a = r.metrics, r.artifacts
    assert unregistered(m) == []
    # σ solved so that the worst per-example η is the target (η = ‖J‖₂/σ)
    assert m["fil_eta"] == pytest.approx(2.0)
    assert m["fil_sigma"] == pytest.approx(a["eta_example"].max() / 2.0)
    assert m["fil_eta_group_max"] >= m["fil_eta_example_max"] - 1e-12  # a group leaks ≥ a member
    assert m["fil_irfil_std_ratio"] < 0.1  # IRFIL equalises η
    assert a["least_images"].shape == (8, 64) and a["eta_example"][a["most_idx"][0]] == a[
        "eta_example"].max()
    assert a["decile_acc"].shape == (3, 10) and list(a["decile_iterations"]) == [0, 2, 3]
    # Fig. 6: at the largest η̄ the white-box attack recovers the label; at the smallest it
    # is near the prior
    wb = a["sweep_acc_fil_white_box"]
    assert wb[-1] > 0.95 and wb[0] < 0.7 and a["sweep_eta_mean"][0] < a["sweep_eta_mean"][-1]
    # the unbiased label reconstruction attains, and never beats, the Cramér–Rao bound
    # (each point: 200 draws, so variance/bound has sd ≈ 0.1; 36 points pooled: sd ≈ 0.02)
    ratio = a["crb_variance"] / a["crb_bound"]
    assert ratio.size == 36 and abs(ratio.mean() - 1.0) < 0.06, ratio
    assert np.mean(a["crb_ratio_hi"] < 1.0) <= 0.1 and 0.6 < m["fil_crb_min_ratio"] < 1.1
    assert r.info["best_attack"] == "fil_white_box"  # the label's black box is not leakage


def test_synthetic_logistic_from_epsilon_and_the_attribute_attack():
    r = run(_cfg(data={"name": "synthetic", "n_samples": 400}, irfil={"iterations": 0},
                 model={"model": "logistic", "l2": 1e-2},
                 defense={"epsilon": 2.0, "delta": 1e-5}))
    m = r.metrics
    assert r.config["attack"]["target"] is None and r.info["target"] == "b"
    assert m["fil_epsilon"] == pytest.approx(2.0)
    assert m["fil_sensitivity"] == pytest.approx(2.0 / (r.metrics["fil_n_train"] * 1e-2))
    assert "decile_acc" in r.artifacts and "crb_bound" not in r.artifacts  # no CRB for logistic
    assert unregistered(m) == []
    strong = run(_cfg(data={"name": "synthetic", "n_samples": 400}, irfil={"iterations": 0},
                      defense={"eta_target": 100.0, "eta_reduce": "mean"},
                      granularity="attribute"))
    assert strong.metrics["fil_eta_mean"] == pytest.approx(100.0)
    assert strong.metrics["fil_attack_white_box_acc"] > 0.9 > strong.metrics[
        "fil_attack_prior_acc"]


@pytest.mark.parametrize(("over", "starts"), [
    ({"defense": {"sigma": 0.0}}, "defense.sigma: got 0.0; allowed range 1e-06 <= value"),
    ({"defense": {"sigma": 1.0, "eta_target": 1.0}}, "defense.sigma, eta_target, epsilon: got"),
    ({"defense": {"eta_target": -1.0}}, "defense.eta_target: got -1.0; allowed range"),
    ({"model": {"l2": 1e3}}, "model.l2: got 1000.0; allowed range 0 <= value <= 100"),
    ({"model": {"model": "logistic", "l2": 0.0}}, "model.l2: got 0; logistic regression needs"),
    ({"defense": {"epsilon": 1.0}}, "defense.epsilon: least squares has no finite L2"),
    ({"attack": {"target": "marital_status"}}, "attack.target: got 'marital_status'; allowed"),
    ({"attack": {"attackers": ["mlp"]}}, "attack.attackers: got 'mlp'; allowed: fil_white_box"),
    ({"irfil": {"iterations": 99}}, "irfil.iterations: got 99; allowed range 0 <= value <= 50"),
])
def test_invalid_settings_give_one_line_errors(over, starts):
    with pytest.raises(ConfigError) as exc:
        parse_config({"kind": "fisher_information", **over})
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(starts), msg


def test_only_sigma_changed_reuses_the_fit_and_a_new_l2_refits():
    store = MemoryStageStore()
    a = run(_cfg(defense={"sigma": 0.05}), stages=store)
    b = run(_cfg(defense={"sigma": 0.5}), stages=store)
    c = run(_cfg(defense={"eta_target": 3.0}), stages=store)
    d = run(_cfg(model={"l2": 1e-2}, defense={"sigma": 0.05}), stages=store)
    # the FIL-LiRA shadow fits are σ-free too: a new σ or target η reuses them
    assert a.info["stages"] == {"fil_fit": "computed", "fil_lira_shadows": "computed"}
    assert b.info["stages"] == c.info["stages"] == {"fil_fit": "hit", "fil_lira_shadows": "hit"}
    assert d.info["stages"] == {"fil_fit": "computed", "fil_lira_shadows": "computed"}
    assert np.array_equal(a.artifacts["eta_example"], b.artifacts["eta_example"])
    assert b.metrics["fil_eta_max"] == pytest.approx(a.metrics["fil_eta_max"] / 10)  # η ∝ 1/σ
    assert d.metrics["fil_eta_max"] < a.metrics["fil_eta_max"]  # more L2 → less leakage

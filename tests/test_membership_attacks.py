"""Membership-inference attacks and the membership report on synthetic scores (fast, no models)."""

import math

import numpy as np
import pytest

from core.attacks.membership import (
    ATTACK_DIRECTIONS,
    balance_members,
    confidence_attack,
    entropy_attack,
    head_statistic,
    lira_offline,
    lira_online,
    logit_scale,
    loss_attack,
    membership_report,
    modified_entropy_attack,
    representation_lira,
    rmia,
)
from core.bounds.dp_region import dp_region
from core.foundation.metrics import roc_curve_points


def _auc(scores, y):
    fpr, tpr = roc_curve_points(np.asarray(y, dtype=int), scores, drop_intermediate=False)
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))


# ------------------------------------------------------------------------------ report metrics


def test_report_matches_hand_computed_case():
    r = membership_report([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], n_boot=20)
    assert r["auc"] == pytest.approx(0.75)
    assert r["advantage"] == pytest.approx(0.5)  # t = 0.35: TPR 1, FPR 1/2
    assert r["balanced_accuracy"] == pytest.approx(0.75)
    assert (r["n_members"], r["n_nonmembers"]) == (2, 2)
    assert r["roc_fpr"][0] == 0 and r["roc_tpr"][-1] == 1
    lo, hi = r["auc_interval"]
    assert 0 <= lo <= hi <= 1


def test_ties_count_half_and_best_threshold():
    # positives 0.5, 0.5, 0.9 vs negative 0.5: (½ + ½ + 1)/3
    r = membership_report([0.5, 0.5, 0.5, 0.9], [0, 1, 1, 1], n_boot=20)
    assert r["auc"] == pytest.approx(2 / 3)
    assert r["advantage"] == pytest.approx(1 / 3)  # t = 0.9: TPR 1/3, FPR 0
    assert r["balanced_accuracy"] == pytest.approx(2 / 3)


def test_all_equal_scores_give_chance():
    y = np.r_[np.zeros(50), np.ones(50)]
    r = membership_report(np.full(100, 3.0), y, n_boot=20)
    assert r["auc"] == 0.5 and r["advantage"] == 0.0 and r["epsilon_estimate"] == 0.0
    assert r["auc_interval"] == (0.5, 0.5)


def test_tpr_at_low_fpr_and_meaningful_flag():
    neg = np.arange(100.0)
    pos = np.arange(100.0) + 95.5
    s = np.r_[neg, pos]
    y = np.r_[np.zeros(100), np.ones(100)]
    r = membership_report(s, y, n_boot=20)
    assert r["tpr_at_1pct"] == pytest.approx(0.97)  # threshold 98.5: one false positive
    assert r["tpr_at_0p1pct"] == pytest.approx(0.96)  # threshold 99.5: none
    lo, hi = r["tpr_at_1pct_interval"]
    assert lo < 0.97 < hi
    rows = {row["fpr"]: row for row in r["tpr_at_fpr"]}
    assert rows[0.01]["meaningful"] and not rows[0.001]["meaningful"]
    assert r["tpr_at_0p1_meaningful"] is False and rows[0.001]["n_nonmembers"] == 100


def test_flipping_labels_flips_auc():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    s = rng.normal(size=400) + 0.8 * y
    a = membership_report(s, y, n_boot=20)["auc"]
    b = membership_report(s, 1 - y, n_boot=20)["auc"]
    assert a > 0.6 and b == pytest.approx(1 - a)


def test_epsilon_lower_bound_inverts_randomized_response():
    """ε-randomized response: members say 1 w.p. e^ε/(1+e^ε), non-members w.p. 1/(1+e^ε), so
    ln(TPR/FPR) = ε exactly; the Clopper–Pearson bound approaches ε = 1 from below."""
    eps, n = 1.0, 50_000
    rng = np.random.default_rng(1)
    q = math.exp(eps) / (1 + math.exp(eps))
    y = np.r_[np.ones(n), np.zeros(n)]
    s = np.where(y == 1, rng.random(2 * n) < q, rng.random(2 * n) < 1 - q).astype(float)
    r = membership_report(s, y, delta=0.0, n_boot=10)
    assert 0.95 < r["epsilon_lower_bound"] < 1.0
    assert r["epsilon_lower_bound"] < r["epsilon_estimate"]
    assert abs(r["epsilon_estimate"] - 1.0) < 0.05
    # the ROC point lies on the ε = 1 DP boundary
    assert dp_region(1.0, 0.0, [1 - q])[0] == pytest.approx(q)


def test_dp_region():
    f = np.linspace(0, 1, 11)
    np.testing.assert_allclose(dp_region(0.0, 0.0, f), f)
    g = dp_region(2.0, 1e-5, f)
    assert np.all(g >= f) and np.all(g <= 1) and g[-1] == 1
    with pytest.raises(ValueError, match="epsilon"):
        dp_region(-1.0, 0.0, f)
    with pytest.raises(ValueError, match="fpr"):
        dp_region(1.0, 0.0, [1.5])


# ------------------------------------------------------------------------------ LiRA / RMIA


def _lira_world(shift, n=2000, k=16, seed=0):
    """Per-sample difficulty d_i; OUT models φ ~ N(d_i, 1), IN models N(d_i + shift, 1); each
    reference model trains on a random half (NaN marks the other side)."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0, 2, n)
    member = rng.integers(0, 2, n)
    target = d + shift * member + rng.normal(size=n)
    in_model = rng.random((n, k)) < 0.5
    phi = d[:, None] + shift * in_model + rng.normal(size=(n, k))
    return target, np.where(in_model, phi, np.nan), np.where(in_model, np.nan, phi), member


@pytest.mark.parametrize("fix_variance", [True, False])
def test_lira_recovers_planted_separation(fix_variance):
    t, inn, out, y = _lira_world(2.0)
    raw = _auc(t, y)
    on = _auc(lira_online(t, inn, out, fix_variance=fix_variance), y)
    off = _auc(lira_offline(t, out, fix_variance=fix_variance), y)
    assert on > 0.8 and off > 0.8 and on > raw + 0.05 and off > raw + 0.05
    t0, in0, out0, y0 = _lira_world(0.0, seed=1)
    assert abs(_auc(lira_online(t0, in0, out0, fix_variance=fix_variance), y0) - 0.5) < 0.05
    assert abs(_auc(lira_offline(t0, out0, fix_variance=fix_variance), y0) - 0.5) < 0.05


def test_lira_falls_back_to_global_statistics():
    t, inn, out, _ = _lira_world(2.0, n=50, k=4)
    inn[0] = np.nan  # sample 0: no IN model
    out[1, :] = np.nan  # sample 1: no OUT model
    out[2, 1:] = np.nan  # sample 2: a single OUT model (no per-sample variance)
    out[2, 0] = 0.3
    for fv in (True, False):
        s = lira_online(t, inn, out, fix_variance=fv)
        assert s.shape == (50,) and np.all(np.isfinite(s))
        assert np.all(np.isfinite(lira_offline(t, out, fix_variance=fv)))


def _rmia_world(shift, n=1500, m=1500, k=4, seed=0):
    rng = np.random.default_rng(seed)

    def sig(v):
        return 1 / (1 + np.exp(-v))

    h = rng.normal(0, 1.5, n)
    member = rng.integers(0, 2, n)
    tx = sig(h + shift * member + 0.3 * rng.normal(size=n))
    rx = sig(h[:, None] + 0.3 * rng.normal(size=(n, k)))  # offline: OUT reference models
    hz = rng.normal(0, 1.5, m)
    tz = sig(hz + 0.3 * rng.normal(size=m))
    rz = sig(hz[:, None] + 0.3 * rng.normal(size=(m, k)))
    return tx, rx, tz, rz, member


@pytest.mark.parametrize("offline", [True, False])
def test_rmia_recovers_planted_separation(offline):
    tx, rx, tz, rz, y = _rmia_world(1.5)
    s = rmia(tx, rx, tz, rz, offline=offline)
    assert s.shape == y.shape and s.min() >= 0 and s.max() <= 1
    assert _auc(s, y) > 0.8 and _auc(s, y) > _auc(tx, y) + 0.05
    tx0, rx0, tz0, rz0, y0 = _rmia_world(0.0, seed=1)
    assert abs(_auc(rmia(tx0, rx0, tz0, rz0, offline=offline), y0) - 0.5) < 0.05


def test_rmia_gamma_is_a_pairwise_threshold():
    # one reference model predicting 0.5 for everyone, online: LR(x, z) = p_x / p_z; an exact
    # tie LR = γ counts (Eq. 3 uses ≥); γ = 1.9 avoids floating-point ties
    tx = np.array([0.2, 0.4, 0.8])
    tz = np.array([0.1, 0.2, 0.4, 0.8])
    rx, rz = np.full((3, 1), 0.5), np.full((4, 1), 0.5)
    np.testing.assert_allclose(rmia(tx, rx, tz, rz, offline=False), [0.5, 0.75, 1.0])
    np.testing.assert_allclose(rmia(tx, rx, tz, rz, offline=False, gamma=1.9), [0.25, 0.5, 0.75])


# ------------------------------------------------------------------------------ baselines, misc


def test_threshold_baselines_point_towards_members():
    p = np.array([[0.9, 0.1], [0.5, 0.5]])
    assert entropy_attack(p)[0] > entropy_attack(p)[1]
    assert modified_entropy_attack(p, [0, 0])[0] > modified_entropy_attack(p, [0, 0])[1]
    # confidently wrong is not member-like under modified entropy
    assert modified_entropy_attack(p, [1, 0])[0] < modified_entropy_attack(p, [1, 0])[1]
    assert loss_attack([0.1, 2.0])[0] > loss_attack([0.1, 2.0])[1]
    np.testing.assert_allclose(confidence_attack([0.3, 0.7]), [0.3, 0.7])
    np.testing.assert_allclose(
        logit_scale([0.5, 0.0, 1.0]), [0.0, math.log(1e-12), -math.log(1e-12)], rtol=1e-6
    )
    assert set(ATTACK_DIRECTIONS.values()) == {"higher_is_member"}
    assert {"lira_online", "lira_offline", "rmia", "loss"} <= set(ATTACK_DIRECTIONS)


def test_balance_members_gives_equal_counts():
    y = np.r_[np.ones(30), np.zeros(70)]
    idx = balance_members(y, np.arange(100.0), seed=0)
    assert (y[idx] == 1).sum() == (y[idx] == 0).sum() == 30 and len(set(idx)) == 60
    np.testing.assert_array_equal(idx, balance_members(y, seed=0))
    assert not np.array_equal(idx, balance_members(y, seed=1))


def test_invalid_inputs_give_one_line_errors():
    t = np.zeros(3)
    cases = [
        (lambda: membership_report([1.0, 2.0], [1, 1]), "is_member"),
        (lambda: membership_report([1.0, 2.0], [0, 1, 1]), "is_member"),
        (lambda: membership_report([1.0, 2.0], [0, 1], confidence=1.0), "confidence"),
        (lambda: membership_report([1.0, np.nan], [0, 1]), "scores"),
        (lambda: lira_offline(t, np.zeros((3, 0))), "out_phi"),
        (lambda: lira_online(t, np.zeros((2, 4)), np.zeros((3, 4))), "in_phi"),
        (lambda: rmia(t, np.zeros((3, 0)), t, np.zeros((3, 0))), "ref_p"),
        (lambda: rmia(t, np.zeros((3, 2)), t, np.zeros((3, 2)), gamma=0.0), "gamma"),
        (lambda: rmia(t, np.zeros((3, 2)), t, np.zeros((3, 3))), "z_ref_p"),
        (lambda: rmia(t, np.zeros((3, 2)), t, np.zeros((3, 2)), a=1.5), "a"),
        (lambda: rmia(t + 2, np.zeros((3, 2)), t, np.zeros((3, 2))), "target_p"),
        (lambda: balance_members([1, 1, 1], seed=0), "labels"),
        (lambda: balance_members([0, 1], np.zeros(3), seed=0), "arrays"),
    ]
    for fn, field in cases:
        with pytest.raises(ValueError) as e:
            fn()
        msg = str(e.value)
        assert msg.startswith(field) and "\n" not in msg, msg


# ------------------------------------------------------------------ at a released representation


def _encoder_world(n=400, m=300, d=8, classes=4, K=8, pull=0.6, seed=0):
    """Synthetic "encoders": class centres plus per-record noise; an encoder pulls the records
    it trained on towards their class centre by ``pull`` and sits in its own random rotation
    (so no coordinate is shared between encoders: the statistic must be coordinate-free)."""
    from core.engine.shadow_training import shadow_splits

    rng = np.random.default_rng(seed)
    centres = 2.0 * rng.normal(size=(classes, d))
    y, yz = rng.integers(0, classes, n), rng.integers(0, classes, m)
    noise, noise_z = 1.5 * rng.normal(size=(n, d)), 1.5 * rng.normal(size=(m, d))

    def encode(trained):
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        r = centres[y] + noise * np.where(trained, 1.0 - pull, 1.0)[:, None]
        return r @ q, (centres[yz] + noise_z) @ q

    member = rng.random(n) < 0.5
    in_mask = shadow_splits(n, K, seed=seed + 1)
    t, tz = encode(member)
    sh = [encode(in_mask[k]) for k in range(K)]
    return (t, tz, np.stack([s[0] for s in sh]), np.stack([s[1] for s in sh]), y, yz, in_mask,
            member)


def test_head_statistic_points_towards_members_whatever_the_coordinates():
    t, tz, _, _, y, yz, _, member = _encoder_world()
    phi = head_statistic(t, y, tz, yz)
    assert phi.shape == (len(y),) and _auc(phi, member) > 0.57
    # its own head per encoder: permuting and rescaling the coordinates changes nothing
    rng = np.random.default_rng(9)
    perm, scale = rng.permutation(t.shape[1]), rng.uniform(0.1, 10.0, t.shape[1])
    np.testing.assert_allclose(head_statistic(t[:, perm] * scale, y, tz[:, perm] * scale, yz),
                               phi, rtol=1e-4, atol=1e-4)
    # a label the population never shows gets the floor, not someone else's probability
    phi_absent = head_statistic(t[:3], np.array([7, 7, 7]), tz, yz)
    assert np.all(phi_absent == phi_absent.min()) and phi_absent[0] < -20


def test_representation_lira_recovers_membership_and_is_chance_without_it():
    t, tz, sr, sz, y, yz, ins, member = _encoder_world()
    on = representation_lira(t, tz, sr, sz, y, yz, ins)
    off = representation_lira(t, tz, sr, sz, y, yz, ins, online=False)
    assert _auc(on, member) > 0.75 and _auc(off, member) > 0.6
    assert _auc(on, member) > _auc(head_statistic(t, y, tz, yz), member)
    t0, tz0, sr0, sz0, y0, yz0, ins0, member0 = _encoder_world(pull=0.0, seed=3)
    assert abs(_auc(representation_lira(t0, tz0, sr0, sz0, y0, yz0, ins0), member0) - 0.5) < 0.07


def test_representation_attacks_reject_bad_shapes_in_one_line():
    t, tz, sr, sz, y, yz, ins, _ = _encoder_world(n=40, m=30, K=2)
    cases = [
        (lambda: head_statistic(t, y, tz[:, :3], yz), "r_population"),
        (lambda: head_statistic(t, y[:5], tz, yz), "y:"),
        (lambda: head_statistic(t, y, tz, np.zeros(len(yz))), "y_population"),
        (lambda: head_statistic(t, y, tz, yz, l2=0.0), "l2"),
        (lambda: representation_lira(t, tz, sr[:, :5], sz, y, yz, ins), "shadow_r"),
        (lambda: representation_lira(t, tz, sr, sz[:1], y, yz, ins), "shadow_r_population"),
        (lambda: representation_lira(t, tz, sr, sz, y, yz, ins[:, :5]), "in_mask"),
        (lambda: representation_lira(t[:, :0], tz, sr, sz, y, yz, ins), "target_r"),
    ]
    for fn, field in cases:
        with pytest.raises(ValueError) as e:
            fn()
        assert str(e.value).startswith(field) and "\n" not in str(e.value), str(e.value)
    assert ATTACK_DIRECTIONS["representation_lira"] == "higher_is_member"

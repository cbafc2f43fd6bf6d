"""core.foundation.metrics against hand-computed cases."""

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from core.foundation import metrics as M


def test_perfect_binary_scores():
    y = np.array([0, 0, 1, 1])
    s = M.attack_scores(y, np.array([0.1, 0.2, 0.8, 0.9]))
    assert s["accuracy"] == 1.0 and s["balanced_accuracy"] == 1.0
    assert s["auc"] == 1.0 and s["advantage"] == 1.0
    assert s["cross_entropy_nats"] == pytest.approx(-np.mean(np.log([0.9, 0.8, 0.8, 0.9])))
    assert s["n"] == 4 and s["chance"] == 0.5


def test_inverted_and_random_binary_scores():
    y = np.array([0, 0, 1, 1])
    inv = M.attack_scores(y, np.array([0.9, 0.8, 0.2, 0.1]))
    assert inv["accuracy"] == 0.0 and inv["auc"] == 0.0 and inv["advantage"] == 0.0
    # by hand: neg 0.3, 0.6 | pos 0.4, 0.7 -> pairs pos > neg: (.4>.3), (.7>.3), (.7>.6) = 3/4
    s = M.attack_scores(y, np.array([0.3, 0.6, 0.4, 0.7]))
    assert s["auc"] == pytest.approx(0.75)
    # thresholds: >=0.7 -> TPR .5 FPR 0; >=0.6 -> .5,.5; >=0.4 -> 1,.5; max TPR-FPR = 0.5
    assert s["advantage"] == pytest.approx(0.5)
    assert s["accuracy"] == pytest.approx(0.5)  # argmax: 0.6 -> 1 (wrong), 0.4 -> 0 (wrong)
    # (n, 2) input gives the same numbers as (n,)
    p2 = np.stack([1 - np.array([0.3, 0.6, 0.4, 0.7]), [0.3, 0.6, 0.4, 0.7]], axis=1)
    assert M.attack_scores(y, p2) == s
    rng = np.random.default_rng(0)
    yr = rng.integers(0, 2, 4000)
    r = M.attack_scores(yr, rng.random(4000))
    assert abs(r["auc"] - 0.5) < 0.05 and r["advantage"] < 0.06


def test_multiclass_with_absent_class_and_sklearn_agreement():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 300)
    logits = rng.normal(size=(300, 3)) + 2 * np.eye(3)[y]
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    s = M.attack_scores(y, p)
    assert s["auc"] == pytest.approx(roc_auc_score(y, p, multi_class="ovr"))
    assert s["chance"] == pytest.approx(1 / 3)
    # 4 columns but class 3 never occurs in y: no error, AUC over the present classes
    p4 = np.concatenate([p * 0.9, np.full((300, 1), 0.1)], axis=1)
    s4 = M.attack_scores(y, p4)
    manual = np.mean([roc_auc_score(y == c, p4[:, c]) for c in range(3)])
    assert s4["auc"] == pytest.approx(manual) and math.isfinite(s4["advantage"])
    assert s4["accuracy"] == s["accuracy"] and s4["chance"] == 0.25
    # a single class present: AUC undefined -> NaN, not an error
    one = M.attack_scores(np.zeros(5, int), np.full((5, 3), 1 / 3))
    assert math.isnan(one["auc"])
    with pytest.raises(ValueError, match="class code"):
        M.attack_scores(np.array([0, 5]), np.full((2, 3), 1 / 3))


def test_prior_scores():
    ytr = np.array([0, 0, 0, 1, 2])
    yte = np.array([0, 1, 2, 2])
    s = M.prior_scores(ytr, yte)
    assert s["accuracy"] == 0.25 and s["balanced_accuracy"] == pytest.approx(1 / 3)
    assert s["auc"] == 0.5 and s["advantage"] == 0.0 and s["chance"] == pytest.approx(1 / 3)
    freq = (np.array([3, 1, 1]) + 1) / 8
    assert s["cross_entropy_nats"] == pytest.approx(-np.mean(np.log(freq[yte])))


def test_roc_tpr_at_fpr_and_epsilon():
    y = np.array([0] * 4 + [1] * 4)
    score = np.array([0.1, 0.2, 0.3, 0.8, 0.4, 0.85, 0.9, 0.95])
    fpr, tpr = M.roc_curve_points(y, score)
    assert fpr[0] == 0 and tpr[-1] == 1 and np.all(np.diff(fpr) >= 0)
    assert M.tpr_at_fpr(y, score, 0.0) == 0.75
    assert M.tpr_at_fpr(y, score, 0.2) == 0.75  # the 0.8 negative sits above the 0.4 positive
    assert M.tpr_at_fpr(y, score, 0.25) == 1.0
    # one ROC point (FPR .1, TPR .9): max(ln(.9/.1), ln(.9/.1)) = ln 9
    assert M.empirical_epsilon_lower_bound(np.array([0.1]), np.array([0.9]), 0.0) == pytest.approx(
        math.log(9)
    )
    assert M.empirical_epsilon_lower_bound(np.array([0.1]), np.array([0.9]), 0.05) == pytest.approx(
        math.log(0.85 / 0.1)
    )
    # chance-level ROC -> 0; Clopper-Pearson limits make it smaller
    assert M.empirical_epsilon_lower_bound(np.array([0, 0.5, 1]), np.array([0, 0.5, 1]), 0.0) == 0.0
    cp = M.empirical_epsilon_lower_bound(
        np.array([0.1]), np.array([0.9]), 0.0, n_neg=100, n_pos=100
    )
    assert 0 < cp < math.log(9)


def test_reconstruction_wrappers():
    rng = np.random.default_rng(0)
    x = rng.random((8, 8))
    assert M.mse(x, x) == 0 and M.psnr(x, x) == math.inf and M.ssim(x, x) == pytest.approx(1.0)
    y = np.clip(x + 0.1, 0, 1)
    assert M.psnr(x, x + 0.1) == pytest.approx(20.0)
    assert 0 < M.ssim(x, y) < 1
    img = rng.random((3, 16, 16))
    assert M.ssim(img, img, channel_axis=0) == pytest.approx(1.0)
    assert M.accuracy(np.array([1, 2, 3]), np.array([1, 2, 0])) == pytest.approx(2 / 3)


def _score_draws(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Scores with no ties, many ties, only a few values, and tiny differences."""
    return [rng.random(n), np.round(rng.random(n), 1), rng.integers(0, 4, n).astype(float),
            rng.normal(size=n) * 1e-9]


@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")
def test_roc_auc_and_balanced_accuracy_equal_sklearn_bit_for_bit():
    from sklearn.metrics import balanced_accuracy_score, roc_curve

    rng = np.random.default_rng(3)
    for n in (2, 3, 7, 40, 301):
        y = rng.integers(0, 2, n)
        y[:2] = (0, 1)  # both classes
        for s in _score_draws(rng, n):
            for drop in (True, False):
                fpr, tpr = M.roc_curve_points(y, s, drop_intermediate=drop)
                f_sk, t_sk, _ = roc_curve(y, s, drop_intermediate=drop)
                assert np.array_equal(fpr, f_sk) and np.array_equal(tpr, t_sk)
            assert M.attack_scores(y, np.clip(s, 0, 1))["auc"] == roc_auc_score(y, np.clip(s, 0, 1))
        for k in (2, 3, 10):
            yk, pred = rng.integers(0, k, n), rng.integers(0, k + 1, n)  # a class only predicted
            assert M._balanced_accuracy(yk, pred) == balanced_accuracy_score(yk, pred)


def test_multiclass_auc_equals_sklearn_ovr_bit_for_bit():
    rng = np.random.default_rng(4)
    for k in (3, 5, 10):
        y = np.r_[np.arange(k), rng.integers(0, k, 200)]
        p = rng.dirichlet(np.ones(k), y.size)
        p = np.round(p, 2) / np.round(p, 2).sum(1, keepdims=True)  # ties inside each column
        sk = roc_auc_score(y, p, multi_class="ovr", average="macro", labels=np.arange(k))
        assert M.attack_scores(y, p)["auc"] == sk


def test_scores_refuse_non_finite_values_in_one_line():
    y = np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="^score: got NaN or inf"):
        M.roc_curve_points(y, np.array([0.1, np.nan, 0.2, 0.3]))
    with pytest.raises(ValueError, match="^proba: got NaN or inf"):
        M.attack_scores(y, np.array([0.1, np.nan, 0.2, 0.3]))


def test_beta_quantiles_equal_scipy_stats_bit_for_bit():
    from scipy.stats import beta

    rng = np.random.default_rng(5)
    n = rng.integers(1, 5000, 400)
    k = rng.integers(0, n) + 0.0
    for q in (0.005, 0.025, 0.975, 0.995):
        assert np.array_equal(M._beta_quantile(q, k + 1, n - k), beta.ppf(q, k + 1, n - k))
    a = (1.0 - 0.95) / 2.0
    lo, hi = M.clopper_pearson(7, 40)
    assert (lo, hi) == (float(beta.ppf(a, 7, 34)), float(beta.ppf(1.0 - a, 8, 33)))

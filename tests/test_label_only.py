"""Label-only membership inference (``core/catalog/label_only.py``, Choquette-Choo et al. 2021):
the signals and the calibrated score as functions, the attacks end to end on an overfit tiny
target (pooled over targets), each signal computed once per model, a one-line error for a
release without the signal, and the part showing up everywhere from its one module."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.attacks.membership import MembershipRelease
from core.catalog import label_only as L
from core.foundation.parts import ATTACKS, SIGNALS

#: an overfit tiny target: digits, 150 members, train accuracy ~1, test ~0.9
OVERFIT = {"kind": "membership", "data": {"name": "digits"},
           "train": {"members": 150, "epochs": 30, "batch_size": 32, "lr": 1e-2},
           "attack": {"shadows": 8, "targets": 3,
                      "attackers": ["label_only_aug", "label_only_noise", "lira_online"]},
           "projection_points": 0}


def _predict_by_first_pixel(X: torch.Tensor) -> torch.Tensor:
    """A fixed 2-class 'model': class 1 when the first feature is above 0.5."""
    p1 = (X[:, 0] > 0.5).float()
    return torch.stack([1 - p1, p1], 1)


# ---------------------------------------------------------------------------------------------
# the signals and the score as functions


def test_shift_moves_the_image_and_zero_fills():
    img = torch.arange(9, dtype=torch.float32).reshape(1, 1, 3, 3)
    down = L._shift(img, 1, 0)
    assert down[0, 0, 0].tolist() == [0, 0, 0] and down[0, 0, 1].tolist() == [0, 1, 2]
    left = L._shift(img, 0, -1)
    assert left[0, 0, :, 2].tolist() == [0, 0, 0] and left[0, 0, :, 0].tolist() == [1, 4, 7]
    assert torch.equal(L._shift(img, 0, 0), img)


def test_signals_have_their_shapes_and_are_the_same_for_the_same_seed():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, 16, generator=g)
    y = (X[:, 0] > 0.5).long()
    aug = L.augmentation_signal(_predict_by_first_pixel, X, y, image_shape=(1, 4, 4), seed=0)
    assert aug.shape == (12, 10, 1) and aug.dtype == bool
    assert aug[:, 0, 0].all()  # the unshifted, unflipped image: the 'model' is always right
    noise = L.noise_signal(_predict_by_first_pixel, X, y, image_shape=(1, 4, 4), seed=0)
    assert noise.shape == (12, len(L.NOISE_SCALES), L.NOISE_COPIES)
    assert np.array_equal(noise, L.noise_signal(_predict_by_first_pixel, X, y,
                                                image_shape=(1, 4, 4), seed=0))
    assert not np.array_equal(noise, L.noise_signal(_predict_by_first_pixel, X, y,
                                                    image_shape=(1, 4, 4), seed=1))
    # more noise keeps fewer labels
    kept = noise.mean((0, 2))
    assert kept[0] >= kept[-1] and kept[-1] < 1.0
    # tabular rows (1, 1, d): the row itself and feature-noised copies
    tab = L.augmentation_signal(_predict_by_first_pixel, X, y, image_shape=(1, 1, 16), seed=0)
    assert tab.shape == (12, 1 + L.TABULAR_COPIES, 1) and tab[:, 0, 0].all()


def _auc(scores: np.ndarray, member: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(member, scores))


def test_calibrated_score_separates_rows_whose_in_models_keep_labels_more_often():
    rng = np.random.default_rng(0)
    n, K, G, R = 400, 8, 3, 16
    base = rng.uniform(0.2, 0.8, size=(n, G))  # each row's difficulty
    shadow_in = np.zeros((n, K), bool)
    for i in range(n):
        shadow_in[i, rng.permutation(K)[:K // 2]] = True

    def rate(inside: np.ndarray) -> np.ndarray:  # (n, G, 1): IN models keep 15 % more labels
        return np.clip(base + 0.15 * inside[:, None], 0, 1)[:, :, None]

    shadows = np.stack([rng.random((n, G, R)) < rate(shadow_in[:, k]) for k in range(K)])
    member = rng.random(n) < 0.5
    target = rng.random((n, G, R)) < rate(member)
    s = L.calibrated_score(target, shadows, shadow_in)
    assert s.shape == (n,) and np.all(np.isfinite(s))
    assert _auc(s, member) > 0.8
    # swapped IN and OUT: the ranking turns over
    assert _auc(L.calibrated_score(target, shadows, ~shadow_in), member) < 0.2


def test_calibrated_score_rejects_mismatched_shapes_in_one_line():
    t = np.zeros((5, 2, 3), bool)
    for sh, ins, field in ((np.zeros((4, 5, 2, 2)), np.ones((5, 4), bool), "shadow signal"),
                           (np.zeros((4, 5, 2, 3)), np.ones((5, 3), bool), "shadow_in"),
                           (np.zeros((4, 5, 2, 3)), np.ones((5, 4), bool), "shadow_in")):
        with pytest.raises(ValueError, match=field) as e:
            L.calibrated_score(t, sh, ins)
        assert "\n" not in str(e.value)


def test_a_release_without_the_signal_is_a_one_line_error_naming_it():
    rel = MembershipRelease(p_true=np.full(4, 0.5), labels=np.zeros(4, int),
                            shadow_p=np.full((4, 2), 0.5),
                            shadow_in=np.array([[True, False]] * 4))
    for fn, name in ((L.augmentation_on_release, L.AUGMENTATION),
                     (L.noise_on_release, L.NOISE)):
        with pytest.raises(ValueError, match=f"needs signal '{name}'") as e:
            fn(rel)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="shadow_signals\\['label_only_noise'\\]"):
        L.noise_on_release(MembershipRelease(
            p_true=rel.p_true, shadow_in=rel.shadow_in,
            signals={L.NOISE: np.zeros((4, 3, 16), bool)}))


def test_shadow_as_target_swaps_the_signals_like_the_outputs():
    K, n = 4, 6
    sig = np.arange(K * n).reshape(K, n, 1, 1)
    rel = MembershipRelease(p_true=np.full(n, 0.5), shadow_p=np.full((n, K), 0.5),
                            shadow_in=np.ones((n, K), bool), signals={"s": sig[0] * 0 - 1},
                            shadow_signals={"s": sig})
    t = rel.shadow_as_target(2)
    assert np.array_equal(t.signal("s"), sig[2])
    assert np.array_equal(t.shadow_signal("s"), sig[[0, 1, 3]])


# ---------------------------------------------------------------------------------------------
# end to end


@pytest.fixture
def calls(monkeypatch):
    """Counts calls of each label-only signal function (the runner loads it by name)."""
    counts = {L.AUGMENTATION: 0, L.NOISE: 0}
    for name, attr in ((L.AUGMENTATION, "augmentation_signal"), (L.NOISE, "noise_signal")):
        real = getattr(L, attr)

        def counted(*a, _real=real, _name=name, **k):
            counts[_name] += 1
            return _real(*a, **k)

        monkeypatch.setattr(L, attr, counted)
    return counts


def test_label_only_attacks_beat_chance_on_an_overfit_target_pooled_over_targets(calls):
    from core.foundation.metric_schema import unregistered
    from core.runs.experiments import run

    r = run(OVERFIT)
    m = r.metrics
    assert m["utility_train_acc"] > 0.95 and m["train_test_gap"] > 0.05
    # the noise-robustness attack reads membership from labels alone (0.66-0.69 pooled over
    # seeds 0-3, LiRA on probabilities 0.69-0.72); the augmentation attack is weaker on a
    # model trained without augmentation (0.55-0.57), as the paper found
    assert m["mia_label_only_noise_auc"] > 0.62
    assert r.interval("mia_label_only_noise_auc")[0] > 0.55
    assert m["mia_label_only_aug_auc"] > 0.52
    for name in ("label_only_aug", "label_only_noise"):
        # pooled: the target and 2 shadow targets, members and non-members balanced
        n_mem, n_non = r.info["scored"][name]
        assert n_mem == n_non > 2 * 150
    assert any("pooled over 3 target models" in n and "label_only_noise" in n
               for n in r.info["notes"])
    assert unregistered(m) == []
    # each signal once per model: the target and the 8 shadows (batched plain training)
    assert calls == {L.AUGMENTATION: 9, L.NOISE: 9}


def test_each_signal_is_computed_once_per_model_and_only_when_declared(calls):
    from core.runs.experiments import run

    cfg = {**OVERFIT, "defense": {"kind": "channel", "kappa": 300.0},
           "train": {**OVERFIT["train"], "members": 60, "epochs": 4},
           "attack": {"shadows": 4, "targets": 3, "attackers": ["loss", "label_only_noise"]}}
    r = run(cfg)  # the channel trains each shadow on its own (no batched form)
    assert calls == {L.AUGMENTATION: 0, L.NOISE: 5}
    assert 0.0 <= r.metrics["mia_label_only_noise_auc"] <= 1.0
    run({**cfg, "attack": {**cfg["attack"], "attackers": ["loss"]}})  # no signal declared
    assert calls == {L.AUGMENTATION: 0, L.NOISE: 5}


# ---------------------------------------------------------------------------------------------
# one module, every surface


def test_the_label_only_parts_are_declared_in_their_one_module():
    from core.config.schema import MembershipAttackSpec

    for name, signal in (("mia_label_only_aug", L.AUGMENTATION),
                         ("mia_label_only_noise", L.NOISE)):
        part = ATTACKS.get(name)
        assert part.signals == (signal,) and part.pools_targets and "shadows" in part.needs
        assert part.threat.sees == ("only the predicted labels of the released model on "
                                    "queried inputs")
        assert SIGNALS.get(signal).function.startswith("core.catalog.label_only:")
    # the defaults stay as they were
    assert MembershipAttackSpec().attackers == ("loss", "lira_offline", "lira_online", "rmia")


def test_label_only_attacks_appear_on_every_surface(tmp_path, monkeypatch):
    from tests.test_registry_dispatch import surfaces_seeing

    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    seen = surfaces_seeing(ATTACKS.get("mia_label_only_aug"))
    assert seen == {"config": True, "metric_schema": True, "cli": True, "page": True,
                    "run": True}, seen
    seen = surfaces_seeing(ATTACKS.get("mia_label_only_noise"), run=False)
    assert seen == {"config": True, "metric_schema": True, "cli": True, "page": True}, seen


def test_compare_offers_the_label_only_metrics_of_stored_runs():
    from types import SimpleNamespace

    from core.runs import compare as C

    class Store:
        def list(self, kind=None, limit=None):
            return [SimpleNamespace(metrics={"mia_label_only_noise_auc": 0.7,
                                             "mia_label_only_aug_tpr_at_1pct_fpr": 0.02,
                                             "utility_acc": 0.9})]

    choices = C.metric_choices("membership", "leakage", Store())
    assert "mia_label_only_noise_auc" in choices
    assert "mia_label_only_aug_tpr_at_1pct_fpr" in choices
    assert "mia_label_only_noise_auc" not in C.metric_choices("membership", "leakage")


def test_the_benchmark_merges_only_its_headline_into_membership_json(tmp_path):
    import json

    from benchmarks import BENCHMARKS
    from benchmarks.label_only_bench import merge_into_membership

    assert BENCHMARKS["label_only"] == "benchmarks.label_only_bench:main"
    src, dst = tmp_path / "label_only.json", tmp_path / "membership.json"
    dst.write_text(json.dumps({"headline": {"lira_auc_undefended": 0.8}, "rows": [1]}))
    src.write_text(json.dumps({"headline": {"label_only_noise_auc_undefended": 0.7},
                               "quick": False, "machine": {"cpu_count": 2}}))
    out = merge_into_membership(src, dst)
    assert json.loads(dst.read_text()) == out
    assert out["headline"] == {"lira_auc_undefended": 0.8, "label_only_noise_auc_undefended": 0.7}
    assert out["rows"] == [1] and out["merged"]["label_only"]["machine"] == {"cpu_count": 2}
    src.write_text(json.dumps({"headline": {}, "quick": True}))
    with pytest.raises(ValueError, match="--quick"):
        merge_into_membership(src, dst)

"""One-run privacy audit (Steinke, Nasr & Jagielski 2023): the ε lower bound's maths, and the
white-box / black-box canary audits on tiny trainings (seconds): a correct DP-SGD run is not
flagged, a run whose noise was removed while the accountant still charges it is caught, and an
undefended model gets a large audited ε."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.attacks.audit import (
    GradientCanaries,
    audit_one_run,
    audit_scores,
    black_box_canaries,
    guess_counts,
    noise_removed,
)
from core.bounds.audit import bonferroni, epsilon_lower_bound, max_provable_epsilon, p_value
from core.defenses.dpsgd import train_dpsgd
from core.defenses.inf2guard import train_inf2guard
from core.engine.noisy_training import GradientCanary, train_central
from core.models.nn import image_classifier, seeded

SHAPE = (1, 8, 8)

# ---------------------------------------------------------------------------------------------
# the bound (pure maths)


@pytest.mark.parametrize(("guesses", "expected"), [(100, 3.5), (500, 5.1), (1000, 5.8),
                                                    (10_000, 8.1)])
def test_max_provable_epsilon_matches_the_paper(guesses, expected):
    eps = max_provable_epsilon(guesses, confidence=0.95)
    assert eps == pytest.approx(expected, abs=0.05)
    # all correct at that ε is exactly a 5 % event: (e^ε / (1 + e^ε))^r = 0.05
    assert (1.0 / (1.0 + math.exp(-eps))) ** guesses == pytest.approx(0.05, rel=1e-6)


def test_lower_bound_is_the_epsilon_where_the_tail_equals_beta():
    eps = epsilon_lower_bound(80, 100, confidence=0.95)
    assert 0.5 < eps < 2.0
    assert p_value(80, 100, eps) == pytest.approx(0.05, rel=1e-6)
    assert p_value(80, 100, eps * 1.01) > 0.05 > p_value(80, 100, eps * 0.99)
    # chance-level guessing proves nothing; more correct guesses prove more
    assert epsilon_lower_bound(50, 100) == 0.0 and epsilon_lower_bound(0, 100) == 0.0
    assert epsilon_lower_bound(90, 100) > eps > epsilon_lower_bound(70, 100)
    # more confidence, less ε; the δ term of Theorem 3.1 can only lower the bound
    assert epsilon_lower_bound(80, 100, confidence=0.99) < eps
    with_delta = epsilon_lower_bound(80, 100, confidence=0.95, delta=1e-3, canaries=1000)
    assert with_delta < eps
    assert p_value(80, 100, 1.0, delta=1e-3, canaries=1000) > p_value(80, 100, 1.0)


def test_bonferroni_splits_the_error_over_the_tests():
    assert bonferroni(0.95, 1) == pytest.approx(0.95)
    assert bonferroni(0.95, 5) == pytest.approx(0.99)
    assert max_provable_epsilon(1000, confidence=bonferroni(0.95, 5)) < max_provable_epsilon(1000)


@pytest.mark.parametrize(("call", "field"), [
    (lambda: epsilon_lower_bound(11, 10), "correct"),
    (lambda: epsilon_lower_bound(5, 10, confidence=1.0), "confidence"),
    (lambda: p_value(5, 10, -1.0), "epsilon"),
    (lambda: p_value(5, 10, 1.0, delta=1e-5), "canaries"),
    (lambda: p_value(5, 10, 1.0, delta=1e-5, canaries=5), "canaries"),
    (lambda: bonferroni(0.95, 0), "tests"),
])
def test_bad_arguments_are_one_line_errors(call, field):
    with pytest.raises(ValueError) as exc:
        call()
    assert str(exc.value).startswith(field) and "\n" not in str(exc.value)


def test_guesses_are_taken_from_the_extremes_and_corrected():
    included = np.arange(100) % 2 == 0
    scores = np.where(included, 1.0, -1.0)  # a perfect score
    res = audit_scores(scores, included, confidence=0.95)
    assert res.guesses_tried == guess_counts(100) == (10, 25, 50, 100)
    assert res.correct == res.guesses == 100
    assert res.epsilon_lower == pytest.approx(max_provable_epsilon(
        100, confidence=bonferroni(0.95, 4)))
    assert res.max_provable == pytest.approx(res.epsilon_lower)
    flipped = audit_scores(-scores, included)  # always wrong: nothing is proved
    assert flipped.epsilon_lower == 0.0


# ---------------------------------------------------------------------------------------------
# canaries on tiny trainings


@pytest.fixture(scope="module")
def digits() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    d = load_digits()
    X = torch.tensor(d.data, dtype=torch.float32) / 16.0
    return X[:300], torch.tensor(d.target, dtype=torch.long)[:300]


def _mlp() -> torch.nn.Module:
    return seeded(lambda: image_classifier("mlp", SHAPE, 10), torch.Generator().manual_seed(0))


def _dpsgd(digits, **kw):
    X, y = digits
    out = {}

    def train(canary):
        out["run"] = train_dpsgd(_mlp(), X, y, image_shape=SHAPE, epochs=20, sample_rate=1.0,
                                 lr=2.0, max_grad_norm=1.0, delta=1e-5, seed=0, canary=canary,
                                 **kw)
    return train, out


def test_gradient_canaries_follow_the_protocol():
    c = GradientCanaries(50, norm=0.5, seed=3)
    assert isinstance(c, GradientCanary)
    params = [torch.zeros(4, 10), torch.zeros(10)]
    c.bind(params)
    full = torch.cat([t.reshape(-1) for t in c.step_term(1.0)])
    # every included canary, each a signed Dirac of norm C on its own coordinate
    assert int((full != 0).sum()) == int(c.included.sum())
    assert torch.allclose(full.abs()[full != 0], torch.tensor(0.5))
    part = torch.cat([t.reshape(-1) for t in c.step_term(0.3)])
    assert 0 < int((part != 0).sum()) < int(c.included.sum())
    with torch.no_grad():  # a descent step against the included canaries
        params[0] -= full[:40].view(4, 10)
        params[1] -= full[40:]
    s = c.scores()
    assert np.all(s[c.included] > 0) and np.all(s[~c.included] == 0)
    r = GradientCanaries(5, direction="random", seed=1)
    r.bind([torch.zeros(20)])
    assert torch.linalg.norm(r.step_term(1.0)[0]) <= 5.0


def test_white_box_audit_does_not_flag_a_correct_dpsgd_run(digits):
    train, out = _dpsgd(digits, target_epsilon=2.0)
    res = audit_one_run(train, kind="white_box", canaries=1000, seed=1, delta=1e-5)
    claimed = out["run"].epsilon
    assert claimed <= 2.0
    assert 0.0 <= res.epsilon_lower <= claimed  # an audit never proves more than DP allows
    # while the audit could have proved much more: all guesses right at the largest count tried
    from core.bounds.audit import bonferroni, max_provable_epsilon

    conf = bonferroni(0.95, len(res.guesses_tried))
    assert max_provable_epsilon(max(res.guesses_tried), confidence=conf, delta=1e-5,
                                canaries=1000) > 3.0 > claimed


def test_white_box_audit_catches_noise_removed_under_the_same_accountant(digits):
    train, out = _dpsgd(digits, target_epsilon=2.0)
    with noise_removed():
        res = audit_one_run(train, kind="white_box", canaries=1000, seed=1, delta=1e-5)
    assert out["run"].epsilon <= 2.0  # the accountant still claims ε ≤ 2
    assert res.epsilon_lower > 2.0  # caught at 95 %
    assert res.correct >= 0.95 * res.guesses


def test_white_box_audit_of_undefended_trainings_is_large(digits):
    X, y = digits
    # clipping without noise (ε = ∞ by the accountant): nearly all that 1,000 canaries prove
    train, out = _dpsgd(digits, noise_multiplier=0.0)
    res = audit_one_run(train, kind="white_box", canaries=1000, seed=1)
    assert out["run"].epsilon == math.inf and res.epsilon_lower > 4.0
    # plain minibatch SGD: canaries of norm 1 where one row's gradient goes
    plain = audit_one_run(
        lambda c: train_central(_mlp(), X, y, image_shape=SHAPE, epochs=20, batch_size=64,
                                lr=0.1, seed=0, canary=c),
        kind="white_box", canaries=1000, seed=1)
    assert plain.epsilon_lower > 2.0


def test_white_box_audit_reaches_inf2guard(digits):
    X, y = digits
    res = audit_one_run(
        lambda c: train_inf2guard(X[:150], y[:150], X[150:], n_classes=10, tradeoff_lambda=0.5,
                                  epochs=2, pretrain_epochs=1, batch_size=64, seed=0, canary=c),
        kind="white_box", canaries=200, seed=2)
    assert res.kind == "white_box" and res.canaries == 200 and res.epsilon_lower >= 0.0


def test_black_box_audit_reads_memorised_canary_records(digits):
    X, y = digits
    ids = torch.arange(50, dtype=torch.float32)[:, None].repeat(1, 64)
    Xi, yi = black_box_canaries(ids, torch.arange(50) % 10, 20, 10, seed=0)
    assert len(set(Xi[:, 0].tolist())) == 20  # distinct rows, each relabelled to another class
    assert bool((yi != Xi[:, 0].long() % 10).all()) and int(yi.max()) < 10
    Xc, yc = black_box_canaries(X[200:], y[200:], 100, 10, seed=0)

    def train(X_in, y_in):
        m = _mlp()
        train_central(m, torch.cat([X[:200], X_in]), torch.cat([y[:200], y_in]),
                      image_shape=SHAPE, epochs=150, batch_size=64, lr=1e-2, optimizer="adam",
                      seed=0)
        m.eval()
        return lambda Xq, yq: F.cross_entropy(m(Xq), yq, reduction="none").detach().numpy()

    res = audit_one_run(train, kind="black_box", canaries=100, records=(Xc, yc), seed=0)
    assert res.kind == "black_box" and res.canaries == 100
    assert res.epsilon_lower > 1.0  # an undefended model memorises its mislabelled canaries


def test_audit_entry_point_rejects_misuse(digits):
    with pytest.raises(ValueError, match="^kind"):
        audit_one_run(lambda c: None, kind="grey_box")
    with pytest.raises(ValueError, match="^train_fn"):
        audit_one_run(lambda c: None, kind="white_box", canaries=10)
    with pytest.raises(ValueError, match="^records"):
        audit_one_run(lambda X, y: None, kind="black_box")
    c = GradientCanaries(10)
    with pytest.raises(RuntimeError, match="bind"):
        c.step_term(1.0)
    with pytest.raises(ValueError, match="^canaries"):
        c.bind([torch.zeros(5)])

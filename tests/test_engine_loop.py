"""The training engine's one loop (core.engine): recipe, schedule, hooks, and RelaxLoss's
reference options as a hook."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from core.catalog.relaxloss import RelaxLossHook
from core.engine.hooks import Hook, StepState
from core.engine.loop import Objective, Supervised, fit
from core.engine.recipe import Recipe


def _data(n: int = 48, d: int = 5, c: int = 3):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, d, generator=g)
    y = torch.randint(0, c, (n,), generator=g)
    return X, y


def test_recipe_rejects_bad_values_in_one_line():
    with pytest.raises(ValueError, match=r"^momentum: got 1\.5; allowed range"):
        Recipe(epochs=1, batch_size=8, lr=0.1, momentum=1.5)
    with pytest.raises(ValueError, match=r"^schedule: got 'linear'; allowed: step, cosine"):
        Recipe(epochs=1, batch_size=8, lr=0.1, schedule="linear")


@pytest.mark.parametrize("schedule", ["step", "cosine"])
def test_the_schedule_steps_once_per_epoch_as_lr_at_says(schedule):
    X, y = _data()
    model = torch.nn.Linear(5, 3)
    recipe = Recipe(epochs=4, batch_size=16, lr=0.1, optimizer="sgd", momentum=0.9,
                    weight_decay=5e-4, schedule=schedule, step_size=2, gamma=0.5)
    seen: list[float] = []

    class LrProbe(Hook):
        def epoch_end(self, state: StepState) -> None:
            seen.append(state.optimizer.param_groups[0]["lr"])

    log = fit(model, Supervised(X, y), recipe=recipe, order=torch.Generator().manual_seed(1),
              hooks=[LrProbe()])
    assert log.steps == 4 * 3 and len(log.train_loss) == 4
    assert seen == pytest.approx([recipe.lr_at(e + 1) for e in range(1, 5)])
    assert not model.training


def test_an_objective_task_equals_the_supervised_cross_entropy_bit_for_bit():
    X, y = _data()
    a, b = torch.nn.Linear(5, 3), torch.nn.Linear(5, 3)
    b.load_state_dict(a.state_dict())
    recipe = Recipe(epochs=3, batch_size=10, lr=0.05)
    fit(a, Supervised(X, y), recipe=recipe, order=torch.Generator().manual_seed(2))
    fit(b, Objective(lambda rows: F.cross_entropy(b(X[rows]), y[rows]), len(X)), recipe=recipe,
        order=torch.Generator().manual_seed(2))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_two_hooks_replacing_the_loss_is_a_one_line_error():
    class Smooth(Hook):
        def loss(self, logits, y, state):
            return F.cross_entropy(logits, y, label_smoothing=0.1)

    X, y = _data()
    with pytest.raises(ValueError, match="two hooks replace the loss"):
        fit(torch.nn.Linear(5, 3), Supervised(X, y), recipe=Recipe(epochs=1, batch_size=8, lr=0.1),
            order=torch.Generator(), hooks=[Smooth(), Smooth()])


def test_relaxloss_parity_and_upper_cap():
    assert RelaxLossHook(1.0, parity="reference").ascends(1)
    assert not RelaxLossHook(1.0, parity="paper").ascends(1)
    assert RelaxLossHook(1.0, parity="paper").ascends(2)
    logits = torch.tensor([[4.0, 0.0, 0.0]])
    soft = RelaxLossHook(5.0, upper=0.5)._flattened(logits, torch.tensor([0]))
    assert soft[0, 0] == pytest.approx(0.5) and soft[0, 1] == pytest.approx(0.25)
    # no cap: p_y kept
    p_y = float(torch.softmax(logits, -1)[0, 0])
    assert RelaxLossHook(5.0)._flattened(logits, torch.tensor([0]))[0, 0] == pytest.approx(p_y)


def test_relaxloss_batched_form_gives_each_model_its_single_form_loss():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 6, 4, generator=g)
    y = torch.randint(0, 4, (2, 6), generator=g)
    weights = torch.full((2, 6), 1 / 6)
    hook = RelaxLossHook(1.4, parity="paper")
    for epoch in (1, 2):
        batched = StepState(model=None, params=[], optimizer=None, n=6, device="cpu",
                            recipe=Recipe(epochs=2, batch_size=6, lr=0.1), epoch=epoch,
                            weights=weights)
        per_model = hook.loss(logits, y, batched)
        for k in range(2):
            single = StepState(model=None, params=[], optimizer=None, n=6, device="cpu",
                               recipe=Recipe(epochs=2, batch_size=6, lr=0.1), epoch=epoch)
            assert float(per_model[k]) == pytest.approx(float(hook.loss(logits[k], y[k], single)),
                                                        rel=1e-6)

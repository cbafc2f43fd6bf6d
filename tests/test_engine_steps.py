"""The engine's step driver (core.engine.steps.run_steps: K models' steps given ahead, a hook's
whole step, cancel and progress) and the plan-driven order (core.engine.order.Planned)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.engine.hooks import Hook, StepState
from core.engine.loop import Objective, fit
from core.engine.order import Planned
from core.engine.recipe import Recipe
from core.engine.steps import Steps, run_steps, step_hook


def _steps() -> Steps:
    # 2 models, 3 steps of up to 3 rows; model 1 has one step fewer and a partial batch
    index = torch.tensor([[[0, 1, 2], [3, 4, 0]],
                          [[5, 6, 0], [7, 0, 0]],
                          [[8, 0, 0], [0, 0, 0]]])
    counts = np.array([[3, 2], [2, 1], [1, 0]])
    valid = torch.arange(3).view(1, 1, 3) < torch.as_tensor(counts).unsqueeze(-1)
    return Steps(index=index, valid=valid, counts=counts)


def _state() -> StepState:
    return StepState(model=None, params=[torch.zeros(1)], optimizer=None, n=9, device="cpu",
                     recipe=Recipe(epochs=1, batch_size=3, lr=0.1, optimizer="sgd"), models=2)


class _Taker(Hook):
    per_example = True

    def __init__(self) -> None:
        self.seen: list[tuple[int, list[list[int]], torch.Tensor]] = []

    def step(self, state: StepState) -> None:
        self.seen.append((state.step, state.idx.tolist(), state.weights.clone()))


def test_a_hooks_whole_step_replaces_the_loops_step_in_the_plans_order():
    taker, called, shown = _Taker(), [], []
    state = _state()
    run_steps(state, _steps(), [taker], lambda s, j: called.append(j), dtype=torch.float64,
              progress=type("P", (), {"update": lambda self, f, m: shown.append((f, m))})(),
              every=2, report=lambda j: ((j + 1) / 3, f"step {j + 1}"))
    assert called == [] and state.step == 3
    assert [s for s, _, _ in taker.seen] == [0, 1, 2]
    assert taker.seen[1][1] == [[5, 6, 0], [7, 0, 0]]
    w = taker.seen[1][2]
    assert torch.equal(w, torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64))
    assert torch.equal(taker.seen[2][2][1], torch.zeros(3, dtype=torch.float64))  # no rows left
    assert shown == [(2 / 3, "step 2")]
    # without a hook taking it, the loop's own step runs at every position
    run_steps(_state(), _steps(), [], lambda s, j: called.append(j), dtype=torch.float32)
    assert called == [0, 1, 2]


def test_cancel_is_checked_before_every_step():
    taker = _Taker()

    def cancel() -> None:
        if len(taker.seen) == 2:
            raise RuntimeError("cancelled")

    with pytest.raises(RuntimeError, match="cancelled"):
        run_steps(_state(), _steps(), [taker], dtype=torch.float32, cancel_check=cancel)
    assert len(taker.seen) == 2


def test_one_whole_step_at_most_and_some_step_needed():
    assert step_hook([Hook(), _Taker()]).__class__ is _Taker and step_hook([Hook()]) is None
    with pytest.raises(ValueError, match=r"^hooks: _Taker, _Taker each take the whole step"):
        run_steps(_state(), _steps(), [_Taker(), _Taker()], dtype=torch.float32)
    with pytest.raises(ValueError, match=r"^step: got none"):
        run_steps(_state(), _steps(), [Hook()], dtype=torch.float32)


def test_planned_order_gives_fit_the_plans_rows_and_plain_sgd():
    index = torch.tensor([[4, 2, 0], [1, 0, 0], [3, 0, 0]])
    order = Planned(index, [3, 1])  # the third planned step is left out
    assert order.steps(5, 3) == 2
    assert [(r.tolist(), m) for r, m in order.epoch(5, 3, "cpu")] == [([4, 2, 0], 3), ([1], 1)]
    x = torch.arange(5, dtype=torch.float64)
    w = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    seen = []

    def loss(rows: torch.Tensor) -> torch.Tensor:
        seen.append(rows.tolist())
        return -(x[rows].mean() * w).sum()  # gradient −mean(x[rows])

    log = fit([w], Objective(loss, 5), recipe=Recipe(epochs=2, batch_size=3, lr=0.5,
                                                   optimizer="sgd"), order=order)
    assert seen == [[4, 2, 0], [1]] * 2 and log.steps == 4
    assert w.item() == pytest.approx(0.5 * 2 * (6 / 3 + 1))
    with pytest.raises(ValueError, match=r"^counts: got 4 counts for 3 planned steps"):
        Planned(index, [1, 1, 1, 1])
    with pytest.raises(ValueError, match=r"^counts: got 1 counts for 3 planned steps"):
        Planned(index, [4])

"""Vectorised FedAvg round: all K sampled devices train at once on device-stacked parameters.

Θ is copied K times into tensors with a leading device dimension, the sampled devices' rows of
the private parameters (Ψ, Ω) are gathered likewise (linear weights transposed to (K, in, out)
for faster batched products, :func:`core.models.nn.to_batched_layout`), and every local step is a
handful of batched products over (K, B, ·) tensors (the objective's ``stacked_step``, which
uses the modules' ``fforward`` → ``torch.baddbmm``). Because the devices' losses are
independent, the gradient of their **sum** is each device's own gradient, so one backward pass
serves all K devices (TAPPFL takes it w.r.t. each layer's output and fuses the SGD update into
the weights, :func:`core.models.nn.record_linear`).

Why batched products and not ``torch.vmap(grad(...))``: measured on 2 CPU cores for TAPPFL's
three networks (K = 10 to 100, B = 10), vmap + functional_call was 1.8-4x slower per step than the
hand-batched ``baddbmm`` forms (its per-op batching overhead dominates for these tiny layers).

Unequal local data sizes: every device's step s uses ``plan.index[:, s]`` with a mask; a
partial batch is averaged over its valid rows (``weight`` = mask / count) and a device with no
batch left gets zero gradient. With plain SGD (no momentum, no weight decay) a zero gradient is
exactly "no update", so the result equals the sequential reference (:mod:`core.fl.sequential`).

The steps run through the engine's batched step driver (:func:`core.engine.steps.run_steps`,
as :func:`core.engine.batched.fit_batched`'s do) with the round plan as the order; the
objective's ``stacked_step`` is its whole-step hook (:class:`StackedLocalStep`), since its
update (fused into recorded layers, or per-device adversary networks) is its own; a game
objective's k adversary turns per local step (TAPPFL's ``stacked_turn``) are the hook's
:class:`~core.engine.hooks.Game` turns, which the driver takes before each step.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from core.engine.hooks import Game, StepState
from core.engine.recipe import Recipe
from core.engine.steps import Steps, run_steps
from core.fl.types import (
    FedAvgState,
    LocalObjective,
    Params,
    RoundPlan,
    StackedBatch,
    adversary_turns,
)
from core.foundation.progress import Progress
from core.models.nn import from_batched_layout, to_batched_layout


def stack_rows(params: Params, rows: Tensor) -> Params:
    """Copy of the given device rows of stacked parameters."""
    return {n: v.detach().index_select(0, rows) for n, v in params.items()}


def repeat_params(params: Params, k: int) -> Params:
    """K copies of one parameter set, stacked."""
    return {n: v.detach().unsqueeze(0).repeat(k, *([1] * v.dim())) for n, v in params.items()}


def _leaves(params: Params) -> Params:
    return {n: v.contiguous() for n, v in params.items()}


def _progress_every(t: int) -> int:
    return max(1, t // 20)


#: device-chunk budget: per-chunk parameter bytes (Θ + private) kept near cache size
CHUNK_BYTES = 6 * 2**20


def chunk_size(glob: Params, private: dict[str, Params], k: int, budget: int = CHUNK_BYTES) -> int:
    """Devices per chunk so a chunk's stacked parameters stay cache-sized.

    A local step streams every stacked weight several times (two forwards, input-gradient
    backward, fused update) for only B rows per device, so once K devices' weights outgrow the
    cache a step becomes memory-bound: measured on Adult (TAPPFL nets, ~210 KB per device),
    K = 30 trained ~213 device-updates/s, K = 50 ~64 and K = 100 ~85. Devices are independent
    within a round, so K is cut into chunks of ≈ ``budget`` bytes run one after another."""
    per_dev = sum(v.numel() * v.element_size() for v in glob.values())
    per_dev += sum(v[0].numel() * v.element_size() for p in private.values() for v in p.values())
    c = max(1, int(budget // max(per_dev, 1)))
    n_chunks = -(-k // c)
    return -(-k // n_chunks)  # equal-sized chunks


def train_round_vectorised(
    objective: LocalObjective,
    state: FedAvgState,
    glob: Params,
    plan: RoundPlan,
    data: dict[str, Tensor],
    *,
    lr: float,
    progress: Progress | None = None,
    max_chunk: int | None = None,
) -> tuple[Params, dict[str, Tensor]]:
    """Train the plan's devices in parallel (in cache-sized chunks, :func:`chunk_size`, or at
    most ``max_chunk`` per chunk); returns their stacked Θ_k and summed statistics. The
    sampled rows of ``state.private`` are written back (Ψ_k, Ω_k persist)."""
    k = len(plan.devices)
    c = chunk_size(glob, state.private, k) if max_chunk is None else max(1, int(max_chunk))
    starts = list(range(0, k, c))
    thetas: list[Params] = []
    totals: dict[str, Tensor] = {}
    for j, a in enumerate(starts):
        sub = None if progress is None else progress.sub(j / len(starts), (j + 1) / len(starts))
        th, tot = _train_chunk(objective, state, glob, plan, data, slice(a, min(a + c, k)), lr=lr,
                               progress=sub)
        thetas.append(th)
        for n, v in tot.items():
            totals[n] = totals[n] + v if n in totals else v
    local = {n: torch.cat([t[n] for t in thetas]) for n in glob}
    return local, totals


class StackedLocalStep(Game):
    """The objective's ``stacked_step`` as the whole step of the engine's batched step driver
    (:func:`core.engine.steps.run_steps`): the update stays the objective's own (fused SGD on
    recorded linear layers), the driver owns the plan's order, the cancel check and the
    progress. A game objective's per-device adversary networks take their k ``stacked_turn``
    steps as this game's turns (plain SGD on the stacked private parameters, the objective's
    own update: no optimiser of the game's). Each device's terms act on its own rows; the
    per-device statistics add up in ``state.meta``."""

    per_example = True

    def __init__(self, objective: LocalObjective, theta: Params, private: dict[str, Params],
                 data: dict[str, Tensor], mask: Tensor, roll: Tensor, dropout: Tensor | None,
                 lr: float) -> None:
        super().__init__(tuple(objective.private.values()), None,
                         adversary_steps=adversary_turns(objective, "stacked_turn"))
        self.objective, self.theta, self.private, self.data = objective, theta, private, data
        self.mask, self.roll, self.dropout, self.lr = mask, roll, dropout, lr
        self.batch: StackedBatch | None = None

    def before_step(self, state: StepState) -> None:
        s, idx = state.step, state.idx
        self.batch = StackedBatch(
            fields={n: v[idx] for n, v in self.data.items()},
            mask=self.mask[:, s],
            weight=state.weights,
            roll=self.roll[:, s],
            dropout=None if self.dropout is None else self.dropout[:, s],
        )

    def adversary_turn(self, state: StepState, a: int) -> None:
        stats = self.objective.stacked_turn(self.theta, self.private, self.batch, a, self.lr)
        for n, v in stats.items():
            state.count(n, v)

    def step(self, state: StepState) -> None:
        stats = self.objective.stacked_step(self.theta, self.private, self.batch, self.lr)
        self.batch = None
        for n, v in stats.items():
            state.count(n, v)


def _train_chunk(objective, state, glob, plan, data, sl: slice, *, lr, progress):
    dev = plan.index.device
    devices = plan.devices[sl]
    k = len(devices)
    rows = torch.as_tensor(devices, dtype=torch.long, device=dev)
    theta = _leaves(to_batched_layout(repeat_params(glob, k)))
    private = {name: _leaves(to_batched_layout(stack_rows(p, rows))) for name, p in state.private.items()}
    t_max = int(np.max(plan.steps[sl])) if k else 0
    mask = plan.mask[sl, :t_max]
    steps = Steps(index=plan.index[sl, :t_max].transpose(0, 1), valid=mask.transpose(0, 1),
                  counts=plan.count[sl, :t_max].T.cpu().numpy())
    hook = StackedLocalStep(objective, theta, private, data, mask.to(torch.float32),
                            plan.roll[sl], None if plan.dropout is None else plan.dropout[sl], lr)
    run = StepState(model=None, params=list(theta.values()), optimizer=None,
                    recipe=Recipe(epochs=1, batch_size=plan.index.shape[-1], lr=lr,
                                  optimizer="sgd"),
                    n=int(np.max(plan.sizes[sl])) if k else 0, device=dev, models=k)
    run_steps(run, steps, [hook], dtype=torch.float32, progress=progress,
              every=_progress_every(t_max),
              cancel_check=None if progress is None else progress.check_cancel,
              report=lambda s: ((s + 1) / t_max, f"round {plan.round}: local step {s + 1}/{t_max}"))
    with torch.no_grad():
        for name, p in private.items():
            for n, v in from_batched_layout({n: v.detach() for n, v in p.items()}).items():
                state.private[name][n].index_copy_(0, rows, v)
    totals = {n: v.detach().sum(0) for n, v in run.meta.items()}
    return from_batched_layout({n: v.detach() for n, v in theta.items()}), totals

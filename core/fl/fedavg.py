"""FedAvg simulation, generic over a device's local update (TAPPFL spec B1, B8; McMahan et al. 2017).

One loop serves TAPPFL, the no-defense baseline (TAPPFL at λ = 0) and the DP / pruning
baselines (λ = 0 plus an upload transform). Per round t:

1. draw every random choice of the round up front from one seeded generator
   (:func:`plan_round`): the K = max(round(C·N), 1) sampled devices S_t, each device's batch
   order for its E local epochs (padded to a common step count, with masks), dropout masks and
   the seed of the upload transform;
2. each sampled device k starts from the global Θ and runs its local objective
   (:class:`LocalObjective`) — all K devices at once on stacked tensors
   (:mod:`core.fl.vectorised`) or one after another with plain modules
   (:mod:`core.fl.sequential`, the reference); per-device private networks (TAPPFL's Ψ_k, Ω_k)
   persist across rounds, only the sampled rows are updated (full-version Algorithm 1);
3. the uploads Δ_k = Θ_k − Θ pass through the upload transform (identity, DP noise, pruning)
   and the server sets Θ ← Θ + Σ_k n_k Δ'_k / Σ_k n_k (size-weighted FedAvg; with the identity
   transform this is Σ_k n_k Θ_k / Σ_k n_k).

Only the shared part Θ (the feature extractor) is federated.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch
from torch import Tensor, nn

from core.progress import Progress

Params = dict[str, Tensor]


class UploadTransform(Protocol):
    """Applied to the K sampled devices' updates before aggregation (DP noise, pruning, ...).

    ``deltas`` maps each shared parameter name to a tensor with leading dim K (Δ_k = Θ_k − Θ);
    the transform returns a dict of the same names and shapes. All randomness must come from
    ``generator`` (seeded per round by the simulator)."""

    def __call__(self, deltas: dict[str, Tensor], *, generator: torch.Generator) -> dict[str, Tensor]: ...


def identity_transform(deltas: dict[str, Tensor], *, generator: torch.Generator) -> dict[str, Tensor]:
    """The no-op upload transform (no defense on the upload)."""
    return deltas


@dataclass
class RoundPlan:
    """Every random choice of one round, drawn before training (shared by both paths).

    ``index[k, s, j]`` is the data row of slot j in local step s of sampled device k (padding
    slots point at row 0 with ``mask`` False); valid slots come first in each step. Device k
    runs its E epochs back to back, each epoch cut into ceil(n_k / B) batches (the last one
    partial), so it has ``steps[k]`` valid steps; later steps are all padding. ``roll[k, s, j]``
    is the slot of x' for slot j: the next valid slot, cyclically ((j + 1) mod m).
    """

    round: int
    devices: np.ndarray  # (K,) sorted device ids
    sizes: np.ndarray  # (K,) |D_k|
    steps: np.ndarray  # (K,) valid local steps per device
    index: Tensor  # (K, T, B) int64
    mask: Tensor  # (K, T, B) bool
    count: Tensor  # (K, T) int64 valid rows per step
    roll: Tensor  # (K, T, B) int64
    dropout: Tensor | None  # (K, T, B, H) or None
    transform_seed: int

    @property
    def num_steps(self) -> int:
        return int(self.index.shape[1])


@contextmanager
def torch_threads(n: int | None, device: torch.device | str = "cpu") -> Iterator[None]:
    """Run a block with ``n`` intra-op CPU threads (restored afterwards; no-op on CUDA).
    ``n=None`` uses the project's thread budget, ``core.experiments.compute_threads()``
    ($PRIVLAB_THREADS, default 1).

    The FedAvg tensors are tiny (K·B rows), so intra-op parallelism buys little and, on a busy
    2-core machine, OpenMP threads contending with other processes made a run up to 50x slower
    (measured: 0.6 s with 1 thread vs 32 s with 2 under load 6).
    ``torch.set_num_threads`` is process-wide: concurrent torch work in other threads of the
    same process runs with the same setting while the block is active.
    """
    if torch.device(device).type != "cpu":
        yield
        return
    if n is None:
        from core.experiments import compute_threads

        n = compute_threads()
    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(old)


def num_sampled(num_devices: int, fraction_fit: float) -> int:
    """K = max(round(C·N), 1) (rounding half up)."""
    return max(int(np.floor(fraction_fit * num_devices + 0.5)), 1)


def plan_round(
    rng: np.random.Generator,
    partition: list[np.ndarray],
    *,
    round: int,
    fraction_fit: float,
    local_epochs: int,
    batch_size: int,
    dropout: tuple[float, int] | None = None,
    device: torch.device | str = "cpu",
) -> RoundPlan:
    """Sample the round's devices and lay out their local batches (see :class:`RoundPlan`)."""
    n_dev = len(partition)
    k = num_sampled(n_dev, fraction_fit)
    devices = np.sort(rng.choice(n_dev, size=k, replace=False))
    sizes = np.array([len(partition[d]) for d in devices], dtype=np.int64)
    b = int(batch_size)
    per_epoch = -(-sizes // b)  # ceil
    steps = per_epoch * local_epochs
    t_max = max(int(steps.max()), 1)
    index = np.zeros((k, t_max, b), dtype=np.int64)
    mask = np.zeros((k, t_max, b), dtype=bool)
    for i, d in enumerate(devices):
        n, s = int(sizes[i]), int(per_epoch[i])
        if n == 0:
            continue
        rows = np.full((local_epochs, s * b), -1, dtype=np.int64)
        for e in range(local_epochs):
            rows[e, :n] = partition[d][rng.permutation(n)]
        rows = rows.reshape(local_epochs * s, b)  # each epoch's last batch holds the remainder
        valid = rows >= 0
        index[i, : len(rows)] = np.where(valid, rows, 0)
        mask[i, : len(rows)] = valid
    count = mask.sum(-1)
    j = np.arange(b)
    roll = np.where(j < count[..., None], (j + 1) % np.maximum(count[..., None], 1), j)
    drop = None
    transform_seed = int(rng.integers(2**62))
    if dropout is not None and dropout[0] > 0:
        p, h = dropout
        g = torch.Generator().manual_seed(int(rng.integers(2**62)))
        keep = torch.rand((k, t_max, b, h), generator=g) >= p
        drop = (keep.float() / (1.0 - p)).to(device)
    dev = torch.device(device)
    return RoundPlan(
        round=round, devices=devices, sizes=sizes, steps=steps.astype(np.int64),
        index=torch.from_numpy(index).to(dev), mask=torch.from_numpy(mask).to(dev),
        count=torch.from_numpy(count).to(dev), roll=torch.from_numpy(roll).to(dev),
        dropout=drop, transform_seed=transform_seed,
    )


@dataclass
class StackedBatch:
    """One local step of K devices: ``fields`` (K, B, ...), ``mask`` (K, B) float,
    ``weight`` = mask / max(count, 1) (a per-device mean over valid rows), ``roll`` (K, B)."""

    fields: dict[str, Tensor]
    mask: Tensor
    weight: Tensor
    roll: Tensor
    dropout: Tensor | None


@dataclass
class DeviceBatch:
    """One local step of one device: ``fields`` (m, ...) of the m valid rows, ``roll`` (m,)."""

    fields: dict[str, Tensor]
    roll: Tensor
    dropout: Tensor | None


class LocalObjective(Protocol):
    """A device's local update, in a stacked (vectorised) and a per-module (reference) form.

    ``shared`` is the federated module Θ; ``private`` holds templates of the per-device modules
    (their parameters live stacked over all N devices in the simulator state). Both step
    functions update parameters in place with plain SGD at ``lr`` and return per-device
    statistics (sums over the step's valid rows) as tensors — shape (K, ...) for the stacked
    form, (...) for the module form; the simulator adds them up over the round and
    :meth:`round_metrics` turns the totals into the round's curve values.

    ``stacked_step`` receives plain tensors (not requiring grad) with a leading device dim K;
    2-D linear weights arrive as ``<layer>.weight_t`` in (K, in, out) layout
    (:func:`core.nn.to_batched_layout`); the objective computes its gradients as it likes
    (TAPPFL: autograd w.r.t. layer outputs + fused updates, :func:`core.nn.record_linear`).
    ``module_step`` receives the ordinary modules loaded with one device's parameters.
    """

    shared: nn.Module
    private: dict[str, nn.Module]

    def stacked_step(self, theta: Params, private: dict[str, Params], batch: StackedBatch, lr: float) -> dict[str, Tensor]: ...

    def module_step(self, theta: nn.Module, private: dict[str, nn.Module], batch: DeviceBatch, lr: float) -> dict[str, Tensor]: ...

    def round_metrics(self, totals: dict[str, Tensor]) -> dict[str, float]: ...


@dataclass
class FedAvgState:
    """The simulation's state: the global shared module, every device's private parameters
    (stacked over all N devices), the partition (row indices into ``data``), and the curves."""

    shared: nn.Module
    private: dict[str, Params]
    partition: list[np.ndarray]
    curves: dict[str, list[float]] = field(default_factory=dict)
    round: int = 0
    last_plan: RoundPlan | None = None
    rounds_trained: np.ndarray | None = None  # (N,) how many rounds each device trained

    @property
    def last_devices(self) -> np.ndarray:
        return np.array([], dtype=np.int64) if self.last_plan is None else self.last_plan.devices


def shared_params(module: nn.Module) -> Params:
    """A detached copy of the module's parameters."""
    return {n: p.detach().clone() for n, p in module.named_parameters()}


def aggregate(
    global_params: Params,
    local_params: Params,
    sizes: np.ndarray,
    *,
    upload_transform: UploadTransform | None,
    generator: torch.Generator,
) -> Params:
    """Θ + Σ_k n_k T(Θ_k − Θ)_k / Σ_k n_k over the sampled devices (FedAvg weighted by |D_k|);
    returns Θ unchanged when the sampled devices hold no data."""
    total = float(np.sum(sizes))
    if total <= 0:
        return {n: v.clone() for n, v in global_params.items()}
    deltas = {n: local_params[n] - global_params[n].unsqueeze(0) for n in global_params}
    if upload_transform is not None:
        # a transform that acts on the uploaded weights (Θ_k = Θ + Δ_k, e.g. magnitude pruning of
        # the parameters as TAPPFL's MC baseline) declares ``needs_reference`` and gets Θ
        extra = {"reference": global_params} if getattr(upload_transform, "needs_reference", False) else {}
        deltas = upload_transform(deltas, generator=generator, **extra)
        missing = set(global_params) - set(deltas)
        if missing:
            raise ValueError(f"upload_transform: returned no update for {sorted(missing)}")
    dev = next(iter(global_params.values())).device
    w = torch.as_tensor(sizes / total, dtype=torch.float32, device=dev)
    out = {}
    for n, g in global_params.items():
        d = deltas[n]
        if d.shape != local_params[n].shape:
            raise ValueError(f"upload_transform: {n} came back with shape {tuple(d.shape)}; expected {tuple(local_params[n].shape)}")
        out[n] = g + torch.tensordot(w, d.to(g.dtype), dims=1)
    return out


def run_fedavg(
    objective: LocalObjective,
    state: FedAvgState,
    data: dict[str, Tensor],
    *,
    rounds: int,
    fraction_fit: float,
    local_epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    vectorised: bool = True,
    upload_transform: UploadTransform | None = None,
    dropout: tuple[float, int] | None = None,
    progress: Progress | None = None,
    on_round: Callable[[int, FedAvgState], None] | None = None,
    num_threads: int | None = None,
) -> FedAvgState:
    """Run ``rounds`` FedAvg rounds on ``state`` (modified in place and returned).

    ``data`` holds the device data as whole tensors on the compute device (rows indexed by the
    partition); the objective reads the fields it needs (TAPPFL: ``x`` and ``u``, never the
    task label). Round r's randomness comes from ``np.random.default_rng([seed, r])``, so the
    vectorised and sequential paths see identical batches. ``progress`` is updated per round
    and every few local steps (and raises :class:`core.progress.Cancelled` when cancelled);
    ``on_round(r, state)`` runs after each round's aggregation. ``num_threads``: CPU
    intra-op threads during the run (see :func:`torch_threads`; None = $PRIVLAB_THREADS, default 1).
    """
    dev = next(iter(data.values())).device
    with torch_threads(num_threads, dev):
        return _run_fedavg(objective, state, data, rounds=rounds, fraction_fit=fraction_fit,
                           local_epochs=local_epochs, batch_size=batch_size, lr=lr, seed=seed,
                           vectorised=vectorised, upload_transform=upload_transform,
                           dropout=dropout, progress=progress, on_round=on_round)


def _run_fedavg(objective, state, data, *, rounds, fraction_fit, local_epochs, batch_size, lr,
                seed, vectorised, upload_transform, dropout, progress, on_round) -> FedAvgState:
    from core.fl.sequential import train_round_sequential
    from core.fl.vectorised import train_round_vectorised

    dev = next(iter(data.values())).device
    n_dev = len(state.partition)
    if state.rounds_trained is None:
        state.rounds_trained = np.zeros(n_dev, dtype=np.int64)
    train_round = train_round_vectorised if vectorised else train_round_sequential
    start = state.round
    for r in range(start + 1, start + rounds + 1):
        t0 = time.perf_counter()
        rng = np.random.default_rng([int(seed), int(r)])
        plan = plan_round(
            rng, state.partition, round=r, fraction_fit=fraction_fit, local_epochs=local_epochs,
            batch_size=batch_size, dropout=dropout, device=dev,
        )
        frac0 = (r - start - 1) / rounds
        sub = None if progress is None else progress.sub(frac0, frac0 + 1.0 / rounds)
        if sub is not None:
            sub.update(0.0, f"round {r - start}/{rounds}: {len(plan.devices)} devices training")
        glob = shared_params(state.shared)
        local, totals = train_round(objective, state, glob, plan, data, lr=lr, progress=sub)
        gen = torch.Generator(device=dev).manual_seed(plan.transform_seed)
        new = aggregate(glob, local, plan.sizes, upload_transform=upload_transform, generator=gen)
        with torch.no_grad():
            for n, p in state.shared.named_parameters():
                p.copy_(new[n])
        state.round = r
        state.last_plan = plan
        state.rounds_trained[plan.devices] += 1
        metrics = objective.round_metrics(totals)
        metrics["round_seconds"] = time.perf_counter() - t0
        metrics["device_updates"] = float(len(plan.devices))
        for name, v in metrics.items():
            state.curves.setdefault(name, []).append(float(v))
        if sub is not None:
            sub.update(1.0, f"round {r - start}/{rounds} done")
        if on_round is not None:
            on_round(r, state)
    return state

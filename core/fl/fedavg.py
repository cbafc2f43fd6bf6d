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
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor, nn

from core.fl.sequential import train_round_sequential
from core.fl.types import (  # re-exported: the types' old home
    DeviceBatch,
    FedAvgState,
    LocalObjective,
    Params,
    RoundPlan,
    StackedBatch,
    UploadTransform,
    identity_transform,
)
from core.fl.vectorised import train_round_vectorised
from core.foundation.progress import Progress
from core.foundation.seeds import stream

__all__ = [
    "DeviceBatch", "FedAvgState", "LocalObjective", "Params", "RoundPlan", "StackedBatch",
    "UploadTransform", "aggregate", "identity_transform", "num_sampled", "plan_round",
    "run_fedavg", "shared_params",
]


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


def round_stream(seed: int, r: int) -> np.random.Generator:
    """Round r's generator (devices, batch order, masks, transform seeds): the simulator and
    the Flower adapter draw from the same one."""
    return stream(seed, "fedavg", "round", r)


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
    on_upload: Callable[[int, Params, Params, RoundPlan], None] | None = None,
) -> FedAvgState:
    """Run ``rounds`` FedAvg rounds on ``state`` (modified in place and returned).

    ``data`` holds the device data as whole tensors on the compute device (rows indexed by the
    partition); the objective reads the fields it needs (TAPPFL: ``x`` and ``u``, never the
    task label). Round r's randomness comes from ``round_stream(seed, r)``, so the
    vectorised and sequential paths see identical batches. ``progress`` is updated per round
    and every few local steps (and raises :class:`core.foundation.progress.Cancelled` when cancelled);
    ``on_round(r, state)`` runs after each round's aggregation. ``on_upload(r, global_params,
    local_params, plan)`` runs every round **before** aggregation (the upload observer, e.g. a
    gradient-inversion attacker at the server): ``global_params`` is Θ the devices started from
    (a copy), ``local_params`` the K sampled devices' trained Θ_k stacked on a leading dim
    (rows in ``plan.devices`` order, before the upload transform), ``plan`` the round's
    :class:`RoundPlan` (which data rows each device used). The tensors are fresh each round
    (the observer may keep them) but are read by the aggregation afterwards, so it must not
    modify them in place. Sets no thread counts: the
    caller's budget applies (:func:`core.foundation.threads.thread_limits`, inside
    :func:`core.runs.experiments.run`).
    """
    dev = next(iter(data.values())).device
    n_dev = len(state.partition)
    if state.rounds_trained is None:
        state.rounds_trained = np.zeros(n_dev, dtype=np.int64)
    train_round = train_round_vectorised if vectorised else train_round_sequential
    start = state.round
    for r in range(start + 1, start + rounds + 1):
        t0 = time.perf_counter()
        rng = round_stream(seed, r)
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
        if on_upload is not None:
            on_upload(r, glob, local, plan)
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

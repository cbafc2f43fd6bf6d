"""Federated learning simulation: FedAvg generic over a device's local update (DESIGN: fl/).

- :func:`run_fedavg` — the loop (sampling, local training, upload transform, weighted mean);
- vectorised path (:mod:`core.fl.vectorised`, all sampled devices in one set of batched tensor
  ops) and the sequential reference (:mod:`core.fl.sequential`);
- :class:`UploadTransform` — the hook DP noise / pruning plug into;
- the shared types live in :mod:`core.fl.types` (fedavg → vectorised / sequential → types).
"""

from core.fl.fedavg import aggregate, num_sampled, plan_round, run_fedavg
from core.fl.types import (
    DeviceBatch,
    FedAvgState,
    LocalObjective,
    Params,
    RoundPlan,
    StackedBatch,
    UploadTransform,
    identity_transform,
)

__all__ = [
    "DeviceBatch", "FedAvgState", "LocalObjective", "Params", "RoundPlan", "StackedBatch",
    "UploadTransform", "aggregate", "identity_transform", "num_sampled", "plan_round", "run_fedavg",
]

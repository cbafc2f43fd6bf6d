"""κ-channel devices on a real Flower federation (extra ``scale``): a thin caller of the
generic adapter :func:`core.fl.flower.run_flower_fedavg`, as :mod:`core.defenses.tappfl_flower`
is for TAPPFL.

Each device perturbs its own batches with the channel's noise (spec 001 §3.6: x̃ = x + ξ,
fresh per sample and step, ξ solved from κ by Eqs. 18-20) before its local SGD step. For the
federation to be reproducible, a device's noise must not depend on which process trains it:
:class:`ChannelDeviceObjective` keeps each device's noise-stream position as a *private*
network (:class:`DeviceNoiseState`: its id and the number of local steps it has perturbed),
which the simulator stacks over devices and Flower keeps in each node's ``context.state``,
exactly like TAPPFL's per-device adversaries. Step s of device k draws its noise from the
stream (seed, "device_noise", k, s) (:mod:`core.foundation.seeds`). So the simulator (vectorised or
sequential) and Flower draw the same noise and reach the same global model up to float summation order
(tests/test_flower_channel.py). In distribution this is the same channel as
:class:`core.fl.image_objective.NoisyImageObjective` with a ``perturb`` (independent noise
per row and step); only the bookkeeping of the random stream differs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from core.fl.flower import MISSING_FLOWER, FlowerRun, ObjectiveRecipe, run_flower_fedavg
from core.fl.image_objective import NoisyImageObjective
from core.fl.types import DeviceBatch, FedAvgState, StackedBatch
from core.foundation.seeds import torch_stream

__all__ = ["MISSING_FLOWER", "ChannelDeviceObjective", "DeviceNoiseState", "channel_objective",
           "channel_recipe", "channel_state", "run_flower_channel"]


class DeviceNoiseState(nn.Module):
    """A device's noise-stream position, held as (non-trained) parameters so that it lives
    where every per-device network lives: its ``device_id`` and the local ``step`` count."""

    def __init__(self) -> None:
        super().__init__()
        self.device_id = nn.Parameter(torch.zeros(1), requires_grad=False)
        self.step = nn.Parameter(torch.zeros(1), requires_grad=False)


class ChannelDeviceObjective(NoisyImageObjective):
    """:class:`NoisyImageObjective` whose devices draw the channel noise ``noise``
    (:class:`core.defenses.channel.ChannelNoise`) from their own keyed streams."""

    def __init__(self, model: nn.Module, image_shape: tuple[int, ...], noise, seed: int = 0) -> None:
        super().__init__(model, image_shape, perturb=None, seed=seed)
        self.noise = noise
        self.private = {"noise": DeviceNoiseState()}

    def _draw(self, x_flat: Tensor, device: int, step: int) -> Tensor:
        """x + ξ for one device's valid rows of one step, from the (seed, device, step) stream."""
        gen = torch_stream(self.seed, "device_noise", device, step, device=x_flat.device)
        return self.noise.perturb(x_flat, generator=gen)

    def module_loss(self, theta: nn.Module, private: dict[str, nn.Module], batch: DeviceBatch,
                    lr: float) -> tuple[Tensor, dict[str, Tensor]]:
        st = private["noise"]
        x = batch.fields["x"]
        xn = self._draw(x.reshape(len(x), -1), int(st.device_id.item()), int(st.step.item()))
        with torch.no_grad():
            st.step.add_(1.0)
        noisy = DeviceBatch(fields={**batch.fields, "x": xn.reshape(x.shape)}, roll=batch.roll,
                            dropout=batch.dropout)
        return super().module_loss(theta, private, noisy, lr)

    def stacked_step(self, theta, private, batch: StackedBatch, lr: float) -> dict[str, Tensor]:
        ids, steps = private["noise"]["device_id"], private["noise"]["step"]
        x = batch.fields["x"]
        counts = batch.mask.sum(1).to(torch.int64).tolist()
        xn = x.clone()
        for k, m in enumerate(counts):  # valid rows come first in every step (RoundPlan)
            if m:
                xn[k, :m] = self._draw(x[k, :m].reshape(m, -1), int(ids[k, 0]),
                                       int(steps[k, 0])).reshape(x[k, :m].shape)
                steps[k, 0] += 1.0  # a padding step (no rows) is no step of the device's
        noisy = StackedBatch(fields={**batch.fields, "x": xn}, mask=batch.mask,
                             weight=batch.weight, roll=batch.roll, dropout=batch.dropout)
        return super().stacked_step(theta, private, noisy, lr)


def _dataset_and_noise(data: str, seed: int, channel: str, kappa: float,
                       max_samples: int | None):
    from core.bounds.channel_readout import image_spectrum
    from core.catalog.channel import ChannelDefense
    from core.config.schema import DataSpec
    from core.data import load_dataset
    from core.defenses.channel import channel_from_block

    ds = load_dataset(DataSpec(name=data, max_samples=max_samples), seed)
    spec = image_spectrum(np.asarray(ds.X)[ds.split("train")])
    _, noise = channel_from_block(ChannelDefense(channel=channel, kappa=kappa), spec,
                                  ds.image_shape)
    return ds, noise


def channel_objective(data: str, seed: int, model: str, channel: str, kappa: float,
                      max_samples: int | None = None) -> ChannelDeviceObjective:
    """The objective a Flower client rebuilds by name: the image classifier ``model`` (its
    weights arrive in each message), and the ``channel`` noise solved from ``kappa`` on the
    train split's spectrum of ``data`` (loaded offline, seeded as the run's)."""
    from core.models.nn import image_classifier

    ds, noise = _dataset_and_noise(data, seed, channel, kappa, max_samples)
    net = image_classifier(model, ds.image_shape, len(ds.label_names))
    return ChannelDeviceObjective(net, ds.image_shape, noise, seed=seed)


def channel_recipe(data: str, seed: int, model: str, channel: str, kappa: float,
                   max_samples: int | None = None) -> ObjectiveRecipe:
    return ObjectiveRecipe("channel", {
        "data": data, "seed": int(seed), "model": model, "channel": channel,
        "kappa": float(kappa), "max_samples": max_samples})


def channel_state(objective: ChannelDeviceObjective, partition: list[np.ndarray],
                  init_seed: int) -> FedAvgState:
    """The initial state: the classifier seeded from ``init_seed``, every device's noise
    stream at step 0."""
    from core.models.nn import seeded

    seeded(objective.shared, init_seed)
    n = len(partition)
    private = {"noise": {"device_id": torch.arange(n, dtype=torch.float32).unsqueeze(1),
                         "step": torch.zeros(n, 1)}}
    return FedAvgState(shared=objective.shared, private=private, partition=partition)


def run_flower_channel(recipe: ObjectiveRecipe, partition: list[np.ndarray], *, rounds: int,
                       fraction_fit: float, local_epochs: int, batch_size: int, lr: float,
                       seed: int, num_cpus: int = 2) -> tuple[FlowerRun, dict[str, Any]]:
    """κ-channel devices through Flower: the recipe's objective and initial state, the data
    set's rows as the federation's data; returns the Flower run and the data tensors."""
    objective = recipe.build()
    ds, _ = _dataset_and_noise(recipe.kwargs["data"], recipe.kwargs["seed"],
                               recipe.kwargs["channel"], recipe.kwargs["kappa"],
                               recipe.kwargs.get("max_samples"))
    data = {"x": torch.tensor(np.asarray(ds.X), dtype=torch.float32),
            "y": torch.tensor(np.asarray(ds.y), dtype=torch.int64)}
    state = channel_state(objective, partition, seed)
    run = run_flower_fedavg(recipe, state, data, rounds=rounds, fraction_fit=fraction_fit,
                            local_epochs=local_epochs, batch_size=batch_size, lr=lr, seed=seed,
                            num_cpus=num_cpus)
    return run, data

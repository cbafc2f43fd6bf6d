"""TAPPFL's FedAvg run through Flower (extra ``scale``): a thin caller of the generic adapter
:func:`core.fl.flower.run_flower_fedavg` (benchmarks/fedavg_speed.py sets its device-updates/s
against :mod:`core.fl.vectorised` and the sequential reference).

TAPPFL's specifics live here: the objective factory :func:`tappfl_objective` (what each Flower
client rebuilds, by name, with JSON-able arguments) and the initial state — Θ⁰ after the
optional central pretraining, every device's initial Ψ_k, Ω_k and the partition — which comes
from :func:`core.defenses.tappfl.train_tappfl` itself run with zero rounds. So the global
extractor equals the simulator's after the same rounds (up to float summation order;
tests/test_flower_adapter.py).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from core.config.schema import TappflConfig
from core.data.base import Dataset
from core.fl.flower import MISSING_FLOWER, ObjectiveRecipe, run_flower_fedavg
from core.foundation.checks import check_int

__all__ = ["MISSING_FLOWER", "run_flower_simulation", "tappfl_objective", "tappfl_recipe"]


def tappfl_objective(in_dim: int, n_values: int, hidden_dim: int, representation_dim: int,
                     critic_hidden: int, tradeoff_lambda: float, adversary_steps: int = 1,
                     adversary_lr_scale: float = 1.0, model: dict[str, Any] | None = None,
                     in_shape: list[int] | None = None, seed: int = 0):
    """TAPPFL's local objective on fresh template modules (the factory a Flower client calls).
    ``model`` (a :class:`core.config.schema.ModelSpec` as JSON) with the data's ``in_shape`` builds
    the architecture's networks (:func:`core.defenses.tappfl_conv.build_networks`; ``seed``
    seeds its dropout stream); None: the MLP extractor of ``hidden_dim`` /
    ``representation_dim``."""
    from core.defenses.tappfl import TappflObjective
    from core.models.nn import AttributeAdversary, Encoder, MICritic

    if model is not None:
        from core.config.schema import ModelSpec
        from core.defenses.tappfl_conv import ConvTappflObjective, build_networks

        spec = ModelSpec.model_validate(model)
        if in_shape is None:
            raise ValueError("in_shape: got None; allowed: the data's (C, H, W) with a model")
        ext, make_adv, make_critic, _ = build_networks(
            spec.arch, spec.width, tuple(int(s) for s in in_shape), n_values,
            hidden_dim=hidden_dim, critic_hidden=critic_hidden, seed=seed)
        return ConvTappflObjective(ext, make_adv(), make_critic(),
                                   tradeoff_lambda=tradeoff_lambda,
                                   adversary_steps=adversary_steps,
                                   adversary_lr_scale=adversary_lr_scale)
    return TappflObjective(
        Encoder(in_dim, hidden=hidden_dim, rep_dim=representation_dim),
        AttributeAdversary(representation_dim, n_values, hidden=hidden_dim),
        MICritic(in_dim, representation_dim, n_values, hidden=critic_hidden),
        tradeoff_lambda=tradeoff_lambda, adversary_steps=adversary_steps,
        adversary_lr_scale=adversary_lr_scale,
    )


def tappfl_recipe(cfg: TappflConfig, in_dim: int, n_values: int,
                  in_shape: tuple[int, ...] | None = None) -> ObjectiveRecipe:
    """The recipe a Flower client builds its objective from: ``cfg.model`` and the data's
    ``in_shape`` travel with it when the model is not the default MLP."""
    kwargs: dict[str, Any] = {
        "in_dim": int(in_dim), "n_values": int(n_values), "hidden_dim": cfg.hidden_dim,
        "representation_dim": cfg.representation_dim, "critic_hidden": cfg.critic_hidden,
        "tradeoff_lambda": cfg.tradeoff_lambda, "adversary_steps": cfg.adversary_steps,
        "adversary_lr_scale": cfg.adversary_lr_scale,
    }
    if cfg.model != type(cfg.model)():
        if in_shape is None:
            raise ValueError(f"in_shape: got None; allowed: the data's (C, H, W) with "
                             f"model.arch {cfg.model.arch!r}")
        kwargs.update(model=cfg.model.model_dump(mode="json"),
                      in_shape=[int(s) for s in in_shape], seed=int(cfg.seed))
    return ObjectiveRecipe("tappfl", kwargs)


def _initial_state(cfg: TappflConfig, ds: Dataset):
    """``train_tappfl`` with zero rounds: pretraining, initial Ψ_k / Ω_k, the partition.
    (``model_copy(update=...)`` skips validation, which requires rounds >= 1.)"""
    from core.defenses.tappfl import train_tappfl

    zero = cfg.model_copy(update={"fl": cfg.fl.model_copy(update={"rounds": 0})})
    return train_tappfl(zero, ds, vectorised=False, num_threads=1)


def run_flower_simulation(
    cfg: TappflConfig,
    ds: Dataset,
    *,
    rounds: int | None = None,
    fraction_fit: float | None = None,
    local_epochs: int | None = None,
    num_cpus: int = 2,
) -> dict[str, Any]:
    """Run TAPPFL's FedAvg (``cfg``; ``rounds`` / ``fraction_fit`` / ``local_epochs`` override
    ``cfg.fl``) in Flower's Ray simulation with ``num_cpus`` CPUs, one CPU (one Ray actor,
    one torch thread) per client.

    Returns ``device_updates`` (sampled devices summed over rounds), ``seconds`` (summed round
    wall time), ``device_updates_per_s``, ``round_seconds`` (per round),
    ``best_round_device_updates_per_s``, ``train_seconds`` / ``client_seconds`` (summed over
    device-updates: local training alone / the whole ClientApp call, measured in the actors),
    ``setup_seconds``, ``wall_seconds``, ``curves`` (TAPPFL's per-round metrics, with
    round_seconds, device_updates, train_seconds, client_seconds), ``extractor`` (the global
    Θ as name → numpy array), ``private`` (every device's Ψ_k, Ω_k: network → name → array
    stacked over devices), ``flwr_version``, ``ray_version``, ``backend`` ("ray"),
    ``num_cpus``, ``api``. Raises ImportError without Flower (extra ``scale``).
    """
    check_int("num_cpus", num_cpus, 1)
    fl = cfg.fl.model_copy(update={k: v for k, v in (("rounds", rounds), ("fraction_fit", fraction_fit),
                                                      ("local_epochs", local_epochs)) if v is not None})
    cfg = cfg.model_copy(update={"fl": fl, "device": "cpu"})
    cfg = TappflConfig.model_validate_json(cfg.model_dump_json())  # validate the overrides
    fl = cfg.fl
    t_wall = time.perf_counter()
    st = _initial_state(cfg, ds)
    data = {"x": torch.tensor(np.asarray(ds.X), dtype=torch.float32),
            "u": torch.tensor(np.asarray(ds.attribute(st.attribute)), dtype=torch.long)}
    run = run_flower_fedavg(
        tappfl_recipe(cfg, ds.X.shape[1], st.n_values, ds.image_shape), st.fed, data,
        rounds=fl.rounds, fraction_fit=fl.fraction_fit, local_epochs=fl.local_epochs,
        batch_size=fl.batch_size, lr=fl.lr, seed=cfg.seed, num_cpus=num_cpus,
    )
    curves = run.state.curves
    secs, k = curves["round_seconds"], curves["device_updates"]
    total = float(np.sum(secs))
    best = int(np.argmin(np.array(secs) / np.array(k)))
    return {
        "device_updates": int(np.sum(k)),
        "seconds": total,
        "device_updates_per_s": float(np.sum(k)) / total,
        "round_seconds": list(secs),
        "best_round_device_updates_per_s": k[best] / secs[best],
        # inside the actors: local training alone, and the whole ClientApp call (records, state)
        "train_seconds": float(np.sum(curves["train_seconds"])),
        "client_seconds": float(np.sum(curves["client_seconds"])),
        "setup_seconds": run.setup_seconds,
        "wall_seconds": time.perf_counter() - t_wall,
        "curves": curves,
        "extractor": {n: v.detach().cpu().numpy() for n, v in st.extractor.named_parameters()},
        "private": {name: {n: v.detach().cpu().numpy() for n, v in ps.items()}
                    for name, ps in run.state.private.items()},
        "flwr_version": run.flwr_version,
        "ray_version": run.ray_version,
        "backend": run.backend,
        "num_cpus": run.num_cpus,
        "api": run.api,
    }

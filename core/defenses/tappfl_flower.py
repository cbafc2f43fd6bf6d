"""TAPPFL's FedAvg run through Flower's simulation engine (extra ``scale``; issue 3's comparison).

The same model, data, partition, local objective and rounds as :func:`core.defenses.tappfl.train_tappfl`,
but every device-update goes through Flower (``flwr.simulation.run_simulation``, Message API:
a ``ServerApp`` main loop and a ``ClientApp`` on Ray actors), so the device-updates/s of
:mod:`core.fl.vectorised` and of the sequential reference can be set against a standard FL
simulator (benchmarks/fedavg_speed.py).

Nothing is re-implemented:

- the initial state (Θ⁰ after the optional central pretraining, every device's initial Ψ_k,
  Ω_k, the partition) comes from ``train_tappfl`` itself run with zero rounds;
- the server draws each round with :func:`core.fl.fedavg.plan_round` from the same seeded
  generator as :func:`core.fl.fedavg.run_fedavg` (same sampled devices, same batch order) and
  aggregates with :func:`core.fl.fedavg.aggregate` (Θ ← Σ_k n_k Θ_k / Σ_k n_k, the extractor only);
- a client trains with :func:`core.fl.sequential.train_round_sequential` on a one-device slice
  of the round plan, i.e. ``TappflObjective.module_step`` on exactly the reference's batches.

So the global extractor equals the sequential reference's after the same rounds (up to float
summation order; tests/test_flower_adapter.py).

State: Flower's ClientApps are stateless; a device's private networks Ψ_k, Ω_k live in its
node's ``context.state`` (an ``ArrayRecord`` named ``private``), which the simulation engine
keeps per node across rounds and ships to whichever Ray actor runs the node's next message.
A device never sampled before starts from its initial Ψ_k, Ω_k, read (once per actor process)
from a per-run npz file next to the data, as a real device would read its own storage. Clients
read the data set from that npz file too (memoised per actor process), not from the messages.
Each train message carries Θ and the device's slice of the round plan (batch rows, x' roll).

Timing: ``seconds`` sums the rounds' wall time measured by the ServerApp (planning, messages to
and from the Ray actors, local training, aggregation — like ``round_seconds`` of the in-process
simulators); Ray start-up, actor spawn and a warm-up query to every node (which also maps
Flower's node ids to partition ids) are reported separately as ``setup_seconds``. CPU only.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core.config import TappflConfig
from core.data.base import Dataset

MISSING_FLOWER = "Flower comparison needs the scale extra: pip install 'privlab[scale]'"

#: node_config key under which Flower's simulation engine gives a node its partition id
PARTITION_ID_KEY = "partition-id"


def _import_flwr():
    """Import flwr and ray lazily (telemetry off: this is an offline lab)."""
    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
    try:
        import flwr
        import ray  # noqa: F401
    except ImportError as exc:
        raise ImportError(MISSING_FLOWER) from exc
    return flwr


# ---------------------------------------------------------------------------------------------
# client side (runs inside the Ray actors)

_CLIENT_CACHE: dict[str, dict[str, Any]] = {}
_CLIENT_LOCK = threading.Lock()


def _client_env(path: str, cfg_json: str) -> dict[str, Any]:
    """Per actor process: the data tensors, the initial private stacks and TAPPFL's objective
    with template modules (loaded once per run file)."""
    with _CLIENT_LOCK:
        env = _CLIENT_CACHE.get(path)
        if env is not None:
            return env
        from core.defenses.tappfl import TappflObjective
        from core.nn import AttributeAdversary, Encoder, MICritic

        cfg = TappflConfig.model_validate_json(cfg_json)
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        x = torch.from_numpy(arrays.pop("data/x"))
        u = torch.from_numpy(arrays.pop("data/u"))
        n_values = int(arrays.pop("meta/n_values"))
        d = x.shape[1]
        objective = TappflObjective(
            Encoder(d, hidden=cfg.hidden_dim, rep_dim=cfg.representation_dim),
            AttributeAdversary(cfg.representation_dim, n_values, hidden=cfg.hidden_dim),
            MICritic(d, cfg.representation_dim, n_values, hidden=cfg.critic_hidden),
            tradeoff_lambda=cfg.tradeoff_lambda, adversary_steps=cfg.adversary_steps,
            adversary_lr_scale=cfg.adversary_lr_scale,
        )
        env = {"data": {"x": x, "u": u}, "init": arrays, "objective": objective, "lr": cfg.fl.lr}
        _CLIENT_CACHE.clear()  # one run at a time per actor
        _CLIENT_CACHE[path] = env
        return env


def _np_record(arrays: dict[str, np.ndarray]):
    from flwr.app import Array, ArrayRecord

    return ArrayRecord({k: Array(np.ascontiguousarray(v)) for k, v in arrays.items()})


def _from_record(record) -> dict[str, np.ndarray]:
    return {k: v.numpy() for k, v in record.items()}


def _client_query(msg, context):
    """Warm-up and node → partition map: load the run's files, report the partition id."""
    from flwr.app import ConfigRecord, RecordDict

    setup = msg.content["setup"]
    _client_env(str(setup["path"]), str(setup["cfg"]))
    pid = int(context.node_config[PARTITION_ID_KEY])
    return msg.create_reply(RecordDict({"node": ConfigRecord({"partition_id": pid})}))


def _client_train(msg, context):
    """One device's local training: TAPPFL's ``module_step`` over the device's batches of the
    round plan, via the sequential reference's round function on a one-device plan."""
    from flwr.app import MetricRecord, RecordDict

    from core.fl.sequential import train_round_sequential
    from core.fl.types import FedAvgState, RoundPlan
    from core.threads import thread_limits

    t_start = time.perf_counter()
    setup = msg.content["setup"]
    env = _client_env(str(setup["path"]), str(setup["cfg"]))
    pid = int(context.node_config[PARTITION_ID_KEY])
    if int(setup["device"]) != pid:
        raise RuntimeError(f"device {setup['device']} sent to the node of partition {pid}")
    objective = env["objective"]
    if "private" in context.state:  # Ψ_k, Ω_k from this device's previous round
        own = _from_record(context.state["private"])
    else:  # first round of this device: its initial Ψ_k, Ω_k
        own = {k: v[pid] for k, v in env["init"].items()}
    private = {name: {} for name in objective.private}
    for key, v in own.items():
        name, param = key.split("/", 1)
        private[name][param] = torch.from_numpy(np.array(v)).unsqueeze(0)
    glob = {k: torch.from_numpy(np.array(v)) for k, v in _from_record(msg.content["theta"]).items()}
    p = _from_record(msg.content["plan"])
    index = torch.from_numpy(p["index"]).unsqueeze(0)
    count = torch.from_numpy(p["count"]).unsqueeze(0)
    b = index.shape[-1]
    plan = RoundPlan(
        round=int(setup["round"]), devices=np.array([0]), sizes=np.array([int(setup["size"])]),
        steps=np.array([index.shape[1]]), index=index,
        mask=torch.arange(b) < count.unsqueeze(-1), count=count,
        roll=torch.from_numpy(p["roll"]).unsqueeze(0), dropout=None, transform_seed=0,
    )
    state = FedAvgState(shared=objective.shared, private=private, partition=[])
    t_train = time.perf_counter()
    # the one thread setting outside core.experiments.run: this is a Ray worker process, which
    # no run() budget reaches (one CPU per client, see run_flower_simulation)
    with thread_limits(1):
        local, totals = train_round_sequential(objective, state, glob, plan, env["data"], lr=env["lr"])
    t_train = time.perf_counter() - t_train
    context.state["private"] = _np_record(
        {f"{name}/{n}": v[0].numpy() for name, ps in private.items() for n, v in ps.items()})
    return msg.create_reply(RecordDict({
        "theta": _np_record({n: v[0].numpy() for n, v in local.items()}),
        "stats": _np_record({n: np.atleast_1d(v.numpy()) for n, v in totals.items()}),
        "metrics": MetricRecord({"num-examples": int(setup["size"]), "train-seconds": t_train,
                                 "client-seconds": time.perf_counter() - t_start}),
    }))


def _make_client_app():
    from flwr.clientapp import ClientApp

    app = ClientApp()
    app.query()(_client_query)
    app.train()(_client_train)
    return app


# ---------------------------------------------------------------------------------------------
# server side (runs in this process, in Flower's ServerApp thread)


def _initial_state(cfg: TappflConfig, ds: Dataset):
    """``train_tappfl`` with zero rounds: pretraining, initial Ψ_k / Ω_k, the partition.
    (``model_copy(update=...)`` skips validation, which requires rounds >= 1.)"""
    from core.defenses.tappfl import train_tappfl

    zero = cfg.model_copy(update={"fl": cfg.fl.model_copy(update={"rounds": 0})})
    return train_tappfl(zero, ds, vectorised=False, num_threads=1)


def _write_run_file(path: Path, ds: Dataset, st) -> None:
    arrays = {
        "data/x": np.asarray(ds.X, dtype=np.float32),
        "data/u": np.asarray(ds.attribute(st.attribute), dtype=np.int64),
        "meta/n_values": np.asarray(st.n_values),
    }
    for name, params in st.fed.private.items():
        for n, v in params.items():
            arrays[f"{name}/{n}"] = v.detach().cpu().numpy()
    np.savez(path, **arrays)


@contextmanager
def _quiet_flower() -> Iterator[None]:
    """Flower's log at ERROR (its deprecation notice for ``run_simulation`` included), Ray's
    accelerator FutureWarning off; restores the PYTHONPATH that Flower's Ray backend rewrites."""
    logger = logging.getLogger("flwr")
    level = logger.level
    env = {k: os.environ.get(k) for k in ("PYTHONPATH", "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO")}
    os.environ["RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"] = "0"
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning, module="ray")
            yield
    finally:
        logger.setLevel(level)
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _wait_for_nodes(grid, n: int, timeout: float = 120.0) -> list[int]:
    t0 = time.perf_counter()
    while True:
        ids = sorted(grid.get_node_ids())
        if len(ids) >= n:
            return ids
        if time.perf_counter() - t0 > timeout:
            raise RuntimeError(f"Flower simulation: {len(ids)} of {n} nodes after {timeout:.0f} s")
        time.sleep(0.05)


def _replies(grid, messages: list) -> list:
    replies = list(grid.send_and_receive(messages))
    for m in replies:
        if m.has_error():
            raise RuntimeError(f"Flower client failed: {m.error.reason}")
    if len(replies) != len(messages):
        raise RuntimeError(f"Flower simulation: {len(replies)} replies to {len(messages)} messages")
    return replies


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
    Θ as name → numpy array), ``flwr_version``, ``ray_version``, ``backend`` ("ray"), ``num_cpus``, ``api``.
    Raises ImportError without Flower (extra ``scale``).
    """
    flwr = _import_flwr()
    import ray
    from flwr.app import ConfigRecord, Message, RecordDict
    from flwr.serverapp import ServerApp
    from flwr.simulation import run_simulation

    from core.defenses.tappfl import TappflObjective
    from core.fl.fedavg import aggregate, plan_round

    if num_cpus < 1:
        raise ValueError(f"num_cpus: got {num_cpus}; allowed range >= 1")
    fl = cfg.fl.model_copy(update={k: v for k, v in (("rounds", rounds), ("fraction_fit", fraction_fit),
                                                      ("local_epochs", local_epochs)) if v is not None})
    cfg = cfg.model_copy(update={"fl": fl, "device": "cpu"})
    cfg = TappflConfig.model_validate_json(cfg.model_dump_json())  # validate the overrides
    fl = cfg.fl
    t_wall = time.perf_counter()
    st = _initial_state(cfg, ds)
    glob = {n: p.detach().clone() for n, p in st.extractor.named_parameters()}
    objective = TappflObjective(st.extractor, st.adversary, st.critic,
                                tradeoff_lambda=cfg.tradeoff_lambda)  # its round_metrics only
    n_dev = fl.num_devices
    out: dict[str, Any] = {}

    with tempfile.TemporaryDirectory(prefix="privlab-flwr-") as tmp:
        path = str(Path(tmp) / "run.npz")
        _write_run_file(Path(path), ds, st)
        cfg_json = cfg.model_dump_json()
        server = ServerApp()

        @server.main()
        def _main(grid, context) -> None:  # Flower's ServerApp main signature
            node_ids = _wait_for_nodes(grid, n_dev)
            setup = {"path": path, "cfg": cfg_json}
            replies = _replies(grid, [
                Message(RecordDict({"setup": ConfigRecord(setup)}), dst_node_id=nid, message_type="query")
                for nid in node_ids])
            node_of = {int(m.content["node"]["partition_id"]): m.metadata.src_node_id for m in replies}
            out["setup_seconds"] = time.perf_counter() - t_wall
            theta = dict(glob)
            curves: dict[str, list[float]] = {}
            for r in range(1, fl.rounds + 1):
                t0 = time.perf_counter()
                plan = plan_round(np.random.default_rng([int(cfg.seed), int(r)]), st.partition,
                                  round=r, fraction_fit=fl.fraction_fit,
                                  local_epochs=fl.local_epochs, batch_size=fl.batch_size)
                theta_np = _np_record({n: v.numpy() for n, v in theta.items()})
                msgs = []
                for i, d in enumerate(plan.devices):
                    t = int(plan.steps[i])
                    content = RecordDict({
                        "setup": ConfigRecord({**setup, "round": r, "device": int(d),
                                               "size": int(plan.sizes[i])}),
                        "theta": theta_np,
                        "plan": _np_record({"index": plan.index[i, :t].numpy(),
                                            "count": plan.count[i, :t].numpy(),
                                            "roll": plan.roll[i, :t].numpy()}),
                    })
                    msgs.append(Message(content, dst_node_id=node_of[int(d)], message_type="train"))
                replies = _replies(grid, msgs)
                by_node = {m.metadata.src_node_id: m for m in replies}
                ordered = [by_node[node_of[int(d)]] for d in plan.devices]
                thetas = [_from_record(m.content["theta"]) for m in ordered]
                local = {n: torch.from_numpy(np.stack([t[n] for t in thetas])) for n in theta}
                sizes = np.array([int(m.content["metrics"]["num-examples"]) for m in ordered])
                theta = aggregate(theta, local, sizes, upload_transform=None,
                                  generator=torch.Generator().manual_seed(plan.transform_seed))
                totals: dict[str, torch.Tensor] = {}
                for m in ordered:
                    for n, v in _from_record(m.content["stats"]).items():
                        v = torch.from_numpy(v)
                        totals[n] = totals[n] + v if n in totals else v
                metrics = objective.round_metrics(totals)
                metrics["round_seconds"] = time.perf_counter() - t0
                for key in ("train-seconds", "client-seconds"):  # summed over the round's devices
                    metrics[key.replace("-", "_")] = float(sum(float(m.content["metrics"][key])
                                                               for m in ordered))
                metrics["device_updates"] = float(len(plan.devices))
                for name, v in metrics.items():
                    curves.setdefault(name, []).append(float(v))
            out["theta"] = theta
            out["curves"] = curves

        backend_config = {
            "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
            "init_args": {"num_cpus": int(num_cpus), "num_gpus": 0, "include_dashboard": False,
                          "logging_level": "ERROR", "log_to_driver": False,
                          "object_store_memory": 200 * 2**20},
        }
        with _quiet_flower():
            run_simulation(server_app=server, client_app=_make_client_app(), num_supernodes=n_dev,
                           backend_name="ray", backend_config=backend_config, verbose_logging=False)
    if "theta" not in out:
        raise RuntimeError("Flower simulation ended without finishing its rounds")
    secs = out["curves"]["round_seconds"]
    k = out["curves"]["device_updates"]
    total = float(np.sum(secs))
    best = int(np.argmin(np.array(secs) / np.array(k)))
    return {
        "device_updates": int(np.sum(k)),
        "seconds": total,
        "device_updates_per_s": float(np.sum(k)) / total,
        "round_seconds": list(secs),
        "best_round_device_updates_per_s": k[best] / secs[best],
        # inside the actors: local training alone, and the whole ClientApp call (records, state)
        "train_seconds": float(np.sum(out["curves"]["train_seconds"])),
        "client_seconds": float(np.sum(out["curves"]["client_seconds"])),
        "setup_seconds": out["setup_seconds"],
        "wall_seconds": time.perf_counter() - t_wall,
        "curves": out["curves"],
        "extractor": {n: v.detach().cpu().numpy() for n, v in out["theta"].items()},
        "flwr_version": flwr.__version__,
        "ray_version": ray.__version__,
        "backend": "ray",
        "num_cpus": int(num_cpus),
        "api": "flwr.simulation.run_simulation (Message API: ServerApp main loop + ClientApp train/query)",
    }


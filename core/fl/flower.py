"""FedAvg of any local objective through Flower (extra ``scale``: ``flwr[simulation]``, Ray).

The same rounds as :func:`core.fl.fedavg.run_fedavg`, but every device-update is a Flower
message (Message API: a ``ServerApp`` main loop and a ``ClientApp``; in simulation the
ClientApps run on Ray actors via ``flwr.simulation.run_simulation``). Nothing is
re-implemented:

- the initial model, every device's initial private networks and the partition come from the
  caller's :class:`core.fl.types.FedAvgState`, the data from its ``data`` tensors;
- the server draws each round with :func:`core.fl.fedavg.plan_round` from the same seeded
  generator as ``run_fedavg`` (same devices, batch order, x' roll, dropout masks, transform
  seed), applies the same upload transform and aggregates with :func:`core.fl.fedavg.aggregate`;
- a client runs :func:`core.fl.sequential.train_round_sequential` (the objective's
  ``module_loss`` through the engine's loop) on its one-device slice of the round plan.

So the global model equals the simulator's after the same rounds, up to float summation order
(tests/test_flower_adapter.py). Ray workers rebuild the objective themselves: it is given as an
:class:`ObjectiveRecipe`, the *registered name* of an objective factory (:data:`OBJECTIVES`)
plus JSON-able keyword arguments, never a pickled object and never a ``"module:function"``
path: a server message can only name an objective privlab registered, and anything else is
refused with a message naming what was asked for (issue 21: no remote code by name).

State: ClientApps are stateless; a device's private networks live in its node's
``context.state`` (an ``ArrayRecord`` named ``private``), kept per node across rounds. A device
never sampled before starts from its initial private parameters, read (once per actor
process) from a per-run npz file with the data (as a real device reads its own storage; a node
may name its own file with the node-config key ``run-file``). Each train message carries Θ and
the device's slice of the round plan. With ``collect_private`` (default) clients also return
their private parameters so the returned state equals the simulator's; a real deployment
would leave them on the device.

Timing: the ServerApp measures each round's wall time (planning, messages to and from the
actors, local training, aggregation: ``round_seconds`` as in the simulator); Ray start-up,
actor spawn and a warm-up query to every node (which also maps Flower node ids to partition
ids) are ``setup_seconds``. A Ray the caller started (:func:`init_ray`) is left running
(Flower's Ray backend would shut it down), so several runs can share one. CPU only.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from core.fl.fedavg import aggregate, plan_round, round_stream
from core.fl.types import FedAvgState, LocalObjective, RoundPlan, UploadTransform
from core.foundation.progress import Progress
from core.foundation.registry import Registry

MISSING_FLOWER = "Flower needs the scale extra: pip install 'privlab[scale]'"

#: node_config key under which Flower's simulation engine gives a node its partition id
PARTITION_ID_KEY = "partition-id"
#: optional node_config key: the node's own run file (data and initial private parameters)
RUN_FILE_KEY = "run-file"

__all__ = ["OBJECTIVES", "FlowerRun", "ObjectiveRecipe", "init_ray", "make_client_app",
           "make_server_app", "run_flower_fedavg"]

#: the local objectives a Flower client may build: registered name -> factory
#: (``"module:function"``, imported only through this table)
OBJECTIVES: Registry[str] = Registry("objective")
OBJECTIVES.register("plain", "core.fl.objectives:plain_objective")
OBJECTIVES.register("tappfl", "core.defenses.tappfl_flower:tappfl_objective")
OBJECTIVES.register("channel", "core.defenses.channel_flower:channel_objective")


def import_flwr():
    """Import flwr and ray lazily (telemetry off: this is an offline lab)."""
    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
    try:
        import flwr
        import ray  # noqa: F401
    except ImportError as exc:
        raise ImportError(MISSING_FLOWER) from exc
    return flwr


@dataclass(frozen=True)
class ObjectiveRecipe:
    """How a worker builds the local objective: the factory registered as ``objective`` in
    :data:`OBJECTIVES`, called with ``kwargs`` (JSON-able). It returns a
    :class:`LocalObjective` with template modules (their weights are the loop's to set)."""

    objective: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.objective, str) or self.objective not in OBJECTIVES:
            raise ValueError(f"objective: got {self.objective!r:.80}; allowed: "
                             f"{', '.join(OBJECTIVES)} (Flower objectives are built only from "
                             "privlab's registry, by registered name)")
        if not isinstance(self.kwargs, dict):
            raise ValueError(  # noqa: TRY004 - a message's content, not a caller's type
                f"kwargs: got {type(self.kwargs).__name__}; expected a mapping")
        try:
            json.dumps(self.kwargs, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"kwargs: not JSON-able ({exc}); give plain numbers, strings, lists, dicts") from None

    def build(self) -> LocalObjective:
        from core.foundation.registry import load_object

        return load_object(OBJECTIVES.get(self.objective))(**self.kwargs)

    def to_json(self) -> str:
        return json.dumps({"objective": self.objective, "kwargs": self.kwargs}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ObjectiveRecipe:
        """The recipe of a message; anything but ``{"objective": <registered name>, "kwargs":
        {...}}`` is a ValueError naming what was asked for."""
        try:
            d = json.loads(text)
        except (TypeError, ValueError):
            raise ValueError(f"recipe: got {str(text)[:80]!r}; expected JSON "
                             '{"objective": NAME, "kwargs": {...}}') from None
        if not isinstance(d, dict) or set(d) - {"objective", "kwargs"} or "objective" not in d:
            raise ValueError(f"recipe: got {str(text)[:80]!r}; expected exactly "
                             '{"objective": NAME, "kwargs": {...}} with NAME one of '
                             f"{', '.join(OBJECTIVES)}")
        return cls(d["objective"], d.get("kwargs", {}))


@dataclass
class FlowerRun:
    """What :func:`run_flower_fedavg` leaves: the updated ``state`` (as ``run_fedavg``'s, its
    curves with ``train_seconds`` / ``client_seconds`` per round: local training alone / the
    whole ClientApp call, summed over the round's devices) and the timings."""

    state: FedAvgState
    setup_seconds: float
    wall_seconds: float
    num_cpus: int
    flwr_version: str
    ray_version: str
    backend: str = "ray"
    api: str = "flwr.simulation.run_simulation (Message API: ServerApp main loop + ClientApp train/query)"


# ---------------------------------------------------------------------------------------------
# client side (runs inside the Ray actors, or on a real SuperNode)

_CLIENT_CACHE: dict[str, dict[str, Any]] = {}
_CLIENT_LOCK = threading.Lock()


def _client_env(path: str, recipe_json: str) -> dict[str, Any]:
    """Per process: the data tensors, the initial private stacks and the objective (template
    modules), loaded once per run file."""
    with _CLIENT_LOCK:
        env = _CLIENT_CACHE.get(path)
        if env is not None:
            return env
        recipe = ObjectiveRecipe.from_json(recipe_json)  # refused before anything is read
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        data = {k[5:]: torch.from_numpy(v) for k, v in arrays.items() if k.startswith("data/")}
        init = {k[5:]: v for k, v in arrays.items() if k.startswith("init/")}
        env = {"data": data, "init": init, "objective": recipe.build()}
        _CLIENT_CACHE.clear()  # one run at a time per process
        _CLIENT_CACHE[path] = env
        return env


def _np_record(arrays: dict[str, np.ndarray]):
    from flwr.app import Array, ArrayRecord

    return ArrayRecord({k: Array(np.ascontiguousarray(v)) for k, v in arrays.items()})


def _from_record(record) -> dict[str, np.ndarray]:
    return {k: v.numpy() for k, v in record.items()}


def _run_file(setup, context) -> str:
    return str(context.node_config.get(RUN_FILE_KEY, setup["path"]))


def _client_query(msg, context):
    """Warm-up and node → partition map: load the run's files, report the partition id."""
    from flwr.app import ConfigRecord, RecordDict

    setup = msg.content["setup"]
    _client_env(_run_file(setup, context), str(setup["recipe"]))
    pid = int(context.node_config[PARTITION_ID_KEY])
    return msg.create_reply(RecordDict({"node": ConfigRecord({"partition_id": pid})}))


def _client_train(msg, context):
    """One device's local training: the objective's ``module_loss`` over the device's batches
    of the round plan, via the sequential reference's round function on a one-device plan."""
    from flwr.app import MetricRecord, RecordDict

    from core.fl.sequential import train_round_sequential
    from core.fl.types import RoundPlan
    from core.foundation.threads import thread_limits

    t_start = time.perf_counter()
    setup = msg.content["setup"]
    env = _client_env(_run_file(setup, context), str(setup["recipe"]))
    pid = int(context.node_config[PARTITION_ID_KEY])
    if int(setup["device"]) != pid:
        raise RuntimeError(f"device {setup['device']} sent to the node of partition {pid}")
    objective = env["objective"]
    if "private" in context.state:  # this device's private networks from its previous round
        own = _from_record(context.state["private"])
    else:  # first round of this device: its initial private parameters
        own = {k: v[pid] for k, v in env["init"].items()}
    private: dict[str, dict[str, Tensor]] = {name: {} for name in objective.private}
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
        roll=torch.from_numpy(p["roll"]).unsqueeze(0),
        dropout=torch.from_numpy(p["dropout"]).unsqueeze(0) if "dropout" in p else None,
        transform_seed=0,
    )
    state = FedAvgState(shared=objective.shared, private=private, partition=[])
    t_train = time.perf_counter()
    # a Ray worker (or SuperNode) process, which no core.runs.experiments.run budget reaches: one
    # thread, as the simulation gives each client one CPU
    with thread_limits(1):
        local, totals = train_round_sequential(objective, state, glob, plan, env["data"], lr=float(setup["lr"]))
    t_train = time.perf_counter() - t_train
    own_new = {f"{name}/{n}": v[0].numpy() for name, ps in private.items() for n, v in ps.items()}
    context.state["private"] = _np_record(own_new)
    reply = {
        "theta": _np_record({n: v[0].numpy() for n, v in local.items()}),
        "stats": _np_record({n: np.atleast_1d(v.numpy()) for n, v in totals.items()}),
        "metrics": MetricRecord({"num-examples": int(setup["size"]), "train-seconds": t_train,
                                 "client-seconds": time.perf_counter() - t_start}),
    }
    if bool(setup["collect_private"]):
        reply["private"] = _np_record(own_new)
    return msg.create_reply(RecordDict(reply))


def make_client_app():
    """The generic ClientApp: ``query`` (warm-up, partition id) and ``train`` (one device's
    local update). Everything run-specific arrives in the messages or the run file."""
    from flwr.clientapp import ClientApp

    app = ClientApp()
    app.query()(_client_query)
    app.train()(_client_train)
    return app


def __getattr__(name: str):
    """``core.fl.flower:client_app`` for ``flwr run`` / a SuperNode (built on first access,
    so importing this module needs no Flower)."""
    if name == "client_app":
        import_flwr()
        return make_client_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------------------------
# server side (runs in this process, in Flower's ServerApp thread)


def _write_run_file(path: Path, state: FedAvgState, data: dict[str, Tensor]) -> None:
    arrays = {f"data/{k}": v.detach().cpu().numpy() for k, v in data.items()}
    for name, params in state.private.items():
        for n, v in params.items():
            arrays[f"init/{name}/{n}"] = v.detach().cpu().numpy()
    np.savez(path, **arrays)


def init_ray(num_cpus: int = 2, **kwargs: Any) -> bool:
    """Start Ray (unless it runs already) as Flower's backend would, with our quiet settings;
    True if this call started it. A Ray started here outlives :func:`run_flower_fedavg`
    calls (stop it with ``ray.shutdown()``)."""
    import_flwr()
    import ray

    if ray.is_initialized():
        return False
    os.environ["RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"] = "0"
    pythonpath = os.pathsep.join([*sys.path, *filter(None, [os.environ.get("PYTHONPATH")])])
    args = {"num_cpus": int(num_cpus), "num_gpus": 0, "include_dashboard": False,
            "logging_level": "ERROR", "log_to_driver": False, "object_store_memory": 200 * 2**20,
            "runtime_env": {"env_vars": {"PYTHONPATH": pythonpath}}, **kwargs}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module="ray")
        ray.init(**args)
    return True


@contextmanager
def _keep_callers_ray() -> Iterator[None]:
    """Flower's Ray backend shuts Ray down when the simulation ends; if the caller had started
    Ray, only the simulation's actors are stopped."""
    import ray

    if not ray.is_initialized():
        yield
        return
    try:
        from flwr.server.superlink.fleet.vce.backend.raybackend import RayBackend
    except ImportError:  # pragma: no cover - another Flower layout: its default behaviour
        yield
        return
    original = RayBackend.terminate

    def terminate(self) -> None:
        if self.pool:
            self.pool.terminate_all_actors()

    RayBackend.terminate = terminate
    try:
        yield
    finally:
        RayBackend.terminate = original


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
            raise RuntimeError(f"Flower: {len(ids)} of {n} nodes after {timeout:.0f} s")
        time.sleep(0.05)


def _replies(grid, messages: list) -> list:
    replies = list(grid.send_and_receive(messages))
    for m in replies:
        if m.has_error():
            raise RuntimeError(f"Flower client failed: {m.error.reason}")
    if len(replies) != len(messages):
        raise RuntimeError(f"Flower: {len(replies)} replies to {len(messages)} messages")
    return replies


def _check_state(recipe: ObjectiveRecipe, state: FedAvgState) -> LocalObjective:
    objective = recipe.build()  # the server's copy: round_metrics only
    if set(objective.private) != set(state.private):
        raise ValueError(f"recipe: builds private networks {sorted(objective.private)}; the state holds "
                         f"{sorted(state.private)}")
    if any(p.device.type != "cpu" for p in state.shared.parameters()):
        raise ValueError("state: the Flower adapter runs on the CPU; build the state with device='cpu'")
    if state.rounds_trained is None:
        state.rounds_trained = np.zeros(len(state.partition), dtype=np.int64)
    return objective


def _train_messages(plan: RoundPlan, glob: dict[str, Tensor], setup: dict[str, Any],
                    node_of: dict[int, int]) -> list:
    """One ``train`` message per sampled device: Θ and the device's slice of the round plan."""
    from flwr.app import ConfigRecord, Message, RecordDict

    theta_np = _np_record({n: v.numpy() for n, v in glob.items()})
    msgs = []
    for i, d in enumerate(plan.devices):
        t = int(plan.steps[i])
        sl = {"index": plan.index[i, :t].numpy(), "count": plan.count[i, :t].numpy(),
              "roll": plan.roll[i, :t].numpy()}
        if plan.dropout is not None:
            sl["dropout"] = plan.dropout[i, :t].numpy()
        content = RecordDict({
            "setup": ConfigRecord({**setup, "device": int(d), "size": int(plan.sizes[i])}),
            "theta": theta_np, "plan": _np_record(sl)})
        msgs.append(Message(content, dst_node_id=node_of[int(d)], message_type="train"))
    return msgs


def _apply_round(state: FedAvgState, plan: RoundPlan, glob: dict[str, Tensor], ordered: list, *,
                 upload_transform: UploadTransform | None, collect_private: bool
                 ) -> dict[str, Tensor]:
    """Aggregate the devices' replies (in plan order) into ``state.shared`` (FedAvg, with the
    upload transform), keep their private networks, and return their summed statistics."""
    thetas = [_from_record(m.content["theta"]) for m in ordered]
    local = {n: torch.from_numpy(np.stack([t[n] for t in thetas])) for n in glob}
    sizes = np.array([int(m.content["metrics"]["num-examples"]) for m in ordered])
    gen = torch.Generator().manual_seed(plan.transform_seed)
    new = aggregate(glob, local, sizes, upload_transform=upload_transform, generator=gen)
    with torch.no_grad():
        for n, p in state.shared.named_parameters():
            p.copy_(new[n])
        if collect_private:
            for d, m in zip(plan.devices, ordered):
                for key, v in _from_record(m.content["private"]).items():
                    name, param = key.split("/", 1)
                    state.private[name][param][int(d)] = torch.from_numpy(np.array(v))
    totals: dict[str, Tensor] = {}
    for m in ordered:
        for n, v in _from_record(m.content["stats"]).items():
            v = torch.from_numpy(np.array(v))
            totals[n] = totals[n] + v if n in totals else v
    return totals


def make_server_app(
    recipe: ObjectiveRecipe,
    state: FedAvgState,
    *,
    run_file: str,
    rounds: int,
    fraction_fit: float,
    local_epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    upload_transform: UploadTransform | None = None,
    dropout: tuple[float, int] | None = None,
    collect_private: bool = True,
    progress: Progress | None = None,
    out: dict[str, Any] | None = None,
):
    """The ServerApp whose main loop is our FedAvg: per round :func:`plan_round`, one ``train``
    message per sampled device (Θ and its slice of the plan), then the upload transform,
    :func:`aggregate` and the objective's ``round_metrics``; ``state`` is updated in place.
    First a ``query`` to every node warms it up and maps node ids to partition ids (nodes
    must report ``partition-id`` 0..N-1 in their node config). ``run_file`` is the path clients
    read (a node's own ``run-file`` node-config key wins). ``out`` receives ``setup_seconds``,
    ``done`` or the ``error`` the loop raised."""
    import_flwr()
    from flwr.app import ConfigRecord, Message, RecordDict
    from flwr.serverapp import ServerApp

    from core.foundation.checks import check_int

    check_int("rounds", rounds, 1)
    objective = _check_state(recipe, state)
    hand_back, out = out is not None, {} if out is None else out
    n_dev, start, t_made = len(state.partition), state.round, time.perf_counter()
    setup = {"path": str(run_file), "recipe": recipe.to_json(), "lr": float(lr),
             "collect_private": bool(collect_private)}

    def rounds_loop(grid) -> None:
        node_ids = _wait_for_nodes(grid, n_dev)
        replies = _replies(grid, [
            Message(RecordDict({"setup": ConfigRecord(setup)}), dst_node_id=nid, message_type="query")
            for nid in node_ids])
        node_of = {int(m.content["node"]["partition_id"]): m.metadata.src_node_id for m in replies}
        out["setup_seconds"] = time.perf_counter() - t_made
        for r in range(start + 1, start + rounds + 1):
            t0 = time.perf_counter()
            plan = plan_round(round_stream(seed, r), state.partition,
                              round=r, fraction_fit=fraction_fit, local_epochs=local_epochs,
                              batch_size=batch_size, dropout=dropout)
            glob = {n: p.detach().clone() for n, p in state.shared.named_parameters()}
            msgs = _train_messages(plan, glob, {**setup, "round": r}, node_of)
            by_node = {m.metadata.src_node_id: m for m in _replies(grid, msgs)}
            ordered = [by_node[node_of[int(d)]] for d in plan.devices]
            totals = _apply_round(state, plan, glob, ordered, upload_transform=upload_transform,
                                  collect_private=collect_private)
            state.round, state.last_plan = r, plan
            state.rounds_trained[plan.devices] += 1
            metrics = objective.round_metrics(totals)
            metrics["round_seconds"] = time.perf_counter() - t0
            metrics["device_updates"] = float(len(plan.devices))
            for key in ("train-seconds", "client-seconds"):  # summed over the round's devices
                metrics[key.replace("-", "_")] = float(sum(float(m.content["metrics"][key]) for m in ordered))
            for name, v in metrics.items():
                state.curves.setdefault(name, []).append(float(v))
            if progress is not None:
                progress.update((r - start) / rounds, f"round {r - start}/{rounds} done (Flower)")
        out["done"] = True

    server = ServerApp()

    @server.main()
    def _main(grid, context) -> None:  # Flower's ServerApp main signature
        try:
            rounds_loop(grid)
        except BaseException as exc:
            if not hand_back:  # a deployment (flwr run): Flower reports it
                raise
            out["error"] = exc  # run_flower_fedavg re-raises it in the caller's thread

    return server


def run_flower_fedavg(
    recipe: ObjectiveRecipe,
    state: FedAvgState,
    data: dict[str, Tensor],
    *,
    rounds: int,
    fraction_fit: float,
    local_epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    upload_transform: UploadTransform | None = None,
    dropout: tuple[float, int] | None = None,
    collect_private: bool = True,
    num_cpus: int = 2,
    progress: Progress | None = None,
) -> FlowerRun:
    """:func:`core.fl.fedavg.run_fedavg` with the same arguments, each device-update a Flower
    message handled by a ClientApp that builds its objective from ``recipe`` (Ray simulation,
    ``num_cpus`` CPUs, one CPU and one torch thread per client). ``state`` (its ``shared``
    module is the initial Θ; ``private`` every device's initial private parameters) is
    updated in place as ``run_fedavg`` does. Raises ImportError without Flower (extra
    ``scale``), and what the rounds raised (``Cancelled`` from ``progress`` included)."""
    flwr = import_flwr()
    import ray
    from flwr.simulation import run_simulation

    from core.foundation.checks import check_int

    check_int("num_cpus", num_cpus, 1)
    t_wall = time.perf_counter()
    _check_state(recipe, state)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="privlab-flwr-") as tmp:
        path = Path(tmp) / "run.npz"
        _write_run_file(path, state, {k: v.detach().cpu() for k, v in data.items()})
        server = make_server_app(
            recipe, state, run_file=str(path), rounds=rounds, fraction_fit=fraction_fit,
            local_epochs=local_epochs, batch_size=batch_size, lr=lr, seed=seed,
            upload_transform=upload_transform, dropout=dropout, collect_private=collect_private,
            progress=progress, out=out)
        backend_config = {
            "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
            "init_args": {"num_cpus": int(num_cpus), "num_gpus": 0, "include_dashboard": False,
                          "logging_level": "ERROR", "log_to_driver": False,
                          "object_store_memory": 200 * 2**20},
        }
        with _quiet_flower(), _keep_callers_ray():
            run_simulation(server_app=server, client_app=make_client_app(), num_supernodes=len(state.partition),
                           backend_name="ray", backend_config=backend_config, verbose_logging=False)
    if "error" in out:
        raise out["error"]
    if "done" not in out:
        raise RuntimeError("Flower simulation ended without finishing its rounds")
    return FlowerRun(state=state, setup_seconds=out["setup_seconds"],
                     wall_seconds=time.perf_counter() - t_wall, num_cpus=int(num_cpus),
                     flwr_version=flwr.__version__, ray_version=ray.__version__)

"""The child process that imports and checks a model file before it is registered
(:func:`core.models.user.run_checks` starts it as ``python -m core.models.user_check JOB OUT``).

After torch and Opacus are imported, the process caps its own address space at what it then
uses plus the job's ``memory_mib`` (``RLIMIT_AS``); the parent kills it at its wall-clock limit.
It builds the model through :func:`core.models.build_model`, exactly as a runner does, for every
data set of the job at the low, unit and high width, and checks in turn (the first failure is
the report's one-line ``error``, naming the check):

- ``import``: the file imports; ``factory``: it defines the callable;
- ``build``: the factory returns a ``torch.nn.Module`` for each (shape, classes, width);
- ``parameters``: trainable parameters at most the job's cap, at every width;
- ``output shape`` / ``output``: a batch of 4 inputs gives (4, classes) finite logits;
- ``determinism``: two builds seeded 0 (the global RNG seeded differently before each) have
  equal parameters and buffers and equal outputs on one input, twice;
- ``memory``: an allocation beyond the cap;
- ``time``: the user's code (import, builds, forwards) past the job's ``timeout_s``, counted
  from after torch's import (SIGALRM raises inside it; the parent kills the process where a
  hang never returns to Python).

Opacus' verdict is reported, not a refusal: accepted, accepted after BatchNorm → GroupNorm
(``ModuleValidator.fix``; DP-SGD applies it), or refused with its first reason; "accepted"
means a per-sample-gradient step (``opacus.GradSampleModule``) ran on a batch of 2.
"""

from __future__ import annotations

import json
import math
import resource
import sys
from pathlib import Path
from typing import Any


class Failed(Exception):
    """A check failed; ``str()`` is its one line (``<check>: <what>``)."""


class TimeUp(BaseException):
    """The job's ``timeout_s`` passed (raised by the SIGALRM handler inside the user's code)."""


_TIMEOUT: dict[str, float] = {"s": 0.0}


def _arm(timeout_s: float) -> None:
    """Raise :class:`TimeUp` in this process ``timeout_s`` seconds from now (the user's code
    only: torch's import does not count against it; the parent's wall clock backs it up)."""
    import signal

    def _alarm(signum, frame):
        raise TimeUp()

    _TIMEOUT["s"] = float(timeout_s)
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, float(timeout_s))


def _limit_memory(mib: int) -> None:
    """Cap the address space at the current size + ``mib`` MiB (torch alone maps ~3 GiB)."""
    size = 0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            size = int(line.split()[1]) * 1024
    if size:
        cap = size + int(mib) * 1024**2
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _first_line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _memory(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or "allocate memory" in str(exc) \
        or "out of memory" in str(exc)


def _guard(check: str, what: str, fn, *args, **kw):
    """``fn(*args, **kw)``; any exception is the one-line failure of ``check``."""
    try:
        return fn(*args, **kw)
    except Failed:
        raise
    except TimeUp:
        raise Failed(f"time: {what} did not finish within {_TIMEOUT['s']:g} s (the --timeout "
                     "cap)") from None
    except BaseException as exc:  # noqa: BLE001 - a stranger's code may raise anything
        if _memory(exc):
            raise Failed(f"memory: {what} exceeded the memory cap ({_first_line(exc)})") from None
        raise Failed(f"{check}: {what} raised {_first_line(exc)}") from None


def _load(job: dict[str, Any]):
    from core.models.user import ModelError, load_factory

    try:
        return load_factory(job["path"], job["sha256"], job["factory"], job.get("label"))
    except ModelError as exc:
        raise Failed(str(exc).removeprefix(f"{job['path']}: ")) from None


def _part(job: dict[str, Any]):
    from core.foundation.parts import input_kind
    from core.models.user import UserArchitecturePart, UserFactory

    fits = tuple((d, input_kind(s)[1]) for d, (s, _) in job["data"].items())
    kinds = tuple(dict.fromkeys(input_kind(s)[0] for _, s in fits))
    lo, hi = job["widths"]
    return UserArchitecturePart(
        name="candidate", title="candidate", adapt=False, inputs=kinds, channels=None,
        builder=UserFactory(job["path"], job["sha256"], job["factory"], job["groupnorm"]),
        widths=(lo, hi), cpu_width=1.0, fits=fits)


def _inputs(shape, n: int):
    import torch

    g = torch.Generator().manual_seed(1234)
    return torch.rand(n, math.prod(shape), generator=g)


def _check_output(net, shape, classes: int, where: str) -> None:
    import torch

    net.eval()
    with torch.no_grad():
        y = _guard("output shape", f"the forward pass {where}", net, _inputs(shape, 4))
    if not isinstance(y, torch.Tensor):
        raise Failed(f"output shape: the forward pass {where} returned {type(y).__name__}; "
                     "expected a tensor of logits")
    if tuple(y.shape) != (4, classes):
        raise Failed(f"output shape: got {tuple(y.shape)} {where}; expected (4, {classes}) for "
                     "a batch of 4 (one logit per class)")
    if not bool(torch.isfinite(y).all()):
        raise Failed(f"output: non-finite logits {where}")


def _check_deterministic(part, shape, classes: int, where: str) -> None:
    import random

    import torch

    from core.models import build_model

    nets = []
    for salt in (1, 2):
        torch.manual_seed(salt)
        random.seed(salt)
        nets.append(_guard("determinism", f"a seeded build {where}", build_model, part, shape,
                           classes, 1.0, seed=0).eval())
    a, b = (n.state_dict() for n in nets)
    for k in a:
        if k not in b or a[k].shape != b[k].shape or not torch.equal(a[k], b[k]):
            raise Failed(f"determinism: two builds seeded 0 differ in {k} {where}; the factory "
                         "must draw nothing from the global RNG that the seed does not reset")
    x = _inputs(shape, 4)
    with torch.no_grad():
        outs = [nets[0](x), nets[0](x), nets[1](x)]
    if not all(torch.equal(outs[0], o) for o in outs[1:]):
        raise Failed(f"determinism: the same input gives different outputs {where} (a "
                     "random layer in eval mode?)")


def _opacus(net, shape) -> str:
    """Opacus' verdict on ``net`` (a copy is trained one per-sample-gradient step)."""
    import copy

    from opacus import GradSampleModule
    from opacus.validators import ModuleValidator

    m = copy.deepcopy(net).train()
    note = "accepted"
    if ModuleValidator.validate(m, strict=False):
        m = ModuleValidator.fix(m)
        errors = ModuleValidator.validate(m, strict=False)
        if errors:
            return f"refused: {str(errors[0]).splitlines()[0][:160]}"
        note = ("accepted after BatchNorm → GroupNorm (DP-SGD applies it; --groupnorm applies "
                "it under every defense)")
    import warnings

    try:
        gs = GradSampleModule(m)
        out = gs(_inputs(shape, 2))
        with warnings.catch_warnings():  # the inputs need no gradient: Opacus' hooks say so
            warnings.simplefilter("ignore", UserWarning)
            out.float().sum().backward()
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return f"refused: per-sample gradients failed ({_first_line(exc)})"
    if any(getattr(p, "grad_sample", None) is None for p in m.parameters() if p.requires_grad):
        return "refused: a parameter got no per-sample gradient"
    return note


def _flops(net, shape) -> int:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter, torch.no_grad():
        net.eval()(_inputs(shape, 2))
    return int(counter.get_total_flops()) // 2


def check(job: dict[str, Any]) -> dict[str, Any]:
    """Every check of the module docstring; the report (params, flops, opacus per data set)."""
    from core.models import build_model

    _guard("import", "importing the file", _load, job)
    part = _part(job)
    lo, hi = job["widths"]
    report: dict[str, Any] = {"params": {}, "flops": {}, "opacus": ""}
    for dname, (shape, classes) in job["data"].items():
        for w in sorted({float(lo), 1.0, float(hi)}):
            where = f"for data {dname} ({'×'.join(map(str, shape))}, {classes} classes)" + (
                f" at width {w:g}" if w != 1.0 else "")
            net = _guard("build", f"the factory {where}", build_model, part, shape, classes, w)
            n = sum(p.numel() for p in net.parameters() if p.requires_grad)
            if n > job["param_cap"]:
                raise Failed(f"parameters: {n:,} {where}; the cap is {job['param_cap']:,} "
                             "(--param-cap)")
            if n == 0:
                raise Failed(f"parameters: none to train {where}")
            _check_output(net, shape, classes, where)
            if w == 1.0:
                _check_deterministic(part, shape, classes, where)
                report["params"][dname] = n
                report["flops"][dname] = _guard("output", f"counting FLOPs {where}", _flops,
                                                net, shape)
                if not report["opacus"]:
                    report["opacus"] = _opacus(net, shape)
    return report


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[1]).read_text())
    import opacus  # noqa: F401 - mapped before the cap, as torch is
    import torch

    torch.set_num_threads(1)
    _limit_memory(job["memory_mib"])
    _arm(job["timeout_s"])
    try:
        report = check(job)
    except Failed as exc:
        report = {"error": str(exc)}
    except TimeUp:  # between two guarded calls
        report = {"error": f"time: the checks did not finish within {job['timeout_s']:g} s "
                           "(the --timeout cap)"}
    import signal

    signal.setitimer(signal.ITIMER_REAL, 0)
    Path(argv[2]).write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

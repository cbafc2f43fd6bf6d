"""The audit of a model trained elsewhere (``privlab audit``, :mod:`core.runs.trained_target`),
measured on the worked example of ``examples/your_model``: :func:`measure`, whose figures
``python -m benchmarks your_model`` writes into ``results/your_model.json``'s headline.

- ``audit_auc_vs_own_training``: the example network trained by the plain PyTorch script,
  audited; then the same architecture trained by privlab's own engine on the same members with
  the same recipe, saved as safetensors and audited the same way (the shadow models are
  shared: they do not read the target's weights). The strongest attack of the first audit, its
  AUC and TPR at 1 % FPR with their 95 % intervals (the AUC's bootstrap interval, the TPR's
  Clopper–Pearson interval over the members) in both, their differences, and whether each
  value lies inside the other run's interval.
- ``sklearn_audit_attacks``: the membership attacks that scored a skops-saved scikit-learn
  logistic regression (shadows by ``sklearn.base.clone``).
- ``audit_seconds``: the example's audit end to end on this CPU (the shadows trained cold).
- ``audit_refusal_classes`` / ``audit_unhandled``: each bad weights or members file
  (:func:`refusal_cases`, the table ``tests/test_model_audit.py`` runs) must be refused with
  exit 2 and one line naming the file and the check, nothing stored; any other outcome counts
  as unhandled.
"""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "your_model"
ARCH = "small_cnn_example"
#: the name ``privlab model add`` registers the example under (docs/your_model.md)
REGISTERED = "small_cnn"
#: the example's recipe (train_plain.py's defaults), told to privlab for its shadows
RECIPE = {"epochs": 30, "batch_size": 64, "lr": 1e-3, "optimizer": "adam"}


def _build(shape, n_classes, *, width, role):
    from small_cnn import make

    return make(tuple(shape), n_classes, width)


@contextlib.contextmanager
def example_architecture():
    """The example network registered as an architecture for the duration, in this process
    (``privlab model add small_cnn --from examples/your_model/small_cnn.py:make --data digits``
    registers it for good, checked in a child process)."""
    from core.foundation.parts import ARCHITECTURES, ArchitecturePart

    sys.path.insert(0, str(EXAMPLE))
    ARCHITECTURES.register(ARCH, ArchitecturePart(
        name=ARCH, title="example small CNN", builder=_build, channels=(1,),
        reference=((1, 8, 8), 10)))
    try:
        yield
    finally:
        ARCHITECTURES.unregister(ARCH)
        sys.path.remove(str(EXAMPLE))


def refusal_cases(example: Path, tmp: Path, arch: str = ARCH) -> dict[str, tuple[list[str], str]]:
    """Each bad input class: (``privlab audit`` arguments, the check its one line names).
    ``example`` holds the example's ``small_cnn.safetensors`` and ``members.txt``."""
    import torch
    from safetensors.torch import load_file

    from core.models import build_model

    w, mem = example / "small_cnn.safetensors", example / "members.txt"
    sd = load_file(str(w))

    def saved(name: str, obj: Any) -> Path:
        torch.save(obj, tmp / name)
        return tmp / name

    def written(name: str, data: bytes | str) -> Path:
        (tmp / name).write_bytes(data if isinstance(data, bytes) else data.encode())
        return tmp / name

    pt = saved("ok.pt", sd)
    idx = np.loadtxt(mem, dtype=int)
    files = {
        "another architecture": (saved("mlp.pt", build_model("mlp", (1, 8, 8), 10).state_dict()),
                                 mem, "architecture"),
        "truncated safetensors": (written("trunc.safetensors", w.read_bytes()[: w.stat().st_size // 2]),
                                  mem, "safetensors"),
        "truncated state dict": (written("trunc.pt", pt.read_bytes()[: pt.stat().st_size // 2]),
                                 mem, "torch.load"),
        "pickled module": (saved("module.pt", build_model("mlp", (1, 8, 8), 10)), mem,
                           "weights_only"),
        "pickled object": (written("object.pt", pickle.dumps({"w": object()})), mem,
                           "weights_only"),
        "non-finite weights": (saved("nan.pt", {k: v * float("nan") for k, v in sd.items()}),
                               mem, "finite"),
        "not a weights file": (written("weights.txt", "not weights"), mem, "format"),
        "members outside the data": (w, written("outside.txt", "\n".join(
            map(str, [*idx[:-1], 5000]))), "range"),
        "members duplicated": (w, written("dup.txt", "\n".join(map(str, [*idx, idx[0]]))),
                               "duplicates"),
        "members not indices": (w, written("words.json", '["a", 1]'), "index"),
    }
    cases = {name: (["--model", arch, "--data", "digits", "--weights", str(wf), "--members",
                     str(mf)], check) for name, (wf, mf, check) in files.items()}
    first50 = written("first50.txt", "\n".join(map(str, range(50))))
    cases["data the model does not fit"] = (["--model", arch, "--data", "mnist5k", "--weights",
                                             str(w), "--members", str(mem)], "data")
    cases["data of other classes"] = (["--model", arch, "--data", "faces", "--weights", str(w),
                                       "--members", str(first50)], "architecture")
    return cases


def _cli(args: list[str]) -> tuple[int, str, str]:
    from cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _refusals(example: Path, tmp: Path) -> tuple[list[dict[str, Any]], int]:
    cache = tmp / "refusal_cache"
    rows, unhandled = [], 0
    for name, (args, check) in refusal_cases(example, tmp).items():
        code, _, err = _cli(["audit", *args, "--shadows", "2", "--cache-dir", str(cache),
                             "--progress", "off"])
        line = err.strip()
        ok = (code == 2 and "\n" not in line and f": {check}" in line
              and any(a in line for a in args if a.startswith((str(tmp), str(example)))))
        unhandled += not ok
        rows.append({"case": name, "exit": code, "check": check, "handled": ok, "line": line})
    code, out, _ = _cli(["list", "--json", "--cache-dir", str(cache)])
    if code != 0 or json.loads(out):  # a refusal that stored anything is unhandled
        unhandled += 1
    return rows, unhandled


def _tpr_interval(result: Any, attack: str) -> tuple[float, float, float]:
    """TPR at 1 % FPR of ``attack`` and its Clopper–Pearson 95 % interval over the members."""
    from core.foundation.metrics import clopper_pearson

    tpr = float(result.metrics[f"mia_{attack}_tpr_at_1pct_fpr"])
    n = int(result.info["scored"][attack][0])
    lo, hi = clopper_pearson(round(tpr * n), n)
    return tpr, lo, hi


def _figure(result: Any, attack: str) -> dict[str, float]:
    auc = float(result.metrics[f"mia_{attack}_auc"])
    iv = result.intervals[f"mia_{attack}_auc"]
    tpr, lo, hi = _tpr_interval(result, attack)
    return {"auc": auc, "auc_lo": iv["lo"], "auc_hi": iv["hi"], "tpr_1pct": tpr,
            "tpr_lo": lo, "tpr_hi": hi}


def _config(weights: Path, members: Path, n_members: int, shadows: int,
            arch: str = ARCH) -> dict[str, Any]:
    from cli.audit import default_attackers
    from core.config.trained import with_hashes

    return {"kind": "membership", "data": {"name": "digits"}, "model": {"arch": arch},
            "train": {"members": n_members, **RECIPE}, "projection_points": 0,
            "attack": {"attackers": default_attackers(), "shadows": shadows,
                       "rmia_references": max(1, shadows // 4)},
            "target": with_hashes({"weights": str(weights), "members": str(members)})}


def _own_training(cfg: dict[str, Any], out: Path) -> Path:
    """The same architecture trained by privlab's engine on the same members with the same
    recipe (the membership runner's own procedure), saved as safetensors."""
    from safetensors.torch import save_file

    from core.config.schema import parse_config
    from core.foundation.progress import as_progress
    from core.foundation.threads import thread_limits
    from core.runs import membership_stages as S

    c = parse_config(cfg)
    ctx = S.context(c, as_progress(None, None))
    rows = ctx.pool[ctx.member]
    model = ctx.model(c.seed)
    with thread_limits():  # the runs' thread budget
        trained = ctx.build.train(model, ctx.X[rows], ctx.y[rows], seed=c.seed)
    net = trained.model if trained.model is not None else model
    inner = getattr(net, "net", net)
    path = out / "privlab_trained.safetensors"
    save_file({k: v.detach().cpu().contiguous() for k, v in inner.state_dict().items()}, str(path))
    return path


def _agreement(script: Any, own: Any) -> dict[str, Any]:
    best = str(script.info["best_attack"])
    a, b = _figure(script, best), _figure(own, best)
    inside = {
        "auc": a["auc_lo"] <= b["auc"] <= a["auc_hi"] and b["auc_lo"] <= a["auc"] <= b["auc_hi"],
        "tpr_1pct": (a["tpr_lo"] <= b["tpr_1pct"] <= a["tpr_hi"]
                     and b["tpr_lo"] <= a["tpr_1pct"] <= b["tpr_hi"]),
    }
    return {"attack": best, "plain_script": a, "privlab_trained": b,
            "auc_difference": b["auc"] - a["auc"], "tpr_1pct_difference": b["tpr_1pct"] - a["tpr_1pct"],
            "within_intervals": inside, "agree": all(inside.values()),
            "privlab_trained_best_attack": str(own.info["best_attack"])}


def _sklearn(tmp: Path, shadows: int) -> dict[str, Any]:
    import skops.io as sio
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    from cli.audit import default_attackers
    from core.config.trained import with_hashes
    from core.runs.experiments import run

    d = load_digits()
    members = np.sort(np.random.default_rng(3).choice(len(d.data), 400, replace=False))
    est = LogisticRegression(max_iter=500).fit(d.data[members] / 16.0, d.target[members])
    sio.dump(est, tmp / "logreg.skops")
    np.save(tmp / "logreg_members.npy", members)
    r = run({"kind": "membership", "data": {"name": "digits"}, "projection_points": 0,
             "train": {"members": 400},
             "attack": {"attackers": default_attackers(), "shadows": shadows,
                        "rmia_references": max(1, shadows // 4)},
             "target": with_hashes({"weights": str(tmp / "logreg.skops"),
                                    "members": str(tmp / "logreg_members.npy")})})
    scored = [a for a in default_attackers() if np.isfinite(r.metrics.get(f"mia_{a}_auc", np.nan))]
    return {"attacks": scored, "count": len(scored), "utility_acc": r.metrics["utility_acc"],
            "auc": {a: r.metrics[f"mia_{a}_auc"] for a in scored}}


@contextlib.contextmanager
def registered_example(root: Path):
    """The example registered as ``privlab model add small_cnn --from
    examples/your_model/small_cnn.py:make --data digits`` does (checked in a child process,
    stored by content hash), in a scratch model registry under ``root``."""
    import os

    from core.models import user

    old = os.environ.get(user.ENV_REGISTRY)
    os.environ[user.ENV_REGISTRY] = str(root / "model_registry")
    try:
        user.add(REGISTERED, f"{EXAMPLE / 'small_cnn.py'}:make", {"digits": ((1, 8, 8), 10)})
        yield REGISTERED
    finally:
        if old is None:
            os.environ.pop(user.ENV_REGISTRY, None)
        else:
            os.environ[user.ENV_REGISTRY] = old


def measure(quick: bool = False) -> dict[str, Any]:
    """The issue's figures (the headline keys below), their rows and notes."""
    from core.config.trained import with_hashes
    from core.foundation.stages import MemoryStageStore
    from core.foundation.threads import thread_limits
    from core.runs.experiments import run

    shadows = 4 if quick else 16
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        with example_architecture():  # the plain script's import path; refusals' in-process arch
            import train_plain

            with contextlib.redirect_stdout(io.StringIO()), thread_limits():
                train_plain.main(["--out", str(tmp), "--members", "400"])
            (tmp / "bad").mkdir()
            refusals, unhandled = _refusals(tmp, tmp / "bad")
        members = tmp / "members.txt"
        with registered_example(tmp) as arch:
            cfg = _config(tmp / "small_cnn.safetensors", members, 400, shadows, arch)
            stages = MemoryStageStore()
            t0 = time.perf_counter()
            script = run(cfg, stages=stages)
            audit_seconds = time.perf_counter() - t0
            own_weights = _own_training(cfg, tmp)
            own = run({**cfg, "target": with_hashes({"weights": str(own_weights),
                                                      "members": str(members)})}, stages=stages)
        agreement = _agreement(script, own)
        sk = _sklearn(tmp, shadows)
    headline = {
        "audit_auc_vs_own_training": agreement,
        "sklearn_audit_attacks": sk["count"],
        "audit_seconds": round(audit_seconds, 2),
        "audit_refusal_classes": [r["case"] for r in refusals],
        "audit_unhandled": unhandled,
    }
    rows = [{"run": "plain script", "utility_acc": script.metrics["utility_acc"],
             **agreement["plain_script"]},
            {"run": "privlab trained", "utility_acc": own.metrics["utility_acc"],
             **agreement["privlab_trained"]},
            *({"refusal": r["case"], "exit": r["exit"], "handled": r["handled"],
               "line": r["line"]} for r in refusals)]
    notes = (f"the example registered with privlab model add ({REGISTERED}), digits, 400 "
             f"members of the plain script, recipe {RECIPE}, {shadows} shadow models shared by "
             "both audits (the second audit's shadows stage: "
             f"{own.info['stages'].get('shadows')}); audit_seconds: the plain script's audit "
             "with the shadows trained cold; sklearn: a skops logistic regression, attacks "
             f"{', '.join(sk['attacks'])}")
    return {"headline": headline, "rows": rows, "notes": notes, "sklearn": sk}

"""``python -m benchmarks your_model``: your own model (:mod:`core.models.user`, ``privlab model``)
registered, refused and run, measured end to end in a scratch registry and result store.

- **Refusals** (:func:`refusal_cases`): each class of bad factory of :data:`BAD` is registered
  through :func:`core.models.user.add` (the child process with its time and memory limits) and
  counted ``refused`` only if the error is one ``ModelError`` line beginning with the file and
  the expected check, and the registry folder and the result store are byte for byte the
  listing they were; anything else (another exception, another check, a second line, a file
  left behind) is ``unhandled``. A data set the model was not checked for is refused at
  config validation (one line naming ``model.arch``), before anything trains.
- **Every applicable runner** (:func:`runner_cases`): a registered MLP for ``digits`` is put
  into each runner's tiny config (the golden benchmark's) under each defense of that family;
  a config that validation refuses names why (a kind that trains an encoder: a registered model
  declares only the classifier), every other one is run and must give finite metrics whose
  config carries the model's fingerprint.
- **Edited file** (:func:`edited_key`): register, key a config, edit the file (validation then
  refuses the stale registration), register again: the run key and the model stage's key
  change.

- **Audit of a model trained elsewhere** (:func:`benchmarks.audit_model_bench.measure`):
  ``privlab audit`` of the worked example of ``examples/your_model``, compared with privlab's
  own training of the same network on the same members and recipe, a skops model, and the
  weights / members refusal classes.

Headline: ``user_model_checks`` (the refusal classes refused properly), ``user_model_unhandled``
(0), ``registered_model_in_every_applicable_runner`` ("all", or the runs that failed),
``edited_file_changes_key`` (1); ``audit_auc_vs_own_training``, ``sklearn_audit_attacks``,
``audit_seconds``, ``audit_refusal_classes``, ``audit_unhandled`` (0).
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GOOD = '''
from torch import nn

def make(in_shape, n_classes, width):
    d = 1
    for s in in_shape:
        d *= s
    h = max(4, int(32 * width))
    return nn.Sequential(nn.Flatten(), nn.Linear(d, h), nn.ReLU(), nn.Linear(h, n_classes))
'''
#: refusal class -> (file text, factory, the check its one line must name, add() options)
BAD: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "raises at import": ("raise RuntimeError('broken on purpose')\n" + GOOD, "make", "import",
                         {}),
    "syntax error": ("def make(:\n", "make", "import", {}),
    "no such factory": (GOOD, "build", "factory", {}),
    "factory raises": ("def make(in_shape, n_classes, width):\n    raise ValueError('no')\n",
                       "make", "build", {}),
    "returns no module": ("def make(in_shape, n_classes, width):\n    return 42\n", "make",
                          "build", {}),
    "wrong output shape": (GOOD.replace("nn.Linear(h, n_classes)", "nn.Linear(h, 3)"), "make",
                           "output shape", {}),
    "too large": (GOOD.replace("int(32 * width)", "int(4000 * width)"), "make", "parameters",
                  {"param_cap": 100_000}),
    "not deterministic": (GOOD.replace("h = max(4, int(32 * width))",
                                       "import random\n    h = random.randint(4, 400)"),
                          "make", "determinism", {}),
    "random buffer": (GOOD.replace(
        "    return nn.Sequential(",
        "    import torch\n    net = nn.Sequential(").replace(
        "nn.Linear(h, n_classes))", "nn.Linear(h, n_classes))\n"
        "    net.register_buffer('mask', torch.rand(d))\n    return net"),
        "make", "determinism", {}),
    "hangs at import": ("import time\ntime.sleep(3600)\n" + GOOD, "make", "time",
                        {"timeout_s": 5.0}),
    "exceeds memory": ("import torch\nX = torch.ones(2**33)\n" + GOOD, "make", "memory",
                       {"memory_mib": 256}),
    "not a Python file": (None, "make", "file", {}),
}
DIGITS = {"digits": ((1, 8, 8), 10)}


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A scratch model registry and result store for the benchmark's whole run."""
    keys = ("PRIVLAB_MODEL_REGISTRY", "PRIVLAB_CACHE_DIR")
    old = {k: os.environ.get(k) for k in keys}
    with tempfile.TemporaryDirectory(prefix="privlab-your-model-") as tmp:
        root = Path(tmp)
        os.environ["PRIVLAB_MODEL_REGISTRY"] = str(root / "registry")
        os.environ["PRIVLAB_CACHE_DIR"] = str(root / "cache")
        try:
            yield root
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _listing(*dirs: Path) -> list[tuple[str, int]]:
    return sorted((str(p), p.stat().st_size) for d in dirs if d.is_dir()
                  for p in d.rglob("*") if p.is_file())


def refusal_cases(root: Path) -> list[dict[str, Any]]:
    """Each class of :data:`BAD` registered through the child; its outcome and one line."""
    from core.models import user

    rows = []
    for cls, (text, factory, expect, opts) in BAD.items():
        path = root / "files" / f"{cls.replace(' ', '_')}.py"
        path.parent.mkdir(exist_ok=True)
        if text is None:  # a folder named like a Python file
            path.mkdir(exist_ok=True)
        else:
            path.write_text(text)
        before = _listing(root / "registry", root / "cache")
        t0 = time.perf_counter()
        try:
            user.add("bench_bad", f"{path}:{factory}", DIGITS, **opts)
            outcome, msg = "unhandled", "registered"
        except user.ModelError as exc:
            msg = str(exc)
            ok = msg.startswith(f"{path}: {expect}: ") and "\n" not in msg
            outcome = "refused" if ok else "unhandled"
        except Exception as exc:  # noqa: BLE001 - counted, never raised
            outcome, msg = "unhandled", f"{type(exc).__name__}: {exc}"
        if _listing(root / "registry", root / "cache") != before:
            outcome, msg = "unhandled", f"the registry or store changed; {msg}"
        rows.append({"class": cls, "check": expect, "outcome": outcome,
                     "seconds": round(time.perf_counter() - t0, 2),
                     "message": msg.replace(str(path), path.name)})
    return rows


def _register_good(root: Path) -> None:
    from core.models import user

    src = root / "files" / "good.py"
    src.parent.mkdir(exist_ok=True)
    src.write_text(GOOD)
    user.add("bench_mlp", f"{src}:make", DIGITS, by=user.BY_CLI)


def data_fit_case(root: Path) -> dict[str, Any]:
    """A data set the registered model was not checked for: refused at validation."""
    from benchmarks.golden import MEMBERSHIP
    from core.config.schema import ConfigError, parse_config

    before = _listing(root / "registry", root / "cache")
    try:
        parse_config({**MEMBERSHIP, "data": {"name": "faces"}, "model": {"arch": "bench_mlp"}})
        outcome, msg = "unhandled", "validated"
    except ConfigError as exc:
        msg = str(exc)
        outcome = "refused" if msg.startswith("model.arch: got 'bench_mlp'") and "\n" not in msg \
            else "unhandled"
    if _listing(root / "registry", root / "cache") != before:
        outcome = "unhandled"
    return {"class": "data it does not fit", "check": "data", "outcome": outcome,
            "message": msg}


def _bases() -> dict[str, dict[str, Any]]:
    from benchmarks.golden import ATTRIBUTE, GRADIENT, MEMBERSHIP, PROPERTY, REPR

    return {"membership": MEMBERSHIP, "gradient_leakage": GRADIENT,
            "attribute_privacy": {**ATTRIBUTE, "data": {"name": "digits"}},
            "property": PROPERTY, "repr_reconstruction": REPR}


def _block(kind: str, defense: str) -> dict[str, Any]:
    from core.foundation.parts import DEFENSES

    block: dict[str, Any] = {"kind": defense}
    if defense == "dp_sgd":
        block["epochs"] = 3  # golden's tiny DP-SGD
    if defense == "relaxloss":
        block["alpha"] = 3.0  # binds within the tiny config's epochs
    if kind == "repr_reconstruction" and DEFENSES.get(defense).config is not None:
        block.update({"channel": "learned", "epsilon": 1.0})
    return block


def runner_cases() -> list[dict[str, Any]]:
    """Every runner with a ``model`` block, under each of its defenses, on ``bench_mlp``."""
    from core.config.schema import ConfigError, parse_config
    from core.foundation.parts import defenses_for
    from core.runs.experiments import run

    rows = []
    for kind, base in _bases().items():
        for defense in defenses_for(kind):
            cfg = {**base, "model": {"arch": "bench_mlp"}, "defense": _block(kind, defense)}
            row: dict[str, Any] = {"runner": kind, "defense": defense}
            try:
                parsed = parse_config(cfg)
            except ConfigError as exc:
                row.update(applies=False, why=str(exc).splitlines()[0])
                rows.append(row)
                continue
            t0 = time.perf_counter()
            try:
                r = run(parsed)
                finite = all(math.isfinite(v) for v in r.metrics.values()
                             if isinstance(v, float))
                keyed = r.config["model"].get("fingerprint") == parsed.model.fingerprint
                row.update(applies=True, ok=bool(finite and keyed and r.metrics),
                           metrics=len(r.metrics), why="" if finite and keyed else
                           f"finite={finite}, fingerprint in config={keyed}")
            except Exception as exc:  # noqa: BLE001 - a failing run is a row, not a crash
                row.update(applies=True, ok=False, why=f"{type(exc).__name__}: {exc}"[:300])
            row["seconds"] = round(time.perf_counter() - t0, 2)
            rows.append(row)
    return rows


def edited_key(root: Path) -> dict[str, Any]:
    """Register, key, edit, register again: does every key change (and is the stale
    registration refused in between)?"""
    from benchmarks.golden import MEMBERSHIP
    from core.config.schema import ConfigError, cache_key, parse_config
    from core.foundation.stages import stage_key
    from core.models import user

    src = root / "files" / "edited.py"
    src.write_text(GOOD)
    user.add("bench_edit", f"{src}:make", DIGITS)
    cfg = {**MEMBERSHIP, "model": {"arch": "bench_edit"}}
    a = parse_config(cfg)
    src.write_text(GOOD.replace("32 * width", "48 * width"))
    try:
        parse_config(cfg)
        stale_refused = False
    except ConfigError:
        stale_refused = True
    user.add("bench_edit", f"{src}:make", DIGITS, replace=True)
    b = parse_config(cfg)
    run_changed = cache_key(a) != cache_key(b)
    stage_changed = (stage_key("target", {"model": a.model.model_dump(mode="json")})
                     != stage_key("target", {"model": b.model.model_dump(mode="json")}))
    user.remove("bench_edit")
    return {"stale_registration_refused": stale_refused, "run_key_changed": run_changed,
            "model_stage_key_changed": stage_changed,
            "changes_key": int(stale_refused and run_changed and stage_changed)}


def main(quick: bool = False) -> dict[str, Any]:
    from benchmarks.audit_model_bench import measure

    audit = measure(quick)  # privlab audit of the worked example (its own scratch registry)
    with scratch() as root:
        refusals = refusal_cases(root)
        _register_good(root)
        refusals.append(data_fit_case(root))
        runners = [] if quick else runner_cases()
        edit = edited_key(root)
    unhandled = [r["class"] for r in refusals if r["outcome"] != "refused"]
    ran = [r for r in runners if r.get("applies")]
    failed = [f"{r['runner']}/{r['defense']}" for r in ran if not r["ok"]]
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        load = None
    skipped = sorted({r["runner"] for r in runners if not r.get("applies")})
    return {
        "name": "your_model",
        "headline": {
            "user_model_checks": [r["class"] for r in refusals if r["outcome"] == "refused"],
            "user_model_unhandled": len(unhandled),
            "registered_model_in_every_applicable_runner": (
                ("all" if not failed else failed) if ran else "not run (--quick)"),
            "edited_file_changes_key": edit["changes_key"],
            **audit["headline"],
        },
        "targets": {"user_model_unhandled": 0, "edited_file_changes_key": 1, "audit_unhandled": 0},
        "rows": refusals + runners + [{"case": "edited file", **edit}] + audit["rows"],
        "sklearn_audit": audit["sklearn"],
        "notes": (f"{len(refusals)} refusal classes, {len(unhandled)} unhandled"
                  f"{' (' + ', '.join(unhandled) + ')' if unhandled else ''}; "
                  f"{len(ran)} runs of a registered MLP on digits over "
                  f"{len({r['runner'] for r in ran})} runners and their defenses, "
                  f"{len(failed)} failed; not applicable (validation says why, one line each): "
                  f"{', '.join(skipped) or 'none'}. Inf2Guard's membership defense trains its own "
                  "game networks (the MLP game) for an architecture without encoder / utility / "
                  f"membership roles, as for LeNet-5. Audit: {audit['notes']}. "
                  f"Load average {load}."),
    }

"""``privlab model add / list / remove``: your own model, registered from the command line only
(:mod:`core.models.user`; the dashboard offers registered models and never registers one).

::

    privlab model add NAME --from FILE.py:FACTORY --data D [--data D ...] [--param-cap N]
                      [--timeout S] [--memory MIB] [--widths LO HI] [--groupnorm] [--replace]
    privlab model list [--json]
    privlab model remove NAME
    privlab model add-weights NAME --weights FILE [--model ARCH] --data D --members FILE
                      [--epochs N] [--optimizer adam|sgd] [--lr X] [--batch-size N] [--replace]
    privlab model list-weights [--json]
    privlab model remove-weights NAME

``add-weights`` registers a model trained elsewhere (:mod:`core.config.trained_registry`) for
the Membership page's target control, after every check ``privlab audit`` runs on its files.
"""

from __future__ import annotations

import argparse
from typing import Any

from cli.output import EXIT_OK, UsageError, _json_out, _table


def data_facts(names: list[str]) -> dict[str, tuple[tuple[int, ...], int]]:
    """name → (input shape, classes) of each data set, loaded as a run loads it (a set that
    cannot load is its loader's one-line error)."""
    from core.config.schema import DataSpec
    from core.data import load_dataset

    out: dict[str, tuple[tuple[int, ...], int]] = {}
    for name in dict.fromkeys(names):
        try:
            ds = load_dataset(DataSpec(name=name), 0)
        except ValueError as exc:
            raise UsageError(f"--data: {str(exc).splitlines()[0]}") from None
        shape = tuple(ds.image_shape) if ds.image_shape else (int(ds.X.shape[1]),)
        out[name] = (shape, len(ds.label_names))
    return out


def _flops(n: int) -> str:
    from core.engine.costs import format_count

    return f"{format_count(n)}FLOPs"


def cmd_model_add(args: argparse.Namespace) -> int:
    from core.models import user

    user.check_name(args.name, replace=args.replace)
    facts = data_facts(args.data)
    entry = user.add(args.name, args.source, facts, param_cap=args.param_cap,
                     timeout_s=args.timeout, memory_mib=args.memory,
                     widths=tuple(args.widths), groupnorm=args.groupnorm, replace=args.replace,
                     by=user.BY_CLI)
    print(f"registered {entry['name']}: {entry['path']}:{entry['factory']} "
          f"(sha256 {entry['sha256'][:12]})")
    for d, v in entry["data"].items():
        print(f"  data {d} ({'×'.join(map(str, v['shape']))}, {v['classes']} classes): "
              f"{entry['params'][d]:,} parameters, {_flops(entry['flops'][d])} forward")
    print(f"  Opacus: {entry['opacus']}")
    print(f"  fingerprint {entry['fingerprint'][:12]}; use it as model: {{arch: {entry['name']}}}")
    return EXIT_OK


def _row(name: str, e: dict[str, Any]) -> dict[str, Any]:
    from core.models import user

    if "error" in e:
        return {"name": name, "status": "broken", "error": e["error"]}
    return {"name": name, "status": user.status(e), "factory": e["factory"],
            "data": list(e["data"]), "params": e["params"], "opacus": e["opacus"],
            "path": e["path"], "sha256": e["sha256"], "fingerprint": e["fingerprint"],
            "registered": e.get("registered")}


def cmd_model_list(args: argparse.Namespace) -> int:
    from core.models import user

    rows = [_row(n, e) for n, e in user.entries(with_broken=True).items()]
    if args.json:
        _json_out(rows)
        return EXIT_OK
    if not rows:
        print(f"no registered models in {user.registry_dir()} (privlab model add NAME --from "
              "FILE.py:FACTORY --data D)")
        return EXIT_OK
    table = [{**r, "data": ", ".join(r.get("data", [])),
              "params": ", ".join(f"{v:,}" for v in r.get("params", {}).values()),
              "opacus": str(r.get("opacus", "")).split(" (")[0],
              "fingerprint": r.get("fingerprint", "")[:12],
              "path": r.get("path", r.get("error"))} for r in rows]
    print(_table(table, ["name", "status", "factory", "data", "params", "opacus", "fingerprint",
                         "path"]))
    if any(r["status"] in ("edited", "tampered") for r in rows):
        print("edited / tampered: the file differs from the copy that was checked; a run refuses "
              "the model until it is registered again (privlab model add ... --replace)")
    return EXIT_OK


def cmd_model_remove(args: argparse.Namespace) -> int:
    from core.models import user

    path = user.remove(args.name)
    print(f"removed {args.name} ({path} and its checked copy; your file is untouched)")
    return EXIT_OK


def cmd_weights_add(args: argparse.Namespace) -> int:
    from pathlib import Path

    from cli.audit import target_of
    from core.config import trained_registry as TR
    from core.config.audit import audit_config
    from core.config.schema import parse_config
    from core.runs.membership_stages import check_target

    TR.check_name(args.name, replace=args.replace)
    for f in ("weights", "members", "canaries"):  # the registration names files absolutely
        if getattr(args, f) is not None:
            setattr(args, f, str(Path(getattr(args, f)).expanduser().resolve()))
    spec = target_of(args)
    # the config privlab audit builds, checked as its target stage checks it: nothing trains
    cfg = parse_config(audit_config(**spec, attackers=["loss"], shadows=2))
    loaded = check_target(cfg)
    entry = TR.add(args.name, spec, replace=args.replace, by=TR.BY_CLI)
    what = entry["model"] or "scikit-learn estimator (skops)"
    print(f"registered trained model {entry['name']}: {what} on {entry['data']}, "
          f"{len(loaded.members)} members; weights {entry['target']['weights']} "
          f"(sha256 {entry['target']['weights_sha256'][:12]})")
    print("  offered on the Membership page as its target for data "
          f"{entry['data']} (Target: a trained model)")
    return EXIT_OK


def cmd_weights_list(args: argparse.Namespace) -> int:
    from core.config import trained_registry as TR

    rows = []
    for name, e in TR.entries(with_broken=True).items():
        why = TR.problem(e)
        rows.append({"name": name, "status": "ok" if why is None else "refused",
                     "data": e.get("data", ""), "model": e.get("model") or "skops",
                     "members": e.get("members", ""),
                     "weights": e.get("target", {}).get("weights", ""),
                     "registered": e.get("registered"), "reason": why or ""})
    if args.json:
        _json_out(rows)
        return EXIT_OK
    if not rows:
        print(f"no registered trained models in {TR.registry_dir()} (privlab model add-weights "
              "NAME --model ARCH --weights FILE --data D --members FILE)")
        return EXIT_OK
    print(_table(rows, ["name", "status", "data", "model", "members", "weights"]))
    for r in rows:
        if r["reason"]:
            print(r["reason"])
    return EXIT_OK


def cmd_weights_remove(args: argparse.Namespace) -> int:
    from core.config import trained_registry as TR

    path = TR.remove(args.name)
    print(f"removed trained model {args.name} ({path}; its files are untouched)")
    return EXIT_OK


def _float_pair(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}; expected a number") from None


def add_commands(sub: Any) -> None:
    """``privlab model ...`` on the CLI's subparsers."""
    from core.models import user

    sp = sub.add_parser("model", help="your own models: add, list, remove")
    msub = sp.add_subparsers(dest="model_command", required=True, metavar="ACTION")
    a = msub.add_parser("add", help="check a factory FACTORY(in_shape, n_classes, width) in a "
                                    "limited child process and register it by name")
    a.add_argument("name")
    a.add_argument("--from", dest="source", required=True, metavar="FILE.py:FACTORY",
                   help="the Python file and the function that builds the network")
    a.add_argument("--data", action="append", required=True, metavar="NAME",
                   help="a data set the model is for (repeat); it is built and checked for each")
    a.add_argument("--param-cap", type=int, default=user.PARAM_CAP,
                   help=f"most trainable parameters (default {user.PARAM_CAP:,})")
    a.add_argument("--timeout", type=float, default=user.TIMEOUT_S,
                   help=f"seconds for import, builds and checks (default {user.TIMEOUT_S:g})")
    a.add_argument("--memory", type=int, default=user.MEMORY_MIB,
                   help=f"MiB the checks may allocate (default {user.MEMORY_MIB})")
    a.add_argument("--widths", nargs=2, type=_float_pair, default=[1.0, 1.0],
                   metavar=("LO", "HI"), help="the width multipliers it may run at (default 1 1)")
    a.add_argument("--groupnorm", action="store_true",
                   help="BatchNorm → GroupNorm under every defense (DP-SGD always applies it)")
    a.add_argument("--replace", action="store_true", help="replace a registration of this name")
    a.set_defaults(func=cmd_model_add)
    a = msub.add_parser("list", help="registered models and whether their files changed")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=cmd_model_list)
    a = msub.add_parser("remove", help="forget a registration (your file stays)")
    a.add_argument("name")
    a.set_defaults(func=cmd_model_remove)
    from cli.audit import add_target_args

    a = msub.add_parser("add-weights", help="register a model trained elsewhere (its weights "
                        "and members, checked as privlab audit checks them) for the Membership "
                        "page")
    a.add_argument("name")
    add_target_args(a)
    a.add_argument("--replace", action="store_true", help="replace a registration of this name")
    a.set_defaults(func=cmd_weights_add)
    a = msub.add_parser("list-weights", help="registered trained models and whether their "
                                             "files changed")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=cmd_weights_list)
    a = msub.add_parser("remove-weights", help="forget a trained model (its files stay)")
    a.add_argument("name")
    a.set_defaults(func=cmd_weights_remove)

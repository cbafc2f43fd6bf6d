"""``privlab model add / list / remove``: your own model, registered from the command line only
(:mod:`core.models.user`; the dashboard offers registered models and never registers one).

::

    privlab model add NAME --from FILE.py:FACTORY --data D [--data D ...] [--param-cap N]
                      [--timeout S] [--memory MIB] [--widths LO HI] [--groupnorm] [--replace]
    privlab model list [--json]
    privlab model remove NAME
"""

from __future__ import annotations

import argparse
from typing import Any

from cli.main import EXIT_OK, UsageError, _json_out, _table


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

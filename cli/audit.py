"""``privlab audit``: a membership audit of a model trained elsewhere.

::

    privlab audit --weights FILE --data NAME (--members FILE | --members-column COL)
                  [--model ARCH] [--epochs N] [--optimizer adam|sgd] [--lr X] [--batch-size N]
                  [--shadows K] [--attackers a,b,...] [--canaries CSV] [--seed S]
                  [--set key=value ...] [--bundle OUT.zip [--no-figures]] [--json] [--no-cache]

The command writes a ``kind: membership`` config whose ``target`` block names the files
(:mod:`core.config.trained`: their content hashes join the cache key) and runs it as any run:
the target stage loads the weights instead of training (:mod:`core.runs.trained_target`), the
shadow and reference models train under the stated recipe, every membership attack that applies
scores the target, and the Result, report, store and bundle are those of a membership run. A
``.skops`` file is a scikit-learn estimator (its shadows are ``sklearn.base.clone`` copies; no
``--model``). Every file is checked before anything trains; a refusal is one line naming the
file and the check, with nothing stored.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def default_attackers(family: str = "membership") -> list[str]:
    """Every selectable attack of ``family`` that reads an undefended model's release."""
    from core.foundation.parts import DEFENSES, attacks_for, baseline_for

    releases = set(DEFENSES.get(baseline_for(family)).releases_for(family))
    return [a.key for a in attacks_for(family) if a.selectable and set(a.accepts) & releases]


def _member_count(args: argparse.Namespace) -> int:
    """How many members the file (or column) lists: ``train.members`` of the config (the run
    checks the rows themselves against the data)."""
    import numpy as np

    if args.members is not None:
        from core.data.members import read_members

        return len(np.unique(read_members(args.members)[0]))
    from core.data.members import members_from_flags
    from core.data.user import column

    flags, _ = column(args.data, args.members_column)
    return len(members_from_flags(flags, f"column {args.members_column!r}"))


def target_of(args: argparse.Namespace) -> dict[str, Any]:
    """The trained model the arguments name: ``target`` (the files with their sha256),
    ``members`` (their count), ``model`` (None for a .skops file), ``data`` and ``recipe``
    (the training fields given): what :func:`core.config.audit.audit_config` takes, and
    what ``privlab model add-weights`` registers."""
    from core.config.trained import RECIPE_FIELDS, SKOPS_SUFFIX, with_hashes

    sklearn = args.weights.lower().endswith(SKOPS_SUFFIX)
    if sklearn and args.model is not None:
        raise ValueError(f"--model: got {args.model!r}; a .skops file holds its own "
                         "scikit-learn model: leave --model out")
    if not sklearn and args.model is None:
        raise ValueError("--model: required for a PyTorch or safetensors weights file (the "
                         "architecture the weights are for: privlab parts --family models)")
    target = {"weights": str(Path(args.weights).expanduser())}
    if args.members is not None:
        target["members"] = str(Path(args.members).expanduser())
    else:
        target["members_column"] = args.members_column
    if args.canaries is not None:
        target["canaries"] = str(Path(args.canaries).expanduser())
    return {"data": args.data, "model": None if sklearn else args.model,
            "target": with_hashes(target), "members": _member_count(args),
            "recipe": {f: getattr(args, f) for f in RECIPE_FIELDS
                       if getattr(args, f) is not None}}


def audit_config(args: argparse.Namespace) -> dict[str, Any]:
    """The membership config ``privlab audit`` runs (before ``--set`` overrides)."""
    from core.config.audit import audit_config as config

    attackers = args.attackers.split(",") if args.attackers else default_attackers()
    return config(**target_of(args), attackers=attackers, shadows=args.shadows, seed=args.seed)


def make_command(run: Callable[[Any, argparse.Namespace], Any],
                 store: Callable[[argparse.Namespace], Any]) -> Callable[[argparse.Namespace], int]:
    """The ``audit`` command over ``run(cfg, args) -> (exit code, key)`` (the run command's
    compute-and-print) and ``store(args)`` (the result store)."""

    def cmd_audit(args: argparse.Namespace) -> int:
        from core.config.schema import apply_overrides, parse_config

        if args.bundle is not None and Path(args.bundle).exists() and not args.force:
            raise ValueError(f"--bundle: {args.bundle} exists; give --force to overwrite it")
        if args.bundle is not None and args.no_cache:
            raise ValueError("--bundle: a bundle is written from the store; drop --no-cache")
        raw = audit_config(args)
        cfg = parse_config(apply_overrides(raw, args.set) if args.set else raw)
        code, key = run(cfg, args)
        if args.bundle is not None and key is not None:
            from cache.bundle import write_bundle

            figures = not args.no_figures
            if figures:
                import dashboard.components.bundle_figures  # noqa: F401 -- registers the figures
            info = write_bundle(key, Path(args.bundle), store=store(args), figures=figures)
            # stdout stays one JSON object under --json
            print(f"wrote {info.sentence}", file=sys.stderr if args.json else sys.stdout)
        return code

    return cmd_audit


def add_target_args(sp: argparse.ArgumentParser) -> None:
    """The arguments naming a model trained elsewhere: its files, data set and recipe
    (``privlab audit`` and ``privlab model add-weights``)."""
    sp.add_argument("--weights", required=True, metavar="FILE",
                    help="safetensors, a PyTorch state dict (.pt, read with weights_only) or a "
                         "scikit-learn model saved with skops (.skops)")
    sp.add_argument("--model", metavar="ARCH", help="the architecture of the weights (a "
                    "registered one: privlab parts --family models); not for .skops")
    sp.add_argument("--data", required=True, metavar="NAME", help="the data set it trained on")
    who = sp.add_mutually_exclusive_group(required=True)
    who.add_argument("--members", metavar="FILE", help="row indices it trained on (.npy, "
                     ".json, .txt, .csv)")
    who.add_argument("--members-column", metavar="COL", help="an ignored 0/1 column of the "
                     "registered CSV data set marking the rows it trained on")
    sp.add_argument("--canaries", metavar="CSV", help="index,label,included: canary records "
                    "its training included at random (the one-run audit)")
    rec = sp.add_argument_group("training recipe of the shadow models (what the attacker is "
                                "assumed to know; default: privlab's membership recipe)")
    rec.add_argument("--epochs", type=int)
    rec.add_argument("--optimizer", choices=["adam", "sgd"])
    rec.add_argument("--lr", type=float)
    rec.add_argument("--batch-size", type=int)


def add_command(sub: Any, run: Callable[..., Any], store: Callable[..., Any],
                cache_dir: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``privlab audit`` on the CLI's subparsers."""
    sp = sub.add_parser("audit", help="membership audit of a model trained elsewhere (its "
                                      "weights and the rows it trained on)")
    add_target_args(sp)
    sp.add_argument("--shadows", type=int, default=16, help="shadow / reference models (even)")
    sp.add_argument("--attackers", metavar="A,B,...", help="default: every membership attack "
                    "that reads a model")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config field, e.g. --set projection_points=0")
    sp.add_argument("--bundle", metavar="OUT.zip", help="also write the run as a bundle")
    sp.add_argument("--force", action="store_true", help="overwrite --bundle")
    sp.add_argument("--no-figures", action="store_true", help="a --bundle without static figures")
    sp.add_argument("--json", action="store_true", help="print {key, kind, metrics, ...} as JSON")
    sp.add_argument("--no-cache", action="store_true", help="compute afresh; neither read nor "
                    "write the store (no --bundle then)")
    sp.add_argument("--progress", choices=["auto", "bar", "lines", "off"], default="auto")
    cache_dir(sp)
    sp.set_defaults(func=make_command(run, store))

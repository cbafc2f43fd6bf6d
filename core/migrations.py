"""Stored configs from older engine versions still load (issue: History must not break).

:func:`migrate` rewrites a raw config mapping of an older shape into the current one and says
what it changed, one note per change. It runs before validation in
:func:`core.config.parse_config`, so the CLI's ``--set`` paths of the old shape keep working.

Shape history:

- v1 (engine 0.1.x), ``kind: tappfl``: ``defense`` was a string, with the defenses'
  parameters beside it at top level (``tradeoff_lambda``, ``dp: {epsilon, delta, clip_norm}``,
  ``pruning_rate``, ``pruning_target``), plus ``utility_epochs`` (read nowhere).
- v2: ``kind: attribute_privacy``; ``defense`` is a tagged block carrying only its own
  parameters (``{kind: tappfl, tradeoff_lambda}``, ``{kind: dp_gaussian, epsilon, delta,
  clip_norm}``, ``{kind: pruning, rate, target}``, ...).
"""

from __future__ import annotations

import copy
from typing import Any

RENAMED_KINDS = {"tappfl": "attribute_privacy"}
#: v1 top-level fields that now live in a defense block (or nowhere)
_V1_DEFENSE_FIELDS = ("tradeoff_lambda", "dp", "pruning_rate", "pruning_target")
_DROPPED = {"utility_epochs": "utility_epochs was read nowhere (the utility heads have fixed "
                              "settings); dropped"}


def _v1_block(name: str, obj: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The v2 defense block for a v1 defense string and its top-level parameters."""
    dp = obj.get("dp") if isinstance(obj.get("dp"), dict) else {}
    if name == "tappfl":
        block = {"kind": "tappfl"}
        if "tradeoff_lambda" in obj:
            block["tradeoff_lambda"] = obj["tradeoff_lambda"]
        return block
    if name in ("dp_gaussian", "dp_laplace"):
        return {"kind": name, **{k: v for k, v in dp.items() if k in ("epsilon", "delta", "clip_norm")}}
    if name == "pruning":
        block = {"kind": "pruning"}
        if "pruning_rate" in obj:
            block["rate"] = obj["pruning_rate"]
        if "pruning_target" in obj:
            block["target"] = obj["pruning_target"]
        return block
    return {"kind": name}


def migrate(obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Return ``(mapping in the current shape, notes)``; a current mapping comes back unchanged
    with no notes. Never raises: what it cannot place is left for validation to report."""
    if not isinstance(obj, dict):
        return obj, []
    try:
        out = copy.deepcopy(obj)
    except RecursionError:  # nested beyond any config: validation reports it in one line
        return obj, []
    notes: list[str] = []
    kind = out.get("kind")
    if isinstance(kind, str) and kind in RENAMED_KINDS:  # a list or dict kind is unhashable
        out["kind"] = RENAMED_KINDS[kind]
        notes.append(f"kind {kind!r} is now {RENAMED_KINDS[kind]!r}")
    if out.get("kind") != "attribute_privacy":
        return out, notes
    for name, why in _DROPPED.items():
        if name in out:
            out.pop(name)
            notes.append(why)
    defense = out.get("defense")
    if isinstance(defense, str):  # v1: a string and loose top-level parameters
        out["defense"] = _v1_block(defense, out, notes)
        used = {"tappfl": ("tradeoff_lambda",), "dp_gaussian": ("dp",), "dp_laplace": ("dp",),
                "pruning": ("pruning_rate", "pruning_target")}.get(defense, ())
        moved = [f for f in _V1_DEFENSE_FIELDS if f in out and f in used]
        dropped = [f for f in _V1_DEFENSE_FIELDS if f in out and f not in used]
        for f in _V1_DEFENSE_FIELDS:
            out.pop(f, None)
        notes.append(f"defense {defense!r} became the block defense.kind={defense!r}"
                     + (f" (moved in: {', '.join(moved)})" if moved else ""))
        if dropped:
            notes.append(f"dropped {', '.join(dropped)}: not parameters of defense {defense!r}")
        return out, notes
    # v2 mapping with v1-style overrides (``--set tradeoff_lambda=0.75`` on a v2 file)
    block = defense if isinstance(defense, dict) else None
    if defense is None and any(f in out for f in _V1_DEFENSE_FIELDS):
        block = out["defense"] = {"kind": "tappfl"}
    if block is not None:
        aliases = {"tradeoff_lambda": ("tappfl", "tradeoff_lambda"),
                   "pruning_rate": ("pruning", "rate"), "pruning_target": ("pruning", "target")}
        for old, (owner, new) in aliases.items():
            if old in out and block.get("kind", "tappfl") == owner:
                block[new] = out.pop(old)
                notes.append(f"{old} moved to defense.{new}")
        if isinstance(out.get("dp"), dict) and block.get("kind") in ("dp_gaussian", "dp_laplace"):
            for k, v in out.pop("dp").items():
                block[k] = v
            notes.append("dp.* moved into the defense block")
    return out, notes

"""Stored configs from older engine versions still load (issue: History must not break).

:func:`migrate` rewrites a raw config mapping of an older shape into the current one and says
what it changed, one note per change. It runs before validation in
:func:`core.config.schema.parse_config`, so the CLI's ``--set`` paths of the old shape keep working.

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
#: the defense a v1 mapping without one ran (the v1 default)
_V1_DEFAULT = "tappfl"
_DROPPED = {"utility_epochs": "utility_epochs was read nowhere (the utility heads have fixed "
                              "settings); dropped"}


def _legacy(name: str) -> tuple[tuple[str, str], ...]:
    """(v1 path, block field) of the registered defense ``name`` (its config block's
    ``legacy_fields``, :class:`core.config.base.Block`); none for an unknown name."""
    from core.foundation.parts import DEFENSES

    block = DEFENSES.get(name).config if name in DEFENSES else None
    return block.legacy_fields if block is not None else ()


def _v1_block(name: str, obj: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The v2 defense block for a v1 defense string and its top-level parameters (where the
    part's ``legacy_fields`` say they were)."""
    block: dict[str, Any] = {"kind": name}
    for path, field in _legacy(name):
        head, _, sub = path.partition(".")
        src = obj.get(head)
        if sub:
            if isinstance(src, dict) and sub in src:
                block[field] = src[sub]
        elif head in obj:
            block[field] = src
    return block


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
        used = {path.partition(".")[0] for path, _ in _legacy(defense)}
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
        block = out["defense"] = {"kind": _V1_DEFAULT}
    if block is not None:
        owner = block.get("kind", _V1_DEFAULT)
        legacy = _legacy(owner) if isinstance(owner, str) else ()
        for old, new in ((p, f) for p, f in legacy if "." not in p):
            if old in out:
                block[new] = out.pop(old)
                notes.append(f"{old} moved to defense.{new}")
        for head in dict.fromkeys(p.partition(".")[0] for p, _ in legacy if "." in p):
            if isinstance(out.get(head), dict):
                for k, v in out.pop(head).items():
                    block[k] = v
                notes.append(f"{head}.* moved into the defense block")
    return out, notes

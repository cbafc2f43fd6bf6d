"""The ``kind: membership`` config that audits a model trained elsewhere, built from the
target block of :mod:`core.config.trained` (``privlab audit``, ``privlab model add-weights``
and the Membership page's trained target share it)."""

from __future__ import annotations

from typing import Any

from core.config.schema import MembershipAttackSpec
from core.config.trained import RECIPE_FIELDS

__all__ = ["audit_config"]


def audit_config(*, data: str, target: dict[str, Any], members: int, model: str | None,
                 attackers: list[str], shadows: int, recipe: dict[str, Any] | None = None,
                 seed: int = 0) -> dict[str, Any]:
    """The ``kind: membership`` config that audits a model trained elsewhere (``privlab
    audit``, and the Membership page's trained target): ``target`` the block with its hashes,
    ``members`` their count, ``model`` the architecture (None for a skops estimator),
    ``recipe`` the shadows' training fields given (the rest: privlab's membership recipe).
    With few shadows RMIA takes the reference models there are."""
    train: dict[str, Any] = {"members": int(members)}
    train.update({k: v for k, v in (recipe or {}).items() if k in RECIPE_FIELDS and v is not None})
    attack: dict[str, Any] = {"attackers": list(attackers), "shadows": shadows}
    if shadows >= 2 and shadows // 2 < MembershipAttackSpec().rmia_references:
        attack["rmia_references"] = shadows // 2
    cfg: dict[str, Any] = {"kind": "membership", "seed": seed, "data": {"name": data},
                           "train": train, "target": dict(target), "attack": attack}
    if model is not None:
        cfg["model"] = {"arch": model}
    return cfg

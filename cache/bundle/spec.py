"""A comparison's spec as plain data (YAML/JSON) and back: what ``comparison.yaml`` in a bundle
holds and what ``privlab bundle --comparison SPEC.yaml`` reads.

The mapping is the :class:`core.compare.ComparisonSpec` field for field; each defense is
``{defense, grid?, label?, params?}`` (``grid`` absent: the knob's default grid; ``[]``: one
point, the knob not swept). Where the points run (``executor``, ``workers``) is not written:
it is part of no key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.compare import ComparisonSpec, DefenseSpec


class SpecError(ValueError):
    """A comparison spec refused (one line naming the field)."""


_FIELDS = {"family", "data", "utility", "privacy", "defenses", "seeds", "base", "executor",
           "workers"}
_DEFENSE_FIELDS = {"defense", "grid", "label", "params"}


def spec_to_dict(spec: ComparisonSpec) -> dict[str, Any]:
    """The spec as JSON-able data (executor and workers left out)."""
    defenses = []
    for d in spec.defenses:
        item: dict[str, Any] = {"defense": d.defense}
        if d.grid is not None:
            item["grid"] = [float(g) for g in d.grid]
        if d.label:
            item["label"] = d.label
        if d.params:
            item["params"] = dict(d.params)
        defenses.append(item)
    return {"family": spec.family, "data": spec.data, "utility": spec.utility,
            "privacy": spec.privacy, "defenses": defenses, "seeds": [int(s) for s in spec.seeds],
            "base": _plain(spec.base)}


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def spec_from_dict(data: Any, where: str = "comparison") -> ComparisonSpec:
    """A spec from :func:`spec_to_dict`'s mapping; SpecError naming the field otherwise."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{where}: got {type(data).__name__}; expected a mapping with "
                         "family, data, utility, privacy, defenses")
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise SpecError(f"{where}.{unknown[0]}: unknown field; allowed: {', '.join(sorted(_FIELDS))}")
    for name in ("family", "data", "utility", "privacy"):
        if not isinstance(data.get(name), str) or not data[name]:
            raise SpecError(f"{where}.{name}: got {data.get(name)!r}; expected a name")
    raw = data.get("defenses")
    if not isinstance(raw, list) or not raw:
        raise SpecError(f"{where}.defenses: got {raw!r}; expected a list of at least one defense")
    defenses = [_defense(d, f"{where}.defenses[{i}]") for i, d in enumerate(raw)]
    seeds = data.get("seeds", [0])
    if not isinstance(seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool)
                                              for s in seeds):
        raise SpecError(f"{where}.seeds: got {seeds!r}; expected a list of integers")
    base = data.get("base", {})
    if not isinstance(base, Mapping):
        raise SpecError(f"{where}.base: got {type(base).__name__}; expected a mapping")
    workers = data.get("workers")
    return ComparisonSpec(family=data["family"], data=data["data"], utility=data["utility"],
                          privacy=data["privacy"], defenses=tuple(defenses),
                          seeds=tuple(seeds), base=dict(base),
                          executor=str(data.get("executor", "serial")),
                          workers=None if workers is None else int(workers))


def _defense(item: Any, where: str) -> DefenseSpec:
    if isinstance(item, str):
        item = {"defense": item}
    if not isinstance(item, Mapping) or not isinstance(item.get("defense"), str):
        raise SpecError(f"{where}: got {item!r}; expected {{defense: NAME, grid: [...]}}")
    unknown = sorted(set(item) - _DEFENSE_FIELDS)
    if unknown:
        raise SpecError(f"{where}.{unknown[0]}: unknown field; allowed: "
                         f"{', '.join(sorted(_DEFENSE_FIELDS))}")
    grid = item.get("grid")
    if grid is not None and (not isinstance(grid, list) or not all(
            isinstance(g, (int, float)) and not isinstance(g, bool) for g in grid)):
        raise SpecError(f"{where}.grid: got {grid!r}; expected a list of numbers")
    params = item.get("params") or {}
    if not isinstance(params, Mapping):
        raise SpecError(f"{where}.params: got {params!r}; expected a mapping")
    label = item.get("label")
    return DefenseSpec.of(item["defense"], grid, None if label is None else str(label), **params)


def load_spec(path: str | Path) -> ComparisonSpec:
    """A spec from a YAML or JSON file (safe loader, size-checked: :mod:`core.config_files`)."""
    from core.config_files import decode_utf8, parse_text, read_bytes

    p = Path(path)
    text = decode_utf8(read_bytes(p), str(p))
    return spec_from_dict(parse_text(text, str(p), json_=p.suffix.lower() == ".json"), p.name)

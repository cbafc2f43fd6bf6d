"""A comparison named in a YAML or JSON file (``privlab report --comparison SPEC.yaml``), read
with the config files' safe reader (:mod:`core.config_files`):

.. code-block:: yaml

    family: membership
    data: digits
    utility: utility_acc
    privacy: mia_auc_best
    defenses:
      - {defense: none}
      - {defense: dp_sgd, grid: [2.0, 8.0]}
      - {defense: channel, grid: [20, 80], params: {channel: natural}}
    seeds: [0]
    base: {train: {members: 80}}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

FIELDS = ("family", "data", "utility", "privacy", "defenses", "seeds", "base")
DEFENSE_FIELDS = ("defense", "grid", "label", "params")


def comparison_from_mapping(obj: Any) -> Any:
    """A :class:`core.compare.ComparisonSpec` from plain data (one-line ValueError naming the
    field)."""
    from core.compare import ComparisonSpec, DefenseSpec

    if not isinstance(obj, Mapping):
        raise ValueError(f"comparison: got {type(obj).__name__}; expected a mapping with "  # noqa: TRY004 - bad file content is bad input
                         f"{', '.join(FIELDS)}")
    extra = [k for k in obj if k not in FIELDS]
    missing = [k for k in FIELDS[:5] if k not in obj]
    if extra or missing:
        raise ValueError(f"comparison: {'unknown field ' + repr(extra[0]) if extra else ''}"
                         f"{'; ' if extra and missing else ''}"
                         f"{'missing ' + ', '.join(missing) if missing else ''}; fields: "
                         f"{', '.join(FIELDS)}")
    defenses = []
    for i, d in enumerate(obj["defenses"] or []):
        if not isinstance(d, Mapping) or "defense" not in d \
                or any(k not in DEFENSE_FIELDS for k in d):
            raise ValueError(f"defenses[{i}]: got {d!r}; expected a mapping with defense and "
                             f"optionally {', '.join(DEFENSE_FIELDS[1:])}")
        grid = d.get("grid")
        defenses.append(DefenseSpec.of(str(d["defense"]), None if grid is None else list(grid),
                                       d.get("label"), **dict(d.get("params") or {})))
    if not defenses:
        raise ValueError("defenses: got an empty list; name at least one defense")
    return ComparisonSpec(family=str(obj["family"]), data=str(obj["data"]),
                          utility=str(obj["utility"]), privacy=str(obj["privacy"]),
                          defenses=tuple(defenses),
                          seeds=tuple(int(s) for s in obj.get("seeds") or (0,)),
                          base=dict(obj.get("base") or {}))


def load_comparison(path: str | Path) -> Any:
    """The comparison in a YAML or JSON file."""
    from core.config_files import decode_utf8, parse_text, read_bytes

    p = Path(path)
    text = decode_utf8(read_bytes(p), str(p))
    return comparison_from_mapping(parse_text(text, str(p), json_=p.suffix.lower() == ".json"))

"""Stored runs summarised for people: one row per run (kind, key, date, engine, data set,
defense and its knob, the kind's headline metrics). The History page lists every run this way
and each page's tail (:func:`dashboard.components.page_tail.page_tail`) the latest of its kind.

Stored configs of an older shape are migrated (:func:`core.config.migrations.migrate`) first; runs of
an older engine are marked, not hidden.
"""

from __future__ import annotations

from typing import Any

from core.config.migrations import RENAMED_KINDS, migrate
from core.foundation.fingerprint import same_engine
from core.foundation.metric_schema import HEADLINES
from core.foundation.parts import DEFENSES
from dashboard.base.format import display_name, format_value

OLDER = "older engine"
#: metrics shown in the table beside each kind's headline utility and attack
EXTRA_METRICS = {
    "projection": ["n_points"],
    "attribute_privacy": ["attack_in_training_acc", "attack_mlp_auc"],
}


def current_kind(kind: str) -> str:
    """A stored kind under its current name (``tappfl`` -> ``attribute_privacy``)."""
    return RENAMED_KINDS.get(kind, kind)


def kind_title(kind: str) -> str:
    """A stored kind as a reader sees it: its family's title (``membership inference``), the
    kind itself where none is registered (``sweep``, ``projection``)."""
    from core.foundation.parts import FAMILIES

    kind = current_kind(kind)
    return FAMILIES.get(kind).title if kind in FAMILIES else kind


def stored_kinds(kind: str) -> list[str]:
    """The names runs of ``kind`` may be stored under (its current name and former ones)."""
    return [kind, *(old for old, new in RENAMED_KINDS.items() if new == kind)]


def defense_summary(block: Any) -> str:
    """``TAPPFL λ=0.5``, ``DP-Gaussian on uploads ε=1``, ``none``: the defense by its title
    (without its parenthesised detail) and its knob."""
    import re

    if not isinstance(block, dict):
        return str(block)
    kind = str(block.get("kind", "?"))
    part = DEFENSES.get(kind) if kind in DEFENSES else None
    name = (re.sub(r"\s*\([^)]*\)", "", part.title).strip() or kind) if part else kind
    knob = part.knob if part is not None else None
    if knob is not None and isinstance(block.get(knob.field), int | float):
        return f"{name} {knob.symbol}={block[knob.field]:g}"
    return name


def setting(kind: str, cfg: dict) -> str:
    """The one or two settings that tell runs of a kind apart (older shapes migrated first)."""
    cfg, _ = migrate(cfg)
    kind = current_kind(kind)
    if kind == "projection":
        return f"{cfg.get('method')} · {cfg.get('split')} · ≤{cfg.get('max_points')} pts"
    if kind == "attribute_privacy":
        fl = cfg.get("fl", {})
        return (f"{defense_summary(cfg.get('defense', {'kind': 'tappfl'}))} · "
                f"{fl.get('num_devices')} devices × {fl.get('rounds')} rounds")
    if kind == "sweep":
        base = cfg.get("base", {})
        grid = cfg.get("grid", {})
        what = ", ".join(f"{p} ({len(v)})" for p, v in grid.items()) or "seeds only"
        bk = kind_title(str(base.get("kind", "?")))
        return (f"{bk} · {defense_summary(base.get('defense', ''))} · "
                f"over {what} × {len(cfg.get('seeds', []))} seeds")
    if isinstance(cfg.get("defense"), dict):
        return defense_summary(cfg["defense"])
    return ""


def data_name(cfg: dict) -> str:
    """The run's data set (a sweep's: its base's)."""
    data = cfg.get("data") or (cfg.get("base") or {}).get("data") or {}
    return str(data.get("name", "")) if isinstance(data, dict) else ""


def defense_name(cfg: dict) -> str:
    """The run's defense kind (a sweep's: its base's; ``none`` when the kind has none)."""
    block = cfg.get("defense", (cfg.get("base") or {}).get("defense"))
    if isinstance(block, dict):
        return str(block.get("kind", "none"))
    return str(block) if block else "none"


def defense_title(name: str) -> str:
    """A defense kind by its registered title (``dp_sgd`` -> "DP-SGD (Opacus)")."""
    return DEFENSES.get(name).title if name in DEFENSES else name


def main_metrics(kind: str) -> list[str]:
    """The kind's headline utility and attack metric names, then its extra columns."""
    kind = current_kind(kind)
    head = HEADLINES.get(kind)
    names = [m for m in ((head.utility, head.attack) if head else ()) if m]
    return names + [m for m in EXTRA_METRICS.get(kind, []) if m not in names]


def engine_label(version: str) -> str:
    return "current" if same_engine(version) else OLDER


def short_name(name: str, width: int = 40) -> str:
    """A metric's display name within ``width`` characters (a table cell, a legend): whole,
    else the part before its ":", else cut at a word."""
    text = display_name(name)
    if len(text) > width and ":" in text:
        text = text.split(":")[0]
    if len(text) <= width:
        return text
    return text[:width].rsplit(" ", 1)[0] + "…"


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def records_of(store, kind: str, limit: int) -> list:
    """The newest ``limit`` index records of ``kind`` (``all``: of every kind), newest first."""
    if kind == "all":
        return store.list(limit=limit)
    recs = [r for k in stored_kinds(kind) for r in store.list(kind=k, limit=limit)]
    return sorted(recs, key=lambda r: r.created, reverse=True)[:limit]


def run_row(rec) -> dict[str, Any]:
    """One table row of an index record."""
    cfg = migrate(rec.config)[0]
    return {
        "kind": kind_title(rec.kind),
        "key": rec.key[:12],
        "created (UTC)": rec.created.replace("T", " ")[:19],
        "engine": engine_label(rec.engine_version),
        "seconds": None if rec.seconds is None else round(rec.seconds, 2),
        "data set": data_name(cfg),
        "defense": defense_title(defense_name(cfg)),
        "settings": setting(rec.kind, rec.config),
        "main metrics": " · ".join(f"{short_name(m)} {format_value(rec.metrics.get(m))}"
                                   for m in main_metrics(rec.kind) if m in rec.metrics),
        "label": rec.label,
    }

"""Where an imported run came from, in words (History, ``privlab list`` / ``show``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def origin_text(origin: Mapping[str, Any] | None) -> str:
    """``imported from NAME.zip on DATE`` (and the engine, read-only) for a run that came from
    a bundle; empty for a run computed here."""
    if not origin:
        return ""
    text = f"imported from {origin.get('bundle', 'a bundle')} on {str(origin.get('imported', ''))[:10]}"
    if origin.get("read_only"):
        text += f" (engine {origin.get('engine', '?')}; read-only)"
    return text

"""The check behind ``pages_with_two_recommendations``: the elements of a page (run through
``streamlit.testing.v1.AppTest``) that answer "what do I release?". A page must show at most
one: the report's line ("Release recommendation: ...") or the advisor's block (its answer
starts "Threat:" and carries the release rule's answer beside it)."""

from __future__ import annotations

from typing import Any

#: the element kinds a recommendation is drawn with (markdown and the alert boxes)
KINDS = ("markdown", "success", "warning", "info", "error")


def recommendation_blocks(at: Any) -> list[str]:
    """The texts of ``at``'s elements that give a release recommendation."""
    texts = [str(e.value) for kind in KINDS for e in getattr(at, kind)]
    return [t for t in texts if "Release recommendation" in t or t.lstrip().startswith("Threat:")]


def two_recommendations(at: Any) -> bool:
    """Whether the page ``at`` answers "what do I release?" more than once."""
    return len(recommendation_blocks(at)) > 1

"""Counts in sentences: "1 run", "2 runs" (a count a reader sees never takes the wrong
number)."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` in the number ``n`` asks for: ``counted(1, "run")`` is "1 run",
    ``counted(2, "entry", "entries")`` is "2 entries"; ``n`` printed with thousands commas."""
    word = noun if n == 1 else (plural or noun + "s")
    return f"{n:,} {word}"

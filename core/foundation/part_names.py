"""Registered part names against their titles: which names a reader would see as identifiers,
and text with those names replaced by titles. Pages, notes and the report show titles; the CLI
and configs keep the names a user types."""

from __future__ import annotations

import re
from functools import cache


def _token(name: str) -> str:
    return rf"(?<![\w.]){re.escape(name)}(?![\w])"


@cache
def identifiers() -> tuple[str, ...]:
    """Registered part names (attacks by registry and config name, defenses, attack families)
    that differ from their titles and that a reader cannot take for a word: a name with an
    underscore, or one that no registered title spells as it is written (``rmia`` beside
    "RMIA (offline)", ``logreg``), unlike ``loss`` or ``prior``, which titles use as words.
    Longest first."""
    from core.foundation.parts import ATTACKS, DEFENSES, FAMILIES

    titles = [f.title for f in FAMILIES.values()] + [d.title for d in DEFENSES.values()]
    titles += [a.title for a in ATTACKS.values()]
    joined = "\n".join(titles)
    names = set(FAMILIES) | set(DEFENSES)
    for n, a in ATTACKS.items():
        names |= {n, a.key}
    out = {n for n in names if "_" in n or not re.search(_token(n), joined)}
    return tuple(sorted(out, key=lambda n: (-len(n), n)))


def visible(text: str) -> list[str]:
    """The names of :func:`identifiers` occurring as whole tokens in ``text``."""
    return sorted(n for n in identifiers() if re.search(_token(n), text))


def titled(text: str, family: str | None = None) -> str:
    """``text`` (a config error, a note) with the names of :func:`identifiers` replaced by
    their titles: ``family``'s attack config names (``lira_offline`` → "LiRA (offline)"),
    defense and family names; without ``family``, only the config names one attack has."""
    from core.foundation.parts import ATTACKS, DEFENSES, FAMILIES

    names: dict[str, str] = {n: f.title for n, f in FAMILIES.items()}
    names.update({n: d.title for n, d in DEFENSES.items()})
    if family is not None:
        names.update({a.key: a.title for _, a in ATTACKS.items() if a.family == family})
    else:  # no family: the config names only one attack has (in_training has several)
        by_key: dict[str, set[str]] = {}
        for a in ATTACKS.values():
            by_key.setdefault(a.key, set()).add(a.title)
        names.update({k: t.pop() for k, t in by_key.items() if len(t) == 1})
    for n in identifiers():  # longest first: lira_offline before a shorter name inside it
        if n in names:
            text = re.sub(_token(n), lambda _m, t=names[n]: t, text)
    return text

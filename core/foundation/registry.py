"""One small generic registry (Opacus' habit: a registry behind one typed interface), reused
for defenses, attacks, accountants and runners.

Entries are registered once at import time of a light module (no torch); an unknown name is a
one-line error naming what was asked for and what exists.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Generic, TypeVar, overload

T = TypeVar("T")


class UnknownName(KeyError):
    """An unknown registry name; ``str()`` is the one-line message (no KeyError quoting)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """Name -> entry. ``what`` names the registry in errors (``"defense"``, ``"attack"``).
    Every instance is listed in :data:`Registry.instances` (the test that resolves every
    ``"module:attr"`` entry reads them all)."""

    instances: ClassVar[list[Registry[Any]]] = []

    def __init__(self, what: str, *, loader: str | None = None,
                 order: Callable[[T], Any] | None = None,
                 check: Callable[[str, T], None] | None = None,
                 extra: str | None = None) -> None:
        Registry.instances.append(self)
        self.what = what
        #: called as ``check(name, entry)`` before an entry registered after the loader's
        #: package has been imported is added (it raises to refuse it); the declarations the
        #: loader imports are not checked one by one (their test checks them all), so reading
        #: the registry stays light
        self._check = check
        self._loaded = loader is None
        self._entries: dict[str, T] = {}
        #: a package imported on the first read (the declarations that register themselves:
        #: :mod:`core.catalog`); imported by name so that a declaration module may import the
        #: registry it registers into
        self._loader = loader
        #: a sort key: entries are read in (key, registration) order
        self._order = order
        #: ``"module:attr"`` of ``fn() -> dict[str, T]``: entries registered outside the code
        #: (a user's models, :mod:`core.models.user`), read on every access after the
        #: registered ones; a name registered in code wins
        self._extra = extra
        #: bumped on every register / unregister (readers that derive tables from the entries,
        #: such as the metric schema, rebuild when it moves)
        self.version = 0

    @overload
    def register(self, name: str, entry: T) -> T: ...
    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    def register(self, name: str, entry: T | None = None):
        """Register ``entry`` under ``name`` (or use as a decorator). A name is registered once."""

        def _add(obj: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.what}: {name!r} is already registered")
            if self._check is not None and self._loaded:
                self._check(name, obj)
            self._entries[name] = obj
            self.version += 1
            return obj

        return _add if entry is None else _add(entry)

    def unregister(self, name: str) -> None:
        """Remove an entry (tests that register a temporary part)."""
        if self._entries.pop(name, None) is not None:
            self.version += 1

    def _load(self) -> None:
        if self._loader is not None:
            import importlib

            loader, self._loader = self._loader, None
            importlib.import_module(loader)
            self._loaded = True

    def _extras(self) -> dict[str, T]:
        if self._extra is None:
            return {}
        found = resolve_path(self._extra)()
        return {k: v for k, v in found.items() if k not in self._entries}

    def _all(self) -> dict[str, T]:
        self._load()
        extras = self._extras()
        return {**self._entries, **extras} if extras else self._entries

    def builtin_names(self) -> tuple[str, ...]:
        """The names registered in code (without the :attr:`_extra` source's)."""
        self._load()
        return tuple(self._entries)

    def _sorted(self) -> dict[str, T]:
        entries = self._all()
        if self._order is None:
            return entries
        keyed = sorted(enumerate(entries.items()),
                       key=lambda t: (self._order(t[1][1]), t[0]))
        return {k: v for _, (k, v) in keyed}

    def get(self, name: str) -> T:
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            pass
        try:
            return self._extras()[name]
        except KeyError:
            raise UnknownName(self.unknown(name)) from None

    def unknown(self, name: object) -> str:
        names = ", ".join(self._sorted()) or "(none registered)"
        return f"{self.what}: got {name!r}; allowed: {names}"

    def names(self) -> tuple[str, ...]:
        return tuple(self._sorted())

    def items(self) -> Iterator[tuple[str, T]]:
        return iter(list(self._sorted().items()))

    def values(self) -> Iterator[T]:
        return iter(list(self._sorted().values()))

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._sorted()))

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries or (self._extra is not None and name in self._extras())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {list(self._entries)})"


#: packages whose objects :func:`load_object` imports from a ``"module:attr"`` path (the
#: registries name privlab's own parts by path; a path from anywhere else, e.g. a network
#: message, is refused). A part defined outside privlab registers its function or builder as
#: the object itself (a callable), which needs no import.
ALLOWED_PACKAGES = ("core",)


def load_object(path: str | Callable[..., Any]):
    """Import ``"package.module:attr"`` lazily (runners and attack functions pull in torch), or
    return ``path`` itself when a registry entry holds the callable. Only paths inside
    :data:`ALLOWED_PACKAGES` are imported; any other path is a ValueError naming it."""
    import importlib

    if callable(path):
        return path
    module, sep, attr = str(path).partition(":")
    parts = module.split(".")
    if not (sep and attr.isidentifier() and all(p.isidentifier() for p in parts)
            and parts[0] in ALLOWED_PACKAGES):
        raise ValueError(f"object path: got {str(path)[:80]!r}; only registered "
                         f"'{ALLOWED_PACKAGES[0]}.<module>:<name>' objects are loaded")
    return getattr(importlib.import_module(module), attr)


#: a ``"package.module:attr"`` object path (the form :func:`load_object` imports)
OBJECT_PATH = re.compile(r"(?:core|cache|dashboard)(?:\.\w+)+:\w+(?:\.\w+)*")


def object_paths(value: Any) -> list[str]:
    """Every ``"module:attr"`` string held in ``value``: itself, or inside a dataclass's fields,
    a tuple, list or a dict's values (a registry entry and the typed groups it holds)."""
    import dataclasses

    if isinstance(value, str):
        return [value] if OBJECT_PATH.fullmatch(value) else []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [p for f in dataclasses.fields(value)
                for p in object_paths(getattr(value, f.name))]
    if isinstance(value, tuple | list):
        return [p for v in value for p in object_paths(v)]
    if isinstance(value, dict):
        return [p for v in value.values() for p in object_paths(v)]
    return []


def resolve_path(path: str) -> Any:
    """The object ``"module:attr"`` names (``attr`` may be dotted: a class's method); an
    ImportError or AttributeError says what is missing. Unlike :func:`load_object` it accepts
    any privlab package (the registry-strings test resolves them all)."""
    import importlib

    module, _, attr = path.partition(":")
    obj = importlib.import_module(module)
    for name in attr.split("."):
        obj = getattr(obj, name)
    return obj

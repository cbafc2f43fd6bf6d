"""Registry of data sets: static metadata (cheap, used by config validation) and loaders.

``DATASETS[name]`` (:mod:`core.data.builtin`) describes each built-in set without loading it;
sets a user registered (``privlab data add``, :mod:`core.data.user`) join them through
:func:`get_info` and :func:`all_datasets`, which read the user registry directory on every call
(small JSON files), so a registration shows up at once in the CLI, the dashboard and config
validation. Imports run one way: this module imports :mod:`core.data.user`, which needs only
the built-in table (:mod:`core.data.builtin`).
``load_dataset(spec, seed)`` loads, standardises and splits. Loaders live in
``core/data/<family>.py`` and are imported lazily.
"""

from __future__ import annotations

from core.data import user
from core.data.builtin import DATASETS, DatasetInfo

__all__ = ["DATASETS", "DatasetInfo", "all_datasets", "allowed_names", "dataset_attributes",
           "get_info"]


def all_datasets() -> dict[str, DatasetInfo]:
    """Built-in sets, then the registered ones (sorted by name; broken registrations skipped)."""
    return {**DATASETS, **{n: user.entry_info(e) for n, e in user.entries().items()}}


def allowed_names() -> str:
    """``digits, ..., celeba; registered: mine, ...`` for error messages."""
    regs = ", ".join(user.entries()) or "none (privlab data add)"
    return f"{', '.join(DATASETS)}; registered: {regs}"


def get_info(name: str) -> DatasetInfo:
    """A built-in or registered set's description; ValueError naming what exists otherwise
    (DataError when the registration file is broken)."""
    if name in DATASETS:
        return DATASETS[name]
    entry = user.get_entry(name)
    if entry is None:
        raise ValueError(f"data.name: got {name!r}; allowed: {allowed_names()}")
    return user.entry_info(entry)


def dataset_attributes(name: str) -> tuple[str, ...]:
    """The private attributes a data set declares (first = default)."""
    return get_info(name).attributes

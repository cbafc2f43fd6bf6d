"""What a bundle says about itself (``manifest.json``) and the names of its files.

Layout of the zip (``KEY`` a run's 64-hex cache key)::

    manifest.json                   format, kind, keys, runs, seeds, engine, packages, files
    config.yaml                     a run's or a sweep's validated config (kind first)
    result.json, arrays.npz         the run (or the sweep) itself
    comparison.yaml, comparison.json  a comparison: its spec, and its curves as read
    points/KEY/result.json, points/KEY/arrays.npz   every point of a sweep or a comparison
    figures/NAME.html, figures/NAME.png             every figure (plotly.js inline; PNG)
    NAME                            extras (a notebook, a report), stored like every file
"""

from __future__ import annotations

import hashlib
import platform
import re
from importlib.metadata import PackageNotFoundError, version
from typing import Any

#: what ``manifest.json`` names itself, and the layout version this code writes and reads
FORMAT = "privlab-bundle"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CONFIG = "config.yaml"
RESULT = "result.json"
ARRAYS = "arrays.npz"
SPEC = "comparison.yaml"
COMPARISON = "comparison.json"
POINTS = "points"
FIGURES = "figures"
#: the kinds of bundle
KINDS = ("run", "sweep", "comparison")
#: the packages whose versions shape the numbers (recorded, never enforced)
PACKAGES = ("torch", "numpy", "scipy", "scikit-learn", "opacus", "pydantic", "scikit-image",
            "umap-learn", "plotly")
#: an extra's or a figure's name: a plain file name (no folder, no leading dot)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def package_versions() -> dict[str, str | None]:
    """The installed version of each of :data:`PACKAGES` (None: not installed) and Python's."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def point_path(key: str, name: str) -> str:
    return f"{POINTS}/{key}/{name}"


def reserved(name: str) -> bool:
    """Whether ``name`` is one of the bundle's own files (an extra may not take it)."""
    return name in (MANIFEST, CONFIG, RESULT, ARRAYS, SPEC, COMPARISON) \
        or name.split("/")[0] in (POINTS, FIGURES)


def plain_name(name: Any) -> bool:
    """Whether ``name`` is a plain file name (an extra's or a figure's: no folder, no
    leading dot, at most 100 characters)."""
    return isinstance(name, str) and bool(_NAME.fullmatch(name))


def check_extra_name(name: Any) -> str:
    """An extra's file name, or a one-line BundleError naming it."""
    from cache.bundle.errors import BundleError

    if not plain_name(name) or reserved(name):
        raise BundleError(f"extras: got the name {name!r}; allowed: a plain file name (letters, "
                          "digits, '_', '-', '.'; at most 100 characters) that is not one of "
                          "the bundle's own files")
    return name


def figure_stem(name: str) -> str:
    """A figure's name as a file stem: lowercase letters, digits, '_' and '-'."""
    stem = re.sub(r"[^a-z0-9_-]+", "_", name.lower()).strip("_")
    return stem[:80] or "figure"

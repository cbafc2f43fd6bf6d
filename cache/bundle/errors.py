"""The one error of bundles: a one-line message naming the file or field at fault."""

from __future__ import annotations


class BundleError(ValueError):
    """A bundle cannot be written or is refused on import (nothing was imported)."""

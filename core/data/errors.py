"""Errors raised by the data layer."""

from __future__ import annotations


class DataError(ValueError):
    """A data set cannot be loaded: files missing, checksum mismatch, download impossible.

    The message always names the directory or file involved and how to fix it.
    """

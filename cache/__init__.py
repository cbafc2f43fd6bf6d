"""Result store: content-addressed runs, SQLite index + artifact files (see cache.store)."""

from cache.errors import IndexCorrupt, StoreBusy, StoreError, StoreIOError
from cache.index import RunRecord
from cache.store import ResultStore, default_store

__all__ = ["IndexCorrupt", "ResultStore", "RunRecord", "StoreBusy", "StoreError", "StoreIOError",
           "default_store"]

"""Result store: content-addressed runs, SQLite index + artifact files (see cache.store)."""

from cache.index import RunRecord
from cache.store import ResultStore, default_store

__all__ = ["ResultStore", "RunRecord", "default_store"]

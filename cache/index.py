"""The SQLite index of stored runs (``root/index.sqlite``, WAL mode): one row per run.

Connections are opened one per thread (and re-opened after a fork); writes run in short
``BEGIN IMMEDIATE`` transactions, and ``busy_timeout`` makes concurrent writers wait. Every
sqlite3 error leaves here classified (:func:`cache.errors.sqlite_error`): a full disk or a
read-only mount is a :class:`cache.errors.StoreIOError`, never mistaken for a damaged index;
only SQLite's own proof (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``, ``PRAGMA quick_check``) is an
:class:`cache.errors.IndexCorrupt`. A read-only store (a read-only mount) opens the index
read-only, so history can still be listed and shown.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cache.errors import IndexCorrupt, sqlite_error
from core.foundation.checks import check_int

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    key            TEXT PRIMARY KEY,
    kind           TEXT NOT NULL,
    created        TEXT NOT NULL,
    seconds        REAL,
    engine_version TEXT NOT NULL,
    config         TEXT NOT NULL,
    metrics        TEXT NOT NULL,
    sha_result     TEXT NOT NULL,
    sha_artifacts  TEXT NOT NULL,
    label          TEXT NOT NULL DEFAULT '',
    last_used      REAL,
    origin         TEXT
);
CREATE INDEX IF NOT EXISTS runs_kind_created ON runs(kind, created);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created);
"""
#: columns added after the first schema: (name, SQL type), added by ALTER TABLE on open
ADDED_COLUMNS = (("last_used", "REAL"), ("origin", "TEXT"))
BUSY_TIMEOUT_MS = 30_000
MIN_PREFIX = 6
_HEX = set("0123456789abcdef")


@dataclass
class RunRecord:
    """One index row, as the History page and ``privlab list`` show it."""

    key: str
    kind: str
    created: str
    seconds: float | None
    metrics: dict[str, float | None]
    config: dict[str, Any]
    label: str = ""
    engine_version: str = ""
    #: where an imported run came from (:mod:`cache.bundle`: bundle file name, date, original
    #: engine, read-only); None for a run computed here
    origin: dict[str, Any] | None = None


@dataclass
class IndexRow:
    key: str
    kind: str
    created: str
    seconds: float | None
    engine_version: str
    config: dict[str, Any]
    metrics: dict[str, float | None]
    sha_result: str
    sha_artifacts: str
    label: str = ""
    last_used: float | None = None  # unix time of the last hit; None: set to now by put()
    origin: dict[str, Any] | None = None  # an imported run's origin (RunRecord.origin)


def check_key_or_prefix(key: str) -> str:
    """A full key or a prefix of >= 6 lowercase hex characters; else a ValueError naming it."""
    if not isinstance(key, str):
        raise TypeError(f"key: got {type(key).__name__}; expected a hex string")
    k = key.strip().lower()
    if len(k) < MIN_PREFIX or len(k) > 64 or not set(k) <= _HEX:
        raise ValueError(
            f"key: got {key!r}; allowed: a run key or a unique prefix of {MIN_PREFIX} to 64 hex characters"
        )
    return k


def _origin(text: str | None) -> dict[str, Any] | None:
    """An index row's origin column read back (None: computed here, or unreadable)."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class RunIndex:
    """The ``runs`` table. ``init_lock``: a lock file held while switching to WAL and creating
    the schema (SQLite answers "database is locked" at once, without waiting, when two fresh
    processes switch the journal mode together); None if the caller already holds it.
    ``read_only``: open without writing anything (a read-only mount); writes then raise
    StoreIOError."""

    def __init__(self, path: Path, *, init_lock: Path | None = None,
                 read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._local = threading.local()
        if read_only:
            self._guard(self._check_schema, "open the index")
        elif init_lock is None:
            self._guard(self._initialise, "open the index")
        else:
            from cache.lock import key_lock

            with key_lock(init_lock):
                self._guard(self._initialise, "open the index")

    def _guard(self, fn, action: str, *args):
        """``fn(*args)`` with sqlite3 errors classified (StoreIOError, IndexCorrupt, ...)."""
        try:
            return fn(*args)
        except sqlite3.Error as exc:
            raise sqlite_error(exc, action, self.path) from None

    def _initialise(self) -> None:
        c = self.conn()
        if c.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            c.execute("PRAGMA journal_mode=WAL")  # persistent in the file
        c.executescript(SCHEMA)
        have = {r[1] for r in c.execute("PRAGMA table_info(runs)")}
        for name, typ in ADDED_COLUMNS:  # an index written before the column existed
            if name not in have:
                try:
                    c.execute(f"ALTER TABLE runs ADD COLUMN {name} {typ}")
                except sqlite3.OperationalError as exc:  # another process added it meanwhile
                    if "duplicate column" not in str(exc):
                        raise

    def _check_schema(self) -> None:
        have = {r[1] for r in self.conn().execute("PRAGMA table_info(runs)")}
        if not have:
            raise IndexCorrupt(f"result store: index {self.path} has no runs table",
                               "no runs table")

    def quick_check(self) -> str:
        """``"ok"`` or SQLite's first complaint (``PRAGMA quick_check``: page structure,
        record formats, index consistency; O(size), milliseconds for a lab's index)."""
        rows = self._guard(lambda: self.conn().execute("PRAGMA quick_check").fetchall(),
                           "check the index")
        first = str(rows[0][0]) if rows else "no answer"
        return "ok" if first == "ok" else first

    def count(self) -> int:
        return int(self._q("SELECT count(*) FROM runs", ())[0][0])

    def conn(self) -> sqlite3.Connection:
        """This thread's connection (a new one after ``fork``: sqlite handles must not cross)."""
        loc = self._local
        c = getattr(loc, "conn", None)
        if c is None or loc.pid != os.getpid():
            if self.read_only:
                uri = f"file:{quote(str(self.path))}?mode=ro"
                try:
                    c = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                        isolation_level=None)
                    c.execute("PRAGMA schema_version").fetchone()
                except sqlite3.OperationalError:  # WAL without a -shm it may create: nobody
                    c = sqlite3.connect(uri + "&immutable=1", uri=True,  # writes a ro mount
                                        timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            else:
                c = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000,
                                    isolation_level=None)
            c.row_factory = sqlite3.Row
            c.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if not self.read_only:
                c.execute("PRAGMA synchronous=NORMAL")
            loc.conn, loc.pid = c, os.getpid()
        return c

    def _q(self, sql: str, args: tuple[Any, ...] | list[Any]) -> list[sqlite3.Row]:
        """A read query's rows, errors classified (fetched here: a damaged page may only
        show while rows are read)."""
        try:
            return self.conn().execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise sqlite_error(exc, "read the index", self.path) from None

    def close(self) -> None:
        c = getattr(self._local, "conn", None)
        if c is not None and self._local.pid == os.getpid():
            c.close()
        self._local.conn = None

    # -- reads ------------------------------------------------------------------------------

    def checksums(self, key: str) -> tuple[str, str] | None:
        rows = self._q("SELECT sha_result, sha_artifacts FROM runs WHERE key = ?", (key,))
        return (rows[0][0], rows[0][1]) if rows else None

    def lookup(self, key: str) -> tuple[str, str, float | None] | None:
        """(sha_result, sha_artifacts, last_used) of ``key``; None if there is no row."""
        rows = self._q("SELECT sha_result, sha_artifacts, last_used FROM runs WHERE key = ?",
                       (key,))
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None

    def origin_text(self, key: str) -> str | None:
        """The raw origin of ``key``'s row (None: computed here, or no row)."""
        rows = self._q("SELECT origin FROM runs WHERE key = ?", (key,))
        return rows[0][0] if rows and rows[0][0] else None

    def usage_rows(self) -> list[tuple[str, str, str, float | None, str]]:
        """(key, kind, engine_version, last_used, created) of every run (for cache.gc)."""
        return [tuple(r) for r in self._q(
            "SELECT key, kind, engine_version, last_used, created FROM runs", ())]

    def resolve(self, key_or_prefix: str) -> str | None:
        """Full key for a key or unique prefix; None if absent; ValueError if ambiguous."""
        k = check_key_or_prefix(key_or_prefix)
        if len(k) == 64:
            rows = self._q("SELECT key FROM runs WHERE key = ?", (k,))
            return rows[0][0] if rows else None
        rows = self._q(
            "SELECT key FROM runs WHERE key >= ? AND key < ? ORDER BY key LIMIT 6",
            (k, k + "g"),
        )
        if len(rows) > 1:
            shown = ", ".join(r[0][:12] for r in rows[:5])
            raise ValueError(
                f"key: prefix {key_or_prefix!r} is ambiguous; it matches {shown}"
                f"{', ...' if len(rows) > 5 else ''}; give more characters"
            )
        return rows[0][0] if rows else None

    def records(self, kind: str | None = None, limit: int | None = None) -> list[RunRecord]:
        sql = ("SELECT key, kind, created, seconds, metrics, config, label, engine_version, "
               "origin FROM runs")
        args: list[Any] = []
        if kind is not None:
            sql += " WHERE kind = ?"
            args.append(kind)
        sql += " ORDER BY created DESC, rowid DESC"
        if limit is not None:
            check_int("limit", limit, 0, note="or None for all")
            sql += " LIMIT ?"
            args.append(limit)
        return [
            RunRecord(
                key=r["key"], kind=r["kind"], created=r["created"], seconds=r["seconds"],
                metrics=json.loads(r["metrics"]), config=json.loads(r["config"]),
                label=r["label"], engine_version=r["engine_version"],
                origin=_origin(r["origin"]),
            )
            for r in self._q(sql, args)
        ]

    def all_keys(self) -> list[str]:
        return [r[0] for r in self._q("SELECT key FROM runs", ())]

    # -- writes -----------------------------------------------------------------------------

    def _write(self, sql: str, args: tuple[Any, ...], *, needed: int | None = None) -> int:
        """One short transaction; a failure rolls back (nothing half-written) and is raised
        classified: a full disk is a StoreIOError naming the bytes needed, never corruption."""
        if self.read_only:
            import errno

            from cache.errors import io_error

            raise io_error(OSError(errno.EROFS, "read-only file system"), "write the index",
                           self.path)
        try:
            c = self.conn()
            c.execute("BEGIN IMMEDIATE")
            try:
                n = c.execute(sql, args).rowcount
                c.execute("COMMIT")
            except BaseException:
                try:
                    c.execute("ROLLBACK")
                except sqlite3.Error:  # no transaction left to roll back (SQLite did it)
                    pass
                raise
        except sqlite3.Error as exc:
            raise sqlite_error(exc, "write the index", self.path, needed=needed) from None
        return n

    def put(self, row: IndexRow) -> None:
        config_json = json.dumps(row.config, sort_keys=True)
        metrics_json = json.dumps(row.metrics, sort_keys=True)
        self._write(
            "INSERT OR REPLACE INTO runs (key, kind, created, seconds, engine_version, config, "
            "metrics, sha_result, sha_artifacts, label, last_used, origin) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.key, row.kind, row.created, row.seconds, row.engine_version,
                config_json, metrics_json, row.sha_result, row.sha_artifacts, row.label,
                time.time() if row.last_used is None else float(row.last_used),
                None if row.origin is None else json.dumps(row.origin, sort_keys=True),
            ),
            needed=len(config_json) + len(metrics_json) + 4096,  # the row and a WAL page
        )

    def delete(self, key: str) -> bool:
        return self._write("DELETE FROM runs WHERE key = ?", (key,)) > 0

    def set_label(self, key: str, label: str) -> bool:
        return self._write("UPDATE runs SET label = ? WHERE key = ?", (label, key)) > 0

    def checkpoint(self) -> None:
        """Fold the WAL into the database file and truncate it (after cache.gc removed rows)."""
        if self.read_only:
            return
        try:
            self.conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass

    def touch(self, key: str, when: float) -> None:
        """Record a hit: ``last_used = when``. One autocommit UPDATE (WAL, synchronous=NORMAL:
        no fsync); a busy or read-only index is ignored, a hit never fails for it."""
        if self.read_only:
            return
        try:
            self.conn().execute("UPDATE runs SET last_used = ? WHERE key = ?", (when, key))
        except sqlite3.Error:
            pass

"""What can go wrong in the result store, told apart (issue 21: a full disk keeps the history).

- :class:`StoreIOError`: the file system refused (full disk, read-only mount, permission,
  I/O error). Nothing stored is touched because of it: an I/O error is never evidence that an
  entry or the index is corrupt.
- :class:`IndexCorrupt`: SQLite itself proved the index damaged (``SQLITE_CORRUPT``,
  ``SQLITE_NOTADB`` or a failing ``PRAGMA quick_check``); the store rebuilds it from the entries
  on disk.
- :class:`StoreBusy`: another process held the index longer than the busy timeout.

``str()`` of each is one line; the CLI prints it and exits non-zero.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from pathlib import Path

#: errno values that mean "the disk (or quota) is full"
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
_WHY = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
        errno.EROFS: "read-only file system", errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted", errno.EIO: "input/output error"}


class StoreError(OSError):
    """A result-store failure with a one-line message (an OSError: the environment, not the
    caller's input, prevented the store from working; code that tolerates a file system
    problem around the store tolerates these too)."""


class StoreIOError(StoreError):
    """The file system refused a store operation. ``errno``, ``path``, ``needed`` (bytes the
    write needed, where known) and ``free`` (bytes free on that file system, where known)."""

    def __init__(self, message: str, *, errno_: int | None = None, path: str | None = None,
                 needed: int | None = None, free: int | None = None) -> None:
        super().__init__(message)
        self.errno, self.path, self.needed, self.free = errno_, path, needed, free


class IndexCorrupt(StoreError):
    """SQLite proved ``index.sqlite`` damaged; ``reason`` is SQLite's own words."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class StoreBusy(StoreError):
    """The index stayed locked by another process beyond the busy timeout."""


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n} B"  # pragma: no cover


def _free_bytes(path: str | Path) -> int | None:
    p = Path(path)
    for cand in (p, *p.parents):
        try:
            return shutil.disk_usage(cand).free
        except OSError:
            continue
    return None


def io_error(exc: OSError, action: str, path: str | Path | None = None, *,
             needed: int | None = None, root: str | Path | None = None,
             free: int | None = None) -> StoreIOError:
    """The :class:`StoreIOError` for ``exc`` raised while ``action`` (``"write run abc123"``);
    for a full disk it names the bytes needed and the bytes free. A StoreError passes through."""
    if isinstance(exc, StoreError):
        return exc  # type: ignore[return-value]
    code = exc.errno
    where = str(path or exc.filename or root or "")
    why = _WHY.get(code, exc.strerror or str(exc) or type(exc).__name__)
    text = f"result store: cannot {action}" + (f" ({where})" if where else "") + f": {why}"
    if code in FULL:
        if free is None and (root or where):
            free = _free_bytes(root or where)
        parts = []
        if needed is not None:
            parts.append(f"needs {_fmt_bytes(needed)}")
        if free is not None:
            parts.append(f"{_fmt_bytes(free)} free")
        if parts:
            text += f" ({', '.join(parts)})"
    text += "; nothing already stored was changed"
    return StoreIOError(text, errno_=code, path=where or None, needed=needed, free=free)


#: SQLite's primary result codes (``sqlite_errorname`` without extended suffixes)
_SQLITE_IO = {"SQLITE_FULL": errno.ENOSPC, "SQLITE_READONLY": errno.EROFS,
              "SQLITE_CANTOPEN": errno.EACCES, "SQLITE_IOERR": errno.EIO,
              "SQLITE_PERM": errno.EPERM, "SQLITE_AUTH": errno.EACCES}


def sqlite_error(exc: sqlite3.Error, action: str, path: str | Path, *,
                 needed: int | None = None) -> StoreError:
    """Classify an sqlite3 exception: corruption proven by SQLite -> :class:`IndexCorrupt`;
    busy -> :class:`StoreBusy`; anything the file system caused -> :class:`StoreIOError`."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    base = name.split("_", 2)
    primary = "_".join(base[:2]) if len(base) >= 2 else name
    msg = str(exc)
    if primary in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
        return IndexCorrupt(f"result store: index {path} is damaged ({msg}); it is rebuilt from "
                            "the stored runs on the next open (`privlab verify --repair`)", msg)
    if primary in ("SQLITE_BUSY", "SQLITE_LOCKED"):
        return StoreBusy(f"result store: cannot {action}: index {path} is locked by another "
                         "process; try again")
    code = _SQLITE_IO.get(primary)
    if code is None and ("disk is full" in msg or "disk I/O" in msg):
        code = errno.ENOSPC if "full" in msg else errno.EIO
    if code is None and "readonly" in msg:
        code = errno.EROFS
    if code == errno.EIO:  # SQLite reports a failed write as IOERR; the disk may be full
        free = _free_bytes(path)
        if free is not None and free < 64 * 1024:
            code = errno.ENOSPC
    if code == errno.EACCES and not os.access(Path(path).parent, os.W_OK):
        code = errno.EROFS if _is_read_only_fs(Path(path).parent) else errno.EACCES
    if code is None:
        return StoreError(f"result store: cannot {action} ({path}): {msg}")
    return io_error(OSError(code, os.strerror(code)), action, path, needed=needed)


def _is_read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def writable(path: str | Path) -> bool:
    """Whether new files can be created in directory ``path`` (false on a read-only mount)."""
    p = Path(path)
    return os.access(p, os.W_OK) and not _is_read_only_fs(p)

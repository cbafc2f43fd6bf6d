"""One stored run on disk: ``runs/<key[:2]>/<key>/{result.json, artifacts.npz, sha256.json}``.

Writes are atomic: the files go into a temp dir under ``root/tmp``, are fsynced, and the dir
is renamed into place (DESIGN: Cache key). ``sha256.json`` holds both files' checksums, so an
entry can be verified without the index (a rebuilt index trusts only entries that match it).
Reads verify both sha256 checksums recorded in the index and that the stored key matches; a
proven mismatch raises :class:`CorruptEntry`. A file system error (permission, I/O error, full
disk) raises :class:`cache.errors.StoreIOError` instead: it proves nothing about the entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cache.errors import io_error
from core.foundation.result import Result

RESULT_FILE = "result.json"
ARTIFACTS_FILE = "artifacts.npz"
#: the entry's own record of its files' sha256 (written with them, before the rename)
MANIFEST_FILE = "sha256.json"
#: an imported run's origin (cache.bundle), beside its files, so a rebuilt index keeps it
ORIGIN_FILE = "origin.json"


class CorruptEntry(Exception):
    """A stored entry is missing, partial or does not match its checksums; never served."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class EncodedResult:
    """The exact bytes written for one Result, with their checksums."""

    result_json: bytes
    artifacts_npz: bytes

    @property
    def sha_result(self) -> str:
        return sha256(self.result_json)

    @property
    def sha_artifacts(self) -> str:
        return sha256(self.artifacts_npz)

    def manifest(self) -> bytes:
        return json.dumps({RESULT_FILE: self.sha_result, ARTIFACTS_FILE: self.sha_artifacts},
                          sort_keys=True).encode()

    @property
    def size(self) -> int:
        return len(self.result_json) + len(self.artifacts_npz) + len(self.manifest())


def encode(result: Result) -> EncodedResult:
    """Serialise ``result`` to JSON + npz bytes; refuses arrays that would need pickle."""
    for name, arr in result.artifacts.items():
        if np.asarray(arr).dtype.hasobject:
            raise TypeError(
                f"artifacts[{name!r}]: got dtype object; allowed: numeric, bool or string arrays "
                "(the store never pickles)"
            )
    try:
        meta = result.to_json().encode()
    except (TypeError, ValueError) as exc:
        raise TypeError(f"result: not JSON-serialisable ({exc}); metrics/curves/info must be plain data") from None
    return EncodedResult(meta, result.artifacts_npz_bytes())


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(enc: EncodedResult, final_dir: Path, tmp_root: Path, key: str,
                 origin: bytes | None = None) -> None:
    """Write the files into ``tmp_root/<key>.<pid>.<rand>``, fsync, rename to ``final_dir``
    (``origin``: an imported run's :data:`ORIGIN_FILE`, written with them).

    The caller holds the key's lock; a stale ``final_dir`` (already judged corrupt) is removed
    first because a directory can only be renamed onto a missing path. An OSError (full disk,
    read-only mount) removes the temp dir and becomes a StoreIOError naming the bytes needed.
    """
    tmp = tmp_root / f"{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    try:
        tmp.mkdir(parents=True)
        _write_synced(tmp / RESULT_FILE, enc.result_json)
        _write_synced(tmp / ARTIFACTS_FILE, enc.artifacts_npz)
        _write_synced(tmp / MANIFEST_FILE, enc.manifest())
        if origin is not None:
            _write_synced(tmp / ORIGIN_FILE, origin)
        _fsync_dir(tmp)
        if final_dir.exists():
            remove_dir(final_dir, tmp_root)
        final_dir.parent.mkdir(parents=True, exist_ok=True)
        os.rename(tmp, final_dir)
        _fsync_dir(final_dir.parent)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise io_error(exc, f"write run {key[:12]}", needed=enc.size,
                       root=tmp_root.parent) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def remove_dir(path: Path, tmp_root: Path) -> None:
    """Remove an entry dir: rename it out of ``runs/`` first (atomic to readers), then delete."""
    trash = tmp_root / f"trash.{uuid.uuid4().hex}"
    try:
        os.rename(path, trash)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise io_error(exc, f"remove run {path.name[:12]}", path) from None
    shutil.rmtree(trash, ignore_errors=True)


def _read_file(path: Path, key: str) -> bytes:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
        # a file of the entry is missing: the entry is partial (proof enough)
        raise CorruptEntry(f"{key[:12]}: missing file ({exc.strerror}: {exc.filename})") from None
    except OSError as exc:  # permission, I/O error: says nothing about the entry
        raise io_error(exc, f"read run {key[:12]}", path) from None


def read_verified(entry_dir: Path, *, key: str, sha_result: str, sha_artifacts: str) -> Result:
    """Read and check one entry; raise :class:`CorruptEntry` naming what is wrong, or
    :class:`cache.errors.StoreIOError` when the file system refused the read."""
    meta_bytes = _read_file(entry_dir / RESULT_FILE, key)
    npz_bytes = _read_file(entry_dir / ARTIFACTS_FILE, key)
    if sha256(meta_bytes) != sha_result:
        raise CorruptEntry(f"{key[:12]}: {RESULT_FILE} checksum mismatch")
    if sha256(npz_bytes) != sha_artifacts:
        raise CorruptEntry(f"{key[:12]}: {ARTIFACTS_FILE} checksum mismatch")
    return _decode(meta_bytes, npz_bytes, key)


def _decode(meta_bytes: bytes, npz_bytes: bytes, key: str) -> Result:
    try:
        meta = json.loads(meta_bytes)
        result = Result.from_parts(meta, npz_bytes)
    except Exception as exc:  # noqa: BLE001 -- unreadable JSON/npz, missing fields, pickled arrays
        raise CorruptEntry(f"{key[:12]}: unreadable entry ({type(exc).__name__}: {exc})") from None
    if meta.get("key") != key:
        raise CorruptEntry(f"{key[:12]}: stored key {str(meta.get('key'))[:12]} does not match")
    if sorted(result.artifacts) != sorted(meta.get("artifact_names", [])):
        raise CorruptEntry(f"{key[:12]}: artifact names do not match {RESULT_FILE}")
    result.from_cache = True
    return result


def read_origin(entry_dir: Path) -> dict | None:
    """An imported entry's origin (:data:`ORIGIN_FILE`); None when it has none or it is
    unreadable (the origin is a note, never a reason to refuse the run)."""
    try:
        value = json.loads((entry_dir / ORIGIN_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read_self_verified(entry_dir: Path, key: str) -> tuple[Result, str, str, dict]:
    """Read an entry without an index row, checked against its own ``sha256.json``:
    ``(result, sha_result, sha_artifacts, meta)``. An entry without a manifest (written before
    it existed) is accepted when it decodes completely (the npz's zip CRCs still check the
    arrays). CorruptEntry on any mismatch; StoreIOError when the file system refused."""
    meta_bytes = _read_file(entry_dir / RESULT_FILE, key)
    npz_bytes = _read_file(entry_dir / ARTIFACTS_FILE, key)
    sha_r, sha_a = sha256(meta_bytes), sha256(npz_bytes)
    try:
        manifest_bytes = (entry_dir / MANIFEST_FILE).read_bytes()
    except FileNotFoundError:
        manifest_bytes = None
    except OSError as exc:
        raise io_error(exc, f"read run {key[:12]}", entry_dir / MANIFEST_FILE) from None
    want = parse_manifest(manifest_bytes) if manifest_bytes is not None else None
    # a manifest that is not two sha256 hex digests is itself damaged: it proves nothing about
    # the files, which are then judged as an entry without one (they must decode completely)
    if want is not None and want != (sha_r, sha_a):
        bad = RESULT_FILE if want[0] != sha_r else ARTIFACTS_FILE
        raise CorruptEntry(f"{key[:12]}: {bad} does not match {MANIFEST_FILE}")
    result = _decode(meta_bytes, npz_bytes, key)
    return result, sha_r, sha_a, json.loads(meta_bytes)


_HEX = frozenset("0123456789abcdef")


def parse_manifest(data: bytes) -> tuple[str, str] | None:
    """(sha of result.json, sha of artifacts.npz), or None when the manifest is damaged
    (not JSON, other keys, not 64 lowercase hex digits each)."""
    try:
        m = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(m, dict) or set(m) != {RESULT_FILE, ARTIFACTS_FILE}:
        return None
    shas = (m[RESULT_FILE], m[ARTIFACTS_FILE])
    if not all(isinstance(v, str) and len(v) == 64 and set(v) <= _HEX for v in shas):
        return None
    return shas  # type: ignore[return-value]


def rewrite_manifest(entry_dir: Path, sha_result: str, sha_artifacts: str) -> None:
    """Replace a damaged ``sha256.json`` atomically with the checksums the index verified."""
    data = json.dumps({RESULT_FILE: sha_result, ARTIFACTS_FILE: sha_artifacts},
                      sort_keys=True).encode()
    tmp = entry_dir / f".{MANIFEST_FILE}.{uuid.uuid4().hex[:8]}"
    try:
        _write_synced(tmp, data)
        os.replace(tmp, entry_dir / MANIFEST_FILE)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise io_error(exc, f"repair the manifest of run {entry_dir.name[:12]}", entry_dir) from None

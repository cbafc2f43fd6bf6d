"""One stored run on disk: ``runs/<key[:2]>/<key>/{result.json, artifacts.npz}``.

Writes are atomic: both files go into a temp dir under ``root/tmp``, are fsynced, and the dir
is renamed into place (DESIGN: Cache key). Reads verify both sha256 checksums recorded in the
index and that the stored key matches; anything else raises :class:`CorruptEntry`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.result import Result

RESULT_FILE = "result.json"
ARTIFACTS_FILE = "artifacts.npz"


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


def write_atomic(enc: EncodedResult, final_dir: Path, tmp_root: Path, key: str) -> None:
    """Write both files into ``tmp_root/<key>.<pid>.<rand>``, fsync, rename to ``final_dir``.

    The caller holds the key's lock; a stale ``final_dir`` (already judged corrupt) is removed
    first because a directory can only be renamed onto a missing path.
    """
    tmp = tmp_root / f"{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        _write_synced(tmp / RESULT_FILE, enc.result_json)
        _write_synced(tmp / ARTIFACTS_FILE, enc.artifacts_npz)
        _fsync_dir(tmp)
        if final_dir.exists():
            remove_dir(final_dir, tmp_root)
        final_dir.parent.mkdir(parents=True, exist_ok=True)
        os.rename(tmp, final_dir)
        _fsync_dir(final_dir.parent)
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
    shutil.rmtree(trash, ignore_errors=True)


def read_verified(entry_dir: Path, *, key: str, sha_result: str, sha_artifacts: str) -> Result:
    """Read and check one entry; raise :class:`CorruptEntry` naming what is wrong."""
    try:
        meta_bytes = (entry_dir / RESULT_FILE).read_bytes()
        npz_bytes = (entry_dir / ARTIFACTS_FILE).read_bytes()
    except OSError as exc:
        raise CorruptEntry(f"{key[:12]}: missing file ({exc.strerror}: {exc.filename})") from None
    if sha256(meta_bytes) != sha_result:
        raise CorruptEntry(f"{key[:12]}: {RESULT_FILE} checksum mismatch")
    if sha256(npz_bytes) != sha_artifacts:
        raise CorruptEntry(f"{key[:12]}: {ARTIFACTS_FILE} checksum mismatch")
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

"""On-disk stage store (``core.foundation.stages.StageStore``): ``root/stages/<stage>/<key[:2]>/<key>/``
holding ``meta.json``, ``arrays.npz``, ``weights.pt`` and ``sha256.json``.

Writes are atomic (a temp dir renamed into place; the first writer wins, a second identical
result is discarded). ``sha256.json`` records every file's checksum and is written into the
temp dir with them, so an entry and its checksums appear together or not at all. A load reads
each file once, verifies it against ``sha256.json`` and only then decodes it
(``np.load(allow_pickle=False)``, ``torch.load(weights_only=True)``); a mismatch, a missing
manifest or an undecodable file discards the entry, reports why (``on_corrupt``: the run adds
a note to its Result) and is a miss, so the stage is recomputed. A file system error while
reading is a miss that discards nothing; while writing it is a
:class:`cache.errors.StoreIOError` naming the bytes needed.

``meta.json`` also records the engine id that wrote the entry (``"__engine__"``, stripped on
load), so ``cache.gc`` can tell entries of an older engine; a hit touches ``meta.json``
(mtime/atime), so its mtime is the entry's last use (LRU, even on ``noatime`` mounts).
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cache.errors import io_error
from core.foundation.fingerprint import engine_id
from core.foundation.stages import StageOutput

META, ARRAYS, WEIGHTS = "meta.json", "arrays.npz", "weights.pt"
MANIFEST = "sha256.json"
#: key in meta.json naming the engine that wrote the entry (not part of StageOutput.meta)
ENGINE_KEY = "__engine__"
TMP = ".tmp"


class StageCorrupt(Exception):
    """A stage entry failed its checks (one line naming the file and why)."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_checked(d: Path) -> dict[str, bytes]:
    """The entry's files, each verified against ``sha256.json``: ``{file name: bytes}``.
    Raises StageCorrupt when the manifest is missing or unreadable, a listed file is missing
    or a checksum differs; other OSErrors (permission, I/O) pass through."""
    try:
        manifest = json.loads((d / MANIFEST).read_bytes())
        if not isinstance(manifest, dict) or META not in manifest:
            raise ValueError("no meta.json entry")
    except FileNotFoundError:
        raise StageCorrupt(f"{MANIFEST} missing") from None
    except (ValueError, UnicodeDecodeError):
        raise StageCorrupt(f"{MANIFEST} unreadable") from None
    files: dict[str, bytes] = {}
    for name, want in sorted(manifest.items()):
        if name not in (META, ARRAYS, WEIGHTS):
            raise StageCorrupt(f"{MANIFEST} lists an unknown file {name!r}")
        try:
            data = (d / name).read_bytes()
        except FileNotFoundError:
            raise StageCorrupt(f"{name} missing") from None
        if _sha(data) != want:
            raise StageCorrupt(f"{name} checksum mismatch")
        files[name] = data
    return files


def _decode(files: dict[str, bytes], map_location: str | None) -> StageOutput:
    meta = json.loads(files[META])
    meta.pop(ENGINE_KEY, None)
    arrays: dict[str, np.ndarray] = {}
    if ARRAYS in files:
        with np.load(io.BytesIO(files[ARRAYS]), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    weights = {}
    if WEIGHTS in files:
        import torch

        weights = torch.load(io.BytesIO(files[WEIGHTS]), weights_only=True,
                             map_location=map_location or "cpu")
    return StageOutput(arrays=arrays, meta=meta, weights=weights)


class DirStageStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if not self.root.is_dir():
                raise io_error(exc, "create the stage cache", self.root) from None

    def _dir(self, stage: str, key: str) -> Path:
        return self.root / stage / key[:2] / key

    def discard(self, d: Path) -> None:
        """Remove an entry atomically for readers (renamed aside, then deleted)."""
        trash = self.root / TMP / f"trash.{uuid.uuid4().hex}"
        try:
            trash.parent.mkdir(parents=True, exist_ok=True)
            os.rename(d, trash)
        except FileNotFoundError:
            return
        except OSError:  # read-only: leave it; it stays a miss until verify --repair
            return
        shutil.rmtree(trash, ignore_errors=True)

    def check(self, stage: str, key: str) -> str | None:
        """None if the entry verifies (or is absent), else why it does not (for verify)."""
        d = self._dir(stage, key)
        if not d.exists():
            return None
        try:
            _decode(read_checked(d), "cpu")
        except StageCorrupt as exc:
            return str(exc)
        except OSError as exc:
            return f"unreadable ({exc.strerror or exc})"
        except Exception as exc:  # noqa: BLE001 - checksums fine but not decodable
            return f"undecodable ({type(exc).__name__})"
        return None

    def load(self, stage: str, key: str, *, map_location: str | None = None,
             on_corrupt: Callable[[str], None] | None = None) -> StageOutput | None:
        d = self._dir(stage, key)
        if not (d / META).exists():
            return None
        try:
            out = _decode(read_checked(d), map_location)
        except OSError:  # permission / I/O error: a miss that proves nothing; keep the entry
            return None
        except Exception as exc:  # noqa: BLE001 - StageCorrupt, or verified bytes that do not decode
            why = str(exc) if isinstance(exc, StageCorrupt) else f"undecodable ({type(exc).__name__})"
            self.discard(d)
            if on_corrupt is not None:
                on_corrupt(f"stage {stage} {key[:12]}: {why}; discarded and recomputed")
            return None
        try:
            os.utime(d / META)  # last use, for cache.gc's LRU
        except OSError:
            pass
        return out

    def save(self, stage: str, key: str, out: StageOutput) -> None:
        final = self._dir(stage, key)
        if final.exists():
            return
        tmp = self.root / TMP / f"{key}.{uuid.uuid4().hex}"
        files: dict[str, bytes] = {}
        try:
            buf = io.BytesIO()
            np.savez(buf, **{k: np.asarray(v) for k, v in out.arrays.items()})
            files[ARRAYS] = buf.getvalue()
            if out.weights:
                import torch

                cpu = {n: {k: v.detach().cpu() if hasattr(v, "detach") else v for k, v in sd.items()}
                       for n, sd in out.weights.items()}
                wbuf = io.BytesIO()
                torch.save(cpu, wbuf)
                files[WEIGHTS] = wbuf.getvalue()
            files[META] = json.dumps({**out.meta, ENGINE_KEY: engine_id()}, sort_keys=True).encode()
            manifest = json.dumps({n: _sha(b) for n, b in files.items()}, sort_keys=True).encode()
            tmp.mkdir(parents=True)
            for name, data in files.items():
                (tmp / name).write_bytes(data)
            (tmp / MANIFEST).write_bytes(manifest)  # with them, inside the temp dir
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(tmp, final)
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                # another process stored it first
        except OSError as exc:
            needed = sum(len(b) for b in files.values()) or None
            raise io_error(exc, f"write stage {stage} {key[:12]}", needed=needed,
                           root=self.root) from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def entries(self) -> list[tuple[str, str]]:
        """(stage, key) of every entry on disk."""
        out = []
        if not self.root.is_dir():
            return out
        for stage in sorted(p for p in self.root.iterdir()
                            if p.is_dir() and not p.name.startswith(".")):
            for d in sorted(stage.glob("??/*")):
                if d.is_dir():
                    out.append((stage.name, d.name))
        return out

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())

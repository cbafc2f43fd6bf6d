"""The ``target`` block of a membership config: a model trained elsewhere, audited in place of
the target privlab would train (``privlab audit``; :mod:`core.runs.trained_target`).

The block names the files and carries their sha256 content hashes (:func:`with_hashes` fills
them in from the files; ``privlab audit`` does), so the cache key and every stage key change
with the files' contents, and a run refuses files whose contents changed since the config was
made. Validation never reads a file: a stored or imported run stays readable where the files
are not, and a config from elsewhere (a bundle) cannot make privlab read or hash a local file;
the run reads and re-hashes them.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from core.config.base import Block

#: the largest file hashed (the run bounds a weights file by its architecture)
MAX_HASHED = 4 << 30
SKOPS_SUFFIX = ".skops"
#: the files a target names, each with its ``<file>_sha256``
FILES = ("weights", "members", "canaries")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def sha256_file(path: str | Path, what: str, cap: int = MAX_HASHED) -> str:
    """sha256 of a regular file of at most ``cap`` bytes, streamed in 1 MiB chunks; one line
    naming ``what`` and the file otherwise."""
    p = Path(path)
    try:
        st = os.stat(p)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise ValueError(f"{what}: {p}: cannot read ({getattr(exc, 'strerror', None) or exc})"
                         ) from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{what}: {p} is not a regular file")
    if st.st_size > cap:
        raise ValueError(f"{what}: {p} has {st.st_size:,} bytes; at most {cap:,}")
    h = hashlib.sha256()
    try:
        with open(p, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError as exc:
        raise ValueError(f"{what}: {p}: cannot read ({exc.strerror or exc})") from None
    return h.hexdigest()


class TrainedTarget(Block):
    """A model trained elsewhere (weights, the rows it trained on, optional canaries)."""

    weights: str = Field(description="the weights file: safetensors, a PyTorch state dict "
                                     "(read with weights_only=True) or a skops file (.skops)")
    framework: Literal["torch", "sklearn"] = Field(
        "torch", description="torch (a network of model.arch) or sklearn (a skops estimator); "
                             "from the weights file's suffix")
    weights_sha256: str | None = Field(None, description="sha256 of the weights file "
                                                         "(with_hashes, privlab audit)")
    members: str | None = Field(None, description="a file of the member row indices "
                                                  "(.npy, .json, .txt, .csv)")
    members_column: str | None = Field(
        None, description="or: an ignored 0/1 column of the registered CSV data set")
    members_sha256: str | None = Field(None, description="sha256 of the members file")
    canaries: str | None = Field(
        None, description="optional CSV index,label,included: canary records the training "
                          "included at random (one-run audit of this model)")
    canaries_sha256: str | None = Field(None, description="sha256 of the canaries file")

    @model_validator(mode="before")
    @classmethod
    def _fill(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        w = out.get("weights")
        if isinstance(w, str) and "framework" not in out:
            out["framework"] = "sklearn" if w.lower().endswith(SKOPS_SUFFIX) else "torch"
        return out

    @model_validator(mode="after")
    def _check(self) -> TrainedTarget:
        if (self.members is None) == (self.members_column is None):
            raise ValueError("members: give exactly one of members (a file of row indices) "
                             "and members_column (a column of the registered data set)")
        for f in FILES:
            if getattr(self, f) is not None and not _SHA256.fullmatch(
                    str(getattr(self, f"{f}_sha256"))):
                raise ValueError(f"{f}_sha256: got {getattr(self, f'{f}_sha256')!r}; the "
                                 f"sha256 of the {f} file, 64 hex digits (privlab audit fills "
                                 "it in; or sha256sum FILE)")
        return self


def with_hashes(target: dict[str, Any]) -> dict[str, Any]:
    """``target`` with the sha256 of each file it names filled in where missing."""
    out = dict(target)
    for f in FILES:
        v = out.get(f)
        if isinstance(v, str) and out.get(f"{f}_sha256") is None:
            out[f"{f}_sha256"] = sha256_file(v, f)
    return out


#: the training recipe's fields a target may state (what the attacker is assumed to know)
RECIPE_FIELDS = ("epochs", "optimizer", "lr", "batch_size")

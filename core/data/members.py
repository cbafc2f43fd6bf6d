"""Which rows of a data set a model trained elsewhere was trained on (its members).

Given as a file of row indices into the data set as privlab loads it (``privlab datasets``
names the sets; row ``i`` is the i-th image / table row): a ``.npy`` integer array (read with
``allow_pickle=False``), a ``.json`` list of integers, or text with one integer per line or
comma-separated (``.txt``, ``.csv``; a header line that is not a number is skipped). Or given
as a 0/1 column of a registered CSV set (:func:`core.data.user.column`).

Every index must be an integer in [0, n) and appear once; at least :data:`MIN_MEMBERS`
members, and at least as many rows left outside them (the non-members they are scored
against, and the rows utility is measured on). The file is bounded (:data:`MAX_BYTES`) and
hashed; each refusal is one line naming the file and the check.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np

from core.data.errors import DataError

MIN_MEMBERS = 20
#: at least this many non-member rows (the pool's non-members and the utility rows)
MIN_OUTSIDE = 40
MAX_BYTES = 64 << 20


def _read(path: Path) -> tuple[bytes, str]:
    try:
        regular = path.is_file()
        size = path.stat().st_size if regular else 0
        data = path.read_bytes()[: MAX_BYTES + 1] if regular and size <= MAX_BYTES else b""
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise DataError(f"members {path}: cannot read "
                        f"({getattr(exc, 'strerror', None) or exc})") from None
    if not regular:
        raise DataError(f"members {path}: not a regular file")
    if size > MAX_BYTES or len(data) > MAX_BYTES:
        raise DataError(f"members {path}: size: {max(size, len(data)):,} bytes; at most "
                        f"{MAX_BYTES:,}")
    return data, hashlib.sha256(data).hexdigest()


def _parse(data: bytes, path: Path) -> np.ndarray:
    if path.suffix == ".npy":
        try:
            a = np.load(io.BytesIO(data), allow_pickle=False)
        except ValueError as exc:
            raise DataError(f"members {path}: npy: unreadable ({' '.join(str(exc).split())[:80]})"
                            ) from None
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise DataError(f"members {path}: npy: got dtype {a.dtype} shape {a.shape}; "
                            "expected a 1-D integer array of row indices")
        return a.astype(np.int64)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"members {path}: text: not UTF-8") from None
    if path.suffix == ".json":
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise DataError(f"members {path}: json: {exc}") from None
        items = obj if isinstance(obj, list) else None
    else:
        items = [t.strip() for line in text.splitlines() for t in line.split(",") if t.strip()]
        if items and not items[0].lstrip("-").isdigit():
            items = items[1:]  # a header
    if items is None:
        raise DataError(f"members {path}: json: expected a list of row indices")
    out = []
    for i, t in enumerate(items):
        if isinstance(t, bool) or not (isinstance(t, int) or (isinstance(t, str) and
                                                              t.lstrip("-").isdigit())):
            raise DataError(f"members {path}: index: item {i + 1} is {str(t)[:20]!r}; expected "
                            "an integer row index")
        out.append(int(t))
    return np.asarray(out, dtype=np.int64)


def check_members(idx: np.ndarray, n: int, where: str, data: str) -> np.ndarray:
    """Sorted ``idx`` once each is a row of a data set of ``n`` rows, held once, with enough
    members and non-members."""
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = int(idx[(idx < 0) | (idx >= n)][0])
        raise DataError(f"members {where}: range: row {bad} is outside data {data!r} "
                        f"(rows 0..{n - 1})")
    uniq, counts = np.unique(idx, return_counts=True)
    if (counts > 1).any():
        raise DataError(f"members {where}: duplicates: row {int(uniq[counts > 1][0])} is "
                        f"listed {int(counts.max())} times; each member once")
    if len(uniq) < MIN_MEMBERS:
        raise DataError(f"members {where}: count: got {len(uniq)}; at least {MIN_MEMBERS}")
    if n - len(uniq) < MIN_OUTSIDE:
        raise DataError(f"members {where}: count: {len(uniq)} of {n} rows; at least "
                        f"{MIN_OUTSIDE} rows must stay outside (the non-members)")
    return uniq


def read_members(path: str | Path) -> tuple[np.ndarray, str]:
    """The row indices in ``path`` (unchecked against a data set) and the file's sha256."""
    p = Path(path)
    data, digest = _read(p)
    return _parse(data, p), digest


def members_from_flags(flags: np.ndarray, where: str) -> np.ndarray:
    """The rows whose flag is 1 in a 0/1 (or true/false) column."""
    f = np.asarray(flags)
    if f.dtype.kind == "b":
        return np.flatnonzero(f)
    vals = set(np.unique(f.astype(str)).tolist())
    if not vals <= {"0", "1", "0.0", "1.0", "true", "false", "True", "False"}:
        raise DataError(f"members {where}: column: values {sorted(vals)[:4]}; expected 0/1")
    return np.flatnonzero(np.isin(f.astype(str), ["1", "1.0", "true", "True"]))

"""Cell-by-cell checks of a user's CSV table (the rules of :mod:`core.data.user`).

Every value a run will read is checked here at registration (and again at load), so that a
bad cell is refused with one line naming the file, the column and the row, or imputed with a
note that says how many cells and where the first one is; nothing non-finite or out of range
reaches the standardisation or a model. Rows are counted as a spreadsheet user reads them
below the header: ``row 1`` is the first data row (blank lines are not counted).

=============================  ==============================================================
class                          rule
=============================  ==============================================================
duplicate / empty header       refused (pandas would rename ``a`` to ``a.1`` silently)
ragged row                     a row with more or fewer fields than the header: refused
missing cell                   ``""``, ``?``, ``NA``, ``N/A``, ``#N/A``, ``NaN``, ``null``,
                               ``None`` (any case): in the task or a private column the row
                               is dropped; in a numeric feature the column median is imputed;
                               in a categorical feature it is the category ``?``; counted
non-finite number              ``inf``, ``Infinity``, ``1e999`` in a numeric column: refused
huge magnitude                 ``|x| >`` :data:`MAX_MAGNITUDE` in a numeric column: refused
non-number in numeric column   a column whose present cells are mostly numbers holding a
                               cell that is not one: refused (a typo, not a category)
constant feature               one value in every row (or empty everywhere): left out, noted
rare label value               a task or private value held by fewer than
                               :data:`MIN_CLASS_ROWS` rows: refused (some split would never
                               see it)
=============================  ==============================================================
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.data.errors import DataError

#: missing-value tokens, compared after trimming and lower-casing
MISSING = frozenset({"", "?", "na", "n/a", "#n/a", "nan", "-nan", "null", "none"})
#: the largest accepted magnitude of a numeric cell: integers up to 2**53 (about 9e15) are
#: exact in float64, and a larger value is almost always an id, a timestamp or a unit error
MAX_MAGNITUDE = 1e15
#: rows a task or private value needs: with the default 20 % test and 20 % aux splits a
#: stratified split then gives every split at least one
MIN_CLASS_ROWS = 5
#: a column whose present cells are numbers in more than this share is a numeric column
NUMERIC_SHARE = 0.5
OTHER_SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}


def cell_error(path: Path, col: str, row: int, value: Any, allowed: str) -> DataError:
    """``file F, column 'c', row r: got 'v'; allowed: ...`` (one line; ``row`` is 1-based)."""
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "...'"
    return DataError(f"file {path}, column {col!r}, row {row}: got {shown}; allowed: {allowed}")


def missing_mask(s) -> np.ndarray:
    """Bool array: which cells of a string column are missing (:data:`MISSING`, any case)."""
    return s.str.lower().isin(MISSING).to_numpy()


def _first(mask: np.ndarray) -> int:
    return int(np.argmax(mask))


def count(k: int, word: str) -> str:
    """``1 empty cell``, ``2 empty cells``."""
    return f"{k:,} {word}{'' if k == 1 else 's'}"


# ---------------------------------------------------------------------------------------------
# the table's shape: header, separator, ragged rows


def header_names(source: str | Path, encoding: str) -> list[str]:
    """The header record (a file path or the text itself), as :mod:`csv` reads it."""
    if isinstance(source, Path):
        with open(source, newline="", encoding=encoding, errors="replace") as fh:
            return next(csv.reader(fh, skipinitialspace=True), [])
    return next(csv.reader(io.StringIO(source), skipinitialspace=True), [])


def check_header(names: Sequence[str], path: Path) -> None:
    """Column names: non-empty and unique after trimming."""
    seen: dict[str, int] = {}
    for i, raw in enumerate(names, 1):
        name = raw.strip()
        if not name:
            trailing = " (a comma at the end of every line? remove it)" if i == len(names) else ""
            raise DataError(f"file {path}, header: column {i} has no name; every column needs "
                            f"a unique name{trailing}")
        if name in seen:
            raise DataError(f"file {path}, header: column {name!r} appears twice (columns "
                            f"{seen[name]} and {i}); column names must be unique")
        seen[name] = i


def separator_hint(header: str) -> str:
    """`` (its header is separated by semicolons; ...)`` when a one-column header holds another
    common separator, else ``""``."""
    for sep, word in OTHER_SEPARATORS.items():
        if sep in header:
            return (f"; its header is separated by {word}, privlab reads commas (save it as "
                    "comma-separated CSV)")
    return ""


def find_ragged(source: str | Path, encoding: str, ncols: int) -> tuple[int, int, int] | None:
    """The first data row whose field count differs from the header's: ``(row, fields,
    count of such rows)``, or None. One :mod:`csv` pass; called only when pandas hints at one
    (a parse error, or empty cells in the last column that may be missing fields)."""
    if isinstance(source, Path):
        with open(source, newline="", encoding=encoding, errors="replace") as fh:
            return _ragged(fh, ncols)
    return _ragged(io.StringIO(source), ncols)


def _ragged(fh: Any, ncols: int) -> tuple[int, int, int] | None:
    first, count = None, 0
    reader = csv.reader(fh, skipinitialspace=True)
    next(reader, None)
    row = 0
    for rec in reader:
        if not rec or (len(rec) == 1 and not rec[0].strip()):
            continue  # a blank line: pandas skips it too
        row += 1
        if len(rec) != ncols:
            count += 1
            if first is None:
                first = (row, len(rec))
    return None if first is None else (first[0], first[1], count)


def ragged_error(path: Path, found: tuple[int, int, int], ncols: int) -> DataError:
    row, fields, count = found
    more = f" ({count:,} such rows)" if count > 1 else ""
    return DataError(f"file {path}, row {row}: {fields} fields, the header has {ncols}{more}; "
                     "every row needs one field per column (quote a value that holds a comma)")


# ---------------------------------------------------------------------------------------------
# encoding


def first_non_utf8(df) -> tuple[str, int] | None:
    """``(column, row)`` of the first cell whose Latin-1 text is not valid UTF-8 (the cell that
    made the file fall back to Latin-1), or None when it is in the header."""
    best: tuple[str, int] | None = None
    for col in df.columns:
        s = df[col]
        cand = np.flatnonzero(s.str.contains(r"[\x80-\xff]", regex=True).to_numpy())
        for i in cand:
            try:
                s.iat[i].encode("latin-1").decode("utf-8")
            except UnicodeError:
                if best is None or i + 1 < best[1]:
                    best = (str(col), int(i) + 1)
                break
    return best


# ---------------------------------------------------------------------------------------------
# label columns


def check_label_counts(codes: np.ndarray, values: Sequence[str], role: str, col: str,
                       path: Path, rows: np.ndarray) -> None:
    """Every value of a task / private column held by at least :data:`MIN_CLASS_ROWS` rows
    (``rows``: the 1-based file row of each entry of ``codes``)."""
    counts = np.bincount(codes, minlength=len(values))
    rare = np.flatnonzero(counts < MIN_CLASS_ROWS)
    if len(rare):
        k = int(rare[np.argmin(counts[rare])])
        row = int(rows[_first(codes == k)])
        more = f" ({len(rare)} values this rare)" if len(rare) > 1 else ""
        raise DataError(f"file {path}, column {col!r}, row {row}: {role} value {values[k]!r} "
                        f"is held by {counts[k]} row{'s' if counts[k] != 1 else ''}{more}; "
                        f"allowed: at least {MIN_CLASS_ROWS} rows per value (merge it with "
                        "another value or drop those rows)")


# ---------------------------------------------------------------------------------------------
# feature columns


def _parsed(s) -> tuple[np.ndarray, np.ndarray]:
    """(missing mask, float64 value or NaN) of every cell of a string column, parsing each
    distinct string once (a categorical column has few; pandas' parse of every cell of one
    was most of the checks' time)."""
    import pandas as pd

    codes, uniq = pd.factorize(s)
    u = pd.Series(uniq)
    u_miss = missing_mask(u)
    u_val = pd.to_numeric(u, errors="coerce").to_numpy(dtype=np.float64, copy=True)
    u_val[u_miss] = np.nan
    return u_miss[codes], u_val[codes]


def split_features(df, feats: Iterable[str], path: Path, rows: np.ndarray
                   ) -> tuple[list[str], list[str], list[str]]:
    """Check every feature cell and normalise missing cells to ``""`` in place.

    Returns (numeric columns, constant columns left out, notes). Refuses, naming the file,
    column and row: a non-finite number, a magnitude above :data:`MAX_MAGNITUDE`, a non-number
    in a column whose present cells are mostly numbers. ``rows``: the 1-based file row of each
    row of ``df``."""
    numeric: list[str] = []
    constant: list[str] = []
    notes: list[str] = []
    for c in feats:
        s = df[c]
        miss, v = _parsed(s)
        present = ~miss
        isnum = present & ~np.isnan(v)
        n_present, n_num = int(present.sum()), int(isnum.sum())
        if n_present and n_num > NUMERIC_SHARE * n_present:
            bad = present & ~isnum
            if bad.any():
                i = _first(bad)
                raise cell_error(path, c, int(rows[i]), s.iat[i],
                                 f"a number (the column's other {n_num:,} present cells are "
                                 "numbers), or an empty cell (imputed with the median); or "
                                 f"leave the column out with --ignore {c}")
            inf = isnum & ~np.isfinite(v)
            if inf.any():
                i = _first(inf)
                raise cell_error(path, c, int(rows[i]), s.iat[i],
                                 f"a finite number with |value| <= {MAX_MAGNITUDE:g}, or an "
                                 "empty cell (imputed with the median)")
            big = isnum & (np.abs(np.where(isnum, v, 0.0)) > MAX_MAGNITUDE)
            if big.any():
                i = _first(big)
                raise cell_error(path, c, int(rows[i]), s.iat[i],
                                 f"|value| <= {MAX_MAGNITUDE:g} (rescale the column, or leave "
                                 f"it out with --ignore {c})")
            vals = v[isnum]
            if vals.min() == vals.max():  # the median fills the rest: constant
                constant.append(c)
                continue
            if miss.any():
                df[c] = s.mask(miss, "")
                notes.append(f"column {c!r}: {count(int(miss.sum()), 'empty cell')} (first: row "
                             f"{int(rows[_first(miss)])}) imputed with the median "
                             f"{float(np.median(vals)):g}")
            numeric.append(c)
            continue
        if miss.any():
            df[c] = s.mask(miss, "?")
            if n_present:
                notes.append(f"column {c!r}: {count(int(miss.sum()), 'empty cell')} (first: row "
                             f"{int(rows[_first(miss)])}) kept as the category '?'")
        if df[c].nunique() <= 1:
            constant.append(c)
    if constant:
        notes.append(f"column{'s' if len(constant) > 1 else ''} "
                     f"{', '.join(map(repr, constant))}: one value in every row (or empty "
                     "everywhere); left out of the features")
    return numeric, constant, notes

"""Preprocessing shared by tabular loaders (Adult, user CSVs): string columns -> label codes
and a feature frame of float and ``category`` columns. The one-hot encoding and the
standardisation with train-split statistics happen later, in
:func:`core.data.splits.encode_tabular` (every tabular set goes through it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def sort_values(values: Iterable[str]) -> list[str]:
    """Distinct values in code order: numerically when every value is a number ("2" < "10"),
    else alphabetically (Adult's and TAPPFL's label encoding)."""
    vals = sorted(set(values))
    try:
        return sorted(vals, key=float)
    except ValueError:
        return vals


def label_codes(s, categories: Sequence[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """int64 codes of a string column and the value names in code order.

    ``categories`` fixes the value list (values outside it get code -1: the caller reports
    them); None = the column's own values, ordered by :func:`sort_values`."""
    import pandas as pd

    cats = list(categories) if categories is not None else sort_values(s)
    codes = pd.Categorical(s, categories=cats).codes.astype(np.int64)
    return codes, cats


def is_numeric(s, missing: Iterable[str] = ()) -> bool:
    """Whether every cell of a string column that is not in ``missing`` parses as a number
    (and at least one does)."""
    import pandas as pd

    present = s[~s.isin(list(missing))]
    if len(present) == 0:
        return False
    return not pd.to_numeric(present, errors="coerce").isna().any()


def feature_frame(df, *, numeric: Iterable[str], drop: Iterable[str] = (),
                  missing: Iterable[str] = ()):
    """The feature DataFrame of a table of strings, in column order, without ``drop``:
    ``numeric`` columns as float64, every other column as a ``category`` column whose
    categories are its sorted values (one-hot encoded later).

    Cells of a numeric column that are in ``missing`` (e.g. ``""``) are filled with the
    column's median; with no ``missing`` values given every numeric cell must parse."""
    import pandas as pd

    numeric, drop, missing = set(numeric), set(drop), list(missing)
    feats = {}
    for col in df.columns:
        if col in drop:
            continue
        if col in numeric:
            s = df[col]
            if missing:
                v = pd.to_numeric(s.where(~s.isin(missing)), errors="coerce").astype(np.float64)
                feats[col] = v.fillna(v.median())
            else:
                feats[col] = pd.to_numeric(s).astype(np.float64)
        else:
            feats[col] = pd.Categorical(df[col], categories=sorted(df[col].unique()))
    return pd.DataFrame(feats)

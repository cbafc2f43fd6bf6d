"""UCI Adult (Census Income), read from local files, checksum-verified, downloaded when online.

Files ``adult.data`` (32,561 rows) and ``adult.test`` (16,281 rows; a junk first line
``|1x3 Cross validator`` and labels ending in ``.``) are looked up in, in order: the config's
``data_dir`` (or ``data_dir/adult``), ``$PRIVLAB_DATA_DIR/adult`` or ``$PRIVLAB_DATA_DIR``,
and the user data dir ``.../privlab/adult``. Missing files are fetched from the UCI archive
into the first of those directories; files with the wrong sha256 are rejected.

Task: income > 50K. Private attributes (TAPPFL B10): ``sex``, ``marital_status`` (7 values)
and ``race``; all three columns are removed from the features, so a representation must learn
them, if at all, from the other columns. Missing values (``?``, in workclass, occupation and
native_country) are kept as their own category ``?``; no row is dropped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from core.data import files, tabular
from core.data.errors import DataError
from core.data.raw import RawData

URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
SHA256 = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}
COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
    "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week",
    "native_country", "income",
]
NUMERIC = ["age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
# Value lists in code order (alphabetical, as TAPPFL's label encoding: 0 Divorced ... 6 Widowed).
PRIVATE_VALUES = {
    "sex": ["Female", "Male"],
    "marital_status": [
        "Divorced", "Married-AF-spouse", "Married-civ-spouse", "Married-spouse-absent",
        "Never-married", "Separated", "Widowed",
    ],
    "race": ["Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White"],
}
LABEL_NAMES = ["<=50K", ">50K"]


def _has_files(d: Path) -> bool:
    return all((d / f).is_file() for f in SHA256)


def find_dir(data_dir: str | None) -> Path:
    """The directory holding both files, else the one a download should go to."""
    cands = files.data_root_candidates("adult", data_dir)
    for d in cands:
        if _has_files(d):
            return d
    return cands[0]


def ensure_files(d: Path) -> dict[str, Path]:
    """Both files in ``d``, downloading missing ones; every file's sha256 is checked."""
    paths = {f: d / f for f in SHA256}
    missing = [f for f, p in paths.items() if not p.is_file()]
    if missing:
        try:
            for f in missing:
                files.download_file(URL + f, paths[f], timeout=10.0)
        except Exception as exc:  # noqa: BLE001 - any failure means "offline": say how to fix
            raise DataError(
                f"adult: missing {', '.join(missing)} in directory {d} and the download from "
                f"{URL} failed ({type(exc).__name__}: {exc}). Put adult.data and adult.test in "
                f"{d}, or point data.data_dir (config) or ${files.ENV_DATA_DIR} at a directory "
                "holding them."
            ) from None
    for f, p in paths.items():
        actual = files.sha256_file(p)
        if actual != SHA256[f]:
            raise DataError(
                f"adult: checksum mismatch for {p}: expected sha256 {SHA256[f]}, got {actual}. "
                "The file is corrupt or a different version; replace it with the UCI original."
            )
    return paths


def read_table(paths: dict[str, Path]):
    """Both files as one DataFrame (adult.data rows first) and the bool mask of adult.test rows."""
    import pandas as pd

    kw = {"header": None, "names": COLUMNS, "skipinitialspace": True, "dtype": str, "na_filter": False}
    train = pd.read_csv(paths["adult.data"], **kw)
    test = pd.read_csv(paths["adult.test"], skiprows=1, **kw)  # line 1: '|1x3 Cross validator'
    is_test = np.r_[np.zeros(len(train), dtype=bool), np.ones(len(test), dtype=bool)]
    df = pd.concat([train, test], ignore_index=True)
    keep = (df["income"] != "").to_numpy()  # stray short lines, if any
    df, is_test = df[keep].reset_index(drop=True), is_test[keep]
    df = df.apply(lambda s: s.str.strip())
    df["income"] = df["income"].str.rstrip(".")
    return df, is_test


def load_adult(spec, seed: int = 0) -> RawData:
    """Adult as RawData; ``fixed_test`` marks the adult.test rows (``test_fraction`` is ignored:
    the test split is exactly adult.test, and ``aux_fraction`` splits adult.data into train and
    aux)."""
    d = find_dir(getattr(spec, "data_dir", None))
    df, is_test = read_table(ensure_files(d))
    labels = df["income"].to_numpy()
    bad = set(np.unique(labels)) - set(LABEL_NAMES)
    if bad:
        raise DataError(f"adult: unexpected income labels {sorted(bad)} in {d}")
    y = (labels == ">50K").astype(np.int64)
    attrs, values = {}, {}
    for col, vals in PRIVATE_VALUES.items():
        codes, values[col] = tabular.label_codes(df[col], vals)
        if (codes < 0).any():
            odd = sorted(set(df[col][codes < 0]))
            raise DataError(f"adult: column {col} has unexpected values {odd} in {d}")
        attrs[col] = codes
    X = tabular.feature_frame(df, numeric=NUMERIC, drop=["income", *PRIVATE_VALUES])
    return RawData(
        X=X, y=y, task_name="income", label_names=list(LABEL_NAMES), attributes=attrs,
        attribute_values=values, fixed_test=is_test,
        description=f"UCI Adult from {d}: {int((~is_test).sum())} adult.data + "
        f"{int(is_test.sum())} adult.test rows; '?' kept as a category; sex, marital_status, "
        "race removed from the features",
    )

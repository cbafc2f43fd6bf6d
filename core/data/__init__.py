"""Data layer: registry, loaders, splits, federated partitioning (DESIGN: Data).

``load_dataset(spec, seed)`` is the one way to get a :class:`Dataset`; it is memoised per
process and its arrays are read-only (copy before modifying). ``partition`` deals row indices
out to federated clients. Heavy libraries (pandas, torchvision, sklearn) load lazily.
Sets a user registered (``privlab data add``) load like built-in ones: :mod:`core.data.user`.
"""

from __future__ import annotations

import os
from dataclasses import replace
from functools import lru_cache
from importlib import import_module
from typing import Any

import numpy as np

from core.data.base import Dataset, DataSpecLike
from core.data.errors import DataError
from core.data.files import ENV_DATA_DIR
from core.data.partition import partition, skew
from core.data.registry import DATASETS, DatasetInfo, all_datasets, dataset_attributes, get_info
from core.foundation.seeds import stream

__all__ = [
    "DATASETS", "DataError", "DataSpecLike", "Dataset", "DatasetInfo", "all_datasets", "clear_memo",
    "dataset_attributes", "describe_datasets", "get_info", "load_dataset", "partition", "skew",
]


def _readonly(a: np.ndarray) -> np.ndarray:
    if a.flags.writeable:
        a.flags.writeable = False
    return a


def _loader(info: DatasetInfo):
    module, func = info.loader.split(":")
    return getattr(import_module(module), func)


@lru_cache(maxsize=8)
def _load(spec: DataSpecLike, seed: int, env_data_dir: str | None, user_fp: str | None) -> Dataset:
    """Build the Dataset (``env_data_dir`` and ``user_fp``, a registered set's fingerprint, are
    only part of the memo key: a changed $PRIVLAB_DATA_DIR or registration must not serve a
    set read from the old files)."""
    from core.data.splits import encode_tabular, make_splits, subsample

    info = get_info(spec.name)
    raw = _loader(info)(spec, seed)
    if set(raw.attributes) != set(info.attributes):
        raise RuntimeError(f"{spec.name}: loader attributes {sorted(raw.attributes)} disagree "
                           f"with the registry's {list(info.attributes)}")
    keep = subsample(len(raw.y), spec.max_samples, stream(seed, "max_samples"), strata=raw.y)
    whole = len(keep) == len(raw.y)
    rows = (lambda a: a) if whole else (lambda a: a[keep])
    y = np.asarray(rows(raw.y), dtype=np.int64)
    fixed = None if raw.fixed_test is None else np.asarray(rows(raw.fixed_test), dtype=bool)
    splits = make_splits(y, test_fraction=spec.test_fraction, aux_fraction=spec.aux_fraction,
                         seed=seed, fixed_test=fixed)
    if raw.image_shape is None:
        df = raw.X if whole else raw.X.iloc[keep].reset_index(drop=True)
        X, names = encode_tabular(df, splits["train"])
    else:
        X = np.asarray(rows(raw.X), dtype=np.float32)
        names = []
    return Dataset(
        name=spec.name,
        X=_readonly(X),
        y=_readonly(y),
        task_name=raw.task_name,
        label_names=list(raw.label_names),
        attributes={k: _readonly(np.asarray(rows(v), dtype=np.int64)) for k, v in raw.attributes.items()},
        attribute_values={k: list(v) for k, v in raw.attribute_values.items()},
        default_attribute=spec.private_attribute or info.attributes[0],
        splits={k: _readonly(v) for k, v in splits.items()},
        feature_names=names,
        image_shape=raw.image_shape,
        description=raw.description or info.description,
    )


def load_dataset(spec: DataSpecLike, seed: int) -> Dataset:
    """Load ``spec.name``, cap it at ``spec.max_samples`` rows (seeded, stratified by the task
    label), split it into train/test/aux from ``seed`` (stratified; ``test_fraction`` and
    ``aux_fraction`` of all rows; Adult: test = adult.test, see core.data.adult), and
    standardise tabular features with train-split statistics (categories one-hot).

    Memoised per process on (spec, seed); arrays are read-only, containers are fresh copies.
    Raises :class:`DataError` when a real data set's files are missing or corrupt, or a
    registered set's files changed since registration (``spec.fingerprint``, when the spec
    has one, must be the registration's).
    """
    info = get_info(spec.name)
    user_fp = None
    if info.source == "user":
        from core.data.user import current_fingerprint

        user_fp = current_fingerprint(spec.name, getattr(spec, "fingerprint", None))
    ds = _load(spec, int(seed), os.environ.get(ENV_DATA_DIR), user_fp)
    return replace(
        ds,
        label_names=list(ds.label_names),
        attributes=dict(ds.attributes),
        attribute_values={k: list(v) for k, v in ds.attribute_values.items()},
        splits=dict(ds.splits),
        feature_names=list(ds.feature_names),
    )


def clear_memo() -> None:
    """Forget memoised data sets (frees memory; tests use it to check determinism)."""
    _load.cache_clear()


def _available(info: DatasetInfo) -> bool:
    if info.source == "embedded":
        return True
    if info.source == "user":
        from core.data import user

        return user.available(info.name)
    if info.name == "adult":
        from core.data import adult

        return adult._has_files(adult.find_dir(None))
    from core.data import torchvision_sets

    return torchvision_sets.is_present(info.name)


def describe_datasets() -> list[dict[str, Any]]:
    """One JSON-able row per data set (built-in, then registered: ``source`` ``user``) for the
    CLI ``datasets`` command and the dashboard; ``available`` says whether it can load now
    without a download (files are not verified)."""
    return [
        {
            "name": i.name, "kind": i.kind, "source": i.source, "task": i.task,
            "attributes": list(i.attributes), "description": i.description,
            "available": _available(i),
        }
        for i in all_datasets().values()
    ]

"""The Dataset every loader returns, and what the data layer reads of a data spec (DESIGN: Data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


class DataSpecLike(Protocol):
    """The fields of a data spec that the data layer reads (``core.config.schema.DataSpec`` has them;
    the data layer does not import the config, which imports the data registry). Loaders read
    the fields of their family (``data_dir``; synthetic: ``n_samples``, ``dependence``).
    Must be hashable: :func:`core.data.load_dataset` memoises on it."""

    @property
    def name(self) -> str: ...
    @property
    def private_attribute(self) -> str | None: ...
    @property
    def data_dir(self) -> str | None: ...
    @property
    def max_samples(self) -> int | None: ...
    @property
    def test_fraction(self) -> float: ...
    @property
    def aux_fraction(self) -> float: ...


@dataclass
class Dataset:
    """Features, task label, private attributes and deterministic splits.

    - ``X``: float32, shape (n, d). Images are flattened, values in [0, 1], and
      ``image_shape`` = (C, H, W) says how to un-flatten them. Tabular data is standardised
      (statistics of the train split) with one-hot categories; ``feature_names`` keeps the
      column names.
    - ``y``: int64 task labels, values 0..len(label_names)-1.
    - ``attributes``: name -> int64 codes of each private attribute;
      ``attribute_values``: name -> the value names, in code order.
    - ``splits``: 'train' / 'test' / 'aux' -> sorted, disjoint int64 index arrays covering
      all rows (aux = the attacker's auxiliary data).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    task_name: str
    label_names: list[str]
    attributes: dict[str, np.ndarray]
    attribute_values: dict[str, list[str]]
    default_attribute: str
    splits: dict[str, np.ndarray]
    feature_names: list[str] = field(default_factory=list)
    image_shape: tuple[int, int, int] | None = None
    description: str = ""

    @property
    def is_image(self) -> bool:
        return self.image_shape is not None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    def images(self, idx: np.ndarray | None = None) -> np.ndarray:
        """(n, C, H, W) view of image rows; raises for tabular data."""
        if self.image_shape is None:
            raise ValueError(f"data set {self.name!r} is tabular; it has no images")
        X = self.X if idx is None else self.X[idx]
        return X.reshape((-1, *self.image_shape))

    def split(self, name: str) -> np.ndarray:
        """Row indices of 'train', 'test', 'aux' or 'all'."""
        if name == "all":
            return np.arange(self.n)
        if name not in self.splits:
            raise ValueError(f"split: got {name!r}; allowed: train, test, aux, all")
        return self.splits[name]

    def attribute(self, name: str | None = None) -> np.ndarray:
        key = name or self.default_attribute
        if key not in self.attributes:
            raise ValueError(
                f"private_attribute: got {key!r}; allowed for {self.name!r}: {', '.join(self.attributes)}"
            )
        return self.attributes[key]

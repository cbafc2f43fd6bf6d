"""What a loader hands to :func:`core.data.load_dataset` before subsampling, splitting and
standardising (loaders stay small; the shared pipeline lives in ``splits.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class RawData:
    """Unsplit rows of one data set.

    - ``X``: float32 (n, d) in [0, 1] for images, or a pandas DataFrame for tabular data
      (numeric columns and ``category`` columns; categories are one-hot encoded later).
    - ``fixed_test``: optional bool mask of rows that *are* the test split (Adult's adult.test).
    """

    X: Any
    y: np.ndarray
    task_name: str
    label_names: list[str]
    attributes: dict[str, np.ndarray]
    attribute_values: dict[str, list[str]]
    image_shape: tuple[int, int, int] | None = None
    fixed_test: np.ndarray | None = None
    description: str = ""
    notes: list[str] = field(default_factory=list)

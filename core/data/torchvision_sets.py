"""Real image sets through torchvision: MNIST, Fashion-MNIST, CIFAR-10, CelebA.

Root directory: the config's ``data_dir``, else ``$PRIVLAB_DATA_DIR/<name>``, else the user
data dir ``.../privlab/<name>``. Files already there are used (``download=False``); otherwise
torchvision downloads them only when a quick network check succeeds, and offline a
:class:`DataError` names the directory to fill. The official train and test parts are
concatenated; ``load_dataset`` then makes the seeded train/test/aux splits like for every set.
Images become float32 in [0, 1], flattened, with ``image_shape`` (C, H, W).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from core.data import files
from core.data.errors import DataError
from core.data.images import DIGIT_NAMES, digit_attributes
from core.data.raw import RawData
from core.foundation.seeds import stream

# host checked before a download is attempted, and a file proving the set is present
_HOSTS = {
    "mnist": "ossci-datasets.s3.amazonaws.com",
    "fashion_mnist": "fashion-mnist.s3-website.eu-central-1.amazonaws.com",
    "cifar10": "www.cs.toronto.edu",
    "celeba": "drive.google.com",
}
_MARKERS = {
    "mnist": "MNIST/raw/train-images-idx3-ubyte",
    "fashion_mnist": "FashionMNIST/raw/train-images-idx3-ubyte",
    "cifar10": "cifar-10-batches-py/data_batch_1",
    "celeba": "celeba/list_attr_celeba.txt",
}
FASHION_NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                 "Sneaker", "Bag", "Ankle boot"]
CIFAR_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
               "truck"]
CELEBA_SIDE = 32
CELEBA_DEFAULT_CAP = 20_000


def root_for(name: str, data_dir: str | None) -> Path:
    return files.data_root_candidates(name, data_dir)[0]


def is_present(name: str, data_dir: str | None = None) -> bool:
    """Cheap check (no decoding) that the torchvision files of ``name`` are in its root."""
    if data_dir and not Path(data_dir).expanduser().is_dir():
        return False  # a data_dir that does not exist holds nothing (and is never created)
    return (root_for(name, data_dir) / _MARKERS[name]).exists()


def _open(name: str, root: Path, make):
    """``make(download)`` -> torchvision data set(s); download only when the host answers."""
    try:
        return make(False)
    except RuntimeError:
        pass
    if not files.network_available(_HOSTS[name]):
        raise DataError(
            f"{name}: data not found in directory {root} and no network to download it. "
            f"Run once online (torchvision downloads into {root}), or copy the torchvision files "
            f"there, or point data.data_dir (config) or ${files.ENV_DATA_DIR} (which holds "
            f"<name>/ subdirectories) at them."
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
        return make(True)
    except Exception as exc:  # noqa: BLE001
        raise DataError(f"{name}: download into directory {root} failed ({type(exc).__name__}: {exc})") from None


def _u8_to_float(a: np.ndarray) -> np.ndarray:
    X = np.ascontiguousarray(a.reshape(len(a), -1), dtype=np.float32)
    X *= 1.0 / 255.0
    X.flags.writeable = False
    return X


@lru_cache(maxsize=1)
def _mnist_like(name: str, root: Path) -> tuple[np.ndarray, np.ndarray]:
    import torchvision.datasets as tvd

    cls = tvd.MNIST if name == "mnist" else tvd.FashionMNIST
    parts = _open(name, root, lambda dl: [cls(str(root), train=t, download=dl) for t in (True, False)])
    X = np.concatenate([p.data.numpy() for p in parts])
    y = np.concatenate([p.targets.numpy() for p in parts]).astype(np.int64)
    return _u8_to_float(X), y


def load_mnist(spec, seed: int = 0) -> RawData:
    """torchvision MNIST (70,000 images 28x28); attributes parity / large / bold as ``digits``."""
    root = root_for("mnist", spec.data_dir)
    X, y = _mnist_like("mnist", root)
    attrs, values = digit_attributes(X, y)
    return RawData(X=X, y=y, task_name="digit", label_names=DIGIT_NAMES, attributes=attrs,
                   attribute_values=values, image_shape=(1, 28, 28),
                   description=f"torchvision MNIST from {root}")


def load_fashion_mnist(spec, seed: int = 0) -> RawData:
    """torchvision Fashion-MNIST (70,000 images 28x28). Attributes: ``footwear`` = classes
    {5 sandal, 7 sneaker, 9 ankle boot}; ``upper_body`` = {0 T-shirt, 2 pullover, 4 coat, 6 shirt}."""
    root = root_for("fashion_mnist", spec.data_dir)
    X, y = _mnist_like("fashion_mnist", root)
    attrs = {"footwear": np.isin(y, [5, 7, 9]).astype(np.int64),
             "upper_body": np.isin(y, [0, 2, 4, 6]).astype(np.int64)}
    values = {"footwear": ["other", "footwear"], "upper_body": ["other", "upper_body"]}
    return RawData(X=X, y=y, task_name="item", label_names=FASHION_NAMES, attributes=attrs,
                   attribute_values=values, image_shape=(1, 28, 28),
                   description=f"torchvision Fashion-MNIST from {root}")


@lru_cache(maxsize=1)
def _cifar10(root: Path) -> tuple[np.ndarray, np.ndarray]:
    import torchvision.datasets as tvd

    parts = _open("cifar10", root, lambda dl: [tvd.CIFAR10(str(root), train=t, download=dl) for t in (True, False)])
    X = np.concatenate([p.data for p in parts]).transpose(0, 3, 1, 2)  # NHWC -> NCHW
    y = np.concatenate([np.asarray(p.targets) for p in parts]).astype(np.int64)
    return _u8_to_float(X), y


def load_cifar10(spec, seed: int = 0) -> RawData:
    """torchvision CIFAR-10 (60,000 images 3x32x32). Attribute ``animal`` (TAPPFL B10): classes
    {2..7} (bird, cat, deer, dog, frog, horse) -> 1; airplane, automobile, ship, truck -> 0."""
    root = root_for("cifar10", spec.data_dir)
    X, y = _cifar10(root)
    attrs = {"animal": np.isin(y, [2, 3, 4, 5, 6, 7]).astype(np.int64)}
    return RawData(X=X, y=y, task_name="class", label_names=CIFAR_NAMES, attributes=attrs,
                   attribute_values={"animal": ["vehicle", "animal"]}, image_shape=(3, 32, 32),
                   description=f"torchvision CIFAR-10 from {root}")


def load_celeba(spec, seed: int = 0) -> RawData:
    """torchvision CelebA (202,599 aligned faces), centre-cropped and downscaled to 3x32x32.

    Task ``Smiling``; attributes ``male`` (CelebA ``Male``) and ``young`` (``Young``). Only the
    kept rows are decoded: ``max_samples`` (default 20,000, to keep decoding time on a CPU
    reasonable) rows are chosen, stratified by the task label, from ``seed``.
    """
    import torchvision.datasets as tvd
    from PIL import Image

    from core.data.splits import subsample

    root = root_for("celeba", spec.data_dir)
    ds = _open("celeba", root, lambda dl: tvd.CelebA(str(root), split="all", target_type="attr", download=dl))
    attr = ds.attr.numpy().astype(np.int64)
    names = list(ds.attr_names)
    col = {n: names.index(n) for n in ("Smiling", "Male", "Young")}
    y_all = attr[:, col["Smiling"]]
    keep = subsample(len(y_all), spec.max_samples or CELEBA_DEFAULT_CAP,
                     stream(seed, "max_samples"), strata=y_all)
    img_dir = Path(ds.root) / ds.base_folder / "img_align_celeba"
    X = np.empty((len(keep), 3 * CELEBA_SIDE * CELEBA_SIDE), dtype=np.float32)
    for i, j in enumerate(keep):
        with Image.open(img_dir / ds.filename[j]) as im:
            w, h = im.size
            s = min(w, h)
            box = ((w - s) // 2, (h - s) // 2, (w - s) // 2 + s, (h - s) // 2 + s)
            im = im.convert("RGB").resize((CELEBA_SIDE, CELEBA_SIDE), Image.BILINEAR, box=box)
            X[i] = np.asarray(im, dtype=np.float32).transpose(2, 0, 1).reshape(-1) / 255.0
    return RawData(
        X=X, y=y_all[keep], task_name="smiling", label_names=["not smiling", "smiling"],
        attributes={"male": attr[keep, col["Male"]], "young": attr[keep, col["Young"]]},
        attribute_values={"male": ["female", "male"], "young": ["not young", "young"]},
        image_shape=(3, CELEBA_SIDE, CELEBA_SIDE),
        description=f"torchvision CelebA from {root}: {len(keep)} of {len(y_all)} faces at 32x32",
    )

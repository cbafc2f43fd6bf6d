"""Data layer: loaders, splits, standardising, memo, Adult checksums, offline errors."""

from __future__ import annotations

import shutil
import time
import typing
from importlib import import_module

import numpy as np
import pytest

from core.config.schema import DatasetName, DataSpec
from core.data import DATASETS, DataError, clear_memo, describe_datasets, files, load_dataset
from core.data.registry import dataset_attributes

EMBEDDED = ["digits", "mnist5k", "faces", "synthetic"]


def _check_common(ds, spec):
    n = ds.n
    assert ds.X.dtype == np.float32 and ds.X.ndim == 2 and ds.y.dtype == np.int64
    assert ds.y.shape == (n,) and set(np.unique(ds.y)) <= set(range(len(ds.label_names)))
    # splits: sorted, disjoint, complete
    parts = [ds.splits[k] for k in ("train", "test", "aux")]
    allidx = np.concatenate(parts)
    assert np.array_equal(np.sort(allidx), np.arange(n))
    assert all(np.all(np.diff(p) > 0) for p in parts)
    # attributes: the registry's, int64 codes within their value lists
    assert set(ds.attributes) == set(dataset_attributes(spec.name))
    for k, a in ds.attributes.items():
        assert a.dtype == np.int64 and a.shape == (n,)
        assert a.min() >= 0 and a.max() < len(ds.attribute_values[k])
        assert len(np.unique(a)) == len(ds.attribute_values[k])  # every value occurs
    assert ds.default_attribute == (spec.private_attribute or dataset_attributes(spec.name)[0])


def test_registry_agrees_with_config():
    assert set(typing.get_args(DatasetName)) == set(DATASETS)
    for name, info in DATASETS.items():
        assert info.name == name and info.kind in ("image", "tabular")
        assert info.source in ("embedded", "real") and info.attributes
        module, func = info.loader.split(":")
        assert callable(getattr(import_module(module), func))


@pytest.mark.parametrize("name", EMBEDDED)
def test_embedded_loader(name):
    spec = DataSpec(name=name)
    ds = load_dataset(spec, 0)
    _check_common(ds, spec)
    sizes = {k: len(v) for k, v in ds.splits.items()}
    assert abs(sizes["test"] - 0.2 * ds.n) <= 1 and abs(sizes["aux"] - 0.2 * ds.n) <= 1
    if DATASETS[name].kind == "image":
        assert ds.X.min() >= 0.0 and ds.X.max() <= 1.0 and ds.X.max() > 0.5
        assert ds.images().shape == (ds.n, *ds.image_shape)
        assert ds.feature_names == []
    else:
        assert ds.image_shape is None and len(ds.feature_names) == ds.X.shape[1]


@pytest.mark.parametrize("name,n,shape", [("digits", 1797, (1, 8, 8)), ("mnist5k", 5000, (1, 28, 28)),
                                          ("faces", 200, (1, 25, 25))])
def test_image_shapes(name, n, shape):
    ds = load_dataset(DataSpec(name=name), 0)
    assert ds.n == n and ds.image_shape == shape and ds.X.shape[1] == int(np.prod(shape))


def test_digit_attributes():
    ds = load_dataset(DataSpec(name="digits"), 0)
    assert np.array_equal(ds.attributes["parity"], ds.y % 2)
    assert np.array_equal(ds.attributes["large"], (ds.y >= 5).astype(int))
    assert ds.attribute_values["parity"] == ["even", "odd"]
    bold, ink = ds.attributes["bold"], ds.X.mean(1)
    for c in range(10):  # about half of every class, and bold rows have more ink
        m = ds.y == c
        assert 0.4 < bold[m].mean() < 0.6
        assert ink[m][bold[m] == 1].min() >= ink[m][bold[m] == 0].max()


def test_faces_order_and_bright():
    ds = load_dataset(DataSpec(name="faces"), 0)
    assert ds.label_names == ["non-face", "face"]
    assert np.array_equal(ds.y, np.r_[np.ones(100), np.zeros(100)])
    ink = ds.X.mean(1)
    assert ink[ds.attributes["bright"] == 1].min() >= ink[ds.attributes["bright"] == 0].max()


def test_split_determinism_and_seed_dependence():
    spec = DataSpec(name="digits", test_fraction=0.25, aux_fraction=0.1)
    a = load_dataset(spec, 3)
    clear_memo()
    b = load_dataset(spec, 3)
    c = load_dataset(spec, 4)
    for k in a.splits:
        assert np.array_equal(a.splits[k], b.splits[k])
    assert not np.array_equal(a.splits["test"], c.splits["test"])
    assert len(a.splits["test"]) == round(0.25 * 1797) and len(a.splits["aux"]) == round(0.1 * 1797)
    # stratified: every split has the global class mix within a couple of rows per class
    glob = np.bincount(a.y) / a.n
    for k, idx in a.splits.items():
        assert np.abs(np.bincount(a.y[idx], minlength=10) - glob * len(idx)).max() <= 1.5


def test_memo_is_cheap_and_read_only():
    spec = DataSpec(name="digits")
    a, b = load_dataset(spec, 0), load_dataset(spec, 0)
    assert a.X is b.X  # memoised, arrays shared
    for arr in (a.X, a.y, a.attributes["parity"], a.splits["train"]):
        with pytest.raises(ValueError):
            arr[0] = 1
    a.attributes["parity"] = None  # containers are per-call copies
    a.splits.clear()
    c = load_dataset(spec, 0)
    assert c.attributes["parity"] is not None and set(c.splits) == {"train", "test", "aux"}


def test_max_samples_and_private_attribute():
    spec = DataSpec(name="mnist5k", max_samples=600, private_attribute="bold")
    ds = load_dataset(spec, 0)
    assert ds.n == 600 and np.array_equal(np.bincount(ds.y), np.full(10, 60))  # stratified
    assert ds.default_attribute == "bold" and ds.attribute() is ds.attributes["bold"]
    other = load_dataset(spec, 1)
    assert not np.array_equal(ds.X, other.X)  # a different seed keeps different rows


def test_subsample_helper():
    from core.data.splits import subsample

    a = subsample(1000, 50, 7)
    assert len(a) == 50 and np.all(np.diff(a) > 0) and a.dtype == np.int64
    assert np.array_equal(a, subsample(np.arange(1000), 50, 7))  # range(n) == its index array
    assert not np.array_equal(a, subsample(1000, 50, 8))
    idx = np.arange(0, 3000, 3)
    b = subsample(idx, 40, 1)
    assert np.isin(b, idx).all() and np.array_equal(b, subsample(idx, 40, np.random.default_rng(1)))
    assert np.array_equal(subsample(idx[::-1], None, 0), idx)  # no cap: all rows, sorted
    y = np.repeat([0, 1], [900, 100])
    c = subsample(len(y), 100, [3, 1], strata=y)
    assert np.bincount(y[c]).tolist() == [90, 10]  # proportions kept
    with pytest.raises(ValueError, match="strata"):
        subsample(10, 5, 0, strata=y)


def test_synthetic_standardised_and_tunable():
    spec = DataSpec(name="synthetic", n_samples=3000, dependence=0.6)
    ds = load_dataset(spec, 0)
    tr = ds.splits["train"]
    num = [i for i, f in enumerate(ds.feature_names) if "=" not in f]
    hot = [i for i, f in enumerate(ds.feature_names) if f.startswith("group=")]
    assert len(num) == 10 and ds.feature_names[hot[0]] == "group=a" and len(hot) == 3
    assert np.allclose(ds.X[tr][:, num].mean(0), 0, atol=1e-4)
    assert np.allclose(ds.X[tr][:, num].std(0), 1, atol=1e-3)
    assert not np.allclose(ds.X[ds.splits["test"]][:, num].mean(0), 0, atol=1e-4)  # train stats only
    assert set(np.unique(ds.X[:, hot])) == {0.0, 1.0} and np.all(ds.X[:, hot].sum(1) == 1)
    u = ds.attributes["u"]
    assert abs(np.mean(ds.y == u) - 0.8) < 0.03  # P(y = u) = (1 + rho) / 2
    assert ds.n == 3000
    d0 = load_dataset(DataSpec(name="synthetic", n_samples=3000, dependence=0.0), 0)
    assert abs(np.corrcoef(d0.y, d0.attributes["u"])[0, 1]) < 0.06
    d1 = load_dataset(DataSpec(name="synthetic", n_samples=3000, dependence=1.0), 0)
    assert np.array_equal(d1.y, d1.attributes["u"])
    assert not np.array_equal(load_dataset(spec, 1).attributes["u"], u)  # generated from the seed


# ---------------------------------------------------------------------------------------------
# Adult


def test_adult_from_shared_files(adult_dir):
    clear_memo()
    spec = DataSpec(name="adult", data_dir=str(adult_dir), aux_fraction=0.25, private_attribute="marital_status")
    t = time.perf_counter()
    ds = load_dataset(spec, 0)
    elapsed = time.perf_counter() - t
    assert elapsed < 4.0, f"Adult took {elapsed:.2f} s"  # ~0.6 s here; budget 2 s on a quiet machine
    _check_common(ds, spec)
    assert ds.n == 48842 and len(ds.splits["test"]) == 16281
    assert np.array_equal(ds.splits["test"], np.arange(32561, 48842))  # exactly adult.test
    assert len(ds.splits["aux"]) == round(0.25 * 32561)
    assert ds.attribute_values["sex"] == ["Female", "Male"]
    assert len(ds.attribute_values["marital_status"]) == 7 and len(ds.attribute_values["race"]) == 5
    assert ds.attribute_values["marital_status"][2] == "Married-civ-spouse"
    assert ds.label_names == ["<=50K", ">50K"] and 0.2 < ds.y.mean() < 0.3
    assert not any(f.split("=")[0] in ("sex", "marital_status", "race", "income") for f in ds.feature_names)
    assert "workclass=?" in ds.feature_names and "age" in ds.feature_names
    assert len(ds.feature_names) == ds.X.shape[1]
    num = [ds.feature_names.index(c) for c in ("age", "fnlwgt", "hours_per_week")]
    tr = ds.X[ds.splits["train"]][:, num]
    assert np.allclose(tr.mean(0), 0, atol=1e-3) and np.allclose(tr.std(0), 1, atol=1e-3)


def test_adult_env_layouts(adult_dir, monkeypatch):
    from core.data.adult import find_dir

    monkeypatch.setenv(files.ENV_DATA_DIR, str(adult_dir.parent))  # $PRIVLAB_DATA_DIR/adult
    assert find_dir(None) == adult_dir
    monkeypatch.setenv(files.ENV_DATA_DIR, str(adult_dir))  # $PRIVLAB_DATA_DIR itself
    assert find_dir(None) == adult_dir
    assert {r["name"]: r["available"] for r in describe_datasets()}["adult"]


def test_adult_tampered_file_rejected(adult_dir, tmp_path):
    for f in ("adult.data", "adult.test"):
        shutil.copy(adult_dir / f, tmp_path / f)
    p = tmp_path / "adult.test"
    raw = bytearray(p.read_bytes())
    raw[1000] ^= 0x01
    p.chmod(0o644)
    p.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"checksum") as err:
        load_dataset(DataSpec(name="adult", data_dir=str(tmp_path)), 0)
    assert "adult.test" in str(err.value) and "a2a9044b" in str(err.value)
    assert isinstance(err.value, ValueError)


def _no_network(monkeypatch):
    def fail(*a, **k):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(files, "download_file", fail)
    monkeypatch.setattr(files, "network_available", lambda *a, **k: False)


def test_adult_missing_offline_names_dir_and_files(tmp_path, monkeypatch):
    _no_network(monkeypatch)
    d = tmp_path / "empty"
    with pytest.raises(ValueError, match="(?s)data_dir.*no such folder"):  # never created
        load_dataset(DataSpec(name="adult", data_dir=str(d)), 0)
    assert not d.exists()
    d.mkdir()
    with pytest.raises(DataError) as err:
        load_dataset(DataSpec(name="adult", data_dir=str(d)), 0)
    msg = str(err.value)
    assert str(d) in msg and "adult.data" in msg and "adult.test" in msg
    assert "PRIVLAB_DATA_DIR" in msg and "data_dir" in msg
    # the default location (user data dir) is named when nothing is configured
    monkeypatch.delenv(files.ENV_DATA_DIR, raising=False)
    monkeypatch.setattr(files, "user_data_root", lambda: tmp_path / "user")
    with pytest.raises(DataError, match=str(tmp_path / "user" / "adult")):
        load_dataset(DataSpec(name="adult"), 0)
    assert not {r["name"]: r["available"] for r in describe_datasets()}["adult"]


def test_adult_download_path_verifies(adult_dir, tmp_path, monkeypatch):
    fetched = []

    def fake_download(url, dest, *, timeout):  # serves the shared files instead of UCI
        fetched.append(url)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(adult_dir / dest.name, dest)

    monkeypatch.setattr(files, "download_file", fake_download)
    monkeypatch.setenv(files.ENV_DATA_DIR, str(tmp_path))
    ds = load_dataset(DataSpec(name="adult", max_samples=2000), 1)
    assert sorted(u.rsplit("/", 1)[1] for u in fetched) == ["adult.data", "adult.test"]
    assert (tmp_path / "adult" / "adult.data").is_file() and ds.n == 2000


@pytest.mark.parametrize("name", ["mnist", "fashion_mnist", "cifar10", "celeba"])
def test_torchvision_offline_error_names_dir(name, tmp_path, monkeypatch):
    _no_network(monkeypatch)
    d = tmp_path / name
    d.mkdir()
    with pytest.raises(DataError) as err:
        load_dataset(DataSpec(name=name, data_dir=str(d)), 0)
    assert str(d) in str(err.value) and name in str(err.value)


def test_describe_datasets():
    rows = describe_datasets()
    assert [r["name"] for r in rows] == list(DATASETS)
    for r in rows:
        assert set(r) == {"name", "kind", "source", "task", "attributes", "description", "available"}
        if r["source"] == "embedded":
            assert r["available"] is True


def _write_idx(path, arr: np.ndarray) -> None:
    """The MNIST idx format (big-endian dims after a magic of 0x0000 08 <ndim>)."""
    header = bytes([0, 0, 8, arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
    path.write_bytes(header + arr.astype(np.uint8).tobytes())


@pytest.mark.parametrize("name,folder", [("mnist", "MNIST"), ("fashion_mnist", "FashionMNIST")])
def test_torchvision_idx_files_convert(name, folder, tmp_path, monkeypatch):
    """Tiny fake idx files in torchvision's layout load offline: float [0, 1], attributes."""
    _no_network(monkeypatch)
    raw = tmp_path / folder / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 60), ("t10k", 40)):
        _write_idx(raw / f"{prefix}-images-idx3-ubyte", rng.integers(0, 256, (n, 28, 28)))
        _write_idx(raw / f"{prefix}-labels-idx1-ubyte", np.arange(n) % 10)
    spec = DataSpec(name=name, data_dir=str(tmp_path))
    ds = load_dataset(spec, 0)
    _check_common(ds, spec)
    assert ds.n == 100 and ds.image_shape == (1, 28, 28) and ds.X.max() <= 1.0 and ds.X.max() > 0.99
    from core.data.torchvision_sets import is_present

    assert is_present(name, str(tmp_path)) and not is_present(name, str(tmp_path / "x"))
    if name == "fashion_mnist":
        assert np.array_equal(ds.attributes["footwear"], np.isin(ds.y, [5, 7, 9]))
        assert np.array_equal(ds.attributes["upper_body"], np.isin(ds.y, [0, 2, 4, 6]))


def test_digits_equal_sklearn_load_digits():
    from sklearn.datasets import load_digits as sk_load_digits

    from core.data.images import _digits_arrays

    X, y = _digits_arrays()
    d = sk_load_digits()
    assert np.array_equal(X, np.ascontiguousarray(d.data / 16.0, dtype=np.float32))
    assert np.array_equal(y, d.target) and y.dtype == np.int64

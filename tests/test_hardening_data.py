"""Your own data, bounded (issue 21): caps on bytes, rows, columns, cells and images checked
while streaming, before memory is spent; regular files only; symbolic links that leave an
image folder refused; a config's data_dir never created."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from core.data import DataError, user

sys.path.insert(0, str(Path(__file__).parent))
from test_user_data import write_csv, write_images

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv(user.ENV_REGISTRY, str(tmp_path / "registry"))


def _refused(fn, needle: str) -> str:
    signal.alarm(20)  # a FIFO must never block
    try:
        with pytest.raises(DataError) as err:
            fn()
    finally:
        signal.alarm(0)
    msg = str(err.value)
    assert "\n" not in msg and needle in msg, msg
    return msg


def test_csv_caps_are_checked_while_streaming(tmp_path, monkeypatch):
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(f"c{i}" for i in range(3000)) + "\n" + ",".join("1" * 3000) + "\n")
    _refused(lambda: user.add_csv("w", wide, "c0", ["c1"]), "has 3,000 columns; the cap is 2,000")
    long_header = tmp_path / "header.csv"
    long_header.write_text("a" * (2 << 20) + "\n1\n")
    _refused(lambda: user.add_csv("h", long_header, "a", ["b"]), "header line is longer than")
    csv = tmp_path / "t.csv"
    write_csv(csv)
    monkeypatch.setattr(user, "MAX_FILE_BYTES", 1000)
    _refused(lambda: user.add_csv("t", csv, "income", ["sex"]), "the cap is 0.0 MiB")
    monkeypatch.setattr(user, "MAX_FILE_BYTES", 512 * 1024**2)
    monkeypatch.setattr(user, "MAX_CELLS", 600)
    _refused(lambda: user.add_csv("t", csv, "income", ["sex"]), "cells (rows x 6 columns); the cap is 600")
    monkeypatch.setattr(user, "MAX_CELLS", 50_000_000)
    monkeypatch.setattr(user, "MAX_ROWS", 50)
    _refused(lambda: user.add_csv("t", csv, "income", ["sex"]), "has more than 50 rows")


def test_csv_must_be_a_regular_file(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    _refused(lambda: user.add_csv("p", fifo, "a", ["b"]), "not a regular file")
    _refused(lambda: user.add_csv("z", "/dev/zero", "a", ["b"]), "not a regular file")
    _refused(lambda: user.add_csv("d", tmp_path, "a", ["b"]), "not a regular file")


def test_hostile_csv_peak_memory_is_bounded(tmp_path):
    """A CSV of 10⁶ columns (about 13 GB once parsed whole) is refused from its header: the
    process stays far below 1 GB."""
    wide = tmp_path / "wide.csv"
    with open(wide, "w") as f:
        f.write(",".join("c" for _ in range(10**6)) + "\n")
        f.writelines(",".join("1" for _ in range(10**6)) + "\n" for _ in range(3))
    # VmHWM: this process's own peak (ru_maxrss would carry pytest's across fork + exec)
    code = ("from core.data import user\n"
            f"try:\n    user.add_csv('w', {str(wide)!r}, 'c', ['c'])\n"
            "except Exception as e:\n    print(e)\n"
            "print(next(int(x.split()[1]) for x in open('/proc/self/status')"
            " if x.startswith('VmHWM')) // 1024)")
    env = {**os.environ, "PYTHONPATH": str(ROOT), user.ENV_REGISTRY: str(tmp_path / "r")}
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120, check=False)
    msg, peak = p.stdout.strip().splitlines()
    assert "columns; the cap is 2,000" in msg and int(peak) < 400, (msg, peak, p.stderr[-500:])


def test_image_symlinks_leaving_the_folder_are_refused(tmp_path):
    root = write_images(tmp_path / "pets")
    outside = write_images(tmp_path / "outside", classes=("x",), per_class=1)
    # a symbolic link inside the folder pointing inside it is fine
    (root / "cat" / "again.png").symlink_to(root / "cat" / "cat_000.png")
    user.add_images("pets", root, size=8)
    (root / "cat" / "leak.png").symlink_to(outside / "x" / "x_000.png")
    _refused(lambda: user.add_images("pets2", root, size=8), "outside the folder; refused")
    (root / "cat" / "leak.png").unlink()
    (root / "cat" / "sub").symlink_to(outside / "x")
    _refused(lambda: user.add_images("pets2", root, size=8), "outside the folder; refused")
    (root / "cat" / "sub").unlink()
    (root / "bird").symlink_to(outside / "x")
    _refused(lambda: user.add_images("pets2", root, size=8), "bird is a symbolic link to")
    (root / "bird").unlink()
    (root / "cat" / "dangling.png").symlink_to(tmp_path / "gone.png")
    _refused(lambda: user.add_images("pets2", root, size=8), "broken symbolic link")


def test_image_caps(tmp_path, monkeypatch):
    root = write_images(tmp_path / "pets")
    monkeypatch.setattr(user, "MAX_IMAGES", 5)
    _refused(lambda: user.add_images("p", root, size=8), "more than 5 images; the cap is 5")
    monkeypatch.setattr(user, "MAX_IMAGES", 100_000)
    Image.fromarray(np.zeros((300, 300), np.uint8)).save(root / "cat" / "huge.png")
    monkeypatch.setattr(user, "MAX_IMAGE_PIXELS", 50_000)
    _refused(lambda: user.add_images("p", root, size=8), "300x300 pixels; the cap is 50,000")
    monkeypatch.setattr(user, "MAX_IMAGE_PIXELS", 40_000_000)
    monkeypatch.setattr(user, "MAX_IMAGE_BYTES", 100)
    _refused(lambda: user.add_images("p", root, size=8), "the cap is 0.0 MiB")
    monkeypatch.setattr(user, "MAX_IMAGE_BYTES", 64 * 1024**2)
    os.mkfifo(root / "dog" / "pipe.png")  # not a regular file: skipped, never read
    signal.alarm(20)
    try:
        assert user.add_images("p", root, size=8)["rows"] == 25
    finally:
        signal.alarm(0)


def test_data_dir_is_never_created(tmp_path):
    from core.config.schema import ConfigError, parse_config
    from core.data import files

    where = tmp_path / "not" / "here"
    with pytest.raises(ConfigError, match="data.data_dir: got .*; no such folder"):
        parse_config({"kind": "projection", "data": {"name": "adult", "data_dir": str(where)}})
    with pytest.raises(DataError, match="no such folder"):
        files.data_root_candidates("adult", str(where))
    assert not where.exists() and not where.parent.exists()


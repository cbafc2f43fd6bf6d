"""Data directories, checksums and downloads (the only module here that touches the network)."""

from __future__ import annotations

import hashlib
import os
import socket
import tempfile
import urllib.request
from pathlib import Path

ENV_DATA_DIR = "PRIVLAB_DATA_DIR"


def user_data_root() -> Path:
    """platformdirs' per-user data directory for privlab (e.g. ~/.local/share/privlab)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("privlab"))


def data_root_candidates(name: str, data_dir: str | None) -> list[Path]:
    """Directories that may hold data set ``name``, in priority order; the first is where a
    download goes. ``data_dir`` (from the config; it must exist) wins; then
    $PRIVLAB_DATA_DIR/<name> and $PRIVLAB_DATA_DIR; then the user data dir /<name>."""
    if data_dir:
        d = Path(data_dir).expanduser()
        if not d.is_dir():  # a config's data_dir is never created (the config refuses it too)
            from core.data.errors import DataError

            raise DataError(f"data.data_dir: got {str(data_dir)!r}; no such folder; create it "
                            "first (privlab never creates data_dir) or leave data_dir out")
        return [d, d / name]
    env = os.environ.get(ENV_DATA_DIR)
    if env:
        e = Path(env).expanduser()
        return [e / name, e]
    return [user_data_root() / name]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def download_file(url: str, dest: Path, *, timeout: float = 10.0) -> None:
    """Fetch ``url`` into ``dest`` atomically (temp file + rename). Raises OSError on failure."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            while chunk := resp.read(1 << 20):
                out.write(chunk)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def network_available(host: str, port: int = 443, timeout: float = 3.0) -> bool:
    """Quick reachability check before asking torchvision to download."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False

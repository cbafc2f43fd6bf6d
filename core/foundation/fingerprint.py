"""A fingerprint of the engine's source, part of every cache and stage key (DESIGN: Cache key),
so that a code change never serves a stale number, and one of the machine (what a timing here
depends on besides the engine). Each is hashed once per process.

It covers every ``.py`` file under ``core/`` (path and bytes, in sorted order). The History
page marks runs whose stored fingerprint differs from the running engine's.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from core import ENGINE_VERSION

_CORE = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def engine_fingerprint() -> str:
    """sha256 over (relative path, content) of every engine source file; 64 hex chars."""
    h = hashlib.sha256()
    for p in sorted(_CORE.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        h.update(str(p.relative_to(_CORE)).encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def engine_id() -> str:
    """``<version>+<first 12 hex of the fingerprint>``: what a Result records as its engine."""
    return f"{ENGINE_VERSION}+{engine_fingerprint()[:12]}"


def same_engine(recorded: str | None) -> bool:
    """Whether a stored Result's ``engine_version`` is the running engine (source included)."""
    return recorded == engine_id()


def _cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what :mod:`platform` reports."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@lru_cache(maxsize=1)
def machine_fingerprint() -> str:
    """sha256 over what a timing on this machine depends on besides the engine: the host's
    name, its CPU model and core count, the OS and architecture, and the torch build; 64 hex
    chars. A measured cost (:mod:`core.engine.calibration`) is kept under it."""
    import os
    import platform
    from importlib import metadata

    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "none"
    parts = (platform.node(), _cpu_model(), str(os.cpu_count()), platform.system(),
             platform.machine(), torch_version)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()

"""Where privlab keeps what it computed on this machine: the result store's root and the
machine's cost calibration (:mod:`core.engine.calibration`) live under it."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "PRIVLAB_CACHE_DIR"


def resolve_root(root: str | Path | None = None) -> Path:
    """``root``, else ``$PRIVLAB_CACHE_DIR``, else ``platformdirs.user_cache_dir('privlab')``."""
    if root is None:
        root = os.environ.get(ENV_VAR) or None
    if root is None:
        import platformdirs

        root = platformdirs.user_cache_dir("privlab")
    return Path(root).expanduser().resolve()


def registry_dir(env_var: str, sub: str) -> Path:
    """A user registry's directory (data sets, models, trained models): ``$env_var``, else
    ``platformdirs.user_config_dir('privlab') / sub``."""
    env = os.environ.get(env_var)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("privlab")) / sub

"""Device choice (DESIGN: CUDA when available, else CPU)."""

from __future__ import annotations

import os
import random

import numpy as np


def get_device(preference: str = "auto"):
    """Return a ``torch.device``: ``auto`` picks CUDA when present, else CPU."""
    import torch

    if preference == "cpu":
        return torch.device("cpu")
    if preference == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("device: 'cuda' was asked for but no CUDA device is available; use 'auto' or 'cpu'")
        return torch.device("cuda")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (CPU and CUDA) for a deterministic run."""
    import torch

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
    os.environ.setdefault("PYTHONHASHSEED", str(seed))

"""Device choice (DESIGN: CUDA when available, else CPU)."""

from __future__ import annotations


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


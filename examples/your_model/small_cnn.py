"""A small convolutional network for 8x8 grayscale digits: not one of privlab's architectures.

Plain PyTorch (no privlab import): ``train_plain.py`` trains it, ``privlab model add`` registers
it, ``privlab audit`` audits the trained weights.
"""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    """conv 8@3x3 -> ReLU -> max-pool 2 -> conv 16@3x3 -> ReLU -> max-pool 2 -> linear, on
    images of shape (N, 1, 8, 8)."""

    def __init__(self, n_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.head = nn.Linear(16 * 2 * 2, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))

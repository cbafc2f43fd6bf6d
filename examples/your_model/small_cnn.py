"""A small convolutional network for 8x8 grayscale digits: not one of privlab's architectures.

Plain PyTorch (no privlab import): ``train_plain.py`` trains it; ``make`` is the factory
``privlab model add small_cnn --from examples/your_model/small_cnn.py:make --data digits``
registers; ``privlab audit`` then audits the trained weights.
"""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    """conv 8@3x3 -> ReLU -> max-pool 2 -> conv 16@3x3 -> ReLU -> max-pool 2 -> linear, on
    images of shape (N, 1, 8, 8); ``width`` scales the channels."""

    def __init__(self, n_classes: int = 10, width: float = 1.0) -> None:
        super().__init__()
        c1, c2 = max(2, round(8 * width)), max(2, round(16 * width))
        self.conv1 = nn.Conv2d(1, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.head = nn.Linear(c2 * 2 * 2, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))


def make(in_shape, n_classes, width=1.0):
    """The factory ``privlab model add`` registers: ``in_shape`` is (1, 8, 8) for digits."""
    return SmallCNN(n_classes, width)

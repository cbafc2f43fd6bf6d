"""Utility of frozen representations: task heads trained on r = f(x) (TAPPFL spec B10 "Metrics").

- :func:`linear_probe`: standardise + logistic regression on the train split's r, accuracy on the
  test split's r (our main utility number: cheap, deterministic, comparable across defenses).
- :func:`paper_eval_head`: the authors' evaluation protocol (spec B8 "Code deviations"): a small
  MLP head, Adam lr 1e-3, weight decay 1e-4, 5 epochs, batch 128, on frozen features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.data.splits import subsample


@dataclass
class ProbeResult:
    accuracy: float
    #: weight matrix of the head *in the units of the raw representation* (k_out, d) — for
    #: Theorem 1's Lipschitz constant C_L of a logistic head (‖w‖/4).
    weights: np.ndarray


def linear_probe(
    R_train: np.ndarray, y_train: np.ndarray, R_test: np.ndarray, y_test: np.ndarray,
    *, seed: int, max_train: int = 20_000,
) -> ProbeResult:
    """Logistic-regression task head on frozen representations; test accuracy."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    rows = subsample(len(y_train), max_train, seed)
    Rt, yt = np.asarray(R_train, np.float64)[rows], np.asarray(y_train)[rows]
    if np.unique(yt).size < 2:
        major = np.bincount(yt).argmax()
        return ProbeResult(float(np.mean(np.asarray(y_test) == major)), np.zeros((1, Rt.shape[1])))
    scaler = StandardScaler().fit(Rt)
    clf = LogisticRegression(max_iter=500, random_state=seed).fit(scaler.transform(Rt), yt)
    acc = float(clf.score(scaler.transform(np.asarray(R_test, np.float64)), y_test))
    w = clf.coef_ / np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    return ProbeResult(acc, w)


def paper_eval_head(
    R_train: np.ndarray, y_train: np.ndarray, R_test: np.ndarray, y_test: np.ndarray,
    *, seed: int, epochs: int = 5, batch_size: int = 128, hidden: int = 64,
) -> float:
    """The TAPPFL code's evaluation classifier on frozen features (Adam 1e-3, wd 1e-4,
    5 epochs, batch 128, plain unweighted CE; trained by :func:`core.engine.training.train_classifier`);
    returns test accuracy."""
    import torch
    from torch import nn

    from core.engine.training import train_classifier
    from core.models.nn import seeded

    n_cls = int(max(np.max(y_train), np.max(y_test))) + 1
    g = torch.Generator().manual_seed(seed)
    # initialised from a local generator, not the global seed (runs share a process)
    head = seeded(nn.Sequential(nn.Linear(R_train.shape[1], hidden), nn.ReLU(),
                                nn.Linear(hidden, n_cls)), seed)
    X = torch.as_tensor(np.asarray(R_train), dtype=torch.float32)
    y = torch.as_tensor(np.asarray(y_train), dtype=torch.long)
    mu, sd = X.mean(0), X.std(0).clamp_min(1e-6)
    X = (X - mu) / sd
    # NOT class-balanced: it measures task utility as the paper does
    train_classifier(head, X, y, class_weight=None, epochs=epochs, batch_size=batch_size,
                     lr=1e-3, weight_decay=1e-4, generator=g)
    with torch.no_grad():
        Xt = (torch.as_tensor(np.asarray(R_test), dtype=torch.float32) - mu) / sd
        pred = head(Xt).argmax(1).numpy()
    return float(np.mean(pred == np.asarray(y_test)))

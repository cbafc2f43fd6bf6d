"""A scikit-learn model trained elsewhere, saved with skops (``skops.io.dump``): read without
unpickling (skops' own loader, trusting only the types it trusts by default; a file naming
any other type is refused with the types named), checked against the data set it is audited on
(feature count, classes), queried as the membership runner queries a network (class
probabilities as a torch tensor) and re-trained for shadow and reference models by
:func:`sklearn.base.clone` (the same estimator and hyperparameters, fresh state).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core.models.weights import WeightsError, read_bounded

#: the largest skops file read (a forest of thousands of trees fits)
MAX_SKOPS_BYTES = 256 << 20
#: what skops raises on a damaged file: its zip archive, its JSON schema, a type it cannot
#: construct (its untrusted-types exception is a TypeError)
_SKOPS_ERRORS = (zipfile.BadZipFile, KeyError, ValueError, TypeError, AttributeError,
                 ImportError, OSError, EOFError)


def load_skops(path: str | Path) -> tuple[Any, str]:
    """The estimator in a skops file and the file's sha256; one line naming the file and the
    check for an oversized, unreadable or untrusted file, or an object that is no classifier."""
    data, digest = read_bounded(path, MAX_SKOPS_BYTES)
    import skops.io as sio

    try:
        untrusted = sio.get_untrusted_types(data=data)
    except _SKOPS_ERRORS as exc:
        raise WeightsError(f"weights {path}: skops: unreadable or truncated "
                           f"({' '.join(str(exc).split())[:100]})") from None
    if untrusted:
        raise WeightsError(f"weights {path}: skops trusted types: refused {', '.join(untrusted[:3])}"
                           " (only scikit-learn's and numpy's own types are loaded)")
    try:
        est = sio.loads(data)
    except _SKOPS_ERRORS as exc:
        raise WeightsError(f"weights {path}: skops: unreadable ({' '.join(str(exc).split())[:100]})"
                           ) from None
    if not (hasattr(est, "predict_proba") and hasattr(est, "fit")):
        raise WeightsError(f"weights {path}: skops: got {type(est).__name__}; expected a fitted "
                           "scikit-learn classifier with predict_proba")
    return est, digest


def check_fits(est: Any, n_features: int, n_classes: int, path: str | Path, data: str) -> None:
    """The estimator was fitted on ``n_features`` columns and predicts classes among
    ``0..n_classes-1`` (the data set's label codes)."""
    got = getattr(est, "n_features_in_", None)
    if got is None:
        raise WeightsError(f"weights {path}: fitted: the estimator is not fitted")
    if int(got) != n_features:
        raise WeightsError(f"weights {path}: features: the model takes {got} features, data "
                           f"{data!r} has {n_features}")
    classes = np.asarray(getattr(est, "classes_", []))
    if classes.dtype.kind not in "iu" and not (classes.dtype.kind == "f" and
                                               np.all(classes == np.round(classes))):
        raise WeightsError(f"weights {path}: classes: the model's classes are not the data's "
                           f"label codes 0..{n_classes - 1}")
    if classes.size == 0 or classes.min() < 0 or classes.max() >= n_classes:
        raise WeightsError(f"weights {path}: classes: got {classes.tolist()[:6]}; data "
                           f"{data!r} has classes 0..{n_classes - 1}")


def predictor(est: Any, n_classes: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """Class probabilities (n, n_classes) of a fitted estimator as the runners read them; a
    class the estimator never saw gets probability 0."""
    cols = np.asarray(est.classes_).astype(np.int64)

    def predict(X: torch.Tensor) -> torch.Tensor:
        x = X.detach().cpu().numpy().reshape(len(X), -1)
        p = np.zeros((len(x), n_classes))
        p[:, cols] = est.predict_proba(x)
        return torch.tensor(p, dtype=torch.float64, device=X.device)

    return predict


def fit_clone(est: Any, X: torch.Tensor, y: torch.Tensor, seed: int) -> Any:
    """A fresh copy of ``est`` (:func:`sklearn.base.clone`) fitted on (X, y); an estimator with
    a ``random_state`` it left unset gets ``seed``, so shadows are reproducible."""
    from sklearn.base import clone

    from core.foundation.seeds import derive

    c = clone(est)
    if "random_state" in c.get_params() and c.get_params()["random_state"] is None:
        c.set_params(random_state=derive(seed, "sklearn_clone"))
    return c.fit(X.detach().cpu().numpy().reshape(len(X), -1), y.detach().cpu().numpy())

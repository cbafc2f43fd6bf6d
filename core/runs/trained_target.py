"""A model trained elsewhere as the membership runner's target (``privlab audit``): the target
stage loads the weights instead of training, every other stage runs as it does for a target
privlab trains (shadows, reference models, attacks, exposure, report, bundle, cache).

- **Members and the pool.** The members are rows of the data set (:mod:`core.data.members`,
  or an ignored 0/1 column of a registered CSV set). The pool is the members and as many
  non-members drawn (seeded) from the other rows; canary records are left out of both. The
  rows outside the pool measure utility and are the population RMIA and the population
  signals read: no model of the run trained on them.
- **The target** is the network of ``model.arch`` with the file's weights
  (:mod:`core.models.weights`: safetensors or a ``weights_only`` state dict, checked against
  the architecture) or a scikit-learn estimator from a skops file
  (:mod:`core.models.sklearn_model`), whose shadows are :func:`sklearn.base.clone` copies.
- **The recipe** the shadows train under is the config's ``train`` block (what the attacker
  is assumed to know); the Result says the target was trained elsewhere and by which files.
- **Canaries** (optional): records the training included at random (``index,label,included``);
  the one-run audit (Steinke et al. 2023, :func:`core.attacks.audit.audit_scores`) scores each
  by the target's −loss and bounds ε from the guesses.

Every check (files, hashes, members against the data, weights against the architecture, the
model against the data) runs in :func:`load` before anything trains.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core.data.errors import DataError

#: the canary file's columns
CANARY_COLUMNS = ("index", "label", "included")


@dataclass
class Loaded:
    """The target trained elsewhere: its ``predict``, the member rows, for a scikit-learn
    target the estimator (shadows clone it), and canaries (rows, labels, included)."""

    predict: Callable[[torch.Tensor], torch.Tensor]
    members: np.ndarray
    framework: str
    estimator: Any = None
    canaries: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def _changed(what: str, path: str, given: str | None, digest: str) -> None:
    if given is not None and given != digest:
        raise DataError(f"target.{what}: {path} changed since the config was made (sha256 "
                        f"{digest[:12]}..., the config holds {given[:12]}...); make the config "
                        "again to audit the current file")


def member_rows(cfg: Any, n: int) -> np.ndarray:
    """The members of ``cfg.target`` checked against a data set of ``n`` rows."""
    from core.data.members import check_members, members_from_flags, read_members

    t = cfg.target
    if t.members is not None:
        idx, digest = read_members(t.members)
        _changed("members_sha256", t.members, t.members_sha256, digest)
        where = t.members
    else:
        from core.data.user import column

        flags, _ = column(cfg.data.name, t.members_column)
        where = f"column {t.members_column!r} of {cfg.data.name!r}"
        idx = members_from_flags(flags, where)
    rows = check_members(idx, n, where, cfg.data.name)
    if cfg.train.members != len(rows):
        raise DataError(f"train.members: got {cfg.train.members}; members {where} lists "
                        f"{len(rows)} rows (set train.members to {len(rows)})")
    return rows


def canary_rows(path: str, given: str | None, n: int, n_classes: int,
                members: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, labels, included) of a canary CSV: rows of the data set outside the members,
    each once, labels among the classes, included 0/1 with both values present."""
    import csv
    import io

    from core.config.trained import sha256_file

    _changed("canaries_sha256", path, given, sha256_file(path, "canaries"))
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"canaries {path}: cannot read ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != CANARY_COLUMNS:
        raise DataError(f"canaries {path}: header: got {reader.fieldnames}; expected "
                        f"{','.join(CANARY_COLUMNS)}")
    try:
        a = np.array([[int(r[c]) for c in CANARY_COLUMNS] for r in reader], dtype=np.int64)
    except (TypeError, ValueError):
        raise DataError(f"canaries {path}: values: every cell must be an integer") from None
    if a.ndim != 2 or len(a) < 10:
        raise DataError(f"canaries {path}: count: got {len(a)} canaries; at least 10")
    rows, labels, inc = a[:, 0], a[:, 1], a[:, 2]
    if rows.min() < 0 or rows.max() >= n or len(np.unique(rows)) != len(rows):
        raise DataError(f"canaries {path}: index: rows must be distinct rows 0..{n - 1}")
    if np.isin(rows, members).any():
        raise DataError(f"canaries {path}: index: row {int(rows[np.isin(rows, members)][0])} is "
                        "also a member; canaries are records outside the members")
    if labels.min() < 0 or labels.max() >= n_classes:
        raise DataError(f"canaries {path}: label: classes are 0..{n_classes - 1}")
    if not np.isin(inc, (0, 1)).all() or inc.min() == inc.max():
        raise DataError(f"canaries {path}: included: 0/1, both present")
    return rows, labels, inc.astype(bool)


def pool(members: np.ndarray, n: int, seed: int, excluded: np.ndarray
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pool rows, is_member, rest): the members and as many non-members (seeded; at most
    half the rows outside, so that rows remain to measure utility on), the rest outside."""
    from core.foundation.seeds import stream

    outside = np.setdiff1d(np.setdiff1d(np.arange(n), members), excluded)
    k = min(len(members), len(outside) // 2)
    chosen = np.sort(stream(seed, "membership", "trained_target").choice(outside, size=k,
                                                                        replace=False))
    rows = np.sort(np.concatenate([members, chosen]))
    return rows, np.isin(rows, members), np.setdiff1d(outside, chosen)


def _probe(predict: Callable[[torch.Tensor], torch.Tensor], rows: torch.Tensor,
           n_classes: int, cfg: Any) -> None:
    """The loaded model answers two rows of the data with finite probabilities over the
    data's classes, else one line: the model does not fit the data set."""
    where = f"weights {cfg.target.weights}: data"
    try:
        p = predict(rows)
    except (RuntimeError, ValueError, IndexError) as exc:
        raise DataError(f"{where}: the model does not take rows of {cfg.data.name!r} "
                        f"({' '.join(str(exc).split())[:100]})") from None
    if tuple(p.shape) != (len(rows), n_classes) or not bool(torch.isfinite(p).all()):
        raise DataError(f"{where}: the model answers {tuple(p.shape)} for {len(rows)} rows of "
                        f"{cfg.data.name!r}; expected finite probabilities over its "
                        f"{n_classes} classes")


def load(cfg: Any, shape: tuple[int, int, int], n_classes: int, X: torch.Tensor,
         factory: Callable[[], torch.nn.Module]) -> Loaded:
    """Every file of ``cfg.target`` read and checked (hashes, members, canaries, the weights
    against the architecture or the estimator against the data, a query of two rows):
    nothing trains before."""
    n, dev = len(X), X.device
    t = cfg.target
    members = member_rows(cfg, n)
    canaries = None if t.canaries is None else canary_rows(
        t.canaries, t.canaries_sha256, n, n_classes, members)
    if t.framework == "sklearn":
        from core.models import sklearn_model as SK

        est, digest = SK.load_skops(t.weights)
        _changed("weights_sha256", t.weights, t.weights_sha256, digest)
        SK.check_fits(est, int(np.prod(shape)), n_classes, t.weights, cfg.data.name)
        predict = SK.predictor(est, n_classes)
        _probe(predict, X[:2], n_classes, cfg)
        return Loaded(predict, members, "sklearn", est, canaries)
    from core.foundation.builds import softmax_predict
    from core.models.weights import load_weights

    net = factory()
    digest = load_weights(net, t.weights, cfg.model.arch)
    _changed("weights_sha256", t.weights, t.weights_sha256, digest)
    predict = softmax_predict(net.to(dev))
    _probe(predict, X[:2], n_classes, cfg)
    return Loaded(predict, members, "torch", None, canaries)


def sklearn_fit(est: Any, X: torch.Tensor, y: torch.Tensor, n_classes: int):
    """The shadow procedure of a scikit-learn target: ``fit(rows, seed) -> Trained``."""
    from core.foundation.builds import Trained
    from core.models.sklearn_model import fit_clone, predictor

    def fit(rows: np.ndarray, seed: int) -> Trained:
        return Trained(predict=predictor(fit_clone(est, X[rows], y[rows], seed), n_classes))

    return fit


def stage_part(cfg: Any) -> dict[str, Any]:
    """The target's share of every stage key: the content hashes of the files the shadows
    depend on (the members, the canaries left out of the pool; a scikit-learn target's file,
    whose estimator the shadows clone), never their paths. A network's weights key only the
    target stage, so auditing other weights of the same architecture on the same members
    reuses the shadow models."""
    t = cfg.target
    out = {"framework": t.framework, "members_sha256": t.members_sha256,
           "members_column": t.members_column, "canaries_sha256": t.canaries_sha256}
    if t.framework == "sklearn":
        out["weights_sha256"] = t.weights_sha256
    return out


def describe(cfg: Any) -> dict[str, Any]:
    """What the Result records of the target: trained elsewhere, by which files, and the
    recipe the shadows were trained under."""
    t = cfg.target
    return {"trained_by": "elsewhere", "framework": t.framework,
            "model": "scikit-learn estimator (skops)" if t.framework == "sklearn"
            else cfg.model.arch,
            "weights": t.weights, "weights_sha256": t.weights_sha256,
            "members": t.members or f"column {t.members_column}",
            "members_sha256": t.members_sha256, "canaries": t.canaries,
            "recipe": {k: v for k, v in cfg.train.model_dump(mode="json").items()
                       if k != "members"} if t.framework == "torch" else "sklearn.base.clone"}


def note(cfg: Any) -> str:
    """The Result's first note: the target was trained elsewhere, not by privlab."""
    d = describe(cfg)
    recipe = d["recipe"] if isinstance(d["recipe"], str) else ", ".join(
        f"{k} {v}" for k, v in d["recipe"].items())
    return (f"target trained elsewhere: privlab loaded its weights ({Path(d['weights']).name}, "
            f"sha256 {str(d['weights_sha256'])[:12]}) and its members ({d['members']}); privlab "
            f"trained only the shadow and reference models, under the stated recipe ({recipe})")


def canary_audit(loaded: Loaded, X: torch.Tensor, spec: Any) -> tuple[dict[str, float], dict]:
    """The one-run audit of the target on its canaries: −loss scores, the guesses of
    :func:`core.attacks.audit.audit_scores` at ``spec.confidence`` (over ``spec.tests``)."""
    from core.attacks.audit import audit_scores
    from core.bounds.audit import bonferroni

    rows, labels, inc = loaded.canaries
    p = loaded.predict(X[torch.as_tensor(rows, device=X.device)])
    y = torch.as_tensor(labels, device=p.device).view(-1, 1)
    score = torch.log(p.gather(1, y).squeeze(1).double().clamp_min(1e-300)).cpu().numpy()
    res = audit_scores(score, inc, confidence=bonferroni(spec.confidence, spec.tests),
                       kind="black_box")
    metrics = {"audit_epsilon_lower": float(res.epsilon_lower), "audit_canaries": float(res.canaries),
               "audit_correct": float(res.correct), "audit_guesses": float(res.guesses),
               "audit_max_provable": float(res.max_provable),
               "audit_confidence": float(res.confidence)}
    info = {**res.to_dict(), "claimed": False, "canaries_given": True}
    return metrics, info


def trained_elsewhere_text(result: Any) -> str | None:
    """The sentence a page opens a trained-elsewhere run with (its own note, whole); None for
    a target privlab trained."""
    info = getattr(result, "info", None) or {}
    if (info.get("target") or {}).get("trained_by") != "elsewhere":
        return None
    prefix = "target trained elsewhere: "
    note = next((str(n) for n in info.get("notes", []) if str(n).startswith(prefix)), "")
    return ("**The target was trained elsewhere, not by privlab**"
            + (f": {note.removeprefix(prefix)}." if note else "."))

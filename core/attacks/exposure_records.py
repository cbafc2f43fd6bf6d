"""Per-record scores of a stored Result, one extractor per attack family (:mod:`core.report.exposure`
reads them; each family declares its extractor in :data:`core.foundation.parts.FAMILIES`,
``Family.exposure``).

Every extractor returns a :class:`RecordScores` oriented **higher = more exposed**:

- membership: the attack's member score (higher = member), averaged over the target models
  that trained on the record (``record_score_<attack>``, :func:`core.runs.membership_stages.
  record_arrays`); records no target trained on are NaN (not scored);
- gradient leakage: the PSNR (dB) of the record's matched reconstruction (``recon_<attack>_psnr``
  beside ``record_index``);
- Fisher information: the release's per-example η = η(σ = 1) / σ (``eta_example`` over
  ``fil_sigma``; Guo et al.: η bounds the variance of any unbiased reconstruction, 1/η²), one
  record per training row of the FIL view;
- attribute inference: the strongest attacker's calibrated probability of the record's true
  private value (``record_confidence``; chance 1/k).

``records(index)`` loads the records themselves (pictures for image data, table rows for
tabular) from the data set the run read; it is lazy, so scores alone never load data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.foundation.result import Result

#: what a stored Result lacks when it ran before per-record arrays existed
OLD_RUN = "this run was stored before per-record scores were kept; run it again to see them"


@dataclass(frozen=True)
class Records:
    """Some records as a page shows them: ``images`` (n, C, H, W) in [0, 1] for image data,
    else ``rows`` (one dict per record: label, private values, the first feature columns);
    ``labels`` the task label of each record, by name."""

    labels: list[str]
    images: np.ndarray | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class RecordScores:
    """One family's per-record score of a run: ``values[i]`` is the score of data-set record
    ``index[i]`` (NaN: not scored), higher = more exposed. ``score`` names the array it was
    read from, ``title`` says what it is in words, ``reference`` a level to read it against
    (chance, or None), ``attack`` the attack's config name (None where the family has one
    score), ``scored`` which records are candidates and ``named`` what an index is, in
    words."""

    family: str
    score: str
    title: str
    unit: str
    index: np.ndarray
    values: np.ndarray
    scored: str
    records: Callable[[np.ndarray], Records]
    attack: str | None = None
    reference: float | None = None
    #: what a record's index is
    named: str = "its row in the data set"


def _need(result: Result, *names: str) -> None:
    if any(n not in result.artifacts for n in names):
        raise ValueError(OLD_RUN)


def _data(result: Result) -> Any:
    """The run's data block as its kind's config types it: the block alone is validated, not
    the run's whole config again (a page shows records of a run it validated already)."""
    from core.config.schema import CONFIG_MODELS

    field = CONFIG_MODELS[result.kind].model_fields["data"]
    return field.annotation.model_validate(result.config.get("data") or {})


def _unit_images(imgs: np.ndarray) -> np.ndarray:
    """Pixels into [0, 1] for display (data sets keep their own range)."""
    x = np.asarray(imgs, dtype=np.float64)
    lo, hi = float(np.nanmin(x)), float(np.nanmax(x))
    return x if lo >= 0.0 and hi <= 1.0 else (x - lo) / max(hi - lo, 1e-12)


#: feature columns a table row shows after the label and the private values
TABLE_COLUMNS = 6


def dataset_records(result: Result) -> Callable[[np.ndarray], Records]:
    """``records(index)`` over the data set the run loaded (its config's data and seed)."""

    def load(index: np.ndarray) -> Records:
        from core.data import load_dataset

        ds = load_dataset(_data(result), int(result.seed))
        idx = np.asarray(index, dtype=np.int64)
        labels = [str(ds.label_names[int(ds.y[i])]) for i in idx]
        if ds.is_image:
            return Records(labels=labels, images=_unit_images(ds.images(idx)))
        names = list(ds.feature_names) or [f"x{j}" for j in range(ds.X.shape[1])]
        rows = []
        for i, lab in zip(idx, labels, strict=True):
            row: dict[str, Any] = {"record": int(i), ds.task_name or "label": lab}
            for a, vals in ds.attributes.items():
                row[a] = str(ds.attribute_values[a][int(vals[i])])
            for j, n in enumerate(names[:TABLE_COLUMNS]):
                row[n] = round(float(ds.X[i, j]), 3)
            rows.append(row)
        return Records(labels=labels, rows=rows)

    return load


def membership_records(result: Result, attack: str | None = None) -> RecordScores:
    """Membership: ``attack``'s (default: the run's strongest) mean member score over the
    target models that trained on each pool record."""
    from core.foundation.parts import attack_by_config_name

    name = attack or str(result.info.get("best_attack", ""))
    _need(result, "record_index", f"record_score_{name}")
    part = attack_by_config_name("membership", name)
    targets = int((result.config.get("attack") or {}).get("targets", 1))
    pooled = part.pools_targets and targets > 1
    over = (f"averaged over the {targets} target models' members" if pooled
            else "on the target model's members")
    return RecordScores(
        family="membership", score=f"record_score_{name}",
        title=f"{part.title} member score, {over}", unit="",
        index=np.asarray(result.artifacts["record_index"], np.int64),
        values=np.asarray(result.artifacts[f"record_score_{name}"], np.float64),
        scored="pool records a target model trained on", records=dataset_records(result),
        attack=name)


def gradient_records(result: Result, attack: str | None = None) -> RecordScores:
    """Gradient leakage: the PSNR of each target image's matched reconstruction by ``attack``
    (default: the run's strongest inverter)."""
    from core.foundation.parts import attack_by_config_name

    name = attack or str(result.info.get("best_inverter", ""))
    _need(result, "record_index", f"recon_{name}_psnr")
    part = attack_by_config_name("gradient_leakage", name)
    return RecordScores(
        family="gradient_leakage", score=f"recon_{name}_psnr",
        title=f"PSNR of the {part.title} reconstruction", unit="dB",
        index=np.asarray(result.artifacts["record_index"], np.int64),
        values=np.asarray(result.artifacts[f"recon_{name}_psnr"], np.float64),
        scored="target images whose uploads were inverted", records=dataset_records(result),
        attack=name)


def fil_view_records(result: Result) -> Callable[[np.ndarray], Records]:
    """``records(index)`` over the training rows of the run's FIL view."""

    def load(index: np.ndarray) -> Records:
        from core.data.fil_views import fil_view

        d = _data(result)
        view = fil_view(d.name, classes=tuple(d.classes), pca_dim=d.pca_dim,
                        adult_view=d.adult_view, data_dir=d.data_dir,
                        max_samples=d.max_samples, n_samples=d.n_samples,
                        n_features=d.n_features, correlation=d.correlation,
                        outlier_fraction=d.outlier_fraction, test_fraction=d.test_fraction,
                        seed=int(result.seed))
        idx = np.asarray(index, dtype=np.int64)
        labels = [str(view.label_names[int(view.y[i])]) for i in idx]
        if view.images is not None and view.image_shape is not None:
            imgs = np.asarray(view.images[idx]).reshape((-1, *view.image_shape))
            return Records(labels=labels, images=_unit_images(imgs))
        rows = [{"record": int(i), "label": lab,
                 **{n: round(float(view.X[i, j]), 3)
                    for j, n in enumerate(view.feature_names[:TABLE_COLUMNS])}}
                for i, lab in zip(idx, labels, strict=True)]
        return Records(labels=labels, rows=rows)

    return load


def fil_records(result: Result, attack: str | None = None) -> RecordScores:
    """Fisher information: each training row's η of the release (η at σ = 1 over σ)."""
    _need(result, "eta_example")
    eta = np.asarray(result.artifacts["eta_example"], np.float64)
    sigma = float(result.metrics.get("fil_sigma", 1.0))
    return RecordScores(
        family="fisher_information", score="eta_example",
        title=f"per-example Fisher information loss η of the release (σ = {sigma:.3g})",
        unit="", index=np.arange(len(eta), dtype=np.int64), values=eta / sigma,
        scored="training rows of the FIL view", records=fil_view_records(result), attack=None,
        named="its row number there")


def attribute_records(result: Result, attack: str | None = None) -> RecordScores:
    """Attribute inference: the strongest attacker's probability of each test record's true
    private value (the one attacker whose guesses a run keeps per record)."""
    from core.foundation.parts import attack_titles

    _need(result, "record_index", "record_confidence")
    name = str(result.info.get("best_attacker", ""))
    if attack is not None and attack != name:
        raise ValueError(f"attack: got {attack!r}; this run kept per-record guesses of "
                         f"{name!r} (its strongest attacker) only")
    attr = str(result.info.get("private_attribute", "private attribute"))
    k = len(result.info.get("attribute_values") or []) or None
    title = attack_titles("attribute_privacy").get(name, name)
    return RecordScores(
        family="attribute_privacy", score="record_confidence",
        title=f"{title}'s confidence in the record's true {attr}", unit="",
        index=np.asarray(result.artifacts["record_index"], np.int64),
        values=np.asarray(result.artifacts["record_confidence"], np.float64),
        scored="test records the attackers guess", records=dataset_records(result),
        attack=name, reference=None if k is None else 1.0 / k)

"""Label-only membership inference (Choquette-Choo, Tramèr, Carlini & Papernot, "Label-Only
Membership Inference Attacks", ICML 2021): the adversary sees only the predicted label of the
released model on inputs it queries, never a probability.

Two signals, each computed once per model (the target, every shadow) on the candidate records:

- ``label_only_augmentation``: whether the model still predicts the true label of each
  candidate's augmented copies (§4.1, the data-augmentation attack): the image itself, its
  horizontal flip, and both shifted by one pixel up, down, left and right (zero filled): 10
  queries. Tabular rows (``image_shape`` (1, 1, d)) have no flips or shifts; they are replaced
  by the row itself and 9 copies with small Gaussian feature noise (σ = 0.05 × the queried
  rows' per-feature standard deviation), so the signal stays a robustness vector there too.
- ``label_only_noise``: the same correctness on 16 Gaussian-noised copies at each of three
  noise scales σ ∈ {0.25, 0.5, 1} × the queried rows' standard deviation (§4.2's noise
  robustness, a cheap proxy of the distance to the decision boundary: a training record sits
  farther inside its class region, so more of its noisy copies keep their label).

Every model sees the same perturbed copies (seeded by the run's seed): the comparison between
target and shadows is then about the models, not the draws.

Two attacks read them. Each scores a candidate by a per-record likelihood ratio calibrated on
the shadow models (the paper calibrates its threshold on shadow models; per-record calibration
is LiRA's refinement, Carlini et al. 2022): for each query group g (an augmentation; a noise
scale with its copies pooled) the rate at which IN shadows and OUT shadows keep the label,
ρ_in[i, g] and ρ_out[i, g], estimated from the shadows with a prior pulling each toward that
group's mean over all candidates (α = 2 pseudo-observations, since a row has only K/2 shadows
of each kind); the score is the log-likelihood ratio of the target's k[i, g] correct of R
queries, Σ_g k ln(ρ_in/ρ_out) + (R − k) ln((1 − ρ_in)/(1 − ρ_out)). Both pool over targets
as LiRA does (each shadow in turn as the target, against the others).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.foundation.knowledge import ThreatModel
from core.foundation.parts import ATTACKS, SIGNALS, AttackPart, Signal

AUGMENTATION = "label_only_augmentation"
NOISE = "label_only_noise"
#: one-pixel shifts (dy, dx) of each image and of its horizontal flip
SHIFTS = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))
#: Gaussian noise scales, in units of the queried rows' standard deviation
NOISE_SCALES = (0.25, 0.5, 1.0)
NOISE_COPIES = 16
#: tabular rows: the row and this many copies with feature noise of TABULAR_SCALE × each std
TABULAR_COPIES = 9
TABULAR_SCALE = 0.05
#: prior pseudo-observations pulling a row's IN / OUT rate toward its group's mean
PRIOR_STRENGTH = 2.0
_RATE_FLOOR = 1e-3


def _correct(predict, X, y) -> np.ndarray:
    """(n,) bool: the model's predicted label (argmax of ``predict``) is the true one."""
    return (predict(X).argmax(-1) == y).cpu().numpy()


def _shift(img, dy: int, dx: int):
    """Images (n, c, h, w) moved by (dy, dx) pixels, the vacated border zero filled."""
    import torch

    out = torch.zeros_like(img)
    h, w = img.shape[-2:]
    out[..., max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] = \
        img[..., max(-dy, 0):h + min(-dy, 0), max(-dx, 0):w + min(-dx, 0)]
    return out


def augmentation_signal(predict, X, y, *, image_shape: tuple[int, ...],
                        seed: int) -> np.ndarray:
    """(n, 10, 1) bool: the predicted label is the true one on each augmented copy (images:
    flips × one-pixel shifts; tabular rows: the row and feature-noised copies)."""
    import torch

    from core.foundation.seeds import torch_stream

    c, h, w = image_shape
    if h == 1:  # tabular: no spatial augmentation exists, small feature noise instead
        g = torch_stream(seed, "label_only", "tabular")
        std = X.std(0, keepdim=True)
        cols = [_correct(predict, X, y)]
        for _ in range(TABULAR_COPIES):
            noise = torch.randn(X.shape, generator=g).to(X.device)
            cols.append(_correct(predict, X + TABULAR_SCALE * std * noise, y))
        return np.stack(cols, 1)[:, :, None]
    img = X.reshape(-1, c, h, w)
    cols = []
    for flipped in (img, torch.flip(img, dims=(-1,))):
        for dy, dx in SHIFTS:
            cols.append(_correct(predict, _shift(flipped, dy, dx).reshape(len(X), -1), y))
    return np.stack(cols, 1)[:, :, None]


def noise_signal(predict, X, y, *, image_shape: tuple[int, ...], seed: int) -> np.ndarray:
    """(n, 3, 16) bool: the predicted label is the true one on each Gaussian-noised copy, per
    noise scale (σ ∈ NOISE_SCALES × the queried rows' standard deviation)."""
    import torch

    from core.foundation.seeds import torch_stream

    g = torch_stream(seed, "label_only", "noise")
    std = float(X.std())
    out = np.zeros((len(X), len(NOISE_SCALES), NOISE_COPIES), dtype=bool)
    for s, scale in enumerate(NOISE_SCALES):
        for r in range(NOISE_COPIES):
            noise = torch.randn(X.shape, generator=g).to(X.device)
            out[:, s, r] = _correct(predict, X + scale * std * noise, y)
    return out


def _rates(hits: np.ndarray, use: np.ndarray, R: int) -> np.ndarray:
    """Per-row rate (n, G) of kept labels over the shadows marked in ``use`` (n, K), shrunk
    toward each group's mean over all rows with :data:`PRIOR_STRENGTH` pseudo-observations.
    ``hits`` (K, n, G): correct queries of R per shadow, row and group."""
    w = use.T[:, :, None]  # (K, n, 1)
    k = (hits * w).sum(0)  # (n, G) correct
    trials = w.sum(0) * R  # (n, 1) queries
    group = k.sum(0) / max(float(trials.sum()), 1.0)  # (G,) the group's mean rate
    rate = (k + PRIOR_STRENGTH * group) / (trials + PRIOR_STRENGTH)
    return np.clip(rate, _RATE_FLOOR, 1.0 - _RATE_FLOOR)


def calibrated_score(target: np.ndarray, shadows: np.ndarray, shadow_in: np.ndarray) -> np.ndarray:
    """Per-record log-likelihood ratio (higher = member) of the target's correctness
    ``target`` (n, G, R) under the IN vs OUT shadows' rates, from ``shadows`` (K, n, G, R) and
    ``shadow_in`` (n, K). Every row uses as many IN (and OUT) shadows as the row with the
    fewest (a shadow target leaves unequal counts; unequal priors would bias the ranking)."""
    t = np.asarray(target, dtype=np.float64)
    sh = np.asarray(shadows, dtype=np.float64)
    if t.ndim != 3 or sh.shape[1:] != t.shape or sh.shape[0] < 2:
        raise ValueError(f"shadow signal: got shape {sh.shape}; expected (K >= 2, "
                         f"{', '.join(map(str, t.shape))}) like the target's")
    ins = np.asarray(shadow_in, dtype=bool)
    if ins.shape != (t.shape[0], sh.shape[0]):
        raise ValueError(f"shadow_in: got shape {ins.shape}; expected ({t.shape[0]}, "
                         f"{sh.shape[0]})")
    R = t.shape[2]
    n_in, n_out = int(ins.sum(1).min()), int((~ins).sum(1).min())
    if n_in == 0 or n_out == 0:
        raise ValueError("shadow_in: some row has no IN or no OUT shadow; label-only "
                         "calibration needs both")
    use_in = ins & (np.cumsum(ins, 1) <= n_in)
    use_out = ~ins & (np.cumsum(~ins, 1) <= n_out)
    hits = sh.sum(3)  # (K, n, G)
    r_in, r_out = _rates(hits, use_in, R), _rates(hits, use_out, R)
    k = t.sum(2)
    llr = k * np.log(r_in / r_out) + (R - k) * np.log((1 - r_in) / (1 - r_out))
    return llr.sum(1)


def _attack(name: str, release: Any):
    from core.attacks.membership import MembershipScores

    if release.shadow_in is None:
        raise ValueError(f"release.shadow_in: the {name} attack is calibrated on shadow "
                         "models; the release has none")
    return MembershipScores(calibrated_score(release.signal(name), release.shadow_signal(name),
                                        release.shadow_in))


def augmentation_on_release(release: Any, knowledge: Any = None, **_: Any):
    """The augmentation attack (§4.1): :func:`calibrated_score` of the correctness vector."""
    return _attack(AUGMENTATION, release)


def noise_on_release(release: Any, knowledge: Any = None, **_: Any):
    """The noise-robustness attack (§4.2): :func:`calibrated_score` of the kept-label counts
    at each noise scale."""
    return _attack(NOISE, release)


_HERE = "core.catalog.label_only"
SIGNALS.register(AUGMENTATION, Signal(
    name=AUGMENTATION, title="predicted label on augmented copies",
    function=f"{_HERE}:augmentation_signal",
    description="whether the model predicts the true label of each candidate's horizontal "
                "flip and one-pixel shifts (tabular rows: small feature noise), (n, 10, 1)"))
SIGNALS.register(NOISE, Signal(
    name=NOISE, title="predicted label on Gaussian-noised copies",
    function=f"{_HERE}:noise_signal",
    description="whether the model predicts the true label of 16 Gaussian-noised copies of "
                "each candidate at σ = 0.25, 0.5, 1 × the rows' std, (n, 3, 16)"))

_THREAT = {
    "sees": "only the predicted labels of the released model on queried inputs",
    "knows": "each candidate record (x, y); a shadow pool of the same distribution and the "
             "training algorithm, defense included (it trains shadow models the target's way "
             "and queries them as it queries the target)",
    "goal": "decide whether each candidate record was in the training set"}
ATTACKS.register("mia_label_only_aug", AttackPart(
    name="mia_label_only_aug",
    title="label-only, augmentations (Choquette-Choo)", accepts=("model",),
    threat=ThreatModel(**_THREAT), function=f"{_HERE}:augmentation_on_release", fresh=True,
    family="membership", config_name="label_only_aug", needs=("labels", "shadows"),
    signals=(AUGMENTATION,), pools_targets=True))
ATTACKS.register("mia_label_only_noise", AttackPart(
    name="mia_label_only_noise",
    title="label-only, noise robustness (Choquette-Choo)", accepts=("model",),
    threat=ThreatModel(**_THREAT), function=f"{_HERE}:noise_on_release", fresh=True,
    family="membership", config_name="label_only_noise", needs=("labels", "shadows"),
    signals=(NOISE,), pools_targets=True))

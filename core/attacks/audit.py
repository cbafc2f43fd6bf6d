"""One-run privacy audit with canaries (Steinke, Nasr & Jagielski, "Privacy Auditing with One
(1) Training Run", NeurIPS 2023): every defense, DP or not, gets an audited ε from one training.

m canaries are each included independently with probability ½ (fixed for the run); the defense
trains once; the auditor scores every canary, guesses "in" for the k₊ highest scores and "out"
for the k₋ lowest, abstains on the rest, and turns the number of correct guesses into an ε
lower bound at a stated confidence (:mod:`core.bounds.audit`, Theorem 3.1).

- **White box** (:class:`GradientCanaries`): gradient canaries, Dirac (one random coordinate
  of the parameter vector, random sign) or random unit directions, each of norm C (DP-SGD's
  clipping norm), added by the training to the summed clipped gradient before the noise
  (DP-SGD) or to the batch gradient where one row's gradient goes (plain training, the κ
  channel's noisy training, Inf2Guard): the :class:`core.engine.noisy_training.GradientCanary`
  protocol. Each included canary takes part in a step with the training's row sampling rate
  (Poisson q for DP-SGD), as a training row would, so that the accountant's ε covers it. The
  score of canary i is −⟨cᵢ/‖cᵢ‖, θ_T − θ₀⟩: a descent step moves θ against an included canary.
  Gradient canaries enter *after* any data-space noise: they audit the gradient channel, so
  a defense that noises the inputs (the κ channel) is measured by the black-box audit only.
- **Black box** (:func:`black_box_canaries`): canary records (rows the model never trains on,
  with their labels re-drawn among the other classes) inserted into the training set; scored
  by −loss of the released model.

:func:`audit_one_run` is the one entry point: it takes the defense's own training procedure
with a canary hook (``train_fn``) and returns an :class:`AuditResult`. The guess counts tried
on one run are Bonferroni-corrected inside; a grid of G audited settings is corrected by the
caller (:func:`core.bounds.audit.bonferroni`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from core.bounds.audit import bonferroni, epsilon_lower_bound, max_provable_epsilon
from core.foundation.checks import check_choice, check_int, check_range
from core.foundation.seeds import derive, stream

__all__ = ["AuditResult", "GradientCanaries", "audit_one_run", "audit_scores",
           "black_box_canaries", "guess_counts", "noise_removed"]

#: canary shapes of the white-box audit
DIRECTIONS: tuple[str, ...] = ("dirac", "random")
#: audit kinds
KINDS: tuple[str, ...] = ("white_box", "black_box")
#: random-direction canaries keep their (m, D) directions in memory: at most this many floats
MAX_RANDOM_FLOATS = 2**25


@dataclass(frozen=True)
class AuditResult:
    """An audited ε: ``epsilon_lower`` from ``correct`` of ``guesses`` guesses at
    ``confidence`` (already corrected for the ``guesses_tried`` counts), the most those guesses
    could prove (``max_provable``: all correct), ``canaries`` m, ``included`` of them in,
    ``kind``, and ``delta`` of Theorem 3.1's δ term."""

    epsilon_lower: float
    correct: int
    guesses: int
    confidence: float
    max_provable: float
    kind: str
    canaries: int
    included: int
    delta: float = 0.0
    guesses_tried: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["guesses_tried"] = list(self.guesses_tried)
        return out


def guess_counts(canaries: int) -> tuple[int, ...]:
    """The guess counts r tried on one run by default: m/10, m/4, m/2 and m (each split evenly
    between "in" and "out"): few, so the Bonferroni correction over them costs little, and
    spread, so a weak signal is read by few confident guesses and a strong one by many."""
    check_int("canaries", canaries, 2)
    return tuple(sorted({max(2, round(canaries * f)) for f in (0.1, 0.25, 0.5, 1.0)}))


def audit_scores(scores: np.ndarray, included: np.ndarray, *, confidence: float = 0.95,
                 guesses: Sequence[int] | None = None, delta: float = 0.0,
                 kind: str = "white_box") -> AuditResult:
    """Guess and bound: for each r in ``guesses`` (default :func:`guess_counts`), "in" for the
    ⌈r/2⌉ highest ``scores``, "out" for the ⌊r/2⌋ lowest; the audited ε of each r at the
    Bonferroni-corrected confidence, and the r that proves the most. Ties are broken by the
    canary's index, which carries nothing about its (random) inclusion."""
    s = np.asarray(scores, dtype=np.float64)
    inc = np.asarray(included, dtype=bool)
    if s.ndim != 1 or s.shape != inc.shape:
        raise ValueError(f"scores: got shape {s.shape}; expected one score per canary "
                         f"({inc.shape})")
    m = len(s)
    tried = tuple(guess_counts(m) if guesses is None else (int(r) for r in guesses))
    for r in tried:
        check_int("guesses", r, 1, m, note="at most the number of canaries")
    conf = bonferroni(confidence, len(tried))
    s = np.where(np.isfinite(s), s, -np.inf)  # a canary the run could not score: "out"-most
    order = np.argsort(-s, kind="stable")  # highest score first
    best: tuple[float, int, int] | None = None
    for r in tried:
        k_plus = (r + 1) // 2
        k_minus = r - k_plus
        top, bottom = order[:k_plus], order[m - k_minus:] if k_minus else order[:0]
        v = int(inc[top].sum() + (~inc[bottom]).sum())
        eps = epsilon_lower_bound(v, r, confidence=conf, delta=delta, canaries=m)
        if best is None or eps > best[0]:
            best = (eps, v, r)
    eps, v, r = best
    return AuditResult(epsilon_lower=eps, correct=v, guesses=r, confidence=float(confidence),
                       max_provable=max_provable_epsilon(r, confidence=conf, delta=delta,
                                                         canaries=m),
                       kind=kind, canaries=m, included=int(inc.sum()), delta=float(delta),
                       guesses_tried=tried)


def draw_included(canaries: int, seed: int) -> np.ndarray:
    """Each canary in with probability ½, independently (the audit's secret)."""
    check_int("canaries", canaries, 2)
    return stream(seed, "audit", "include").random(int(canaries)) < 0.5


class GradientCanaries:
    """White-box gradient canaries (the :class:`~core.engine.noisy_training.GradientCanary`
    protocol): ``m`` canaries of norm ``norm`` (C), ``direction`` ``"dirac"`` (a distinct
    random coordinate each, random sign) or ``"random"`` (a uniform random unit direction),
    included with probability ½ (:attr:`included`, fixed at construction).

    For DP-SGD, C must not exceed the clipping norm S: a canary is audited as one example, and
    DP-SGD bounds an example's clipped gradient by S (C = S is the strongest such example)."""

    def __init__(self, canaries: int, *, norm: float = 1.0, direction: str = "dirac",
                 seed: int = 0) -> None:
        self.m = check_int("canaries", canaries, 2)
        self.norm = check_range("norm", norm, 0.0, lo_open=True)
        self.direction = check_choice("direction", direction, DIRECTIONS)
        self.seed = int(seed)
        self.included = draw_included(self.m, self.seed)
        self._params: list[Tensor] | None = None
        self._steps = 0

    # -- the protocol the trainings call -------------------------------------------------------

    def bind(self, params: list[Tensor]) -> None:
        """Lay the canaries out over ``params`` (flattened in order) and record θ₀."""
        params = list(params)
        sizes = [p.numel() for p in params]
        D = int(sum(sizes))
        if self.m > D:
            raise ValueError(f"canaries: got {self.m}; at most the {D} parameters of the model")
        dev = params[0].device
        self._params, self._sizes, self._shapes = params, sizes, [p.shape for p in params]
        self._theta0 = torch.cat([p.detach().reshape(-1) for p in params]).double().cpu()
        rng = stream(self.seed, "audit", "canaries", self.direction)
        if self.direction == "dirac":
            self._coords = torch.as_tensor(rng.choice(D, size=self.m, replace=False))
            self._signs = torch.as_tensor(rng.choice([-1.0, 1.0], size=self.m))
            self._U = None
        else:
            if self.m * D > MAX_RANDOM_FLOATS:
                raise ValueError(f"canaries: got {self.m} random directions over {D} "
                                 f"parameters; at most {MAX_RANDOM_FLOATS // D} (use Dirac)")
            U = torch.as_tensor(rng.standard_normal((self.m, D)), dtype=torch.float32)
            self._U = U / U.norm(dim=1, keepdim=True)
        inc = torch.as_tensor(self.included)
        self._full = self._sum(inc).to(dev)  # every included canary: the q = 1 step term
        self._gen = torch.Generator().manual_seed(derive(self.seed, "audit", "steps", bits=63))

    def _sum(self, mask: Tensor) -> Tensor:
        """C·Σ_{i ∈ mask} uᵢ as one flat float32 vector (CPU)."""
        D = int(sum(self._sizes))
        out = torch.zeros(D, dtype=torch.float32)
        if self._U is None:
            out.index_add_(0, self._coords[mask], (self.norm * self._signs[mask]).float())
        elif bool(mask.any()):
            out += self.norm * self._U[mask].sum(0)
        return out

    def step_term(self, sample_rate: float) -> list[Tensor] | None:
        """The step's canary sum per parameter: every included canary at rate 1, else each
        included canary with probability ``sample_rate`` (a Poisson-sampled row)."""
        if self._params is None:
            raise RuntimeError("GradientCanaries: bind(params) must be called before training")
        self._steps += 1
        if sample_rate >= 1.0:
            flat = self._full
        else:
            take = torch.rand(self.m, generator=self._gen) < float(sample_rate)
            mask = take & torch.as_tensor(self.included)
            if not bool(mask.any()):
                return None
            flat = self._sum(mask).to(self._full.device)
        return [t.view(shape) for t, shape in zip(flat.split(self._sizes), self._shapes,
                                                  strict=True)]

    # -- the auditor's reading -----------------------------------------------------------------

    @property
    def steps(self) -> int:
        """Optimiser steps the training asked for a canary term (0: the hook was never used)."""
        return self._steps

    def scores(self) -> np.ndarray:
        """−⟨uᵢ, θ_T − θ₀⟩ for every canary (uᵢ its unit direction): high when included."""
        if self._params is None:
            raise RuntimeError("GradientCanaries: the training never bound the canaries")
        theta = torch.cat([p.detach().reshape(-1) for p in self._params]).double().cpu()
        delta = theta - self._theta0
        if self._U is None:
            proj = self._signs.double() * delta[self._coords]
        else:
            proj = self._U.double() @ delta
        return (-proj).numpy()


def black_box_canaries(X: Tensor, y: Tensor, canaries: int, n_classes: int, *,
                       seed: int) -> tuple[Tensor, Tensor]:
    """``canaries`` records from (X, y) (rows the audited model never trains on otherwise),
    each with its label re-drawn uniformly among the other classes, so that only a model
    that trained on it fits it (a mislabelled record is the classic black-box canary)."""
    check_int("canaries", canaries, 2, len(X), note="at most the rows offered")
    check_int("n_classes", n_classes, 2)
    rng = stream(seed, "audit", "records")
    rows = torch.as_tensor(np.sort(rng.choice(len(X), size=canaries, replace=False)),
                           device=X.device)
    shift = torch.as_tensor(rng.integers(1, n_classes, size=canaries), device=y.device)
    return X[rows], (y[rows] + shift) % n_classes


def audit_one_run(train_fn: Callable[..., Any], *, kind: Literal["white_box", "black_box"],
                  canaries: int = 1000, confidence: float = 0.95, seed: int = 0,
                  delta: float = 0.0, guesses: Sequence[int] | None = None,
                  direction: str = "dirac", norm: float = 1.0,
                  records: tuple[Tensor, Tensor] | None = None) -> AuditResult:
    """Audit one training run of a defense (Steinke, Nasr & Jagielski 2023).

    ``train_fn`` is the defense's own training procedure with a canary hook:

    - ``kind="white_box"``: ``train_fn(canary)`` trains once, passing ``canary`` (a
      :class:`GradientCanaries` of ``canaries`` canaries of norm ``norm``) to the training
      function's ``canary=`` argument; the model is read through the bound parameters;
    - ``kind="black_box"``: ``train_fn(X_in, y_in)`` trains once with the included canary
      records (a subset of ``records``, from :func:`black_box_canaries`) added to its
      training rows and returns ``loss(X, y) -> per-row losses`` of the released model.

    ``confidence`` is this audit's (the guess counts tried are corrected inside); ``delta``
    the δ of Theorem 3.1's bound (0: the ε-DP form; the accountant's δ for a DP claim).
    """
    check_choice("kind", kind, KINDS)
    check_range("delta", delta, 0.0, 1.0)
    if kind == "white_box":
        hook = GradientCanaries(canaries, norm=norm, direction=direction, seed=seed)
        train_fn(hook)
        if hook.steps == 0:
            raise ValueError("train_fn: the training never asked for a canary term; pass "
                             "the canary to the training function's canary= argument")
        return audit_scores(hook.scores(), hook.included, confidence=confidence,
                            guesses=guesses, delta=delta, kind=kind)
    if records is None:
        raise ValueError("records: got None; the black-box audit needs canary records "
                         "(black_box_canaries)")
    Xc, yc = records
    check_int("canaries", len(Xc), 2)
    included = draw_included(len(Xc), seed)
    mask = torch.as_tensor(included, device=Xc.device)
    loss = train_fn(Xc[mask], yc[mask])
    scores = -np.asarray(loss(Xc, yc), dtype=np.float64)
    return audit_scores(scores, included, confidence=confidence, guesses=guesses, delta=delta,
                        kind=kind)


@contextlib.contextmanager
def noise_removed() -> Iterator[None]:
    """A deliberately broken DP-SGD, for the audit's self-test: inside this block Opacus adds
    zero noise while the accountant still charges the noise multiplier it was given (the bug
    a one-run audit must catch). Patches Opacus' noise generator in both DP optimisers."""
    from unittest import mock

    import opacus.optimizers.optimizer as plain
    import opacus.optimizers.optimizer_fast_gradient_clipping as ghost

    from core.foundation.overrides import training_override

    def no_noise(std: float, reference: Tensor, generator=None, secure_mode: bool = False):
        return torch.zeros_like(reference)

    # in every cache and stage key while it lasts: a store never serves the correct run's
    # model or audit for the broken one (nor the other way round)
    with mock.patch.object(plain, "_generate_noise", no_noise), \
            mock.patch.object(ghost, "_generate_noise", no_noise), \
            training_override("dpsgd_noise_removed"):
        yield

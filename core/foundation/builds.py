"""A defense as a wrapper around a family's training procedure (Flower's habit: a defense wraps
the procedure; the runner's pipeline stays the same).

A registered defense part (:mod:`core.foundation.parts`) names one builder per family
(:meth:`core.foundation.parts.DefensePart.builder_for`); :func:`build_defense` calls it with the validated
block and the run's context and returns a :class:`DefenseBuild`: what the runner applies, and
nothing it has to branch on:

- ``train(model, X, y, *, seed, X_test=None, y_test=None, progress=None, canary=None) ->
  Trained``: the training procedure (the target's, and every shadow's: the attacker knows the
  algorithm; ``canary``: one-run audit canaries, :mod:`core.attacks.audit`);
  ``model`` is a freshly initialised classifier it trains in place (a defense with its own
  networks, such as Inf2Guard, builds them and ignores it);
- ``train_many(model_factory, X, y, in_mask, *, seed) -> true_prob``: K models of the same
  procedure at once, where the defense has a batched form (plain training); ``true_prob(X, y)``
  gives (K, n) and plain training's also offers ``probs(X)`` (K, n, C) and ``predictor(k)``
  (one model's query interface, what a signal is computed on:
  :class:`core.defenses.central.BatchedShadows`);
- ``prepare(model) -> model``: the network as the procedure can train it, applied by the
  runner to every fresh model so that the model it keeps is the one trained (DP-SGD's
  BatchNorm → GroupNorm); the model itself for every other defense;
- ``perturb`` (x_flat, generator) -> x̃ with ``noise_mode``: the data-space release transform
  each device applies inside a federated loop (the κ channel);
- ``channel(meta) -> (z, S) | None``: the uploaded-gradient channel of one observed step
  (DP-SGD's clip S and noise multiplier z, known after training);
- ``report(meta, *, steps, batch_size) -> Report``: the budget the defense reports once the
  procedure ran (ε from the accountant, κ over the run, ...);
- ``bound(spectrum, meta, *, steps, steps_observed, batch_size) -> InformationBound | None``:
  what one observed round and the whole run can say about the data, in nats (Theorem 1 of
  spec 001), None where nothing bounds it;
- ``metrics``, ``artifacts``, ``info``, ``notes``: what is known at build time.

The attribute-privacy family keeps its own small interface
(:class:`core.defenses.federated.FederatedDefense`: the upload transform of the FedAvg loop).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.foundation.parts import DEFENSES
from core.foundation.registry import load_object


@dataclass
class Trained:
    """A model trained under a defense, as an attacker queries it: ``predict`` (class
    probabilities), for Inf2Guard ``represent`` (r), for a game defense ``adversary(X, y)``
    (its in-training adversary's Pr(member) of rows X with labels y), and what the procedure
    reports: ``steps``, ``curves``, ``meta`` (ε, accountant, ...)."""

    predict: Callable[[Any], Any]
    model: Any = None
    represent: Callable[[Any], Any] | None = None
    adversary: Callable[[Any], Any] | None = None
    steps: int = 0
    curves: dict[str, list[float]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    """Budget metrics, info and notes a defense adds once its procedure has run."""

    metrics: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class InformationBound:
    """Information (nats) one observed round and the whole run carry about the data, with the
    defense's own floor metrics (the Wiener MMSE of the κ channel) and notes."""

    per_round: float
    total: float
    metrics: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def softmax_predict(model: Any) -> Callable[[Any], Any]:
    """Class probabilities of a trained classifier (evaluation mode, no gradients): the
    ``predict`` of a :class:`Trained` classifier."""
    import torch  # the contract itself stays importable without torch (the parts' declarations)

    model.eval()

    @torch.no_grad()
    def predict(Z: torch.Tensor) -> torch.Tensor:
        return torch.softmax(model(Z), -1)

    return predict


def _as_is(model: Any) -> Any:
    return model


def _no_report(meta: Mapping[str, Any], *, steps: int = 0, batch_size: int | None = None) -> Report:
    return Report()


@dataclass
class DefenseBuild:
    """What a runner applies for one defense (see the module docstring for each field)."""

    name: str
    train: Callable[..., Trained]
    train_many: Callable[..., Any] | None = None
    prepare: Callable[[Any], Any] = _as_is
    perturb: Callable[[Any, Any], Any] | None = None
    noise_mode: str = "redraw"
    #: the training settings the procedure runs in ("central", "fedavg"); the first is used
    #: when the config asks for one it does not
    settings: tuple[str, ...] = ("central", "fedavg")
    channel: Callable[[Mapping[str, Any]], tuple[float, float] | None] | None = None
    report: Callable[..., Report] = _no_report
    bound: Callable[..., InformationBound | None] | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def observed_channel(self, meta: Mapping[str, Any]) -> tuple[float, float] | None:
        """The uploaded-gradient channel of one observed step, or None (plain gradients)."""
        return None if self.channel is None else self.channel(meta)


def build_defense(family: str, block: Any, **context: Any) -> DefenseBuild:
    """The registered builder of ``block.kind`` for ``family`` applied to the block and the
    run's context (``image_shape``, ``n_classes``, ``train`` spec, ``spectrum`` (a callable:
    the data spectrum, computed only by the builders that need it), ``reference`` rows and
    ``reference_labels``)."""
    part = DEFENSES.get(block.kind)
    return load_object(part.builder_for(family))(block, family=family, **context)

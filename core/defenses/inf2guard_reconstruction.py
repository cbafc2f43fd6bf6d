"""Inf2Guard's defense against data reconstruction from shared representations (Noorbakhsh et
al., USENIX Security 2024; spec 004 §2.3, Eqs. 14-26, Algorithms 3-4), beside fixed-noise
channels and DP noise at the same scale ε.

The shared representation is r + δ. Channels (``CHANNELS``):

- ``learned``: δ = ε·tanh(u), u ~ N(μ, diag σ²) with Φ = (μ, σ) learned (Eq. 21) by
  Algorithm 3: minimise  E_z CE(y, h_Ω(f(x) + ε tanh(μ + σ z))) − β·H(δ),  β = λα/(1 − λ)
  (Eq. 26) over K Monte-Carlo samples z. H(δ) of the squashed Gaussian is
  Σ_i ½ ln(2πe σ_i²) + ln ε + E ln(1 − tanh² u_i) (spec §2.3, derived), the expectation on the
  same samples with the stable form ln(1 − tanh² u) = 2(ln 2 − u − softplus(−2u)). The
  entropy enters per coordinate (H/k), so α does not scale with the representation size.
- ``gaussian`` N(0, ε²), ``laplace`` Laplace(0, ε), ``uniform`` U(−ε, ε) (the paper's Table 18
  and the authors' ``gau``/``lap``/``uni`` options): fixed, not learned.
- ``dp``: the Gaussian mechanism on the representation clipped to ‖r‖₂ ≤ C: N(0, ε²) added,
  with its (ε_DP, δ) for one release (sensitivity 2C, replace-one neighbours) from the exact
  Gaussian-mechanism δ(ε) of Balle & Wang (2018) (:func:`core.defenses.dp.gaussian_delta`).

Every channel trains the same way (Algorithm 4, same epochs): only Φ's update is skipped for
the fixed ones, so the comparison measures the noise and not the encoder. Per minibatch:
Φ (learned only) as above; the in-training decoder adversary Ψ descends its reconstruction
loss on (x, r + δ); the encoder Θ and task head Ω descend

    λ·(−MSE_Ψ(x; r + δ)/Var x) + (1 − λ)·(L1 + L2)      (Eq. 20)

with L1 = CE(y, h(r + δ)) over the K noise samples (Eq. 24) and L2 = CE(y, h(r)) (Eq. 25).
The privacy term is Eq. 16's E log q_Ψ(x | r + δ) for a Gaussian decoder q_Ψ (−MSE up to
constants, divided by the pixel variance so it is O(1) like a cross-entropy); the paper
substitutes a JSD estimator for it (Eq. 22), the task asks for a decoder adversary, which is
also what the attack side trains. The encoder output is squashed by tanh (r ∈ [−1, 1]^k): with
an unbounded r the encoder could scale the signal past any fixed ε and the knob would mean
nothing (the paper's encoders end in BatchNorm for the same reason).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.catalog.inf2guard_dra import Inf2GuardDRADefense
from core.engine.hooks import Game, StepState
from core.engine.loop import Supervised, fit
from core.engine.recipe import Recipe
from core.foundation.checks import check_field, check_int
from core.foundation.progress import Progress
from core.foundation.seeds import torch_stream
from core.models.nn import Decoder, Encoder, TaskHead, seeded

CHANNELS = ("learned", "gaussian", "laplace", "uniform", "dp")


def beta_of(tradeoff_lambda: float, alpha: float) -> float:
    """β = λα/(1 − λ) (Eq. 26)."""
    return float(tradeoff_lambda) * float(alpha) / (1.0 - float(tradeoff_lambda))


class BoundedEncoder(nn.Module):
    """r = tanh(f_Θ(x)) with f_Θ the shared MLP encoder of :mod:`core.models.nn` (r ∈ [−1, 1]^k), or
    ``body``: another network on the flat rows whose output has ``rep_dim`` entries per row
    (an architecture's encoder role, :func:`core.models.build_encoder`)."""

    def __init__(self, in_dim: int, hidden: int, rep_dim: int,
                 body: nn.Module | None = None) -> None:
        super().__init__()
        self.body = Encoder(in_dim, hidden=hidden, rep_dim=rep_dim) if body is None else body
        self.rep_dim = rep_dim

    def forward(self, x: Tensor) -> Tensor:
        return torch.tanh(self.body(x.reshape(len(x), -1)).reshape(len(x), -1))


def log_one_minus_tanh2(u: Tensor) -> Tensor:
    """ln(1 − tanh² u) = 2(ln 2 − u − softplus(−2u)), stable for large |u|."""
    return 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))


class Perturbation(nn.Module):
    """The noise channel δ ~ p_Φ at scale ε on k coordinates (see the module docstring)."""

    def __init__(self, dim: int, channel: str, epsilon: float, *, clip_norm: float = 4.0,
                 dp_delta: float = 1e-5) -> None:
        super().__init__()
        if channel not in CHANNELS:
            raise ValueError(f"channel: got {channel!r}; allowed: {', '.join(CHANNELS)}")
        check_field(Inf2GuardDRADefense, "epsilon", epsilon)
        self.dim, self.channel, self.epsilon = int(dim), channel, float(epsilon)
        self.clip_norm, self.dp_delta = float(clip_norm), float(dp_delta)
        # Φ = (μ, log σ); fixed channels keep them (unused) so every state dict has one shape
        self.mu = nn.Parameter(torch.zeros(self.dim), requires_grad=channel == "learned")
        self.log_sigma = nn.Parameter(torch.zeros(self.dim), requires_grad=channel == "learned")

    @property
    def learned(self) -> bool:
        return self.channel == "learned"

    def _z(self, shape: tuple[int, ...], gen: torch.Generator | None, dev) -> Tensor:
        return torch.randn(shape, generator=gen).to(dev)

    def sample(self, n: int, gen: torch.Generator | None = None) -> Tensor:
        """n draws of δ, shape (n, k) (differentiable in Φ for the learned channel)."""
        dev, eps = self.mu.device, self.epsilon
        if eps == 0.0:
            return torch.zeros(n, self.dim, device=dev)
        shape = (n, self.dim)
        if self.channel == "learned":
            u = self.mu + torch.exp(self.log_sigma) * self._z(shape, gen, dev)
            return eps * torch.tanh(u)
        if self.channel in ("gaussian", "dp"):
            return eps * self._z(shape, gen, dev)
        uni = torch.rand(shape, generator=gen).to(dev)
        if self.channel == "uniform":
            return eps * (2.0 * uni - 1.0)
        # laplace by inversion: b·sign(v)·(−ln(1 − 2|v|)), v ~ U(−½, ½)
        v = uni - 0.5
        return -eps * torch.sign(v) * torch.log1p(-2.0 * v.abs().clamp_max(0.5 - 1e-7))

    def prepare(self, r: Tensor) -> Tensor:
        """The representation before the noise: clipped to ‖r‖₂ ≤ C for the DP channel."""
        if self.channel != "dp":
            return r
        norm = r.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        return r * torch.clamp(self.clip_norm / norm, max=1.0)

    def release(self, r: Tensor, gen: torch.Generator | None = None, samples: int = 1) -> Tensor:
        """r + δ with ``samples`` noise draws per row: shape (samples·n, k), draws outermost."""
        base = self.prepare(r)
        rep = base.repeat(samples, 1)
        return rep + self.sample(len(rep), gen)

    def entropy_per_dim(self, samples: int = 4096, gen: torch.Generator | None = None) -> Tensor:
        """h(δ_i) per coordinate in nats (−inf at ε = 0). Learned: ½ ln(2πe σ²) + ln ε +
        E ln(1 − tanh² u), the expectation by Monte Carlo (differentiable in Φ)."""
        dev, eps = self.mu.device, self.epsilon
        if eps == 0.0:
            return torch.full((self.dim,), -math.inf, device=dev)
        if self.channel == "learned":
            sigma = torch.exp(self.log_sigma)
            u = self.mu + sigma * self._z((samples, self.dim), gen, dev)
            return (0.5 * math.log(2 * math.pi * math.e) + self.log_sigma + math.log(eps)
                    + log_one_minus_tanh2(u).mean(0))
        const = {"gaussian": 0.5 * math.log(2 * math.pi * math.e * eps**2),
                 "dp": 0.5 * math.log(2 * math.pi * math.e * eps**2),
                 "laplace": 1.0 + math.log(2 * eps), "uniform": math.log(2 * eps)}[self.channel]
        return torch.full((self.dim,), const, device=dev)

    @torch.no_grad()
    def variance_per_dim(self, samples: int = 4096, gen: torch.Generator | None = None) -> Tensor:
        """Var δ_i per coordinate (learned: Monte Carlo; fixed: exact)."""
        eps = self.epsilon
        if self.channel == "learned":
            return self.sample(samples, gen).var(0)
        v = {"gaussian": eps**2, "dp": eps**2, "laplace": 2 * eps**2,
             "uniform": eps**2 / 3}[self.channel]
        return torch.full((self.dim,), v, device=self.mu.device)

    def dp_epsilon(self) -> float | None:
        """(ε_DP at δ = dp_delta) of one release through the DP channel; None otherwise."""
        if self.channel != "dp":
            return None
        return gaussian_mechanism_epsilon(self.epsilon, self.dp_delta, 2.0 * self.clip_norm)


def gaussian_mechanism_epsilon(sigma: float, delta: float, sensitivity: float) -> float:
    """The smallest ε with δ(ε) <= ``delta`` for the Gaussian mechanism with noise σ (exact
    δ(ε) of Balle & Wang 2018, Thm 8, bisection; δ(ε) decreases in ε). inf at σ = 0."""
    from core.defenses.dp import gaussian_delta

    if sigma <= 0:
        return math.inf
    lo, hi = 0.0, 1.0
    while gaussian_delta(sigma, hi, sensitivity) > delta:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(sigma, mid, sensitivity) > delta:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass
class DRAModel:
    """The trained networks: ``encoder`` f, ``head`` h_Ω, ``decoder`` Ψ (in-training),
    ``perturbation`` p_Φ."""

    encoder: BoundedEncoder
    head: TaskHead
    decoder: Decoder
    perturbation: Perturbation
    curves: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0

    def eval(self) -> DRAModel:
        for m in (self.encoder, self.head, self.decoder, self.perturbation):
            m.eval()
        return self

    @torch.no_grad()
    def representations(self, X: Tensor) -> Tensor:
        return self.encoder(X)

    @torch.no_grad()
    def release(self, X: Tensor, gen: torch.Generator | None = None) -> Tensor:
        """The shared r + δ (one noise draw per row)."""
        return self.perturbation.release(self.encoder(X), gen)


def build_networks(in_dim: int, n_classes: int, *, channel: str, epsilon: float,
                   hidden_dim: int = 256, representation_dim: int = 64,
                   decoder_hidden: int = 256, clip_norm: float = 4.0, dp_delta: float = 1e-5,
                   seed: int = 0, encoder=None) -> DRAModel:
    """Fresh networks, initialised from one generator seeded by ``seed``. ``encoder() ->
    (network, r's dimension)``: the body of the bounded encoder (an architecture's encoder
    role; ``representation_dim`` and ``hidden_dim`` then unused); None: the MLP."""
    gen = torch.Generator().manual_seed(int(seed))
    body = None
    if encoder is not None:
        body, representation_dim = encoder()
    enc = seeded(lambda: BoundedEncoder(in_dim, hidden_dim, representation_dim, body), gen)
    head = seeded(lambda: TaskHead(representation_dim, n_classes), gen)
    dec = seeded(lambda: Decoder(representation_dim, in_dim, hidden=decoder_hidden), gen)
    pert = Perturbation(representation_dim, channel, epsilon, clip_norm=clip_norm, dp_delta=dp_delta)
    return DRAModel(enc, head, dec, pert)


class ReconstructionGame(Game):
    """Algorithm 4 (with Algorithm 3 for a learned channel) as the engine's hooks around the
    loop's step of the encoder Θ and head Ω on a minibatch (x, y): before it, Φ's step
    (utility on r + δ against the noise entropy, Eq. 26); in the loss, on the loop's forward
    r = f(x), the decoder Ψ's step on the detached r + δ, then Eq. 20's term with Ψ's
    reconstruction as the privacy term. Every noise draw comes from ``gen`` in that order."""

    def __init__(self, m: DRAModel, y: Tensor, *, lam: float, beta: float, samples: int,
                 var_x: float, gen: torch.Generator, recipe: Recipe) -> None:
        super().__init__([m.decoder], recipe,
                         curves=("utility_ce", "decoder_mse", "noise_entropy"))
        self.m, self.y, self.lam, self.beta, self.K = m, y, lam, beta, samples
        self.var_x, self.gen = var_x, gen
        pert = m.perturbation
        self.opt_p = (torch.optim.Adam([pert.mu, pert.log_sigma], lr=10 * recipe.lr)
                      if pert.learned and pert.epsilon > 0 else None)

    def before_step(self, state: StepState) -> None:
        if self.opt_p is None:
            return
        m, xb = self.m, state.source[state.idx]
        with torch.no_grad():
            r0 = m.encoder(xb)
        loss_p = F.cross_entropy(m.head(m.perturbation.release(r0, self.gen, self.K)),
                                 self.y[state.idx].repeat(self.K))
        if self.beta > 0:
            loss_p = loss_p - self.beta * m.perturbation.entropy_per_dim(256, self.gen).mean()
        self.opt_p.zero_grad(set_to_none=True)
        loss_p.backward()
        self.opt_p.step()
        m.head.zero_grad(set_to_none=True)

    def loss(self, r: Tensor, yb: Tensor, state: StepState) -> Tensor:
        m, pert, K, xb = self.m, self.m.perturbation, self.K, state.source[state.idx]
        with torch.no_grad():
            z_d = pert.release(r.detach(), self.gen, K)
        loss_d = F.mse_loss(m.decoder(z_d), xb.repeat(K, 1))
        self.adversary_step(loss_d)
        noise = pert.sample(K * len(xb), self.gen).detach()
        z = pert.prepare(r).repeat(K, 1) + noise
        l1 = F.cross_entropy(m.head(z), yb.repeat(K))
        l2 = F.cross_entropy(m.head(r), yb)
        loss = (1.0 - self.lam) * (l1 + l2)
        if self.lam > 0:
            loss = loss - self.lam * F.mse_loss(m.decoder(z), xb.repeat(K, 1)) / self.var_x
        self.record(utility_ce=float(l1.detach()), decoder_mse=float(loss_d.detach()))
        return loss

    def epoch_end(self, state: StepState) -> None:
        super().epoch_end(state)
        with torch.no_grad():
            entropy = self.m.perturbation.entropy_per_dim(1024, self.gen).mean()
        self.curves["noise_entropy"].append(float(entropy))


def train_inf2guard_dra(X: Tensor, y: Tensor, *, n_classes: int, channel: str = "learned",
                        epsilon: float = 1.0, tradeoff_lambda: float = 0.4,
                        entropy_alpha: float = 1.0, mc_samples: int = 5, epochs: int = 15,
                        batch_size: int = 64, lr: float = 1e-3, hidden_dim: int = 256,
                        representation_dim: int = 64, decoder_hidden: int = 256,
                        clip_norm: float = 4.0, dp_delta: float = 1e-5, seed: int = 0,
                        progress: Progress | None = None, encoder=None) -> DRAModel:
    """Algorithm 4 (with Algorithm 3 for the learned channel) on rows ``X`` (n, d) in [0, 1]
    and labels ``y`` through the engine's loop (:class:`ReconstructionGame`); returns the
    trained networks and per-epoch curves (``utility_ce`` on the noisy representation,
    ``decoder_mse`` of Ψ, ``noise_entropy`` in nats per coordinate)."""
    for name, value in (("tradeoff_lambda", tradeoff_lambda), ("epsilon", epsilon),
                        ("entropy_alpha", entropy_alpha)):
        check_field(Inf2GuardDRADefense, name, value)
    check_int("mc_samples", mc_samples, 1, 1024)
    check_int("epochs", epochs, 0, 100_000)
    if channel not in CHANNELS:
        raise ValueError(f"channel: got {channel!r}; allowed: {', '.join(CHANNELS)}")
    t0 = time.perf_counter()
    Xf = X.reshape(len(X), -1)
    m = build_networks(Xf.shape[1], n_classes, channel=channel, epsilon=epsilon,
                       hidden_dim=hidden_dim, representation_dim=representation_dim,
                       decoder_hidden=decoder_hidden, clip_norm=clip_norm, dp_delta=dp_delta,
                       seed=seed, encoder=encoder)
    for mod in (m.encoder, m.head, m.decoder, m.perturbation):
        mod.to(X.device).train()
    gen = torch_stream(seed, "inf2guard_dra", "train")
    lam = float(tradeoff_lambda)
    recipe = Recipe(epochs=int(epochs), batch_size=int(batch_size), lr=float(lr))
    game = ReconstructionGame(m, y, lam=lam, beta=beta_of(lam, entropy_alpha),
                              samples=int(mc_samples), var_x=float(Xf.var()) or 1.0, gen=gen,
                              recipe=recipe)
    fit(list(m.encoder.parameters()) + list(m.head.parameters()),
        Supervised(Xf, y, forward=m.encoder), recipe=recipe, order=gen, hooks=[game],
        progress=progress, label=f"defense epoch ({channel}, ε = {epsilon:g}, λ = {lam:g})")
    m.eval()
    m.curves, m.seconds = game.curves, time.perf_counter() - t0
    return m


def state_of(m: DRAModel) -> dict[str, dict[str, Tensor]]:
    """Weights of the four networks (CPU state dicts) for the stage cache."""
    return {name: {k: v.detach().cpu() for k, v in mod.state_dict().items()}
            for name, mod in (("encoder", m.encoder), ("head", m.head), ("decoder", m.decoder),
                              ("perturbation", m.perturbation))}


def load_model(weights: dict[str, dict[str, Tensor]], in_dim: int, n_classes: int, *,
               device, **kw) -> DRAModel:
    """A :class:`DRAModel` rebuilt from :func:`state_of`'s weights (``kw`` as for
    :func:`build_networks`)."""
    m = build_networks(in_dim, n_classes, **kw)
    for name, mod in (("encoder", m.encoder), ("head", m.head), ("decoder", m.decoder),
                      ("perturbation", m.perturbation)):
        mod.load_state_dict(weights[name])
        mod.to(device)
    return m.eval()


def noise_summary(p: Perturbation, seed: int = 0) -> dict[str, np.ndarray]:
    """Per-coordinate entropy (nats) and variance of δ, and for the learned channel μ, σ."""
    gen = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        out = {"entropy": p.entropy_per_dim(8192, gen).cpu().double().numpy(),
               "variance": p.variance_per_dim(8192, gen).cpu().double().numpy()}
        if p.learned:
            out["mu"] = p.mu.detach().cpu().double().numpy()
            out["sigma"] = torch.exp(p.log_sigma).detach().cpu().double().numpy()
    return out

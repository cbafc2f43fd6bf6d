"""Small networks: encoders, task heads, attribute adversaries, reconstruction decoders and MI
critics (DESIGN: nn.py).

The one place for architectures. Everything is a plain ``nn.Module`` so the same module serves
the sequential FedAvg path (one module per device) and the vectorised path (parameters stacked
over devices, see :mod:`core.fl.vectorised`).

Shapes follow TAPPFL's tabular networks (spec B7, Table 3), shrunk for a 2-core CPU (spec B12):

- feature extractor ``f(x; Θ)``: linear-64 (+dropout) → ReLU → linear-128 (as Table 3);
- attacker ``q_Ψ(u | r)``: 64 → 32 → #values (Table 3 has 64-128-4-#values);
- utility critic ``T_Ω(x, r, u)``: small x- and r-embeddings with one *shared* layer, concat
  with one-hot u, then a hidden layer and a scalar (Table 3 has a 512-wide shared stack and a
  1025 → 4096 → 512 → 1 head, far too costly on a CPU).

**No BatchNorm anywhere.** Table 3's MLPs use BN, but BN's running-statistics buffers make a
per-device vmapped update non-functional (buffers are mutated in place) and FedAvg over BN
statistics is its own research question; the networks here use no normalisation at all.

Every module also has a functional form ``fforward(params, ...)`` taking a name → tensor dict.
With ordinary parameters it equals ``forward``; with parameters **stacked over devices**
(leading dim K, inputs shaped (K, B, ·)) each ``nn.Linear`` becomes one ``torch.baddbmm``, so K
devices' networks run in a single batched product. For these tiny layers that is 1.8-4x faster
than ``torch.vmap(functional_call(...))`` (measured on 2 CPU cores); the conv encoder, which
has no hand-written batched form, uses ``torch.vmap``. The ordinary ``forward`` uses the
layer modules directly, so the sequential FedAvg path is an independent reference.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.foundation.checks import check_range

_REC = threading.local()


@contextmanager
def record_linear() -> Iterator[list[tuple[dict[str, Tensor], str, Tensor, Tensor]]]:
    """Record every **stacked** :func:`flinear` call in the block as (params, name, x, y).

    The vectorised FedAvg path trains without parameter gradients: it asks autograd only for
    dL/dy of each recorded layer output and applies the SGD step fused into the weights,
    W ← W − lr·xᵀ(dL/dy), with one in-place ``baddbmm_`` (:func:`sgd_from_records`). That
    never materialises the (K, in, out) gradient tensors, whose allocation and memory traffic
    dominated a step for batch-10 devices. Recorded outputs are made to require grad.
    """
    prev = getattr(_REC, "records", None)
    _REC.records = []
    try:
        yield _REC.records
    finally:
        _REC.records = prev


def _record(params: dict[str, Tensor], name: str, x: Tensor, y: Tensor) -> Tensor:
    rec = getattr(_REC, "records", None)
    if rec is not None and y.dim() == 3 and torch.is_grad_enabled():
        if not y.requires_grad:
            y.requires_grad_(True)
        rec.append((params, name, x, y))
    return y


@torch.no_grad()
def sgd_from_records(records, grads, lr: float) -> None:
    """Plain SGD on the stacked layers of ``records`` given dL/dy for each: per layer use,
    W −= lr·xᵀ·dy and b −= lr·Σ_rows dy (a weight used twice gets both terms, as autograd
    would sum them). ``grads`` may hold None for unused outputs."""
    for (params, name, x, _), g in zip(records, grads):
        if g is None:
            continue
        x = x.detach()
        wt = params.get(f"{name}.weight_t")
        if wt is not None:
            wt.baddbmm_(x.transpose(1, 2), g, alpha=-lr)
        else:
            params[f"{name}.weight"].baddbmm_(g.transpose(1, 2), x, alpha=-lr)
        b = params.get(f"{name}.bias")
        if b is not None:
            b.sub_(g.sum(1), alpha=lr)


def flinear(x: Tensor, params: dict[str, Tensor], name: str) -> Tensor:
    """``nn.Linear`` ``name`` applied functionally. Stacked weights run as one ``baddbmm`` on x
    of shape (K, B, in): either ``name.weight`` (K, out, in) or, faster, ``name.weight_t``
    (K, in, out) contiguous (see :func:`to_batched_layout`). Stacked calls are recorded
    inside :func:`record_linear`."""
    b = params.get(f"{name}.bias")
    wt = params.get(f"{name}.weight_t")
    if wt is not None:
        y = torch.bmm(x, wt) if b is None else torch.baddbmm(b.unsqueeze(1), x, wt)
        return _record(params, name, x, y)
    w = params[f"{name}.weight"]
    if w.dim() == 3:
        y = torch.bmm(x, w.transpose(1, 2)) if b is None else torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))
        return _record(params, name, x, y)
    return F.linear(x, w, b)


def to_batched_layout(params: dict[str, Tensor]) -> dict[str, Tensor]:
    """Stacked linear weights ``*.weight`` (K, out, in) → ``*.weight_t`` (K, in, out), contiguous.

    ``baddbmm(b, x, W.transpose(1, 2))`` on a transposed view ran ~2x slower than on a
    contiguous (K, in, out) tensor for these shapes (measured, 1 CPU thread; ~18 % per local
    step overall), so the vectorised FedAvg path keeps weights in this layout during a round.
    Other tensors (biases, conv kernels) are unchanged."""
    out = {}
    for n, v in params.items():
        if n.endswith(".weight") and v.dim() == 3:
            out[n + "_t"] = v.transpose(1, 2).contiguous()
        else:
            out[n] = v
    return out


def from_batched_layout(params: dict[str, Tensor]) -> dict[str, Tensor]:
    """Inverse of :func:`to_batched_layout`."""
    out = {}
    for n, v in params.items():
        if n.endswith(".weight_t"):
            out[n[:-2]] = v.transpose(1, 2).contiguous()
        else:
            out[n] = v
    return out


def is_stacked(params: dict[str, Tensor], module: nn.Module) -> bool:
    """True when ``params`` carry one extra leading (device) dimension over ``module``'s."""
    name, p = next(iter(module.named_parameters()))
    v = params[name] if name in params else params[name + "_t"]
    return v.dim() == p.dim() + 1


# ---------------------------------------------------------------------------------------------
# seeded initialisation from a local generator

#: the parameterised layer types used in this module, re-initialised by :func:`init_module_`
INIT_LAYERS: tuple[type[nn.Module], ...] = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)


@torch.no_grad()
def init_module_(module: nn.Module, generator: torch.Generator) -> nn.Module:
    """Re-initialise every parameter of ``module`` exactly as PyTorch's default
    ``reset_parameters`` of nn.Linear / nn.ConvNd does (weight: ``kaiming_uniform_`` with
    a = √5; bias: U(−1/√fan_in, 1/√fan_in)), but drawing from ``generator`` (a CPU generator)
    instead of the global RNG; layers in ``module.modules()`` order, weight before bias.

    The dashboard runs jobs in concurrent threads, so ``torch.manual_seed`` (even inside
    ``fork_rng``) would race; a local generator does not. ``torch.manual_seed(s)`` followed by
    building the module gives the same numbers as ``init_module_(module, Generator().manual_seed(s))``.
    Works for modules already moved to another device (values are drawn on the CPU and copied).
    Raises TypeError for a module holding parameters of another layer type. Returns ``module``.
    A (sub)module that declares its own initialisation (a ``seeded_init_(generator)`` method,
    e.g. :class:`LeNetSigmoid`'s DLG rule) is initialised by that method instead, in the same
    order, and its own layers are not touched again.
    """
    done: list[str] = []  # prefixes of submodules initialised by their own rule
    for name, m in module.named_modules():
        if any(p == "" or name == p or name.startswith(p + ".") for p in done):
            continue
        own_init = getattr(m, "seeded_init_", None)
        if callable(own_init):
            own_init(generator)
            done.append(name)
            continue
        own = dict(m.named_parameters(recurse=False))
        if not own:
            continue
        if not isinstance(m, INIT_LAYERS):
            raise TypeError(f"init_module_: no seeded initialisation for {name or 'the module'} "
                            f"({type(m).__name__}); supported: "
                            f"{', '.join(t.__name__ for t in INIT_LAYERS)}")
        w = torch.empty(m.weight.shape, dtype=m.weight.dtype)
        nn.init.kaiming_uniform_(w, a=math.sqrt(5), generator=generator)
        m.weight.copy_(w)
        if m.bias is not None:
            fan_in, _ = nn.init._calculate_fan_in_and_fan_out(w)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            b = torch.empty(m.bias.shape, dtype=m.bias.dtype)
            nn.init.uniform_(b, -bound, bound, generator=generator)
            m.bias.copy_(b)
    return module


def seeded(module: nn.Module | Callable[[], nn.Module], seed: int | torch.Generator) -> nn.Module:
    """``module`` (or ``module()`` for a factory) initialised by :func:`init_module_` from
    ``seed`` (an int: a fresh CPU generator seeded with it; or a generator, advanced in place,
    to draw several modules from one stream)."""
    m = module if isinstance(module, nn.Module) else module()
    gen = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(int(seed))
    return init_module_(m, gen)


class Encoder(nn.Module):
    """TAPPFL tabular feature extractor ``r = f(x; Θ)`` (Table 3): linear-``hidden`` (+dropout)
    → ReLU → linear-``rep_dim``. No normalisation layer (see the module docstring).

    ``forward(x, dropout_mask=None)``: with a pre-drawn mask (values 0 or 1/(1-p), shape of
    the hidden layer) dropout is applied deterministically, so the vectorised and sequential
    federated paths can share one random draw; without a mask, ordinary ``F.dropout`` runs
    in training mode.
    """

    def __init__(self, in_dim: int, hidden: int = 64, rep_dim: int = 128, dropout: float = 0.0) -> None:
        super().__init__()
        check_range("dropout", dropout, 0, 1, hi_open=True)
        self.in_dim, self.hidden, self.rep_dim, self.dropout = in_dim, hidden, rep_dim, dropout
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, rep_dim)

    def forward(self, x: Tensor, dropout_mask: Tensor | None = None) -> Tensor:
        h = self.fc1(x)
        if dropout_mask is not None:
            h = h * dropout_mask
        elif self.dropout > 0:
            h = F.dropout(h, self.dropout, self.training)
        return self.fc2(F.relu(h))

    def fforward(self, params: dict[str, Tensor], x: Tensor, dropout_mask: Tensor | None = None) -> Tensor:
        h = flinear(x, params, "fc1")
        if dropout_mask is not None:
            h = h * dropout_mask
        elif self.dropout > 0:
            h = F.dropout(h, self.dropout, self.training)
        return flinear(F.relu(h), params, "fc2")


class ConvEncoder(nn.Module):
    """Small CPU-cheap image encoder: two stride-2 3×3 convolutions (16, 32 channels, ReLU) and
    a linear map to ``rep_dim``. Takes flattened rows (n, C·H·W) like every :class:`Dataset`
    (the TAPPFL CIFAR extractor, 4 conv3 layers of 64/128 channels with BN, is too costly here).
    Runs in the vectorised FedAvg path through ``torch.vmap`` (no hand-written batched form)."""

    def __init__(self, image_shape: tuple[int, int, int], rep_dim: int = 128, channels: int = 16) -> None:
        super().__init__()
        c, h, w = image_shape
        self.image_shape = tuple(image_shape)
        self.in_dim, self.rep_dim = c * h * w, rep_dim
        self.conv1 = nn.Conv2d(c, channels, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, stride=2, padding=1)
        h2, w2 = math.ceil(math.ceil(h / 2) / 2), math.ceil(math.ceil(w / 2) / 2)
        self.fc = nn.Linear(2 * channels * h2 * w2, rep_dim)

    def forward(self, x: Tensor, dropout_mask: Tensor | None = None) -> Tensor:
        z = x.reshape(-1, *self.image_shape)
        z = F.relu(self.conv1(z))
        z = F.relu(self.conv2(z))
        return self.fc(z.flatten(1))

    def fforward(self, params: dict[str, Tensor], x: Tensor, dropout_mask: Tensor | None = None) -> Tensor:
        from torch.func import functional_call, vmap

        params = from_batched_layout(params)
        if is_stacked(params, self):
            return vmap(lambda p, xx: functional_call(self, p, (xx,)))(params, x)
        return functional_call(self, params, (x,))


class TaskHead(nn.Module):
    """Utility head on representations: linear, or one hidden ReLU layer when ``hidden``."""

    def __init__(self, rep_dim: int, n_classes: int, hidden: int | None = None) -> None:
        super().__init__()
        if hidden:
            self.net = nn.Sequential(nn.Linear(rep_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))
        else:
            self.net = nn.Sequential(nn.Linear(rep_dim, n_classes))

    def forward(self, r: Tensor) -> Tensor:
        return self.net(r)

    def fforward(self, params: dict[str, Tensor], r: Tensor) -> Tensor:
        return _fsequential(self.net, params, "net", r)


def _fsequential(seq: nn.Sequential, params: dict[str, Tensor], prefix: str, x: Tensor) -> Tensor:
    """Functional ``nn.Sequential`` of Linear / ReLU layers."""
    for i, layer in enumerate(seq):
        if isinstance(layer, nn.Linear):
            x = flinear(x, params, f"{prefix}.{i}")
        elif isinstance(layer, nn.ReLU):
            x = F.relu(x)
        else:  # pragma: no cover - only Linear/ReLU are built here
            raise TypeError(f"_fsequential: unsupported layer {type(layer).__name__}")
    return x


class AttributeAdversary(nn.Module):
    """Attribute-inference network ``g_Ψ(r)`` → logits over the private values (TAPPFL's privacy
    network q_Ψ(u|r), Table 3 shrunk): ``hidden`` → ``hidden // 2`` → ``n_values`` with ReLU."""

    def __init__(self, rep_dim: int, n_values: int, hidden: int = 64) -> None:
        super().__init__()
        h2 = max(hidden // 2, 2)
        self.net = nn.Sequential(
            nn.Linear(rep_dim, hidden), nn.ReLU(), nn.Linear(hidden, h2), nn.ReLU(), nn.Linear(h2, n_values)
        )

    def forward(self, r: Tensor) -> Tensor:
        return self.net(r)

    def fforward(self, params: dict[str, Tensor], r: Tensor) -> Tensor:
        return _fsequential(self.net, params, "net", r)


class PropertyAdversary(nn.Module):
    """Inf2Guard's property-protection network ``g_Ψ(Agg f(X_j))`` (spec 004 §2.2, Eq. 12): the
    :class:`AttributeAdversary` body behind a per-feature standardisation of the aggregate
    (BatchNorm without affine parameters; running statistics at evaluation).

    Why: a mean over 8-256 representations varies across subsets by a small fraction of its
    value, so an unstandardised MLP stays at the uniform prediction (CE = ln K) while a
    logistic regression on standardised aggregates reads the property; the game is then played
    against an adversary that sees nothing, and λ cannot move it."""

    def __init__(self, rep_dim: int, n_values: int, hidden: int = 64) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(rep_dim, affine=False)
        self.body = AttributeAdversary(rep_dim, n_values, hidden=hidden)

    def forward(self, agg: Tensor) -> Tensor:
        if self.training and len(agg) < 2:  # one subset has no batch statistics: use the running ones
            n = self.norm
            return self.body(F.batch_norm(agg, n.running_mean, n.running_var, training=False,
                                          eps=n.eps))
        return self.body(self.norm(agg))


class Decoder(nn.Module):
    """Reconstruction network q_Ψ(x | r + δ): MLP k → hidden (× ``layers``) → d, sigmoid
    output in [0, 1]: Inf2Guard's in-training adversary Ψ against reconstruction (spec 004
    §2.3) and the attacker's fresh decoder (:mod:`core.attacks.reconstruction`)."""

    def __init__(self, rep_dim: int, out_dim: int, hidden: int = 256, layers: int = 1) -> None:
        super().__init__()
        mods: list[nn.Module] = []
        w = rep_dim
        for _ in range(max(1, layers)):
            mods += [nn.Linear(w, hidden), nn.ReLU()]
            w = hidden
        mods.append(nn.Linear(w, out_dim))
        self.net = nn.Sequential(*mods)

    def forward(self, z: Tensor) -> Tensor:
        return torch.sigmoid(self.net(z))


class MICritic(nn.Module):
    """Conditional-MI critic ``T_Ω(x, r, u) ∈ ℝ`` for the JSD estimator of I(x; r | u) (spec B6).

    As in TAPPFL's utility network, x and r are embedded separately and then pass through a
    layer **shared** between the two streams; the head sees concat[x_feat, r_feat, onehot(u)]:

        x_feat = relu(S · relu(A x)),  r_feat = relu(S · relu(C r))      (S shared)
        T = w · relu(H_x x_feat + H_ru [r_feat, onehot(u)] + h) + b

    (H_x, H_ru are the column blocks of one linear layer on the concatenation, kept as two
    modules so the x-block product is computed once per row and *gathered* for the rolled
    x' of the JSD estimator instead of recomputed; see :meth:`score_pair`.)
    All widths are ``hidden``: the paper's 512-wide shared stack and 1025 → 4096 → 512 → 1
    head are shrunk for CPU use (spec B12).
    """

    def __init__(self, x_dim: int, rep_dim: int, n_values: int, hidden: int = 64) -> None:
        super().__init__()
        self.n_values = n_values
        self.x_in = nn.Linear(x_dim, hidden)
        self.r_in = nn.Linear(rep_dim, hidden)
        self.shared = nn.Linear(hidden, hidden)
        self.head_x = nn.Linear(hidden, hidden, bias=False)
        self.head_ru = nn.Linear(hidden + n_values, hidden)
        self.out = nn.Linear(hidden, 1)

    def embed_x(self, x: Tensor) -> Tensor:
        return F.relu(self.shared(F.relu(self.x_in(x))))

    def embed_r(self, r: Tensor) -> Tensor:
        return F.relu(self.shared(F.relu(self.r_in(r))))

    def score(self, ex: Tensor, er: Tensor, u_onehot: Tensor) -> Tensor:
        """T from precomputed embeddings; returns shape ``ex.shape[:-1]``."""
        h = self.head_x(ex) + self.head_ru(torch.cat([er, u_onehot], dim=-1))
        return self.out(F.relu(h)).squeeze(-1)

    def forward(self, x: Tensor, r: Tensor, u: Tensor) -> Tensor:
        return self.score(self.embed_x(x), self.embed_r(r), F.one_hot(u, self.n_values).to(x.dtype))

    def score_pair(self, ex: Tensor, er: Tensor, u_onehot: Tensor, roll: Tensor) -> tuple[Tensor, Tensor]:
        """(T(x_j, r_j, u_j), T(x_roll[j], r_j, u_j)) for one batch (rows on dim 0)."""
        ax = self.head_x(ex)
        c = self.head_ru(torch.cat([er, u_onehot], dim=-1))
        return self.out(F.relu(ax + c)).squeeze(-1), self.out(F.relu(ax[roll] + c)).squeeze(-1)

    # functional (possibly device-stacked) forms of the pieces
    def fembed_x(self, p: dict[str, Tensor], x: Tensor) -> Tensor:
        return F.relu(flinear(F.relu(flinear(x, p, "x_in")), p, "shared"))

    def fembed_r(self, p: dict[str, Tensor], r: Tensor) -> Tensor:
        return F.relu(flinear(F.relu(flinear(r, p, "r_in")), p, "shared"))

    def fscore_pair(self, p: dict[str, Tensor], ex: Tensor, er: Tensor, u_onehot: Tensor,
                    roll: Tensor) -> tuple[Tensor, Tensor]:
        """Joint and rolled-marginal scores. Unstacked: ``roll`` (B,) row indices. Stacked
        (ex of shape (K, B, h)): ``roll`` (K, B) row indices within each device's batch."""
        ax = flinear(ex, p, "head_x")
        c = flinear(torch.cat([er, u_onehot], dim=-1), p, "head_ru")
        if ax.dim() == 3:
            k, b, h = ax.shape
            flat = (roll + torch.arange(k, device=roll.device).unsqueeze(1) * b).reshape(-1)
            ax_m = ax.reshape(k * b, h).index_select(0, flat).view(k, b, h)
        else:
            ax_m = ax[roll]
        return flinear(F.relu(ax + c), p, "out").squeeze(-1), flinear(F.relu(ax_m + c), p, "out").squeeze(-1)


def jsd_mi(t_joint: Tensor, t_marginal: Tensor, weight: Tensor | None = None) -> Tensor:
    """Deep InfoMax JSD MI estimate (spec B6): mean(−softplus(−T(x, r, u))) − mean(softplus(T(x', r, u))).

    With ``weight`` (same shape, rows of a padded batch: 1 valid / 0 padding, already divided
    by the valid count along the last axis) the means are weighted sums over the last axis.
    """
    pos = -F.softplus(-t_joint)
    neg = F.softplus(t_marginal)
    if weight is None:
        return pos.mean(-1) - neg.mean(-1)
    return ((pos - neg) * weight).sum(-1)


# ---------------------------------------------------------------------------------------------
# image classifiers for the reconstruction attacks (DLG / iDLG / Inverting Gradients, model
# inversion). Plain modules with no in-place ops and no buffers, so ``torch.func.functional_call``,
# ``torch.func.vmap`` and double backprop (gradient matching differentiates a gradient) all work.


def _check_image_shape(image_shape: tuple[int, int, int], n_classes: int) -> tuple[int, int, int]:
    shape = tuple(int(s) for s in image_shape)
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(f"image_shape: got {tuple(image_shape)}; expected (C, H, W) with every "
                         f"side >= 1")
    check_range("n_classes", n_classes, 2)
    return shape  # type: ignore[return-value]


def _as_images(x: Tensor, image_shape: tuple[int, int, int]) -> Tensor:
    """(n, C, H, W) from (n, C, H, W) or flattened rows (n, C·H·W)."""
    return x.reshape(-1, *image_shape)


class LeNetSigmoid(nn.Module):
    """The DLG "LeNet" (Zhu et al. 2019): three 5×5 convolutions of 12 channels, padding 2,
    strides 2, 2, 1, sigmoid activations, one linear layer. Sigmoid (smooth, non-zero second
    derivative) is why DLG's L-BFGS gradient matching works so well on it. Any (C, H, W): the
    linear layer's input size follows from the shape (each stride-2 conv gives ⌈side/2⌉).

    **Initialisation as in the DLG setting**: every weight *and* bias ~ U(−0.5, 0.5) (the
    ``weights_init`` of the DLG code), not PyTorch's default. With PyTorch's default
    (kaiming-uniform, |w| ≲ 1/√fan_in ≈ 0.06 for the 300-input convolutions) the sigmoid
    layers sit near 0.5 for every input and the gradient carries little of the image: on 32
    single ``digits`` uploads DLG's median was 8.5 dB against 67.7 dB with this init (iDLG ~80 dB
    either way); trained with Adam 3e-3, batch 32, 20 epochs both inits reach 0.93-0.95 test
    accuracy (``benchmarks/dlg_lenet.py``; issue #20 saw 0.10 under the page's shorter recipe).
    The constructor draws from the global RNG; :func:`seeded` / :func:`init_module_` call
    :meth:`seeded_init_` with a local generator."""

    #: half-width of DLG's uniform initialisation U(−INIT_RANGE, INIT_RANGE)
    INIT_RANGE = 0.5

    def __init__(self, image_shape: tuple[int, int, int], n_classes: int, channels: int = 12) -> None:
        super().__init__()
        c, h, w = self.image_shape = _check_image_shape(image_shape, n_classes)
        self.body = nn.Sequential(
            nn.Conv2d(c, channels, 5, padding=2, stride=2), nn.Sigmoid(),
            nn.Conv2d(channels, channels, 5, padding=2, stride=2), nn.Sigmoid(),
            nn.Conv2d(channels, channels, 5, padding=2, stride=1), nn.Sigmoid(),
        )
        h2, w2 = math.ceil(math.ceil(h / 2) / 2), math.ceil(math.ceil(w / 2) / 2)
        self.fc = nn.Linear(channels * h2 * w2, n_classes)
        self.seeded_init_(None)

    @torch.no_grad()
    def seeded_init_(self, generator: torch.Generator | None) -> LeNetSigmoid:
        """Every parameter ~ U(−0.5, 0.5), drawn on the CPU from ``generator`` (the global
        RNG when None) in ``named_parameters`` order, then copied to the module's device."""
        r = self.INIT_RANGE
        for p in self.parameters():
            v = torch.empty(p.shape, dtype=p.dtype).uniform_(-r, r, generator=generator)
            p.copy_(v)
        return self

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.body(_as_images(x, self.image_shape)).flatten(1))


class LeNet5(nn.Module):
    """LeNet-5 as in the seed-001 paper's Table 2 (spec §5.3): conv 6@5×5 → max-pool 2 →
    conv 16@5×5 → max-pool 2 → FC 400 → 120 → 84 → ``n_classes`` (61,706 parameters for one
    channel and 10 classes), ``act`` activations (ReLU by default, "sigmoid" or "tanh").

    Inputs of any (H, W) are **resized to 32×32 inside forward** with bilinear
    ``F.interpolate`` (the paper resized every data set to 32×32). Interpolation is linear in
    the pixels, so double backprop and vmap are unaffected, and the layer sizes (hence the
    parameter count) do not depend on the data set; 8×8 digits and 25×25 faces work as is."""

    SIDE = 32

    def __init__(self, image_shape: tuple[int, int, int], n_classes: int, act: str = "relu") -> None:
        super().__init__()
        acts = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}
        if act not in acts:
            raise ValueError(f"act: got {act!r}; allowed: {', '.join(acts)}")
        c, _, _ = self.image_shape = _check_image_shape(image_shape, n_classes)
        a = acts[act]
        self.features = nn.Sequential(
            nn.Conv2d(c, 6, 5), a(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), a(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120), a(), nn.Linear(120, 84), a(), nn.Linear(84, n_classes)
        )

    def forward(self, x: Tensor) -> Tensor:
        z = _as_images(x, self.image_shape)
        if z.shape[-2:] != (self.SIDE, self.SIDE):
            z = F.interpolate(z, size=(self.SIDE, self.SIDE), mode="bilinear", align_corners=False)
        return self.classifier(self.features(z).flatten(1))


class ImageMLP(nn.Module):
    """Small MLP on flattened images: C·H·W → ``hidden`` → ``n_classes``, sigmoid hidden layer
    (smooth, so gradient matching has a useful second derivative)."""

    def __init__(self, image_shape: tuple[int, int, int], n_classes: int, hidden: int = 64) -> None:
        super().__init__()
        c, h, w = self.image_shape = _check_image_shape(image_shape, n_classes)
        check_range("hidden", hidden, 1)
        self.fc1 = nn.Linear(c * h * w, int(hidden))
        self.fc2 = nn.Linear(int(hidden), n_classes)

    def forward(self, x: Tensor) -> Tensor:
        z = _as_images(x, self.image_shape).flatten(1)
        return self.fc2(torch.sigmoid(self.fc1(z)))


#: image classifier factories by name, for :func:`image_classifier`
IMAGE_MODELS: dict[str, Callable[..., nn.Module]] = {
    "lenet_sigmoid": LeNetSigmoid,
    "lenet5": LeNet5,
    "mlp": ImageMLP,
}


def image_classifier(name: str, image_shape: tuple[int, int, int], n_classes: int) -> nn.Module:
    """A fresh (default-initialised) classifier from :data:`IMAGE_MODELS`; seed it with
    :func:`seeded`."""
    if name not in IMAGE_MODELS:
        raise ValueError(f"model: got {name!r}; allowed: {', '.join(IMAGE_MODELS)}")
    return IMAGE_MODELS[name](tuple(image_shape), int(n_classes))

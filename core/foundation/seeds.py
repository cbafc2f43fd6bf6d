"""One seed stream for the whole engine: ``stream(seed, *path)``.

Every random draw in a run comes from a generator named by the run's seed and a *path* that
says what it is for: ``stream(seed, "shadow", k)``, ``stream(seed, "target", t)``,
``stream(seed, "attacker", "mlp", fold)``. Two different paths give statistically independent
streams (numpy's :class:`~numpy.random.SeedSequence` spawn keys), the same path always gives the
same stream, and nothing global is touched, so two runs interleaved in threads of one process
give the same numbers as each alone.

Hand offsets (``seed + 1000 + k``) and private mixers are what this replaces: they collide
(``seed 0, shadow 1001`` equals ``seed 1, shadow 1000``) and hide which draw is which.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported on use: the engine's light modules import this one
    import torch

PathPart = str | int

_MASK32 = 0xFFFF_FFFF


def _words(part: PathPart) -> tuple[int, ...]:
    """A path element as 32-bit words, tagged by type so that ``1`` and ``"1"`` differ."""
    if isinstance(part, bool) or not isinstance(part, int | str | np.integer):
        raise TypeError(f"seed path: got {part!r} ({type(part).__name__}); expected str or int")
    if isinstance(part, str):
        digest = hashlib.sha256(part.encode()).digest()
        return (1, *(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)))
    v = int(part)
    sign = 3 if v < 0 else 2
    v = abs(v)
    words = [sign]
    while True:
        words.append(v & _MASK32)
        v >>= 32
        if not v:
            break
    return tuple(words)


def seed_sequence(seed: int, *path: PathPart) -> np.random.SeedSequence:
    """The :class:`numpy.random.SeedSequence` of ``path`` under the run's ``seed``."""
    key: list[int] = []
    for p in path:
        key.extend(_words(p))
    return np.random.SeedSequence(entropy=[w for w in _words(int(seed))], spawn_key=tuple(key))


def stream(seed: int, *path: PathPart) -> np.random.Generator:
    """An independent numpy generator for the purpose named by ``path``."""
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, *path)))


def derive(seed: int, *path: PathPart, bits: int = 32) -> int:
    """An integer seed in [0, 2**bits) for ``path`` (APIs that take an int: scikit-learn's
    ``random_state`` wants 32 bits, ``torch.Generator.manual_seed`` 63)."""
    from core.foundation.checks import check_int

    check_int("bits", bits, 1, 63)
    a, b = seed_sequence(seed, *path).generate_state(2, np.uint32)
    return ((int(a) << 32) | int(b)) & ((1 << bits) - 1)


def torch_stream(seed: int, *path: PathPart, device: str | torch.device = "cpu") -> torch.Generator:
    """An independent ``torch.Generator`` (on ``device``) for the purpose named by ``path``."""
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(derive(seed, *path, bits=63))
    return g

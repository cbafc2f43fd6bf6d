"""Weights trained elsewhere, read safely and checked against the architecture they claim.

A user's weights file is input from a stranger: it is never unpickled into objects. Two forms
are read:

- **safetensors** (:func:`safetensors.torch.load`): a JSON header and raw tensor bytes, no code;
- **a PyTorch state dict** saved with ``torch.save(model.state_dict(), path)``, read with
  ``torch.load(weights_only=True)``, whose restricted unpickler builds tensors and containers
  only: a pickled module or any other object is refused in one line.

Before a byte is parsed the file's size is bounded by what the architecture's own tensors take
(:func:`size_cap`: twice its float32 weights, so a float64 copy fits, plus 1 MiB of header); the
content hash is read in 1 MiB chunks. Then :func:`fit_state_dict` checks the tensors fit the
network (names, shapes, finite values) and loads them strictly. Every refusal is one line that
names the file and the check (:class:`WeightsError`).
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
from pathlib import Path
from typing import Any

import torch

#: header and container overhead a weights file may carry beyond its tensors
SLACK_BYTES = 1 << 20
#: magic numbers of the forms read (a safetensors file starts with its header's length)
ZIP_MAGIC = b"PK\x03\x04"
PICKLE_PROTOCOL = b"\x80"


class WeightsError(ValueError):
    """A weights file refused: one line naming the file and the check."""


def _refuse(path: Path | str, check: str, text: str) -> WeightsError:
    return WeightsError(f"weights {path}: {check}: {text}")


def state_bytes(net: torch.nn.Module) -> int:
    """Bytes of ``net``'s state dict as float32 (parameters and buffers)."""
    return sum(int(t.numel()) * 4 for t in net.state_dict().values())


def size_cap(net: torch.nn.Module) -> int:
    """The largest weights file read for ``net``: twice its float32 state plus
    :data:`SLACK_BYTES`."""
    return 2 * state_bytes(net) + SLACK_BYTES


def read_bounded(path: str | Path, cap: int, what: str = "weights") -> tuple[bytes, str]:
    """The bytes of a regular file of at most ``cap`` bytes and their sha256; one line
    (``<what> PATH: ...``) for a missing, special or oversized file."""
    p = Path(path)
    try:
        st = os.stat(p)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise WeightsError(f"{what} {p}: cannot read ({getattr(exc, 'strerror', None) or exc})"
                           ) from None
    if not stat.S_ISREG(st.st_mode):
        raise WeightsError(f"{what} {p}: not a regular file")
    if st.st_size > cap:
        raise WeightsError(f"{what} {p}: size: {st.st_size:,} bytes; at most {cap:,} for this "
                           "model")
    if st.st_size == 0:
        raise WeightsError(f"{what} {p}: size: empty file")
    h, chunks, total = hashlib.sha256(), [], 0
    try:
        with open(p, "rb") as f:
            while chunk := f.read(1 << 20):
                chunks.append(chunk)
                h.update(chunk)
                total += len(chunk)
                if total > cap:  # grew while read
                    raise WeightsError(f"{what} {p}: size: changed while read; at most {cap:,}")
    except OSError as exc:
        raise WeightsError(f"{what} {p}: cannot read ({exc.strerror or exc})") from None
    return b"".join(chunks), h.hexdigest()


def file_format(data: bytes) -> str:
    """``"safetensors"``, ``"torch"`` (a zip archive or a legacy pickle stream) or
    ``"unknown"``, from the first bytes."""
    if data[:4] == ZIP_MAGIC or data[:1] == PICKLE_PROTOCOL:
        return "torch"
    if len(data) >= 9 and data[8:9] == b"{":
        n = int.from_bytes(data[:8], "little")
        if 0 < n <= len(data) - 8:
            return "safetensors"
    return "unknown"


def parse_state_dict(data: bytes, path: str | Path) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file or a PyTorch state dict (``weights_only=True``); a
    pickled object, a truncated file or anything else is one line."""
    fmt = file_format(data)
    if fmt == "safetensors":
        from safetensors import SafetensorError
        from safetensors.torch import load

        try:
            return dict(load(data))
        except (SafetensorError, ValueError, RuntimeError) as exc:
            raise _refuse(path, "safetensors", f"unreadable or truncated ({_short(exc)})") from None
    if fmt != "torch":
        raise _refuse(path, "format", "neither safetensors nor a PyTorch state dict (save "
                      "model.state_dict() with torch.save or safetensors.torch.save_file)")
    import warnings

    # the exception class only: torch's restricted unpickler raises it for any object beyond
    # tensors and containers (nothing here unpickles)
    from pickle import UnpicklingError

    try:
        with warnings.catch_warnings():  # its protocol remark: the refusal below says it all
            warnings.simplefilter("ignore", UserWarning)
            obj = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except UnpicklingError as exc:
        what = "a pickled object, not a state dict of tensors" if "Weights only load failed" in str(exc) \
            else f"unreadable pickle ({_short(exc)})"
        raise _refuse(path, "weights_only", f"{what}; save model.state_dict(), not the model"
                      ) from None
    except (RuntimeError, EOFError, ValueError, OSError) as exc:
        raise _refuse(path, "torch.load", f"unreadable or truncated ({_short(exc)})") from None
    return _flat_tensors(obj, path)


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:120]


def _flat_tensors(obj: Any, path: str | Path) -> dict[str, torch.Tensor]:
    """A state dict: a mapping of names to tensors (or one such mapping under ``state_dict``,
    as training scripts often save it)."""
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict) or not obj:
        raise _refuse(path, "state dict", f"got {type(obj).__name__}; expected a mapping of "
                      "parameter names to tensors (model.state_dict())")
    bad = [k for k, v in obj.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)]
    if bad:
        raise _refuse(path, "state dict", f"entry {str(bad[0])[:60]!r} is not a named tensor")
    return obj


def _target_module(net: torch.nn.Module, names: set[str]) -> torch.nn.Module:
    """The module the state dict describes: ``net`` itself, or the network behind its
    input adapter (:class:`core.models.common.Adapted`), whose names lack the ``net.`` prefix."""
    own = set(net.state_dict())
    inner = getattr(net, "net", None)
    if names != own and isinstance(inner, torch.nn.Module) and names == set(inner.state_dict()):
        return inner
    return net


def fit_state_dict(net: torch.nn.Module, sd: dict[str, torch.Tensor], path: str | Path,
                   arch: str) -> None:
    """Load ``sd`` into ``net`` (strictly) once it fits: the same names (a ``module.`` prefix
    of DataParallel dropped), the same shapes, floating values all finite."""
    if all(k.startswith("module.") for k in sd):
        sd = {k[len("module."):]: v for k, v in sd.items()}
    mod = _target_module(net, set(sd))
    own = mod.state_dict()
    missing, extra = sorted(set(own) - set(sd)), sorted(set(sd) - set(own))
    if missing or extra:
        what = (f"missing {', '.join(missing[:3])}" if missing else "") + \
               ("; " if missing and extra else "") + \
               (f"unexpected {', '.join(extra[:3])}" if extra else "")
        raise _refuse(path, "architecture", f"does not fit {arch!r}: {what}")
    for k, t in own.items():
        if tuple(sd[k].shape) != tuple(t.shape):
            raise _refuse(path, "architecture", f"does not fit {arch!r}: {k} has shape "
                          f"{tuple(sd[k].shape)}, the network's is {tuple(t.shape)} (another "
                          "width, input size or number of classes?)")
        if sd[k].is_floating_point() and not bool(torch.isfinite(sd[k]).all()):
            raise _refuse(path, "finite", f"{k} holds NaN or infinite values")
        if not t.is_floating_point() and sd[k].is_floating_point():
            raise _refuse(path, "dtype", f"{k} is floating point, the network's is {t.dtype}")
    with torch.no_grad():
        mod.load_state_dict({k: v.to(own[k].dtype) for k, v in sd.items()}, strict=True)


def load_weights(net: torch.nn.Module, path: str | Path, arch: str) -> str:
    """Read ``path`` (bounded by :func:`size_cap`), check and load it into ``net``; returns
    the file's sha256."""
    data, digest = read_bounded(path, size_cap(net))
    fit_state_dict(net, parse_state_dict(data, path), path, arch)
    return digest

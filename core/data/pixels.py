"""Decoding one user image file, checked (the image rules of :mod:`core.data.user`).

=============================  ==============================================================
class                          rule
=============================  ==============================================================
not an image                   Pillow cannot identify it: refused, naming the file
truncated                      the data ends early (PNG or JPEG): refused, naming the file
too many pixels                above the cap, from the header, before decoding: refused
                               (Pillow's own decompression-bomb warning never fires)
16-bit grayscale               scaled from 0..65535 to 0..255 (Pillow's ``convert`` would clip
                               every value above 255 to white), noted with a count
transparency                   palette or alpha images: the alpha channel is dropped (colours
                               kept as stored), noted with a count
other modes                    1-bit, palette, CMYK, YCbCr: converted to gray or RGB; any
                               other mode is refused, naming it
other sizes                    every image is resized to ``size`` x ``size`` (bilinear, aspect
                               ratio not kept); differing sizes are noted
=============================  ==============================================================
"""

from __future__ import annotations

import io
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.data.cells import count
from core.data.errors import DataError

#: modes Pillow converts to L / RGB faithfully
CONVERTIBLE = {"1", "L", "P", "RGB", "CMYK", "YCbCr", "LAB", "HSV", "RGBX"}
ALPHA = {"LA", "PA", "RGBA", "RGBa", "La"}
SIXTEEN = {"I;16", "I;16B", "I;16L", "I;16N", "I"}


@dataclass
class DecodeLog:
    """What the decoder converted, for the registration's notes (first file of each kind)."""
    sizes: Counter = field(default_factory=Counter)
    first_of_size: dict[tuple[int, int], str] = field(default_factory=dict)
    alpha: list[str] = field(default_factory=list)
    sixteen: list[str] = field(default_factory=list)
    pillow: list[str] = field(default_factory=list)

    def notes(self, size: int) -> list[str]:
        out = []
        if len(self.sizes) > 1 or any(w != h for w, h in self.sizes):
            common = ", ".join(f"{w}x{h}: {n:,}" for (w, h), n in self.sizes.most_common(3))
            odd = min(self.sizes, key=lambda k: self.sizes[k])
            out.append(f"images come in {len(self.sizes)} size{'s' if len(self.sizes) > 1 else ''}"
                       f" ({common}{', ...' if len(self.sizes) > 3 else ''}; e.g. "
                       f"{self.first_of_size[odd]} is {odd[0]}x{odd[1]}); each resized to "
                       f"{size}x{size} (aspect ratio not kept)")
        if self.sixteen:
            out.append(f"{count(len(self.sixteen), '16-bit image')} (first: {self.sixteen[0]}) scaled "
                       "from 0..65535 to 0..255")
        if self.alpha:
            out.append(f"{count(len(self.alpha), 'image')} with transparency (first: {self.alpha[0]}); "
                       "the alpha channel is dropped, colours kept as stored")
        if self.pillow:
            out.append(f"{count(len(self.pillow), 'image')} decoded with a Pillow warning (first: "
                       f"{self.pillow[0]})")
        return out


def _sixteen_to_l(img, path: Path):
    from PIL import Image

    a = np.asarray(img)
    if a.size and (a.min() < 0 or a.max() > 65535):
        raise DataError(f"image file {path}: {img.mode} pixels from {int(a.min())} to "
                        f"{int(a.max())}; allowed: 0 to 65535 (8- or 16-bit images)")
    return Image.fromarray(np.rint(a.astype(np.float64) / 257.0).astype(np.uint8), mode="L")


def decode(data: bytes, path: Path, size: int, color: str, max_pixels: int,
           log: DecodeLog | None = None, name: str | None = None) -> np.ndarray:
    """(C, size, size) uint8 of one image file; ``log`` collects what was converted (``name``:
    how the notes call the file, e.g. its path below the folder)."""
    from PIL import Image, UnidentifiedImageError

    name = name or str(path)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with Image.open(io.BytesIO(data)) as img:
                w, h = img.size  # from the header: a decompression bomb is refused before decoding
                if w * h > max_pixels:
                    raise DataError(f"image file {path}: {w}x{h} pixels; the cap is "
                                    f"{max_pixels:,} pixels per image")
                img.load()
                mode = img.mode
                if mode in SIXTEEN:
                    img = _sixteen_to_l(img, path)
                    if log is not None:
                        log.sixteen.append(name)
                elif (mode == "P" and "transparency" in img.info) or mode in ALPHA:
                    img = img.convert("RGBA")  # P -> RGBA keeps Pillow quiet about its palette
                    if log is not None:
                        log.alpha.append(name)
                elif mode not in CONVERTIBLE:
                    raise DataError(f"image file {path}: pixel mode {mode!r} is not supported; "
                                    "allowed: 1-bit, 8-bit or 16-bit gray, palette, RGB(A), CMYK")
                img = img.convert("L" if color == "gray" else "RGB")
                a = np.asarray(img.resize((size, size), Image.Resampling.BILINEAR), dtype=np.uint8)
    except DataError:
        raise
    except UnidentifiedImageError:
        raise DataError(f"image file {path}: cannot decode (not a PNG or JPEG image)") from None
    except Exception as exc:  # noqa: BLE001 - any decoder failure: a corrupt or unsupported file
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DataError(f"image file {path}: cannot decode ({reason})") from None
    if log is not None:
        log.sizes[(w, h)] += 1
        log.first_of_size.setdefault((w, h), name)
        if caught:
            log.pillow.append(f"{name}: {str(caught[0].message).splitlines()[0][:120]}")
    return a[None] if a.ndim == 2 else np.transpose(a, (2, 0, 1))

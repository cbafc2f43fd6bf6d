"""What a bundle may cost to read, counted on what is actually read, never on what the zip
declares: its central directory, its number of files, each file's inflated bytes, the bytes
held in memory for parsing and the bytes inflated in all (a zip bomb, or a file that inflates
beyond its declared size, stops at the cap). Files are read through :mod:`zipfile`'s stream in
chunks, so an import holds at most :data:`MAX_HELD` bytes of the bundle whatever it holds.

Names are checked against the layout (:mod:`cache.bundle.manifest`): a file a bundle does not
hold (a path outside it, a folder, a link, a device) is refused before anything is read.
"""

from __future__ import annotations

import hashlib
import io
import re
import stat
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cache.bundle import manifest as M
from cache.bundle.errors import BundleError

#: the most bytes any one file of a bundle may inflate to
MAX_ENTRY = 64 << 20
#: the most bytes of ``manifest.json``
MAX_MANIFEST = 4 << 20
#: the most bytes held in memory at once for parsing (runs, configs, specs, the notebook)
MAX_HELD = 128 << 20
#: the most bytes inflated in all (figures are hashed as they stream, never held)
MAX_TOTAL = 1 << 30
#: the most files in a bundle, and the most bytes of its central directory
MAX_ENTRIES = 5000
MAX_DIRECTORY = 2 << 20
#: bytes read from a file's stream at a time
CHUNK = 1 << 20
#: compression methods a bundle's files may use (privlab writes deflate)
METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)

_HEX64 = r"[0-9a-f]{64}"
_OWN = re.compile(rf"({re.escape(M.POINTS)}/{_HEX64}/({re.escape(M.RESULT)}|"
                  rf"{re.escape(M.ARRAYS)}))|({re.escape(M.FIGURES)}/[a-z0-9_-]{{1,100}}"
                  r"\.(html|png))")
_EOCD, _EOCD64_LOCATOR = b"PK\x05\x06", b"PK\x06\x07"
#: errors a damaged zip stream raises while it is read
STREAM_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError,
                 NotImplementedError, RuntimeError, ValueError, struct.error)


@dataclass
class Budget:
    """Bytes inflated in all and bytes held, against :data:`MAX_TOTAL` and :data:`MAX_HELD`."""

    total: int = 0
    held: int = 0

    def inflate(self, n: int, name: str) -> None:
        self.total += n
        if self.total > MAX_TOTAL:
            raise BundleError(f"bundle: its files inflate to more than {MAX_TOTAL >> 20} MB "
                              f"(stopped at {name}); refused, nothing imported")

    def hold(self, n: int, name: str) -> None:
        self.held += n
        if self.held > MAX_HELD:
            raise BundleError(f"bundle: its runs and specs take more than {MAX_HELD >> 20} MB "
                              f"(stopped at {name}); refused, nothing imported")


def allowed_name(name: str) -> bool:
    """Whether ``name`` is a file of the layout: the bundle's own files, a point's run, a
    figure, or an extra's plain file name (no folder, no leading dot)."""
    return name in (M.MANIFEST, M.CONFIG, M.RESULT, M.ARRAYS, M.SPEC, M.COMPARISON) \
        or bool(_OWN.fullmatch(name)) or (M.plain_name(name) and not M.reserved(name))


def directory_size(fp: IO[bytes], source: str) -> tuple[int, int]:
    """(entries, bytes) of the central directory as the end record states them, read before
    :mod:`zipfile` reads the directory into memory (zipfile trusts these numbers)."""
    fp.seek(0, io.SEEK_END)
    size = fp.tell()
    tail_len = min(size, 22 + 0xFFFF)
    fp.seek(size - tail_len)
    tail = fp.read(tail_len)
    # zipfile's order: an end record without a comment first, else the last one found
    at = len(tail) - 22 if tail[-22:-18] == _EOCD else tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
        raise BundleError(f"bundle: {source} is not a zip file")
    _, _, _, _, entries, cd_size, cd_offset, _ = struct.unpack("<4s4H2LH", tail[at:at + 22])
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
        loc_at = size - tail_len + at - 20
        if loc_at < 0:
            raise BundleError(f"bundle: {source} is not a zip file (a damaged zip64 record)")
        fp.seek(loc_at)
        sig, _, z64_at, _ = struct.unpack("<4sLQL", fp.read(20))
        if sig != _EOCD64_LOCATOR or z64_at > size - 56:
            raise BundleError(f"bundle: {source} is not a zip file (a damaged zip64 record)")
        fp.seek(z64_at)
        rec = struct.unpack("<4sQ2H2L4Q", fp.read(56))
        entries, cd_size = rec[7], rec[8]
    return int(entries), int(cd_size)


def open_zip(path: str | Path | bytes | IO[bytes]) -> tuple[zipfile.ZipFile, str]:
    """The bundle as a ZipFile and its name, its central directory bounded first."""
    if isinstance(path, (bytes, bytearray)):
        src: Any = io.BytesIO(path)
        name = "bundle"
    elif hasattr(path, "read"):
        src, name = path, Path(str(getattr(path, "name", "bundle"))).name
    else:
        p = Path(path).expanduser()
        if not p.is_file():
            raise BundleError(f"bundle: {p} is not a file")
        name = p.name
        try:
            src = open(p, "rb")  # noqa: SIM115 -- the ZipFile owns and closes it
        except OSError as exc:
            raise BundleError(f"bundle: cannot read {name} ({exc.strerror})") from None
    try:
        entries, cd_size = directory_size(src, name)
        if entries > MAX_ENTRIES or cd_size > MAX_DIRECTORY:
            raise BundleError(f"bundle: {name} lists {entries:,} files in {cd_size:,} bytes; "
                              f"allowed: at most {MAX_ENTRIES:,} files in "
                              f"{MAX_DIRECTORY >> 20} MB; refused")
        src.seek(0)
        zf = zipfile.ZipFile(src)
    except BundleError:
        if isinstance(path, (str, Path)):
            src.close()
        raise
    except (zipfile.BadZipFile, struct.error, EOFError, ValueError):
        if isinstance(path, (str, Path)):
            src.close()
        raise BundleError(f"bundle: {name} is not a zip file") from None
    except OSError as exc:
        raise BundleError(f"bundle: cannot read {name} ({exc.strerror})") from None
    if len(zf.infolist()) > MAX_ENTRIES:
        zf.close()
        raise BundleError(f"bundle: {name} holds more than {MAX_ENTRIES:,} files; refused")
    return zf, name


def check_entries(zf: zipfile.ZipFile, source: str) -> None:
    """Every file's name, type and method: a name twice, a name outside the layout (a path
    escape, a folder), a link or another non-regular file, an encrypted file or a method
    other than stored or deflate is refused before anything is read."""
    names = zf.namelist()
    if len(set(names)) != len(names):
        raise BundleError(f"bundle: {source} holds a file name twice; nothing imported")
    for info in zf.infolist():
        n = info.filename
        if not allowed_name(n):
            raise BundleError(f"bundle: {n[:120]!r} is not a file a bundle holds (a plain name "
                              "or its own layout); nothing imported")
        mode = info.external_attr >> 16
        if info.create_system == 3 and stat.S_IFMT(mode) not in (0, stat.S_IFREG):
            what = "a link" if stat.S_ISLNK(mode) else "not a regular file"
            raise BundleError(f"bundle: {n} is {what}; nothing imported")
        if info.flag_bits & 0x1:
            raise BundleError(f"bundle: {n} is encrypted; nothing imported")
        if info.compress_type not in METHODS:
            raise BundleError(f"bundle: {n} uses compression method {info.compress_type}; "
                              "allowed: stored or deflate; nothing imported")


def stream(zf: zipfile.ZipFile, name: str, budget: Budget, *, keep: bool,
           cap: int | None = None, each: Callable[[bytes], None] | None = None
           ) -> tuple[str, bytes | None]:
    """(sha256, the bytes if ``keep``) of file ``name``, read in chunks through zipfile's
    stream and stopped at ``cap`` bytes actually inflated (default :data:`MAX_ENTRY`; and at the
    budget's caps);
    ``each`` sees every chunk (a decoder checking it as it streams). A damaged stream, a
    wrong CRC or a size other than declared is a one-line BundleError."""
    cap = MAX_ENTRY if cap is None else cap
    info = zf.getinfo(name)
    if info.file_size > cap:
        raise BundleError(f"bundle: {name} declares {info.file_size:,} bytes; allowed: at most "
                          f"{cap >> 20} MB; nothing imported")
    digest = hashlib.sha256()
    parts: list[bytes] = []
    n = 0
    try:
        with zf.open(info) as fh:
            while True:
                chunk = fh.read(CHUNK)
                if not chunk:
                    break
                n += len(chunk)
                if n > cap:
                    raise BundleError(f"bundle: {name} inflates beyond {cap >> 20} MB; "
                                      "refused, nothing imported")
                budget.inflate(len(chunk), name)
                if keep:
                    budget.hold(len(chunk), name)
                    parts.append(chunk)
                digest.update(chunk)
                if each is not None:
                    each(chunk)
    except BundleError:
        raise
    except STREAM_ERRORS as exc:
        first = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
        raise BundleError(f"bundle: {name} is damaged ({type(exc).__name__}: {first}); "
                          "nothing imported") from None
    if n != info.file_size:
        raise BundleError(f"bundle: {name} inflates to {n:,} bytes where it declares "
                          f"{info.file_size:,}; nothing imported")
    return digest.hexdigest(), (b"".join(parts) if keep else None)

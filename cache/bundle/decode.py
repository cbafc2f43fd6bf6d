"""Every decoder a bundle's files go through, each bounded and each failure one line: strict
UTF-8, strict JSON (no NaN / Infinity literals) and YAML without aliases, both nested at most
:data:`MAX_DEPTH` levels; ``.npz`` arrays whose headers are checked against their sizes before
any array is made (no pickle, no array larger than the bytes that hold it); PNG by its
signature. Decoder, parser and recursion errors of hostile input never leave as anything but a
:class:`cache.bundle.errors.BundleError`."""

from __future__ import annotations

import codecs
import io
import json
import zipfile
from collections.abc import Callable
from typing import Any

from cache.bundle.errors import BundleError

#: the deepest nesting of a JSON or YAML file of a bundle (privlab writes fewer than 10)
MAX_DEPTH = 64
#: the most arrays one ``.npz`` of a run may hold
MAX_ARRAYS = 2000
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: files checked as UTF-8 text as they stream
TEXT_SUFFIXES = (".json", ".yaml", ".yml", ".html", ".py", ".ipynb", ".md", ".txt", ".csv")


def _refuse(name: str, what: str) -> BundleError:
    return BundleError(f"bundle: {name} {what}; nothing imported")


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:120] if text else type(exc).__name__


def text(data: bytes, name: str) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(name, f"is not UTF-8 text (byte {exc.start})") from None


def _check_depth(value: Any, name: str) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` (iterative: no recursion to exhaust)."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        v, depth = todo.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        if depth > MAX_DEPTH:
            raise _refuse(name, f"is nested deeper than {MAX_DEPTH} levels")
        todo.extend((c, depth + 1) for c in children)


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def load_json(data: bytes, name: str) -> Any:
    """Strict JSON of UTF-8 ``data`` (no NaN / Infinity), at most :data:`MAX_DEPTH` deep."""
    s = text(data, name)
    try:
        value = json.loads(s, parse_constant=_no_constant)
    except RecursionError:
        raise _refuse(name, f"is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise _refuse(name, f"is not JSON ({_first(exc)})") from None
    _check_depth(value, name)
    return value


def load_yaml(data: bytes, name: str) -> Any:
    """YAML of UTF-8 ``data`` by the safe loader, refused when it holds an alias (an alias
    bomb expands exponentially once traversed) or nests deeper than :data:`MAX_DEPTH`."""
    import yaml

    s = text(data, name)
    try:
        depth = 0
        for event in yaml.parse(s, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise _refuse(name, "uses a YAML alias (allowed: plain YAML)")
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _refuse(name, f"is nested deeper than {MAX_DEPTH} levels")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        return yaml.safe_load(s)
    except BundleError:
        raise
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise _refuse(name, f"is not YAML ({_first(exc)})") from None


def check_npz(data: bytes, name: str) -> None:
    """The ``.npz`` of a run read as a zip of ``.npy`` headers only: each array a plain
    (non-object) dtype whose declared bytes are exactly those its member holds, stored or
    deflated, at most :data:`MAX_ARRAYS` of them; np.load then makes no array larger than the
    bytes that hold it."""
    from numpy.lib import format as F

    from cache.bundle.limits import MAX_DIRECTORY, directory_size

    try:
        entries, cd_size = directory_size(io.BytesIO(data), name)
        if entries > MAX_ARRAYS or cd_size > MAX_DIRECTORY:
            raise _refuse(name, f"lists {entries:,} arrays in {cd_size:,} bytes; allowed: at "
                                f"most {MAX_ARRAYS}")
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
            if len(infos) > MAX_ARRAYS:
                raise _refuse(name, f"holds more than {MAX_ARRAYS} arrays")
            for info in infos:
                if not info.filename.endswith(".npy") or info.compress_type not in (
                        zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or info.flag_bits & 0x1:
                    raise _refuse(name, f"holds {info.filename[:60]!r}, not a plain .npy array")
                with z.open(info) as fh:
                    version = F.read_magic(fh)
                    if version not in ((1, 0), (2, 0), (3, 0)):
                        raise _refuse(name, f"holds an .npy of version {version}")
                    reader = F.read_array_header_1_0 if version == (1, 0) else \
                        F.read_array_header_2_0
                    shape, _, dtype = reader(fh)
                    header = fh.tell()
                if dtype.hasobject:
                    raise _refuse(name, f"holds {info.filename[:60]!r} of dtype object "
                                        "(it would need pickle)")
                count = 1
                for d in shape:
                    count *= int(d)
                if header + count * dtype.itemsize != info.file_size:
                    raise _refuse(name, f"holds {info.filename[:60]!r} whose header declares "
                                        "another size than it holds")
    except BundleError:
        raise
    except Exception as exc:  # noqa: BLE001 -- any decoder error of a hostile npz: one line
        raise _refuse(name, f"is not an .npz of arrays ({type(exc).__name__}: "
                            f"{_first(exc)})") from None


def check_png(data: bytes, name: str) -> None:
    if not bytes(data[:8]) == PNG_SIGNATURE:
        raise _refuse(name, "is not a PNG image")


def text_checker(name: str) -> tuple[Callable[[bytes], None], Callable[[], None]]:
    """(feed a chunk, finish) checking a streamed file as UTF-8 text, one line when not."""
    decoder = codecs.getincrementaldecoder("utf-8")()

    def feed(chunk: bytes) -> None:
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError:
            raise _refuse(name, "is not UTF-8 text") from None

    def done() -> None:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise _refuse(name, "is not UTF-8 text (it ends inside a character)") from None

    return feed, done

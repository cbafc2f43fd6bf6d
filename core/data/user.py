"""Your own data: a CSV table or a folder of images, registered by name (DESIGN: Data).

A registration is one JSON file ``<registry>/<name>.json`` (``$PRIVLAB_DATA_REGISTRY``, else
platformdirs' user config dir ``.../privlab/datasets``) holding the path, the chosen columns
and options, and a **fingerprint**: the sha256 of the files' contents and of those options.
The data itself is never copied; it is read from its path at every (memoised) load.

- **CSV** (``add_csv``): a header line of unique, non-empty names, comma-separated, UTF-8
  (else read as Latin-1, noted). One task column and one or more private columns (class
  labels, 2 to 100 distinct values, each held by at least 5 rows); rows where either is
  missing are dropped. Every other column (except ``ignore``) is a feature, preprocessed as
  Adult's (:mod:`core.data.tabular`): a column whose present cells are mostly numbers is
  numeric (every present cell must then be a finite number of magnitude at most 1e15;
  missing cells filled with the column median), standardised later with train-split
  statistics; any other column is categorical and one-hot encoded (at most 1,000 values;
  missing cells are the category ``?``). A feature with one value in every row is left out.
  The private columns are removed from the features, as Adult's.
- **Images** (``add_images``): one sub-folder per class (sorted names = label codes; at least
  5 images each), PNG or JPEG files anywhere below it (other files are ignored; hidden
  entries too), each decoded with Pillow, converted to grayscale or RGB (16-bit gray scaled to
  8 bits, alpha dropped) and resized to ``size`` x ``size`` (bilinear), values in [0, 1]. The
  private attribute comes from an optional ``attributes`` CSV (a ``file`` column with the
  path below the folder, ``cat/001.png``, or the bare file name when names are unique, plus
  one column per attribute; every image needs a row with a value), else it is derived as for
  the embedded ``faces`` set: ``bright`` = mean intensity above the median of all images.

**Cell by cell.** Every value is checked before anything trains on it
(:mod:`core.data.cells` for tables, :mod:`core.data.pixels` for images; their docstrings hold
the full rules): a bad value is refused with one line naming the file, the column and the row
(``row 1`` = the first data row below the header; blank lines are not counted), or imputed as
the rules say, and the registration's ``notes`` (printed by ``privlab data add``) say what was
imputed, how many cells, and where the first one is.

========================  ===================================================================
refused                   UTF-16 text, another separator than the comma, a duplicate or
                          empty column name, a row with more or fewer fields than the header,
                          ``inf`` / ``1e999``, ``|x| > 1e15``, a non-number in a mostly
                          numeric column, a label value held by fewer than 5 rows (or one
                          value only, or more than 100), an image Pillow cannot decode or
                          that is truncated, an image above 40 megapixels
imputed (noted)           not UTF-8: read as Latin-1; a missing cell (``""``, ``?``, ``NA``,
                          ``N/A``, ``#N/A``, ``NaN``, ``null``, ``None``, any case): the row
                          dropped (task / private), the median (numeric), the category ``?``
                          (categorical); a constant feature left out; a 16-bit image scaled,
                          an alpha channel dropped, images of other sizes resized
========================  ===================================================================

Caps, each checked while the files are streamed, before memory is spent on them (a hostile
file costs a bounded amount of memory; issue 21): a CSV of at most 512 MiB, 1,000,000 rows,
2,000 columns and 50,000,000 cells (its header is read first, then the file is hashed and its
lines counted in 1 MiB chunks; only then does pandas parse it, from the file, not from a copy);
100,000 images per folder (counted while the folder is walked) of at most 64 MiB and 40
megapixels each (checked from the header before decoding), 2**28 pixel values in all. Files
must be regular files (a FIFO or a device is refused without blocking), and a symbolic link
(file or folder) that leaves the image folder is refused. Image sizes 4 to 256. Every problem
is one line naming the file or column and what is allowed, at registration and again at load
time.

**Changed files.** The config layer copies the registration's fingerprint into
``data.fingerprint`` at validation, so the cache key (and every stage key) changes with the
files. A load re-hashes the files it reads: when they no longer match the registration it
refuses with a message that gives the command to register them again (which stores the new
fingerprint, and so new cache keys); it never silently reads data the key does not describe.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import re
import stat
import tempfile
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from core.data import cells, pixels, tabular
from core.data.builtin import DATASETS, DatasetInfo
from core.data.errors import DataError
from core.data.raw import RawData
from core.foundation.checks import range_error

ENV_REGISTRY = "PRIVLAB_DATA_REGISTRY"
FORMAT = 1
MAX_ROWS = 1_000_000
MAX_COLUMNS = 2_000
MAX_CELLS = 50_000_000  # rows x columns of a CSV (pandas holds each cell as a str object)
MAX_IMAGES = 100_000
MAX_FILE_BYTES = 512 * 1024**2  # a CSV
MAX_IMAGE_BYTES = 64 * 1024**2  # one image file, or an attributes CSV
MAX_IMAGE_PIXELS = 40_000_000  # one image before resizing (PIL warns at 89 M)
MAX_HEADER_BYTES = 1024**2  # the CSV's header line
MAX_VALUES = 2**28  # images x channels x pixels (1 GiB of float32)
CHUNK = 1024**2
MAX_LABELS = 100  # distinct values of a task or private column
MAX_CATEGORIES = 1000  # distinct values of a categorical feature column
MIN_ROWS = 10
SIZE_RANGE = (4, 256)
COLORS = ("gray", "rgb")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
MISSING = cells.MISSING  # compared after trimming and lower-casing
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # also the start of UTF-32 little-endian
NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,39}")
LOADER = "core.data.user:load_user"
_KEYS = {"name", "kind", "path", "fingerprint", "rows", "classes", "private"}


# ---------------------------------------------------------------------------------------------
# the registry directory


def registry_dir() -> Path:
    """``$PRIVLAB_DATA_REGISTRY``, else the user config dir ``.../privlab/datasets``."""
    from core.foundation.cache_root import registry_dir as user_registry

    return user_registry(ENV_REGISTRY, "datasets")


def _entry_path(name: str) -> Path:
    return registry_dir() / f"{name}.json"


def _read_entry(path: Path) -> dict[str, Any]:
    try:
        entry = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"registration {path}: unreadable ({type(exc).__name__}); remove it with "
                        f"`privlab data remove {path.stem}`") from None
    need = {"tabular": _KEYS | {"task", "features"}, "image": _KEYS | {"size", "color"}}
    if not isinstance(entry, dict) or entry.get("name") != path.stem or not need.get(
            entry.get("kind"), {"kind"}) <= set(entry):
        raise DataError(f"registration {path}: not a privlab registration; remove it with "
                        f"`privlab data remove {path.stem}`")
    return entry


def entries(*, with_broken: bool = False) -> dict[str, dict[str, Any]]:
    """Registered sets by name, sorted. Files that are not valid registrations (and names of
    built-in sets) are skipped, or with ``with_broken`` listed as ``{"name", "error"}``."""
    d = registry_dir()
    out: dict[str, dict[str, Any]] = {}
    if not d.is_dir():
        return out
    for path in sorted(d.glob("*.json")):
        if path.stem in DATASETS or not NAME_RE.fullmatch(path.stem):
            continue
        try:
            out[path.stem] = _read_entry(path)
        except DataError as exc:
            if with_broken:
                out[path.stem] = {"name": path.stem, "error": str(exc)}
    return out


def get_entry(name: str) -> dict[str, Any] | None:
    """The registration of ``name``, or None when there is none (DataError if it is broken)."""
    if name in DATASETS or not isinstance(name, str) or not NAME_RE.fullmatch(name):
        return None
    path = _entry_path(name)
    return _read_entry(path) if path.is_file() else None


def entry_info(entry: dict[str, Any]) -> DatasetInfo:
    """The registry's static description of a registered set."""
    classes = entry["classes"]
    shown = ", ".join(classes[:4]) + (", ..." if len(classes) > 4 else "")
    if entry["kind"] == "tabular":
        task = f"{entry['task']} ({len(classes)} classes: {shown})"
        desc = f"your CSV {entry['path']}: {entry['rows']:,} rows, {entry['features']} features"
    else:
        task = f"class ({len(classes)} classes: {shown})"
        s = entry["size"]
        desc = (f"your images {entry['path']}: {entry['rows']:,} images {s}x{s} {entry['color']}"
                + (f"; attributes from {entry['attributes']}" if entry.get("attributes")
                   else "; bright = mean intensity above the median"))
    return DatasetInfo(entry["name"], entry["kind"], "user", task, tuple(entry["private"]),
                       LOADER, desc)


def available(name: str) -> bool:
    """Whether a registered set's files are still there (not re-hashed: that is the load's job)."""
    entry = get_entry(name)
    if entry is None:
        return False
    paths = [entry["path"]] + ([entry["attributes"]] if entry.get("attributes") else [])
    return all(Path(p).exists() for p in paths)


def status(entry: dict[str, Any]) -> str:
    """``ok``, ``missing`` (the files are gone) or ``changed`` (size or modification time differ
    from the registration's: a load will refuse them until registered again); cheap: no hashing."""
    if "error" in entry:
        return "broken"
    try:
        stat = _stat_signature(entry)
    except OSError:
        return "missing"
    return "ok" if stat == entry.get("stat") else "changed"


def _stat_signature(entry: dict[str, Any]) -> list[int]:
    p = Path(entry["path"])
    if entry["kind"] == "tabular":
        st = p.stat()
        sig = [st.st_size, st.st_mtime_ns]
    else:
        if not p.is_dir():
            raise FileNotFoundError(p)
        files = [f for _, fs in _class_files(p) for f in fs]
        stats = [f.stat() for f in files]
        sig = [len(files), sum(s.st_size for s in stats), max((s.st_mtime_ns for s in stats), default=0)]
    if entry.get("attributes"):
        st = Path(entry["attributes"]).stat()
        sig += [st.st_size, st.st_mtime_ns]
    return sig


def _fingerprint(kind: str, content: str, options: dict[str, Any]) -> str:
    payload = json.dumps({"format": FORMAT, "kind": kind, "content": content, "options": options},
                         sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def check_name(name: str, *, replace: bool = False) -> None:
    """A new registration's name: lowercase, not a built-in set, not taken (unless ``replace``)."""
    if name in DATASETS:
        raise DataError(f"name: {name!r} is a built-in data set; choose another name "
                        f"(built-in: {', '.join(DATASETS)})")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise DataError(f"name: got {name!r}; allowed: 1-40 characters a-z, 0-9, _ and -, "
                        "starting with a letter")
    if not replace and _entry_path(name).exists():
        raise DataError(f"name: {name!r} is already registered; remove it first "
                        f"(privlab data remove {name}) or register with --replace")


def _write_entry(entry: dict[str, Any]) -> Path:
    d = registry_dir()
    d.mkdir(parents=True, exist_ok=True)
    dest = _entry_path(entry["name"])
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{dest.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(entry, fh, indent=2)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dest


def remove(name: str) -> Path:
    """Forget a registration (the data files are left untouched). Returns the removed file."""
    path = _entry_path(name) if isinstance(name, str) and NAME_RE.fullmatch(name) else None
    if name in DATASETS:
        raise DataError(f"name: {name!r} is a built-in data set; only registered sets can be removed")
    if path is None or not path.is_file():
        known = ", ".join(entries(with_broken=True)) or "none"
        raise DataError(f"name: {name!r} is not registered; registered: {known}")
    path.unlink()
    return path


def _add_command(entry: dict[str, Any]) -> str:
    """The ``privlab data add`` command that registers ``entry`` again."""
    if entry["kind"] == "tabular":
        cols = " ".join([f"--task {entry['task']}"] + [f"--private {c}" for c in entry["private"]]
                        + [f"--ignore {c}" for c in entry.get("ignore", [])])
        return f"privlab data add {entry['name']} --csv {entry['path']} {cols} --replace"
    extra = f" --attributes {entry['attributes']}" if entry.get("attributes") else ""
    return (f"privlab data add {entry['name']} --images {entry['path']} --size {entry['size']} "
            f"--color {entry['color']}{extra} --replace")


# ---------------------------------------------------------------------------------------------
# reading files


def _open_regular(path: Path, what: str, cap: int) -> tuple[int, os.stat_result]:
    """An fd of ``path`` if it is a regular file of at most ``cap`` bytes (a FIFO or a device
    is refused without blocking: opened non-blocking and checked by fstat before any read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except IsADirectoryError:
        raise DataError(f"{what} {path}: is a folder; expected a file") from None
    except OSError as exc:
        raise DataError(f"{what} {path}: cannot read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DataError(f"{what} {path}: not a regular file (a folder, FIFO or device); "
                            "expected a file")
        if st.st_size > cap:
            raise DataError(f"{what} {path}: {_mib(st.st_size)}; the cap is {_mib(cap)}")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _mib(n: int) -> str:
    return f"{n / 1024**3:.1f} GiB" if n >= 1024**3 else f"{n / 1024**2:.1f} MiB"


def _read_bytes(path: Path, what: str = "file", cap: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes (default :data:`MAX_IMAGE_BYTES`;
    read at most ``cap`` + 1: a file that grows past the cap while being read is refused)."""
    cap = MAX_IMAGE_BYTES if cap is None else cap
    fd, _ = _open_regular(path, what, cap)
    try:
        chunks, total = [], 0
        while chunk := os.read(fd, min(CHUNK, cap + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:
                raise DataError(f"{what} {path}: larger than the cap of {_mib(cap)}")
        return b"".join(chunks)
    except OSError as exc:
        raise DataError(f"{what} {path}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _scan_csv(path: Path) -> dict[str, Any]:
    """Stream a CSV once, in :data:`CHUNK` pieces, before anything parses it: the header's
    column count (capped at :data:`MAX_COLUMNS`), the number of lines (capped at
    :data:`MAX_ROWS`), the cells they make (:data:`MAX_CELLS`), the sha256 of the bytes,
    whether they are UTF-8, and the stat to detect a change before the parse. Memory: one chunk.
    """
    import codecs
    import csv

    fd, st = _open_regular(path, "file", MAX_FILE_BYTES)
    h = hashlib.sha256()
    decoder = codecs.getincrementaldecoder("utf-8")()
    utf8, total, lines, columns = True, 0, 0, None
    head = b""
    try:
        while chunk := os.read(fd, CHUNK):
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise DataError(f"file {path}: larger than the cap of {_mib(MAX_FILE_BYTES)}")
            h.update(chunk)
            if total == len(chunk):
                _refuse_utf16(chunk, path)
            if total <= 65536 and b"\x00" in chunk:
                raise DataError(f"file {path} is not a CSV (binary content); expected "
                                "comma-separated text with a header line")
            if utf8:
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError:
                    utf8 = False
            if columns is None:
                head += chunk
                end = head.find(b"\n")
                if end < 0 and len(head) > MAX_HEADER_BYTES:
                    raise DataError(f"file {path}: the header line is longer than "
                                    f"{_mib(MAX_HEADER_BYTES)}; expected a CSV with a header line")
                if end >= 0 or len(chunk) < CHUNK:
                    line = head[: end if end >= 0 else len(head)]
                    text = line.decode("utf-8-sig" if utf8 else "latin-1", errors="replace")
                    columns = len(next(csv.reader([text]), []))
                    head = b""
                    if columns > MAX_COLUMNS:
                        raise DataError(f"file {path} has {columns:,} columns; the cap is "
                                        f"{MAX_COLUMNS:,} (leave the others out of the file)")
            lines += chunk.count(b"\n")
            if lines > MAX_ROWS + 1:  # the header line and MAX_ROWS rows
                raise DataError(f"file {path} has more than {MAX_ROWS:,} rows; the cap is "
                                f"{MAX_ROWS:,} (subsample it first)")
            if columns and lines * columns > MAX_CELLS:
                raise DataError(f"file {path} has more than {MAX_CELLS:,} cells (rows x "
                                f"{columns:,} columns); the cap is {MAX_CELLS:,}")
        if utf8:
            try:
                decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                utf8 = False
    except OSError as exc:
        raise DataError(f"file {path}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    return {"sha256": h.hexdigest(), "bytes": total, "utf8": utf8, "columns": columns or 0,
            "stat": (st.st_size, st.st_mtime_ns, st.st_ino)}


def _refuse_utf16(head: bytes, path: Path) -> None:
    if head.startswith(UTF16_BOMS) or head.startswith(b"\x00\x00\xfe\xff"):
        raise DataError(f"file {path} is UTF-16 or UTF-32 text (byte-order mark); allowed: "
                        "UTF-8 (or Latin-1); save it as CSV UTF-8")


def _parse_csv(data: bytes | Path, path: Path, *, utf8: bool | None = None):
    """A CSV (its bytes, or the file itself after :func:`_scan_csv` checked its caps) as a
    DataFrame of stripped strings (no NA conversion)."""
    import pandas as pd

    if isinstance(data, bytes):
        if not data.strip():
            raise DataError(f"file {path} is empty; expected a CSV with a header line")
        _refuse_utf16(data[:4], path)
        if b"\x00" in data[:65536]:
            raise DataError(f"file {path} is not a CSV (binary content); expected comma-separated "
                            "text with a header line")
        header = data[: data.find(b"\n")] if b"\n" in data else data
        if header.count(b",") + 1 > MAX_COLUMNS:
            raise DataError(f"file {path} has more than {MAX_COLUMNS:,} columns; the cap is "
                            f"{MAX_COLUMNS:,}")
        try:
            text: str | Path = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
        source: Any = io.StringIO(text)
        encoding = None
        codec = "utf-8"
    else:
        text = source = data
        encoding = codec = "utf-8-sig" if utf8 else "latin-1"
    names = cells.header_names(text, codec)
    cells.check_header(names, path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(source, dtype=str, keep_default_na=False, na_filter=False,
                             index_col=False, skipinitialspace=True, nrows=MAX_ROWS + 1,
                             encoding=encoding)
    except (pd.errors.ParserWarning, pd.errors.ParserError) as exc:
        found = cells.find_ragged(text, codec, len(names))
        if found is not None:
            raise cells.ragged_error(path, found, len(names)) from None
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DataError(f"file {path} is not a CSV: {first}") from None
    except (pd.errors.EmptyDataError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DataError(f"file {path} is not a CSV: {first}") from None
    if df.shape[1] < 2:
        raise DataError(f"file {path} is not a CSV: found {df.shape[1]} column "
                        f"({', '.join(map(str, df.columns))}); expected comma-separated columns "
                        "with a header line" + cells.separator_hint(",".join(names)))
    if len(df) > MAX_ROWS:
        raise DataError(f"file {path} has more than {MAX_ROWS:,} rows; the cap is {MAX_ROWS:,} "
                        "(subsample it first)")
    # pandas fills a short row's missing fields with "": they can only hide in the last column
    if (df.iloc[:, -1] == "").any():
        found = cells.find_ragged(text, codec, len(names))
        if found is not None:
            raise cells.ragged_error(path, found, len(names))
    df.columns = [str(c).strip() for c in df.columns]
    return df.apply(lambda s: s.str.strip())


def _require_columns(df, cols: Sequence[str], role: str, path: Path) -> None:
    for c in cols:
        if c not in df.columns:
            raise DataError(f"{role} column {c!r} is not in {path}; its columns: "
                            f"{', '.join(map(str, df.columns))}")


def _codes(s, role: str, col: str, path: Path, rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Label codes of a task / private column with 2..MAX_LABELS values, each held by at least
    :data:`core.data.cells.MIN_CLASS_ROWS` rows (``rows``: the 1-based file row of each cell)."""
    codes, values = tabular.label_codes(s)
    if len(values) < 2:
        only = f" ({values[0]!r})" if values else ""
        need = "a task needs" if role == "task" else "a private attribute needs"
        raise DataError(f"{role} column {col!r} has one value only{only} in {path}; "
                        f"{need} at least 2")
    if len(values) > MAX_LABELS:
        raise DataError(f"{role} column {col!r} has {len(values):,} distinct values in {path}; "
                        f"allowed: 2 to {MAX_LABELS} (a class label; bin a numeric column first)")
    cells.check_label_counts(codes, values, role, col, path, rows)
    return codes, values


# ---------------------------------------------------------------------------------------------
# CSV sets


def _read_csv_set(path: Path, task: str, private: Sequence[str], ignore: Sequence[str],
                  expect: dict[str, Any] | None = None) -> tuple[RawData, dict[str, Any]]:
    """Read and validate a CSV set; ``expect`` (a registration) makes a changed file an error.
    Returns the RawData and the registration fields derived from the file."""
    scan = _scan_csv(path)  # caps on bytes, columns, rows and cells before any parsing
    if scan["bytes"] == 0:
        raise DataError(f"file {path} is empty; expected a CSV with a header line")
    content = scan["sha256"]
    options = {"task": task, "private": list(private), "ignore": sorted(ignore)}
    fp = _fingerprint("tabular", content, options)
    if expect is not None and fp != expect["fingerprint"]:
        raise _changed(expect, str(path))
    if not private:
        raise DataError("private: no private column given; name at least one (--private COL)")
    if task in private:
        raise DataError(f"private column {task!r} is also the task column; choose another")
    if len(set(private)) != len(private):
        raise DataError(f"private: got {list(private)}; each column at most once")
    df = _parse_csv(path, path, utf8=scan["utf8"])
    try:
        st = path.stat()
    except OSError as exc:
        raise DataError(f"file {path}: cannot read ({exc.strerror or exc})") from None
    if (st.st_size, st.st_mtime_ns, st.st_ino) != scan["stat"]:
        raise DataError(f"file {path} changed while it was being read; try again")
    _require_columns(df, [task], "task", path)
    _require_columns(df, private, "private", path)
    _require_columns(df, ignore, "ignored", path)
    notes: list[str] = []
    if not scan["utf8"]:
        where = cells.first_non_utf8(df)
        at = f"column {where[0]!r}, row {where[1]}" if where else "the header"
        notes.append(f"not UTF-8 (first at {at}); read as Latin-1 (save the file as UTF-8 if "
                     "its text looks wrong)")
    lacking = np.zeros(len(df), dtype=bool)
    for col in (task, *private):
        lacking |= cells.missing_mask(df[col])
    keep = ~lacking
    dropped = int(lacking.sum())
    if dropped:
        notes.append(f"{cells.count(dropped, 'row')} without a task or private value dropped (first: row "
                     f"{int(np.argmax(lacking)) + 1})")
    rows = np.flatnonzero(keep) + 1  # the file row of each kept row
    df = df[keep].reset_index(drop=True)
    if len(df) < MIN_ROWS:
        raise DataError(f"file {path} has {len(df)} rows with a task and private value; "
                        f"at least {MIN_ROWS} needed")
    y, labels = _codes(df[task], "task", task, path, rows)
    attrs, values = {}, {}
    for col in private:
        attrs[col], values[col] = _codes(df[col], "private", col, path, rows)
    drop = {task, *private, *ignore}
    feats = [c for c in df.columns if c not in drop]
    numeric, constant, feat_notes = cells.split_features(df, feats, path, rows)
    notes += feat_notes
    feats = [c for c in feats if c not in constant]
    if not feats:
        raise DataError(f"file {path} has no feature columns left after the task, private, "
                        "ignored and constant columns; a model needs at least one")
    for c in feats:
        if c in numeric:
            continue
        n = df[c].nunique()
        if n > MAX_CATEGORIES:
            raise DataError(f"column {c!r} of {path} is categorical with {n:,} distinct values; "
                            f"the cap is {MAX_CATEGORIES:,} (leave it out with --ignore {c})")
    X = tabular.feature_frame(df, numeric=numeric, drop=drop | set(constant), missing=("",))
    note = f"; {dropped:,} rows without a task or private value dropped" if dropped else ""
    raw = RawData(X=X, y=y, task_name=task, label_names=labels, attributes=attrs,
                  attribute_values=values, notes=notes,
                  description=f"your CSV {path}: {len(df):,} rows, task {task}, private "
                  f"{', '.join(private)}; {len(numeric)} numeric and {len(feats) - len(numeric)} "
                  f"categorical features{note}")
    fields = {"content_sha256": content, "fingerprint": fp, "rows": len(df), "classes": labels,
              "features": len(feats), "numeric": numeric, "dropped_rows": dropped,
              "notes": notes}
    return raw, fields


def add_csv(name: str, path: str | Path, task: str, private: Sequence[str],
            ignore: Sequence[str] = (), *, replace: bool = False) -> dict[str, Any]:
    """Validate a CSV set and register it as ``name``; returns the stored registration."""
    check_name(name, replace=replace)
    p = Path(path).expanduser().resolve()
    _, fields = _read_csv_set(p, task, list(private), list(ignore))
    entry = {"format": FORMAT, "name": name, "kind": "tabular", "path": str(p), "task": task,
             "private": list(private), "ignore": sorted(ignore), **fields,
             "registered": datetime.now(UTC).isoformat(timespec="seconds")}
    entry["stat"] = _stat_signature(entry)
    _write_entry(entry)
    return entry


# ---------------------------------------------------------------------------------------------
# image sets


def _inside(path: Path, root_real: Path, root: Path) -> None:
    """Refuse a symbolic link (file or folder) whose target leaves the image folder."""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # dangling or looping link
        raise DataError(f"image folder {root}: {path} is a broken symbolic link; remove it"
                        ) from None
    if target != root_real and root_real not in target.parents:
        raise DataError(f"image folder {root}: {path} is a symbolic link to {target}, outside "
                        "the folder; refused (copy the file into the folder instead)")


def _class_files(root: Path) -> list[tuple[str, list[Path]]]:
    """(class name, sorted image files below it) per non-hidden sub-folder, sorted by name.
    Streamed: the count is checked against :data:`MAX_IMAGES` while the folders are walked,
    and every symbolic link met is checked to stay inside ``root``."""
    root_real = root.resolve()
    out, n = [], 0
    with os.scandir(root) as it:
        dirs = sorted((e for e in it if not e.name.startswith(".") and e.is_dir()),
                      key=lambda e: e.name)
    for entry in dirs:
        d = Path(entry.path)
        if entry.is_symlink():
            _inside(d, root_real, root)
        files = []
        for base, subdirs, names in os.walk(d, followlinks=False):
            b = Path(base)
            subdirs[:] = sorted(x for x in subdirs if not x.startswith("."))
            for x in subdirs:
                if (b / x).is_symlink():  # not followed by the walk; a link leaving is refused
                    _inside(b / x, root_real, root)
            for name in names:
                if name.startswith(".") or Path(name).suffix.lower() not in IMAGE_SUFFIXES:
                    continue
                f = b / name
                if f.is_symlink():
                    _inside(f, root_real, root)
                if not f.is_file():
                    continue
                n += 1
                if n > MAX_IMAGES:
                    raise DataError(f"folder {root} has more than {MAX_IMAGES:,} images; the "
                                    f"cap is {MAX_IMAGES:,}")
                files.append(f)
        out.append((entry.name, sorted(files)))
    return out


def _attributes_table(data: bytes, path: Path, rel: list[str]) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """Private attributes of the images ``rel`` (paths below the folder) from a mapping CSV."""
    df = _parse_csv(data, path)
    _require_columns(df, ["file"], "file", path)
    cols = [c for c in df.columns if c != "file"]
    keys = df["file"].str.replace("\\", "/", regex=False)
    bare = not keys.str.contains("/").any()
    wanted = [r.rsplit("/", 1)[-1] for r in rel] if bare else list(rel)
    if bare and len(set(wanted)) != len(wanted):
        raise DataError(f"attributes file {path}: the 'file' column gives bare file names, but "
                        "image names repeat across class folders; give the path below the "
                        "folder instead (e.g. cat/001.png)")
    dup = keys[keys.duplicated()]
    if len(dup):
        raise DataError(f"attributes file {path}: file {dup.iloc[0]!r} has more than one row")
    index = {k: i for i, k in enumerate(keys)}
    missing = [w for w in wanted if w not in index]
    if missing:
        raise DataError(f"attributes file {path}: no row for image {missing[0]!r}"
                        + (f" and {len(missing) - 1:,} more" if len(missing) > 1 else "")
                        + "; every image needs one")
    rows = df.iloc[[index[w] for w in wanted]].reset_index(drop=True)
    attrs, values = {}, {}
    file_rows = np.asarray([index[w] + 1 for w in wanted], dtype=np.int64)
    for c in cols:
        empty = cells.missing_mask(rows[c])
        if empty.any():
            i = int(np.argmax(empty))
            raise DataError(f"file {path}, column {c!r}, row {file_rows[i]}: no value for image "
                            f"{wanted[i]!r}; every image needs one (missing: "
                            f"{cells.count(int(empty.sum()), 'image')})")
        attrs[c], values[c] = _codes(rows[c], "private", c, path, file_rows)
    return attrs, values


def _image_classes(root: Path, size: int, color: str) -> list[tuple[str, list[Path]]]:
    """The class folders of ``root`` with their image files, after checking the options, that
    every class has an image and that the decoded set stays under the value cap."""
    if not isinstance(size, int) or not SIZE_RANGE[0] <= size <= SIZE_RANGE[1]:
        raise DataError(str(range_error("size", size, *SIZE_RANGE, integer=True)))
    if color not in COLORS:
        raise DataError(f"color: got {color!r}; allowed: {', '.join(COLORS)}")
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise DataError(f"folder {root} {what}; expected one sub-folder of PNG/JPEG images per class")
    try:
        classes = _class_files(root)
    except OSError as exc:
        raise DataError(f"folder {root}: cannot read ({exc.strerror or exc})") from None
    if not classes:
        raise DataError(f"folder {root} has no class sub-folders; expected one sub-folder of "
                        "PNG/JPEG images per class")
    n = sum(len(fs) for _, fs in classes)  # at most MAX_IMAGES: _class_files stops beyond
    for cname, fs in classes:
        if not fs:
            others = sum(1 for f in itertools.islice((root / cname).rglob("*"), 10_000)
                         if f.is_file())
            raise DataError(f"class folder {root / cname} has no PNG/JPEG images"
                            + (f" (found {others} other files)" if others else "")
                            + "; every class needs at least one")
    channels = 1 if color == "gray" else 3
    if n * channels * size * size > MAX_VALUES:
        raise DataError(f"folder {root}: {n:,} images of {channels}x{size}x{size} are "
                        f"{n * channels * size * size:,} values; the cap is {MAX_VALUES:,} "
                        "(choose a smaller size)")
    return classes


def _decode_classes(root: Path, classes: list[tuple[str, list[Path]]], size: int, color: str
                    ) -> tuple[Any, list[np.ndarray], list[int], list[str], DataError | None,
                               pixels.DecodeLog]:
    """Hash every file (class names, paths and bytes) and decode the images until the first
    that fails: (hash, images, class codes, relative paths, the first decode error, log). The
    error is held back so that a changed folder is reported before it."""
    h = hashlib.sha256()
    images, y, rel = [], [], []
    bad: DataError | None = None
    log = pixels.DecodeLog()
    for code, (cname, fs) in enumerate(classes):
        h.update(f"class\t{cname}\n".encode())
        for f in fs:
            data = _read_bytes(f, "image file")
            r = f.relative_to(root).as_posix()
            h.update(f"{r}\t{hashlib.sha256(data).hexdigest()}\n".encode())
            rel.append(r)
            y.append(code)
            if bad is None:
                try:
                    images.append(pixels.decode(data, f, size, color, MAX_IMAGE_PIXELS, log, r))
                except DataError as exc:
                    bad = exc
    return h, images, y, rel, bad, log


def _check_class_counts(root: Path, classes: list[tuple[str, list[Path]]]) -> None:
    """At least 2 classes, each with enough images for every split to see it."""
    if len(classes) < 2:
        raise DataError(f"folder {root} has one class folder only ({classes[0][0]!r}); a task "
                        "needs at least 2")
    for cname, fs in classes:
        if len(fs) < cells.MIN_CLASS_ROWS:
            raise DataError(f"class folder {root / cname} has {len(fs)} image"
                            f"{'s' if len(fs) != 1 else ''}; allowed: at least "
                            f"{cells.MIN_CLASS_ROWS} per class (some split would never see it)")


def _image_attributes(X: np.ndarray, root: Path, attributes: Path | None,
                      attr_data: bytes | None, rel: list[str]
                      ) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """The private attributes: the attributes CSV's columns, or 'bright' (mean intensity
    above the median) without one."""
    if attributes is not None and attr_data is not None:
        return _attributes_table(attr_data, attributes, rel)
    ink = X.mean(axis=1)
    bright = (ink > np.median(ink)).astype(np.int64)
    if len(np.unique(bright)) < 2:
        raise DataError(f"private attribute 'bright' (mean intensity above the median) has "
                        f"one value only in {root}: the images are equally bright; give "
                        "an attributes CSV instead")
    return {"bright": bright}, {"bright": ["dark", "bright"]}


def _read_image_set(root: Path, size: int, color: str, attributes: Path | None,
                    expect: dict[str, Any] | None = None) -> tuple[RawData, dict[str, Any]]:
    classes = _image_classes(root, size, color)
    h, images, y, rel, bad, log = _decode_classes(root, classes, size, color)
    attr_data = attr_sha = None
    if attributes is not None:
        attr_data = _read_bytes(attributes, "attributes file")
        attr_sha = hashlib.sha256(attr_data).hexdigest()
    options = {"size": size, "color": color, "attributes_sha256": attr_sha}
    fp = _fingerprint("image", h.hexdigest(), options)
    if expect is not None and fp != expect["fingerprint"]:
        raise _changed(expect, str(root) + (f" or {attributes}" if attributes else ""))
    if bad is not None:
        raise bad
    _check_class_counts(root, classes)
    X = np.stack(images).astype(np.float32) / np.float32(255.0)
    del images
    shape = tuple(int(v) for v in X.shape[1:])
    X = np.ascontiguousarray(X.reshape(len(X), -1), dtype=np.float32)
    y_arr = np.asarray(y, dtype=np.int64)
    attrs, values = _image_attributes(X, root, attributes, attr_data, rel)
    labels = [c for c, _ in classes]
    notes = log.notes(size)
    raw = RawData(X=X, y=y_arr, task_name="class", label_names=labels, attributes=attrs,
                  attribute_values=values, image_shape=shape, notes=notes,  # type: ignore[arg-type]
                  description=f"your images {root}: {len(X):,} images {size}x{size} {color}, "
                  f"{len(labels)} classes; private {', '.join(attrs)}")
    fields = {"content_sha256": h.hexdigest(), "attributes_sha256": attr_sha, "fingerprint": fp,
              "rows": len(X), "classes": labels, "private": list(attrs), "notes": notes}
    return raw, fields


def add_images(name: str, path: str | Path, *, size: int = 28, color: str = "gray",
               attributes: str | Path | None = None, replace: bool = False) -> dict[str, Any]:
    """Validate an image folder and register it as ``name``; returns the stored registration."""
    check_name(name, replace=replace)
    root = Path(path).expanduser().resolve()
    attr = Path(attributes).expanduser().resolve() if attributes else None
    _, fields = _read_image_set(root, size, color, attr)
    entry = {"format": FORMAT, "name": name, "kind": "image", "path": str(root), "size": size,
             "color": color, "attributes": str(attr) if attr else None, **fields,
             "registered": datetime.now(UTC).isoformat(timespec="seconds")}
    entry["stat"] = _stat_signature(entry)
    _write_entry(entry)
    return entry


# ---------------------------------------------------------------------------------------------
# loading


def _changed(entry: dict[str, Any], what: str) -> DataError:
    return DataError(f"data set {entry['name']!r}: {what} changed since it was registered "
                     f"(or its registration was edited); register it again: {_add_command(entry)}")


def current_fingerprint(name: str, given: str | None = None) -> str:
    """The registration's fingerprint; a ``given`` one (from a config) must equal it."""
    entry = get_entry(name)
    if entry is None:
        raise DataError(f"data.name: {name!r} is not registered (any more); registered: "
                        f"{', '.join(entries()) or 'none'}")
    if given is not None and given != entry["fingerprint"]:
        raise DataError(f"data.fingerprint: got {given[:12]!r}...; data set {name!r} is "
                        f"registered with {entry['fingerprint'][:12]!r}... now (its files or options "
                        "changed since this config was made); leave data.fingerprint out to use the "
                        "current files")
    return entry["fingerprint"]


def load_user(spec, seed: int = 0) -> RawData:
    """A registered set as RawData, its files re-hashed against the registration."""
    current_fingerprint(spec.name, getattr(spec, "fingerprint", None))
    entry = get_entry(spec.name)
    assert entry is not None
    p = Path(entry["path"])
    if entry["kind"] == "tabular":
        raw, _ = _read_csv_set(p, entry["task"], entry["private"], entry.get("ignore", []), entry)
    else:
        attr = Path(entry["attributes"]) if entry.get("attributes") else None
        raw, _ = _read_image_set(p, entry["size"], entry["color"], attr, entry)
    return raw


def column(name: str, col: str) -> tuple[np.ndarray, str]:
    """Column ``col`` of registered CSV set ``name``, one value per row of the data set (the
    rows the registration keeps), and the registration's fingerprint. ``col`` must be one of
    its ignored columns: a column the model reads as a feature is no label of membership."""
    entry = get_entry(name)
    if entry is None:
        raise DataError(f"data.name: {name!r} is not registered; registered: "
                        f"{', '.join(entries()) or 'none'}")
    if entry["kind"] != "tabular":
        raise DataError(f"members column {col!r}: data set {name!r} holds images; give the "
                        "members as a file of row indices")
    if col not in entry.get("ignore", []):
        raise DataError(f"members column {col!r}: not an ignored column of {name!r} (ignored: "
                        f"{', '.join(entry.get('ignore', [])) or 'none'}); register the set "
                        f"with --ignore {col} so that the model never reads it")
    fp = current_fingerprint(name)
    p = Path(entry["path"])
    scan = _scan_csv(p)
    if _fingerprint("tabular", scan["sha256"], {"task": entry["task"], "private": list(entry["private"]),
                                                "ignore": sorted(entry.get("ignore", []))}) != fp:
        raise _changed(entry, str(p))
    df = _parse_csv(p, p, utf8=scan["utf8"])
    _require_columns(df, [col], "members", p)
    lacking = np.zeros(len(df), dtype=bool)
    for c in (entry["task"], *entry["private"]):
        lacking |= cells.missing_mask(df[c])
    return df[col].to_numpy()[~lacking], fp

"""``python -m benchmarks userfiles``: every class of bad value in a user's CSV or image folder,
registered through :mod:`core.data.user`, must be refused with one line naming the file (and
the column and row where a cell is at fault) or imputed with a note saying so and how many
cells; none may crash, warn, or leave a non-finite value in the loaded set.

Each case of :data:`CASES` builds a tiny bad file (the tests in ``tests/test_userfiles.py``
run the same table), registers it in a scratch registry with every warning recorded, and is
counted ``refused``, ``imputed`` or ``crashed`` (an exception other than a one-line
``DataError``, an outcome other than the documented one, a message not naming what it should,
a Python warning, or NaN / inf in the loaded features). Then the checks are timed on a
50,000-row CSV (registration end to end, the cell checks alone, and pandas' parse of the same
file as the reference in the same process), reported in rows per second.

Headline: ``user_file_value_classes_checked`` (the class names), ``user_file_crashes`` (0).
A full run also sets ``user_file_value_classes_checked`` in ``results/trust.json``'s headline,
keeping the other keys there.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import struct
import tempfile
import time
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

TRUST = Path(__file__).resolve().parent / "results" / "trust.json"
N = 60  # rows of the base CSV
BAD = 6  # the index of the bad row: "row 7" in messages
BENCH_ROWS = 50_000


@dataclass(frozen=True)
class Case:
    """A bad-file class: ``build(d)`` writes the file(s) under ``d`` and returns the keyword
    arguments of ``add_csv`` (``csv=...``) or ``add_images`` (``images=...``); ``expect`` is
    ``refused`` or ``imputed``; ``pattern`` must match the refusal or one of the notes."""
    name: str
    build: Callable[[Path], dict[str, Any]]
    expect: str
    pattern: str


# ---------------------------------------------------------------------------------------------
# CSV builders


def base_frame(n: int = N, seed: int = 0):
    """age and score numeric, city categorical, sex private, income the task (all strings)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    u = np.arange(n) % 2
    y = np.where(rng.random(n) < 0.8, u, 1 - u)
    return pd.DataFrame({
        "age": rng.normal(40, 10, n).round(1).astype(str),
        "score": (rng.normal(size=n) + y).round(3).astype(str),
        "city": rng.choice(["north", "south", "east"], n),
        "sex": np.where(u == 1, "M", "F"),
        "income": np.where(y == 1, "hi", "lo"),
    })


def _csv(edit: Callable | None = None, *, n: int = N, encoding: str = "utf-8",
         text: Callable[[str], str | bytes] | None = None) -> Callable[[Path], dict[str, Any]]:
    def build(d: Path) -> dict[str, Any]:
        df = base_frame(n)
        if edit is not None:
            df = edit(df)
        body = df.to_csv(index=False, lineterminator="\n")
        out = text(body) if text is not None else body
        path = d / "t.csv"
        path.write_bytes(out if isinstance(out, bytes) else out.encode(encoding))
        return {"csv": path, "task": "income", "private": ["sex"]}
    return build


def _cell(col: str, value: str, row: int = BAD) -> Callable:
    def edit(df):
        df.loc[row, col] = value
        return df
    return edit


def _cells(col: str, values: dict[int, str]) -> Callable:
    def edit(df):
        for row, v in values.items():
            df.loc[row, col] = v
        return df
    return edit


def _column(col: str, values) -> Callable:
    def edit(df):
        df[col] = values(len(df)) if callable(values) else values
        return df
    return edit


def _line(fn: Callable[[str], str], row: int = BAD) -> Callable[[str], str]:
    """Edit the text line of data row ``row`` (0-based; the header is line 0)."""
    def text(body: str) -> str:
        lines = body.split("\n")
        lines[row + 1] = fn(lines[row + 1])
        return "\n".join(lines)
    return text


# ---------------------------------------------------------------------------------------------
# image builders


def _png(a: np.ndarray, **kw) -> bytes:
    from PIL import Image

    b = io.BytesIO()
    Image.fromarray(a).save(b, "PNG", **kw)
    return b.getvalue()


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` (a decompression bomb's first bytes)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(b"\x00" * 1024)) + chunk(b"IEND", b""))


def image_folder(root: Path, classes=("cat", "dog"), per_class: int = 6, side: int = 12) -> Path:
    """Class folders of 8-bit gray PNGs whose brightness varies from image to image."""
    rng = np.random.default_rng(0)
    for c in classes:
        (root / c).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            a = np.clip(rng.uniform(20, 230) + rng.normal(0, 10, (side, side)), 0, 255)
            (root / c / f"{c}_{i:02d}.png").write_bytes(_png(a.astype(np.uint8)))
    return root


def _images(extra: Callable[[Path], Any] | None = None, **folder) -> Callable[[Path], dict[str, Any]]:
    def build(d: Path) -> dict[str, Any]:
        root = image_folder(d / "pets", **folder)
        kw: dict[str, Any] = {"images": root, "size": 8}
        if extra is not None:
            kw.update(extra(root) or {})
        return kw
    return build


def _put(rel: str, data: bytes | Callable[[], bytes]) -> Callable[[Path], None]:
    def extra(root: Path) -> None:
        (root / rel).write_bytes(data() if callable(data) else data)
    return extra


def _valid_png() -> bytes:
    rng = np.random.default_rng(1)
    return _png(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8))


def _jpeg(mode: str = "RGB") -> bytes:
    from PIL import Image

    rng = np.random.default_rng(2)
    b = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)).convert(mode).save(b, "JPEG")
    return b.getvalue()


def _sixteen() -> bytes:
    return _png(np.arange(144, dtype=np.uint16).reshape(12, 12) * 400)


def _modes(root: Path) -> None:
    from PIL import Image

    rng = np.random.default_rng(3)
    rgb = Image.fromarray(rng.integers(0, 255, (12, 12, 3), dtype=np.uint8))
    b = io.BytesIO()
    rgb.quantize(16).save(b, "PNG", transparency=bytes(range(16)))  # palette + bytes alpha
    (root / "cat" / "palette.png").write_bytes(b.getvalue())
    b = io.BytesIO()
    rgb.convert("RGBA").save(b, "PNG")
    (root / "cat" / "rgba.png").write_bytes(b.getvalue())
    b = io.BytesIO()
    rgb.convert("1").save(b, "PNG")
    (root / "dog" / "bits.png").write_bytes(b.getvalue())
    (root / "dog" / "cmyk.jpg").write_bytes(_jpeg("CMYK"))


def _attributes(values: Callable[[int], list[str]]) -> Callable[[Path], dict[str, Any]]:
    def extra(root: Path) -> dict[str, Any]:
        files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.png"))
        owner = values(len(files))
        path = root.parent / "attrs.csv"
        path.write_text("file,owner\n" + "".join(f"{f},{o}\n" for f, o in zip(files, owner)))
        return {"attributes": path}
    return extra


def _keep_two(cls: str) -> Callable[[Path], None]:
    def extra(root: Path) -> None:
        for p in sorted((root / cls).iterdir())[2:]:
            p.unlink()
    return extra


def _owners(n: int) -> list[str]:
    return ["ann" if i % 2 else "bob" for i in range(n)]


# ---------------------------------------------------------------------------------------------
# the classes

R = BAD + 1
CASES: list[Case] = [
    # the file as a whole
    Case("non_utf8", _csv(_cell("city", "caf\xe9"), encoding="latin-1"), "imputed",
         rf"not UTF-8 \(first at column 'city', row {R}\); read as Latin-1"),
    Case("utf16", _csv(text=lambda t: t.encode("utf-16")), "refused",
         r"t\.csv is UTF-16 or UTF-32 text"),
    Case("binary", _csv(text=lambda t: b"a,b\n\x00\x01\x02" * 50), "refused",
         r"t\.csv is not a CSV \(binary content\)"),
    Case("empty_file", _csv(text=lambda t: b""), "refused", r"t\.csv is empty"),
    Case("bad_delimiter", _csv(text=lambda t: t.replace(",", ";")), "refused",
         r"t\.csv is not a CSV: found 1 column .*separated by semicolons"),
    Case("duplicate_header", _csv(text=lambda t: t.replace("score", "age", 1)), "refused",
         r"t\.csv, header: column 'age' appears twice \(columns 1 and 2\)"),
    Case("empty_header", _csv(text=lambda t: t.replace("score", "", 1)), "refused",
         r"t\.csv, header: column 2 has no name"),
    Case("ragged_row", _csv(text=_line(lambda ln: ln + ",extra")), "refused",
         rf"t\.csv, row {R}: 6 fields, the header has 5"),
    Case("short_row", _csv(text=_line(lambda ln: ln.rsplit(",", 1)[0])), "refused",
         rf"t\.csv, row {R}: 4 fields, the header has 5"),
    Case("too_few_rows", _csv(n=8), "refused", r"t\.csv has 8 rows with a task and private value"),
    # cells
    Case("empty_cell", _csv(_cells("age", {BAD: "", 20: ""})), "imputed",
         rf"column 'age': 2 empty cells \(first: row {R}\) imputed with the median"),
    Case("nan", _csv(_cells("age", {BAD: "NaN", 9: "N/A", 11: "null", 13: "#N/A", 15: "NAN"})),
         "imputed", rf"column 'age': 5 empty cells \(first: row {R}\) imputed with the median"),
    Case("empty_categorical_cell", _csv(_cell("city", "")), "imputed",
         rf"column 'city': 1 empty cell \(first: row {R}\) kept as the category '\?'"),
    Case("missing_label", _csv(_cell("income", "")), "imputed",
         rf"1 row without a task or private value dropped \(first: row {R}\)"),
    Case("inf", _csv(_cell("age", "inf")), "refused",
         rf"t\.csv, column 'age', row {R}: got 'inf'; allowed: a finite number"),
    Case("overflow", _csv(_cell("score", "-1e999")), "refused",
         rf"t\.csv, column 'score', row {R}: got '-1e999'; allowed: a finite number"),
    Case("huge_magnitude", _csv(_cell("score", "3e20")), "refused",
         rf"t\.csv, column 'score', row {R}: got '3e20'; allowed: \|value\| <= 1e\+15"),
    Case("non_numeric_in_numeric_column", _csv(_cell("age", "forty")), "refused",
         rf"t\.csv, column 'age', row {R}: got 'forty'; allowed: a number"),
    Case("constant_column", _csv(_column("const", "1")), "imputed",
         r"column 'const': one value in every row .*left out of the features"),
    Case("empty_column", _csv(_column("blank", "")), "imputed",
         r"column 'blank': one value in every row \(or empty everywhere\); left out"),
    # labels
    Case("single_class_label", _csv(_column("income", "hi")), "refused",
         r"task column 'income' has one value only \('hi'\) in .*t\.csv"),
    Case("rare_label", _csv(_cell("sex", "X")), "refused",
         rf"t\.csv, column 'sex', row {R}: private value 'X' is held by 1 row; allowed: at least 5"),
    Case("too_many_labels", _csv(_column("income", lambda n: [f"v{i % 150}" for i in range(n)]), n=300),
         "refused", r"task column 'income' has 150 distinct values in .*t\.csv; allowed: 2 to 100"),
    Case("too_many_categories", _csv(_column("city", lambda n: [f"c{i}" for i in range(n)]), n=1100),
         "refused", r"column 'city' of .*t\.csv is categorical with 1,100 distinct values; the cap"),
    # image folders
    Case("image_not_an_image", _images(_put("cat/x.png", b"hello, not a picture")), "refused",
         r"image file .*cat/x\.png: cannot decode \("),
    Case("image_truncated", _images(_put("cat/t.png", lambda: _valid_png()[:-60])), "refused",
         r"image file .*cat/t\.png: cannot decode \("),
    Case("image_truncated_jpeg", _images(_put("dog/t.jpg", lambda: _jpeg()[:300])), "refused",
         r"image file .*dog/t\.jpg: cannot decode \("),
    Case("image_too_many_pixels", _images(_put("cat/bomb.png", _png_header(10_000, 10_000))),
         "refused", r"image file .*cat/bomb\.png: 10000x10000 pixels; the cap is 40,000,000"),
    Case("image_16bit", _images(_put("cat/deep.png", _sixteen)), "imputed",
         r"1 16-bit image \(first: cat/deep\.png\) scaled from 0\.\.65535 to 0\.\.255"),
    Case("image_wrong_mode", _images(_modes), "imputed",
         r"2 images with transparency \(first: cat/palette\.png\); the alpha channel is dropped"),
    Case("image_wrong_size", _images(_put("dog/wide.png", lambda: _png(np.full((20, 30), 99, np.uint8)))),
         "imputed", r"images come in 2 sizes \(12x12: 12, 30x20: 1; e\.g\. dog/wide\.png is 30x20\); "
                    r"each resized to 8x8"),
    Case("image_rare_class", _images(_keep_two("fox"), classes=("cat", "dog", "fox")),
         "refused", r"class folder .*fox has 2 images; allowed: at least 5 per class"),
    Case("attributes_missing_value", _images(_attributes(lambda n: [""] + _owners(n)[1:])),
         "refused", r"attrs\.csv, column 'owner', row 1: no value for image 'cat/cat_00\.png'"),
    Case("attributes_rare_value", _images(_attributes(lambda n: ["eve"] + _owners(n)[1:])),
         "refused", r"attrs\.csv, column 'owner', row 1: private value 'eve' is held by 1 row"),
]


# ---------------------------------------------------------------------------------------------
# running a case


def register(case: Case, d: Path, name: str = "t") -> tuple[str, str, list[str]]:
    """Build and register ``case`` under ``d`` (``$PRIVLAB_DATA_REGISTRY`` must point at a
    scratch folder). Returns (outcome, the message or the joined notes, warnings seen);
    outcome is ``refused``, ``imputed`` (registered: the notes are returned) or ``crashed``."""
    from core.data import DataError, clear_memo, load_dataset, user

    kw = case.build(d)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            if "csv" in kw:
                entry = user.add_csv(name, kw["csv"], kw["task"], kw["private"])
            else:
                entry = user.add_images(name, kw["images"], size=kw["size"],
                                        attributes=kw.get("attributes"))
        except DataError as exc:
            msg = str(exc)
            return ("refused" if "\n" not in msg else "crashed"), msg, [str(w.message) for w in seen]
        except Exception as exc:  # noqa: BLE001 - that is what the benchmark counts
            return "crashed", f"{type(exc).__name__}: {exc}", [str(w.message) for w in seen]
        try:
            from core.config.schema import parse_config

            clear_memo()
            ds = load_dataset(parse_config({"kind": "projection", "data": {"name": name}}).data, 0)
            finite = bool(np.isfinite(ds.X).all())
        except Exception as exc:  # noqa: BLE001
            return "crashed", f"load: {type(exc).__name__}: {exc}", [str(w.message) for w in seen]
    notes = " | ".join(entry.get("notes", []))
    return ("imputed" if finite else "crashed"), notes, [str(w.message) for w in seen]


def judge(case: Case, outcome: str, text: str, seen: list[str]) -> str:
    """``refused`` / ``imputed`` when the case behaved as documented, else ``crashed``."""
    ok = outcome == case.expect and re.search(case.pattern, text) is not None and not seen
    return outcome if ok else "crashed"


def run_cases() -> list[dict[str, Any]]:
    rows = []
    for case in CASES:
        d = Path(tempfile.mkdtemp(prefix=f"privlab-uf-{case.name}-"))
        old = os.environ.get("PRIVLAB_DATA_REGISTRY")
        os.environ["PRIVLAB_DATA_REGISTRY"] = str(d / "registry")
        try:
            t0 = time.perf_counter()
            outcome, text, seen = register(case, d)
            secs = time.perf_counter() - t0
        finally:
            if old is None:
                os.environ.pop("PRIVLAB_DATA_REGISTRY", None)
            else:
                os.environ["PRIVLAB_DATA_REGISTRY"] = old
            shutil.rmtree(d, ignore_errors=True)
        verdict = judge(case, outcome, text, seen)
        rows.append({"class": case.name, "expected": case.expect, "outcome": verdict,
                     "seconds": round(secs, 3), "warnings": len(seen),
                     "message": text.replace(str(d), "…")[:160]})
    return rows


# ---------------------------------------------------------------------------------------------
# speed of the checks


def _bench_frame(n: int):
    import pandas as pd

    rng = np.random.default_rng(0)
    u = rng.integers(0, 2, n)
    cols = {f"x{j}": rng.normal(0, 1 + j, n).round(4).astype(str) for j in range(8)}
    cols["x0"][rng.random(n) < 0.02] = ""  # imputed cells
    cols.update({f"c{j}": rng.choice([f"k{i}" for i in range(5 + 10 * j)], n) for j in range(3)})
    cols["sex"] = np.where(u == 1, "M", "F")
    cols["income"] = np.where(rng.random(n) < 0.8, u, 1 - u).astype(str)
    return pd.DataFrame(cols)


def time_checks(n: int = BENCH_ROWS, repeats: int = 3) -> list[dict[str, Any]]:
    """Best of ``repeats``: registration end to end, the cell checks alone, pandas' parse of
    the same file (the reference) and the csv-module pass that finds ragged rows."""
    import pandas as pd

    from core.data import cells, user

    d = Path(tempfile.mkdtemp(prefix="privlab-uf-speed-"))
    old = os.environ.get("PRIVLAB_DATA_REGISTRY")
    os.environ["PRIVLAB_DATA_REGISTRY"] = str(d / "registry")
    try:
        path = d / "big.csv"
        _bench_frame(n).to_csv(path, index=False)
        best: dict[str, float] = {}

        def clock(what: str, fn: Callable[[], Any]) -> None:
            t0 = time.perf_counter()
            fn()
            best[what] = min(best.get(what, float("inf")), time.perf_counter() - t0)

        df = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
        feats = [c for c in df.columns if c not in ("sex", "income")]
        rows = np.arange(1, n + 1)
        for _ in range(repeats):
            clock("pandas read_csv (reference)",
                  lambda: pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False))
            clock("registration, end to end",
                  lambda: user.add_csv("big", path, "income", ["sex"], replace=True))
            clock("cell checks alone (features + labels)", lambda: (
                cells.split_features(df.copy(), feats, path, rows),
                [cells.check_label_counts(*user.tabular.label_codes(df[c]), "task", c, path, rows)
                 for c in ("sex", "income")]))
            clock("ragged-row search (csv module pass)",
                  lambda: cells.find_ragged(path, "utf-8", df.shape[1]))
    finally:
        if old is None:
            os.environ.pop("PRIVLAB_DATA_REGISTRY", None)
        else:
            os.environ["PRIVLAB_DATA_REGISTRY"] = old
        shutil.rmtree(d, ignore_errors=True)
    ref = best["pandas read_csv (reference)"]
    return [{"what": k, "rows": n, "seconds": round(v, 4), "rows_per_s": round(n / v),
             "x_pandas_parse": round(v / ref, 2)} for k, v in best.items()]


def merge_trust(headline: dict[str, Any], path: Path = TRUST) -> None:
    """Set ``headline``'s keys in ``trust.json``'s headline, keeping every other key there
    (another benchmark writes the same file)."""
    record: dict[str, Any] = {}
    if path.is_file():
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            record = {}
    if not isinstance(record, dict):
        record = {}
    record.setdefault("name", "trust")
    if not isinstance(record.get("headline"), dict):
        record["headline"] = {}
    record["headline"].update(headline)
    record.setdefault("rows", [])
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, path)


def main(quick: bool = False) -> dict[str, Any]:
    rows = run_cases()
    speed = time_checks(10_000 if quick else BENCH_ROWS, repeats=1 if quick else 3)
    crashed = [r["class"] for r in rows if r["outcome"] == "crashed"]
    counts = {k: sum(r["outcome"] == k for r in rows) for k in ("refused", "imputed", "crashed")}
    reg = next(r for r in speed if r["what"].startswith("registration"))
    chk = next(r for r in speed if r["what"].startswith("cell checks"))
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        load = None
    headline = {
        "user_file_value_classes_checked": [r["class"] for r in rows if r["outcome"] != "crashed"],
        "user_file_crashes": len(crashed),
    }
    if not quick:
        merge_trust({"user_file_value_classes_checked": headline["user_file_value_classes_checked"]})
    return {
        "name": "userfiles",
        "headline": headline,
        "targets": {"user_file_crashes": 0},
        "rows": rows + speed,
        "counts": counts,
        "notes": (f"{len(rows)} classes: {counts['refused']} refused, {counts['imputed']} imputed, "
                  f"{counts['crashed']} crashed{' (' + ', '.join(crashed) + ')' if crashed else ''}. "
                  f"Checks on a {reg['rows']:,}-row CSV (8 numeric, 3 categorical, 2 label "
                  f"columns): registration {reg['rows_per_s']:,} rows/s end to end "
                  f"({reg['x_pandas_parse']}x pandas' parse of the same file), the cell checks "
                  f"alone {chk['rows_per_s']:,} rows/s; load average {load}."),
    }

"""User files checked cell by cell (core.data.cells, core.data.pixels): every class of bad value
in a CSV or an image folder is refused with one line naming the file, column and row, or
imputed with a note saying how many cells; registration and a tiny run emit no Python warning.
The classes are the table of ``benchmarks.userfiles_bench`` (its benchmark counts the same)."""

from __future__ import annotations

import io
import re
import warnings

import numpy as np
import pytest
from PIL import Image

from benchmarks.userfiles_bench import CASES, base_frame, image_folder
from cli.main import main
from core.config.schema import parse_config
from core.data import DataError, clear_memo, load_dataset, user


@pytest.fixture(autouse=True)
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv(user.ENV_REGISTRY, str(tmp_path / "registry"))
    clear_memo()
    yield
    clear_memo()


def _add(kw, name="t"):
    if "csv" in kw:
        return user.add_csv(name, kw["csv"], kw["task"], kw["private"])
    return user.add_images(name, kw["images"], size=kw["size"], attributes=kw.get("attributes"))


def _load(name="t"):
    return load_dataset(parse_config({"kind": "projection", "data": {"name": name}}).data, 0)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_class_is_refused_or_imputed_as_documented(case, tmp_path):
    kw = case.build(tmp_path)
    where = str(kw.get("csv") or kw.get("attributes") or kw["images"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a library warning is a failure
        if case.expect == "refused":
            with pytest.raises(DataError) as exc:
                _add(kw)
            msg = str(exc.value)
            assert "\n" not in msg, msg
            assert re.search(case.pattern, msg), msg
            assert str(tmp_path) in msg and (where in msg or "image file" in msg), msg
            assert user.entries() == {}  # nothing half-registered
            return
        entry = _add(kw)
        notes = entry["notes"]
        assert any(re.search(case.pattern, n) for n in notes), notes
        assert all("\n" not in n for n in notes)
        ds = _load()
    assert np.isfinite(ds.X).all() and ds.X.dtype == np.float32
    assert load_dataset(parse_config({"kind": "projection", "data": {"name": "t"}}).data, 0).n == ds.n


# ---------------------------------------------------------------------------------------------
# what the imputations do to the values


def test_missing_tokens_are_imputed_with_the_median(tmp_path):
    df = base_frame()
    for row, token in {6: "", 9: "N/A", 11: "null", 13: "#N/A", 15: "NAN", 17: "none"}.items():
        df.loc[row, "age"] = token
    df.loc[3, "city"] = "na"
    df["const"] = "7"
    csv = tmp_path / "t.csv"
    df.to_csv(csv, index=False)
    entry = user.add_csv("t", csv, "income", ["sex"])
    assert entry["numeric"] == ["age", "score"]
    ds = _load()
    assert ds.feature_names == ["age", "score", "city=?", "city=east", "city=north", "city=south"]
    age = df["age"].where(~df["age"].str.lower().isin(user.MISSING)).astype(float)
    filled = age.fillna(age.median()).to_numpy()
    tr = ds.split("train")
    np.testing.assert_allclose(ds.X[:, 0], (filled - filled[tr].mean()) / filled[tr].std(), atol=1e-5)
    assert ds.X[3, 2] == 1.0
    assert f"median {age.median():g}" in " ".join(entry["notes"])
    assert "6 empty cells (first: row 7)" in " ".join(entry["notes"])


def test_rows_count_records_not_lines(tmp_path):
    """A quoted value holding a newline is one row; blank lines are not rows."""
    body = "a,b,c,y,u\n" + "".join(f"{i},{i % 3},x{i % 2},{i % 2},{(i // 2) % 2}\n" for i in range(20))
    lines = body.split("\n")
    lines[2] = '"1\n1",1,x1,1,0'  # data row 2 spans two lines
    lines.insert(4, "")  # a blank line before data row 4
    lines[6] = lines[6] + ",9"  # data row 5 has an extra field
    csv = tmp_path / "t.csv"
    csv.write_text("\n".join(lines))
    with pytest.raises(DataError, match=r"t\.csv, row 5: 6 fields, the header has 5; every row"):
        user.add_csv("t", csv, "y", ["u"])


def test_sixteen_bit_images_keep_their_values(tmp_path):
    root = image_folder(tmp_path / "pets")
    a16 = np.arange(144, dtype=np.uint16).reshape(12, 12) * 400
    Image.fromarray(a16).save(root / "cat" / "deep.png")
    user.add_images("t", root, size=8)
    ds = _load()
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.png"))
    got = ds.images([files.index("cat/deep.png")])[0, 0]
    want = Image.fromarray(np.rint(a16 / 257.0).astype(np.uint8)).resize(
        (8, 8), Image.Resampling.BILINEAR)
    np.testing.assert_allclose(got, np.asarray(want) / 255.0, atol=1e-6)
    assert got.mean() < 0.6  # Pillow's convert("L") would clip it to white (mean 1.0)


def test_transparent_palette_image_decodes_without_a_pillow_warning(tmp_path):
    root = image_folder(tmp_path / "pets")
    rgb = Image.fromarray(np.random.default_rng(0).integers(0, 255, (12, 12, 3), dtype=np.uint8))
    b = io.BytesIO()
    rgb.quantize(8).save(b, "PNG", transparency=bytes(range(8)))
    (root / "dog" / "pal.png").write_bytes(b.getvalue())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        entry = user.add_images("t", root, size=8, color="rgb")
    assert "1 image with transparency (first: dog/pal.png)" in " ".join(entry["notes"])


def test_huge_header_is_refused_without_pillow_warning(tmp_path):
    from benchmarks.userfiles_bench import _png_header

    root = image_folder(tmp_path / "pets")
    (root / "cat" / "bomb.png").write_bytes(_png_header(12_000, 9_000))  # above Pillow's warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DataError, match=r"bomb\.png: 12000x9000 pixels; the cap is 40,000,000"):
            user.add_images("t", root, size=8)


# ---------------------------------------------------------------------------------------------
# no warning reaches the terminal, registration and a tiny run


def test_registration_and_tiny_runs_emit_no_warning(tmp_path):
    from core.runs.experiments import run

    df = base_frame(200)
    df.loc[4, "age"] = "NaN"
    df.loc[5, "city"] = ""
    df.loc[8, "city"] = "caf\xe9"
    df["const"] = "1"
    df.loc[9, "income"] = "?"
    csv = tmp_path / "t.csv"
    csv.write_bytes(df.to_csv(index=False).encode("latin-1"))
    root = image_folder(tmp_path / "pets", per_class=10)
    Image.fromarray(np.arange(144, dtype=np.uint16).reshape(12, 12) * 300).save(root / "cat" / "d.png")
    Image.fromarray(np.full((30, 20, 4), 90, np.uint8)).save(root / "dog" / "alpha.png")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        entry = user.add_csv("people", csv, "income", ["sex"])
        user.add_images("pets", root, size=8)
        r1 = run({"kind": "attribute_privacy", "data": {"name": "people"},
                  "fl": {"num_devices": 2, "rounds": 1}, "pretrain_epochs": 0,
                  "projection_points": 0, "attack": {"attackers": ["logreg"]}})
        r2 = run({"kind": "projection", "data": {"name": "pets"}, "method": "pca", "split": "all",
                  "max_points": 20})
    assert len(entry["notes"]) == 5, entry["notes"]
    assert np.isfinite(r1.metrics["utility_acc"]) and r2.artifacts["embedding"].shape == (20, 2)


def test_cli_prints_the_notes(tmp_path, capsys):
    df = base_frame()
    df.loc[6, "age"] = ""
    csv = tmp_path / "t.csv"
    df.to_csv(csv, index=False)
    assert main(["data", "add", "t", "--csv", str(csv), "--task", "income", "--private", "sex"]) == 0
    out = capsys.readouterr().out
    assert "  note: column 'age': 1 empty cell (first: row 7) imputed with the median" in out
    df.loc[6, "age"] = "inf"
    df.to_csv(csv, index=False)
    assert main(["data", "add", "u", "--csv", str(csv), "--task", "income", "--private", "sex"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"file {csv}, column 'age', row 7: got 'inf'" in err


def test_data_page_shows_the_registration_notes(tmp_path, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    df = base_frame()
    df.loc[6, "age"] = "NaN"
    df.to_csv(tmp_path / "t.csv", index=False)
    user.add_csv("people", tmp_path / "t.csv", "income", ["sex"])
    app = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
    at = AppTest.from_file(app, default_timeout=60).run()
    at.sidebar.selectbox(key="privlab_dataset").set_value("people").run()
    at.switch_page("views/data.py").run()
    assert not at.exception, at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "Registration note: column 'age': 1 empty cell (first: row 7) imputed" in captions


def test_trailing_comma_header_says_so(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text(base_frame().to_csv(index=False).replace("\n", ",\n"))
    with pytest.raises(DataError, match=r"t\.csv, header: column 6 has no name; .*a comma at the "
                                        r"end of every line\? remove it\)$"):
        user.add_csv("t", csv, "income", ["sex"])


def test_trust_merge_keeps_other_keys(tmp_path):
    import json

    from benchmarks.userfiles_bench import merge_trust

    path = tmp_path / "trust.json"
    path.write_text(json.dumps({"name": "trust", "headline": {"other_key": 3}, "rows": [1]}))
    merge_trust({"user_file_value_classes_checked": ["nan", "inf"]}, path)
    got = json.loads(path.read_text())
    assert got["headline"] == {"other_key": 3, "user_file_value_classes_checked": ["nan", "inf"]}
    assert got["rows"] == [1]
    path.unlink()
    merge_trust({"k": 1}, path)
    assert json.loads(path.read_text())["headline"] == {"k": 1}


def test_rows_are_file_rows_after_rows_are_dropped(tmp_path):
    df = base_frame()
    df.loc[1, "income"] = ""  # dropped: row 2
    df.loc[6, "age"] = "Infinity"
    df.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(DataError, match=r"t\.csv, column 'age', row 7: got 'Infinity'"):
        user.add_csv("t", tmp_path / "t.csv", "income", ["sex"])

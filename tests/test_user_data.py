"""Your own data (core.data.user): register a CSV or an image folder, load it, run on it,
notice changed files, and give one-line errors for every bad input; the `privlab data` CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from cli.main import main
from core.config.schema import ConfigError, cache_key, parse_config
from core.data import DataError, clear_memo, describe_datasets, load_dataset, user
from core.data.registry import dataset_attributes, get_info

N = 200


@pytest.fixture(autouse=True)
def registry(tmp_path, monkeypatch):
    d = tmp_path / "registry"
    monkeypatch.setenv(user.ENV_REGISTRY, str(d))
    clear_memo()
    yield d
    clear_memo()


def write_csv(path, n=N, seed=0, **over):
    """income (task) depends on sex (private); age numeric with one missing cell; city
    categorical; one row without a task value (dropped)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    u = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < 0.8, u, 1 - u)
    cols = {
        "age": rng.normal(40, 10, n).round(1).astype(str),
        "city": rng.choice(["north", "south", "east"], n),
        "score": (rng.normal(size=n) + 2 * y).round(3).astype(str),
        "sex": np.where(u == 1, "M", "F"),
        "race": rng.choice(["a", "b", "c"], n),
        "income": np.where(y == 1, ">50K", "<=50K"),
    }
    cols.update(over)
    df = pd.DataFrame(cols)
    df.loc[3, "age"] = ""
    df.loc[5, "income"] = ""
    df.to_csv(path, index=False)
    return df


def write_images(root, classes=("cat", "dog"), per_class=12, side=12, fmt="png", seed=0, rgb=False):
    """Class folders of small images whose brightness varies from image to image."""
    rng = np.random.default_rng(seed)
    for c in classes:
        (root / c).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            level = rng.uniform(20, 230)
            shape = (side, side, 3) if rgb else (side, side)
            a = np.clip(level + rng.normal(0, 10, shape), 0, 255).astype(np.uint8)
            ext = ("jpg" if i % 2 else "png") if fmt == "mixed" else fmt
            Image.fromarray(a).save(root / c / f"{c}_{i:03d}.{ext}")
    return root


def spec(**data):
    return parse_config({"kind": "projection", "data": data}).data


# ---------------------------------------------------------------------------------------------
# CSV sets


def test_csv_register_and_load(tmp_path):
    csv = tmp_path / "people.csv"
    df = write_csv(csv)
    entry = user.add_csv("people", csv, "income", ["sex", "race"])
    assert entry["rows"] == N - 1 and entry["dropped_rows"] == 1
    assert json.loads((user.registry_dir() / "people.json").read_text())["fingerprint"] == entry["fingerprint"]
    assert get_info("people").source == "user" and dataset_attributes("people") == ("sex", "race")
    s = spec(name="people")
    assert s.fingerprint == entry["fingerprint"]
    ds = load_dataset(s, 0)
    keep = df["income"] != ""
    kept = df[keep].reset_index(drop=True)
    assert ds.n == N - 1 and ds.image_shape is None and ds.default_attribute == "sex"
    assert ds.label_names == ["<=50K", ">50K"]
    assert np.array_equal(ds.y, (kept["income"] == ">50K").to_numpy().astype(np.int64))
    assert ds.attribute_values == {"sex": ["F", "M"], "race": ["a", "b", "c"]}
    assert np.array_equal(ds.attribute("sex"), (kept["sex"] == "M").to_numpy().astype(np.int64))
    # features as Adult's: private and task columns out, categories one-hot, numerics
    # standardised with the train split's mean and std (the missing age = the median)
    assert ds.feature_names == ["age", "city=east", "city=north", "city=south", "score"]
    train = ds.split("train")
    score = kept["score"].astype(float).to_numpy()
    mu, sd = score[train].mean(), score[train].std()
    np.testing.assert_allclose(ds.X[:, 4], (score - mu) / sd, rtol=1e-5, atol=1e-5)
    age = kept["age"].replace("", np.nan).astype(float)
    age = age.fillna(age.median()).to_numpy()
    np.testing.assert_allclose(ds.X[:, 0], (age - age[train].mean()) / age[train].std(), atol=1e-5)
    np.testing.assert_array_equal(ds.X[:, 2], (kept["city"] == "north").to_numpy())
    rows = {r["name"]: r for r in describe_datasets()}
    assert rows["people"]["source"] == "user" and rows["people"]["available"]
    assert rows["people"]["attributes"] == ["sex", "race"]


def test_attribute_privacy_run_on_a_csv_set(tmp_path):
    from core.runs.experiments import run

    csv = tmp_path / "people.csv"
    write_csv(csv)
    user.add_csv("people", csv, "income", ["sex", "race"])
    cfg = {
        "kind": "attribute_privacy", "data": {"name": "people", "private_attribute": "sex"},
        "fl": {"num_devices": 4, "rounds": 1}, "pretrain_epochs": 0, "projection_points": 0,
        "attack": {"attackers": ["logreg"]},
    }
    result = run(cfg)
    assert 0.0 <= result.metrics["utility_acc"] <= 1.0
    assert result.config["data"]["fingerprint"] == user.get_entry("people")["fingerprint"]


def test_categorical_cap_and_ignore(tmp_path, monkeypatch):
    csv = tmp_path / "ids.csv"
    write_csv(csv, id=[f"id{i}" for i in range(N)])
    monkeypatch.setattr(user, "MAX_CATEGORIES", 50)
    with pytest.raises(DataError, match=r"column 'id' .* categorical with 199 distinct values; "
                                        r"the cap is 50 \(leave it out with --ignore id\)"):
        user.add_csv("ids", csv, "income", ["sex"])
    user.add_csv("ids", csv, "income", ["sex"], ignore=["id"])
    assert not any(f.startswith("id") for f in load_dataset(spec(name="ids"), 0).feature_names)


# ---------------------------------------------------------------------------------------------
# image sets


def test_image_register_and_load_derived_attribute(tmp_path):
    root = write_images(tmp_path / "pets", classes=("cat", "dog", "fox"), fmt="mixed")
    entry = user.add_images("pets", root, size=8)
    assert entry["rows"] == 36 and entry["classes"] == ["cat", "dog", "fox"]
    assert entry["private"] == ["bright"] and entry["size"] == 8 and entry["color"] == "gray"
    ds = load_dataset(spec(name="pets"), 0)
    assert ds.image_shape == (1, 8, 8) and ds.X.shape == (36, 64) and ds.X.dtype == np.float32
    assert 0.0 <= ds.X.min() and ds.X.max() <= 1.0
    assert np.array_equal(ds.y, np.repeat([0, 1, 2], 12)) and ds.label_names == ["cat", "dog", "fox"]
    ink = ds.X.mean(axis=1)
    assert np.array_equal(ds.attribute("bright"), (ink > np.median(ink)).astype(np.int64))
    # the pixels are the file's, resized with Pillow
    first = min((root / "cat").iterdir())
    with Image.open(first) as img:
        want = np.asarray(img.convert("L").resize((8, 8), Image.Resampling.BILINEAR)) / 255.0
    np.testing.assert_allclose(ds.images([0])[0, 0], want, atol=1e-6)


def test_image_attributes_csv_and_rgb(tmp_path):
    root = write_images(tmp_path / "pets", rgb=True)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.png"))
    owner = ["ann" if i % 3 else "bob" for i in range(len(files))]
    attrs = tmp_path / "attrs.csv"
    attrs.write_text("file,owner\n" + "".join(f"{f},{o}\n" for f, o in zip(files, owner)))
    user.add_images("pets", root, size=6, color="rgb", attributes=attrs)
    ds = load_dataset(spec(name="pets", private_attribute="owner"), 0)
    assert ds.image_shape == (3, 6, 6) and ds.attribute_values == {"owner": ["ann", "bob"]}
    assert ds.attribute("owner").tolist() == [o == "bob" for o in owner]
    # bare file names work when they are unique
    bare = tmp_path / "bare.csv"
    bare.write_text("file,owner\n" + "".join(f"{f.split('/')[1]},{o}\n" for f, o in zip(files, owner)))
    user.add_images("pets2", root, size=6, attributes=bare)
    assert load_dataset(spec(name="pets2"), 0).attribute("owner").tolist() == [o == "bob" for o in owner]


def test_projection_run_on_an_image_set(tmp_path):
    from core.runs.experiments import run

    write_images(tmp_path / "pets")
    user.add_images("pets", tmp_path / "pets", size=8)
    result = run({"kind": "projection", "data": {"name": "pets"}, "method": "pca", "split": "all",
                  "max_points": 20})
    assert result.artifacts["embedding"].shape == (20, 2)
    assert np.isfinite(result.metrics["trustworthiness"])


# ---------------------------------------------------------------------------------------------
# changed files: the cache key moves, the loader refuses stale registrations


def test_changed_file_changes_the_key_and_is_refused_until_registered_again(tmp_path):
    csv = tmp_path / "people.csv"
    write_csv(csv)
    user.add_csv("people", csv, "income", ["sex"])
    old = parse_config({"kind": "projection", "data": {"name": "people"}})
    assert load_dataset(old.data, 0).n == N - 1
    write_csv(csv, n=150, seed=1)
    clear_memo()
    with pytest.raises(DataError) as exc:
        load_dataset(old.data, 0)
    msg = str(exc.value)
    assert "\n" not in msg and f"{csv} changed since it was registered" in msg
    assert f"privlab data add people --csv {csv} --task income --private sex --replace" in msg
    user.add_csv("people", csv, "income", ["sex"], replace=True)
    new = parse_config({"kind": "projection", "data": {"name": "people"}})
    assert cache_key(new) != cache_key(old)
    assert load_dataset(new.data, 0).n == 149
    # a config that names the old fingerprint no longer validates
    with pytest.raises(ConfigError, match=r"^data.fingerprint: got '.{12}'\.\.\.; data set 'people'"):
        parse_config(old.model_dump(mode="json"))
    with pytest.raises(DataError, match="data.fingerprint"):
        load_dataset(old.data, 0)


def test_changed_image_and_missing_files_at_load(tmp_path):
    root = write_images(tmp_path / "pets")
    user.add_images("pets", root, size=8)
    s = spec(name="pets")
    (root / "cat" / "cat_000.png").write_bytes(b"not an image any more")
    with pytest.raises(DataError, match=r"data set 'pets': .* changed since it was registered.*"
                                        r"privlab data add pets --images .* --size 8 --color gray --replace"):
        load_dataset(s, 0)
    with pytest.raises(DataError, match=r"image file .*cat_000.png: cannot decode"):
        user.add_images("pets", root, size=8, replace=True)
    csv = tmp_path / "t.csv"
    write_csv(csv)
    user.add_csv("gone", csv, "income", ["sex"])
    s = spec(name="gone")
    csv.unlink()
    assert not {r["name"]: r for r in describe_datasets()}["gone"]["available"]
    with pytest.raises(DataError, match=rf"^file {csv}: cannot read \(No such file or directory\)$"):
        load_dataset(s, 0)


def test_broken_registration_is_named(registry):
    registry.mkdir(parents=True)
    (registry / "junk.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"^data.name: registration .*junk.json: unreadable"):
        spec(name="junk")
    assert "junk" not in {r["name"] for r in describe_datasets()}


# ---------------------------------------------------------------------------------------------
# bad input: one line each, naming the file or column and what is allowed


def _one_line(fn, pattern):
    with pytest.raises(DataError) as exc:
        fn()
    msg = str(exc.value)
    assert "\n" not in msg, msg
    import re

    assert re.search(pattern, msg), msg


def test_bad_csv_inputs(tmp_path, monkeypatch):
    csv = tmp_path / "t.csv"
    write_csv(csv)
    add = lambda *a, **k: (lambda: user.add_csv("t", *a, **k))
    _one_line(add(csv, "incme", ["sex"]),
              r"task column 'incme' is not in .*t.csv; its columns: age, city, score, sex, race, income$")
    _one_line(add(csv, "income", ["sex", "gender"]), r"private column 'gender' is not in .*; its columns: age")
    _one_line(add(csv, "income", ["income"]), r"private column 'income' is also the task column")
    one = tmp_path / "one.csv"
    write_csv(one, income=[">50K"] * N)
    _one_line(lambda: user.add_csv("t", one, "income", ["sex"]),
              r"task column 'income' has one value only \('>50K'\) in .*one.csv; a task needs at least 2")
    write_csv(one, sex=["F"] * N)
    _one_line(lambda: user.add_csv("t", one, "income", ["sex"]),
              r"private column 'sex' has one value only \('F'\) in .*; a private attribute needs at least 2")
    _one_line(add(tmp_path / "nope.csv", "income", ["sex"]), r"file .*nope.csv: cannot read \(No such file")
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b,c\n1,2,3\n4,5,6,7,8\n")
    _one_line(lambda: user.add_csv("t", ragged, "a", ["b"]),
              r"file .*ragged.csv, row 2: 5 fields, the header has 3; every row needs one field")
    png = tmp_path / "img.png"
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(png)
    _one_line(lambda: user.add_csv("t", png, "a", ["b"]), r"file .*img.png is not a CSV \(binary content\)")
    text = tmp_path / "notes.txt"
    text.write_text("just some words\nand more words\n")
    _one_line(lambda: user.add_csv("t", text, "a", ["b"]), r"file .*notes.txt is not a CSV: found 1 column")
    monkeypatch.setattr(user, "MAX_ROWS", 50)
    _one_line(add(csv, "income", ["sex"]), r"file .*t.csv has more than 50 rows; the cap is 50")
    monkeypatch.undo()
    monkeypatch.setenv(user.ENV_REGISTRY, str(tmp_path / "registry"))
    _one_line(lambda: user.add_csv("digits", csv, "income", ["sex"]),
              r"name: 'digits' is a built-in data set; choose another name \(built-in: digits, mnist5k")
    _one_line(lambda: user.add_csv("Bad Name", csv, "income", ["sex"]), r"name: got 'Bad Name'; allowed: 1-40")
    user.add_csv("t", csv, "income", ["sex"])
    _one_line(add(csv, "income", ["sex"]), r"name: 't' is already registered; remove it first")
    assert list(user.entries()) == ["t"]  # nothing half-registered by the failures


def test_bad_image_inputs(tmp_path, monkeypatch):
    add = lambda root, **k: (lambda: user.add_images("p", root, **k))
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line(add(empty), r"folder .*empty has no class sub-folders; expected one sub-folder")
    _one_line(add(tmp_path / "nowhere"), r"folder .*nowhere does not exist")
    root = write_images(tmp_path / "pets")
    (root / "bird").mkdir()
    (root / "bird" / "readme.txt").write_text("no images here")
    _one_line(add(root), r"class folder .*bird has no PNG/JPEG images \(found 1 other files\)")
    (root / "bird" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    _one_line(add(root), r"image file .*bird/broken.png: cannot decode \(")
    solo = write_images(tmp_path / "solo", classes=("cat",))
    _one_line(add(solo), r"folder .*solo has one class folder only \('cat'\); a task needs at least 2")
    pets = write_images(tmp_path / "pets2")
    monkeypatch.setattr(user, "MAX_IMAGES", 10)
    _one_line(add(pets), r"folder .*pets2 has more than 10 images; the cap is 10$")
    monkeypatch.setattr(user, "MAX_IMAGES", 100_000)
    _one_line(add(pets, size=2), r"size: got 2; allowed range 4 <= value <= 256")
    flat = write_images(tmp_path / "flat", per_class=5)
    for p in flat.rglob("*.png"):
        Image.fromarray(np.full((12, 12), 99, np.uint8)).save(p)
    _one_line(add(flat), r"private attribute 'bright' .* has one value only .*give an attributes CSV")
    attrs = tmp_path / "attrs.csv"
    attrs.write_text("file,owner\ncat/cat_000.png,ann\ncat/cat_001.png,bob\n")
    _one_line(add(pets, attributes=attrs),
              r"attributes file .*attrs.csv: no row for image 'cat/cat_002.png' and 21 more; every image needs one")
    attrs.write_text("name,owner\nx,y\n")
    _one_line(add(pets, attributes=attrs), r"file column 'file' is not in .*attrs.csv; its columns: name, owner")
    _one_line(lambda: user.add_images("faces", pets), r"name: 'faces' is a built-in data set")
    assert user.entries() == {}


def test_unknown_name_lists_what_exists(tmp_path):
    csv = tmp_path / "t.csv"
    write_csv(csv)
    user.add_csv("people", csv, "income", ["sex"])
    with pytest.raises(ConfigError) as exc:
        parse_config({"kind": "projection", "data": {"name": "peeple"}})
    assert str(exc.value) == ("data.name: got 'peeple'; allowed: digits, mnist5k, faces, synthetic, "
                              "adult, mnist, fashion_mnist, cifar10, celeba; registered: people")
    with pytest.raises(ConfigError, match="data.private_attribute: got 'race'; allowed for 'people': sex"):
        parse_config({"kind": "projection", "data": {"name": "people", "private_attribute": "race"}})
    with pytest.raises(ConfigError, match="data.fingerprint: got 'abc'; only registered data sets"):
        parse_config({"kind": "projection", "data": {"name": "digits", "fingerprint": "abc"}})


# ---------------------------------------------------------------------------------------------
# the command line


def test_cli_data_commands(tmp_path, capsys):
    csv = tmp_path / "people.csv"
    write_csv(csv)
    pets = write_images(tmp_path / "pets")
    assert main(["data", "list"]) == 0
    assert "no registered data sets" in capsys.readouterr().out
    assert main(["data", "add", "people", "--csv", str(csv), "--task", "income",
                 "--private", "sex", "--private", "race"]) == 0
    assert "registered people: tabular, 199 rows, task income (2 classes), private sex, race" in capsys.readouterr().out
    assert main(["data", "add", "pets", "--images", str(pets), "--size", "8"]) == 0
    assert "registered pets: images, 24 images 8x8 gray, 2 classes, private bright" in capsys.readouterr().out
    assert main(["data", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["people"]["status"] == "ok" and rows["pets"]["kind"] == "image"
    assert main(["datasets", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["people"]["source"] == "user" and rows["pets"]["kind"] == "image"
    # a config naming the set runs from the command line
    cfg = tmp_path / "p.yaml"
    cfg.write_text("kind: projection\ndata: {name: pets}\nsplit: all\nmax_points: 12\n")
    assert main(["run", str(cfg), "--no-cache", "--json", "--progress", "off"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "projection"
    # a changed file shows in the list
    write_csv(csv, n=120, seed=3)
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert "people" in out and "changed" in out
    assert main(["data", "remove", "people"]) == 0
    assert "removed people" in capsys.readouterr().out
    assert csv.exists()


@pytest.mark.parametrize("argv, message", [
    (["data", "remove", "nobody"], "name: 'nobody' is not registered; registered: none"),
    (["data", "add", "x", "--csv", "a.csv", "--images", "d"], "not allowed with argument --csv"),
    (["data", "add", "x"], "one of the arguments --csv --images is required"),
    (["data", "add", "x", "--csv", "a.csv", "--private", "s"], "--task: required with --csv"),
    (["data", "add", "x", "--csv", "a.csv", "--task", "t"], "--private: required with --csv"),
    (["data", "add", "x", "--csv", "a.csv", "--task", "t", "--private", "s", "--size", "8"],
     "--size: only for --images"),
    (["data", "add", "x", "--images", "d", "--task", "t"], "--task: only for --csv"),
    (["data", "add", "mnist", "--images", "d"], "name: 'mnist' is a built-in data set"),
    (["data", "add", "x", "--csv", "missing.csv", "--task", "t", "--private", "s"],
     "missing.csv: cannot read"),
])
def test_cli_data_errors(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("privlab: error: ") and message in err and err.count("\n") == 1, err


# ---------------------------------------------------------------------------------------------
# the dashboard


def test_dashboard_sidebar_and_data_page_take_a_registered_set(tmp_path, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("PRIVLAB_CACHE_DIR", str(tmp_path / "cache"))
    write_images(tmp_path / "pets", per_class=20)
    user.add_images("pets", tmp_path / "pets", size=8)
    app = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
    at = AppTest.from_file(app, default_timeout=60).run()
    box = at.sidebar.selectbox(key="privlab_dataset")
    assert box.format_func("pets") == "pets · your data"
    box.set_value("pets").run()
    assert not at.exception and not at.sidebar.warning
    at.switch_page("views/data.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="data_dataset").value == "pets" and not at.error
    assert "your images" in " ".join(c.value for c in at.caption)
    (tmp_path / "pets" / "cat" / "cat_000.png").unlink()  # now the files differ: one-line error
    clear_memo()
    at.run()
    assert "privlab data add pets --images" in " ".join(e.value for e in at.error)

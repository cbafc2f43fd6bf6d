"""``privlab audit``: a model trained elsewhere audited as a membership run's target. The
example network of ``examples/your_model`` trained by its plain PyTorch script (tiny recipe),
audited end to end through the CLI (result, note, store, bundle, cache); a skops-saved
scikit-learn model; and every refusal class: one line naming the file and the check, exit 2,
nothing stored."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.audit_model_bench import ARCH, example_architecture, refusal_cases
from cli.main import main

RECIPE = ["--epochs", "10", "--batch-size", "16", "--lr", "0.01", "--optimizer", "adam"]
FAST = ["--shadows", "2", "--set", "projection_points=0", "--progress", "off"]


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The example network registered as an architecture (what ``privlab model add`` does),
    trained by the plain script on 100 digits rows for 10 epochs."""
    from core.foundation.threads import thread_limits

    out = tmp_path_factory.mktemp("your_model")
    with example_architecture():
        import train_plain

        with thread_limits():  # the runs' thread budget: torch's default oversubscribes 2 cores
            train_plain.main(["--out", str(out), "--members", "100", "--epochs", "10",
                              "--batch-size", "16", "--lr", "0.01"])
        yield out


def _audit(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["audit", *args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _stored(cache: Path, capsys) -> list:
    assert main(["list", "--json", "--cache-dir", str(cache)]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_example_is_audited_end_to_end_as_a_run_privlab_did_not_train(example, tmp_path,
                                                                           capsys):
    cache, bundle = tmp_path / "cache", tmp_path / "audit.zip"
    args = ["--model", ARCH, "--weights", str(example / "small_cnn.safetensors"),
            "--data", "digits", "--members", str(example / "members.txt"), *RECIPE, *FAST,
            "--cache-dir", str(cache)]
    code, out, err = _audit(capsys, *args, "--json", "--bundle", str(bundle),
                            "--no-figures")
    assert code == 0, err
    got = json.loads(out)
    assert "wrote audit.zip: a run bundle" in err
    m = got["metrics"]
    assert m["members"] == m["nonmembers"] == 100
    # utility of the loaded weights (the script measured 0.84), not of a fresh network (0.1)
    assert m["utility_acc"] > 0.7
    for a in ("loss", "confidence", "entropy", "lira_offline", "lira_online", "rmia",
              "label_only_noise"):
        assert 0.0 <= m[f"mia_{a}_auc"] <= 1.0
    assert got["notes"][0].startswith("target trained elsewhere: privlab loaded its weights")
    assert bundle.is_file() and bundle.stat().st_size > 0
    from cache.store import default_store

    r = default_store(str(cache)).get(got["key"])
    assert r.info["target"]["trained_by"] == "elsewhere"
    assert r.config["target"]["weights_sha256"] == r.info["target"]["weights_sha256"]
    assert (r.artifacts["record_member"] == 1).sum() == 100  # per-record exposure
    # the same files again: served from the store; other members: another key
    code, out, _ = _audit(capsys, *args, "--json")
    assert code == 0 and json.loads(out)["from_cache"] is True
    fewer = tmp_path / "fewer.txt"
    fewer.write_text("\n".join(example.joinpath("members.txt").read_text().split()[:99]))
    code, out, err = _audit(capsys, *[fewer.as_posix() if a.endswith("members.txt") else a
                                      for a in args], "--json")
    assert code == 0, err
    assert json.loads(out)["key"] != got["key"]
    # other weights of the same network on the same members: the shadows are reused
    from safetensors.torch import load_file, save_file

    other = tmp_path / "other.safetensors"
    save_file({k: v * 0.5 for k, v in load_file(str(example / "small_cnn.safetensors")).items()},
              str(other))
    code, out, err = _audit(capsys, *[str(other) if a.endswith(".safetensors") else a
                                      for a in args], "--json")
    assert code == 0, err
    again = default_store(str(cache)).get(json.loads(out)["key"])
    assert again.info["stages"]["shadows"] == "hit" and again.info["stages"]["target"] == "computed"
    assert again.config["target"]["weights_sha256"] != r.config["target"]["weights_sha256"]


def test_canaries_given_by_the_user_give_the_one_run_audit(example, tmp_path, capsys):
    rows = np.setdiff1d(np.arange(1797), np.loadtxt(example / "members.txt", dtype=int))[:20]
    can = tmp_path / "canaries.csv"
    can.write_text("index,label,included\n" + "".join(
        f"{r},{(r * 7) % 10},{i % 2}\n" for i, r in enumerate(rows)))
    code, out, err = _audit(capsys, "--model", ARCH, "--weights",
                            str(example / "small_cnn.safetensors"), "--data", "digits",
                            "--members", str(example / "members.txt"), "--canaries", str(can),
                            "--attackers", "loss", *RECIPE, *FAST, "--no-cache", "--json")
    assert code == 0, err
    m = json.loads(out)["metrics"]
    assert m["audit_canaries"] == 20 and m["audit_epsilon_lower"] >= 0.0


def test_each_refusal_is_one_line_naming_the_file_and_the_check_with_nothing_stored(
        example, tmp_path, capsys):
    cache = tmp_path / "cache"
    cases = refusal_cases(example, tmp_path)
    for name, (args, check) in cases.items():
        code, out, err = _audit(capsys, *args, *RECIPE, *FAST, "--cache-dir", str(cache))
        assert code == 2, (name, out, err)
        line = err.strip()
        assert "\n" not in line and line.startswith("privlab: error: "), (name, err)
        assert f": {check}" in line, (name, line)
        named = [a for a in args if a.startswith((str(tmp_path), str(example)))]
        assert any(n in line for n in named), (name, line)
    assert _stored(cache, capsys) == []


def test_a_skops_saved_scikit_learn_model_is_audited_with_clone_shadows(tmp_path, capsys):
    import skops.io as sio
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    d = load_digits()
    members = np.random.default_rng(0).choice(len(d.data), 150, replace=False)
    est = LogisticRegression(max_iter=200).fit(d.data[members] / 16.0, d.target[members])
    w = tmp_path / "logreg.skops"
    sio.dump(est, w)
    mem = tmp_path / "members.npy"
    np.save(mem, members)
    code, out, err = _audit(capsys, "--weights", str(w), "--data", "digits", "--members",
                            str(mem), "--attackers", "loss,entropy,lira_offline,rmia", *FAST,
                            "--no-cache", "--json")
    assert code == 0, err
    m = json.loads(out)["metrics"]
    assert m["utility_acc"] > 0.8
    assert all(0 <= m[f"mia_{a}_auc"] <= 1 for a in ("loss", "entropy", "lira_offline", "rmia"))
    # a tree model names a type skops does not trust: refused, never unpickled
    from sklearn.tree import DecisionTreeClassifier

    tree = tmp_path / "tree.skops"
    sio.dump(DecisionTreeClassifier().fit(d.data[members] / 16.0, d.target[members]), tree)
    code, _, err = _audit(capsys, "--weights", str(tree), "--data", "digits", "--members",
                          str(mem), *FAST, "--no-cache")
    assert code == 2 and "skops trusted types" in err and str(tree) in err


def test_members_as_an_ignored_column_of_a_registered_csv_set(tmp_path, monkeypatch, capsys):
    """A tabular user: a CSV registered with its membership column ignored, a scikit-learn
    pipeline saved with skops; the column marks the members."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from core.data import user

    monkeypatch.setenv(user.ENV_REGISTRY, str(tmp_path / "registry"))
    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    g = (X[:, 1] > 0).astype(int)
    member = np.zeros(n, int)
    member[rng.choice(n, 150, replace=False)] = 1
    csv = tmp_path / "table.csv"
    csv.write_text("a,b,c,d,label,group,member\n" + "".join(
        f"{r[0]:.5f},{r[1]:.5f},{r[2]:.5f},{r[3]:.5f},{t},{p},{m}\n"
        for r, t, p, m in zip(X, y, g, member, strict=True)))
    assert main(["data", "add", "table", "--csv", str(csv), "--task", "label", "--private",
                 "group", "--ignore", "member"]) == 0
    est = make_pipeline(StandardScaler(), LogisticRegression()).fit(X[member == 1], y[member == 1])
    w = tmp_path / "pipe.skops"
    sio.dump(est, w)
    capsys.readouterr()
    code, out, err = _audit(capsys, "--weights", str(w), "--data", "table", "--members-column",
                            "member", "--attackers", "loss,lira_offline,rmia,entropy", *FAST,
                            "--no-cache", "--json")
    assert code == 0, err
    m = json.loads(out)["metrics"]
    assert m["members"] == 150 and m["utility_acc"] > 0.7
    # a column the model reads as a feature is refused
    code, _, err = _audit(capsys, "--weights", str(w), "--data", "table", "--members-column",
                          "a", *FAST, "--no-cache")
    assert code == 2 and "not an ignored column" in err

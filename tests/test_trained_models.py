"""Trained models registered from the command line (``privlab model add-weights``,
:mod:`core.config.trained_registry`) and the Membership page's target control: a registered
model is offered for its data set only, runs as the audit ``privlab audit`` would, says it was
trained elsewhere, and a weights file edited since registration is refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli.main import main
from core.config import trained_registry as TR
from tests.test_pages import open_page, store  # noqa: F401  (fixture)

RECIPE = ["--epochs", "3", "--batch-size", "32", "--lr", "0.01"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """privlab's MLP trained on 100 digits rows by a plain torch loop (as a user would, outside
    privlab), its weights saved with safetensors and its members as text."""
    import torch
    from safetensors.torch import save_file

    from core.config.schema import DataSpec
    from core.data import load_dataset
    from core.models import build_model

    out = tmp_path_factory.mktemp("trained")
    ds = load_dataset(DataSpec(name="digits"), 0)
    members = np.sort(np.random.default_rng(1).choice(ds.n, 100, replace=False))
    X = torch.tensor(np.asarray(ds.X)[members], dtype=torch.float32)
    y = torch.tensor(np.asarray(ds.y)[members], dtype=torch.int64)
    torch.manual_seed(0)
    net = build_model("mlp", (1, 8, 8), 10, 1.0, data="digits")
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(30):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(X), y).backward()
        opt.step()
    save_file({k: v.contiguous() for k, v in net.state_dict().items()},
              str(out / "mlp.safetensors"))
    (out / "members.txt").write_text("\n".join(map(str, members)))
    return out


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv(TR.ENV_REGISTRY, str(tmp_path / "trained"))
    return tmp_path / "trained"


def _register(d, name: str = "mine", *extra: str) -> int:
    return main(["model", "add-weights", name, "--model", "mlp", "--weights",
                 str(d / "mlp.safetensors"), "--data", "digits", "--members",
                 str(d / "members.txt"), *RECIPE, *extra])


def _edited(d, tmp_path):
    """A copy of the weights, registered, then edited (one weight changed)."""
    from safetensors.torch import load_file, save_file

    w = tmp_path / "edit.safetensors"
    w.write_bytes((d / "mlp.safetensors").read_bytes())
    assert main(["model", "add-weights", "edited", "--model", "mlp", "--weights", str(w),
                 "--data", "digits", "--members", str(d / "members.txt"), *RECIPE]) == 0
    sd = load_file(str(w))
    k = next(iter(sd))
    sd[k] = sd[k] + 0.01
    save_file(sd, str(w))
    return w


def test_cli_registers_lists_and_removes_and_refuses_an_edited_file(trained, registry,
                                                                     tmp_path, capsys):
    assert _register(trained) == 0
    out = capsys.readouterr().out
    assert "registered trained model mine: mlp on digits, 100 members" in out
    entry = json.loads((registry / "mine.json").read_text())
    assert entry["by"] == TR.BY_CLI and entry["recipe"] == {"epochs": 3, "lr": 0.01,
                                                            "batch_size": 32}
    assert len(entry["target"]["weights_sha256"]) == 64 and entry["members"] == 100
    # the same name again without --replace: refused, the registration kept
    assert _register(trained) == 2
    assert "already registered" in capsys.readouterr().err
    # the audit's checks before anything is stored: weights of another architecture
    assert main(["model", "add-weights", "wrong", "--model", "lenet5", "--weights",
                 str(trained / "mlp.safetensors"), "--data", "digits", "--members",
                 str(trained / "members.txt")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and ": architecture: " in err and "mlp.safetensors" in err
    assert not (registry / "wrong.json").exists()
    w = _edited(trained, tmp_path)
    capsys.readouterr()
    assert main(["model", "list-weights", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["mine"]["status"] == "ok" and rows["edited"]["status"] == "refused"
    why = rows["edited"]["reason"]
    assert "\n" not in why and "hash mismatch" in why and str(w) in why
    assert main(["model", "remove-weights", "edited"]) == 0
    assert main(["model", "remove-weights", "mine"]) == 0
    capsys.readouterr()
    assert main(["model", "list-weights", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert w.is_file()  # the user's files are untouched


def test_page_offers_it_for_its_data_only_and_runs_it_as_trained_elsewhere(
        trained, registry, store, capsys):  # noqa: F811
    assert _register(trained) == 0
    at = open_page("views/membership.py")
    at.selectbox(key="mi_dataset").set_value("digits").run()
    assert at.radio(key="mi_target").value == "here"  # today's behaviour by default
    at.radio(key="mi_target").set_value("trained").run()
    assert at.selectbox(key="mi_trained").options == ["mine: mlp, 100 members"]
    assert not [s for s in at.selectbox if s.key == "mi_defense"]  # no defense for it
    assert any("Defenses do not apply" in c.value for c in at.caption)
    assert any("fixed by the trained model's weights" in c.value for c in at.caption)
    at.multiselect(key="mi_attackers").set_value(["loss", "lira_offline"]).run()
    at.text_input(key="mi_shadows__text").set_value("2").run()
    at.button(key="mi_run").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    [r] = store.list(kind="membership")
    got = store.get(r.key)
    assert got.info["target"]["trained_by"] == "elsewhere"
    assert got.info["notes"][0].startswith("target trained elsewhere")
    assert got.config["attack"]["shadows"] == 2 and got.config["train"]["members"] == 100
    registered = json.loads((registry / "mine.json").read_text())["target"]
    assert {k: got.config["target"][k] for k in registered} == registered
    # the config privlab audit builds: the same command line is served this run from the store
    capsys.readouterr()
    assert main(["audit", "--model", "mlp", "--weights", str(trained / "mlp.safetensors"),
                 "--data", "digits", "--members", str(trained / "members.txt"), *RECIPE,
                 "--shadows", "2", "--attackers", "loss,lira_offline", "--set",
                 "projection_points=300", "--progress", "off", "--json"]) == 0
    served = json.loads(capsys.readouterr().out)
    assert served["key"] == r.key and served["from_cache"] is True
    said = [i.value for i in at.info if "trained elsewhere, not by privlab" in i.value]
    assert said and "privlab trained only the shadow and reference models" in said[0]
    # another data set: the model trained on digits is not offered
    other = "mnist5k"  # embedded in the package: always there
    at.selectbox(key="mi_dataset").set_value(other).run()
    assert not [s for s in at.selectbox if s.key == "mi_trained"]
    assert any(f"No trained model is registered for data {other!r}" in i.value for i in at.info), \
        ([i.value for i in at.info], [e.value for e in at.error], other)


def test_page_refuses_an_edited_weights_file_in_one_line_and_serves_nothing(
        trained, registry, store, tmp_path, monkeypatch):  # noqa: F811
    _edited(trained, tmp_path)
    at = open_page("views/membership.py")
    at.selectbox(key="mi_dataset").set_value("digits").run()
    at.radio(key="mi_target").set_value("trained").run()
    [err] = [e.value for e in at.error]
    assert "\n" not in err and "hash mismatch" in err and "edit.safetensors" in err
    assert not [b for b in at.button if b.key == "mi_run"]
    assert store.list() == []
    # beyond loopback only the operator's command-line registrations are offered
    from dashboard.base import auth

    TR.add("api", {**TR.get("edited"), "target": TR.get("edited")["target"]}, by="python")
    monkeypatch.setattr(auth, "beyond_loopback", lambda: True)
    at = open_page("views/membership.py")
    at.selectbox(key="mi_dataset").set_value("digits").run()
    at.radio(key="mi_target").set_value("trained").run()
    assert [o.split(":")[0] for o in at.selectbox(key="mi_trained").options] == ["edited"]

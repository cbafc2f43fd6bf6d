"""Your own model (core.models.user, ``privlab model``): a factory file checked in a limited
child process before anything is stored, each refusal one line naming the file and the check;
registered models are architectures (runs, pages, parts), their content hash in every run key."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cli.main import main as cli_main
from core.config.schema import ConfigError, cache_key, parse_config
from core.foundation.parts import ARCHITECTURES, architecture, architectures_for
from core.models import user
from core.models.user_check import Failed, check

GOOD = '''
from torch import nn

def make(in_shape, n_classes, width):
    d = 1
    for s in in_shape:
        d *= s
    h = max(4, int(16 * width))
    return nn.Sequential(nn.Flatten(), nn.Linear(d, h), nn.ReLU(), nn.Linear(h, n_classes))
'''
BAD = {
    "import": "raise RuntimeError('broken on purpose')\n",
    "factory": "def other(in_shape, n_classes, width):\n    return None\n",
    "build": "def make(in_shape, n_classes, width):\n    return 42\n",
    "output shape": GOOD.replace("nn.Linear(h, n_classes)", "nn.Linear(h, n_classes + 1)"),
    "parameters": GOOD.replace("int(16 * width)", "int(100_000 * width)"),
    "determinism": GOOD.replace("h = max(4, int(16 * width))",
                                "import random\n    h = random.randint(4, 400)"),
}
DIGITS = {"digits": ((1, 8, 8), 10)}
TINY = {"kind": "membership", "data": {"name": "digits"}, "projection_points": 0,
        "train": {"members": 80, "epochs": 4, "batch_size": 32},
        "attack": {"shadows": 4, "rmia_references": 1}}


def _job(path: Path, factory: str = "make", cap: int = 1_000_000) -> dict:
    body = path.read_bytes()
    return {"path": str(path), "factory": factory, "sha256": user.sha256(body),
            "groupnorm": False, "data": {"digits": [[1, 8, 8], 10]}, "widths": [1.0, 1.0],
            "param_cap": cap, "memory_mib": 1024, "timeout_s": 30}


def _listing(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """A private model registry holding ``mine`` (GOOD's make, for digits), registered as the
    operator registers: through ``privlab model add``."""
    d = tmp_path_factory.mktemp("models")
    src = d / "src" / "good.py"
    src.parent.mkdir()
    src.write_text(GOOD)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(user.ENV_REGISTRY, str(d / "registry"))
        assert cli_main(["model", "add", "mine", "--from", f"{src}:make", "--data",
                         "digits"]) == 0
        yield d / "registry", src


@pytest.mark.parametrize("check_name", sorted(BAD))
def test_each_refusal_class_is_one_line_naming_the_check(tmp_path, check_name) -> None:
    path = tmp_path / "model.py"
    path.write_text(BAD[check_name])
    with pytest.raises(Failed) as err:
        check(_job(path))
    msg = str(err.value)
    assert msg.startswith(f"{check_name}: ") and "\n" not in msg, msg


def test_a_good_factory_passes_every_check_with_its_costs(tmp_path) -> None:
    path = tmp_path / "model.py"
    path.write_text(GOOD)
    report = check(_job(path))
    assert report["params"] == {"digits": 64 * 16 + 16 + 16 * 10 + 10}
    assert report["flops"]["digits"] == 2 * (64 * 16 + 16 * 10)  # a multiply-add counts 2
    assert report["opacus"] == "accepted"


def test_batchnorm_is_offered_the_groupnorm_change(tmp_path) -> None:
    path = tmp_path / "model.py"
    path.write_text("from torch import nn\n"
                    "def make(in_shape, n_classes, width):\n"
                    "    return nn.Sequential(nn.Conv2d(in_shape[0], 4, 3), nn.BatchNorm2d(4),\n"
                    "        nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, n_classes))\n")
    assert check(_job(path))["opacus"].startswith("accepted after BatchNorm → GroupNorm")


@pytest.mark.parametrize("case,text,opts", [
    ("time", "import time\ntime.sleep(3600)\n", {"timeout_s": 5}),
    ("memory", "import torch\nX = torch.ones(2**33)\n", {"memory_mib": 256}),
])
def test_refusals_in_the_child_store_nothing(registry, tmp_path, case, text, opts) -> None:
    d, _ = registry
    before = _listing(d)
    path = tmp_path / "bad.py"
    path.write_text(text + GOOD)
    with pytest.raises(user.ModelError) as err:
        user.add("bad", f"{path}:make", DIGITS, **opts)
    msg = str(err.value)
    assert msg.startswith(f"{path}: {case}: ") and "\n" not in msg, msg
    assert _listing(d) == before and "bad" not in ARCHITECTURES


def test_a_data_set_the_model_does_not_fit_is_refused_before_training(registry) -> None:
    with pytest.raises(ConfigError, match=r"model.arch: got 'mine'; it was checked for data "
                                          r"digits, not 'faces'"):
        parse_config({**TINY, "data": {"name": "faces"}, "model": {"arch": "mine"}})
    with pytest.raises(ValueError, match="it was checked for 1×8×8"):
        architecture("mine").check_input((1, 25, 25), "faces")
    assert "mine" in architectures_for((1, 8, 8)) and "mine" not in architectures_for((3, 32, 32))


def test_list_parts_and_remove(registry, capsys) -> None:
    d, src = registry
    assert cli_main(["model", "list", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["name"] == "mine" and row["status"] == "ok" and row["data"] == ["digits"]
    assert row["sha256"] == user.sha256(src.read_bytes())
    assert cli_main(["parts", "--family", "models", "--json"]) == 0
    models = {m["name"]: m for m in json.loads(capsys.readouterr().out)["models"]}
    assert models["mine"]["params"]["classifier"] == row["params"]["digits"]
    assert models["mine"]["forward_flops"] > 0 and "mlp" in models
    # a copy of the registration under another name, then removed: files gone, name unknown
    entry = json.loads((d / "mine.json").read_text())
    (d / "gone.json").write_text(json.dumps({**entry, "name": "gone"}))
    (d / "gone.py").write_bytes((d / "mine.py").read_bytes())
    assert "gone" in ARCHITECTURES
    assert cli_main(["model", "remove", "gone"]) == 0
    assert not (d / "gone.json").exists() and not (d / "gone.py").exists()
    assert "gone" not in ARCHITECTURES
    assert cli_main(["model", "remove", "gone"]) == 2
    err = capsys.readouterr().err
    assert "'gone' is not registered" in err and len(err.strip().splitlines()) == 1
    assert cli_main(["model", "remove", "mlp"]) == 2  # built-in: never removed


def test_an_edited_file_changes_every_key(registry, tmp_path) -> None:
    src = tmp_path / "edit.py"
    src.write_text(GOOD)
    user.add("edited", f"{src}:make", DIGITS)
    cfg = parse_config({**TINY, "model": {"arch": "edited"}})
    fp1, key1 = cfg.model.fingerprint, cache_key(cfg)
    assert fp1 == user.get_entry("edited")["fingerprint"]
    src.write_text(GOOD.replace("16 * width", "24 * width"))
    with pytest.raises(ConfigError, match="changed since it was checked; register it again"):
        parse_config({**TINY, "model": {"arch": "edited"}})
    user.add("edited", f"{src}:make", DIGITS, replace=True)
    cfg2 = parse_config({**TINY, "model": {"arch": "edited"}})
    assert cfg2.model.fingerprint != fp1 and cache_key(cfg2) != key1
    # a stored config with the old fingerprint is not run as if it were the new file
    with pytest.raises(ConfigError, match="model.fingerprint: got"):
        parse_config({**TINY, "model": {"arch": "edited", "fingerprint": fp1}})
    user.remove("edited")
    with pytest.raises(ConfigError, match="model.arch: got 'edited'"):
        parse_config({**TINY, "model": {"arch": "edited"}})


def test_a_membership_run_on_a_registered_model_under_dp_sgd_and_relaxloss(registry) -> None:
    from core.runs.experiments import run

    got = {}
    for name, block in (("none", {"kind": "none"}), ("dp_sgd", {"kind": "dp_sgd", "epochs": 3}),
                        ("relaxloss", {"kind": "relaxloss", "alpha": 3.0})):
        cfg = parse_config({**TINY, "model": {"arch": "mine"}, "defense": block})
        r = run(cfg)
        assert r.config["model"]["fingerprint"] == cfg.model.fingerprint
        got[name] = r.metrics
        assert math.isfinite(r.metrics["utility_acc"]) and 0 <= r.metrics["mia_loss_auc"] <= 1
    assert math.isfinite(got["dp_sgd"]["epsilon_accountant"])
    assert got["relaxloss"]["mia_loss_auc"] != got["none"]["mia_loss_auc"]  # α = 3 binds


def _script(config_json: str, bound: str | None) -> None:
    import json as _json

    import streamlit as st
    from streamlit import config as st_config

    from dashboard.components.part_controls import architecture_ui

    if bound:
        st_config.set_option("server.address", bound)
    try:
        out = architecture_ui(_json.loads(config_json), kind="membership", key="t")
    finally:
        st_config.set_option("server.address", None)
    st.code(_json.dumps(out, sort_keys=True), language="json")


def _page(config: dict, bound: str | None = None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_script, args=(json.dumps(config), bound),
                               default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def test_the_page_offers_a_registered_model_for_its_data(registry) -> None:
    config = {"kind": "membership", "seed": 0, "data": {"name": "digits"},
              "train": {"members": 40, "epochs": 1}}
    at = _page(config)
    box = at.selectbox(key="t_arch")
    assert "mine (your model)" in box.options
    box.set_value("mine").run()
    assert not at.exception, at.exception
    (code,) = [c.value for c in at.code if c.language == "json"]
    model = json.loads(code)["model"]
    assert model["arch"] == "mine" and model["fingerprint"] == user.get_entry("mine")["fingerprint"]
    params = 64 * 16 + 16 + 16 * 10 + 10  # the checks' measured count, shown before Run
    assert any(f"{params:,} parameters" in c.value for c in at.caption), [c.value for c in at.caption]
    # a user's model is never run to price it: its time is the estimate, said to be one
    cost = next(c.value for c in at.caption if f"{params:,} parameters" in c.value)
    assert "another machine" in cost and "measured on this machine" not in cost
    # data it was not checked for: not offered, with its reason
    at = _page({**config, "data": {"name": "faces"}})
    assert "mine (your model)" not in at.selectbox(key="t_arch").options
    (exp,) = [e for e in at.expander if "not offered" in e.label]
    assert "checked for" in "\n".join(m.value for m in exp.markdown)


def test_beyond_loopback_only_models_the_operator_registered_are_offered(registry) -> None:
    d, _ = registry
    entry = json.loads((d / "mine.json").read_text())
    (d / "apimodel.py").write_bytes((d / "mine.py").read_bytes())
    (d / "apimodel.json").write_text(json.dumps({**entry, "name": "apimodel", "by": "python"}))
    try:
        config = {"kind": "membership", "seed": 0, "data": {"name": "digits"}}
        assert "apimodel (your model)" in _page(config).selectbox(key="t_arch").options
        at = _page(config, bound="0.0.0.0")
        options = at.selectbox(key="t_arch").options
        assert "mine (your model)" in options and "apimodel (your model)" not in options
        (exp,) = [e for e in at.expander if "not offered" in e.label]
        assert "privlab model add" in "\n".join(m.value for m in exp.markdown)
    finally:
        user.remove("apimodel")
    # code that was never registered is no architecture at all
    with pytest.raises(ConfigError, match="model.arch: got"):
        parse_config({**TINY, "model": {"arch": f"{d / 'mine.py'}:make"}})


def test_one_comparison_puts_the_registered_model_under_each_defense(registry) -> None:
    """"My network, undefended vs DP-SGD vs RelaxLoss" is one Compare: every sweep of the
    comparison trains the registered model, its fingerprint in each point's config."""
    from core.config.schema import parse_config as parse
    from core.runs.compare import comparison_sweeps, spec_from_dict, spec_to_dict, teaching_spec

    spec = spec_from_dict({**spec_to_dict(teaching_spec()), "model": {"arch": "mine"}})
    sweeps, _ = comparison_sweeps(spec)
    kinds = {d.kind if hasattr(d, "kind") else str(d) for d, _ in sweeps}
    assert len(sweeps) >= 3, kinds
    fp = user.get_entry("mine")["fingerprint"]
    for _, sw in sweeps:
        assert sw["base"]["model"]["arch"] == "mine"
        assert parse(sw["base"]).model.fingerprint == fp


def test_the_groupnorm_option_replaces_batchnorm_under_every_defense(tmp_path) -> None:
    from torch import nn

    path = tmp_path / "bn.py"
    path.write_text("from torch import nn\n"
                    "def make(in_shape, n_classes, width):\n"
                    "    return nn.Sequential(nn.Conv2d(in_shape[0], 4, 3), nn.BatchNorm2d(4),\n"
                    "        nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, n_classes))\n")
    sha = user.sha256(path.read_bytes())
    plain = user.UserFactory(str(path), sha, "make")((1, 8, 8), 10, width=1.0)
    fixed = user.UserFactory(str(path), sha, "make", groupnorm=True)((1, 8, 8), 10, width=1.0)
    assert any(isinstance(m, nn.BatchNorm2d) for m in plain.modules())
    assert not any(isinstance(m, nn.BatchNorm2d) for m in fixed.modules())
    assert any(isinstance(m, nn.GroupNorm) for m in fixed.modules())
    # its forward is the user's: K copies train through vmap, never as one grouped network
    from core.models.stacked import groupable

    assert not groupable(fixed) and groupable(fixed.net)
    # a copy whose bytes changed after the check is refused, never imported
    path.write_text(path.read_text() + "\n# edited\n")
    with pytest.raises(user.ModelError, match="changed since they were checked"):
        user.UserFactory(str(path), sha, "make", groupnorm=True)((1, 8, 8), 10, width=1.0)


def test_the_dashboard_never_registers_or_imports_a_users_file() -> None:
    """Registration and the import of a file by path live in core.models.user; no page calls
    them (a page reaches a registered model only through the architecture registry)."""
    import re

    root = Path(__file__).resolve().parents[1] / "dashboard"
    calls = re.compile(r"\b(user\.add|run_checks|load_factory|user_check|UserFactory|"
                       r"spec_from_file_location|exec\()")
    hits = [f"{p.name}: {m.group(0)}" for p in root.rglob("*.py")
            for m in calls.finditer(p.read_text())]
    assert hits == []


def test_a_moved_file_still_runs_its_checked_copy_and_list_says_so(registry, capsys) -> None:
    d, _ = registry
    entry = json.loads((d / "mine.json").read_text())
    (d / "moved.py").write_bytes((d / "mine.py").read_bytes())
    (d / "moved.json").write_text(json.dumps({**entry, "name": "moved",
                                              "path": str(d / "no" / "such.py")}))
    try:
        assert parse_config({**TINY, "model": {"arch": "moved"}}).model.fingerprint
        assert cli_main(["model", "list", "--json"]) == 0
        rows = {r["name"]: r["status"] for r in json.loads(capsys.readouterr().out)}
        assert rows["moved"] == "moved" and rows["mine"] == "ok"
        # the stored copy altered by hand: refused at validation, said so by list
        (d / "moved.py").write_text("print('not what was checked')\n")
        with pytest.raises(ConfigError, match="stored copy .* no longer matches"):
            parse_config({**TINY, "model": {"arch": "moved"}})
    finally:
        user.remove("moved")

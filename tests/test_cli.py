"""The ``privlab`` command line: a few real subprocesses (exit codes, stdout/stderr contract)
plus cheap in-process calls of ``cli.main.main`` for the rest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from core.config.schema import CONFIG_MODELS, load_config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
DIGITS_PCA = str(ROOT / "examples" / "projection_digits_pca.yaml")
MNIST_TSNE = str(ROOT / "examples" / "projection_mnist5k_tsne.yaml")


def _console_script() -> list[str]:
    script = Path(sys.executable).with_name("privlab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "cli.main"]


def cli(cache: Path, *args: str, module: bool = False, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "cli.main"] if module else _console_script()
    env = {**os.environ, "PRIVLAB_CACHE_DIR": str(cache)}
    return subprocess.run([*cmd, *args], check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def stored_runs(cache: Path) -> list[Path]:
    return [p for p in (cache / "runs").glob("??/*")] if (cache / "runs").exists() else []


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_validate(path):
    assert load_config(path).kind in CONFIG_MODELS


def test_run_cache_list_show_export(tmp_path):
    cache = tmp_path / "cache"
    first = cli(cache, "run", DIGITS_PCA, "--json")
    assert first.returncode == 0, first.stderr
    out = json.loads(first.stdout)  # stdout is JSON only
    assert set(out) == {"key", "kind", "from_cache", "metrics", "notes", "caveats"}
    assert len(out["key"]) == 64 and out["kind"] == "projection" and out["from_cache"] is False
    assert out["metrics"]["n_points"] == 1000 and 0 < out["metrics"]["trustworthiness"] <= 1

    second = cli(cache, "run", DIGITS_PCA, "--json", module=True)  # also `python -m cli.main`
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["from_cache"] is True and again["key"] == out["key"]
    assert again["metrics"] == out["metrics"]
    assert len(stored_runs(cache)) == 1

    listed = cli(cache, "list", "--json")
    assert listed.returncode == 0 and [r["key"] for r in json.loads(listed.stdout)] == [out["key"]]

    shown = cli(cache, "show", out["key"][:8], "--json")
    assert shown.returncode == 0, shown.stderr
    meta = json.loads(shown.stdout)
    assert meta["key"] == out["key"] and meta["config"]["method"] == "pca"
    assert meta["artifacts"]["embedding"] == {"shape": [1000, 2], "dtype": "float32"}
    assert meta["artifacts"]["label"]["shape"] == [1000]

    csv = tmp_path / "runs.csv"
    exported = cli(cache, "export", str(csv), "--format", "csv")
    assert exported.returncode == 0, exported.stderr
    lines = csv.read_text().splitlines()
    assert len(lines) == 2 and "metrics.trustworthiness" in lines[0] and out["key"] in lines[1]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", DIGITS_PCA, "--set", "method=bogus"], "method: got 'bogus'"),
        (["run", "no/such/config.yaml"], "no/such/config.yaml"),
        (["run", DIGITS_PCA, "--set", "max_points=5"], "max_points: got 5; allowed range 10 <= value"),
    ],
    ids=["bad-set", "missing-file", "out-of-range"],
)
def test_bad_input_is_one_line_exit_2_nothing_stored(tmp_path, args, needle):
    cache = tmp_path / "cache"
    proc = cli(cache, *args)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("privlab: error: ") and needle in lines[0]
    assert stored_runs(cache) == []


def test_datasets_json(tmp_path):
    proc = cli(tmp_path, "datasets", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert {"digits", "mnist5k", "faces", "synthetic", "adult"} <= set(rows)
    assert rows["digits"]["available"] is True and rows["digits"]["kind"] == "image"
    assert rows["adult"]["attributes"][0] == "sex"


def test_ctrl_c_exits_130_and_stores_nothing(tmp_path):
    cache = tmp_path / "cache"
    cmd = [*_console_script(), "run", MNIST_TSNE, "--progress", "lines"]
    env = {**os.environ, "PRIVLAB_CACHE_DIR": str(cache)}
    # A terminal delivers Ctrl-C to a process whose SIGINT is at its default; a test runner
    # launched in the background (CI, nohup …&) inherits SIGINT *ignored*, and Python then never
    # installs its KeyboardInterrupt handler. Restore the default in the child, as a shell would.
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            # the child must not inherit an ignored SIGINT; the lambda only
                            # resets one signal (async-signal-safe enough for this test)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    try:
        for line in proc.stderr:  # wait until the (multi-second) t-SNE has started
            if "t-SNE on" in line:
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and out == ""
    assert stored_runs(cache) == []


# -- in-process (no subprocess start-up cost) -------------------------------------------------


def test_in_process_errors_and_help(tmp_path, capsys):
    cache = str(tmp_path / "c")
    assert main(["show", "abcdef12", "--cache-dir", cache]) == 2
    assert "privlab: error: key: no stored run matches 'abcdef12'" in capsys.readouterr().err
    assert main(["show", "xyz", "--cache-dir", cache]) == 2  # malformed prefix
    assert "key: got 'xyz'" in capsys.readouterr().err
    assert main(["frobnicate"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["run", DIGITS_PCA, "--set", "noequals", "--cache-dir", cache]) == 2
    assert "--set: got 'noequals'" in capsys.readouterr().err
    assert main(["run", DIGITS_PCA, "--set", "seed=[", "--cache-dir", cache]) == 2
    assert "not valid YAML" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: projection\nmethod: [unclosed\n")
    assert main(["run", str(bad), "--cache-dir", cache]) == 2
    assert "not valid YAML" in capsys.readouterr().err
    bad.write_text("kind: projection\nsplitt: train\n")
    assert main(["run", str(bad), "--cache-dir", cache]) == 2
    assert "splitt: unknown field" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "datasets" in capsys.readouterr().out
    assert main(["list", "--cache-dir", cache]) == 0
    assert "no stored runs" in capsys.readouterr().out


def test_in_process_run_show_delete_export_json(tmp_path, capsys):
    cache = str(tmp_path / "c")
    args = ["run", DIGITS_PCA, "--set", "max_points=50", "--set", "split=test", "--cache-dir", cache]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "projection run" in out and "trustworthiness" in out and "key: " in out
    key = out.rsplit("key: ", 1)[1].strip()
    assert main(["list", "--cache-dir", cache]) == 0
    assert key[:12] in capsys.readouterr().out
    assert main(["show", key[:10], "--cache-dir", cache]) == 0
    shown = capsys.readouterr().out
    assert "embedding    float32 (50, 2)" in shown and "max_points: 50" in shown
    dest = tmp_path / "out" / "runs.json"
    assert main(["export", str(dest), "--cache-dir", cache]) == 0  # format from the suffix
    assert "wrote 1 run to" in capsys.readouterr().out
    assert json.loads(dest.read_text())[0]["key"] == key
    assert main(["run", *args[1:], "--no-cache", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["from_cache"] is False
    assert main(["delete", key[:8], "--cache-dir", cache]) == 0
    capsys.readouterr()
    assert main(["list", "--json", "--cache-dir", cache]) == 0
    assert json.loads(capsys.readouterr().out) == []


# -- the benchmark harness (`python -m benchmarks`), with stand-in benchmarks -------------------


def test_benchmark_harness_tables_json_and_failures(tmp_path, monkeypatch, capsys):
    import types

    # opacus ships a top-level `benchmarks` package into site-packages; ours is the repo's
    # (`python -m benchmarks` run from the repo root finds it first, pytest does not)
    monkeypatch.syspath_prepend(str(ROOT))
    for mod in [m for m in sys.modules if m == "benchmarks" or m.startswith("benchmarks.")]:
        monkeypatch.delitem(sys.modules, mod)
    from benchmarks import BENCHMARKS
    from benchmarks.__main__ import main as bench_main

    assert Path(sys.modules["benchmarks"].__file__).parent == ROOT / "benchmarks"

    fake = types.ModuleType("privlab_fake_bench")
    fake.main = lambda quick=False: {"name": "fake", "rows": [{"case": "a", "seconds": 0.5}],
                                     "headline": {"seconds": 0.5},
                                     "notes": "n", "targets": {"under_1_s": True}}
    fake.headless = lambda quick=False: {"name": "headless", "rows": []}
    fake.broken = lambda quick=False: 1 / 0
    monkeypatch.setitem(sys.modules, "privlab_fake_bench", fake)
    monkeypatch.setitem(BENCHMARKS, "fake", "privlab_fake_bench:main")
    monkeypatch.setitem(BENCHMARKS, "broken", "privlab_fake_bench:broken")
    monkeypatch.setitem(BENCHMARKS, "headless", "privlab_fake_bench:headless")
    assert all(":" in v for v in BENCHMARKS.values())

    assert bench_main(["fake", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "== fake ==" in out and "seconds" in out and "under_1_s" in out
    rec = json.loads((tmp_path / "fake.json").read_text())
    assert rec["rows"] == [{"case": "a", "seconds": 0.5}] and rec["quick"] is False
    assert rec["headline"] == {"seconds": 0.5} and "headline:" in out
    assert rec["machine"]["cpu_count"] >= 1 and rec["machine"]["numpy"] and "date" in rec["machine"]

    assert bench_main(["fake", "broken", "--quick", "--results-dir", str(tmp_path)]) == 1
    assert "ZeroDivisionError" in capsys.readouterr().out
    assert (tmp_path / "fake.quick.json").exists() and not (tmp_path / "broken.quick.json").exists()
    assert bench_main(["nope", "--results-dir", str(tmp_path)]) == 2
    # a benchmark without the headline its issue names is a failure, not a silent omission
    assert bench_main(["headless", "--results-dir", str(tmp_path)]) == 1
    assert "no 'headline'" in capsys.readouterr().out


@pytest.mark.parametrize("family", [None, "membership", "models"])
def test_parts_fits_a_100_column_terminal_and_wide_or_json_keep_everything(family, monkeypatch,
                                                                           capsys):
    monkeypatch.setenv("COLUMNS", "100")
    pick = [] if family is None else ["--family", family]
    assert main(["parts", *pick]) == 0
    narrow = capsys.readouterr().out
    assert max(map(len, narrow.splitlines())) <= 100
    assert main(["parts", *pick, "--wide"]) == 0
    wide = capsys.readouterr().out
    assert max(map(len, wide.splitlines())) > 100  # the full rows, one line each
    assert main(["parts", *pick, "--json"]) == 0
    parts = json.loads(capsys.readouterr().out)
    # nothing is cut: every name and title is whole on a line, every knob is there once the
    # wrapping's line breaks are read as spaces
    flat = " ".join(narrow.split())
    for key, group in parts.items():
        for part in group if (key == "models") == (family == "models") else []:
            name = part.get("config_name", part["name"])
            assert any(line.split("  ")[0].strip() == name for line in narrow.splitlines())
            assert part["title"] in narrow
            if part.get("knob"):
                assert f"{part['knob']['symbol']} = {part['knob']['field']} in" in flat

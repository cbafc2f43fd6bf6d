"""The paper check's paper-architecture column: every claim declares the paper's model family
beside its definition; the column is read by the same interval rule from the rows the
column's benchmark writes (seeds and seconds of the runs behind it); a verdict that differs
from the first column is detected and named on the page and in ``privlab papers``."""

from __future__ import annotations

import json
from pathlib import Path

from core.paper_check import arch as paper_arch
from core.paper_check.claims import CLAIMS, PAPER
from core.paper_check.papers import build_table
from core.paper_check.verdicts import FAILS, HOLDS, UNRESOLVED

GL = "benchmarks/results/paper_arch_raw/kappa_gl.json"


def _put(root: Path, rel: str, obj) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def _gl_rows(mse_small_kappa: float) -> list[dict]:
    """LeNet-5 rows at κ/d 0.01 and 1 for three seeds: MSE 0.05 at κ/d = 1, and
    ``mse_small_kappa`` (± a little per seed) at κ/d = 0.01; utility falls with κ."""
    rows = []
    for seed in (0, 1, 2):
        for ch in ("natural", "white", "personalized"):
            for k, mse, util in ((1.0, 0.05, 0.9), (0.01, mse_small_kappa + 0.001 * seed, 0.5)):
                rows.append({"part": "defended", "seed": seed, "defense": ch,
                             "kappa_per_dim": k, "mse": mse + (0.01 if ch != "natural" else 0),
                             "utility": util + 0.01 * seed, "psnr_median": -10 * mse,
                             "seconds": 10.0, "cpu_seconds": 5.0})
    return rows


def _root(tmp_path: Path, mse_small_kappa: float) -> Path:
    root = tmp_path / "repo"
    _put(root, GL, {"rows": _gl_rows(mse_small_kappa), "reductions": "16 targets",
                    "partial": False})
    return root


def _by_id(root: Path) -> dict[str, dict]:
    return {r["claim_id"]: r for r in build_table(root, cuda=False, runs=[])}


def test_every_claim_declares_the_papers_architecture_with_data_or_a_reason():
    for c in CLAIMS:
        a = c.arch
        assert a is not None, c.claim_id
        assert a.family and a.arch
        if a.measure is not None and a.file:  # run for this column: data and width stated
            assert a.data.split()[0] in ("mnist5k", "digits") and a.width is not None and a.runs


def test_column_cells_carry_arch_width_data_verdict_interval_seeds_seconds(tmp_path):
    rows = _by_id(_root(tmp_path, 0.30))
    mse = rows["kappa_mse"]["paper_arch"]
    assert mse["measured"] and (mse["arch"], mse["width"], mse["data"]) == ("lenet5", 1.0,
                                                                           "mnist5k")
    assert mse["verdict"] == HOLDS  # κ↓ raises MSE in every seed
    assert mse["interval"]["lo"] > 0 and mse["interval"]["n"] == 3
    assert mse["seeds"] == [0, 1, 2]
    assert mse["seconds"] == 60.0 and mse["cpu_seconds"] == 30.0  # 6 runs behind it
    assert mse["protocol"] == "16 targets"
    util = rows["kappa_utility"]["paper_arch"]
    assert util["verdict"] == HOLDS
    # White over Natural at equal κ: every (seed, κ) cell higher
    assert rows["kappa_white_over_natural_mse"]["paper_arch"]["verdict"] == HOLDS
    # a claim whose runs were not made here: not measured, with the declared reason
    mia = rows["inf2guard_mia_lambda"]["paper_arch"]
    assert not mia["measured"] and mia["verdict"] is None
    assert mia["why"].startswith("not run here") and "benchmarks.paper_arch mia" in mia["why"]
    # rows present but not at both ends: the reader's own reason
    assert rows["kappa_mia"]["paper_arch"]["why"] == "file or rows missing"
    tap = rows["tappfl_beats_pruning"]["paper_arch"]
    assert not tap["measured"] and tap["why"].startswith("not run here")
    assert "benchmarks.paper_arch tappfl_fig4" in tap["why"]
    # a claim the column cannot run: the declared reason, verbatim
    pia = rows["inf2guard_pia_lambda"]["paper_arch"]
    assert not pia["measured"] and "not a registered architecture" in pia["why"]
    # a claim whose first column already trains the paper's model reads that column
    fil = rows["fil_whitebox_eta"]
    assert fil["paper_arch"]["same_as_first"]
    assert fil["paper_arch"]["measured"] == bool(fil["decided_by"])


def test_a_verdict_that_differs_between_columns_is_named(tmp_path):
    # κ/d = 0.01 gives *less* MSE than κ/d = 1 with LeNet-5: the claim fails in this column
    rows = list(_by_id(_root(tmp_path, 0.01)).values())
    by = {r["claim_id"]: r for r in rows}
    assert by["kappa_mse"]["paper_arch"]["verdict"] == FAILS
    assert by["kappa_mse"]["verdict"] == UNRESOLVED  # the first column's file is absent here
    assert paper_arch.differs(by["kappa_mse"])
    assert "kappa_mse" in paper_arch.verdict_changes(rows)
    assert "kappa_mse (not resolved → does not hold)" in paper_arch.changes_sentence(rows)
    h = paper_arch.headline(rows, PAPER)
    assert h["paper_arch_claims_total"] == sum(c.origin == PAPER for c in CLAIMS)
    assert "kappa_mse" in h["paper_arch_verdict_changes"]
    assert h["paper_arch_newly_run"] <= h["paper_arch_claims_measured"]


def test_verdict_changes_on_synthetic_rows():
    def row(cid, first, arch, measured=True):
        return {"claim_id": cid, "origin": PAPER, "verdict": first,
                "paper_arch": {"measured": measured, "verdict": arch, "same_as_first": False,
                               "arch": "lenet5", "width": 1.0, "data": "mnist5k",
                               "interval": None, "why": "" if measured else "not run"}}

    rows = [row("a", HOLDS, HOLDS), row("b", HOLDS, FAILS), row("c", UNRESOLVED, HOLDS),
            row("d", HOLDS, None, measured=False)]
    assert paper_arch.verdict_changes(rows) == ["b", "c"]
    assert paper_arch.changes_sentence(rows[:1]) == ""
    assert "differs from the first column" in paper_arch.short(rows[1])
    assert paper_arch.short(rows[3]).startswith("not measured (LeNet-5): not run")  # its title
    h = paper_arch.headline(rows, PAPER)
    assert (h["paper_arch_claims_measured"], h["paper_arch_claims_total"]) == (3, 4)


def _section(root: str) -> None:
    from pathlib import Path

    from dashboard.components.paper_check import paper_check_section

    paper_check_section(Path(root), cuda=False)


def test_page_shows_the_column_and_says_when_verdicts_differ(tmp_path):
    from streamlit.testing.v1 import AppTest

    root = _root(tmp_path, 0.01)
    at = AppTest.from_function(_section, kwargs={"root": str(root)}, default_timeout=30).run()
    assert not at.exception, at.exception
    df = at.table[0].value
    col = "with the paper's architecture"
    assert col in df.columns and len(df.columns) <= 5  # fits 1280 px
    i = list(df["claim"]).index(next(c.statement for c in CLAIMS if c.claim_id == "kappa_mse"))
    assert df[col][i].startswith(FAILS) and "LeNet-5" in df[col][i]
    assert any("kappa_mse" in w.value for w in at.warning)
    assert any("paper claims measured with the paper's own model family" in c.value
               for c in at.caption)


def test_page_says_nothing_differs_when_the_columns_agree(tmp_path):
    from streamlit.testing.v1 import AppTest

    root = tmp_path / "repo"
    (root / "benchmarks/results").mkdir(parents=True)
    at = AppTest.from_function(_section, kwargs={"root": str(root)}, default_timeout=30).run()
    assert not at.exception, at.exception
    assert not at.warning


def test_cli_prints_the_column(capsys):
    from cli.main import main

    assert main(["papers"]) == 0
    text = capsys.readouterr().out
    assert "  arch     " in text
    assert "With the paper's architecture:" in text


def test_benchmark_shards_merge_into_one_file_and_only_missing_points_run(tmp_path, monkeypatch):
    import benchmarks.paper_arch as P

    monkeypatch.setattr(P, "OUT", tmp_path)
    pts = P._points("kappa_mia")

    def row(lab):
        return {**lab, "lira_auc": 0.5, "utility": 0.9, "loss_auc": 0.5, "seconds": 1.0,
                "cpu_seconds": 1.0, "load": [1.0]}

    P._write(tmp_path / "kappa_mia.json", "kappa_mia",
             [row(lab) for lab, _ in pts if lab["seed"] < 2], partial=True)
    P._write(tmp_path / "kappa_mia.seeds-2.json", "kappa_mia",
             [row(lab) for lab, _ in pts if lab["seed"] == 2], partial=True)
    out = P.merge("kappa_mia")
    assert len(out["rows"]) == len(pts) and not out["partial"]
    assert [p.name for p in tmp_path.iterdir()] == ["kappa_mia.json"]
    # every point measured: a rerun has nothing to run (a run would fail here: no runner)
    monkeypatch.setattr(P, "_run", lambda cfg: (_ for _ in ()).throw(AssertionError(cfg)))
    assert len(P.run_group("kappa_mia")["rows"]) == len(pts)
    # a changed protocol starts afresh
    monkeypatch.setitem(P.REDUCTIONS, "kappa_mia", "another protocol")
    assert P._kept(tmp_path / "kappa_mia.json", "kappa_mia") == []


TFA = "benchmarks/results/paper_arch_raw/tappfl_fig4.json"


def _fig4_rows(gap: float, reached: tuple[bool, ...] = (True, True, True)) -> list[dict]:
    """Per seed: TAPPFL's run, one pruning run, and the two ends at TAPPFL's level (the
    baseline ``gap`` below TAPPFL, ± a little per seed; None where it never got there)."""
    rows = []
    for seed, ok in zip((0, 1, 2), reached):
        for d in ("tappfl", "pruning"):
            rows.append({"part": "run", "seed": seed, "defense": d, "knob": 0.5, "seconds": 40.0,
                         "cpu_seconds": 30.0})
        tap = 0.9 + 0.01 * seed
        for end, u in (("baseline", tap - gap - 0.002 * seed if ok else None), ("tappfl", tap)):
            rows.append({"part": "at_level", "seed": seed, "baseline": "pruning", "end": end,
                         "utility": u})
    return rows


def test_tappfl_fig4_is_read_per_seed_at_tappfls_level(tmp_path):
    root = tmp_path / "repo"
    _put(root, TFA, {"rows": _fig4_rows(0.05), "reductions": "digits", "partial": False})
    cell = _by_id(root)["tappfl_beats_pruning"]["paper_arch"]
    assert cell["measured"] and (cell["arch"], cell["width"]) == ("tappfl_cifar", 0.25)
    assert cell["verdict"] == HOLDS and cell["interval"]["n"] == 3
    assert cell["seeds"] == [0, 1, 2] and cell["seconds"] == 240.0  # TAPPFL's + pruning's runs
    # DP-Gaussian's rows are absent: its claim is not measured, with the reader's reason
    assert not _by_id(root)["tappfl_beats_dp_gaussian"]["paper_arch"]["measured"]
    # a seed where pruning never reached TAPPFL's level has no pair: two seeds decide
    _put(root, TFA, {"rows": _fig4_rows(-0.05, (True, False, True)), "reductions": "digits"})
    cell = _by_id(root)["tappfl_beats_pruning"]["paper_arch"]
    assert cell["verdict"] == FAILS and cell["interval"]["n"] == 2


def test_tappfl_fig4_bisects_like_the_first_column_and_reruns_nothing(tmp_path, monkeypatch):
    import benchmarks.paper_arch as P
    from benchmarks import paper_arch_tappfl as T

    monkeypatch.setattr(P, "OUT", tmp_path)
    monkeypatch.setattr(T, "SEEDS", (0, 1))
    calls = []

    class R:
        def __init__(self, auc, util):
            self.metrics = {"attack_mlp_auc": auc, "utility_acc": util}

    def fake(cfg, stages=None):
        d, calls[len(calls):] = cfg["defense"], [cfg]
        assert cfg["model"] == {"arch": "tappfl_cifar", "width": 0.25}
        if d["kind"] == "tappfl":
            return R(0.8, 0.9), 1.0, 1.0, [1.0]
        # privacy grows with the noise (small ε) or the pruning rate; utility falls with it
        x = min(1.0, d["epsilon"] / 10) if "epsilon" in d else 1.0 - d["rate"]
        return R(0.5 + 0.4 * x, 0.5 + 0.45 * x), 1.0, 1.0, [1.0]

    monkeypatch.setattr(P, "_run", fake)
    doc = P.run_group(T.GROUP)
    runs = [r for r in doc["rows"] if r["part"] == "run"]
    assert len(runs) == len(calls) <= 2 * (1 + 3 * T.MAX_EVALS)
    at = [r for r in doc["rows"] if r["part"] == "at_level"]
    assert len(at) == 2 * 3 * 2 and not doc["partial"]
    for r in at:
        if r["end"] == "baseline":  # at AUC ≤ 0.81 the stand-in keeps ≤ 0.8625 < TAPPFL's 0.9
            assert r["reached"] and r["utility"] <= 0.8625 + 1e-9 and r["tappfl_better"]
    assert doc["data"] == "digits (bold)" and doc["reductions"] == T.REDUCTIONS
    monkeypatch.setattr(P, "_run", lambda cfg, stages=None: (_ for _ in ()).throw(
        AssertionError(cfg)))
    again = P.run_group(T.GROUP)["rows"]  # every evaluation read back, the ends re-derived

    def key(rows):
        return sorted(json.dumps(r, sort_keys=True) for r in rows)

    assert key(again) == key(doc["rows"])

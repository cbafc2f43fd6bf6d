"""Every number a lesson prints is one of the figures its page shows (the figures table the
lesson panel draws, and on Compare the equal-privacy table), at the same settings: one source
(:func:`core.report.teaching.figures`, :func:`core.report.teaching.compare_figures`) feeds both."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from core.foundation.result import Result
from core.report import teaching
from tests.test_teaching import _fake_store, _key

#: a tiny stored sweep per page: metric -> (value at the least private end, at the most
#: private end, run interval half-width); values in between are linear in the knob's index
SWEEPS = {
    "attribute_privacy": {"attack_auc_best": (0.94, 0.74, 0.03),
                          "attack_in_training_bacc": (0.64, 0.50, 0.05),
                          "utility_acc": (0.94, 0.93, 0.01), "chance": (0.5, 0.5, 0)},
    "membership": {"mia_auc_best": (0.71, 0.53, 0.02), "mia_lira_online_auc": (0.68, 0.50, 0.02),
                   "utility_acc": (0.66, 0.12, 0.02), "utility_majority": (0.11, 0.11, 0)},
    "property": {"property_acc_best": (0.53, 0.55, 0.04),
                 "property_in_training_bacc": (0.52, 0.24, 0.04),
                 "utility_acc": (0.96, 0.87, 0.01), "chance": (0.25, 0.25, 0)},
    "reconstruction": {"recon_best_psnr_median": (27.4, 4.8, 0.6),
                       "utility_acc": (0.85, 0.71, 0.01)},
    "repr_reconstruction": {"recon_ssim": (0.91, 0.82, 0.02),
                            "recon_decoder_fresh_ssim": (0.91, 0.81, 0.02),
                            "utility_acc": (0.95, 0.90, 0.01)},
    "fisher_information": {"fil_attack_acc_best": (0.94, 0.51, 0.01),
                           "fil_utility_acc": (1.00, 0.58, 0.03)},
}
STRONGEST = {"attribute_privacy": ("best_attacker", "logreg"),
             "membership": ("best_attack", "lira_online"), "property": ("best_attacker", "mlp"),
             "reconstruction": ("best_inverter", "idlg"),
             "repr_reconstruction": ("strongest_attack", "decoder"),
             "fisher_information": ("best_attack", "map")}


def _stored(page: str, missing_one: bool = False):
    """The page's teaching sweep stored at fake Results (seed-dependent, so the intervals are
    the seeds' and the runs' own), its reference runs too; optionally one point left out."""
    spec = teaching.teaching_sweep(page)
    dim = 64 if spec.dim_scaled else None
    order = sorted(spec.values(dim), reverse=spec.knob.more_private == "lower")
    info_key, name = STRONGEST[page]

    def fn(v, seed):
        t = order.index(v) / (len(order) - 1)
        return {m: (a + (b - a) * t + 0.004 * seed * (m != "chance"), h)
                for m, (a, b, h) in SWEEPS[page].items()}

    skip = {(order[1], spec.seeds[-1])} if missing_one else set()
    get = _fake_store(spec, fn, dim, skip)
    refs = {_key(c): Result(kind=spec.kind, config=c, seed=c["seed"],
                            metrics={"utility_acc": 0.88 + 0.01 * c["seed"],
                                     "utility_majority": 0.11})
            for c in spec.reference_configs()}

    def peek(cfg):
        r = refs.get(_key(cfg)) or get(cfg)
        if r is not None and _key(cfg) not in refs:
            r.info = {info_key: name}
        return r

    return spec, peek, dim


@pytest.mark.parametrize("missing_one", [False, True])
@pytest.mark.parametrize("page", teaching.PAGES)
def test_every_number_of_every_lesson_is_a_figure_of_its_page(page, missing_one):
    spec, peek, dim = _stored(page, missing_one)
    fig = teaching.figures(spec, peek, dim)
    les = teaching.lesson_from(spec, fig)
    assert les.ready and les.sentences == teaching.lesson(spec, peek, dim).sentences
    checked, bad = teaching.check_numbers(les.sentences, fig.rows())
    assert checked >= 6 and not bad, bad
    # the strongest attacker the table names is the one the lesson names
    assert f"({STRONGEST[page][1]})" in les.sentences[0]


def test_the_check_catches_a_number_the_page_does_not_show():
    """The old Attribute lesson: the fresh MLP's 0.55 beside a box whose strongest attacker
    read 0.74; a sentence with a number the figures do not hold is a mismatch."""
    spec, peek, dim = _stored("attribute_privacy")
    fig = teaching.figures(spec, peek, dim)
    les = teaching.lesson_from(spec, fig)
    doctored = [les.sentences[0].replace("0.74", "0.55", 1), *les.sentences[1:]]
    assert doctored != les.sentences
    checked, bad = teaching.check_numbers(doctored, fig.rows())
    assert checked and len(bad) == 1 and bad[0].startswith("0.55 in:")
    # a figure read at other seeds than the table's (0.58 at one seed against 0.64 at two)
    one_seed = teaching.figures(replace(spec, seeds=spec.seeds[:1]), peek, dim)
    _, bad = teaching.check_numbers(teaching.lesson_from(spec, one_seed).sentences, fig.rows())
    assert bad


def test_the_lesson_reads_the_strongest_attacker_the_attribute_box_used_to_contradict():
    spec, peek, dim = _stored("attribute_privacy")
    text = " ".join(teaching.lesson(spec, peek, dim).sentences)
    assert "lowers the strongest attacker's AUC (logreg) from 0.94" in text
    assert "to 0.74" in text


def test_real_tiny_sweep_lesson_numbers_are_its_figures(tmp_path):
    """The FIL page's sweep (closed form: seconds) really run and stored, then checked."""
    from cache.store import ResultStore

    spec = replace(teaching.teaching_sweep("fisher_information"), seeds=(0,), grid=(0.1, 10.0))
    rs = ResultStore(tmp_path / "store")
    for c in spec.job_configs():
        rs.get_or_run(c)
    fig = teaching.figures(spec, rs.peek)
    les = teaching.lesson_from(spec, fig)
    checked, bad = teaching.check_numbers(les.sentences, fig.rows())
    assert les.ready and checked >= 4 and not bad, bad


# --- Compare: the equal-privacy sentence reads the page's table ------------------------------


def _comparison(inf_leak, dp_leak, inf_util=((0.95, 0.95), (0.93, 0.93)),
                dp_util=((0.90, 0.90), (0.18, 0.18))):
    from core.runs.compare import Comparison, ComparisonSpec, Curve, DefenseSpec

    def curve(name, defense, knob, util, leak, sym):
        u, a = np.array(util, float), np.array(leak, float)
        return Curve(name=name, defense=defense, params={}, symbol=sym,
                     knob_field="x" if sym else None, budget_metric=None,
                     knob=np.array(knob, float), seeds=[0, 1], utility=u, leakage=a,
                     budget=np.full(u.shape, np.nan), leak_lo=a - 0.02, leak_hi=a + 0.02,
                     keys=[["", ""] for _ in knob])

    spec = ComparisonSpec(family="membership", data="digits", utility="utility_acc",
                          privacy="mia_auc_best", defenses=(DefenseSpec.of("inf2guard"),),
                          seeds=(0, 1))
    curves = [curve("no defense", "none", [np.nan], [[0.9, 0.9]], [[0.7, 0.7]], None),
              curve("Inf2Guard (λ)", "inf2guard", [0.0, 0.9], inf_util, inf_leak, "λ"),
              curve("DP-SGD (Opacus)", "dp_sgd", [32.0, 1.0], dp_util, dp_leak, "ε")]
    return Comparison(spec=spec, curves=curves, refused=[], chance_leakage=0.5,
                      chance_utility=None, points_run=8, points_cached=0, seconds=1.0)


def _table_numbers_check(cmp_, les):
    """The lesson's numbers against the figures table and the page's equal-privacy table."""
    from dashboard.components.compare_plot import table_frame

    rows = teaching.compare_figures(cmp_).rows()
    frame = table_frame(cmp_.table(), [c.name for c in cmp_.defended])
    table = [{str(k): str(v) for k, v in r.items()} for r in frame.to_dict("records")]
    checked, bad = teaching.check_numbers(les.sentences, rows)
    assert checked and not bad, bad
    # the equal-privacy sentence's level and utilities are cells of the page's own table
    eq = [s for s in les.sentences if "equal-privacy table" in s]
    assert eq and not teaching.check_numbers(
        [" ".join(teaching.numbers(eq[0])[:1]) + " " + " ".join(
            n for n in teaching.numbers(eq[0]) if "." in n and len(n.split(".")[1]) == 3)],
        table)[1]


def test_compare_lesson_says_when_inf2guard_reaches_the_level_only_undefended():
    """Inf2Guard's λ = 0 is the strictest level both reach; at every stricter level only
    DP-SGD gets there: the row does not test the claim, and the lesson says so."""
    cmp_ = _comparison(inf_leak=[[0.66, 0.66], [0.665, 0.665]],
                       dp_leak=[[0.60, 0.60], [0.50, 0.50]])
    les = teaching.compare_lesson(cmp_)
    eq = next(s for s in les.sentences if "equal-privacy table" in s)
    assert "the table reads Inf2Guard at its least private end (λ = 0)" in eq, eq
    assert "does not test Inf2Guard's claim" in eq and "only DP-SGD gets there" in eq
    assert "as Inf2Guard claims" not in " ".join(les.sentences)
    levels = [r["level"] for r in cmp_.table()]  # Inf2Guard reaches only the loosest one
    assert f"≤ {round(max(levels), 4):g}," in eq
    _table_numbers_check(cmp_, les)


def test_compare_lesson_says_only_when_no_other_setting_reaches_the_level():
    # λ = 0.9 leaks more than λ = 0: Inf2Guard reaches the level at λ = 0 alone
    cmp_ = _comparison(inf_leak=[[0.60, 0.60], [0.70, 0.70]],
                       dp_leak=[[0.60, 0.60], [0.50, 0.50]])
    les = teaching.compare_lesson(cmp_)
    eq = next(s for s in les.sentences if "equal-privacy table" in s)
    assert "Inf2Guard only at its least private end (λ = 0)" in eq, eq
    _table_numbers_check(cmp_, les)


def test_compare_lesson_reads_the_strictest_common_level_when_both_defend():
    cmp_ = _comparison(inf_leak=[[0.70, 0.70], [0.58, 0.58]],
                       dp_leak=[[0.60, 0.60], [0.50, 0.50]])
    les = teaching.compare_lesson(cmp_)
    eq = next(s for s in les.sentences + les.contradictions if "equal-privacy table" in s)
    rows = cmp_.table()
    both = [r for r in rows if r["Inf2Guard (λ)"] is not None and r["DP-SGD (Opacus)"] is not None]
    assert f"≤ {round(both[0]['level'], 4):g}," in eq  # the strictest both reach
    assert "only at its least private end" not in eq
    _table_numbers_check(cmp_, les)

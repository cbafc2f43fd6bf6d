"""core.paper_check.verdicts: holds / does not hold / not resolved from the 95 % interval of the compared
difference; t-intervals over seeds; independent ends in quadrature; the largest scale decides."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from core.paper_check.verdicts import (
    FAILS,
    HOLDS,
    UNRESOLVED,
    Interval,
    decide,
    deciding_cell,
    from_ends,
    paired,
    t_interval,
)


def _iv(lo: float, hi: float) -> Interval:
    return Interval((lo + hi) / 2, lo, hi, "test")


@pytest.mark.parametrize(("lo", "hi", "relation", "verdict"), [
    (-0.3, -0.1, "<", HOLDS),       # wholly below 0, "<" claimed
    (0.1, 0.3, "<", FAILS),         # wholly above 0, "<" claimed
    (-0.1, 0.2, "<", UNRESOLVED),   # straddles 0
    (0.1, 0.3, ">", HOLDS),
    (-0.3, -0.1, ">", FAILS),
    (-0.2, 0.1, ">", UNRESOLVED),
    (0.0, 0.3, ">", UNRESOLVED),    # touching 0 is not "wholly above"
])
def test_decide_reads_the_whole_interval(lo, hi, relation, verdict):
    assert decide(_iv(lo, hi), relation) == verdict


def test_a_point_without_an_interval_is_never_a_verdict():
    assert decide(None, "<") == UNRESOLVED and decide(None, ">") == UNRESOLVED
    with pytest.raises(ValueError, match="relation"):
        decide(_iv(0.1, 0.2), "=")


def test_t_interval_matches_scipy_and_needs_two_values():
    vals = [0.1, 0.4, 0.25]
    iv = t_interval(vals)
    lo, hi = stats.t.interval(0.95, 2, loc=sum(vals) / 3, scale=stats.sem(vals))
    assert math.isclose(iv.lo, lo) and math.isclose(iv.hi, hi) and iv.n == 3
    assert t_interval([0.3]) is None and t_interval([]) is None


def test_paired_differences_pair_by_seed_and_drop_missing_ends():
    # per-seed drops of 0.2 and 0.21: a resolved fall despite a spread between seeds
    iv = paired([0.80, 0.90, None], [0.60, 0.69, 0.1])
    assert iv.n == 2 and math.isclose(iv.estimate, -0.205)
    assert iv.hi < 0
    # two seeds that disagree in sign: the interval straddles 0
    assert decide(paired([0.7, 0.7], [0.6, 0.75]), "<") == UNRESOLVED
    assert paired([0.7], [0.6]) is None


def test_from_ends_adds_half_widths_in_quadrature():
    iv = from_ends(0.9, 0.88, 0.92, 0.6, 0.57, 0.63)
    assert math.isclose(iv.estimate, -0.3)
    assert math.isclose(iv.hi - iv.estimate, math.hypot(0.03, 0.02))
    assert math.isclose(iv.estimate - iv.lo, math.hypot(0.03, 0.02))
    # overlapping ends: not resolved
    assert decide(from_ends(0.70, 0.60, 0.80, 0.65, 0.55, 0.75), "<") == UNRESOLVED


def test_the_largest_measured_scale_decides_and_a_smaller_never_overrides_it():
    small = {"setting": "small", "measured": True, "verdict": HOLDS}
    large_unresolved = {"setting": "large", "measured": True, "verdict": UNRESOLVED}
    large_missing = {"setting": "larger", "measured": False, "verdict": None}
    assert deciding_cell([small, large_unresolved])["setting"] == "large"
    assert deciding_cell([small, large_unresolved, large_missing])["setting"] == "large"
    assert deciding_cell([small, large_missing])["setting"] == "small"
    assert deciding_cell([large_missing]) is None

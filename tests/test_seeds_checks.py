"""core.seeds (one seed stream) and core.checks (one range checker)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.checks import check_array, check_choice, check_int, check_range, range_text
from core.seeds import derive, stream, torch_stream


def test_same_path_same_stream_and_paths_independent():
    a = stream(7, "shadow", 3).random(5)
    assert np.array_equal(a, stream(7, "shadow", 3).random(5))
    assert not np.allclose(a, stream(7, "shadow", 4).random(5))
    assert not np.allclose(a, stream(8, "shadow", 3).random(5))
    # the hand-offset collision the module replaces: (seed 0, 1001) vs (seed 1, 1000)
    assert derive(0, "shadow", 1001) != derive(1, "shadow", 1000)
    # an int and its string are different path elements
    assert derive(0, 1) != derive(0, "1")


def test_derive_bits_and_torch_stream():
    import torch

    assert 0 <= derive(3, "x") < 2**32
    assert 0 <= derive(3, "x", bits=63) < 2**63
    with pytest.raises(ValueError, match="bits: got 64; allowed range 1 <= value <= 63"):
        derive(3, "x", bits=64)
    g1, g2 = torch_stream(5, "init"), torch_stream(5, "init")
    assert torch.equal(torch.rand(4, generator=g1), torch.rand(4, generator=g2))


def test_stream_draws_touch_no_global_state():
    np.random.seed(123)
    before = np.random.random()
    np.random.seed(123)
    stream(1, "a").random(10)
    assert np.random.random() == before


def test_range_messages():
    assert range_text(0, 1, lo_open=True) == "allowed range 0 < value <= 1"
    assert range_text(1, None, integer=True) == "allowed range 1 <= value (integer)"
    with pytest.raises(ValueError, match=r"^x: got 2; allowed range 0 < value <= 1$"):
        check_range("x", 2, 0, 1, lo_open=True)
    with pytest.raises(ValueError, match="x: got nan"):
        check_range("x", math.nan, 0, 1)
    with pytest.raises(ValueError, match="x: got 'a'"):
        check_range("x", "a", 0, 1)
    assert check_range("x", math.inf, 0) == math.inf
    with pytest.raises(ValueError):
        check_range("x", math.inf, 0, math.inf, hi_open=True)
    assert check_int("k", 3, 1, 5) == 3
    for bad in (True, 1.5, 0, 6):
        with pytest.raises(ValueError, match="k: got .*; allowed range 1 <= value <= 5 \\(integer\\)"):
            check_int("k", bad, 1, 5)
    with pytest.raises(ValueError, match="c: got 'z'; allowed: a, b"):
        check_choice("c", "z", ("a", "b"))
    with pytest.raises(ValueError, match="beta: got -1.0; allowed range 0 < value"):
        check_array("beta", [1.0, -1.0, 2.0], 0, lo_open=True)
    assert check_array("beta", [1.0, 2.0], 0).dtype == np.float64

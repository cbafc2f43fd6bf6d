"""core.foundation.seeds (one seed stream) and core.foundation.checks (one range checker)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.foundation.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_range,
    range_text,
)
from core.foundation.seeds import derive, stream, torch_stream


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


def test_check_positive_and_open_infinite_ends():
    assert check_positive("kappa", 2) == 2.0 and check_positive("tol", 0, zero=True) == 0.0
    for bad in (0, -1.0, math.inf, math.nan, "x"):
        with pytest.raises(ValueError, match=r"^kappa: got .*; allowed range 0 < value < inf$"):
            check_positive("kappa", bad)
    assert range_text(-math.inf, math.inf, lo_open=True, hi_open=True) == \
        "allowed range -inf < value < inf"
    assert range_text(0, math.inf) == "allowed range 0 <= value"  # a closed inf end: inf allowed
    with pytest.raises(ValueError, match=r"^n: got 5; allowed range 1 <= value <= 3 \(integer\)$"):
        check_int("n", np.int64(5), 1, 3)  # a numpy scalar reads as Python's


# one message from each corner of the engine: every one now comes from core.foundation.checks
_MESSAGES = [
    (lambda: __import__("core.foundation.metrics", fromlist=["x"]).tpr_at_fpr([0, 1], [0.1, 0.9], 1.5),
     r"^fpr_target: got 1\.5; allowed range 0 <= value <= 1$"),
    (lambda: __import__("core.bounds.dp_region", fromlist=["x"]).dp_region(1.0, 1.0, [0.1]),
     r"^delta: got 1\.0; allowed range 0 <= value < 1$"),
    (lambda: __import__("core.bounds.channel", fromlist=["x"]).quantization_floor(1),
     r"^levels: got 1; allowed range 2 <= value \(integer\)$"),
    (lambda: __import__("core.bounds.fil", fromlist=["x"]).compose_eta(1.0, 0),
     r"^k: got 0; allowed range 1 <= value \(integer\) \(the number of releases\)$"),
    (lambda: __import__("core.bounds.tappfl", fromlist=["x"]).fano_accuracy_bound(0.5, 1),
     r"^n_values: got 1; allowed range 2 <= value \(integer\)$"),
    (lambda: __import__("core.bounds.accountants", fromlist=["x"]).dpsgd_accounting(
        noise_multiplier=1.0, sample_rate=0.1, steps=0, delta=1e-5),
     r"^steps: got 0; allowed range 1 <= value$"),
    (lambda: __import__("core.data.partition", fromlist=["x"]).partition(
        np.zeros(10, int), num_clients=20, scheme="iid", seed=0),
     r"^num_clients: got 20; allowed range 1 <= value <= 10 \(integer\) \(the number of rows\)$"),
    (lambda: __import__("core.defenses.compression", fromlist=["x"]).PruneUpload(1.0),
     r"^rate: got 1\.0; allowed range 0 <= value <= 0\.99$"),
    (lambda: __import__("core.attacks.attribute", fromlist=["x"]).fresh_attacker_proba(
        np.zeros((4, 2)), np.array([0, 1, 0, 1]), np.zeros((2, 2)), model="logreg", seed=0,
        max_train=1),
     r"^max_train: got 1; allowed range 2 <= value \(integer\)$"),
    (lambda: __import__("core.data.projection", fromlist=["x"])._validate(
        np.zeros((5, 2)), "umap", 0, None, 30.0, 15, 1.5),
     r"^min_dist: got 1\.5; allowed range 0 <= value <= 1$"),
]


@pytest.mark.parametrize("call, pattern", _MESSAGES)
def test_representative_messages_come_from_the_one_checker(call, pattern):
    with pytest.raises(ValueError, match=pattern) as e:
        call()
    assert "\n" not in str(e.value)


def test_config_ranges_are_written_by_range_text():
    from core.config.schema import ConfigError, parse_config

    with pytest.raises(ConfigError, match=r"^fl\.lr: got 11\.0; allowed range 0 < value <= 10$"):
        parse_config({"kind": "attribute_privacy", "fl": {"lr": 11.0}})
    with pytest.raises(ConfigError, match=r"^attack\.targets: got 6; allowed range 1 <= value "
                                          r"<= 5 \(shadows \+ 1\)$"):
        parse_config({"kind": "membership", "attack": {"shadows": 4, "targets": 6}})


#: hand-written range messages left on this branch, each in a file another branch of issue #19
#: rewrites (branch ``hard``: the FIL model's l2 validator and the store's index); the count
#: may only shrink
LEFTOVERS = {"core/config/schema.py": 1, "cache/index.py": 1}


def _range_strings(path) -> int:
    """String constants (f-string parts included) that write 'allowed range', docstrings not."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Constant)
               and isinstance(n.value, str) and "allowed range" in n.value and id(n) not in docs)


def test_allowed_range_is_written_in_one_place():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found = {}
    for pkg in ("core", "cache", "dashboard", "cli"):
        for p in sorted((root / pkg).rglob("*.py")):
            rel = p.relative_to(root).as_posix()
            n = _range_strings(p)
            if n and rel != "core/foundation/checks.py":
                found[rel] = n
    extra = {f: n for f, n in found.items() if n > LEFTOVERS.get(f, 0)}
    assert not extra, f"write these with core.foundation.checks (range_error / check_range): {extra}"

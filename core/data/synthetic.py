"""Synthetic tabular data with a tunable dependence between the task label y and the private
attribute u (teaches the inherent utility-privacy tradeoff, TAPPFL Thm 1).

    u ~ Bernoulli(1/2);   y = u with probability (1 + rho) / 2, else 1 - u

so corr(y, u) = rho: rho = 0 makes y independent of u, rho = 1 makes y = u.
Features (signs s_y = 2y - 1, s_u = 2u - 1, noise e ~ N(0, 1)):

- ``task_0..2``  informative of y only:   a * s_y + e   (a = 1.0, 0.7, 0.4)
- ``attr_0..2``  informative of u only:   a * s_u + e
- ``both_0..1``  of both:                 0.6 * s_y +/- 0.6 * s_u + e
- ``noise_0``    N(0, 1);  ``noise_1``    40 + 10 e (an unscaled column, exercises standardising)
- ``group``      categorical a/b/c with probabilities (.5, .3, .2) if u = 0, (.2, .3, .5) if u = 1
"""

from __future__ import annotations

import numpy as np

from core.data.raw import RawData
from core.foundation.checks import check_range
from core.foundation.seeds import stream


def generate(n: int, dependence: float, seed: int):
    """The synthetic table (pandas DataFrame), y and u, all from ``seed``."""
    import pandas as pd

    check_range("dependence", dependence, 0, 1)
    rng = stream(seed, "synthetic")
    u = (rng.random(n) < 0.5).astype(np.int64)
    agree = rng.random(n) < (1.0 + dependence) / 2.0
    y = np.where(agree, u, 1 - u).astype(np.int64)
    sy, su = 2.0 * y - 1.0, 2.0 * u - 1.0
    e = lambda: rng.standard_normal(n)
    cols: dict[str, object] = {}
    for i, a in enumerate((1.0, 0.7, 0.4)):
        cols[f"task_{i}"] = a * sy + e()
    for i, a in enumerate((1.0, 0.7, 0.4)):
        cols[f"attr_{i}"] = a * su + e()
    cols["both_0"] = 0.6 * sy + 0.6 * su + e()
    cols["both_1"] = 0.6 * sy - 0.6 * su + e()
    cols["noise_0"] = e()
    cols["noise_1"] = 40.0 + 10.0 * e()
    p_c = np.where(u == 1, 0.5, 0.2)  # P(group = c)
    r = rng.random(n)
    group = np.where(r < 0.3, "b", np.where(r < 0.3 + p_c, "c", "a"))
    cols["group"] = pd.Categorical(group, categories=["a", "b", "c"])
    return pd.DataFrame(cols), y, u


def load_synthetic(spec, seed: int) -> RawData:
    """``spec.n_samples`` rows with dependence ``spec.dependence``; generated from ``seed``."""
    df, y, u = generate(spec.n_samples, spec.dependence, seed)
    return RawData(
        X=df, y=y, task_name="y", label_names=["y=0", "y=1"],
        attributes={"u": u}, attribute_values={"u": ["u=0", "u=1"]},
        description=f"synthetic: {spec.n_samples} rows, y-u dependence rho={spec.dependence:g}",
    )

"""Small pieces every result page shows: the origin caption, utility, the defense's own
numbers, and the table of all metrics with their intervals and descriptions."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard.base.format import (
    describe,
    display_name,
    fmt,
    interval,
    metric,
    n_scored,
)
from dashboard.components.caveats import metric_tile

#: defense metrics -> labels (the budget and mechanism numbers a defense reports)
DEFENSE_METRICS = {
    "tradeoff_lambda": "λ (TAPPFL privacy weight)",
    "dp_sigma": "Gaussian noise σ", "dp_laplace_b": "Laplace scale b",
    "dp_epsilon_round": "ε per round", "dp_epsilon_total": "ε total (all rounds)",
    "dp_delta_total": "δ total", "pruning_rate": "pruning rate",
}
UTILITY = {
    "utility_acc": ("task accuracy on r (logistic head)",
                    "Logistic task head trained on the frozen representations r of the train split."),
    "utility_acc_paper": ("task accuracy on r (paper's MLP eval head)",
                          "TAPPFL's protocol: a separate MLP head on frozen r (Adam 1e-3, 5 epochs)."),
    "utility_acc_raw": ("reference: logistic head on raw x",
                        "What the data allows without any encoder."),
    "utility_majority": ("majority class (chance utility)",
                         "Test share of the train-majority task class: a head that learned "
                         + "nothing reaches this."),
}


def result_caption(result: Any) -> None:
    """One line: cached or computed now, how long it took, the key prefix, the engine; which
    stages came from the stage cache when the run says so."""
    from core.foundation.fingerprint import same_engine

    secs = result.timings.get("total_s", result.metrics.get("seconds_total"))
    took = f"{secs:.1f} s" if secs is not None else "n/a"
    origin = "from the cache" if result.from_cache else "computed now"
    engine = result.engine_version + ("" if same_engine(result.engine_version) else " (older engine)")
    line = (f"Result {origin} · run time {took} · key `{(result.key or '')[:12]}` · "
            f"engine {engine} · seed {result.seed}")
    stages = result.info.get("stages") or {}
    if stages and not result.from_cache:
        hits = [s for s, v in stages.items() if v == "hit"]
        if hits:
            line += f" · reused from the stage cache: {', '.join(hits)}"
    st.caption(line)


def utility_panel(result: Any, *, metrics: tuple[str, ...] = tuple(UTILITY)) -> None:
    """Utility metrics side by side; each against the raw-x reference where there is one."""
    shown = [m for m in metrics if metric(result, m) is not None or m == "utility_acc"]
    cols = st.columns(max(len(shown), 1))
    raw = metric(result, "utility_acc_raw")
    for col, name in zip(cols, shown):
        title, help_ = UTILITY.get(name, (name, describe(name)))
        v = metric(result, name)
        delta = None
        if v is not None and raw is not None and name in ("utility_acc", "utility_acc_paper"):
            delta = f"{v - raw:+.3f} vs raw"
        metric_tile(col, result, title, fmt(v), name, delta=delta, help=help_)


def defense_panel(result: Any) -> None:
    """The defense's knob and mechanism numbers as the run reports them (and its accountant)."""
    bits = [(n, metric(result, n)) for n in DEFENSE_METRICS]
    bits = [(n, v) for n, v in bits if v is not None]
    if not bits:
        return
    acc = result.info.get("accountant")
    st.markdown("**Defense parameters**" + (f" (accountant: {acc})" if acc else ""))
    cols = st.columns(len(bits))
    for col, (n, v) in zip(cols, bits):
        col.metric(DEFENSE_METRICS[n], f"{v:.4g}", help=describe(n) or n)


def metrics_frame(metrics: dict[str, float | None], result: Any | None = None) -> pd.DataFrame:
    """Every metric by display name with its value, 95 % interval (when the Result has one),
    the caveat flag of the caveats qualifying it and its description."""
    from dashboard.components.caveats import flag_for

    rows = []
    for name, v in metrics.items():
        iv = interval(result, name) if result is not None else None
        n = n_scored(result, name) if result is not None else None
        rows.append({"metric": display_name(name), "value": v,
                     "95 % interval": "" if iv is None else f"[{iv[0]:.4g}, {iv[1]:.4g}]",
                     "n": n, "caveat": flag_for(result, name) if result is not None else "",
                     "description": describe(name) or ""})
    df = pd.DataFrame(rows, columns=["metric", "value", "95 % interval", "n", "caveat",
                                     "description"])
    df["n"] = df["n"].astype("Int64")
    return df


def metrics_shown(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`metrics_frame` as text for a static table (``st.table``, whose cells wrap):
    values to four significant figures, an unknown count blank."""
    out = df.copy()
    out["value"] = ["n/a" if v is None or pd.isna(v) else f"{float(v):.4g}" for v in df["value"]]
    out["n"] = ["" if pd.isna(n) else f"{int(n):,}" for n in df["n"]]
    return out


def metrics_table(result: Any, *, height: int | None = None) -> None:
    from dashboard.components.caveats import grey_flagged

    kw = {"height": height} if height else {}
    df = metrics_frame(dict(result.metrics), result)
    st.dataframe(grey_flagged(df, {"value": [c for c in df["caveat"] if c]}),
                 hide_index=True, width="stretch",
                 column_config={"value": st.column_config.NumberColumn(format="%.4g"),
                                "metric": st.column_config.TextColumn(pinned=True)}, **kw)


def config_and_metrics(result: Any, *, key: str) -> None:
    """The run's config and every metric it reported, in a box drawn only when opened
    (:func:`dashboard.components.deferred.deferred`)."""
    from dashboard.components.deferred import deferred

    if box := deferred("Config and all metrics", key=key):
        with box:
            j1, j2 = st.columns([1, 1.6])
            j1.json(result.config, expanded=1)
            with j2:
                metrics_table(result)

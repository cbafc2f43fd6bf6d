"""Plotly figures for the dashboard. Pure presentation: inputs are arrays from a Result or the
values of a closed-form bound; nothing here trains or estimates anything.

Figures carry no template of their own: ``st.plotly_chart`` themes them like the rest of the
app (an explicit template is copied into every figure: ~15 ms of Python each and twice the
JSON sent to the browser). Pages get them through
:func:`dashboard.components._figures.figure`, which builds each one once per distinct input.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

PALETTE = qualitative.Plotly + qualitative.D3
_MARGIN = {"l": 10, "r": 10, "t": 40, "b": 10}
#: scatter plots up to this many points draw as SVG; more as WebGL. A WebGL context costs a
#: browser ~0.1-0.3 s to create (more without a GPU), SVG markers ~0.05 ms each.
SVG_MAX_POINTS = 2500


def _level(v: float) -> str:
    """A chance level as read: 0.5, 0.1, 0.001 (never "0.00" for 0.001)."""
    return f"{v:.3g}"


def _layout(fig: go.Figure, title: str | None, height: int) -> go.Figure:
    fig.update_layout(title=title, height=height, margin=_MARGIN,
                      legend={"itemsizing": "constant"})
    # log axes read 10⁻⁴, never the SI prefix "100μ"
    fig.update_xaxes(exponentformat="power")
    fig.update_yaxes(exponentformat="power")
    return fig


def scatter_figure(
    embedding: np.ndarray,
    codes: np.ndarray,
    names: Sequence[str],
    *,
    title: str | None = None,
    legend_title: str = "",
    height: int = 480,
    marker_size: int = 5,
) -> go.Figure:
    """2-D scatter of an (m, 2) embedding, one trace per category of ``codes`` (SVG up to
    :data:`SVG_MAX_POINTS` points, WebGL beyond)."""
    emb = np.asarray(embedding, dtype=float)
    codes = np.asarray(codes).astype(int)
    trace = go.Scatter if len(emb) <= SVG_MAX_POINTS else go.Scattergl
    fig = go.Figure()
    for c in np.unique(codes):
        sel = codes == c
        name = names[c] if 0 <= c < len(names) else str(c)
        fig.add_trace(trace(
            x=emb[sel, 0], y=emb[sel, 1], mode="markers", name=f"{name} ({int(sel.sum())})",
            marker={"size": marker_size, "opacity": 0.75, "color": PALETTE[int(c) % len(PALETTE)]},
            hovertemplate=f"{legend_title or 'value'}: {name}<extra></extra>",
        ))
    fig.update_layout(legend_title_text=legend_title)
    fig.update_xaxes(showticklabels=False, title=None)
    fig.update_yaxes(showticklabels=False, title=None, scaleanchor=None)
    return _layout(fig, title, height)


def counts_bar_figure(
    codes: np.ndarray, names: Sequence[str], *, title: str | None = None, height: int = 260
) -> go.Figure:
    """Bar chart of how often each value occurs (label or attribute balance)."""
    codes = np.asarray(codes).astype(int)
    counts = np.bincount(codes, minlength=len(names))[: len(names)]
    share = counts / max(int(counts.sum()), 1)
    fig = go.Figure(go.Bar(
        x=[str(n) for n in names], y=counts,
        text=[f"{s:.0%}" for s in share] if len(names) <= 6 else None,
        textposition="auto", marker_color=PALETTE[0],
        customdata=share, hovertemplate="%{x}: %{y} rows (%{customdata:.1%})<extra></extra>",
    ))
    fig.update_xaxes(type="category")
    fig.update_yaxes(title="rows")
    return _layout(fig, title, height)


def balance_figure(
    charts: Sequence[tuple[str, np.ndarray, Sequence[str]]], *, height: int = 280
) -> go.Figure:
    """Side-by-side bar charts of how often each value occurs, one per ``(title, codes,
    names)`` (the task label, each private attribute), in one figure."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=len(charts), subplot_titles=[t for t, _, _ in charts],
                        horizontal_spacing=0.05)
    for j, (_, codes, names) in enumerate(charts, start=1):
        codes = np.asarray(codes).astype(int)
        counts = np.bincount(codes, minlength=len(names))[: len(names)]
        share = counts / max(int(counts.sum()), 1)
        fig.add_trace(go.Bar(
            x=[str(n) for n in names], y=counts, showlegend=False,
            text=[f"{s:.0%}" for s in share] if len(names) <= 6 else None,
            textposition="auto", marker_color=PALETTE[0], customdata=share,
            hovertemplate="%{x}: %{y} rows (%{customdata:.1%})<extra></extra>",
        ), row=1, col=j)
        fig.update_xaxes(type="category", row=1, col=j)
    fig.update_yaxes(title="rows", row=1, col=1)
    fig.update_annotations(font={"size": 13})
    return _layout(fig, None, height)


def image_grid_figure(
    images: np.ndarray, titles: Sequence[str], *, cols: int = 8, tile_px: int = 90
) -> go.Figure:
    """Grid of sample images, (n, C, H, W) in [0, 1]; one title per image.

    One montage trace (a grey heatmap, or an RGB image) with the titles as annotations: one
    subplot for the browser to lay out, not one per image."""
    imgs = np.asarray(images, dtype=float)
    n, c, h, w = imgs.shape
    cols = max(1, min(cols, n))
    rows = int(np.ceil(n / cols))
    gap_x, gap_top = max(1, w // 8), max(2, round(h * 0.3))  # room for each title
    cell_w, cell_h = w + gap_x, h + gap_top
    height, width = rows * cell_h, cols * cell_w - gap_x
    grey = c == 1
    canvas = np.full((height, width) if grey else (height, width, 3), np.nan if grey else 1.0)
    for i in range(n):
        r, q = divmod(i, cols)
        tile = imgs[i, 0] if grey else np.transpose(imgs[i, :3], (1, 2, 0))
        canvas[r * cell_h + gap_top: (r + 1) * cell_h, q * cell_w: q * cell_w + w] = np.clip(tile, 0, 1)
    if grey:
        trace = go.Heatmap(z=canvas, zmin=0.0, zmax=1.0, colorscale="gray", showscale=False,
                           hoverinfo="skip")
    else:
        trace = go.Image(z=np.round(canvas * 255).astype(np.uint8), hoverinfo="skip")
    fig = go.Figure(trace)
    fig.update_layout(annotations=[
        {"x": (i % cols) * cell_w + (w - 1) / 2, "y": (i // cols) * cell_h + gap_top - 0.5,
         "text": str(titles[i]) if i < len(titles) else "", "showarrow": False,
         "yanchor": "bottom", "font": {"size": 11}}
        for i in range(n)])
    fig.update_xaxes(visible=False, range=[-0.5, width - 0.5], constrain="domain")
    fig.update_yaxes(visible=False, range=[height - 0.5, -0.5], scaleanchor="x",
                     constrain="domain")
    fig.update_layout(height=rows * tile_px + 40, margin={"l": 0, "r": 0, "t": 20, "b": 0})
    return fig


def lines_figure(
    x: Sequence[float],
    series: Mapping[str, Sequence[float]],
    *,
    title: str | None = None,
    x_title: str = "",
    y_title: str = "",
    height: int = 300,
) -> go.Figure:
    """Line plot of several series over a shared x (e.g. per-round curves)."""
    fig = go.Figure()
    for i, (name, ys) in enumerate(series.items()):
        fig.add_trace(go.Scatter(x=list(x), y=list(ys), mode="lines+markers", name=name,
                                 line={"color": PALETTE[i % len(PALETTE)]}))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title)
    return _layout(fig, title, height)


def attack_bars_figure(
    rows: Sequence[Mapping[str, float | str | None]],
    *,
    measures: Sequence[str] = ("acc", "bacc", "auc"),
    chance: float | None = None,
    title: str | None = None,
    height: int = 360,
) -> go.Figure:
    """Grouped bars: one group per attacker (``row["short"]`` or ``row["attacker"]``), one bar
    per measure; ``row[f"{m}_lo"]``/``row[f"{m}_hi"]``, when present, draw the 95 % interval as
    an error bar; the chance level as a dotted line."""
    labels = {"acc": "accuracy", "bacc": "balanced accuracy", "auc": "AUC"}
    fig = go.Figure()
    who = [str(r.get("short") or r["attacker"]) for r in rows]
    for i, m in enumerate(measures):
        ys = [r.get(m) for r in rows]
        if all(v is None for v in ys):
            continue
        y = [np.nan if v is None else float(v) for v in ys]
        lo = [r.get(f"{m}_lo") for r in rows]
        hi = [r.get(f"{m}_hi") for r in rows]
        error_y = None
        if any(v is not None for v in lo):
            error_y = {"type": "data", "symmetric": False, "thickness": 1.2, "width": 3,
                       "array": [0.0 if h is None or v is None else max(h - v, 0.0)
                                 for v, h in zip(ys, hi)],
                       "arrayminus": [0.0 if lw is None or v is None else max(v - lw, 0.0)
                                      for v, lw in zip(ys, lo)]}
        fig.add_trace(go.Bar(
            x=who, y=y, name=labels.get(m, m), error_y=error_y,
            marker_color=PALETTE[i % len(PALETTE)],
            hovertemplate="%{x}: %{y:.3f}<extra>" + labels.get(m, m) + "</extra>",
        ))
    if chance is not None:  # the line, named in the legend (a label would sit on the bars)
        fig.add_hline(y=chance, line_dash="dot", line_color="gray")
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"chance {_level(chance)}",
                                 line={"color": "gray", "dash": "dot"}))
    fig.update_layout(barmode="group")
    fig.update_yaxes(range=[0, 1.05], title="attack score")
    fig.update_xaxes(tickangle=0)
    _layout(fig, title, height)
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "x": 0})
    return fig


def _curve(fn: Callable, hs: np.ndarray) -> np.ndarray:
    """Evaluate a vectorised bound (core.bounds.tappfl functions take arrays) on ``hs``."""
    return np.broadcast_to(np.asarray(fn(hs), dtype=float), hs.shape)


def bounds_curve_figure(
    *,
    h_estimate: float | None = None,
    measured_acc: float | None = None,
    chance: float | None = 0.5,
    paper_bound: Callable | None = None,
    exact_bound: Callable | None = None,
    what_if: float | None = None,
    n: int = 201,
    height: int = 400,
    measured_flag: str | None = None,
) -> go.Figure:
    """TAPPFL Theorem 2 bound on any attacker's accuracy vs H(u|r) in bits, both forms
    (``measured_flag``: the caveat label of a measured point above the bound, drawn beside it).

    Paper (Calabro) form 1 − H/(2·log2(6/H)) and exact form 1 − H₂⁻¹(H), evaluated by the pure
    functions of :mod:`core.bounds.tappfl`; the current H estimate is marked on both curves and
    the measured attack accuracy drawn at that H; ``what_if`` marks a user-chosen H as well.
    """
    if paper_bound is None or exact_bound is None:
        from core.bounds.tappfl import thm2_exact_bound, thm2_paper_bound

        paper_bound = paper_bound or thm2_paper_bound
        exact_bound = exact_bound or thm2_exact_bound
    hs = np.linspace(1e-4, 1.0, n)
    paper = _curve(paper_bound, hs)
    exact = _curve(exact_bound, hs)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=hs, y=paper, mode="lines", name="Thm 2, paper form",
                             line={"color": PALETTE[0]}))
    fig.add_trace(go.Scatter(x=hs, y=exact, mode="lines", name="Thm 2, exact form 1−H₂⁻¹(H)",
                             line={"color": PALETTE[1]}))
    if chance is not None:
        fig.add_hline(y=chance, line_dash="dot", line_color="gray",
                      annotation_text="chance", annotation_position="bottom left")
    if h_estimate is not None and np.isfinite(h_estimate):
        h = float(np.clip(h_estimate, 1e-4, 1.0))
        fig.add_vline(x=h, line_dash="dash", line_color="black")
        pb, eb = float(_curve(paper_bound, np.array([h]))[0]), float(_curve(exact_bound, np.array([h]))[0])
        fig.add_trace(go.Scatter(x=[h, h], y=[pb, eb], mode="markers", name=f"bounds at Ĥ = {h:.3f}",
                                 marker={"size": 10, "color": "black", "symbol": "circle-open"}))
        if measured_acc is not None and np.isfinite(measured_acc):
            fig.add_trace(go.Scatter(x=[h], y=[measured_acc], mode="markers",
                                     name=f"measured attack acc {measured_acc:.3f}",
                                     marker={"size": 12, "color": PALETTE[3], "symbol": "x"}))
            if measured_flag:
                fig.add_annotation(x=h, y=measured_acc, text=f"⚠ {measured_flag}",
                                   showarrow=True, arrowhead=2, ax=40, ay=-30,
                                   font={"size": 11, "color": "crimson"})
    if what_if is not None and (h_estimate is None or abs(what_if - h_estimate) > 1e-9):
        w = float(np.clip(what_if, 1e-4, 1.0))
        wb = [float(_curve(f, np.array([w]))[0]) for f in (paper_bound, exact_bound)]
        fig.add_trace(go.Scatter(x=[w, w], y=wb, mode="markers", name=f"bounds at what-if H = {w:.2f}",
                                 marker={"size": 10, "color": PALETTE[4], "symbol": "diamond"}))
    fig.update_xaxes(title="H(u | r) in bits", range=[0, 1.0])
    fig.update_yaxes(title="max attack accuracy", range=[0.4, 1.02])
    _layout(fig, None, height)
    fig.update_layout(legend={"orientation": "h", "y": -0.2, "x": 0})
    return fig


def _symbol_of(symbol: str | Mapping[str, str], name: str) -> str:
    """The knob's symbol, or the series' own where each series has one (κ, ε)."""
    return symbol if isinstance(symbol, str) else symbol.get(name, "")


def _add_tradeoff_series(fig: go.Figure, series: dict[str, list],
                         symbol: str | Mapping[str, str]) -> None:
    """One dotted line per series with the attack's 95 % interval as a vertical error bar."""
    for i, (name, sel) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        has_iv = any(p.attack_lo is not None for p in sel)
        error_y = None
        if has_iv:
            error_y = {"type": "data", "symmetric": False, "thickness": 1, "width": 3,
                       "array": [0.0 if p.attack_hi is None else max(p.attack_hi - p.attack, 0.0)
                                 for p in sel],
                       "arrayminus": [0.0 if p.attack_lo is None else max(p.attack - p.attack_lo, 0.0)
                                      for p in sel]}
        # knob labels on the first series only (the others share the knob values and would overlap)
        fig.add_trace(go.Scatter(
            x=[p.utility for p in sel], y=[p.attack for p in sel],
            mode="lines+markers+text" if i == 0 else "lines+markers",
            text=[f"{_symbol_of(symbol, name)}={p.knob:g}" for p in sel], textposition="top center", name=name,
            textfont={"size": 10}, marker={"size": 9, "color": color}, error_y=error_y,
            line={"dash": "dot", "color": color},
            hovertemplate="%{text}<br>utility %{x:.3f}<br>" + name + " %{y:.3f}<extra></extra>",
        ))


def _add_current_points(fig: go.Figure, series: dict[str, list], current: float | None,
                        current_series: str | None, symbol: str | Mapping[str, str]) -> None:
    """The point at the ``current`` knob starred (in ``current_series`` only, when given)."""
    for i, (name, sel) in enumerate(series.items()):
        if current_series is not None and name != current_series:
            continue  # the current setting is a point of one series (e.g. one noise channel)
        cur = [p for p in sel if current is not None and abs(p.knob - current) < 1e-9]
        if cur:
            fig.add_trace(go.Scatter(x=[cur[0].utility], y=[cur[0].attack], mode="markers",
                                     name=f"current {_symbol_of(symbol, name)}={current:g}",
                                     showlegend=i == 0 or current_series is not None,
                                     legendgroup="current",
                                     marker={"size": 18, "color": PALETTE[5], "symbol": "star"}))


def _ring_flagged(fig: go.Figure, points: Sequence[object],
                  flagged: Sequence[tuple[float, str]]) -> None:
    """The points at the knobs of ``flagged`` ringed grey, their caveat in the hover."""
    why = dict(flagged)
    ringed = [p for p in points if any(abs(p.knob - k) < 1e-9 for k in why)]
    if ringed:
        labels = [next(v for k, v in why.items() if abs(p.knob - k) < 1e-9) for p in ringed]
        fig.add_trace(go.Scatter(
            x=[p.utility for p in ringed], y=[p.attack for p in ringed], mode="markers",
            name="⚠ " + ", ".join(dict.fromkeys(labels)), text=[f"⚠ {lab}" for lab in labels],
            marker={"size": 20, "color": "rgba(0,0,0,0)", "symbol": "circle-open",
                    "line": {"color": "gray", "width": 2}},
            hovertemplate="%{text}<extra></extra>"))


def tradeoff_figure(
    points: Sequence[object],
    *,
    current: float | None = None,
    undefended: tuple[float, float] | None = None,
    chance: float | None = None,
    symbol: str | Mapping[str, str] = "λ",
    x_title: str = "utility (test accuracy)",
    y_title: str = "attack AUC",
    height: int = 420,
    current_series: str | None = None,
    flagged: Sequence[tuple[float, str]] = (),
) -> go.Figure:
    """Utility on x, attack success on y: one line per series of
    :class:`core.report.tradeoff.TradeoffPoint` (``knob, utility, attack, attack_lo, attack_hi,
    series``) with the 95 % interval as a vertical error bar; the point at ``current`` starred,
    the undefended run (``(utility, attack)``) as a black cross, the chance level dotted; the
    points at the knobs of ``flagged`` (``(knob, caveat label)``, :mod:`core.foundation.caveats`) ringed
    grey, the caveat in their hover text."""
    series: dict[str, list] = {}
    for p in sorted(points, key=lambda p: p.knob):
        series.setdefault(p.series, []).append(p)
    fig = go.Figure()
    _add_tradeoff_series(fig, series, symbol)
    _add_current_points(fig, series, current, current_series, symbol)
    _ring_flagged(fig, points, flagged)
    if undefended is not None:
        fig.add_trace(go.Scatter(
            x=[undefended[0]], y=[undefended[1]], mode="markers+text", name="undefended (no defense)",
            text=["undefended"], textposition="bottom center", textfont={"size": 10},
            marker={"size": 13, "color": "black", "symbol": "x"},
            hovertemplate="undefended<br>utility %{x:.3f}<br>attack %{y:.3f}<extra></extra>"))
    if chance is not None:
        fig.add_hline(y=chance, line_dash="dot", line_color="gray",
                      annotation_text=f"chance {_level(chance)}", annotation_position="bottom right")
    # utility is a fraction: pad the drawn points (plotly's autorange around a single point
    # spreads the axis far beyond [0, 1])
    xs = [p.utility for p in points] + ([undefended[0]] if undefended is not None else [])
    if xs:
        lo, hi = min(xs), max(xs)
        pad = max(0.02, 0.1 * (hi - lo))
        fig.update_xaxes(range=[max(0.0, lo - pad), min(1.0, hi + pad)])
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title)
    _layout(fig, None, height)
    fig.update_layout(legend={"orientation": "h", "y": -0.2, "x": 0})
    return fig


def roc_figure(
    curves: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    title: str | None = None,
    height: int = 360,
    grey_below: float | None = None,
    grey_label: str = "few negatives",
) -> go.Figure:
    """ROC curves (name -> (fpr, tpr)) with the chance diagonal; the part left of
    ``grey_below`` greyed (read off too few negatives, :mod:`core.foundation.caveats`)."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance",
                             line={"color": "gray", "dash": "dot"}))
    for i, (name, (fpr, tpr)) in enumerate(curves.items()):
        fig.add_trace(go.Scatter(x=list(map(float, fpr)), y=list(map(float, tpr)), mode="lines",
                                 name=name, line={"color": PALETTE[i % len(PALETTE)]}))
    fig.update_xaxes(title="false positive rate", range=[0, 1])
    fig.update_yaxes(title="true positive rate", range=[0, 1])
    grey_low_fpr(fig, grey_below, log=False, label=grey_label)
    _layout(fig, title, height)
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "x": 0})
    return fig


def spectrum_figure(eigenvalues: Sequence[float], noise_eig: Sequence[float],
                    capacity: Sequence[float], *, height: int = 360) -> go.Figure:
    """The data spectrum λ_i against the noise variance per eigen-direction (log y), with
    each direction's capacity ½ln(1 + λ_i/σ_i) as bars on a second axis (spec 001 §6.2)."""
    lam = np.asarray(eigenvalues, dtype=float)
    noise = np.asarray(noise_eig, dtype=float)
    cap = np.asarray(capacity, dtype=float)
    idx = np.arange(1, len(lam) + 1)
    pos = lam > 0
    fig = go.Figure()
    fig.add_trace(go.Bar(x=idx[: len(cap)], y=cap, name="capacity per direction (nats)",
                         marker={"color": PALETTE[2]}, opacity=0.45, yaxis="y2"))
    fig.add_trace(go.Scatter(x=idx[pos], y=lam[pos], mode="lines", name="data λ_i",
                             line={"color": PALETTE[0]}))
    npos = noise > 0
    fig.add_trace(go.Scatter(x=idx[: len(noise)][npos], y=noise[npos], mode="lines",
                             name="noise σ_i", line={"color": PALETTE[1], "dash": "dash"}))
    fig.update_layout(yaxis={"type": "log", "title": "variance"},
                      yaxis2={"overlaying": "y", "side": "right", "title": "nats",
                              "showgrid": False},
                      xaxis={"type": "log", "title": "eigen-direction (by variance)"})
    _layout(fig, None, height)
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "x": 0})
    return fig


def kappa_bounds_figure(kappas: Sequence[float], curves: Sequence[tuple[str, Sequence[float]]],
                        measured: Sequence[tuple[float, float, str]], *,
                        current: float | None = None, height: int = 360) -> go.Figure:
    """Per-pixel MSE floors against κ (log-log) with measured reconstructions as points and
    the current κ as a vertical line."""
    fig = go.Figure()
    for i, (name, ys) in enumerate(curves):
        fig.add_trace(go.Scatter(x=list(kappas), y=list(ys), mode="lines", name=name,
                                 line={"color": PALETTE[(i + 3) % len(PALETTE)]}))
    if measured:
        # a run whose label carries "⚠ <why>" (core.foundation.caveats: targets below Theorem 1's floor)
        # is drawn red, its explanation in the hover text
        below = ["⚠" in m[2] for m in measured]
        fig.add_trace(go.Scatter(x=[m[0] for m in measured], y=[m[1] for m in measured],
                                 mode="markers", name="measured MSE (strongest inverter)",
                                 text=[m[2] for m in measured],
                                 marker={"size": 10, "symbol": "diamond",
                                         "color": ["crimson" if b else "black" for b in below]}))
        if any(below):
            fig.add_annotation(x=0, y=1.0, xref="paper", yref="paper", xanchor="left",
                               yanchor="bottom", showarrow=False,
                               text="⚠ red: targets below Theorem 1's floor (hover: why)",
                               font={"size": 11, "color": "crimson"})
    if current is not None:
        fig.add_vline(x=current, line_dash="dot", line_color="gray",
                      annotation_text=f"κ = {current:g}", annotation_position="top left")
    fig.update_xaxes(type="log", title="κ (nats per round)")
    fig.update_yaxes(type="log", title="per-pixel MSE")
    _layout(fig, None, height)
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "x": 0})
    return fig


def grey_low_fpr(fig: go.Figure, fpr_max: float | None, *, log: bool, label: str) -> None:
    """Grey the part of a ROC left of ``fpr_max`` (read off too few negatives) and say why."""
    if fpr_max is None:
        return
    x0 = 1e-4 if log else 0.0
    fig.add_vrect(x0=x0, x1=float(fpr_max), fillcolor="rgba(128,128,128,0.25)", line_width=0,
                  layer="above")
    fig.add_annotation(x=math.log10(x0) if log else x0, y=1.0, xref="x", yref="paper",
                       xanchor="left", yanchor="bottom", showarrow=False,
                       text=f"⚠ {label}: FPR < {fpr_max:.2g}", font={"size": 11, "color": "#666"})


def membership_roc_figure(curves: Sequence[tuple[str, Sequence[float], Sequence[float]]], *,
                          log: bool, dp_region: tuple[Sequence[float], Sequence[float]] | None = None,
                          height: int = 380, grey_below: float | None = None,
                          grey_label: str = "few non-members") -> go.Figure:
    """Membership ROC curves, linear or log-log (where the low-FPR regime LiRA argues for is
    visible), with the chance diagonal and, for a DP model, the region TPR ≤ e^ε·FPR + δ that
    the accountant's ε allows (a curve above it would contradict the guarantee)."""
    fig = go.Figure()
    lo = 1e-4 if log else 0.0
    grid = np.logspace(-4, 0, 50) if log else np.linspace(0, 1, 50)
    fig.add_trace(go.Scatter(x=grid, y=grid, mode="lines", name="chance",
                             line={"color": "gray", "dash": "dot"}))
    if dp_region is not None:
        fig.add_trace(go.Scatter(x=list(dp_region[0]), y=list(dp_region[1]), mode="lines",
                                 name="DP limit (accountant's ε)", fill="tozeroy",
                                 line={"color": "rgba(120,120,120,0.6)"},
                                 fillcolor="rgba(160,160,160,0.15)"))
    for i, (name, fpr, tpr) in enumerate(curves):
        f, t = np.asarray(fpr, float), np.asarray(tpr, float)
        keep = (f > 0) & (t > 0) if log else np.ones_like(f, bool)
        fig.add_trace(go.Scatter(x=f[keep], y=t[keep], mode="lines", name=name,
                                 line={"color": PALETTE[i % len(PALETTE)]}))
    kind = "log" if log else "linear"
    fig.update_xaxes(title="false positive rate", type=kind,
                     range=[-4, 0] if log else [lo, 1])
    fig.update_yaxes(title="true positive rate", type=kind, range=[-4, 0] if log else [lo, 1])
    grey_low_fpr(fig, grey_below, log=log, label=grey_label)
    _layout(fig, None, height)
    fig.update_layout(legend={"orientation": "h", "y": -0.3, "x": 0})
    return fig

"""Plotly figures of the Fisher information page (spec 002 §A11 Figs. 2-7 and the Cramér–Rao
panel). Pure presentation: inputs are arrays from a ``fisher_information`` Result, rescaled to
the page's σ (η ∝ 1/σ); nothing here fits or estimates anything. Pages get them through
:func:`dashboard.components.fil_figures.fil_figure` (built once per distinct input).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.foundation.parts import attack_titles
from dashboard.base.plots import PALETTE

_MARGIN = {"l": 10, "r": 10, "t": 50, "b": 10}


def _layout(fig: go.Figure, title: str | None, height: int) -> go.Figure:
    fig.update_layout(title=title, height=height, margin=_MARGIN,
                      legend={"itemsizing": "constant"})
    # log axes read 10⁻⁴, never the SI prefix "100μ"
    fig.update_xaxes(exponentformat="power")
    fig.update_yaxes(exponentformat="power")
    return fig


def eta_histogram_figure(eta: np.ndarray, classes: np.ndarray, class_names: Sequence[str], *,
                         sigma: float, what: str = "per-example η", bins: int = 60,
                         height: int = 360) -> go.Figure:
    """Fig. 2: histogram of η (at σ) split by class, log-x, dashed class means."""
    e = np.asarray(eta, dtype=float)
    c = np.asarray(classes).astype(int)
    pos = e[e > 0]
    lo, hi = (np.log10(pos.min()), np.log10(pos.max())) if pos.size else (-1.0, 1.0)
    if hi - lo < 1e-6:
        lo, hi = lo - 0.05, hi + 0.05
    edges = np.logspace(lo, hi, bins + 1)
    fig = go.Figure()
    for k in np.unique(c):
        ek = e[c == k]
        counts, _ = np.histogram(ek, edges)
        name = class_names[k] if k < len(class_names) else str(k)
        col = PALETTE[int(k) % len(PALETTE)]
        fig.add_trace(go.Bar(x=np.sqrt(edges[:-1] * edges[1:]), y=counts,
                             width=np.diff(edges), name=f"class {name}", opacity=0.6,
                             marker_color=col))
        fig.add_vline(x=float(ek.mean()), line_dash="dash", line_color=col)
    fig.update_layout(barmode="overlay", xaxis_type="log", xaxis_title=f"{what} at σ = {sigma:.3g}",
                      yaxis_title="examples")
    return _layout(fig, f"{what} by class (dashed: class means)", height)


def image_strip_figure(images: np.ndarray, etas: Sequence[float], shape: Sequence[int], *,
                       title: str, height: int = 190) -> go.Figure:
    """Fig. 3: a row of images (original pixels) with their η above each."""
    imgs = np.asarray(images, dtype=float).reshape((-1, int(shape[-2]), int(shape[-1])))
    n = len(imgs)
    fig = make_subplots(rows=1, cols=n, horizontal_spacing=0.01,
                        subplot_titles=[f"η={v:.3g}" for v in etas])
    for j in range(n):
        fig.add_trace(go.Heatmap(z=imgs[j][::-1], colorscale="gray_r", showscale=False,
                                 hoverinfo="skip"), 1, j + 1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x", constrain="domain")
    fig.update_annotations(font_size=11)
    return _layout(fig, title, height)


def eta_scatter_figure(loss: np.ndarray, grad_norm: np.ndarray, eta: np.ndarray, *,
                       rho_loss: float | None, rho_grad: float | None, sigma: float,
                       max_points: int = 2000, height: int = 360) -> go.Figure:
    """Fig. 4: η against the per-example loss and against ‖∇_w ℓ‖ (log-log), Spearman ρ in
    the titles; at most ``max_points`` points (the paper: 2,000 random examples)."""
    e = np.asarray(eta, dtype=float)
    idx = np.arange(len(e))
    if len(e) > max_points:
        idx = np.sort(np.random.default_rng(0).choice(len(e), max_points, replace=False))
    t1 = "η vs loss" + ("" if rho_loss is None else f" (Spearman ρ = {rho_loss:.2f})")
    t2 = "η vs gradient norm" + ("" if rho_grad is None else f" (Spearman ρ = {rho_grad:.2f})")
    fig = make_subplots(rows=1, cols=2, subplot_titles=[t1, t2], horizontal_spacing=0.08)
    for j, x in enumerate((loss, grad_norm)):
        fig.add_trace(go.Scatter(x=np.maximum(np.asarray(x, dtype=float)[idx], 1e-12), y=e[idx],
                                 mode="markers", marker={"size": 4, "opacity": 0.5},
                                 showlegend=False), 1, j + 1)
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log", title_text=f"η at σ = {sigma:.3g}", col=1)
    fig.update_xaxes(title_text="per-example loss ℓ", col=1)
    fig.update_xaxes(title_text="‖∇_w ℓ‖₂", col=2)
    return _layout(fig, None, height)


def irfil_figure(eta_std: np.ndarray, eta_mean: np.ndarray, *, sigma: float,
                 height: int = 340) -> go.Figure:
    """Fig. 5 / Fig. 7a: std(η) (log-y) and mean η per IRFIL iteration."""
    s = np.asarray(eta_std, dtype=float) / sigma
    mu = np.asarray(eta_mean, dtype=float) / sigma
    it = np.arange(len(s))
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=it, y=np.maximum(s, 1e-300), mode="lines+markers",
                             name="std(η)"), secondary_y=False)
    fig.add_trace(go.Scatter(x=it, y=mu, mode="lines+markers", name="mean η",
                             line={"dash": "dot"}), secondary_y=True)
    fig.update_yaxes(type="log", title_text="std of per-example η", secondary_y=False,
                     dtick=1, exponentformat="power")
    fig.update_yaxes(title_text="mean η", secondary_y=True, rangemode="tozero",
                     range=[0, 1.15 * float(np.nanmax(mu))], showgrid=False,
                     tickmode="auto", nticks=5)
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "x": 0})
    fig.update_xaxes(title_text="IRFIL iteration", dtick=1 if len(it) <= 20 else None)
    return _layout(fig, f"IRFIL: η becomes equal across examples (σ = {sigma:.3g})", height)


def sweep_figure(eta_bar: np.ndarray, utility: np.ndarray, attacks: dict[str, np.ndarray], *,
                 attack_std: dict[str, np.ndarray], prior: float | None, current: float | None,
                 utility_label: str = "test accuracy", height: int = 380) -> go.Figure:
    """Fig. 6: utility and attack accuracy against the mean η̄ (log-x) over the σ grid, the
    prior as a dashed line, the page's current η̄ as a vertical line."""
    x = np.asarray(eta_bar, dtype=float)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08,
                        subplot_titles=["utility vs η̄", "attack accuracy vs η̄"])
    fig.add_trace(go.Scatter(x=x, y=utility, mode="lines+markers", name=utility_label,
                             marker_color=PALETTE[2]), 1, 1)
    for j, (name, acc) in enumerate(attacks.items()):
        sd = attack_std.get(name)
        fig.add_trace(go.Scatter(x=x, y=acc, mode="lines+markers",
                                 name=attack_titles("fisher_information").get(name, name), marker_color=PALETTE[j],
                                 error_y=None if sd is None else {"array": sd, "visible": True}),
                      1, 2)
    if prior is not None:
        fig.add_hline(y=prior, line_dash="dash", line_color="gray", row=1, col=2,
                      annotation_text="prior", annotation_position="bottom right")
    if current is not None:
        for col in (1, 2):
            fig.add_vline(x=current, line_dash="dot", line_color="black", row=1, col=col)
    fig.update_xaxes(type="log", title_text="mean η̄ (σ swept)")
    fig.update_yaxes(title_text="accuracy", range=[0, 1.02])
    return _layout(fig, "Utility and attacks against η̄ (dotted: the current setting)", height)


def decile_figure(decile_eta: np.ndarray, acc: np.ndarray, iterations: Sequence[int], *,
                  prior: float | None, height: int = 360) -> go.Figure:
    """Fig. 7b/d: white-box accuracy per decile of the initial η, one line per IRFIL iterate."""
    fig = go.Figure()
    dec = np.arange(1, acc.shape[1] + 1)
    for j, it in enumerate(iterations):
        fig.add_trace(go.Scatter(x=dec, y=acc[j], mode="lines+markers",
                                 name=f"IRFIL iteration {int(it)}", marker_color=PALETTE[j],
                                 customdata=np.asarray(decile_eta),
                                 hovertemplate="decile %{x}<br>initial η %{customdata:.3g}"
                                               "<br>accuracy %{y:.3f}"))
    if prior is not None:
        fig.add_hline(y=prior, line_dash="dash", line_color="gray", annotation_text="prior")
    fig.update_xaxes(title_text="decile of the initial η (1 = least leaking)", dtick=1)
    fig.update_yaxes(title_text="white-box accuracy", range=[0, 1.02])
    return _layout(fig, "White-box accuracy per initial-η decile", height)


def crb_figure(bound: np.ndarray, variance: np.ndarray, sigma: np.ndarray, *,
               height: int = 400) -> go.Figure:
    """The Cramér–Rao panel: measured variance of the unbiased reconstruction against the bound
    1/η² (log-log), coloured by σ; every point must lie on or above the line y = x."""
    b = np.asarray(bound, dtype=float)
    v = np.asarray(variance, dtype=float)
    s = np.asarray(sigma, dtype=float)
    fig = go.Figure()
    lo, hi = float(min(b.min(), v.min())), float(max(b.max(), v.max()))
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="bound: Var = 1/η²",
                             line={"color": "black", "dash": "dash"}))
    fig.add_trace(go.Scatter(x=b, y=v, mode="markers", name="measured variance",
                             marker={"size": 7, "color": np.log10(s), "colorscale": "Viridis",
                                     "colorbar": {"title": "log₁₀ σ"}},
                             customdata=s,
                             hovertemplate="bound %{x:.3g}<br>variance %{y:.3g}"
                                           "<br>σ %{customdata:.3g}"))
    fig.update_xaxes(type="log", title_text="Cramér–Rao bound 1/η² (label)")
    fig.update_yaxes(type="log", title_text="variance of the unbiased reconstruction")
    fig.update_layout(legend={"x": 0.01, "y": 0.99})
    return _layout(fig, "Cramér–Rao: points on or above the line", height)

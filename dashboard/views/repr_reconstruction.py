"""Reconstruction → from representations: Inf2Guard's learned perturbation δ = ε·tanh(u)
against fixed noise channels (Gaussian, Laplace, uniform) and DP noise on the clipped r, with
the in-training decoder, a fresh decoder and optimisation inversion reconstructing the images,
Theorem 3's bound beside them and the tradeoff across ε with one curve per channel.

``controls()`` turns the widgets into a ``repr_reconstruction`` config (small ``*_ui()``
functions); the rest draws the stored Result.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from core.bounds import reconstruction as B
from core.config.schema import REPR_ATTACKS, REPR_CHANNELS, ReprAttackSpec, ReprTrainSpec
from core.foundation.metric_schema import HEADLINES
from core.foundation.parts import ATTACKS, attack_titles, config_names
from core.report.tradeoff import tradeoff_points
from dashboard import state
from dashboard.base.format import fmt, fmt_with_interval, metric
from dashboard.base.widgets import peek, run_with_progress
from dashboard.components import result_caption
from dashboard.components._figures import figure
from dashboard.components.caveats import caveats_of, flag_rows, plot_caption
from dashboard.components.inputs import blocked_reason, number_ui
from dashboard.components.knob import knob_of, knob_ui
from dashboard.components.run_panel import run_panel
from dashboard.components.tradeoff import filled, tradeoff_plot
from dashboard.sidebar import dataset_label, dataset_rows

KIND = "repr_reconstruction"
CHANNEL_TITLES = {"learned": "learned δ = ε·tanh(u) (Inf2Guard)", "gaussian": "Gaussian N(0, ε²)",
                  "laplace": "Laplace(0, ε)", "uniform": "uniform U(−ε, ε)",
                  "dp": "DP: Gaussian mechanism on clipped r"}
#: the registered defense whose knob (ε) the page slides and sweeps (every channel)
DEFENSE = "inf2guard_dra"
GRID_COLS = 10


def _init_state() -> None:
    for k, v in {"rr_channel": "learned", "rr_eps": 1.0, "rr_lambda": 0.4, "rr_epochs": 10,
                 "rr_targets": 50, "rr_attackers": list(REPR_ATTACKS)}.items():
        st.session_state.setdefault(k, v)


def image_sets() -> list[dict[str, Any]]:
    """Every image data set that can load here (embedded ones always)."""
    rows = [r for r in dataset_rows() if r["kind"] == "image" and r["available"]]
    first = {"digits": 0, "mnist5k": 1, "faces": 2}
    return sorted(rows, key=lambda r: (first.get(r["name"], 3), r["name"]))


def data_ui() -> str:
    rows = {r["name"]: r for r in image_sets()}
    names = list(rows)
    state.follow_sidebar("rr_dataset", names, "digits")
    return st.selectbox("Data set", names, key="rr_dataset",
                        format_func=lambda n: dataset_label(rows[n]))


def defense_ui() -> dict[str, Any]:
    c1, c2, c3 = st.columns([2.1, 1.3, 1.3])  # the channel's title whole at 1280 px
    channel = c1.selectbox("Noise channel", list(REPR_CHANNELS), key="rr_channel",
                           format_func=CHANNEL_TITLES.get)
    eps = knob_ui(DEFENSE, key="rr_eps", family=KIND, where=c2)
    lam = c3.slider("λ · privacy weight (Eq. 20)", 0.0, 0.95, step=0.05, key="rr_lambda",
                    help="0 = utility only; the encoder plays against the in-training decoder "
                         "with weight λ. The paper's DRA runs use 0.4.")
    return {"kind": DEFENSE, "channel": channel, "epsilon": float(eps),
            "tradeoff_lambda": float(lam)}


def attack_ui() -> dict[str, Any]:
    c1, c2, c3 = st.columns([2.6, 0.8, 0.8])
    chosen = c1.multiselect("Attacks", list(config_names(KIND)), key="rr_attackers",
                            format_func=attack_titles(KIND).get)
    epochs = number_ui("Epochs", key="rr_epochs", default=10, where=c2,
                       field=(ReprTrainSpec, "epochs"),
                       help="Training epochs of the encoder, head and in-training decoder "
                            "(every channel trains this long).")
    targets = number_ui("Targets", key="rr_targets", default=50, where=c3,
                        field=(ReprAttackSpec, "targets"),
                        help="Test images attacked (the paper: 50).")
    return {"train": {"epochs": epochs},
            "attack": {"attackers": list(chosen), "targets": targets}}


def controls() -> dict[str, Any]:
    _init_state()
    s = state.settings()
    top = st.columns([1, 3])
    with top[0]:
        name = data_ui()
    with top[1]:
        defense = defense_ui()
    rest = attack_ui()
    return {"kind": KIND, "seed": s.seed, "device": s.device, "data": {"name": name},
            "defense": defense, **rest}


def threat_cards(attackers: list[str]) -> None:
    cols = st.columns(max(1, len(attackers)))
    for col, a in zip(cols, attackers):
        part = ATTACKS.get(a)
        col.markdown(f"**{part.title}**  \nsees: {part.threat.sees}  \nknows: "
                     f"{part.threat.knows}  \ngoal: {part.threat.goal}")


# --------------------------------------------------------------------------------------------
# Theorem 3 (instant, before any run)


def _data_dim(name: str) -> int:
    """d of the flattened images (the loader is memoised per process)."""
    from core.config.schema import DataSpec
    from core.data import load_dataset

    return int(load_dataset(DataSpec(name=name), 0).X.shape[1])


def bound_preview(name: str, eta_rmse: float = 0.15, eta_linf: float = 0.25) -> None:
    """What Theorem 3 can say on this data set before any run: the denominators and the
    largest I(x; r + δ) at which it is still informative."""
    d = _data_dim(name)
    eta2 = eta_rmse * math.sqrt(d)
    den2, deni = (B.unit_cube_denominator(d, eta2, "l2"),
                  B.unit_cube_denominator(d, eta_linf, "linf"))
    st.caption(f"Theorem 3 on [0, 1]^{d}: Pr(‖A(r + δ) − x‖ ≥ η) ≥ 1 − (I(x; r + δ) + ln 2) / D. "
               f"ℓ2 at η = {eta_rmse:g}·√d = {eta2:.3g}: D ≥ {den2:.1f} nats, informative while "
               f"I < {B.max_informative_mi(den2):.1f} nats; ℓ∞ at η = {eta_linf:g}: D = "
               f"{deni:.1f} nats (d·ln(1/2η)), informative while I < "
               f"{B.max_informative_mi(deni):.1f} nats. At ε = 0 I is unbounded: vacuous. "
               f"This form assumes x uniform on [0, 1]^{d}; after a run the page draws the bound "
               "under the data's estimated entropy instead.")


#: how the entropy of x is estimated for the drawn bound (core.runs.repr_reconstruction)
ENTROPY_ESTIMATOR = ("Gaussian maximum-entropy estimator: ½ ln det(2πe Σ̂) of the dequantised "
                     "pixels' sample covariance (core.bounds.entropy), an upper estimate of h(x)")
BELOW_EXPLAINED = ("A point below the drawn bound does not break Theorem 3: the bound is "
                   "evaluated at two estimates, h(x) from above (the Gaussian maximum-entropy "
                   "value) and I(x; r + δ) from the Gaussian channel bound at the measured "
                   "Var r, so it is an estimate of the bound, not the bound; and each measured "
                   "share comes from a finite set of targets.")


def thm3_points(result) -> list[dict[str, Any]]:
    """One point per (norm, attacker): the measured share of targets reconstructed no closer
    than η, the bound under the estimated entropy at that norm, and whether it lies below."""
    pts = []
    for norm, label in (("l2", "ℓ2"), ("linf", "ℓ∞")):
        bound = metric(result, f"bound_thm3_est_{norm}")
        vac = bool(metric(result, f"bound_thm3_est_{norm}_vacuous"))
        for a in result.config["attack"]["attackers"]:
            frac = metric(result, f"recon_{a}_frac_{norm}_ge_eta")
            if frac is None:
                continue
            pts.append({"norm": label, "key": a, "attack": ATTACKS.get(a).title,
                        "share": float(frac),
                        "bound": None if bound is None else float(bound), "vacuous": vac,
                        "below": bound is not None and not vac and frac < bound})
    return pts


def thm3_figure(pts: list[dict[str, Any]]):
    """Measured shares against Theorem 3 drawn at the estimated entropy (the uniform-x form is
    not drawn: its assumption does not hold for images); points below the bound in red."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for norm in dict.fromkeys(p["norm"] for p in pts):
        sel = [p for p in pts if p["norm"] == norm]
        xs = [f"{norm} · {p['attack']}" for p in sel]
        b = sel[0]["bound"]
        fig.add_trace(go.Scatter(
            x=xs, y=[max(0.0, b) if b is not None else None] * len(xs), mode="lines",
            line={"dash": "dash", "color": "black"},
            name=f"Theorem 3 ({norm}), estimated h(x)" + (" — vacuous (≤ 0)" if sel[0][
                "vacuous"] else "")))
        fig.add_trace(go.Scatter(
            x=xs, y=[p["share"] for p in sel], mode="markers", name=f"measured ({norm})",
            marker={"size": 11, "symbol": ["x" if p["below"] else "circle" for p in sel],
                    "color": ["crimson" if p["below"] else "#1f77b4" for p in sel]},
            text=["below the estimated bound" if p["below"] else "" for p in sel]))
    fig.update_layout(height=330, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      yaxis={"title": "share of targets with error ≥ η", "range": [0, 1.02]},
                      title="Theorem 3 under the data's estimated entropy (an estimate)")
    return fig


def bound_section(result) -> None:
    st.subheader("Theorem 3: guaranteed reconstruction error")
    mi = metric(result, "bound_thm3_mi_nats")
    h = metric(result, "bound_thm3_data_entropy_nats")
    if h is None or metric(result, "bound_thm3_est_l2") is None:
        st.caption("Theorem 3 is not drawn for this result: it assumes x uniform on [0, 1]^d, "
                   "which images are not, and the result carries no estimate of the data's "
                   "entropy (a run from before that estimate existed: run it again).")
        return
    pts = thm3_points(result)
    st.plotly_chart(thm3_figure(pts), width="stretch", key="rr_thm3")
    below = sum(p["below"] for p in pts)
    st.caption(f"Drawn: Theorem 3 under the data's estimated entropy, labelled an estimate. "
               f"Estimator: {ENTROPY_ESTIMATOR}; h(x) ≈ {fmt(h, 1)} nats. "
               f"I(x; r + δ) ≤ {fmt(mi, 1) if mi is not None else '∞'} nats (estimated: the "
               "Gaussian max-entropy bound at the measured Var r and the noise's entropy). "
               "Each point is the share of targets an attack reconstructs no closer than η; "
               f"the bound must sit below them. Points below the drawn bound: {below} of "
               f"{len(pts)}" + (f" (marked ✕ in red). {BELOW_EXPLAINED}" if below else "."))
    rows, qualified = [], []
    # a measured share below a bound is marked in its cell; the reason is under the table
    marks = {(c["where"].get("attack"), c["where"].get("norm")): c["label"]
             for c in caveats_of(result)
             if c["key"] in ("thm3_points_below", "thm3_est_points_below")}
    for norm, label in (("l2", "ℓ2"), ("linf", "ℓ∞")):
        qualified.append([f"bound_thm3_{norm}", f"bound_thm3_est_{norm}"]
                         + [f"recon_{a}_frac_{norm}_ge_eta"
                            for a in result.config["attack"]["attackers"]])
        rows.append({
            "norm": label, "η": fmt(metric(result, f"bound_thm3_eta_{norm}"), 3),
            "bound, estimated h(x) (drawn)":
                "vacuous" if metric(result, f"bound_thm3_est_{norm}_vacuous") else
                fmt(metric(result, f"bound_thm3_est_{norm}"), 3),
            "paper's form, x uniform (not drawn)":
                "vacuous" if metric(result, f"bound_thm3_{norm}_vacuous") else
                fmt(metric(result, f"bound_thm3_{norm}"), 3),
            **{f"measured · {p['attack']}": fmt(p["share"], 2)
               + (f" ⚠ {marks[(p['key'], norm)]}" if (p["key"], norm) in marks else "")
               for p in pts if p["norm"] == label}})
    # a static table wraps its cells: every measured column visible at 1280 px (a data grid
    # cut the last attack's column off; issue #20 item 6)
    st.table(pd.DataFrame(flag_rows(rows, result, qualified)).set_index("norm"))
    plot_caption(result, "thm3")
    st.caption("Not drawn: the paper's form, which assumes x uniform on [0, 1]^d. Images are "
               "far from uniform (their entropy is far below the cube's 0 nats), so that form "
               "does not apply here; "
               f"{int(metric(result, 'bound_thm3_violations') or 0)} measured share(s) lie "
               "below it, which is what an assumption that fails predicts.")


# --------------------------------------------------------------------------------------------
# results


def attack_rows(result) -> list[dict[str, str]]:
    rows = []
    for a in result.config["attack"]["attackers"]:
        part = ATTACKS.get(a)
        rows.append({"attack": part.title, "role": part.role.replace("_", "-"),  # a word
                     "SSIM": fmt_with_interval(result, f"recon_{a}_ssim", 3),
                     "PSNR (dB)": fmt_with_interval(result, f"recon_{a}_psnr", 2),
                     "MSE": fmt_with_interval(result, f"recon_{a}_mse", 4)})
    return rows


def gallery(result) -> None:
    arts = result.artifacts
    n = min(GRID_COLS, len(arts["originals"]))
    blocks, titles = [arts["originals"][:n]], [f"#{i + 1}" for i in range(n)]
    rows = ["targets"]
    for a in result.config["attack"]["attackers"]:
        if f"recon_{a}" not in arts:
            continue
        blocks.append(arts[f"recon_{a}"][:n])
        rows.append(ATTACKS.get(a).title)
        ssim = arts[f"ssim_{a}"]
        titles += [f"{ssim[i]:.2f}" for i in range(n)]  # short: tiles can be 8 pixels wide
    imgs = np.concatenate(blocks)
    st.plotly_chart(figure("image_grid_figure", imgs, tuple(titles), cols=n, tile_px=70),
                    width="stretch", key="rr_gallery")
    st.caption("Rows, top to bottom: " + "; ".join(rows) + ". Each reconstruction is made "
               "from the target's released r + δ and titled with its SSIM.")


def _knob():
    return knob_of(DEFENSE, KIND)


def _sweep_results(config: dict[str, Any]) -> dict[str, dict[float, Any]]:
    out: dict[str, dict[float, Any]] = {}
    knob = _knob()
    for ch in REPR_CHANNELS:
        for eps in knob.teaching_grid():
            c = {**config, "defense": {**config["defense"], "channel": ch, knob.field: eps}}
            out.setdefault(ch, {})[eps] = peek(c)
    return out


def tradeoff_section(config: dict[str, Any], result) -> None:
    st.subheader("Tradeoff across ε, one curve per channel")
    got = _sweep_results(config)
    cur_ch, cur_eps = config["defense"]["channel"], float(config["defense"]["epsilon"])
    got[cur_ch][cur_eps] = result
    head = HEADLINES[KIND]
    pts = []
    for ch, res in got.items():
        # every stored run of these settings per channel (off-grid ε included)
        drawn = filled({**config, "defense": {**config["defense"], "channel": ch}},
                       _knob().field, res, result if ch == cur_ch else None)
        pts += tradeoff_points(drawn, kind=KIND, attack_metrics={CHANNEL_TITLES[ch]: head.attack})
    missing = sum(r is None for res in got.values() for r in res.values())
    start = st.button(f"Run the ε sweep over every channel ({missing} missing)", key="rr_sweep",
                      disabled=not missing or blocked_reason() is not None,
                      help=blocked_reason())
    run_with_progress({"kind": "sweep", "base": config,
                       "grid": {"defense.channel": list(REPR_CHANNELS),
                                f"defense.{_knob().field}": list(_knob().teaching_grid())},
                       "seeds": [config.get("seed", 0)], "executor": "serial"},
                      label="ε sweep over channels", start=start)
    tradeoff_plot(pts, current=cur_eps, undefended=None, chance=None, symbol="ε",
                  y_title="SSIM of the strongest attack (lower: less recovered)", key="rr",
                  page=KIND, config=config, current_series=CHANNEL_TITLES[cur_ch])
    st.caption("Every channel's encoder trains with its own noise in the loop for the same "
               "epochs, so the curves compare the noise, not the encoder. A channel beats "
               "another where its curve runs lower at the same utility.")


def show_result(config, result) -> None:
    result_caption(result)
    c = st.columns(5)
    c[0].metric("utility on r + δ", fmt(metric(result, "utility_acc"), 3),
                help=f"majority class {fmt(metric(result, 'utility_majority'), 3)}")
    c[1].metric("utility on clean r", fmt(metric(result, "utility_acc_clean"), 3))
    c[2].metric("strongest SSIM", fmt(metric(result, "recon_ssim"), 3),
                help=f"by {result.info.get('strongest_attack')}")
    c[3].metric("its PSNR (dB)", fmt(metric(result, "recon_psnr"), 2))
    c[4].metric("its MSE", fmt(metric(result, "recon_mse"), 4))
    # a table, not a data grid: its columns wrap at 1280 px instead of scrolling out of the box
    st.table(attack_rows(result), hide_index=True, border="horizontal")
    extra = []
    if metric(result, "epsilon_accountant") is not None:
        extra.append(f"DP channel: (ε_DP, δ) = ({fmt(metric(result, 'epsilon_accountant'), 3)}, "
                     f"{config['defense'].get('dp_delta', 1e-5):g}) for one release "
                     f"({result.info.get('accountant')}).")
    extra.append(f"Noise: {fmt(metric(result, 'noise_std_mean'), 3)} mean std per coordinate, "
                 f"entropy {fmt(metric(result, 'noise_entropy_nats'), 3)} nats per coordinate; "
                 f"β = λα/(1−λ) = {fmt(metric(result, 'entropy_beta'), 3)}.")
    st.caption(" ".join(extra))
    gallery(result)
    bound_section(result)
    tradeoff_section(config, result)


def before_run(run) -> None:
    """The threat model of each chosen attack and the bound's preview, before any run."""
    with st.expander("Threat model of each attack", expanded=False):
        threat_cards(list(run.cfg.attack.attackers))
    bound_preview(run.cfg.data.name, run.cfg.bound.eta_rmse, run.cfg.bound.eta_linf)


st.title("Reconstruction: from representations")
st.caption("Can an attacker rebuild an image from the representation a model shares? Inf2Guard "
           "shares r + δ with a learned perturbation δ = ε·tanh(u), u ~ N(μ, σ²); beside it the "
           "same encoder training with fixed Gaussian, Laplace or uniform noise at the same ε, "
           "and DP noise on the clipped r. A decoder trained during the defense, a larger fresh "
           "decoder trained afterwards and an optimisation inversion attack every setting.")
run_panel(controls(), kind=KIND, page="repr_reconstruction", key="rr",
          title="Reconstruction from representations", before=before_run,
          label=lambda run: f"{run.cfg.defense.channel} ε = {run.cfg.defense.epsilon:g} "
                            f"on {run.cfg.data.name}",
          show=lambda run: show_result(run.config, run.result),
          idle="No stored result for these settings yet. Press **Run** (digits, 10 epochs, three "
               "attacks: a few seconds on a CPU; mnist5k about a minute). Runs are stored.")

"""Reconstruction → gradient leakage: the channel-capacity defense (κ with Natural, White,
Personalized and Laplace channels) against DP-SGD, attacked by DLG / iDLG / Inverting
Gradients and model inversion (spec 001).

``controls()`` turns the widgets into a ``gradient_leakage`` config (small ``*_ui()``
functions returning values). The closed-form panel (σ solved from κ, κ/d, per-direction
capacity, Theorem 1 and the Wiener MMSE) is recomputed on every slider move from the cached
data spectrum (:mod:`core.defenses.channel_live` over :mod:`core.bounds.channel_readout`);
runs go through the shared job queue and are stored, and the κ / z sweeps draw one
utility–privacy curve per channel.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import streamlit as st

from core.catalog.channel import ChannelDefense
from core.config.schema import ImageTrainSpec, InversionSpecCfg, ModelSpec
from core.foundation.metric_schema import HEADLINES
from core.foundation.parts import (
    ARCHITECTURES,
    ATTACKS,
    DEFENSES,
    attack_by_config_name,
    attack_titles,
    attacks_for,
    config_names,
)
from core.report.tradeoff import tradeoff_points
from dashboard import state
from dashboard.base.format import fmt, fmt_with_interval, format_value, metric, titled
from dashboard.base.widgets import peek, run_with_progress
from dashboard.components import deferred, result_caption
from dashboard.components._figures import figure
from dashboard.components.caveats import flag_rows, flagged_caption, metric_tile, plot_caveats
from dashboard.components.exposure import exposure_ui
from dashboard.components.inputs import blocked_reason, number_ui
from dashboard.components.part_controls import defense_block_ui
from dashboard.components.run_panel import run_panel
from dashboard.components.tradeoff import filled, tradeoff_plot
from dashboard.reconstruction_settings import (
    BASELINE,
    CHOICES,
    DLG_SETTING,
    EPS_GRID,
    KAPPA_PER_DIM_GRID,
    choice_of,
    defense_choices,
    kappa_grid,
    sweep_config,
    sweep_configs,
)
from dashboard.sidebar import dataset_label, dataset_rows

KIND = "gradient_leakage"
DATASETS = ["digits", "mnist5k", "faces"]
MODELS = {"mlp": "small MLP (sigmoid)", "lenet5": "LeNet-5 (the paper's)",
          "lenet_sigmoid": "LeNet-sigmoid (DLG's, init U(−0.5, 0.5))"}
#: what each model's initialisation is, said on the page beside the model choice
INIT_TEXT = {
    "lenet_sigmoid": "LeNet-sigmoid is initialised as in the DLG setting (Zhu et al. 2019): "
                     "every weight and bias uniform in (−0.5, 0.5), not PyTorch's default, "
                     "under which its sigmoids sit near 0.5 and DLG (soft labels) stalls. "
                     "Its own recipe (Adam lr 3e-3, batch 32, 20 epochs) trains it well above "
                     "chance; the **DLG setting** preset runs it (measured by the dlg_lenet "
                     "benchmark: python -m benchmarks dlg_lenet).",
    "mlp": "Small MLP: PyTorch's default initialisation, drawn from the run's seed.",
    "lenet5": "LeNet-5: PyTorch's default initialisation, drawn from the run's seed.",
}


@st.cache_resource(max_entries=16, show_spinner="eigendecomposition of the data covariance")
def data_spectrum(name: str, seed: int) -> tuple[Any, tuple[int, int, int]]:
    """The train split's spectrum (the engine's spectrum stage, cached per process)."""
    from core.bounds.channel_readout import image_spectrum
    from core.config.schema import DataSpec
    from core.data import load_dataset

    ds = load_dataset(DataSpec(name=name), seed)
    return image_spectrum(np.asarray(ds.X)[ds.split("train")]), tuple(ds.image_shape)


@st.cache_resource(max_entries=16, show_spinner="β-whitened eigendecomposition")
def personalized_basis(name: str, seed: int, rect: tuple | None, multiplier: float):
    """The Personalized channel's (μ, w) for one β mask (one O(d³) eigh, cached)."""
    from core.bounds.channel_readout import personalized_basis as basis
    from core.catalog.channel import ChannelDefense
    from core.defenses.channel import channel_beta

    spec, shape = data_spectrum(name, seed)
    block = ChannelDefense(channel="personalized", beta_rect=rect, beta_multiplier=multiplier)
    return basis(spec, channel_beta(block, shape))


def basis_for(cfg):
    d = cfg.defense
    if getattr(d, "channel", None) != "personalized":
        return None
    return personalized_basis(cfg.data.name, cfg.seed,
                              None if d.beta_rect is None else tuple(d.beta_rect),
                              float(d.beta_multiplier))


# --------------------------------------------------------------------------------------------
# controls


def data_model_ui() -> tuple[str, str, str, int]:
    rows = {r["name"]: r for r in dataset_rows()}
    names = DATASETS + [n for n, r in rows.items() if r.get("source") == "user"
                        and r.get("kind") == "image"]
    state.follow_sidebar("gl_dataset", names, "digits")
    c1, c2, c3, c4 = st.columns([1.3, 1.2, 1, 0.8])
    name = c1.selectbox("Data set", names, key="gl_dataset",
                        format_func=lambda n: dataset_label(rows[n]) if n in rows else n)
    # a registered architecture chosen below names the network: this legacy choice then stays
    # at the small MLP (the config refuses two names for one network)
    arch = st.session_state.get("gl_arch")
    named_below = arch is not None and arch != ModelSpec().arch
    if named_below:
        st.session_state["gl_model"] = "mlp"
    model = c2.selectbox("Model", list(MODELS), key="gl_model", format_func=MODELS.get,
                         disabled=named_below,
                         help="The Architecture below names the network now; set it back to "
                              "the MLP to choose here." if named_below else None)
    setting = c3.segmented_control("Training", ["central", "fedavg"], key="gl_setting",
                                   required=True, help="Central: the paper's setting. FedAvg: "
                                   "each device perturbs its own batches.")
    epochs = number_ui("Epochs / rounds", key="gl_epochs", default=5, where=c4,
                       field=(ImageTrainSpec, "epochs"),
                       help="Central: epochs; FedAvg: rounds (0 = attack an untrained model).")
    st.caption(f"The network is the Architecture chosen below ({ARCHITECTURES.get(arch).title})."
               if named_below else INIT_TEXT[model])
    return name, model, setting, epochs


#: the page's widget values of the DLG-setting preset (:data:`DLG_SETTING`); training lr,
#: optimiser and batch size are the config's defaults, which are the preset's recipe
def _dlg_widgets() -> dict[str, Any]:
    t, a = DLG_SETTING["train"], DLG_SETTING["attack"]
    return {"gl_dataset": DLG_SETTING["data"]["name"], "gl_model": t["model"],
            "gl_setting": t["setting"], "gl_epochs": t["epochs"],
            "gl_defense": DLG_SETTING["defense"]["kind"], "gl_attackers": list(a["attackers"]),
            "gl_targets": a["targets"], "gl_batch": a["batch_size"],
            "gl_iters": a["iterations"] or 0, "gl_state": a["model_state"],
            "gl_obs": a["observation"]}


def _apply_dlg_setting() -> None:
    st.session_state.update(_dlg_widgets())


def preset_ui() -> None:
    """The "DLG setting" preset: LeNet-sigmoid (DLG's init), undefended single-image uploads,
    DLG and iDLG, the net's own training recipe (what ``benchmarks/dlg_lenet.py`` measures)."""
    c1, c2 = st.columns([1, 4])
    c1.button("DLG setting", key="gl_preset_dlg", on_click=_apply_dlg_setting,
              help="Sets the controls below; press Run to run it.")
    t = DLG_SETTING["train"]
    c2.caption(f"Preset: LeNet-sigmoid initialised U(−0.5, 0.5) as in DLG, no defense, "
               f"{DLG_SETTING['attack']['targets']} single-image uploads of the fresh model "
               f"attacked by DLG and iDLG (L-BFGS, the presets' iterations), the model trained "
               f"with {t['optimizer'].capitalize()} lr {t['lr']:g}, batch {t['batch_size']}, "
               f"{t['epochs']} epochs.")


#: widget keys of the defenses' fields (returning users and tests rely on them); a field not
#: listed gets gl_<defense>_<field>
FIELD_KEYS = {"target_epsilon": "gl_eps", "clip_norm": "gl_clip", "kappa": "gl_kappa",
              "noise_mode": "gl_noise_mode"}


def defense_ui(d: int) -> dict[str, Any]:
    """The defense block: every registered defense of the family (a κ channel per channel),
    its knob and declared controls drawn from its part (κ over the κ/d ladder of dimension
    d); the Personalized channel's β mask besides."""
    c1, c2, c3 = st.columns([1.3, 2.2, 1])
    choices = defense_choices(KIND)
    choice = c1.selectbox("Defense", list(choices), key="gl_defense", format_func=CHOICES.get)
    _, kind, variant = choices[choice]
    part = DEFENSES.get(kind)
    if part.knob is None and not part.controls_for(KIND):
        c2.caption(part.description)
    block = {"kind": kind, **variant, **defense_block_ui(
        KIND, kind, key=lambda f: FIELD_KEYS.get(f, f"gl_{kind}_{f}"), knob_where=c2,
        controls_where=[c3], dim=d)}
    if block.get("channel") == "personalized":
        block.update(beta_ui())
    return block


def beta_ui() -> dict[str, Any]:
    """The β mask: a rectangle of the image and its multiplier (the paper: 1 : 50 eye band)."""
    _, (_, h, w) = data_spectrum(st.session_state["gl_dataset"], state.settings().seed)
    with st.container(border=True):
        b1, b2, b3 = st.columns([1, 1, 1])
        paper = b1.toggle("Paper's eye band", key="gl_beta_paper",
                          help="Rows 12-19, columns 8-23 of a 32×32 image, scaled to this one.")
        mult = number_ui("β inside (1 outside)", key="gl_beta_mult", default=50.0, where=b1,
                         field=(ChannelDefense, "beta_multiplier"))
        if paper:
            return {"beta_rect": None, "beta_multiplier": mult}
        rows = b2.slider("rows", 0, h, key="gl_beta_rows", value=(h // 3, (2 * h) // 3))
        cols = b3.slider("columns", 0, w, key="gl_beta_cols", value=(w // 4, (3 * w) // 4))
        return {"beta_rect": [int(rows[0]), int(rows[1]), int(cols[0]), int(cols[1])],
                "beta_multiplier": mult}


def attack_ui() -> dict[str, Any]:
    inverters = list(config_names(KIND))
    c1, c2, c3, c4, c5 = st.columns([1.6, 0.8, 0.8, 0.9, 1])
    chosen = c1.multiselect("Attacks", inverters, key="gl_attackers",
                            format_func=attack_titles(KIND).get)
    targets = number_ui("Targets", key="gl_targets", default=4, where=c2,
                        field=(InversionSpecCfg, "targets"),
                        help="Independent uploads attacked in one batched optimisation.")
    batch = number_ui("Batch size", key="gl_batch", default=1, where=c3,
                      field=(InversionSpecCfg, "batch_size"), help="Images per upload.")
    iters = number_ui("Iterations", key="gl_iters", default=0, where=c4,
                      field=(InversionSpecCfg, "iterations"), zero="the attack's preset")
    state_ = c5.segmented_control("Model attacked", ["fresh", "trained"], key="gl_state",
                                  required=True, help="The upload from the freshly initialised "
                                  "model (round 1) or from the trained model.")
    with st.expander("Observation and threat model"):
        o1, o2, o3 = st.columns(3)
        obs = o1.segmented_control("Upload", ["gradient", "fedavg"], key="gl_obs", required=True,
                                   help="One step's gradient (FedSGD) or a FedAvg local update.")
        steps = number_ui("Local steps (fedavg)", key="gl_local_steps", default=3, where=o2,
                          field=(InversionSpecCfg, "local_steps"))
        mi = o3.toggle("Model inversion of the trained model", key="gl_mi")
        for n in chosen or inverters[:1]:
            part = attack_by_config_name(KIND, n)
            t = part.threat
            st.caption(f"**{part.title}** · sees: {t.sees} · knows: {t.knows} · "
                       f"goal: {t.goal}")
    return {"attackers": list(chosen), "targets": targets, "batch_size": batch,
            "iterations": iters or None, "model_state": state_, "observation": obs,
            "local_steps": steps, "model_inversion": bool(mi)}


def _init_state() -> None:
    ss = st.session_state
    for k, v in {"gl_model": "mlp", "gl_setting": "central", "gl_epochs": 5,
                 "gl_defense": "natural", "gl_noise_mode": "redraw", "gl_eps": 8.0, "gl_clip": 1.0,
                 "gl_beta_paper": True, "gl_beta_mult": 50.0, "gl_attackers": ["idlg"],
                 "gl_targets": 4, "gl_batch": 1, "gl_iters": 0, "gl_state": "fresh",
                 "gl_obs": "gradient", "gl_local_steps": 3, "gl_mi": True}.items():
        ss.setdefault(k, v)


def controls() -> dict[str, Any]:
    _init_state()
    s = state.settings()
    preset_ui()
    name, model, setting, epochs = data_model_ui()
    _, shape = data_spectrum(name, s.seed)
    defense = defense_ui(int(np.prod(shape)))
    attack = attack_ui()
    train: dict[str, Any] = {"model": model, "setting": setting, "epochs": epochs}
    if setting == "fedavg":
        train["fl"] = {"num_devices": 10, "fraction_fit": 0.5, "rounds": max(1, epochs or 0),
                       "local_epochs": 1, "batch_size": 32, "lr": 0.1}
    return {"kind": KIND, "seed": s.seed, "device": s.device, "data": {"name": name},
            "defense": defense, "train": train, "attack": attack}


# --------------------------------------------------------------------------------------------
# the closed-form panel (live)


def live_panel(cfg) -> None:
    """σ, κ/d, per-direction capacity, Theorem 1 and the Wiener MMSE from the cached
    spectrum: no run needed, recomputed on every slider move."""
    from core.defenses.channel_live import live_channel

    spec, shape = data_spectrum(cfg.data.name, cfg.seed)
    live = live_channel(cfg, spec, shape, basis=basis_for(cfg))
    cols = st.columns(5)
    for col, (label, value, help_) in zip(cols, live["cards"]):
        col.metric(label, value, help=help_)
    for line in live["notes"]:
        st.caption(line)
    if live.get("noise_eig") is not None:
        l, r = st.columns(2)
        l.plotly_chart(figure("spectrum_figure", tuple(spec.eigenvalues.tolist()),
                              tuple(np.asarray(live["noise_eig"]).tolist()),
                              tuple(np.asarray(live["capacity_dir"]).tolist())),
                       width="stretch", key="gl_spectrum")
        with r:
            bounds_vs_kappa(cfg, spec, shape)


def bounds_vs_kappa(cfg, spec, shape, measured: list[tuple[float, float, str]] | None = None) -> None:
    from core.bounds.channel_readout import bound_curves

    d = int(np.prod(shape))
    kap = np.array(kappa_grid(d))
    curves = bound_curves(spec, kap, getattr(cfg.defense, "channel", None), basis=basis_for(cfg))
    pts = measured if measured is not None else sweep_measured(cfg)
    st.plotly_chart(figure("kappa_bounds_figure", tuple(kap.tolist()),
                           tuple((k, tuple(v)) for k, v in curves.items()),
                           tuple(pts), current=float(cfg.defense.kappa)),
                    width="stretch", key="gl_bounds")
    st.caption("Per-pixel MSE (log) against κ. Theorem 1 plugs a Gaussian h(D) into the bound "
               "on the informative eigen-subspace: a heuristic, not a certificate. The Wiener "
               "curve is the error of an attacker who sees D̃ itself. Points: the strongest "
               "inverter's per-pixel MSE of stored runs of this channel.")


# --------------------------------------------------------------------------------------------
# sweeps


def sweep_measured(cfg) -> list[tuple[float, float, str]]:
    """(κ, per-pixel MSE, label) of stored runs of the current channel's κ sweep and the
    current run."""
    part = DEFENSES.get(cfg.defense.kind)
    knob = part.knob.for_family(KIND) if part.knob else None
    if knob is None or not knob.per_dim:  # the κ-per-dimension sweep of the κ channel
        return []
    config = cfg.model_dump(mode="json")
    d = int(np.prod(data_spectrum(cfg.data.name, cfg.seed)[1]))
    pts = []
    got = {float(c["defense"][knob.field]): peek(c)
           for c in [{**config, "defense": {**config["defense"], knob.field: g}}
                     for g in knob.for_dim(d).teaching_grid()] + [config]}
    # every stored run of these settings (off-grid κ included), the current one too
    for kappa, r in sorted(filled(config, knob.field, got).items()):
        if r is not None and metric(r, "recon_best_mse") is not None:
            # a run with targets below Theorem 1's floor is marked on the plot, with why
            below = [cv["text"] for cv in plot_caveats(r, "mse_vs_kappa")
                     if cv["key"] == "thm1_points_below"]
            pts.append((kappa, metric(r, "recon_best_mse"),
                        titled(r.info.get("best_inverter", ""), KIND) + (f" ⚠ {below[0]}" if below else "")))
    return pts


def tradeoff_section(config: dict[str, Any], cfg, result, d: int) -> None:
    st.subheader("Utility–privacy: κ per channel against DP-SGD's target ε")
    series = sweep_configs(config, d)
    head = HEADLINES[KIND]
    points = []
    symbols: dict[str, str] = {}  # each series labels its points with its own knob
    for name, cfgs in series.items():
        got = {}
        knob_ = DEFENSES.get(cfgs[0]["defense"]["kind"]).knob
        field = knob_.field
        symbols[CHOICES[name]] = knob_.symbol
        for c in cfgs:
            r = peek(c)
            if r is not None:
                got[float(c["defense"][field])] = r
        got = filled({**config, "defense": cfgs[0]["defense"]}, field, got)
        points += tradeoff_points(got, kind=KIND, attack_metrics={CHOICES[name]: head.attack})
    cur = None
    knob = DEFENSES.get(cfg.defense.kind).knob
    if knob is not None:  # a knob left null (DP-SGD at a fixed z) is the ε = ∞ end
        value = getattr(cfg.defense, knob.field)
        cur = float(value) if value is not None else math.inf
    if result is not None and cur is not None and not any(abs(p.knob - cur) < 1e-9 for p in points):
        label = CHOICES[choice_of(cfg.defense)]
        points += tradeoff_points({cur: result}, kind=KIND, attack_metrics={label: head.attack})
    n_missing = sum(peek(c) is None for cs in series.values() for c in cs)
    start = st.button(f"Run the sweeps ({n_missing} of {sum(map(len, series.values()))} points "
                      "missing)", key="gl_sweep",
                      disabled=n_missing == 0 or blocked_reason() is not None,
                      help=blocked_reason() or "κ/d ∈ {" + ", ".join(f"{g:g}" for g in KAPPA_PER_DIM_GRID)
                           + "} per channel and target ε ∈ {" + ", ".join(f"{e:g}" for e in EPS_GRID)
                           + "} for DP-SGD, other settings as on the page; every point is stored.")
    run_with_progress(sweep_config(config, series), label="κ and z sweeps", start=start)
    undef = peek({**config, "defense": {"kind": BASELINE}})
    und = None
    if undef is not None:
        und = (metric(undef, head.utility), metric(undef, head.attack))
    tradeoff_plot(points, current=cur, undefended=und, chance=None, symbol=symbols,
                  y_title="median PSNR of the strongest inverter (dB)", key="gl",
                  page="reconstruction", config=config, dim=d)
    st.caption("Utility on x, reconstruction quality on y (higher = more leakage), 95 % "
               "intervals. The paper's claims to check: at equal κ White and Personalized give "
               "a larger reconstruction error than Natural, Natural keeps the best utility, and "
               "at equal reconstruction quality the κ channel keeps more utility than DP-SGD.")


# --------------------------------------------------------------------------------------------
# results


def gallery(result, names: list[str]) -> None:
    arts = result.artifacts
    n = min(8, len(arts["targets"]))
    rows = [("original", arts["targets"][:n]), ("what the defense trained on", arts["noisy"][:n])]
    for a in names:
        if f"recon_{a}" in arts:
            ps = arts.get(f"recon_{a}_psnr", np.full(n, np.nan))
            rows.append((ATTACKS.get(a).title, arts[f"recon_{a}"][:n], ps))
    imgs = np.concatenate([r[1] for r in rows])
    titles = []
    for r in rows:
        if len(r) == 3:
            titles += [f"{p:.1f} dB" for p in r[2][:n]]
        else:
            titles += [r[0] if i == 0 else "" for i in range(n)]
    st.plotly_chart(figure("image_grid_figure", imgs, tuple(titles), cols=n, tile_px=70),
                    width="stretch", key="gl_gallery")
    st.caption("Rows: " + " · ".join(r[0] for r in rows) + ". Reconstructions are matched to "
               "their targets (assignment on MSE) and titled with their PSNR.")


def scores_table(result, names: list[str]) -> None:
    rows, qualified = [], []
    for a in names:
        qualified.append([f"recon_{a}_{s}" for s in ("mse", "psnr", "psnr_median", "ssim")])
        rows.append({"attack": ATTACKS.get(a).title,
                     "median PSNR (dB)": fmt(metric(result, f"recon_{a}_psnr_median"), 2),
                     "mean PSNR (dB)": fmt_with_interval(result, f"recon_{a}_psnr", 2),
                     "SSIM": fmt_with_interval(result, f"recon_{a}_ssim", 3),
                     "MSE": fmt_with_interval(result, f"recon_{a}_mse", 4),
                     "label acc": fmt_with_interval(result, f"recon_{a}_label_acc", 2),
                     "seconds": fmt(metric(result, f"recon_{a}_seconds"), 2)})
    # a table, not a data grid: its columns wrap at 1280 px instead of scrolling out of the box
    st.table(flag_rows(rows, result, qualified), hide_index=True, border="horizontal")


#: seeds whose stored runs of the same settings join Theorem 1's mean (the current run's too)
THM1_SEEDS = (0, 1, 2, 3, 4)


def thm1_runs(config: dict[str, Any], result) -> list[Any]:
    """The current run and stored runs of the same settings at the other seeds of
    :data:`THM1_SEEDS` that carry a per-round Theorem 1 bound."""
    runs = [result]
    for s in THM1_SEEDS:
        if s != result.seed and (r := peek({**config, "seed": s})) is not None:
            runs.append(r)
    return [r for r in runs if metric(r, "bound_thm1_round") is not None
            and f"recon_{r.info.get('best_inverter')}_psnr" in r.artifacts]


def thm1_section(config: dict[str, Any], result) -> None:
    """Theorem 1 bounds the EXPECTED per-pixel MSE: compared with the mean over targets and
    seeds (with its bootstrap interval); single images are drawn but not counted."""
    import plotly.graph_objects as go

    from core.bounds.expectation import expected_error_check, mse_from_psnr

    runs = thm1_runs(config, result)
    if not runs:
        return
    errs = [mse_from_psnr(r.artifacts[f"recon_{r.info['best_inverter']}_psnr"]) for r in runs]
    bounds = [float(metric(r, "bound_thm1_round")) for r in runs]
    chk = expected_error_check(errs, bounds, seed=result.seed)
    st.markdown("**Theorem 1 against the mean MSE over targets and seeds**")
    fig = go.Figure()
    for r, e in zip(runs, errs):
        fig.add_trace(go.Scatter(
            x=[f"seed {r.seed}"] * len(e), y=e, mode="markers", showlegend=r is runs[0],
            marker={"size": 5, "color": "lightgray"},
            name="single images (shown, not counted)"))
    fig.add_trace(go.Scatter(x=[f"seed {r.seed}" for r in runs],
                             y=[p["mean"] for p in chk.per_seed], mode="markers",
                             marker={"size": 12, "symbol": ["x" if p["below"] else "diamond"
                                                            for p in chk.per_seed],
                                     "color": ["crimson" if p["below"] else "#1f77b4"
                                               for p in chk.per_seed]},
                             name="seed mean (counted)"))
    fig.add_trace(go.Scatter(
        x=["all seeds"], y=[chk.mean], mode="markers", marker={"size": 13, "color": "black"},
        error_y={"type": "data", "symmetric": False, "array": [chk.interval[1] - chk.mean],
                 "arrayminus": [chk.mean - chk.interval[0]]},
        name="mean over targets and seeds (95 % bootstrap)"))
    xs = [f"seed {r.seed}" for r in runs] + ["all seeds"]
    fig.add_trace(go.Scatter(x=xs, y=[p["bound"] for p in chk.per_seed] + [chk.bound],
                             mode="lines", line={"dash": "dash", "color": "black"},
                             name="Theorem 1 (per round), Gaussian plug-in h(D)"))
    fig.update_layout(height=330, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      yaxis={"title": "per-pixel MSE (log)", "type": "log", "dtick": 1,
                             "exponentformat": "power"})  # decades only, read 10⁻²
    st.plotly_chart(fig, width="stretch", key="gl_thm1_mean")
    st.caption(f"Seed means below the bound: {chk.seed_means_below} of {chk.seeds}; single "
               f"images below it: {chk.points_below} of {chk.points} (shown, not counted). "
               + chk.explanation + (" More seeds: run the same settings with another seed "
                                    f"(seeds {', '.join(map(str, THM1_SEEDS))} join the mean "
                                    "when stored)." if chk.seeds < 3 else ""))


def show_result(config, cfg, result) -> None:
    result_caption(result)
    names = list(cfg.attack.attackers)
    u1, u2, u3, u4 = st.columns(4)
    u1.metric("utility (test accuracy)", fmt(metric(result, "utility_acc"), 3),
              help=f"majority class {fmt(metric(result, 'utility_majority_images'), 3)}")
    u2.metric("median PSNR, strongest", fmt(metric(result, "recon_best_psnr_median"), 1) + " dB")
    metric_tile(u3, result, "MSE floor (Thm 1, per round)",
                format_value(metric(result, "bound_thm1_round"), 4), "bound_thm1_round",
                "bound_thm1_total",
                help="whole run: " + format_value(metric(result, "bound_thm1_total"), 4))
    metric_tile(u4, result, "Wiener MMSE (sees D̃)",
                format_value(metric(result, "bound_wiener_mmse"), 4), "bound_wiener_mmse")
    if "epsilon_accountant" in result.metrics:
        flagged_caption(st, result, "DP-SGD: the accountant reports ε = "
                        f"{format_value(result.metrics['epsilon_accountant'], 3)} "
                        f"({result.info.get('accountant') or 'n/a'}).", "epsilon_accountant")
    gallery(result, names)
    scores_table(result, names)
    exposure_ui(result, key="gl_exposure")
    thm1_section(config, result)
    # the attack that stores its images under its name (model inversion of the trained model)
    inverted = next((a.name for a in attacks_for(KIND) if a.name in result.artifacts), None)
    if inverted is not None and (box := deferred(
            "Model inversion: one representative per class vs the class centre",
            key="gl_show_mi", icon=":material/portrait:")):
        with box:
            mi, cc = result.artifacts[inverted], result.artifacts["class_centres"]
            k = len(mi)
            st.plotly_chart(figure("image_grid_figure", np.concatenate([cc, mi]),
                                   tuple([f"centre {c}" for c in range(k)]
                                         + [f"inverted {c}" for c in range(k)]),
                                   cols=k, tile_px=70), width="stretch", key="gl_mi_grid")
            st.caption(f"median MSE to the class centre "
                       f"{fmt(metric(result, 'model_inversion_mse_median'), 4)}, median PSNR "
                       f"{fmt(metric(result, 'model_inversion_psnr_median'), 2)} dB.")
    if result.curves.get("test_acc") and (box := deferred("Utility per epoch / round",
                                                           key="gl_show_curves")):
        with box:
            ys = result.curves["test_acc"]
            st.plotly_chart(figure("lines_figure", tuple(range(1, len(ys) + 1)),
                                   {"test accuracy": tuple(ys)}, x_title="epoch / round",
                                   y_title="accuracy"), width="stretch", key="gl_curves")


# --------------------------------------------------------------------------------------------
# page


def run_label(run) -> str:
    """The job's label: the channel (or defense) and the data set."""
    cfg = run.cfg
    return (f"{CHOICES.get(getattr(cfg.defense, 'channel', cfg.defense.kind), cfg.defense.kind)}"
            f" on {cfg.data.name}")


def data_dim(run) -> int:
    """d of the run's data set (the lesson's and the sweeps' κ/d scale)."""
    return int(np.prod(data_spectrum(run.cfg.data.name, run.cfg.seed)[1]))


st.title("Reconstruction: gradient leakage and the κ channel")
st.caption("A device's upload (a gradient or a local update) can be inverted back into its "
           "training images. The channel-capacity defense adds data-space noise solved from a "
           "budget κ (nats per round): I(D; upload) ≤ κ, so by Theorem 1 no attacker's MSE can "
           "fall below a floor. κ here is a capacity in nats; DP-SGD's ε is a privacy budget (its noise multiplier z is solved from it).")
run_panel(controls(), kind=KIND, page="reconstruction", key="gl", title="Gradient leakage",
          before=lambda run: live_panel(run.cfg), label=run_label, lesson_dim=data_dim,
          show=lambda run: show_result(run.config, run.cfg, run.result),
          idle="No stored result for these settings yet. Press **Run**: a few targets on digits "
               "take seconds on a CPU. Runs are stored, so the same settings show at once next "
               "time.",
          after=lambda run: tradeoff_section(run.config, run.cfg, run.result, data_dim(run)))

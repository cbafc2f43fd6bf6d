"""Data & projections: samples, label / attribute balance, and a 2-D projection through the store.

The projection (PCA / t-SNE / UMAP of the raw features) is a ``ProjectionConfig`` run through
``run_with_progress``: cached results show at once; new ones show progress and can be cancelled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core.config.schema import ConfigError, parse_config
from core.data import DataError, load_dataset
from dashboard import state
from dashboard.base.widgets import run_with_progress, running_jobs_panel
from dashboard.components import page_tail, result_caption
from dashboard.components._figures import figure
from dashboard.components.inputs import inputs_ok
from dashboard.sidebar import dataset_label, dataset_rows, require_data

N_SAMPLES = 24
GRID_COLS = 12

st.title("Data & projections")
s = state.settings()
rows = {r["name"]: r for r in dataset_rows()}
names = list(rows)
state.follow_sidebar("data_dataset", names, state.DEFAULT_DATASET)

c1, c2 = st.columns(2)
name = c1.selectbox("Data set", names, key="data_dataset",
                    format_func=lambda n: dataset_label(rows[n]),
                    help="Defaults to the sidebar's data set.")
attributes = list(rows[name]["attributes"])
attr = c2.selectbox("Private attribute", attributes, key=f"data_attr_{name}",
                    help="The attribute a defense protects and an attacker tries to infer.")

if not require_data(name, key="data_dataset"):  # said plainly; nothing is loaded or run
    st.stop()
if not inputs_ok():  # the sidebar's seed box is empty or invalid (its error is beside it)
    st.info("The projection waits for a valid seed in the sidebar.")
    st.stop()

try:
    spec = parse_config({"kind": "projection", "seed": s.seed,
                         "data": {"name": name, "private_attribute": attr}}).data
    with st.spinner(f"loading {name}…"):
        ds = load_dataset(spec, s.seed)
except (ConfigError, DataError) as exc:
    st.error(f"Cannot load **{name}**: {exc}\n\nNothing was stored.")
    st.stop()

# --------------------------------------------------------------------------------------------
# overview

m1, m2, m3, m4 = st.columns(4)
m1.metric("rows", f"{ds.n:,}")
m2.metric("features", f"{ds.X.shape[1]:,}")
m3.metric("task", ds.task_name)
m4.metric("classes", f"{len(ds.label_names)}")
st.caption((ds.description + " · " if ds.description else "") + "splits: "
           + " · ".join(f"{k} {len(ds.split(k)):,}" for k in ("train", "test", "aux"))
           + " (test = utility and attack scoring, aux = the attacker's auxiliary data)")
if rows[name]["source"] == "user":  # what registration imputed, converted or left out
    from core.data.user import get_entry

    for note in (get_entry(name) or {}).get("notes", []):
        st.caption(f"Registration note: {note}")

# --------------------------------------------------------------------------------------------
# samples

st.subheader("Samples")
rng = np.random.default_rng(s.seed)
train = ds.split("train")
pick = np.sort(rng.choice(train, size=min(N_SAMPLES, len(train)), replace=False))
u = ds.attribute(attr)
u_names = ds.attribute_values[attr]
if ds.is_image:
    titles = [f"{ds.label_names[ds.y[i]]} · {u_names[u[i]]}" for i in pick]
    st.plotly_chart(figure("image_grid_figure", ds.images(pick), titles, cols=GRID_COLS),
                    width="stretch", key="data_samples", config={"displayModeBar": False})
    st.caption(f"{len(pick)} random training images; title = task label · {attr}. "
               f"Image shape (C, H, W) = {ds.image_shape}.")
else:
    head = pd.DataFrame(np.asarray(ds.X[pick[:10]]), columns=ds.feature_names or None)
    head.insert(0, "label: " + ds.task_name, [ds.label_names[ds.y[i]] for i in pick[:10]])
    for a in ds.attributes:
        head.insert(1, a, [ds.attribute_values[a][ds.attributes[a][i]] for i in pick[:10]])
    st.dataframe(head, hide_index=True, width="stretch")
    st.caption(f"{len(ds.feature_names) or ds.X.shape[1]} feature columns (standardised with "
               "train-split statistics, categories one-hot) after the task label and the "
               "private attributes.")

# --------------------------------------------------------------------------------------------
# balance

st.subheader("Balance")
charts = [("task label: " + ds.task_name, ds.y, ds.label_names)]
charts += [(f"private attribute: {a}", ds.attributes[a], ds.attribute_values[a]) for a in ds.attributes]
st.plotly_chart(figure("balance_figure", [(t, c, list(v)) for t, c, v in charts]),
                width="stretch", key="data_balance")

# --------------------------------------------------------------------------------------------
# projection

st.subheader("Projection of the raw features")
p1, p2, p3, p4 = st.columns(4)
method = p1.radio("Method", ["pca", "tsne", "umap"], horizontal=True, key="data_method",
                  format_func={"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}.get)
colour_options = ["label"] + list(ds.attributes)
colour = p2.selectbox("Colour by", colour_options, key=f"data_colour_{name}",
                      index=0, format_func=lambda c: f"task label ({ds.task_name})" if c == "label"
                      else f"private attribute: {c}")
split = p3.selectbox("Split", ["train", "test", "aux", "all"], key="data_split")
max_points = p4.slider("Max points", 200, 5000, 2000, step=100, key="data_max_points")
extra = {}
if method == "tsne":
    extra["perplexity"] = st.slider("t-SNE perplexity", 2.0, 100.0, 30.0, step=1.0,
                                    key="data_perplexity")
elif method == "umap":
    q1, q2 = st.columns(2)
    extra["n_neighbors"] = q1.slider("UMAP n_neighbors", 2, 200, 15, key="data_n_neighbors")
    extra["min_dist"] = q2.slider("UMAP min_dist", 0.0, 1.0, 0.1, step=0.05, key="data_min_dist")

config = {
    "kind": "projection", "seed": s.seed, "device": s.device,
    "data": {"name": name}, "method": method, "split": split, "max_points": max_points, **extra,
}
label = f"{method.upper()} of {name} ({split})"
result = run_with_progress(config, label=label, slot="data_projection")
if result is not None:
    emb = result.artifacts["embedding"]
    if colour == "label":
        codes, cnames, legend = result.artifacts["label"], result.info.get("label_names", ds.label_names), ds.task_name
    else:
        codes = result.artifacts.get(f"attr_{colour}")
        if codes is None:  # fall back to the data set's codes for the projected rows
            codes = ds.attributes[colour][result.artifacts["index"]]
        cnames = result.info.get("attribute_values", {}).get(colour, ds.attribute_values[colour])
        legend = colour
    st.plotly_chart(figure("scatter_figure", emb, codes, list(cnames), legend_title=legend,
                           height=560),
                    width="stretch", key="data_projection")
    mt = result.metrics
    k1, k2, k3 = st.columns(3)
    k1.metric("points", f"{int(mt['n_points']):,}" if "n_points" in mt else "n/a")
    k2.metric("compute time", f"{mt['seconds']:.2f} s" if "seconds" in mt else "n/a")
    k3.metric("trustworthiness", f"{mt['trustworthiness']:.3f}" if "trustworthiness" in mt else "n/a",
              help="sklearn trustworthiness: how well local neighbourhoods are preserved "
                   "(1 = perfectly).")
    result_caption(result)
page_tail(result, "projection", key="data", config=config)
running_jobs_panel()

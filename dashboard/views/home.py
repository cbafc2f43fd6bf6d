"""Landing page: what privlab is, the pages, the data sets, the symbol glossary.

Works with no set-up and no run: it reads only the data-set registry.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.components.paper_check import paper_check_section
from dashboard.sidebar import dataset_rows, how_to_get

st.title("privlab")
st.markdown(
    "An interactive lab for **utility–privacy tradeoffs** in machine learning and federated "
    "learning. Four papers in one engine — **TAPPFL** (task-agnostic attribute privacy in "
    "federated learning), **Inf2Guard** (learned defenses against membership, property and "
    "reconstruction inference), the **channel-capacity κ** defense against data "
    "reconstruction, and **Fisher information loss** — so that their defenses can be compared "
    "on the same data. Every number on these pages comes from a stored run (cached by the hash "
    "of its config) or from a closed-form bound."
)

st.subheader("Pages")
PAGE_LINES = [
    ("views/data.py", "Data & projections", ":material/scatter_plot:",
     ("sample images or the table, label and private-attribute balance, PCA / t-SNE / UMAP "
     "coloured by label or attribute.")),
    ("views/attribute_privacy.py", "Attribute privacy (FL)", ":material/group_work:",
     ("TAPPFL in a FedAvg loop against DP-Gaussian, DP-Laplace and pruning; in-training vs fresh "
     "attackers with 95 % intervals and threat models; Theorem 1 and 2 bounds; the λ tradeoff "
     "against the undefended run.")),
    ("views/membership.py", "Membership", ":material/how_to_reg:",
     ("loss, confidence, LiRA (offline / online, shadow models trained the target's way) and "
     "RMIA against Inf2Guard (λ), DP-SGD and the κ channel; ROC linear and log-log with the DP "
     "region; TPR at low FPR with the count that makes it meaningful; ε audited from below.")),
    ("views/property.py", "Property", ":material/pie_chart:",
     ("can an attacker read a property of a subset (the share of bold digits on digits or "
     "mnist5k; the share of women on Adult, once its files are in) from its aggregated "
     "representation? Inf2Guard's property game (λ, K bins, mean / max) against its own "
     "adversary and fresh attackers on shadow subsets; the K-ary leakage bound.")),
    ("views/reconstruction.py", "Reconstruction: gradient leakage", ":material/image_search:",
     ("invert uploads with DLG / iDLG / Inverting Gradients; defend with the κ channel (Natural, "
     "White, Personalized, Laplace) or DP-SGD; σ solved from κ live, Theorem 1's floor and the "
     "Wiener MMSE beside the measured error; κ and z sweeps as tradeoff curves.")),
    ("views/repr_reconstruction.py", "Reconstruction: from representations",
     ":material/blur_on:",
     ("rebuild images from shared representations r + δ: Inf2Guard's learned noise against "
     "fixed Gaussian, Laplace and uniform noise at the same ε and DP on the clipped r; decoders "
     "and an optimisation inversion; Theorem 3's error bound; one tradeoff curve per channel.")),
    ("views/fisher_information.py", "Fisher information", ":material/functions:",
     ("how much a released linear / logistic model reveals about each training example "
     "(η = ‖J‖/σ); σ ↔ η ↔ ε live; IRFIL's reweighting; white-box and black-box attacks and "
     "the Cramér–Rao bound.")),
    ("views/compare.py", "Compare", ":material/compare_arrows:",
     ("every defense that applies to an attack family on one utility–privacy plane: curves "
     "over seeds, the Pareto front, each defense's utility at equal privacy; a teaching preset "
     "precomputed on first visit.")),
    ("views/history.py", "History", ":material/history:",
     ("every stored run and sweep, filtered by kind, data set, defense and date: inspect, copy as "
     "YAML / CLI, two runs side by side with their configs diffed, delete, export CSV / JSON "
     "and figures as HTML; runs of an older engine are marked.")),
]
for path, title, icon, line in PAGE_LINES:
    left, right = st.columns([1, 3], vertical_alignment="center")
    with left:
        st.page_link(path, label=title, icon=icon)
    right.markdown(line)

st.subheader("Data sets")
rows = dataset_rows()
embedded = [r["name"] for r in rows if r["source"] == "embedded"]
st.markdown(
    f"**A fresh clone runs every page with no download**: {', '.join(embedded)} ship inside "
    "privlab's dependencies (scikit-learn digits, an MNIST subset, scikit-image faces, a "
    "generated table). The real sets below (Adult, torchvision's) need their files; a page "
    "that needs one says how to get it and keeps Run off until then.")
# what is here first: available sets, embedded before real, then the missing ones
rows = sorted(rows, key=lambda r: (not r["available"], r["source"] != "embedded"))
table = pd.DataFrame([
    {
        "name": r["name"],
        "kind": r["kind"],
        "source": r["source"],
        "task": r["task"],
        "private attributes": ", ".join(r["attributes"]),
        "available": "yes" if r["available"] else "no",
        "description": r["description"],
    }
    for r in rows
])
st.table(table, hide_index=True, border="horizontal")
missing = [r["name"] for r in rows if not r["available"]]
if missing:
    with st.expander(f"Unavailable real data sets ({', '.join(missing)}): how to add them"):
        for name in missing:
            st.markdown(f"- **{name}**: {how_to_get(name)}")

st.subheader("Symbols")
st.markdown("The papers reuse letters for different things; privlab names them apart.")
GLOSSARY = [
    ("λ (TAPPFL, Inf2Guard)", "privacy weight",
     "weight of the privacy term in the encoder's loss: 0 = utility only, 1 = privacy only."),
    ("λ (FIL)", "L2 regulariser", ("strength of the L2 penalty of the linear / logistic model; "
     "not a privacy weight.")),
    ("κ (channel capacity)", "capacity in nats", ("information the noise channel lets through per "
     "round; smaller κ = more noise, a higher reconstruction-error floor.")),
    ("ε (Inf2Guard)", "noise scale", ("magnitude of the learned perturbation δ = ε·tanh(u) against "
     "reconstruction; not a privacy budget.")),
    ("ε, δ (DP)", "privacy budget", ("differential-privacy guarantee of a mechanism; smaller ε = "
     "more private; the ε readout names its accountant.")),
    ("H(u | r)", "conditional entropy (bits)", ("uncertainty left about the private attribute u "
     "given the representation r; TAPPFL Theorem 2 bounds any attacker's accuracy by it.")),
    ("η (FIL)", "Fisher information loss", ("how much the released model reveals about an example "
     "or attribute; an unbiased reconstruction has variance ≥ 1/η².")),
]
st.table(pd.DataFrame(GLOSSARY, columns=["symbol", "name", "meaning"]), hide_index=True,
         border="horizontal")

paper_check_section()

"""History: every stored run (the store's SQLite index); inspect, delete, export."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard.widgets import get_store

MAIN_METRICS = {
    "projection": ["n_points", "trustworthiness"],
    "tappfl": ["utility_acc", "attack_in_training_acc", "attack_mlp_auc", "attack_logreg_auc"],
}


def _setting(kind: str, cfg: dict) -> str:
    """The one or two settings that tell runs of a kind apart."""
    if kind == "projection":
        return f"{cfg.get('method')} · {cfg.get('split')} · ≤{cfg.get('max_points')} pts"
    if kind == "tappfl":
        fl = cfg.get("fl", {})
        lam = f" · λ={cfg.get('tradeoff_lambda')}" if cfg.get("defense") == "tappfl" else ""
        return (f"{cfg.get('defense')}{lam} · {fl.get('num_devices')} devices × "
                f"{fl.get('rounds')} rounds")
    return ""


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _export_bytes(store, fmt: str, kind: str | None) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        p = store.export(Path(d) / f"runs.{fmt}", fmt=fmt, kind=kind)
        return Path(p).read_bytes()


st.title("History")
store = get_store()
st.caption(f"Store: `{store.root}` · every run is keyed by the sha256 of its validated config "
           "and the engine version.")

records_all = store.list()
kinds = sorted({r.kind for r in records_all})
f1, f2 = st.columns([1, 1])
kind = f1.selectbox("Kind", ["all", *kinds], key="history_kind")
limit = f2.number_input("Show at most", min_value=1, max_value=10_000, value=200, step=50,
                        key="history_limit")
records = store.list(kind=None if kind == "all" else kind, limit=int(limit))

if not records:
    st.info("No stored runs yet. Runs appear here as soon as a page computes one (for example "
            "the projection on the Data & projections page).")
    st.stop()

table = pd.DataFrame([
    {
        "kind": r.kind,
        "key": r.key[:12],
        "created (UTC)": r.created.replace("T", " ")[:19],
        "seconds": None if r.seconds is None else round(r.seconds, 2),
        "data set": r.config.get("data", {}).get("name", ""),
        "settings": _setting(r.kind, r.config),
        "main metrics": ", ".join(f"{m}={_fmt(r.metrics.get(m))}"
                                  for m in MAIN_METRICS.get(r.kind, []) if m in r.metrics),
        "label": r.label,
    }
    for r in records
])
st.dataframe(table, hide_index=True, width="stretch")

e1, e2, _ = st.columns([1, 1, 4])
export_kind = None if kind == "all" else kind
e1.download_button("Download CSV", _export_bytes(store, "csv", export_kind),
                   file_name="privlab_runs.csv", mime="text/csv", key="history_csv")
e2.download_button("Download JSON", _export_bytes(store, "json", export_kind),
                   file_name="privlab_runs.json", mime="application/json", key="history_json")

st.subheader("One run")
by_key = {r.key: r for r in records}
key = st.selectbox("Run", list(by_key), key="history_run",
                   format_func=lambda k: f"{k[:12]} · {by_key[k].kind} · "
                                         f"{by_key[k].created[:19].replace('T', ' ')} · "
                                         f"{_setting(by_key[k].kind, by_key[k].config)}")
rec = by_key[key]
left, right = st.columns(2)
with left:
    st.markdown("**Metrics**")
    st.dataframe(pd.DataFrame({"metric": list(rec.metrics), "value": list(rec.metrics.values())}),
                 hide_index=True, width="stretch", height=420)
with right:
    st.markdown("**Config**")
    st.json(rec.config, expanded=2)

result = store.get(key)
if result is not None:
    st.download_button("Download this run (JSON)", result.to_json(), file_name=f"{key[:12]}.json",
                       mime="application/json", key="history_one_json")
    if result.curves:
        st.caption("curves: " + ", ".join(f"{k} ({len(v)})" for k, v in result.curves.items()))
    if result.artifacts:
        st.caption("artifacts: " + ", ".join(f"{k} {tuple(v.shape)}" for k, v in result.artifacts.items()))

confirm = st.checkbox(f"Yes, delete run {key[:12]}", key="history_confirm")
if st.button("Delete run", disabled=not confirm, key="history_delete"):
    if store.delete(key):
        st.session_state.pop("history_confirm", None)
        st.toast(f"Deleted {key[:12]}")
        st.rerun()
    else:
        st.warning(f"Run {key[:12]} was already gone.")

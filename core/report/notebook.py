"""Notebooks that recreate a stored result (the "take it with you" export).

:func:`notebook_for` writes an nbformat v4 notebook for a *target*: a stored run key, a stored
sweep key, or a :class:`core.runs.compare.ComparisonSpec`. The notebook imports only the public
``privlab`` module (and plotly), states the config as YAML, recreates the outcome through
``privlab.run`` / ``privlab.sweep`` / ``privlab.compare`` (read from the result store when the
store holds it for this engine, recomputed and stored otherwise), prints its headline numbers,
redraws its figures and ends with a check cell: every headline number equal to the value
embedded at export when it came from the store, within its tolerance (:attr:`Number.tolerance`:
the stored 95 % interval's width, else a stated tolerance) when recomputed, else an
AssertionError. :func:`script_for` is the same cells as a ``# %%`` script; :func:`execute` runs
a notebook headless (nbclient) in a kernel of this interpreter.

The store is handed in (``cache.store.ResultStore``: ``get``); the engine never imports it.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from core.config.sweeps import SweepTable, headline_names
from core.foundation.metric_schema import HEADLINES
from core.foundation.result import Result
from core.runs.compare import (
    Comparison,
    ComparisonSpec,
    read_comparison,
    spec_from_dict,
    spec_to_dict,
)

__all__ = ["Number", "execute", "headline", "notebook_for", "script_for", "target_of",
           "to_script"]

#: the stated tolerance of a recomputed number without a stored interval: this share of its
#: value, and at least :data:`TOLERANCE_ABS` (a tiny run's accuracy moves by a few points
#: between seeds)
TOLERANCE_REL = 0.05
TOLERANCE_ABS = 0.05
#: the repository root: a kernel started by :func:`execute` imports this checkout's engine
_ROOT = Path(__file__).resolve().parents[2]

Target = str | ComparisonSpec


# ---------------------------------------------------------------------------------------------
# headline numbers


def _num(v: Any) -> float | None:
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


@dataclass(frozen=True)
class Number:
    """One headline number: ``value`` (None when not finite or not reported) and its 95 %
    interval (``lo``, ``hi``) when the run stored one."""

    name: str
    value: float | None
    lo: float | None = None
    hi: float | None = None

    @property
    def tolerance(self) -> float:
        """How far a recomputed value may move: the stored interval's width, else
        ``max(TOLERANCE_ABS, TOLERANCE_REL * |value|)``."""
        if self.lo is not None and self.hi is not None and self.hi > self.lo:
            return self.hi - self.lo
        return max(TOLERANCE_ABS, TOLERANCE_REL * abs(self.value or 0.0))

    def __str__(self) -> str:
        v = "n/a" if self.value is None else f"{self.value:.4g}"
        ci = "" if self.lo is None or self.hi is None else f"  (95 % CI {self.lo:.4g} to {self.hi:.4g})"
        return f"{self.name}: {v}{ci}"


def _seed_mean(x: np.ndarray) -> list[float | None]:
    """Mean over seeds (last axis) of the finite values; None where a row has none."""
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(x)
    return [_num(row[m].mean()) if m.any() else None for row, m in zip(x, ok, strict=True)]


def _comparison_numbers(cmp: Comparison) -> dict[str, Number]:
    out: dict[str, Number] = {}
    s = cmp.spec
    for c in cmp.curves:
        lo, hi = _seed_mean(c.leak_lo), _seed_mean(c.leak_hi)
        for i, (k, u, a) in enumerate(zip(c.knob, _seed_mean(c.utility), _seed_mean(c.leakage),
                                          strict=True)):
            at = c.name + (f" @ {c.symbol or c.knob_field}={float(k):g}" if c.knob_field else "")
            out[f"{s.utility} · {at}"] = Number(f"{s.utility} · {at}", u)
            out[f"{s.privacy} · {at}"] = Number(f"{s.privacy} · {at}", a, lo[i], hi[i])
    return out


def headline(outcome: Result | SweepTable | Comparison) -> dict[str, Number]:
    """The headline numbers of a run (its kind's utility, attack success and budget,
    :data:`core.foundation.metric_schema.HEADLINES`), of each point of a sweep, or of each point of a
    comparison (seed means), by name."""
    if isinstance(outcome, Comparison):
        return _comparison_numbers(outcome)
    if isinstance(outcome, Result) and outcome.kind == "sweep":
        outcome = SweepTable(outcome)
    if isinstance(outcome, SweepTable):
        out: dict[str, Number] = {}
        for row in outcome.rows:
            at = ", ".join([f"{p}={row.get(p)}" for p in outcome.grid] + [f"seed={row.get('seed')}"])
            for m in outcome.metric_names:
                name = f"{m} · {at}"
                out[name] = Number(name, _num(row.get(m)), _num(row.get(f"{m}_lo")),
                                   _num(row.get(f"{m}_hi")))
        return out
    if isinstance(outcome, Result):
        out = {}
        for n in headline_names(outcome):
            iv = outcome.interval(n)
            out[n] = Number(n, _num(outcome.metrics.get(n)),
                            *((None, None) if iv is None else (_num(iv[0]), _num(iv[1]))))
        return out
    raise TypeError(f"headline: got {type(outcome).__name__}; expected a Result, a sweep or a "
                    "Comparison")


# ---------------------------------------------------------------------------------------------
# targets


def target_of(obj: Any) -> Target:
    """A target from what a user holds: a key (str), a Result or sweep (its key), a
    Comparison (its spec), a ComparisonSpec or its mapping (:func:`core.runs.compare.spec_from_dict`)."""
    if isinstance(obj, ComparisonSpec | str):
        return obj
    if isinstance(obj, Comparison):
        return obj.spec
    if isinstance(obj, Mapping):
        return spec_from_dict(obj)
    key = getattr(obj, "key", None)
    if isinstance(key, str):
        return key
    raise TypeError(f"target: got {type(obj).__name__}; expected a run or sweep key, a Result, "
                    "a ComparisonSpec or a Comparison")


def _stored(key: str, store: Any) -> Result:
    result = store.get(key)
    if result is None:
        raise LookupError(f"key: no stored run matches {key!r}")
    return result


# ---------------------------------------------------------------------------------------------
# cells


def _yaml_literal(name: str, data: Any) -> str:
    """``NAME = \"\"\"<yaml>\"\"\"`` (a repr where the text would break a triple quote)."""
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    if "\\" in text or '"""' in text:
        return f"{name} = {text!r}"
    return f'{name} = """\\\n{text}"""'


_IMPORTS = "import plotly.graph_objects as go\n\nimport privlab"
_IMAGE_IMPORTS = ("import numpy as np\nimport plotly.graph_objects as go\n"
                  "from plotly.subplots import make_subplots\n\nimport privlab")
#: artifacts holding the images an attack reconstructs, shown first when present
_ORIGINALS = ("targets", "originals", "noisy")

_ROC = '''\
# every attacker's ROC (the run's roc_<attacker>_fpr / _tpr arrays)
attackers = sorted(k[4:-4] for k in result.artifacts if k.startswith("roc_") and k.endswith("_fpr"))
fig = go.Figure()
for name in attackers:
    fig.add_scatter(x=result.artifacts[f"roc_{name}_fpr"], y=result.artifacts[f"roc_{name}_tpr"],
                    mode="lines", name=name)
fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance",
                line={"dash": "dot", "color": "grey"})
fig.update_layout(title="ROC of each attacker", xaxis_title="false positive rate",
                  yaxis_title="true positive rate")
fig'''

_CURVES = '''\
# the run's curves (per round, epoch or iteration)
x_name = next((n for n in ("round", "epoch", "iteration", "step") if n in result.curves), None)
fig = go.Figure()
for name, ys in result.curves.items():
    if name == x_name or "seconds" in name:  # timings are no result
        continue
    xs = result.curves[x_name] if x_name else []
    xs = xs if len(xs) == len(ys) else list(range(1, len(ys) + 1))
    fig.add_scatter(x=xs, y=ys, mode="lines+markers", name=name)
fig.update_layout(title="Curves", xaxis_title=x_name or "step")
fig'''

_EMBEDDING = '''\
# the 2-D embedding, coloured by the task label
emb = result.artifacts["embedding"]
fig = go.Figure(go.Scatter(x=emb[:, 0], y=emb[:, 1], mode="markers",
                           marker={"color": result.artifacts["label"], "size": 5,
                                   "colorscale": "Viridis", "showscale": True}))
fig.update_layout(title="Embedding coloured by the task label")
fig'''

_IMAGES = f'''\
# the originals beside each attack's reconstructions (first 8 of each; pixels in [0, 1])
def strip(images):
    """Up to 8 images (n, C, H, W) side by side as one RGB array."""
    tiles = [np.repeat(im[:1], 3, 0) if im.shape[0] == 1 else im[:3]
             for im in np.clip(np.asarray(images[:8], dtype=float), 0, 1)]
    return np.concatenate([np.transpose(t, (1, 2, 0)) for t in tiles], axis=1)


shown = [n for n in {_ORIGINALS!r} if n in result.artifacts]
shown += sorted(n for n in result.artifacts
                if n.startswith("recon_") and result.artifacts[n].ndim == 4)
fig = make_subplots(rows=len(shown), cols=1, subplot_titles=shown, vertical_spacing=0.04)
for row, name in enumerate(shown, start=1):
    fig.add_trace(go.Image(z=np.round(strip(result.artifacts[name]) * 255).astype(np.uint8)),
                  row=row, col=1)
fig.update_layout(title="Reconstructions", height=120 * len(shown) + 80)
fig'''

_SWEEP_PLOT = '''\
# utility against attack success, one point per setting and seed
frame = sweep.to_frame()
fig = go.Figure()
for seed, rows in frame.groupby("seed"):
    labels = [", ".join(f"{p}={r[p]}" for p in sweep.grid) for _, r in rows.iterrows()]
    fig.add_scatter(x=rows[UTILITY], y=rows[ATTACK], mode="markers+text", text=labels,
                    textposition="top center", name=f"seed {seed}")
fig.update_layout(title="Utility against attack success", xaxis_title=UTILITY,
                  yaxis_title=ATTACK)
fig'''

_COMPARE_PLOT = '''\
# each defense's curve on the utility-privacy plane (seed means)
fig = go.Figure()
for c in comparison.curves:
    labels = [f"{c.symbol or c.knob_field}={k:g}" if c.knob_field else c.name for k in c.knob]
    fig.add_scatter(x=c.utility_mean, y=c.leakage_mean, mode="lines+markers", text=labels,
                    name=c.name)
if comparison.chance_leakage is not None:
    fig.add_hline(y=comparison.chance_leakage, line_dash="dot", annotation_text="chance")
fig.update_layout(title="Utility against leakage", xaxis_title=comparison.spec.utility,
                  yaxis_title=comparison.spec.privacy)
fig'''

_HEADLINE = '''\
for number in privlab.headline({var}).values():
    print(number)'''


def _check(var: str, from_store: str, numbers: Mapping[str, Number]) -> str:
    expected = "\n".join(f"    {n!r}: ({x.value!r}, {x.tolerance!r})," for n, x in numbers.items())
    return f'''\
# every headline number against its value at export: equal when read from the store,
# within its tolerance (the stored 95 % interval's width, else 5 % and at least 0.05) when
# recomputed
EXPECTED = {{  # name: (value at export, tolerance when recomputed)
{expected}
}}
FROM_STORE = {from_store}
now = privlab.headline({var})
problems = []
for name, (want, tol) in EXPECTED.items():
    have = now[name].value if name in now else None
    if want is None or have is None:
        ok = want is None and have is None and name in now
    else:
        ok = have == want if FROM_STORE else abs(have - want) <= tol
    if not ok:
        problems.append(f"{{name}}: exported {{want!r}}, now {{have!r}}"
                        + ("" if FROM_STORE else f" (tolerance {{tol:.3g}})"))
assert not problems, "numbers differ from the export:\\n" + "\\n".join(problems)
how = "equal (read from the store)" if FROM_STORE else "within tolerance (recomputed)"
print(f"all {{len(EXPECTED)}} headline numbers {{how}}")'''


def _intro(title: str, what: str, call: str) -> str:
    return (f"# {title}\n\n{what} Running this notebook recreates it through the public "
            f"`privlab` module: `{call}` reads it from the result store when the store holds it "
            "(`$PRIVLAB_CACHE_DIR`, else the user cache dir; same config and engine) and "
            "recomputes and stores it otherwise. The last cell checks every headline number "
            "against its value at export: equal when read from the store, within its tolerance "
            "(the stored 95 % interval's width, else 5 % of the value and at least 0.05) when "
            "recomputed.")


def _run_cells(result: Result) -> list[tuple[str, str]]:
    cells = [
        ("markdown", _intro(f"privlab: {result.kind} run {result.key[:12]}",
                            f"A stored `{result.kind}` run (key `{result.key}`, engine "
                            f"`{result.engine_version}`, seed {result.seed}).", "privlab.run")),
        ("code", _IMPORTS),
        ("markdown", "## Config\n\nThe validated config with every default filled in."),
        ("code", _yaml_literal("CONFIG", result.config)),
        ("code", ("result = privlab.run(CONFIG)\n"
                 "print(f\"{result.kind} run {result.key[:12]}: \"\n"
                 "      + (\"read from the result store\" if result.from_cache "
                 "else \"recomputed and stored\"))")),
        ("markdown", "## Headline numbers"),
        ("code", _HEADLINE.format(var="result")),
    ]
    arts = result.artifacts
    figures = []
    if any(k.startswith("roc_") and k.endswith("_fpr") for k in arts):
        figures.append(("code", _ROC))
    if len(result.curves) > 1:
        figures.append(("code", _CURVES))
    emb = arts.get("embedding")
    if emb is not None and emb.ndim == 2 and emb.shape[1] >= 2 and "label" in arts:
        figures.append(("code", _EMBEDDING))
    if any(k.startswith("recon_") and v.ndim == 4 for k, v in arts.items()):
        figures.append(("code", _IMAGES))
        cells[1] = ("code", _IMAGE_IMPORTS)
    if figures:
        cells += [("markdown", "## Figures"), *figures]
    return cells + [("markdown", "## Check"),
                    ("code", _check("result", "result.from_cache", headline(result)))]


def _sweep_cells(result: Result) -> list[tuple[str, str]]:
    table = SweepTable(result)
    base = result.config.get("base", {})
    head = HEADLINES.get(str(base.get("kind")))
    cells = [
        ("markdown", _intro(f"privlab: sweep {result.key[:12]}",
                            f"A stored sweep of `{base.get('kind')}` runs over "
                            f"{', '.join(f'`{p}`' for p in table.grid) or 'seeds'} "
                            f"({len(table.rows)} points; key `{result.key}`).", "privlab.sweep")),
        ("code", _IMPORTS),
        ("markdown", ("## Config\n\nThe sweep: its base config, grid and seeds (where its points "
                     "run, `executor`, changes no number).")),
        ("code", _yaml_literal("CONFIG", result.config)),
        ("code", ("sweep = privlab.sweep(CONFIG)\n"
                 "print(f\"sweep {sweep.key[:12]}: {len(sweep.rows)} points, \"\n"
                 "      + (\"all read from the result store\" if sweep.points_run == 0\n"
                 "         else f\"{sweep.points_run} recomputed and stored\"))\n"
                 "sweep.to_frame()")),
        ("markdown", "## Headline numbers"),
        ("code", _HEADLINE.format(var="sweep")),
    ]
    if head is not None and head.utility in table.metric_names and head.attack in table.metric_names:
        cells += [("markdown", "## Figures"),
                  ("code", f"UTILITY, ATTACK = {head.utility!r}, {head.attack!r}\n" + _SWEEP_PLOT)]
    return cells + [("markdown", "## Check"),
                    ("code", _check("sweep", "sweep.points_run == 0", headline(table)))]


def _comparison_cells(spec: ComparisonSpec, cmp: Comparison) -> list[tuple[str, str]]:
    names = ", ".join(c.name for c in cmp.curves)
    return [
        ("markdown", _intro(f"privlab: comparison on {spec.data}",
                            f"A comparison of defenses against `{spec.family}` attacks on "
                            f"`{spec.data}`: {names}; `{spec.utility}` against `{spec.privacy}`, "
                            f"seeds {list(spec.seeds)}.", "privlab.compare")),
        ("code", _IMPORTS),
        ("markdown", ("## Comparison\n\nWhat is compared (the same mapping "
                     "`privlab.compare` takes; `executor` says where missing points run).")),
        ("code", _yaml_literal("SPEC", spec_to_dict(spec))),
        ("code", ("comparison = privlab.compare(SPEC)\n"
                 "print(f\"{comparison.points_cached} points read from the result store, \"\n"
                 "      f\"{comparison.points_run} recomputed and stored\")")),
        ("markdown", "## Headline numbers"),
        ("code", _HEADLINE.format(var="comparison")),
        ("markdown", "## Figures"),
        ("code", _COMPARE_PLOT),
        ("markdown", "## Check"),
        ("code", _check("comparison", "comparison.points_run == 0", headline(cmp))),
    ]


def notebook_for(target: Target, *, store: Any) -> Any:
    """An nbformat v4 notebook recreating ``target`` (a stored run or sweep key, or a
    ComparisonSpec whose points are stored, read from ``store``; or the stored Result or
    assembled Comparison a caller holds already). Raises LookupError for a key not
    stored, :class:`core.runs.compare.MissingPoints` for a comparison not fully stored."""
    import nbformat

    if isinstance(target, Comparison):  # held already (a bundle, a page): not read again
        cells = _comparison_cells(target.spec, target)
    elif isinstance(target, Result) and target.key:
        cells = _sweep_cells(target) if target.kind == "sweep" else _run_cells(target)
    else:
        target = target_of(target)
        if isinstance(target, ComparisonSpec):
            cells = _comparison_cells(target, read_comparison(target, store, imported=True))
        else:
            result = _stored(target, store)
            cells = _sweep_cells(result) if result.kind == "sweep" else _run_cells(result)
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[v4.new_markdown_cell(src) if kind == "markdown"
                                else v4.new_code_cell(src) for kind, src in cells])
    nb.metadata.update({"kernelspec": {"name": "python3", "display_name": "Python 3",
                                       "language": "python"},
                        "language_info": {"name": "python"}})
    return nb


def to_script(nb: Any) -> str:
    """A notebook's cells as a ``# %%`` script (markdown as comments); a figure cell's last
    line ``fig`` shows it in a notebook and does nothing in a script."""
    parts = []
    for cell in nb.cells:
        src = cell.source.rstrip()
        if cell.cell_type == "markdown":
            parts.append("# %% [markdown]\n" + "\n".join(f"# {ln}".rstrip() for ln in src.splitlines()))
        else:
            parts.append("# %%\n" + src)
    return "\n\n".join(parts) + "\n"


def script_for(target: Target, *, store: Any) -> str:
    """:func:`notebook_for`'s cells as a Python script."""
    return to_script(notebook_for(target, store=store))


# ---------------------------------------------------------------------------------------------
# running one


def execute(nb: Any, *, store: Any = None, timeout: int = 600, cwd: str | Path | None = None) -> Any:
    """Run every cell of ``nb`` headless (nbclient) and return the executed copy; a failing
    cell (the check's AssertionError) raises ``nbclient.exceptions.CellExecutionError``.

    The kernel is this interpreter (``sys.executable``, whatever kernels are installed) with
    this checkout first on its path, so it imports the same engine (same fingerprint, hence
    the same cache keys); ``store``: the result store it reads and writes (its ``root``;
    default ``$PRIVLAB_CACHE_DIR`` as set)."""
    import copy

    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    class _ThisPython(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f",
                                    "{connection_file}"],
                              display_name="Python (privlab)", language="python")

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH")) if p)
    if store is not None:
        env["PRIVLAB_CACHE_DIR"] = str(store.root)
    nb = copy.deepcopy(nb)
    sockets = tempfile.mkdtemp(prefix="privlab-kernel-")
    # IPC sockets: local only, and ipykernel warns (into the last cell's output) about TCP
    # without encryption
    km = KernelManager(kernel_name="python3", kernel_spec_manager=_ThisPython(), transport="ipc",
                       ip=str(Path(sockets) / "kernel"))
    client = NotebookClient(nb, km=km, timeout=timeout,
                            resources={"metadata": {"path": str(cwd or Path.cwd())}})
    try:
        client.execute(env=env)
    finally:  # nbclient leaves a kernel manager it was handed running
        if km.has_kernel:
            km.shutdown_kernel(now=False)
        shutil.rmtree(sockets, ignore_errors=True)
    return nb

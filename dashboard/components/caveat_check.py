"""Does every caveat a run can raise reach its page? (issue #20 item 3; the test of
``tests/test_caveats.py`` and the lead's benchmark call :func:`caveat_keys_rendered`.)

For each experiment kind: open its page in AppTest, take the config the page builds, run it
shrunk to seconds (:data:`TINY`: fewer epochs, rows, targets; the same attacks and defense),
then for each scenario move the Result's numbers so that the registered detectors raise the
kind's caveats (:data:`SCENARIOS`; the explicit ones are raised as a runner raises them), and
draw the page with that Result. A key counts as *rendered* when its sentence is on the page,
and as *beside* when its flag is drawn on a metric tile, in a table cell, on a plot or in the
caption right under a tile or plot (:mod:`dashboard.components.caveats`).
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dashboard" / "app.py")

PAGES = {"membership": "views/membership.py", "gradient_leakage": "views/reconstruction.py",
         "repr_reconstruction": "views/repr_reconstruction.py",
         "attribute_privacy": "views/attribute_privacy.py", "property": "views/property.py",
         "fisher_information": "views/fisher_information.py"}

#: overrides that shrink a page's config to a seconds-long run (same attacks and defense)
TINY: dict[str, dict[str, Any]] = {
    "membership": {"data": {"name": "digits"}, "train": {"members": 80, "epochs": 5},
                   "attack": {"shadows": 4, "targets": 2, "rmia_references": 1},
                   "projection_points": 0},
    "gradient_leakage": {"data": {"name": "digits"}, "train": {"epochs": 1},
                         "attack": {"targets": 2, "iterations": 20, "model_inversion": False}},
    "repr_reconstruction": {"data": {"name": "digits"},
                            "train": {"epochs": 2, "max_train": 400, "representation_dim": 16},
                            "attack": {"targets": 6, "fresh_epochs": 2,
                                       "inversion_iterations": 10}},
    "attribute_privacy": {"fl": {"rounds": 2}, "projection_points": 0},
    "property": {"data": {"name": "digits", "private_attribute": "parity"},
                 "subsets": {"size_min": 8, "size_max": 40, "train_per_bin": 40,
                             "aux_per_bin": 40, "test_per_bin": 20},
                 "train": {"epochs": 4, "pretrain_epochs": 2}, "attack": {"mlp_epochs": 30},
                 "projection_points": 0},
    "fisher_information": {"data": {"name": "digits"}, "irfil": {"iterations": 3},
                           "attack": {"noise_trials": 4, "crb_trials": 200}},
}


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


Patch = Callable[[Any], list[dict[str, Any]]]


def _m(result: Any, **values: float) -> None:
    result.metrics.update({k: float(v) for k, v in values.items()})


def _membership(r: Any) -> list[dict[str, Any]]:
    from core.foundation.caveats import raised

    _m(r, epsilon_accountant=math.inf, h_u_given_r_bits=0.8, bound_mia_paper=0.7,
       bound_mia_exact=0.75, audit_epsilon_lower=2.06, audit_confidence=0.95)
    # a white-box audit of a defense without a DP claim (its ε depends on the canary norm)
    r.info["audit"] = {"kind": "white_box", "claimed": False, "canary_norm": 1.0}
    a = r.config["attack"]["attackers"][0]
    names = [f"mia_{a}_{s}" for s in ("auc", "adv", "bacc", "tpr_at_1pct_fpr",
                                      "tpr_at_0p1pct_fpr")]
    return [raised("accountant_fallback", ["epsilon_accountant"],
                   "PRV accountant too costly at this ε and step count: RDP used instead "
                   "(looser by design)."),
            raised("mia_scores_nonfinite", names, f"{a}: 3 of 320 membership scores were NaN "
                   "or infinite (a diverged model's loss) and are left out of its scores.",
                   attack=a)]


def _gradient_bounds(r: Any) -> list[dict[str, Any]]:
    from core.attacks.protocol import attack_part
    from core.foundation.caveats import raised

    q = (1 / 255) ** 2 / 12
    _m(r, bound_thm1_round=q / 2, bound_thm1_total=q / 1e3, bound_quantization_floor=q,
       bound_thm1_round_vacuous=1, bound_thm1_total_vacuous=1, bound_below_count=1,
       bound_thm1_mean_below=0, bound_wiener_mmse=0.01, epsilon_accountant=math.inf)
    r.info["channel"] = {"kind": "laplace"}
    name = r.config["attack"]["attackers"][0]
    part = attack_part(name, "gradient_leakage")
    return [raised("recon_nonfinite_restart",
                   [part.metric_name(s) for s in ("mse", "psnr", "psnr_median", "ssim")],
                   f"{part.title}: 1 target(s) re-initialised after a non-finite loss; their "
                   "scores are from the restarted optimisation."),
            raised("accountant_fallback", ["epsilon_accountant"],
                   "PRV accountant too costly at this ε and step count: RDP used instead.")]


def _gradient_no_floor(r: Any) -> list[dict[str, Any]]:
    for n in [n for n in r.metrics if n.startswith(("bound_thm1", "bound_below"))]:
        del r.metrics[n]
    return []


def _repr(r: Any) -> list[dict[str, Any]]:
    from core.attacks.protocol import attack_part

    _m(r, bound_thm3_l2=0.6, bound_thm3_l2_vacuous=0, bound_thm3_linf=0.0,
       bound_thm3_linf_vacuous=1, bound_thm3_est_linf=0.6, bound_thm3_est_linf_vacuous=0,
       bound_thm3_est_l2=0.0, bound_thm3_est_l2_vacuous=1, bound_thm3_violations=1)
    for a in r.config["attack"]["attackers"]:
        p = attack_part(a, "repr_reconstruction")
        _m(r, **{p.metric_name("frac_l2_ge_eta"): 0.2, p.metric_name("frac_linf_ge_eta"): 0.2})
    return []


def _attribute(r: Any) -> list[dict[str, Any]]:
    _m(r, bound_thm2_valid=1, bound_thm2_exact=0.55, bound_thm2_paper=0.6, attack_acc_best=0.9,
       h_u_given_r_bits=0.9, bound_thm1_rhs=-0.2, bound_thm1_vacuous=1,
       representation_nonfinite_frac=0.05, tpr_at_0p1pct_fpr=0.01)
    r.intervals.setdefault("attack_auc_best", {"lo": 0.5, "hi": 0.7, "n": 400.0})
    r.intervals["attack_auc_best"]["n"] = 400.0
    return []


def _attribute_not_binary(r: Any) -> list[dict[str, Any]]:
    _m(r, bound_thm1_rhs=math.nan)
    return []


def _property(r: Any) -> list[dict[str, Any]]:
    _m(r, bound_pia_fano=1.0, bound_pia_fano_exact=0.3, bound_pia_vacuous=1, property_acc_best=0.6)
    return []


def _fil_logistic(r: Any) -> list[dict[str, Any]]:
    r.config = _merge(r.config, {"model": {"model": "logistic"}, "target": "label"})
    r.info["max_norm"] = 2.0
    # a logistic run has no closed-form Cramér–Rao panel
    for k in [k for k in r.artifacts if k.startswith("crb_")]:
        del r.artifacts[k]
    return []


def _fil_least_squares(r: Any) -> list[dict[str, Any]]:
    r.config = _merge(r.config, {"model": {"model": "least_squares"}})
    return []


#: (kind, scenario name, patch of the Result returning the explicit caveats)
SCENARIOS: list[tuple[str, str, Patch]] = [
    ("membership", "dp accounting and Inf2Guard Theorem 1", _membership),
    ("gradient_leakage", "vacuous floors, a point below, Laplace", _gradient_bounds),
    ("gradient_leakage", "no floor", _gradient_no_floor),
    ("repr_reconstruction", "Theorem 3 on images", _repr),
    ("attribute_privacy", "bounds exceeded, vacuous, diverged", _attribute),
    ("attribute_privacy", "Theorem 1 not binary", _attribute_not_binary),
    ("property", "K-ary bound", _property),
    ("fisher_information", "logistic on the label", _fil_logistic),
    ("fisher_information", "least squares", _fil_least_squares),
]


class _Patched:
    """``run_with_progress`` and ``peek`` of :mod:`dashboard.base.widgets` replaced while a page
    draws: the page's own config is recorded, and ``result`` is what its run returns."""

    def __init__(self, kind: str) -> None:
        self.kind, self.result, self.config = kind, None, None

    def __enter__(self) -> _Patched:  # noqa: PYI034
        import dashboard.base.widgets as w

        self._saved = (w.run_with_progress, w.peek)

        def run_with_progress(config: Any, **kw: Any) -> Any:
            c = config if isinstance(config, Mapping) else config.model_dump(mode="json")
            if c.get("kind") != self.kind:
                return None
            self.config = self.config or dict(c)
            return self.result

        w.run_with_progress = run_with_progress
        w.peek = lambda config: None
        return self

    def __exit__(self, *exc: object) -> None:
        import dashboard.base.widgets as w

        w.run_with_progress, w.peek = self._saved


def _page_text(at: Any) -> tuple[str, str]:
    """(all visible text, the text of the places beside a number: tile labels, table cells,
    plots, and the captions a tile or plot draws under itself)."""
    everywhere, beside = [], []
    for kind in ("markdown", "caption", "warning", "info", "error", "success", "title",
                 "subheader", "header"):
        for e in at.get(kind):
            everywhere.append(str(e.value))
            if kind == "caption" and "⚠" in str(e.value):
                beside.append(str(e.value))
    for m in at.metric:
        everywhere.append(f"{m.label} {m.value}")
        beside.append(m.label)
    for d in [*at.dataframe, *at.table]:
        cells = d.value.astype(str).to_string()
        everywhere.append(cells)
        beside.append(cells)
    for c in at.get("plotly_chart"):
        spec = json.dumps(c.proto.spec if hasattr(c, "proto") else "", ensure_ascii=False)
        beside.append(spec)
    return "\n".join(everywhere), "\n".join(beside)


def _base_result(kind: str, config: Mapping[str, Any]) -> Any:
    from core.foundation.stages import MemoryStageStore
    from core.runs.experiments import run

    cfg = _merge(config, TINY.get(kind, {}))
    return run(cfg, stages=MemoryStageStore())


def caveat_keys_rendered(kinds: list[str] | None = None, *, timeout: int = 120) -> dict[str, Any]:
    """Draw every kind's page with Results carrying its caveats; returns
    ``{caveat_keys_rendered, caveat_keys_beside, caveat_keys_total, missing, not_beside,
    errors, raw_metric_keys_visible}`` over the keys :mod:`core.foundation.caveats` registers (each key
    counted once; the last: raw metric keys seen in the pages' text with those Results)."""
    from streamlit.testing.v1 import AppTest

    from core.foundation import caveats

    kinds = kinds or list(PAGES)
    total = sorted(k for k in caveats.REGISTRY if set(caveats.REGISTRY[k].kinds) & set(kinds))
    from dashboard.base.format import raw_metric_keys_visible

    rendered: set[str] = set()
    raw_keys: set[str] = set()
    beside: set[str] = set()
    errors: list[str] = []
    for kind in kinds:
        with _Patched(kind) as p:
            at = AppTest.from_file(APP, default_timeout=timeout).run()
            at.switch_page(PAGES[kind]).run()
            if p.config is None:
                errors.append(f"{kind}: the page built no {kind} config")
                continue
            base = _base_result(kind, p.config)
            for k2, name, patch in SCENARIOS:
                if k2 != kind:
                    continue
                r = copy.deepcopy(base)
                r.from_cache = True
                explicit = patch(r)
                r.info["caveats"] = caveats.collect(kind, r.metrics, r.info, r.config,
                                                    intervals=r.intervals, explicit=explicit)
                p.result = r
                at.run()
                if at.exception:
                    errors.append(f"{kind} / {name}: {at.exception[0].value}")
                    continue
                text, near = _page_text(at)
                raw_keys.update(raw_metric_keys_visible(text))
                flags = [seg for seg in re.split(r'[\n"]', near) if "⚠" in seg]
                for c in r.info["caveats"]:
                    if c["text"] in text:
                        rendered.add(c["key"])
                    if any(c["label"] in seg for seg in flags):
                        beside.add(c["key"])
    return {"caveat_keys_rendered": len(rendered & set(total)),
            "caveat_keys_beside": len(beside & set(total)),
            "caveat_keys_total": len(total),
            "missing": sorted(set(total) - rendered),
            "not_beside": sorted(set(total) - beside), "errors": errors,
            "raw_metric_keys_visible": sorted(raw_keys)}

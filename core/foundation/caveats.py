"""Every caveat a run can raise, in one registry (issue #20 item 3: every caveat beside its
number).

A caveat qualifies numbers of a Result: which metrics (and, where a page draws them, which
curve region or plot points), a short flag label drawn next to them, and a sentence built from
the Result's own numbers. Runners record the caveats they raise in ``result.info["caveats"]``
(a list of :func:`raised` dicts ``{key, label, metrics, text, where}``) through :func:`collect`;
``info["notes"]`` stays as it was, so results stored before this module still read (the
dashboard calls :func:`of_result`, which re-derives what the numbers allow for them).

Two ways a caveat is raised:

- *derived*: its ``detect`` reads the metrics, info and config (the TPR at 0.1 % FPR from fewer
  than 1,000 non-members, a vacuous bound, measured points below a bound, ...);
- *explicit*: the runner knows a fact no metric holds (an accountant fell back, an inverter
  restarted after a non-finite loss) and passes :func:`raised` dicts to :func:`collect`.

Numerics layer: no imports of attacks, bounds or runs (the quantisation floor and the flags come
from the runner as metrics).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: TPR at a false-positive rate f needs about 1/f negatives before a single false positive moves
#: it (Carlini et al. 2022 report TPR at 0.1 % FPR over tens of thousands of non-members)
MIN_NEGATIVES_0P1 = 1000
#: the ROC region read off fewer than this many false positives is greyed on the plots
FEW_FALSE_POSITIVES = 10

Raised = dict[str, Any]
Detect = Callable[[Mapping[str, float], Mapping[str, Any], Mapping[str, Any]], list[Raised]]


@dataclass(frozen=True)
class Caveat:
    """One caveat: ``key``, the experiment ``kinds`` that can raise it, a short flag ``label``,
    what it ``qualifies`` (in words: metrics, a curve region, plot points) and, for a derived
    caveat, ``detect(metrics, info, config) -> [raised dicts]`` building its sentence."""

    key: str
    kinds: tuple[str, ...]
    label: str
    qualifies: str
    detect: Detect | None = None


REGISTRY: dict[str, Caveat] = {}


def register(c: Caveat) -> Caveat:
    if c.key in REGISTRY and REGISTRY[c.key] != c:
        raise ValueError(f"caveat {c.key!r} is registered already")
    REGISTRY[c.key] = c
    return c


def raised(key: str, metrics: Iterable[str], text: str, *, label: str | None = None,
           **where: Any) -> Raised:
    """One raised caveat of registered ``key``: the metric names it qualifies, its sentence and
    where on a plot it applies (``curve``, ``fpr_max``, ``points``, ...); ``label`` replaces the
    registered flag where a family names the thing differently."""
    if key not in REGISTRY:
        raise KeyError(f"caveat: got {key!r}; registered: {', '.join(sorted(REGISTRY))}")
    return {"key": key, "label": label or REGISTRY[key].label, "metrics": list(metrics), "text": text,
            "where": dict(where)}


def keys_for(kind: str) -> list[str]:
    """The caveat keys a run of ``kind`` can raise."""
    return [k for k, c in REGISTRY.items() if kind in c.kinds]


def all_kinds() -> list[str]:
    return sorted({k for c in REGISTRY.values() for k in c.kinds})


def collect(kind: str, metrics: Mapping[str, float], info: Mapping[str, Any],
            config: Mapping[str, Any], *, intervals: Mapping[str, Any] | None = None,
            explicit: Iterable[Raised] = ()) -> list[Raised]:
    """Every caveat of a run of ``kind``: the derived ones of the registry, then the runner's
    explicit ones (each key's entries kept once per distinct text). The detectors read the
    intervals (how many rows a rate is over) as ``info["_intervals"]``."""
    out: list[Raised] = []
    seen_info = {**info, "_intervals": dict(intervals or {})}
    for c in REGISTRY.values():
        if kind in c.kinds and c.detect is not None:
            try:
                out.extend(c.detect(metrics, seen_info, config))
            except (KeyError, TypeError, ValueError, IndexError):
                # an older Result missing a field: that caveat cannot be derived from it
                continue
    seen = {(r["key"], r["text"]) for r in out}
    for r in explicit:
        if (r["key"], r["text"]) not in seen:
            out.append(r)
            seen.add((r["key"], r["text"]))
    return out


def of_result(result: Any) -> list[Raised]:
    """``result.info["caveats"]``, or for a Result stored before caveats were recorded, the
    caveats its numbers allow deriving."""
    got = (result.info or {}).get("caveats")
    if got is not None:
        return list(got)
    return collect(result.kind, result.metrics, result.info or {}, result.config or {},
                   intervals=getattr(result, "intervals", None))


def for_metric(caveats: Iterable[Raised], name: str) -> list[Raised]:
    """The raised caveats that qualify metric ``name``."""
    return [c for c in caveats if name in c.get("metrics", ())]


# --------------------------------------------------------------------------------------------
# helpers reading numbers


def _m(metrics: Mapping[str, float], name: str) -> float | None:
    v = metrics.get(name)
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else v


def _flag(metrics: Mapping[str, float], name: str) -> bool:
    v = _m(metrics, name)
    return v is not None and v >= 0.5


def _g(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}g}"


def _attack_title(family: str, name: str) -> str:
    from core.foundation.parts import attack_by_config_name

    try:
        return attack_by_config_name(family, name).title
    except Exception:  # noqa: BLE001 - an attack unregistered since the run: its raw name
        return name


def _attack_metric(family: str, name: str, stat: str) -> str:
    from core.foundation.parts import attack_by_config_name

    return attack_by_config_name(family, name).metric_name(stat)


# --------------------------------------------------------------------------------------------
# membership and attribute privacy: rates at a low false-positive rate


def _few_nonmembers(metrics, info, config) -> list[Raised]:
    out = []
    scored = info.get("scored") or {}
    flagged_values = []
    for a in (config.get("attack") or {}).get("attackers", []):
        n = scored.get(a)
        if not n or int(n[1]) >= MIN_NEGATIVES_0P1:
            continue
        neg = int(n[1])
        name = f"mia_{a}_tpr_at_0p1pct_fpr"
        flagged_values.append(_m(metrics, name))
        out.append(raised(
            "tpr_0p1pct_few_negatives", [name],
            f"{_attack_title('membership', a)}: TPR at 0.1 % FPR read from {neg:,} non-members "
            f"(fewer than {MIN_NEGATIVES_0P1:,}): 0.1 % of them is {neg / 1000:.2g} false "
            "positives, so the rate rests on the ROC's first step and is not meaningful; "
            "pool more target models or score more non-members.",
            curve="roc", attack=a, negatives=neg,
            fpr_max=max(1e-3, FEW_FALSE_POSITIVES / max(neg, 1))))
    # the best rate over the attacks inherits the caveat of each flagged attack it equals
    best = _m(metrics, "mia_tpr_at_0p1pct_fpr_best")
    for r, v in zip(out, flagged_values):
        if best is not None and v == best:
            r["metrics"].append("mia_tpr_at_0p1pct_fpr_best")
    return out


def _few_test_rows(metrics, info, config) -> list[Raised]:
    """Attribute privacy: the strongest attacker's TPR at 0.1 % FPR over the test rows whose
    attribute is 0 (the negatives), fewer than all test rows."""
    iv = (info.get("_intervals") or {}).get("attack_auc_best") or {}
    n = iv.get("n")
    if _m(metrics, "tpr_at_0p1pct_fpr") is None or n is None or int(n) >= MIN_NEGATIVES_0P1:
        return []
    n = int(n)
    # an attribute guess has negatives (attribute 0), not non-members
    return [raised("tpr_0p1pct_few_negatives", ["tpr_at_0p1pct_fpr"],
                   f"TPR at 0.1 % FPR read from at most {n:,} test rows (fewer than "
                   f"{MIN_NEGATIVES_0P1:,} negatives): 0.1 % of them is under one false "
                   "positive, so the rate rests on the ROC's first step and is not meaningful.",
                   label="few negatives", curve="roc", negatives=n,
                   fpr_max=max(1e-3, FEW_FALSE_POSITIVES / max(n, 1)))]


def _few_any(metrics, info, config) -> list[Raised]:
    return (_few_nonmembers(metrics, info, config) if "scored" in info
            else _few_test_rows(metrics, info, config))


register(Caveat("tpr_0p1pct_few_negatives", ("membership", "attribute_privacy"),
                "few non-members",
                "TPR at 0.1 % FPR (per attack and best); the ROC below FPR 10/n", _few_any))


# --------------------------------------------------------------------------------------------
# DP accounting


def _dp_no_noise(metrics, info, config) -> list[Raised]:
    eps = metrics.get("epsilon_accountant")
    if eps is None or not (math.isinf(float(eps)) and float(eps) > 0):
        return []
    return [raised("dp_no_noise", ["epsilon_accountant"],
                   "noise multiplier 0: DP-SGD clips but adds no noise, so ε = ∞ (no "
                   "guarantee); the clipped upload is a deterministic function of the data.")]


register(Caveat("dp_no_noise", ("membership", "gradient_leakage"), "ε = ∞",
                "the accountant's ε", _dp_no_noise))
def _audit_canary_norm(metrics, info, config) -> list[Raised]:
    audit = info.get("audit") or {}
    if "audit_epsilon_lower" not in metrics or audit.get("kind") != "white_box" \
            or audit.get("claimed", True) or "canary_norm" not in audit:
        return []
    c = float(audit["canary_norm"])
    return [raised("audit_canary_norm", ["audit_epsilon_lower"],
                   f"this defense claims no DP guarantee: its audited ε comes from gradient "
                   f"canaries of norm C = {c:g}, a choice of the audit, not of the defense (a "
                   "larger C stands out more); audited ε of such defenses are not a privacy "
                   "ranking between them.", canary_norm=c)]


register(Caveat("audit_canary_norm", ("membership", "gradient_leakage"), "depends on canary norm",
                "the audited ε of a defense without a DP claim (white-box canaries)",
                _audit_canary_norm))
register(Caveat("mia_scores_nonfinite", ("membership",), "scores dropped",
                "an attack's membership scores (explicit: NaN/inf scores left out)"))
register(Caveat("accountant_fallback", ("membership", "gradient_leakage"),
                "accountant fallback", "the accountant's ε (explicit: the DP-SGD run's reason)"))


# --------------------------------------------------------------------------------------------
# Inf2Guard Theorem 1 (membership) at an estimated H(u|r)


def _inf2guard_thm1(metrics, info, config) -> list[Raised]:
    exact = _m(metrics, "bound_mia_exact")
    if exact is None:
        return []
    h, paper = _m(metrics, "h_u_given_r_bits"), _m(metrics, "bound_mia_paper")
    text = (f"Inf2Guard Theorem 1 at Ĥ(u|r) = {_g(h)} bits, the representation attacker's "
            "cross-entropy: an upper estimate of H(u|r), so the bounds (membership accuracy ≤ "
            f"{_g(exact)} tight, ≤ {_g(paper)} paper form) are optimistic estimates, not "
            "certificates.")
    b = _m(metrics, "mia_representation_bacc")
    if b is not None and b > exact:
        text += f" The measured balanced accuracy {b:.3f} exceeds the tight bound."
    return [raised("inf2guard_thm1_estimate",
                   ["bound_mia_exact", "bound_mia_paper", "h_u_given_r_bits"], text)]


register(Caveat("inf2guard_thm1_estimate", ("membership",), "estimate",
                "Inf2Guard Theorem 1 bounds on membership accuracy", _inf2guard_thm1))


# --------------------------------------------------------------------------------------------
# gradient leakage: Theorem 1 of the κ paper


def _thm1_heuristic(metrics, info, config) -> list[Raised]:
    if _m(metrics, "bound_thm1_round") is None:
        return []
    return [raised("thm1_gaussian_plugin", ["bound_thm1_round", "bound_thm1_total"],
                   "Theorem 1's floor uses the Gaussian plug-in for the data's entropy h(D) "
                   "(the geometric mean of the eigenvalues): exact for Gaussian data, an "
                   "optimistic heuristic for real images, whose entropy is at most the "
                   "Gaussian one.", plot="mse_vs_kappa")]


def _thm1_vacuous(metrics, info, config) -> list[Raised]:
    out = []
    q = _m(metrics, "bound_quantization_floor")
    qtext = f"the 8-bit quantisation floor Δ²/12 = {q:.3g}" if q is not None else \
        "the 8-bit quantisation floor Δ²/12"
    r = _m(metrics, "bound_thm1_round")
    if _flag(metrics, "bound_thm1_round_vacuous") and r is not None:
        out.append(raised("thm1_vacuous", ["bound_thm1_round"],
                          f"the per-round floor {r:.3g} is at or below {qtext}: a "
                          "reconstruction that close is indistinguishable from perfect, so "
                          "the bound excludes nothing.", plot="mse_vs_kappa", which="round"))
    t = _m(metrics, "bound_thm1_total")
    if _flag(metrics, "bound_thm1_total_vacuous") and t is not None:
        why = (f"at or below {qtext}" if q is not None and t <= q
               else "under 1e-6 of the per-round floor")
        out.append(raised("thm1_vacuous", ["bound_thm1_total"],
                          f"the whole-run floor {t:.3g} is {why}: over every round the "
                          "information adds up and Theorem 1 excludes nothing an attacker "
                          "could reach.", plot="mse_vs_kappa", which="total"))
    return out


def _thm1_below(metrics, info, config) -> list[Raised]:
    c = _m(metrics, "bound_below_count")
    mean_below = _flag(metrics, "bound_thm1_mean_below")
    b = _m(metrics, "bound_thm1_round")
    if b is None or not (c or mean_below):
        return []
    n = (info.get("_intervals") or {}).get("recon_best_mse", {}).get("n")
    mse = _m(metrics, "recon_best_mse")
    of = f" of {int(n)}" if n else ""
    text = (f"{int(c or 0)}{of} targets reconstruct below Theorem 1's per-round floor "
            f"{b:.3g}. The theorem bounds the expected MSE over the data and the noise, not "
            "each image: ")
    if mean_below:
        text += (f"here the mean {_g(mse)} lies below it too, a real miss of the bound as "
                 "applied: its Gaussian plug-in for h(D) exceeds the entropy of real images, "
                 "so the floor it computes is too high for them.")
    else:
        text += (f"the mean over the targets, {_g(mse)}, stays above it, so single images "
                 "below are shown, not counted.")
    return [raised("thm1_points_below", ["recon_best_mse", "bound_below_count",
                                         "bound_thm1_round"], text, plot="mse_vs_kappa",
                   points=int(c or 0), mean_below=bool(mean_below))]


def _thm1_no_floor(metrics, info, config) -> list[Raised]:
    if _m(metrics, "bound_thm1_round") is not None or "steps" not in metrics:
        return []
    kind = (config.get("defense") or {}).get("kind", "none")
    return [raised("thm1_no_floor", ["bound_thm1_round"],
                   f"defense {kind!r} bounds no information: the upload is a deterministic "
                   "function of the data (or noise-free), so Theorem 1 gives no MSE floor.",
                   plot="mse_vs_kappa")]


def _wiener_laplace(metrics, info, config) -> list[Raised]:
    ch = (info.get("channel") or {})
    if not isinstance(ch, Mapping) or ch.get("kind") != "laplace" \
            or _m(metrics, "bound_wiener_mmse") is None:
        return []
    return [raised("wiener_linear_laplace", ["bound_wiener_mmse"],
                   "Laplace noise: the Wiener MMSE is the linear MMSE at the noise's variance; "
                   "for non-Gaussian noise the Bayes error can be lower.")]


register(Caveat("thm1_gaussian_plugin", ("gradient_leakage",), "heuristic",
                "Theorem 1's per-round and whole-run MSE floors", _thm1_heuristic))
register(Caveat("thm1_vacuous", ("gradient_leakage",), "vacuous",
                "Theorem 1's per-round or whole-run floor (the MSE-vs-κ plot)", _thm1_vacuous))
register(Caveat("thm1_points_below", ("gradient_leakage",), "below the bound",
                "the measured MSEs against Theorem 1's floor (points on the MSE-vs-κ plot)",
                _thm1_below))
register(Caveat("thm1_no_floor", ("gradient_leakage",), "no floor",
                "Theorem 1's floor (absent)", _thm1_no_floor))
register(Caveat("wiener_linear_laplace", ("gradient_leakage",), "linear MMSE",
                "the Wiener MMSE", _wiener_laplace))
register(Caveat("recon_nonfinite_restart", ("gradient_leakage",), "restarted",
                "an inverter's scores (explicit: targets re-initialised after a non-finite "
                "loss)"))


# --------------------------------------------------------------------------------------------
# representation reconstruction: Theorem 3 of Inf2Guard


NORMS = ("l2", "linf")
NORM_TEXT = {"l2": "ℓ2", "linf": "ℓ∞"}


def _recon_names(metrics, config) -> list[str]:
    return list((config.get("attack") or {}).get("attackers", []))


def _thm3_uniform(metrics, info, config) -> list[Raised]:
    if _m(metrics, "bound_thm3_l2") is None and _m(metrics, "bound_thm3_linf") is None:
        return []
    h = _m(metrics, "bound_thm3_data_entropy_nats")
    v = int(_m(metrics, "bound_thm3_violations") or 0)
    text = ("Theorem 3 as stated assumes x uniform on [0, 1]^d (the proof's Fano step); images "
            "are far from uniform"
            + (f" (their estimated entropy h(x) ≈ {h:.1f} nats, against 0 for the uniform "
               "prior)" if h is not None else "")
            + f", so the uniform-prior bound is not a bound for them: {v} (attacker, norm) "
            "pairs measured below it. The page draws it under the data's estimated entropy "
            "instead.")
    return [raised("thm3_uniform_prior", ["bound_thm3_l2", "bound_thm3_linf",
                                          "bound_thm3_violations"], text, plot="thm3")]


def _thm3_below(metrics, info, config, est: bool) -> list[Raised]:
    out = []
    pre = "bound_thm3_est_" if est else "bound_thm3_"
    for norm in NORMS:
        b = _m(metrics, f"{pre}{norm}")
        if b is None or _flag(metrics, f"{pre}{norm}_vacuous"):
            continue
        for a in _recon_names(metrics, config):
            name = _attack_metric("repr_reconstruction", a, f"frac_{norm}_ge_eta")
            frac = _m(metrics, name)
            if frac is None or not frac < b:
                continue
            title = _attack_title("repr_reconstruction", a)
            if est:
                text = (f"{title} ({NORM_TEXT[norm]}): {frac:.0%} of errors ≥ η, below the "
                        f"entropy-form bound {b:.0%}. That bound is an upper estimate (h(x) "
                        "from the Gaussian maximum-entropy value, I from an upper estimate), "
                        "so a point below it is not conclusive.")
            else:
                text = (f"{title} ({NORM_TEXT[norm]}): {frac:.0%} of errors ≥ η, below the "
                        f"uniform-prior bound {b:.0%}: the theorem assumes x uniform on "
                        "[0, 1]^d, which images are not, and I is an estimate.")
            out.append(raised("thm3_est_points_below" if est else "thm3_points_below",
                              [name, f"{pre}{norm}"], text, plot="thm3", attack=a, norm=norm))
    return out


def _thm3_estimate(metrics, info, config) -> list[Raised]:
    if _m(metrics, "bound_thm3_est_l2") is None and _m(metrics, "bound_thm3_est_linf") is None:
        return []
    h = _m(metrics, "bound_thm3_data_entropy_nats")
    mi = _m(metrics, "bound_thm3_mi_nats")
    return [raised("thm3_estimate", ["bound_thm3_est_l2", "bound_thm3_est_linf",
                                     "bound_thm3_mi_nats"],
                   "Theorem 3 recomputed under the data's estimated entropy h(x) ≈ "
                   f"{_g(h, 4)} nats (dequantised pixels, Gaussian maximum-entropy value: an "
                   "upper estimate of h) and I(x; r + δ) ≤ "
                   f"{_g(mi, 4)} nats (an upper estimate from the measured variances): an "
                   "estimate of the bound, not a certificate.", plot="thm3")]


def _thm3_vacuous(metrics, info, config) -> list[Raised]:
    names = [f"{pre}{n}" for pre in ("bound_thm3_", "bound_thm3_est_") for n in NORMS
             if _flag(metrics, f"{pre}{n}_vacuous")]
    if not names:
        return []
    if _m(metrics, "bound_thm3_mi_nats") is None:
        why = "I(x; r) is unbounded without noise"
    else:
        why = f"I(x; r + δ) ≈ {_g(_m(metrics, 'bound_thm3_mi_nats'))} nats is too large"
    which = ", ".join(f"{NORM_TEXT[n.rsplit('_', 1)[-1]]} "
                      + ("under the data's entropy" if "_est_" in n else "with x uniform")
                      for n in names)
    return [raised("thm3_vacuous", names,
                   f"Theorem 3 says nothing here ({which}): {why}, so the bound on "
                   "Pr(error ≥ η) is ≤ 0.", plot="thm3")]


register(Caveat("thm3_uniform_prior", ("repr_reconstruction",), "assumes uniform x",
                "Theorem 3's uniform-prior bounds", _thm3_uniform))
register(Caveat("thm3_points_below", ("repr_reconstruction",), "below the bound",
                "measured shares of errors ≥ η below the uniform-prior bound (plot points)",
                lambda m, i, c: _thm3_below(m, i, c, est=False)))
register(Caveat("thm3_estimate", ("repr_reconstruction",), "estimate",
                "Theorem 3 under the data's estimated entropy", _thm3_estimate))
register(Caveat("thm3_est_points_below", ("repr_reconstruction",), "below the estimate",
                "measured shares below the entropy-form bound (plot points)",
                lambda m, i, c: _thm3_below(m, i, c, est=True)))
register(Caveat("thm3_vacuous", ("repr_reconstruction",), "vacuous",
                "Theorem 3's bounds that say nothing", _thm3_vacuous))


# --------------------------------------------------------------------------------------------
# attribute privacy (TAPPFL)


def _tappfl_thm2(metrics, info, config) -> list[Raised]:
    exact = _m(metrics, "bound_thm2_exact")
    if exact is None or _m(metrics, "bound_thm2_valid") == 0:
        return []
    h = _m(metrics, "h_u_given_r_bits")
    return [raised("tappfl_thm2_estimate",
                   ["bound_thm2_paper", "bound_thm2_exact", "h_u_given_r_bits"],
                   f"Theorem 2 at Ĥ(u|r) = {_g(h)} bits, a trained attacker's cross-entropy "
                   "(CE = H + KL ≥ H): the accuracy bounds it gives are optimistic estimates, "
                   "not certificates.", plot="bounds_curve")]


def _tappfl_thm2_exceeded(metrics, info, config) -> list[Raised]:
    exact, acc = _m(metrics, "bound_thm2_exact"), _m(metrics, "attack_acc_best")
    if exact is None or acc is None or not acc > exact or _m(metrics, "bound_thm2_valid") == 0:
        return []
    return [raised("tappfl_thm2_exceeded", ["attack_acc_best", "bound_thm2_exact"],
                   f"The measured accuracy {acc:.3f} exceeds the exact bound {exact:.3f} at Ĥ: "
                   "Ĥ over-estimates H(u|r), so this bound is optimistic here, not a "
                   "certificate.", plot="bounds_curve")]


def _tappfl_thm1(metrics, info, config) -> list[Raised]:
    rhs = _m(metrics, "bound_thm1_rhs")
    if rhs is None:
        if _m(metrics, "n_values") is None:
            return []
        return [raised("tappfl_thm1_not_binary", ["bound_thm1_rhs"],
                       "Theorem 1 is stated for a binary task and a binary attribute; this "
                       "run's are not, so it is not computed.")]
    out = [raised("tappfl_thm1_estimate", ["bound_thm1_rhs", "bound_thm1_adv"],
                  "Theorem 1's right-hand side from estimated ingredients: the empirical Adv "
                  f"{_g(_m(metrics, 'bound_thm1_adv'))} is a lower estimate of the worst-case "
                  "advantage and C_L an upper bound: an estimate of the bound, not a "
                  "certificate.")]
    if _flag(metrics, "bound_thm1_vacuous"):
        out.append(raised("tappfl_thm1_vacuous", ["bound_thm1_rhs"],
                          f"Vacuous at this setting: the right-hand side {rhs:.3f} is ≤ 0 "
                          "(2·R·C_L·Adv "
                          "outweighs Δ(y|u)), so Theorem 1 says nothing about the task error "
                          "here."))
    return out


def _nonfinite(metrics, info, config) -> list[Raised]:
    f = _m(metrics, "representation_nonfinite_frac")
    if not f:
        return []
    return [raised("encoder_nonfinite",
                   ["representation_nonfinite_frac", "utility_acc", "attack_auc_best"],
                   f"the encoder diverged: {100 * f:.1f} % of representation entries are "
                   "NaN/inf (set to 0 before the heads and attackers): utility and attack "
                   "scores read a broken release.")]


register(Caveat("tappfl_thm2_estimate", ("attribute_privacy",), "estimate",
                "Theorem 2's accuracy bounds", _tappfl_thm2))
register(Caveat("tappfl_thm2_exceeded", ("attribute_privacy",), "above the bound",
                "the measured best accuracy against Theorem 2", _tappfl_thm2_exceeded))
register(Caveat("tappfl_thm1_estimate", ("attribute_privacy",), "estimate",
                "Theorem 1's right-hand side", lambda m, i, c: [
                    r for r in _tappfl_thm1(m, i, c) if r["key"] == "tappfl_thm1_estimate"]))
register(Caveat("tappfl_thm1_vacuous", ("attribute_privacy",), "vacuous",
                "Theorem 1's right-hand side", lambda m, i, c: [
                    r for r in _tappfl_thm1(m, i, c) if r["key"] == "tappfl_thm1_vacuous"]))
register(Caveat("tappfl_thm1_not_binary", ("attribute_privacy",), "not computed",
                "Theorem 1 (binary task and attribute only)", lambda m, i, c: [
                    r for r in _tappfl_thm1(m, i, c) if r["key"] == "tappfl_thm1_not_binary"]))
register(Caveat("encoder_nonfinite", ("attribute_privacy",), "encoder diverged",
                "utility and every attack score", _nonfinite))


# --------------------------------------------------------------------------------------------
# property inference


def _pia(metrics, info, config) -> list[Raised]:
    b = _m(metrics, "bound_pia_fano_exact")
    if b is None:
        return []
    src = info.get("bound_from")
    who = _attack_title("property", src) if src else "the best attacker"
    out = [raised("property_bound_estimate", ["bound_pia_fano", "bound_pia_fano_exact"],
                  f"the K-ary bounds at Ĥ(u|R), the lowest attacker cross-entropy "
                  f"({who}): an upper estimate of "
                  "H(u|R), so the bounds are optimistic estimates, not certificates.")]
    if _flag(metrics, "bound_pia_vacuous"):
        out.append(raised("property_bound_vacuous", ["bound_pia_fano", "bound_pia_fano_exact"],
                          "Vacuous at this setting: Ĥ(u|R) ≤ 1 bit, so the K-ary form allows "
                          "accuracy 1 and says nothing; the tight Fano form beside it still "
                          "does."))
    acc = _m(metrics, "property_acc_best")
    if acc is not None and acc > b + 1e-9:
        out.append(raised("property_bound_exceeded", ["property_acc_best", "bound_pia_fano_exact"],
                          f"the measured accuracy {acc:.3f} exceeds the tight bound {b:.3f} at "
                          "Ĥ: Ĥ over-estimates H(u|R) here, so the bound is optimistic, not a "
                          "certificate."))
    return out


for _k, _lab, _q in (("property_bound_estimate", "estimate", "the K-ary property bounds"),
                     ("property_bound_vacuous", "vacuous", "the K-ary property bounds"),
                     ("property_bound_exceeded", "above the bound",
                      "the best property accuracy against the tight bound")):
    register(Caveat(_k, ("property",), _lab, _q,
                    lambda m, i, c, _k=_k: [r for r in _pia(m, i, c) if r["key"] == _k]))


# --------------------------------------------------------------------------------------------
# Fisher information loss


def _fil(metrics, info, config) -> list[Raised]:
    model = (config.get("model") or {}).get("model")
    out = []
    # the ε tile reads "none" where there is no ε: the caveat qualifies it either way
    eps = ["fil_epsilon"]
    if model == "logistic":
        R = info.get("max_norm")
        if R is not None and float(R) > 1 + 1e-9:
            out.append(raised("fil_unit_ball", eps,
                              f"features are not in the unit ball (max ‖x‖ = {float(R):.3g}): "
                              "the sensitivity uses R = max ‖x‖, 2R/(nλ)."))
        out.append(raised("fil_crb_least_squares_only", [],
                          "Cramér–Rao panel: an unbiased reconstruction in closed form exists "
                          "for least squares only (the logistic minimiser is not linear in the "
                          "data)."))
    elif model is not None:
        out.append(raised("fil_no_sensitivity", eps,
                          "least squares has no finite L2 sensitivity: no (ε, δ) readout; "
                          "FIL's η needs no such bound."))
    from core.foundation.parts import attack_by_config_name, config_names

    known = set(config_names("fisher_information"))
    # an attack unregistered since the run raises nothing
    for a in [a for a in (config.get("attack") or {}).get("attackers", []) if a in known]:
        p = attack_by_config_name("fisher_information", a)
        if config.get("target") == "label" and "labels" in p.needs:
            out.append(raised("fil_label_degenerate", [p.metric_name("acc")],
                              f"on the label the {p.title} attack is the model's own "
                              "prediction of a training row: it measures training accuracy, "
                              "not leakage, and is left out of the strongest attack."))
        if model == "logistic" and "training_data" in p.needs:
            out.append(raised("fil_newton_step", [p.metric_name("acc")],
                              f"logistic regression: the {p.title} attack's candidate models "
                              "are one Newton step from the release (an approximation; least "
                              "squares is exact)."))
    return out


#: the FIL-LiRA numbers (issue #22) a LiRA setup caveat qualifies
FIL_LIRA_METRICS = ("fil_lira_auc", "fil_lira_spearman", "fil_lira_top_tpr_plain",
                    "fil_lira_top_tpr_irfil", "fil_lira_top_score_plain",
                    "fil_lira_top_score_irfil", "fil_lira_top_overlap_eta")


def _fil_lira(metrics, info, config) -> list[Raised]:
    """How LiRA attacked the FIL release (the runner's sentence, ``info["fil_lira_setup"]``):
    shadows fitted on train ∪ test, their variance, the draws scored, who counts as member."""
    text = info.get("fil_lira_setup")
    if not text or "fil_lira_auc" not in metrics:
        return []
    return [raised("fil_lira_setup", [n for n in FIL_LIRA_METRICS if n in metrics], str(text))]


register(Caveat("fil_lira_setup", ("fisher_information",), "LiRA setup",
                "the FIL-LiRA numbers (AUC, η–score ρ, the most exposed rows)", _fil_lira))

for _k, _lab, _q in (("fil_unit_ball", "R > 1", "the FIL release's DP ε"),
                     ("fil_no_sensitivity", "no ε", "the FIL release's DP ε"),
                     ("fil_crb_least_squares_only", "least squares only", "the Cramér–Rao panel"),
                     ("fil_label_degenerate", "training accuracy", "a label attack's accuracy"),
                     ("fil_newton_step", "approximation", "a refitting attack's accuracy")):
    register(Caveat(_k, ("fisher_information",), _lab, _q,
                    lambda m, i, c, _k=_k: [r for r in _fil(m, i, c) if r["key"] == _k]))

"""DP-SGD that trains, its ε grid, and claimed against audited ε (issue #22 items 2–3, issue #20's
DP-SGD default). Not registered in :data:`benchmarks.BENCHMARKS` (minutes on 2 cores); run it as
``PYTHONPATH=. python benchmarks/dpsgd_recipe.py [--quick] [--part utility|audit|all]
[--out FILE.json]``. It follows the benchmark convention (``main(quick) -> dict`` with a
``headline``), so registering it is one line.

**Utility** on the Membership default (mnist5k, 500 members, the undefended model trained with
Adam 1e-3, batches of 64, 60 epochs) and the Compare teaching preset (digits, its train block
as :func:`core.runs.compare.teaching_spec` sets it: 250 members, 40 epochs, lr 0.005): the undefended test accuracy, the majority-class rate, and DP-SGD with its
own recipe (:class:`core.catalog.dp_sgd.DPSGDDefense` defaults) at each target ε of the knob's grid and
at ε = ∞ (clipping without noise), per seed, with the wall time of each training. Every model is
trained by the membership runner's own ``_train_one`` (the target's procedure, shadows'
too). Ratio = (acc − majority) / (undefended − majority), per seed.

**Audit** (membership default, seed 0): the one-run audit (Steinke, Nasr & Jagielski 2023) of
DP-SGD over the ε grid, white box (1,000 Dirac gradient canaries of norm C = clip norm) and
black box (200 mislabelled canary records from the aux split, scored by −loss), at 95 %
confidence Bonferroni-corrected over every audit in the table; the deliberately broken run
(noise removed, the accountant still charging ε = 2); ε = ∞; and the non-DP defenses (none, the
Natural κ channel at two κ, Inf2Guard at two λ) through the same canaries (gradient canaries
of norm 1 where one row's gradient goes).

Headline: ``dpsgd_utility_ratio_best_eps_le_8`` (the smaller of the two settings' best seed-mean
ratio at ε ≤ 8), ``audit_eps_max_over_accountant_eps`` (over the DP-SGD grid, both audits),
``audit_broken_run_caught``, ``audit_correct_runs_flagged`` (grid runs with audited >
accountant ε), ``audited_defenses`` (defenses other than "none" with an audited ε),
``dpsgd_train_seconds_default`` (one DP-SGD target training at the default, membership).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

EPS_GRID = (1.0, 2.0, 4.0, 8.0)
SEEDS = (0, 1, 2)
WHITE_CANARIES = 1000
BLACK_CANARIES = 200
CONFIDENCE = 0.95
KAPPAS = (20.0, 300.0)
LAMBDAS = (0.5, 0.9)


def _settings() -> dict[str, dict[str, Any]]:
    from core.runs.compare import teaching_spec

    spec = teaching_spec()
    return {"membership_default": {"kind": "membership"},
            "compare_teaching": {"kind": "membership", "data": {"name": spec.data},
                                 "train": dict(spec.base["train"])}}


class _Setting:
    """One setting's data as the membership runner lays it out (pool, members, test rows)."""

    def __init__(self, base: dict[str, Any], seed: int) -> None:
        from core.config.schema import parse_config
        from core.data import load_dataset
        from core.runs.membership_stages import _pool, _shape

        self.base, self.seed = base, seed
        self.cfg = parse_config({**base, "seed": seed})
        ds = load_dataset(self.cfg.data, seed)
        self.ds, self.shape, self.n_classes = ds, _shape(ds), len(ds.label_names)
        self.X = torch.tensor(np.asarray(ds.X), dtype=torch.float32)
        self.y = torch.tensor(np.asarray(ds.y), dtype=torch.int64)
        self.pool, self.member = _pool(ds, self.cfg)
        self.rows = self.pool[self.member]
        self.te = np.array(ds.split("test"))
        self.aux = np.array(ds.split("aux"))
        self.majority = float(np.bincount(np.asarray(ds.y)[self.te]).max() / len(self.te))

    def config(self, defense: dict[str, Any]):
        from core.config.schema import parse_config

        return parse_config({**self.base, "seed": self.seed, "defense": defense})

    def train(self, defense: dict[str, Any]) -> dict[str, Any]:
        """The runner's own training of the target under ``defense``: accuracy, ε, seconds."""
        from core.runs.membership import _train_one

        cfg = self.config(defense)
        noise, X_d0 = self._noise(cfg), self._d0(cfg)
        t0 = time.perf_counter()
        tgt = _train_one(cfg, self.X, self.y, self.rows, self.shape, self.n_classes, self.seed,
                         noise, X_d0)
        secs = time.perf_counter() - t0
        acc = float((tgt.predict(self.X[self.te]).argmax(-1) == self.y[self.te]).float().mean())
        return {"acc": acc, "seconds": secs, "epsilon": tgt.extra.get("epsilon"),
                "noise_multiplier": tgt.extra.get("noise_multiplier")}

    def _noise(self, cfg):
        if cfg.defense.kind != "channel":
            return None
        from core.runs import gradient_stages as GS

        spec = GS.spectrum_from(GS.spectrum(np.asarray(self.ds.X)[self.ds.split("train")]))
        return GS.build_channel(cfg.defense, spec, self.shape)[1]

    def _d0(self, cfg):
        if cfg.defense.kind != "inf2guard":
            return None
        rng = np.random.default_rng([cfg.seed, 9002])  # the runner's non-member draw
        d0 = np.sort(rng.choice(self.aux, size=min(len(self.aux), cfg.train.members),
                                replace=False))
        return self.X[d0]

    # -- the defenses' trainings with a canary hook (the audit's train_fn) -------------------

    def _model(self):
        from core.models.nn import image_classifier, seeded

        return seeded(lambda: image_classifier("mlp", self.shape, self.n_classes),
                      torch.Generator().manual_seed(int(self.seed)))

    def white_box_fn(self, defense: dict[str, Any], out: dict[str, Any]):
        """train_fn(canary) for the white-box audit: the runner's procedure plus the hook."""
        cfg = self.config(defense)
        d, t = cfg.defense, cfg.train
        Xr, yr = self.X[self.rows], self.y[self.rows]

        def train(canary) -> None:
            if d.kind == "dp_sgd":
                from core.defenses.dpsgd import train_dpsgd

                res = train_dpsgd(self._model(), Xr, yr, image_shape=self.shape, seed=self.seed,
                                  canary=canary, **d.training(t))
                out.update(epsilon=res.epsilon, noise_multiplier=res.noise_multiplier)
            elif d.kind == "inf2guard":
                from core.defenses.inf2guard import train_inf2guard

                pre = max(1, t.epochs // 4)
                train_inf2guard(Xr, yr, self._d0(cfg), n_classes=self.n_classes,
                                tradeoff_lambda=d.tradeoff_lambda, epochs=max(1, t.epochs - pre),
                                pretrain_epochs=pre, batch_size=t.batch_size, lr=t.lr,
                                seed=self.seed, canary=canary)
            else:
                from core.engine.noisy_training import train_central

                noise = self._noise(cfg)
                perturb = None if noise is None else (lambda x, g: noise.perturb(x, generator=g))
                mode = d.noise_mode if d.kind == "channel" else "redraw"
                train_central(self._model(), Xr, yr, image_shape=self.shape, epochs=t.epochs,
                              batch_size=t.batch_size, lr=t.lr, optimizer=t.optimizer,
                              perturb=perturb, noise_mode=mode, seed=self.seed, canary=canary)
        return train

    def black_box_fn(self, defense: dict[str, Any], out: dict[str, Any]):
        """train_fn(X_in, y_in) -> loss for the black-box audit: the included canary records
        join the members; the released model's per-row losses are returned."""
        cfg = self.config(defense)
        members = self.rows

        def train(X_in: torch.Tensor, y_in: torch.Tensor):
            from core.runs.membership import _train_one

            n = len(self.X)
            X = torch.cat([self.X, X_in])
            y = torch.cat([self.y, y_in])
            rows = np.concatenate([members, np.arange(n, n + len(X_in))])
            tgt = _train_one(cfg, X, y, rows, self.shape, self.n_classes, self.seed,
                             self._noise(cfg), self._d0(cfg))
            out.update({k: v for k, v in tgt.extra.items() if k == "epsilon"})

            def loss(Xq: torch.Tensor, yq: torch.Tensor) -> np.ndarray:
                p = tgt.predict(Xq).clamp_min(1e-12)
                return F.nll_loss(torch.log(p), yq, reduction="none").double().numpy()
            return loss
        return train

    def black_box_records(self) -> tuple[torch.Tensor, torch.Tensor]:
        from core.attacks.audit import black_box_canaries

        rows = torch.as_tensor(self.aux)
        return black_box_canaries(self.X[rows], self.y[rows], BLACK_CANARIES, self.n_classes,
                                  seed=self.seed)


def utility_rows(quick: bool) -> list[dict[str, Any]]:
    """Undefended, majority, DP-SGD at every grid ε and at ε = ∞, per setting and seed."""
    rows = []
    seeds = SEEDS[:1] if quick else SEEDS
    for name, base in _settings().items():
        for seed in seeds:
            s = _Setting(base, seed)
            und = s.train({"kind": "none"})
            rows.append({"setting": name, "seed": seed, "defense": "none", "target_epsilon": None,
                         "acc": und["acc"], "majority": s.majority, "ratio": 1.0,
                         "seconds": und["seconds"]})
            points = [{"kind": "dp_sgd", "target_epsilon": e} for e in EPS_GRID]
            points.append({"kind": "dp_sgd", "noise_multiplier": 0.0})
            for dfn in points:
                r = s.train(dfn)
                ratio = (r["acc"] - s.majority) / (und["acc"] - s.majority)
                rows.append({"setting": name, "seed": seed, "defense": "dp_sgd",
                             "target_epsilon": dfn.get("target_epsilon", math.inf),
                             "acc": r["acc"], "majority": s.majority, "ratio": ratio,
                             "epsilon_accountant": r["epsilon"],
                             "noise_multiplier": r["noise_multiplier"],
                             "seconds": r["seconds"]})
                print(f"{name} seed {seed} ε={rows[-1]['target_epsilon']}: acc {r['acc']:.3f} "
                      f"ratio {ratio:.3f} ({r['seconds']:.2f} s)", flush=True)
    return rows


def audit_rows(quick: bool) -> list[dict[str, Any]]:
    """The one-run audits of the membership default, seed 0 (module docstring)."""
    from core.attacks.audit import audit_one_run, noise_removed
    from core.bounds.audit import bonferroni

    s = _Setting(_settings()["membership_default"], 0)
    records = s.black_box_records()
    clip = s.config({"kind": "dp_sgd"}).defense.clip_norm
    delta = s.config({"kind": "dp_sgd"}).defense.delta
    grid = EPS_GRID[-2:] if quick else EPS_GRID
    plan: list[tuple[str, dict[str, Any], str]] = []
    for e in grid:
        for kind in ("white_box", "black_box"):
            plan.append(("dp_sgd", {"kind": "dp_sgd", "target_epsilon": e}, kind))
    for kind in ("white_box", "black_box"):
        plan.append(("dp_sgd", {"kind": "dp_sgd", "noise_multiplier": 0.0}, kind))
        plan.append(("none", {"kind": "none"}, kind))
        for k in KAPPAS[:1] if quick else KAPPAS:
            plan.append(("channel", {"kind": "channel", "channel": "natural", "kappa": k}, kind))
        for lam in LAMBDAS[:1] if quick else LAMBDAS:
            plan.append(("inf2guard", {"kind": "inf2guard", "tradeoff_lambda": lam}, kind))
    plan.append(("dp_sgd (broken: noise removed)", {"kind": "dp_sgd", "target_epsilon": 2.0},
                 "white_box"))
    conf = bonferroni(CONFIDENCE, len(plan))  # every audit in the table holds jointly at 95 %
    rows = []
    for name, dfn, kind in plan:
        out: dict[str, Any] = {}
        t0 = time.perf_counter()
        dp_delta = delta if dfn["kind"] == "dp_sgd" else 0.0
        if kind == "white_box":
            fn = s.white_box_fn(dfn, out)
            if name.startswith("dp_sgd (broken"):
                with noise_removed():
                    res = audit_one_run(fn, kind=kind, canaries=WHITE_CANARIES,
                                        confidence=conf, seed=1, delta=dp_delta, norm=clip)
            else:
                res = audit_one_run(fn, kind=kind, canaries=WHITE_CANARIES, confidence=conf,
                                    seed=1, delta=dp_delta, norm=clip)
        else:
            res = audit_one_run(s.black_box_fn(dfn, out), kind=kind, records=records,
                                confidence=conf, seed=1, delta=dp_delta)
        knob = next((v for k, v in dfn.items() if k != "kind" and k != "channel"), None)
        rows.append({"defense": name, "knob": knob, "audit": kind,
                     "epsilon_accountant": out.get("epsilon"),
                     "epsilon_audited": res.epsilon_lower, "correct": res.correct,
                     "guesses": res.guesses, "max_provable": res.max_provable,
                     "confidence_per_audit": conf, "audits_in_table": len(plan),
                     "seconds": time.perf_counter() - t0})
        print(f"audit {name} {dfn} {kind}: ε_audit {res.epsilon_lower:.3f} "
              f"({res.correct}/{res.guesses}, max {res.max_provable:.2f}) "
              f"ε_acct {out.get('epsilon')}", flush=True)
    return rows


def _headline(util: list[dict[str, Any]], audit: list[dict[str, Any]]) -> dict[str, Any]:
    head: dict[str, Any] = {}
    if util:
        best = []
        for name in {r["setting"] for r in util}:
            means = [statistics.mean(r["ratio"] for r in util if r["setting"] == name
                                     and r["defense"] == "dp_sgd"
                                     and r["target_epsilon"] == e) for e in EPS_GRID]
            best.append(max(means))
        head["dpsgd_utility_ratio_best_eps_le_8"] = min(best)
        default = [r["seconds"] for r in util if r["setting"] == "membership_default"
                   and r["defense"] == "dp_sgd" and r["target_epsilon"] == 8.0]
        head["dpsgd_train_seconds_default"] = statistics.median(default)
    if audit:
        grid = [r for r in audit if r["defense"] == "dp_sgd"
                and math.isfinite(r["epsilon_accountant"] or math.nan)]
        head["audit_eps_max_over_accountant_eps"] = max(
            r["epsilon_audited"] / r["epsilon_accountant"] for r in grid)
        head["audit_correct_runs_flagged"] = sum(
            r["epsilon_audited"] > r["epsilon_accountant"] for r in grid)
        broken = next(r for r in audit if r["defense"].startswith("dp_sgd (broken"))
        head["audit_broken_run_caught"] = int(broken["epsilon_audited"]
                                              > broken["epsilon_accountant"])
        head["audited_defenses"] = len({r["defense"] for r in audit
                                        if r["defense"] in ("dp_sgd", "channel", "inf2guard")})
    return head


def main(quick: bool = False, part: str = "all") -> dict[str, Any]:
    util = utility_rows(quick) if part in ("all", "utility") else []
    audit = audit_rows(quick) if part in ("all", "audit") else []
    return {"name": "dpsgd_recipe", "headline": _headline(util, audit),
            "rows": util + audit,
            "notes": "ratio = (acc − majority) / (undefended − majority) per seed; audits at "
                     f"{CONFIDENCE:.0%} jointly (Bonferroni over the table's audits)",
            "targets": {"dpsgd_utility_ratio_best_eps_le_8": ">= 0.90",
                        "audit_eps_max_over_accountant_eps": "<= 1",
                        "audit_broken_run_caught": "1", "audit_correct_runs_flagged": "0"}}


if __name__ == "__main__":
    from core.foundation.threads import thread_limits

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", choices=("all", "utility", "audit"), default="all")
    ap.add_argument("--out", default=None, help="write the JSON here")
    args = ap.parse_args()
    with thread_limits():
        result = main(args.quick, args.part)
    print(json.dumps(result["headline"], indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1, default=str)

"""Benchmarks: ``python -m benchmarks [NAME ...] [--quick]`` (DESIGN: Benchmarks).

Each benchmark is a module with ``main(quick: bool = False) -> dict`` returning
``{"name": str, "headline": dict, "rows": list[dict], "notes": str, "targets": dict (optional)}``;
``headline`` holds exactly the figures its issue names. Register it
here with one line; the harness prints each as a table and writes ``benchmarks/results/NAME.json``.
"""

BENCHMARKS: dict[str, str] = {
    "projection": "benchmarks.projection_bench:main",
    "cache": "benchmarks.cache_bench:main",
    "fedavg_speed": "benchmarks.fedavg_speed:main",
    "tappfl_adult": "benchmarks.tappfl_adult:main",
    "tappfl_seeds": "benchmarks.tappfl_seeds:main",
    "tappfl_fig4_seeds": "benchmarks.tappfl_seeds:fig4",
    "sessions": "benchmarks.sessions_bench:main",
    "sweep": "benchmarks.sweep_bench:main",
    "gradient_leakage": "benchmarks.gradient_leakage:main",
    "kappa_channels": "benchmarks.kappa_channels:main",
    "dlg_speed": "benchmarks.dlg_speed:main",
    "channel_solve": "benchmarks.channel_solve:main",
    "membership": "benchmarks.membership_bench:main",
    "label_only": "benchmarks.label_only_bench:main",
    "shadow_speed": "benchmarks.shadow_speed:main",
    "property": "benchmarks.property_bench:main",
    "repr_reconstruction": "benchmarks.repr_reconstruction_bench:main",
    "dra_lambda": "benchmarks.dra_lambda:main",
    "fil": "benchmarks.fil_bench:main",
    "compare": "benchmarks.compare_bench:main",
    "registry": "benchmarks.registry_bench:main",
    "hardening": "benchmarks.hardening_bench:main",
    "userfiles": "benchmarks.userfiles_bench:main",
    "papers": "benchmarks.papers_check:main",
    "dlg_lenet": "benchmarks.dlg_lenet:main",
    "lessons": "benchmarks.lessons_bench:main",
    "caveats": "benchmarks.caveats_bench:main",
    "browser": "benchmarks.browser_bench:main",
    "relaxloss": "benchmarks.relaxloss_bench:main",
    "defense_grids": "benchmarks.defense_grids:main",
    "readme_blocks": "benchmarks.readme_blocks:main",
    "models": "benchmarks.models_bench:main",
    "audit_cache": "benchmarks.audit_cache_bench:main",
    "widget_sweep": "benchmarks.widget_sweep_bench:main",
    "bundle": "benchmarks.bundle_bench:main",
    "bundle_trust": "benchmarks.bundle_trust:main",
    "notebook": "benchmarks.notebook_bench:main",
    "report": "benchmarks.report_bench:main",
    "exposure": "benchmarks.exposure_bench:main",
    "advisor": "benchmarks.advisor_bench:main",
    "export": "benchmarks.export_bench:main",
    "gpu": "benchmarks.gpu_bench:main",
    "engine": "benchmarks.engine_bench:main",
    "your_model": "benchmarks.your_model_bench:main",
}

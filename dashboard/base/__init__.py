"""What the dashboard's components and pages stand on, and nothing of theirs: the background
job queue (:mod:`.jobs`) and the widgets that run a job with progress and cancel
(:mod:`.widgets`), the login gate (:mod:`.auth`, :mod:`.serve_check`), plotly figures
(:mod:`.plots`, :mod:`.fil_plots`) and numbers as the pages show them (:mod:`.format`).

The dashboard's folders layer downward: ``views/`` (the pages, which ``app.py`` runs by path)
over ``dashboard/``'s own modules (``app.py``, the sidebar, the shared state, the checks) over
``components/`` over ``base/``; nothing imports a folder above its own
(``benchmarks/registry_bench.py``'s ``folder_import_cycles`` counts a slip).
"""

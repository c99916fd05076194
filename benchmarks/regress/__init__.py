"""`invoke regress`: repeated, interleaved runs of the regression suite and a statistical verdict.

Modules: suite (what runs and how its output becomes samples), worktree (the base revision's checkout),
calibrate (the in-run reference for baselines), stats (Mann-Whitney U + effect -> verdict), baselines
(per-machine stored ratios), render (terminal table, regress.json, regress.md), runner (the orchestration).
See docs/regress.md.
"""

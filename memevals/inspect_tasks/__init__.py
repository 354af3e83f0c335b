"""Inspect AI tasks, solvers and scorer wrappers (the `registry` module registers them all)."""

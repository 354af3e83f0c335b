"""Inspect AI tasks, solvers and scorer wrappers (import memevals._registry to register all)."""

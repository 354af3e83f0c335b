"""Inspect AI tasks, solvers and scorer wrappers (the `registry` entry point registers them all
by name, from the manifest in `registry_manifest`, without importing them)."""

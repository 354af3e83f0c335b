"""lm-evaluation-harness tasks for the memevals benchmarks (YAML shipped as package data).

lm-eval 0.4.13 has no plugin entry point, so the tasks are found through `--include_path`;
`python -m memevals.lm_eval_tasks` prints the folder to pass. The YAML files only name the
document loader and scorer in each folder's `utils.py`, which call the same adapters,
prompt builders and scorers as the Inspect tasks.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["include_path"]


def include_path() -> str:
    """The folder to pass to `lm_eval --include_path` (this package's directory)."""
    return str(Path(__file__).resolve().parent)

"""The analysis library of results: what a notebook imports to read runs and compute on them.

Pure functions over runs (Inspect logs and lm-eval sample files): reading them, a row of
figures per run, paired comparisons, categories in their benchmark's order, memory, agent and
cost figures, and every number as text (`formatting`). Nothing here prints, writes HTML or
parses a command line: the renderers (`memevals.render`) and the commands (`memevals.tools`) do.

    from memevals.results import load_runs, load_rows, compare_runs
    rows = load_rows(["logs/"])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memevals.results.agent import agent_figures
    from memevals.results.axes import ordered_categories
    from memevals.results.columns import table_records
    from memevals.results.cost import CacheRule, Estimate, estimate
    from memevals.results.formatting import dollars, too_few_text
    from memevals.results.memory_figures import memory_figures
    from memevals.results.paired import (
        FACTORS,
        BenchmarkMismatch,
        Comparison,
        Factor,
        Mismatch,
        check_same_benchmark,
        compare_runs,
        comparison_records,
        factors_of,
        find_mismatches,
        flipped_rows,
    )
    from memevals.results.rows import KindScores, Row, above_ceiling, load_rows, row_from_run
    from memevals.results.runs import Run, RunError, RunSample, load_runs

__all__ = [
    "FACTORS",
    "BenchmarkMismatch",
    "CacheRule",
    "Comparison",
    "Estimate",
    "Factor",
    "KindScores",
    "Mismatch",
    "Row",
    "Run",
    "RunError",
    "RunSample",
    "above_ceiling",
    "agent_figures",
    "check_same_benchmark",
    "compare_runs",
    "comparison_records",
    "dollars",
    "estimate",
    "factors_of",
    "find_mismatches",
    "flipped_rows",
    "load_rows",
    "load_runs",
    "memory_figures",
    "ordered_categories",
    "row_from_run",
    "table_records",
    "too_few_text",
]

#: The module of each name: imported on first use (PEP 562), so that the library's own modules,
#: importing one another, never import this package's namespace in a circle.
_HOME = {
    "BenchmarkMismatch": "memevals.results.paired",
    "CacheRule": "memevals.results.cost",
    "Comparison": "memevals.results.paired",
    "Estimate": "memevals.results.cost",
    "FACTORS": "memevals.results.paired",
    "Factor": "memevals.results.paired",
    "KindScores": "memevals.results.rows",
    "Mismatch": "memevals.results.paired",
    "Row": "memevals.results.rows",
    "Run": "memevals.results.runs",
    "RunError": "memevals.results.runs",
    "RunSample": "memevals.results.runs",
    "above_ceiling": "memevals.results.rows",
    "agent_figures": "memevals.results.agent",
    "check_same_benchmark": "memevals.results.paired",
    "compare_runs": "memevals.results.paired",
    "comparison_records": "memevals.results.paired",
    "dollars": "memevals.results.formatting",
    "estimate": "memevals.results.cost",
    "factors_of": "memevals.results.paired",
    "find_mismatches": "memevals.results.paired",
    "flipped_rows": "memevals.results.paired",
    "load_rows": "memevals.results.rows",
    "load_runs": "memevals.results.runs",
    "memory_figures": "memevals.results.memory_figures",
    "ordered_categories": "memevals.results.axes",
    "row_from_run": "memevals.results.rows",
    "table_records": "memevals.results.columns",
    "too_few_text": "memevals.results.formatting",
}


def __getattr__(name: str) -> Any:
    """A name of `__all__`, from its module (imported on first use)."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)


def __dir__() -> list[str]:
    return sorted(__all__)

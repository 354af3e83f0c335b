"""The JSON file of paired comparisons (memevals-diff --json)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from memevals.results.paired import Comparison, result_record
from memevals.results.runs import Run


def _run_record(run: Run, name: str) -> dict[str, Any]:
    return {
        "label": name,
        "path": run.path,
        "framework": run.framework,
        "model": run.model,
        "protocol": run.protocol,
    }


def write_json(comparisons: Sequence[Comparison], path: Path) -> None:
    """The runs, the mismatches and every table row (non-finite figures as null)."""
    data = [
        {
            "run_a": _run_record(c.a, c.name_a),
            "run_b": _run_record(c.b, c.name_b),
            "benchmark": c.a.benchmark,
            "factor": c.factor.name if c.factor else None,
            "differences": [asdict(m) for m in c.differences],
            "mismatches": [asdict(m) for m in c.mismatches],
            "not_shared": list(c.not_shared),
            "scores": {
                t.score: {
                    "errored_excluded": t.errored,
                    "unscored_excluded": t.unscored,
                    "rows": [result_record(c, t, r) for r in t.rows],
                }
                for t in c.tables
            },
        }
        for c in comparisons
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")

"""lm-eval output without NaN (issue 28, point 4): a clustered standard error the values leave
undefined (one conversation, as under --limit) is `N/A`, lm-eval's own word for a missing
standard error, in the printed table and the results file."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from cli_support import run_python

from memevals.core import statistics
from memevals.lm_eval_tasks import include_path
from memevals.lm_eval_tasks.clustered_stderr import UNDEFINED, clustered_stderr_of_pairs


def test_the_aggregation_is_the_core_figure_or_undefined() -> None:
    pairs = [(1.0, "a"), (0.0, "a"), (0.5, "b"), (0.25, "c")]
    assert clustered_stderr_of_pairs(pairs) == statistics.clustered_stderr(
        [1.0, 0.0, 0.5, 0.25], ["a", "a", "b", "c"]
    )
    assert clustered_stderr_of_pairs([(1.0, "a"), (0.0, "a")]) == UNDEFINED == "N/A"


def test_a_limit_run_prints_no_nan(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_python(
        [
            sys.executable, "-m", "lm_eval", "--model", "dummy", "--tasks", "locomo_temporal",
            "--metadata", '{"context": "none"}', "--limit", "5",
            "--include_path", include_path(), "--output_path", str(out),
        ],
        cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    table = [line for line in proc.stdout.splitlines() if line.startswith("|")]
    [row] = [line for line in table if "f1_stderr_clustered" in line]
    assert [c.strip() for c in row.strip("|").split("|")][6] == "N/A"
    assert not any("nan" in line.lower().split("|") or " nan " in line.lower() for line in table)
    [path] = out.rglob("results_*.json")
    results = json.loads(path.read_text(encoding="utf-8"))["results"]["locomo_temporal"]
    assert results["f1_stderr_clustered,none"] == "N/A"
    assert not [k for k, v in results.items() if isinstance(v, float) and math.isnan(v)]

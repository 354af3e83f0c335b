"""The cost figures of docs/cost.md are what the estimator prints now (issue 28).

The doc's block between the markers of perf/cost_figures.py is that script's output; this
re-runs it (four full estimates: every LoCoMo and LoCoMo-Plus sample built and counted) and
compares line for line, so a change to the prompts or to the estimator's counting fails here
until `python perf/cost_figures.py --write` is run. No other doc states these figures.

Each estimate is a test of its own (its table line), made once per pytest run and shared
(tests/support/shared_runs.py): the whole block's test then runs the script on those estimates
instead of counting every sample again, and no one test counts all four.
"""

from __future__ import annotations

import importlib.util
import pickle
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from shared_runs import SharedRuns

REPO = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cost_figures", REPO / "perf" / "cost_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_no_other_doc_states_the_cost_figures() -> None:
    """README and docs/performance.md link to the generated table instead of copying it."""
    cost = _script()
    block = cost.doc_block(cost.DOC.read_text(encoding="utf-8"))
    figures = set(re.findall(r"\$[\d,]+\.\d\d|\d+\.\d\d %|\d+\.\d\d M", block))
    assert len(figures) >= 20, figures
    docs = [REPO / "README.md", *(REPO / "docs").glob("*.md")]
    for doc in docs:
        if doc == cost.DOC:
            continue
        text = doc.read_text(encoding="utf-8")
        assert not [f for f in figures if f in text], doc


def _estimate(shared_runs: SharedRuns, cost: ModuleType, task: str, args: dict[str, Any]) -> Any:
    """The script's estimate of one task and options, made once per pytest run (any worker)."""
    counter = "cl100k_base"

    def produce(folder: Path) -> None:
        est = cost.estimate(task, dict(args), token_counter=counter)
        (folder / "estimate.pickle").write_bytes(pickle.dumps(est))

    key = {"cost-figures-estimate": task, "args": args, "counter": counter}
    folder = shared_runs.folder(key, produce)
    return pickle.loads((folder / "estimate.pickle").read_bytes())


def _doc_lines(cost: ModuleType) -> list[str]:
    return cost.doc_block(cost.DOC.read_text(encoding="utf-8")).splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("index", range(4))
def test_cost_doc_row_matches_its_estimate(
    index: int, data_dir: Path, shared_runs: SharedRuns
) -> None:
    """One table line of the doc, from its own full estimate (shared with the block's test)."""
    pytest.importorskip("bpe_openai", reason="the figures are cl100k_base counts ([tokens])")
    cost = _script()
    assert len(cost.ROWS) == 4
    row = cost.ROWS[index]
    est = _estimate(shared_runs, cost, row.task, dict(row.args))
    in_doc = [line for line in _doc_lines(cost) if line.startswith(f"| {row.label} |")]
    assert in_doc == [cost.row_line(row, est)], "docs/cost.md is stale: run perf/cost_figures.py"


@pytest.mark.slow
def test_cost_doc_matches_the_estimator(
    data_dir: Path, shared_runs: SharedRuns, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("bpe_openai", reason="the figures are cl100k_base counts ([tokens])")
    cost = _script()
    calls: list[tuple[str, dict[str, Any], str]] = []

    def estimate(task: str, args: dict[str, Any], token_counter: str) -> Any:
        # the rows' estimates, as their own tests made them (or made here, once)
        calls.append((task, dict(args), token_counter))
        assert token_counter == "cl100k_base"
        return _estimate(shared_runs, cost, task, args)

    monkeypatch.setattr(cost, "estimate", estimate)
    printed = cost.figures().splitlines()
    assert calls == [(r.task, dict(r.args), "cl100k_base") for r in cost.ROWS]
    in_doc = _doc_lines(cost)
    assert in_doc == printed, "docs/cost.md is stale: run python perf/cost_figures.py --write"

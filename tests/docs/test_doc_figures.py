"""The cost figures of docs/cost.md are what the estimator prints now (issue 28).

The doc's block between the markers of perf/cost_figures.py is that script's output; this
re-runs it (four full estimates: every LoCoMo and LoCoMo-Plus sample built and counted) and
compares line for line, so a change to the prompts or to the estimator's counting fails here
until `python perf/cost_figures.py --write` is run. No other doc states these figures.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

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


@pytest.mark.slow
def test_cost_doc_matches_the_estimator(data_dir: Path) -> None:
    pytest.importorskip("bpe_openai", reason="the figures are cl100k_base counts ([tokens])")
    cost = _script()
    printed = cost.figures().splitlines()
    in_doc = cost.doc_block(cost.DOC.read_text(encoding="utf-8")).splitlines()
    assert in_doc == printed, "docs/cost.md is stale: run python perf/cost_figures.py --write"

"""The cost figures of docs/cost.md are what the estimator prints now (issue 28), and the
estimator's full-context LoCoMo count is a direct token-by-token count.

The doc's block between the markers of perf/cost_figures.py is that script's output; this
re-runs it (four full estimates: every LoCoMo and LoCoMo-Plus sample built and counted) and
compares line for line, so a change to the prompts or to the estimator's counting fails here
until `python perf/cost_figures.py --write` is run. No other doc states these figures.
The script's first estimate, full-context LoCoMo, is then checked against a direct cl100k
count of the same samples (built and counted once for both checks: they are the suite's
largest estimate).
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from inspect_ai import Task

from memevals.inspect_tasks.locomo import locomo
from memevals.results import cost as estimator
from memevals.results.cost import MESSAGE_OVERHEAD, REQUEST_OVERHEAD, Estimate

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
def test_cost_doc_matches_the_estimator_and_a_direct_count(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script's full-context LoCoMo estimate (its first row) against a direct count of its
    samples, then the doc's block against the script's output. The direct count: totals equal
    a direct cl100k count of every message; the shared prefix is within a line of the literal
    common prefix of consecutive token streams, and at least 99 %."""
    bpe_openai = pytest.importorskip("bpe_openai", reason="the figures are cl100k_base counts")
    cost = _script()
    # the script's full-context LoCoMo task and estimate, kept for the direct count below
    # (building and counting its 1,986 whole-conversation prompts again would double the test)
    built: list[Task] = []
    made: list[Estimate] = []
    build_task, estimate = estimator.build_task, cost.estimate

    def recording_build(name: str, args: Mapping[str, Any]) -> Task:
        task = build_task(name, args)
        if (name, dict(args)) == ("locomo", {}):
            built.append(task)
        return task

    def recording_estimate(name: str, args: Mapping[str, Any], **kw: Any) -> Estimate:
        est = estimate(name, args, **kw)
        if (name, dict(args)) == ("locomo", {}):
            made.append(est)
        return est

    monkeypatch.setattr(estimator, "build_task", recording_build)
    monkeypatch.setattr(cost, "estimate", recording_estimate)
    printed = cost.figures().splitlines()

    [task], [full] = built, made
    assert inspect.signature(locomo).parameters["context"].default == "full"
    assert full.token_counter == "cl100k_base"
    enc = bpe_openai.get_encoding("cl100k_base")
    _matches_a_direct_count(list(task.dataset), full.samples, enc)

    in_doc = cost.doc_block(cost.DOC.read_text(encoding="utf-8")).splitlines()
    assert in_doc == printed, "docs/cost.md is stale: run python perf/cost_figures.py --write"


def _matches_a_direct_count(samples: list[Any], est: list[Any], enc: Any) -> None:
    assert len(est) == 1986 == len(samples)
    ids_cache: dict[str, np.ndarray] = {}
    role_marker = {"system": -1, "user": -2, "assistant": -3}
    streams: list[np.ndarray] = []
    for s in samples:
        assert isinstance(s.input, list)
        parts: list[np.ndarray] = []
        for m in s.input:
            if m.text not in ids_cache:
                ids_cache[m.text] = np.array(enc.encode_ordinary(m.text), dtype=np.int64)
            parts += [np.full(MESSAGE_OVERHEAD, role_marker[m.role]), ids_cache[m.text]]
        streams.append(np.concatenate([*parts, np.full(REQUEST_OVERHEAD, -9)]))

    direct_shared = [0]
    for prev, cur in itertools.pairwise(streams):
        n = min(len(prev), len(cur))
        diff = np.nonzero(prev[:n] != cur[:n])[0]
        direct_shared.append(int(diff[0]) if len(diff) else n)

    for e, s, stream, shared in zip(est, samples, streams, direct_shared, strict=True):
        assert e.id == s.id
        assert e.input_tokens == len(stream)
        # never claims more than is really shared; loses at most the unfinished last line
        assert 0 <= shared - e.shared_prefix <= 64, (e.id, shared, e.shared_prefix)

    total = sum(len(x) for x in streams)
    est_total = sum(e.input_tokens for e in est)
    est_shared = sum(e.shared_prefix for e in est)
    assert est_total == total
    assert est_shared / total >= 0.99
    assert sum(direct_shared) / total >= 0.99
    assert abs(sum(direct_shared) - est_shared) / total < 2e-4  # 0.02 percentage points
    # the first question on each of the 10 conversations shares nothing with the one before
    # (beyond the system message's role header)
    firsts = [e for e, s in zip(est, samples, strict=True) if s.id.endswith("-q0")]
    assert len(firsts) == 10 and all(e.shared_prefix <= MESSAGE_OVERHEAD for e in firsts)

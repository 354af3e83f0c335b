"""Determinism: the same inputs and a scripted model give identical sample inputs, identical
per-sample scores and identical metrics, run after run and at any concurrency
(``max_connections=50``); and the datasets themselves do not depend on the process (hash
seed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import dataset_digest
import pytest
from inspect_ai import Task, eval
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model
from log_values import inputs_by_id, metrics, scores_by_id
from reliability_figures import count

from memevals.inspect_tasks.locomo import locomo
from memevals.inspect_tasks.longmemeval import longmemeval

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"


def test_datasets_do_not_depend_on_the_hash_seed() -> None:
    """A process with another PYTHONHASHSEED than this one builds byte-identical samples (ids,
    prompts, targets, metadata) for LoCoMo, LoCoMo-Plus and LongMemEval, including BM25
    retrieval."""
    # a process of its own: the hash seed is fixed when an interpreter starts. This process is
    # the other side (one interpreter start fewer than two processes): it builds while the
    # other one does, and the hash of a probe string shows the two seeds differ.
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    proc = subprocess.Popen(
        [sys.executable, dataset_digest.__file__],
        env={**os.environ, "PYTHONHASHSEED": seed},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        here = dataset_digest.digests()
    finally:
        out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    other = json.loads(out)
    assert other.pop("PYTHONHASHSEED") == seed
    assert int(other.pop("hash of PROBE")) != hash(dataset_digest.PROBE)  # another hash seed
    assert len(here) == 5 and all(len(v) == 64 for v in here.values())
    assert other == here
    count("deterministic dataset configurations checked", len(here))


def _runs(task: Any, tmp_path: Path, **kwargs: Any) -> list[EvalLog]:
    """The same evaluation three times: serial, serial again, and 50 connections."""
    logs = []
    for i, connections in enumerate((1, 1, 50)):
        [log] = eval(
            task(),
            display="none",
            log_dir=str(tmp_path / f"run{i}"),
            max_connections=connections,
            max_samples=connections,
            **kwargs,
        )
        assert log.status == "success", log.error
        logs.append(log)
    return logs


def _identical(logs: list[EvalLog]) -> None:
    first, *others = logs
    assert len(first.samples or []) > 10
    for other in others:
        assert inputs_by_id(other) == inputs_by_id(first)
        assert scores_by_id(other) == scores_by_id(first)
        assert metrics(other) == metrics(first)
    count("identical repeated runs", len(others))


def test_locomo_rag_is_identical_run_after_run_and_at_50_connections(tmp_path: Path) -> None:
    built = locomo(context="rag", top_k=3)  # building is covered above; run one build 3 times
    ids = [str(s.id) for s in built.dataset][::50]

    def task() -> Task:
        return built

    logs = _runs(task, tmp_path, model=get_model("faulty/answerer", delay=0.01), sample_id=ids)
    _identical(logs)
    m = metrics(logs[0])
    assert m["locomo_f1_scorer/mean"] > 0.05  # real numbers, not a run of zeros
    assert len(m) > 10  # F1, prompt size and retrieval metrics all compared


def test_longmemeval_judged_is_identical_run_after_run_and_at_50_connections(
    tmp_path: Path,
) -> None:
    def task() -> Task:
        # faulty/judge writes our judge's JSON verdicts: protocol=memevals
        return longmemeval(
            variant="s", data_dir=str(FIXTURES), verify_checksum=False, protocol="memevals"
        )

    logs = _runs(
        task,
        tmp_path,
        model=get_model("faulty/answerer", delay=0.01),
        model_roles={"grader": get_model("faulty/judge", judge=True, delay=0.01)},
    )
    _identical(logs)
    assert len(logs[0].samples or []) == 16
    values = [s.scores["longmemeval_judge"].value for s in logs[0].samples or []]  # type: ignore[index]
    # both verdicts occur, so the comparison of the runs is not trivially equal
    assert {v["judge"] for v in values} == {0.0, 1.0}, values  # type: ignore[index]


@pytest.fixture(autouse=True)
def _registered() -> None:
    import faulty_model  # noqa: F401  (registers the faulty/ provider)

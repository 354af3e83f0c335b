"""The post-hoc judge finds a logged sample's benchmark through the records, checks the
inputs its record's judge reads, and takes the scorers from its thin Inspect module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.util import registry_info

from memevals.benchmarks import records
from memevals.results.lm_eval_samples import LmEvalSample, SamplesError, record_of
from memevals.results.posthoc_judging import posthoc_scorers


def sample(file_task: str, **metadata: Any) -> LmEvalSample:
    return LmEvalSample(
        file=Path(f"samples_{file_task}_2026-01-01T00-00-00.0.jsonl"),
        line=3,
        task=file_task,
        id="q1",
        user="Q?",
        target="A",
        reply="A",
        metadata=metadata,
    )


def test_the_record_is_the_one_declaring_the_lm_eval_task() -> None:
    # event summaries say benchmark "locomo" in their metadata: the task name decides
    found = record_of(sample("locomo_event_summary", benchmark="locomo", task="event_summary"))
    assert found.name == "locomo_event_summary"
    assert record_of(sample("longmemeval_oracle_abstention", benchmark="longmemeval")).name == (
        "longmemeval"
    )
    # a renamed file falls back on the documents' benchmark ...
    assert record_of(sample("renamed", benchmark="locomo_plus")).name == "locomo_plus"
    # ... unless they name a task of it, which only the file's task name tells apart
    with pytest.raises(SamplesError, match=r"samples_renamed_.*:3: neither the file's task"):
        record_of(sample("renamed", benchmark="locomo", task="event_summary"))


def test_the_scorers_come_from_the_thin_module() -> None:
    def names(benchmark: str, *md: dict[str, Any]) -> list[str]:
        logged = [sample(f"{benchmark}_x", **m) for m in md]
        scorers = posthoc_scorers(records()[benchmark], logged, None, 1)
        return [registry_info(s).name.rsplit("/", 1)[-1] for s in scorers]

    # as the Inspect tasks judge: F1 and the judge; LoCoMo-Plus's judge (its headline) first,
    # its F1 only with a LoCoMo question
    assert names("locomo", {}) == ["locomo_f1_scorer", "llm_judge"]
    assert names("locomo_plus", {"category": "cognitive"}) == ["locomo_plus_judge"]
    assert names("locomo_plus", {"category": "cognitive"}, {"category": "temporal"}) == [
        "locomo_plus_judge",
        "locomo_plus_f1",
    ]
    assert names("longmemeval", {}) == ["longmemeval_judge"]
    summary = records()["locomo_event_summary"]
    with pytest.raises(SamplesError, match=r":3: locomo_event_summary: judge_runs=2: event"):
        posthoc_scorers(summary, [sample("locomo_event_summary")], None, 2)
    check = records()["judge_check"]
    with pytest.raises(SamplesError, match="benchmark 'judge_check' has no post-hoc judge"):
        posthoc_scorers(check, [sample("judge_check")], None, 1)


def test_a_benchmark_without_a_judge_is_named(tmp_path: Path) -> None:
    from memevals.results.posthoc_judging import judge_samples

    doc = {"id": "q1", "system": "", "user": "Q?", "target": "A", "metadata": json.dumps({
        "benchmark": "judge_check", "category": "temporal"})}  # fmt: skip
    path = tmp_path / "samples_judge_check_2026-01-01T00-00-00.0.jsonl"
    path.write_text(json.dumps({"doc": doc, "target": "A", "filtered_resps": ["x"]}) + "\n")
    with pytest.raises(SamplesError, match=r":1: benchmark 'judge_check' has no judge"):
        judge_samples([path], "mockllm/model")

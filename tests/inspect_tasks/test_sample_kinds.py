"""memevals.inspect_tasks.sample_kinds on worked examples: a scorer on one kind of sample, a
sample's own metadata value as its score, the metrics per a key only some samples carry, and
the registered names a benchmark gives them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import SampleScore, Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import registry_info

from memevals.inspect_tasks import sample_kinds as kinds


def _state(sample_id: str, metadata: dict[str, Any]) -> TaskState:
    state = TaskState(
        model="mockllm/model",  # type: ignore[arg-type]
        sample_id=sample_id,
        epoch=1,
        input="q",
        messages=[],
        metadata=metadata,
    )
    state.output = ModelOutput.from_content("mockllm/model", "a reply")
    return state


def _score(fn: Scorer, sample_id: str, metadata: dict[str, Any]) -> Score | None:
    result: Score | None = asyncio.run(fn(_state(sample_id, metadata), Target("")))
    return result


def _asked(md: Any) -> bool:
    return md.get("kind") == "question"


@scorer(metrics=[])
def kinds_probe() -> Scorer:
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=0.25)

    return score


def test_only_scores_the_kind_it_keeps() -> None:
    fn = kinds.only(kinds_probe(), _asked)
    assert _score(fn, "q1", {"kind": "question"}) == Score(value=0.25)
    assert _score(fn, "c1", {"kind": "cue"}) is None


def test_value_score_reads_the_samples_value_and_names_a_missing_one() -> None:
    fn = kinds.value_score("cue_recall", lambda md: not _asked(md), "retrieved_ids")
    got = _score(fn, "c1", {"kind": "cue", "cue_recall": 0.5, "retrieved_ids": ["D1:2", "D1:3"]})
    assert got is not None
    assert (got.value, got.explanation) == (0.5, "retrieved ['D1:2', 'D1:3']")
    assert got.metadata == {"retrieved_ids": ["D1:2", "D1:3"]}
    assert _score(fn, "q1", {"kind": "question", "cue_recall": 1.0}) is None
    with pytest.raises(ValueError, match="sample c2: no 'cue_recall' in the metadata"):
        _score(fn, "c2", {"kind": "cue"})


def _scores(*rows: tuple[float, str | None]) -> list[SampleScore]:
    return [
        SampleScore(
            score=Score(value=value),
            sample_id=f"s{i}",
            sample_metadata={"cluster": f"c{i % 2}", **({"relation": r} if r else {})},
        )
        for i, (value, r) in enumerate(rows)
    ]


def test_mean_by_keeps_the_declared_order_and_ignores_samples_without_the_key() -> None:
    mean, uncertainty = kinds.values_by("relation", ("goal", "cause"))
    rows = _scores((1.0, "cause"), (0.0, "goal"), (1.0, "goal"), (0.5, None), (1.0, "other"))
    got = mean(rows)
    assert got == {"goal": 0.5, "cause": 1.0, "other": 1.0}
    assert list(got) == ["goal", "cause", "other"]  # type: ignore[arg-type]
    # the per-value uncertainty is shown only with -T uncertainty=full: none here
    assert uncertainty(rows) == {}
    assert registry_info(mean).name.rsplit("/", 1)[-1] == "relation"
    assert registry_info(uncertainty).name.rsplit("/", 1)[-1] == "by_relation"


def test_subset_scorers_register_each_under_the_prefix() -> None:
    [made] = kinds.subset_scorers("bench", [kinds_probe], _asked, lambda: [])
    assert registry_info(made()).name.rsplit("/", 1)[-1] == "bench_kinds_probe"
    assert _score(made(), "q1", {"kind": "question"}) == Score(value=0.25)
    assert _score(made(), "c1", {"kind": "cue"}) is None

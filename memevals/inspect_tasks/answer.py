"""An answer scorer's Inspect work, shared: the benchmark's framework-free rule scores the
reply; the Score keeps the reply, the category and the prompt size (the task's `prompt_tokens`
score and the cost figures read it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from inspect_ai.scorer import Score, Scorer, Target
from inspect_ai.solver import TaskState

from memevals.inspect_tasks.context_scorers import sample_prompt_tokens

__all__ = ["AnswerRule", "answer_scorer"]

#: A benchmark's answer rule: (reply, sample metadata) -> (the score, the prediction it scored).
AnswerRule = Callable[[str, Mapping[str, Any]], tuple[float, str]]


def answer_scorer(rule: AnswerRule) -> Scorer:
    """The score function of an answer scorer (register it under the benchmark's scorer name).

    Args:
        rule: the benchmark's answer rule.

    Returns:
        A score function: the rule's value, the prediction as the answer, the gold and the
        category in the explanation, and the reply, the category and the prompt size
        (`prompt_tokens`, `token_counter`) in Score.metadata.
    """

    async def score(state: TaskState, target: Target) -> Score:
        reply, category = state.output.completion, state.metadata.get("category")
        value, prediction = rule(reply, state.metadata)
        return Score(
            value=value,
            answer=prediction,
            explanation=f"gold: {target.text!r}; category {category}",
            metadata={"reply": reply, "category": category, **sample_prompt_tokens(state)},
        )

    return score

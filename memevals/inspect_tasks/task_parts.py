"""Parts a thin Inspect module assembles beside `task_from_build`, naming no benchmark: its own
solvers in place of the memory chain (`with_solver`: a grading loop, photos fetched before
generating), `stepwise` generation, each prompt made from the reply before, and a score
function or a metric from a framework-free one (`from_fields`, `metadata_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inspect_ai import Task
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, Value
from inspect_ai.solver import Generate, Solver, TaskState, chain, solver

__all__ = ["ScoreFields", "Step", "from_fields", "metadata_rows", "stepwise", "with_solver"]

#: (the reply, the target's text, the sample's metadata) -> a Score's fields (value, answer,
#: explanation, metadata, ...), computed without Inspect in the benchmark's folder.
ScoreFields = Callable[[str, str, Mapping[str, Any]], Mapping[str, Any]]
#: One step of a stepwise generation: the reply before (None first) -> (system, user).
Step = Callable[[str | None], tuple[str, str]]


def with_solver(built: Task, solver: Solver | Sequence[Solver]) -> Task:
    """`built` with `solver` in place of its solvers, as `Task(solver=)` takes them: for a
    benchmark without a memory-system mode that solves its own way.

    Args:
        built: the task (from `task_from_build`).
        solver: one solver, or several run in order.

    Returns:
        The same task.
    """
    built.solver = chain(list(solver)) if isinstance(solver, Sequence) else solver
    return built


def from_fields(fields: ScoreFields) -> Scorer:
    """The score function of a scorer whose score a framework-free function gives (register it
    under the benchmark's scorer name).

    Args:
        fields: the benchmark's function of the reply, the target and the sample's metadata.

    Returns:
        The function a `@scorer` returns.
    """

    async def score(state: TaskState, target: Target) -> Score:
        return Score(**fields(state.output.completion, target.text, state.metadata))

    return score


def metadata_rows(key: str, figure: Callable[[list[Any]], Value]) -> Metric:
    """The compute function of a metric over what each score keeps under `key` in its
    metadata (e.g. per-reply statistics that a corpus figure sums); register it under the
    benchmark's metric name.

    Args:
        key: the score-metadata key.
        figure: the framework-free figure of the rows (scores without metadata left out).

    Returns:
        The function a `@metric` returns.
    """

    def compute(scores: list[SampleScore]) -> Value:
        return figure([s.score.metadata[key] for s in scores if s.score.metadata])

    return compute


@solver
def stepwise(steps_of: Callable[[Mapping[str, Any]], Sequence[Step]], store_key: str) -> Solver:
    """Generate step by step: each step's prompt (system, user) replaces the messages, made
    from the reply before; the last reply is the sample's output. Every reply is kept in the
    sample's store under `store_key` (and each model call is in the transcript).

    Args:
        steps_of: the sample's metadata -> its steps, in order.
        store_key: where the replies are kept.

    Returns:
        The solver.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        reply: str | None = None
        replies: list[str] = []
        for step in steps_of(state.metadata):
            system, user = step(reply)
            state.messages = [ChatMessageSystem(content=system), ChatMessageUser(content=user)]
            state = await generate(state)
            reply = state.output.completion
            replies.append(reply)
        state.store.set(store_key, replies)
        return state

    return solve

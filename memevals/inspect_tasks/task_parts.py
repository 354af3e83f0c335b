"""Parts a thin Inspect module assembles beside `task_from_build`, naming no benchmark: its own
solvers in place of the memory chain (`with_solver`: a grading loop, session-by-session
generation, photos fetched before generating), and a model call for framework-free scoring
code that talks to a grader (`grader_call`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from inspect_ai import Task
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    Model,
)
from inspect_ai.solver import Solver, chain

__all__ = ["GraderCall", "grader_call", "with_solver"]

#: A chat as (role, text) pairs in, the model's reply text out: how scoring code in a benchmark
#: folder asks a grader without importing a framework.
GraderCall = Callable[[Sequence[tuple[str, str]]], Awaitable[str]]


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


def grader_call(model: Model, config: GenerateConfig) -> GraderCall:
    """A `GraderCall` that sends the chat to `model` with `config` (an "assistant" pair becomes
    an assistant message, any other a user message).

    Args:
        model: the grader.
        config: its generation settings.

    Returns:
        The call.
    """

    async def call(messages: Sequence[tuple[str, str]]) -> str:
        chat: list[ChatMessage] = [
            ChatMessageAssistant(content=text)
            if role == "assistant"
            else ChatMessageUser(content=text)
            for role, text in messages
        ]
        output = await model.generate(chat, config=config)
        return output.completion

    return call

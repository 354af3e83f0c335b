"""Notes taken before the answer (chain-of-note), naming no benchmark: per sample, one model call
per note request, then the notes become the one user message the answer is generated from.

A benchmark builds each sample's `NotePlan` (framework-free, in its folder) with its dataset and
swaps its task's solvers for `take_notes` then `generate()` (`with_notes`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from inspect_ai import Task
from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from memevals.inspect_tasks.task_parts import with_solver

__all__ = ["NotePlan", "take_notes", "with_notes"]


class NotePlan(Protocol):
    """One sample's note requests (in the order shown), how the notes become its message, the
    temperature of the note calls (None: the model's own) and which notes count as kept."""

    @property
    def prompts(self) -> Sequence[str]: ...

    @property
    def compose(self) -> Callable[[Sequence[str]], str]: ...

    @property
    def temperature(self) -> float | None: ...

    def kept(self, notes: Sequence[str]) -> int: ...


@solver
def take_notes(plans: Mapping[str, NotePlan], note_max_tokens: int = 500) -> Solver:
    """One call per note request asks the model for notes relevant to the question; the notes
    then become the one user message (the plan's `compose`), and the sample's metadata counts
    them (`notes_kept`, `notes_total`).

    Args:
        plans: each sample id's note plan, built with the dataset.
        note_max_tokens: the length limit of each note call.

    Returns:
        The solver.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sid = str(state.sample_id)
        if sid not in plans:
            raise ValueError(f"sample {sid}: chain_of_note has no sessions for this sample")
        plan = plans[sid]
        model = get_model()
        config = GenerateConfig(max_tokens=note_max_tokens, temperature=plan.temperature)
        outputs = await asyncio.gather(
            *(model.generate([ChatMessageUser(content=p)], config=config) for p in plan.prompts)
        )
        notes = [o.completion for o in outputs]
        state.metadata["notes_kept"] = plan.kept(notes)
        state.metadata["notes_total"] = len(notes)
        state.messages = [ChatMessageUser(content=plan.compose(notes))]
        return state

    return solve


def with_notes(built: Task, plans: Mapping[str, NotePlan], note_max_tokens: int) -> Task:
    """`built` answering from notes: `take_notes`, then `generate()`.

    Args:
        built: the task (from `task_from_build`).
        plans: each sample id's note plan.
        note_max_tokens: the length limit of each note call.

    Returns:
        The same task.
    """
    return with_solver(built, [take_notes(plans, note_max_tokens), generate()])

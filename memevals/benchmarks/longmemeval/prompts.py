"""LongMemEval reader prompts: the current date and question; the chain-of-note texts; the judge.

Follows the reader ingredients of benchmarks/longmemeval/README.md#protocol (all wording is ours):
the question comes
with `Current Date: <question_date>`, without which temporal questions cannot be answered (the
dated history it follows is rendered by memevals.benchmarks.longmemeval.memory). Chain-of-note
first asks for notes on each session separately, then answers from the notes; that needs extra
model calls, so the framework glue runs it (the Inspect solver in inspect_tasks.notes)
using the texts built here.
"""

from __future__ import annotations

from collections.abc import Sequence

from memevals.benchmarks.longmemeval.data import Instance
from memevals.benchmarks.longmemeval.memory import SessionBlock, render_blocks
from memevals.benchmarks.longmemeval.scoring import criterion_for_longmemeval

__all__ = [
    "ANSWER_CUE",
    "NOTES_INTRO",
    "NOTE_INSTRUCTION",
    "NO_NOTES",
    "is_empty_note",
    "judge_inputs",
    "note_prompt",
    "notes_text",
    "question_text",
]

NOTES_INTRO = (
    "You are a chat assistant with a long-term memory of your conversations with this user. "
    "Below are notes you took on your earlier chat sessions with them, oldest first; each "
    "block gives the session's date and the notes relevant to the user's question. Use them "
    "to answer. Dates matter: resolve words like 'last week' against the session dates and "
    "the current date."
)
NO_NOTES = "(None of the earlier sessions held anything relevant to this question.)"
ANSWER_CUE = "Answer:"

NOTE_INSTRUCTION = (
    "You are reviewing one earlier chat session between you (the assistant) and a user, "
    "to prepare for a question the user is asking now.\n\n"
    "Session date: {date}\n"
    "Session content:\n{body}\n\n"
    "Current date: {question_date}\n"
    "The user's question: {question}\n\n"
    "Write short notes listing everything in this session that could help answer the "
    "question: facts the user stated about themselves, things you told them, and when they "
    "happened (use the session date). Do not answer the question itself. If nothing in this "
    "session is relevant, reply with the single word: empty"
)


def question_text(inst: Instance) -> str:
    return f"Current Date: {inst.question_date}\nQuestion: {inst.question}\n{ANSWER_CUE}"


def is_empty_note(note: str) -> bool:
    """The note taker's 'nothing relevant' reply (case, quotes and a full stop tolerated)."""
    return note.strip().strip("\"'`*.").strip().lower() in ("empty", "")


def notes_text(blocks: Sequence[SessionBlock], notes: Sequence[str]) -> str:
    """The system text that replaces the history after chain-of-note: one block per session
    whose note is not empty, in date order."""
    if len(blocks) != len(notes):
        raise ValueError(f"{len(notes)} notes for {len(blocks)} sessions")
    kept = [
        SessionBlock(b.session_id, b.date, n.strip())
        for b, n in zip(blocks, notes, strict=True)
        if not is_empty_note(n)
    ]
    body = render_blocks(kept, label="Notes") if kept else NO_NOTES
    return f"{NOTES_INTRO}\n\n{body}"


def note_prompt(block: SessionBlock, question: str, question_date: str) -> str:
    return NOTE_INSTRUCTION.format(
        date=block.date, body=block.body, question_date=question_date, question=question
    )


def judge_inputs(inst: Instance) -> dict[str, object]:
    """`metadata["judge"]` for the LLM judge: the criterion follows the official prompt choice
    (any `_abs` id is judged for abstention); the reference is the answer, which is a rubric for
    preference questions and an explanation for abstention ones."""
    return {
        "criterion": criterion_for_longmemeval(inst.question_type, inst.question_id),
        "question": inst.question,
        "reference": inst.answer_text,
        "question_date": inst.question_date,
    }

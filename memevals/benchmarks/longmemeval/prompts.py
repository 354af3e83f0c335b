"""LongMemEval reader prompts: dated history, current date, question; optional chain-of-note.

Follows the reader ingredients of BENCHMARKS.md §3.7 (all wording is ours): the history is
sorted by date, each session in a `### Session <i>` block that states its date; the body is the
session's turns as JSON (`has_answer` removed: it would give the answer away) or as
`role: content` lines; the question comes with `Current Date: <question_date>`, without which
temporal questions cannot be answered. Chain-of-note first asks for notes on each session
separately, then answers from the notes; that needs extra model calls, so the framework glue
runs it (the Inspect solver in inspect_tasks.longmemeval) using the texts built here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memevals.benchmarks.longmemeval.data import CATEGORIES, Instance, Session, Turn
from memevals.core.judge import criterion_for_longmemeval
from memevals.core.prompt_item import PromptItem, parse_category_list

HISTORY_FORMATS: tuple[str, ...] = ("json", "text")
#: Context modes built here; `rag` and `truncated` live in memevals.benchmarks.longmemeval.memory.
CONTEXT_MODES: tuple[str, ...] = ("full", "oracle", "none")

HISTORY_INTRO = (
    "You are a chat assistant with a long-term memory of your conversations with this user. "
    "Below are your earlier chat sessions with them, oldest first; each session begins with "
    "the date it took place. Use whatever in this history is relevant to answer the user's "
    "question. Dates matter: resolve words like 'last week' against the session dates and the "
    "current date."
)
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


def _check_format(history_format: str) -> None:
    if history_format not in HISTORY_FORMATS:
        raise ValueError(
            f"history_format={history_format!r} is not one of {', '.join(HISTORY_FORMATS)}"
        )


def turn_json(turn: Turn) -> dict[str, str]:
    """The turn as the model sees it: role and content only (`has_answer` is withheld)."""
    return {"role": turn.role, "content": turn.content}


def render_turns(turns: Sequence[Turn], history_format: str) -> str:
    _check_format(history_format)
    if history_format == "json":
        return json.dumps([turn_json(t) for t in turns], ensure_ascii=False)
    return "\n".join(f"{t.role}: {t.content.strip()}" for t in turns)


@dataclass(frozen=True)
class SessionBlock:
    """One session as shown to the model (or to the note taker): its date and body text."""

    session_id: str
    date: str
    body: str


def session_blocks(
    sessions: Iterable[Session], history_format: str = "json"
) -> tuple[SessionBlock, ...]:
    """Blocks in chronological order (ties keep the given order); has_answer never shown."""
    ordered = sorted(sessions, key=lambda s: s.when)
    return tuple(
        SessionBlock(s.session_id, s.date, render_turns(s.turns, history_format)) for s in ordered
    )


def render_blocks(blocks: Sequence[SessionBlock], *, label: str = "Session content") -> str:
    return "\n\n".join(
        f"### Session {i}\nSession date: {b.date}\n{label}:\n{b.body}"
        for i, b in enumerate(blocks, start=1)
    )


def history_text(blocks: Sequence[SessionBlock]) -> str:
    """The system text for the given (chronological) blocks; empty when there are none."""
    if not blocks:
        return ""
    return f"{HISTORY_INTRO}\n\n{render_blocks(blocks)}"


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


def question_text(inst: Instance) -> str:
    return f"Current Date: {inst.question_date}\nQuestion: {inst.question}\n{ANSWER_CUE}"


def select_sessions(inst: Instance, context: str) -> tuple[Session, ...]:
    """Sessions a context mode shows: all (full), the answer sessions (oracle) or none."""
    if context == "full":
        return inst.sessions
    if context == "oracle":
        return inst.answer_sessions()
    if context == "none":
        return ()
    raise ValueError(f"context={context!r} is not one of {', '.join(CONTEXT_MODES)}")


def parse_categories(categories: Iterable[str] | str | None) -> list[str]:
    """Category names (snake or kebab case, so the file's type names work too); None = all."""
    return parse_category_list(categories, CATEGORIES, numbers={}, benchmark="LongMemEval")


def wanted(inst: Instance, categories: Sequence[str]) -> bool:
    """An instance belongs to its type's category and, when `_abs`, also to abstention."""
    return inst.category in categories or (inst.is_abstention and "abstention" in categories)


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


def item_metadata(inst: Instance, *, variant: str) -> dict[str, object]:
    return {
        "benchmark": "longmemeval",
        "variant": variant,
        "question_id": inst.question_id,
        "question_type": inst.question_type,
        "category": inst.category,
        "abstention": inst.is_abstention,
        "question": inst.question,
        "question_date": inst.question_date,
        "answer": inst.answer_text,
        "answer_session_ids": list(inst.answer_session_ids),
        "judge": judge_inputs(inst),
    }


def build_item(
    inst: Instance,
    *,
    variant: str,
    blocks: Sequence[SessionBlock],
    context: str,
    history_format: str,
    extra: dict[str, object] | None = None,
    system: str | None = None,
) -> PromptItem:
    """One sample: the dated history (system), the current date and question (user).

    `system` replaces the rendering of `blocks` (a truncated history, or "" when chain-of-note
    notes will take its place)."""
    md = item_metadata(inst, variant=variant)
    md.update(
        {
            "context": context,
            "history_format": history_format,
            "n_sessions_shown": len(blocks),
            "session_ids_shown": [b.session_id for b in blocks],
        }
    )
    md.update(extra or {})
    return PromptItem(
        id=inst.question_id,
        system=history_text(blocks) if system is None else system,
        user=question_text(inst),
        target=inst.answer_text,
        metadata=md,
    )

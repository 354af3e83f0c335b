"""`summaries`: one summary per session written by the memory model.

Ingestion shows the model each session (its date and its turns: speaker, text, image
caption) and asks for a plain-text summary. An empty reply is asked again once, then the
ingestion fails naming the history and session. Retrieval ranks the summaries for the question
with BM25 or embeddings; each item cites its session id and carries the session's date, so the
benchmark shows the summary and scores the session.
"""

from __future__ import annotations

from memevals.core.memory_system import History, Session, TextModel
from memevals.memory_systems.model_notes import (
    Asked,
    Note,
    NoteSystem,
    parse_summary,
    prompt_version,
)

__all__ = [
    "GENERATION",
    "SYSTEM_PROMPT",
    "USER_PROMPT",
    "SummariesSystem",
    "summaries_system",
]

SYSTEM_PROMPT = """\
You maintain the long-term memory of an assistant that talks with people over many sessions. \
You are shown one session of a conversation and write a summary of it that will be read \
later, without the conversation, to answer questions about it.

Say who took part and what each of them told about themselves, their lives, plans, \
preferences and the people around them, what they decided, and when things happened. Name \
people rather than using pronouns, and turn relative times ("yesterday", "next month") into \
dates by counting from the date of the session. Keep specific details such as names, places, \
numbers and titles. Do not invent anything the session does not say.

Reply with the summary as plain prose, with no title, preamble or list of turns."""

USER_PROMPT = """\
{session}

Write the summary of this session."""

#: Bump when parsing or the stored notes change (prompt edits change the hash by themselves).
GENERATION = "2"  # 2: embedding stores keep the notes' vectors


class SummariesSystem(NoteSystem):
    """One model-written summary per session with turns (one call, two when the first reply
    is empty), ranked by a retriever."""

    name = "summaries"
    version = prompt_version(GENERATION, SYSTEM_PROMPT, USER_PROMPT)
    system_prompt = SYSTEM_PROMPT
    user_prompt = USER_PROMPT
    # Summaries cite their session, not turns, so the turn ids would only be noise here.
    with_ids = False

    def session_notes(
        self, model: TextModel, history: History, session: Session, asked: Asked
    ) -> list[Note]:
        summary = self.ask_session(model, history, session, asked, parse_summary)
        return [Note(summary, (session.session_id,), session.date, session.session_id)]

    def no_notes(self, history: History) -> str:
        return f"history {history.history_id!r} has no session with turns to summarise"


def summaries_system(
    retriever: str = "bm25", embedding_model: str | None = None
) -> SummariesSystem:
    """`-T memory=summaries`: session summaries from the memory model
    (`--model-role memory=...`)."""
    return SummariesSystem(retriever, embedding_model)

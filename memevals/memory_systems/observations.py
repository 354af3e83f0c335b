"""`observations`: dated facts written by the memory model, one call per session.

Ingestion shows the model each session (its date, every turn with its turn id, speaker, text
and image caption) and asks for the facts worth remembering as a JSON array of
`{"fact": ..., "turns": [turn ids]}`. The reply is parsed strictly (model_notes.parse_facts);
an unusable reply is asked again once with the problem spelled out, then the ingestion fails
naming the history and session. The facts are stored with the ids they cite and their
session's date; retrieval ranks them for the question with BM25 or embeddings and returns
them as non-verbatim items, so the benchmark shows the facts and scores the cited turns.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from memevals.core.memory_system import History, IngestReport, MemorySystemError, Session, TextModel
from memevals.memory_systems.model_notes import (
    Asked,
    Note,
    NoteIndex,
    NoteRetrieval,
    ask,
    notes_report,
    parse_facts,
    prompt_version,
    render_session,
    require_model,
    write_notes,
)

SYSTEM_PROMPT = """\
You maintain the long-term memory of an assistant that talks with people over many sessions. \
You are shown one session of a conversation and write down the facts from it that could \
matter later: what the people did, said, plan, like, own or feel, who they know, and when \
things happened.

Each fact must make sense on its own, without the conversation: name people rather than \
using pronouns, and turn relative times ("yesterday", "next month") into dates by counting \
from the date of the session. Keep specific details such as names, places, numbers and \
titles. Do not invent anything the session does not say.

Every turn is shown with its id in square brackets. For every fact, cite the ids of the \
turns it comes from.

Reply with a JSON array and nothing else. Each element is an object with exactly two keys:
- "fact": one fact, as a non-empty string;
- "turns": the list of the ids (written as shown, without the brackets) of the turns the \
fact comes from, at least one.
If the session holds nothing worth remembering, reply with [].
Example: [{"fact": "Ana adopted a cat named Miso in March 2021.", "turns": ["D4:2", "D4:3"]}]"""

USER_PROMPT = """\
{session}

Write the facts worth remembering from this session, as the JSON array described."""

#: Bump when parsing or the stored notes change (prompt edits change the hash by themselves).
GENERATION = "1"


def session_prompt(session: Session) -> str:
    return USER_PROMPT.format(session=render_session(session, with_ids=True))


class ObservationsSystem:
    """Facts extracted by the memory model per session, ranked by a retriever."""

    name = "observations"
    uses_model = True  # the memory model writes the facts: it is part of the cache key
    version = prompt_version(GENERATION, SYSTEM_PROMPT, USER_PROMPT)

    def __init__(self, retriever: str = "bm25", embedding_model: str | None = None) -> None:
        self._retrieval = NoteRetrieval(retriever, embedding_model)

    @property
    def args(self) -> Mapping[str, Any]:
        return self._retrieval.args()

    def ingest(self, history: History, store: Path, model: TextModel | None) -> IngestReport:
        """One model call per session (two when the first reply is unusable).

        A session may yield no fact (small talk holds nothing worth keeping), but a history
        that yields none at all is an error: an empty store would be scored as a memory
        that forgot everything, when the model most likely failed at the task.
        """
        model = require_model(self.name, model)
        asked = Asked()
        notes: list[Note] = []
        for session in history.sessions:
            if not session.turns:
                continue  # nothing to read, nothing to cite: no call
            facts = ask(
                model,
                SYSTEM_PROMPT,
                session_prompt(session),
                partial(parse_facts, session=session),
                name=self.name,
                history=history,
                session=session,
                asked=asked,
            )
            notes += [Note(fact, ids, session.date, session.session_id) for fact, ids in facts]
        if not notes:
            raise MemorySystemError(
                f"{self.name}: the memory model kept no fact from any of the "
                f"{len(history.sessions)} sessions of history {history.history_id!r}"
            )
        write_notes(store, notes)
        return notes_report(notes, history, asked)

    def open(self, store: Path, history: History) -> NoteIndex:
        return self._retrieval.open(store)


def observations_system(
    retriever: str = "bm25", embedding_model: str | None = None
) -> ObservationsSystem:
    """`-T memory=observations`: facts from the memory model (`--model-role memory=...`)."""
    return ObservationsSystem(retriever, embedding_model)

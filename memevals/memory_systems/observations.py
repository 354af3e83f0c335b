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

from functools import partial

from memevals.core.memory_system import History, Session, TextModel
from memevals.memory_systems.model_notes import Asked, Note, NoteSystem, parse_facts, prompt_version

__all__ = [
    "GENERATION",
    "SYSTEM_PROMPT",
    "USER_PROMPT",
    "ObservationsSystem",
    "observations_system",
]

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
GENERATION = "2"  # 2: embedding stores keep the notes' vectors


class ObservationsSystem(NoteSystem):
    """Facts extracted by the memory model per session (one call, two when the first reply is
    unusable), ranked by a retriever. A session may yield no fact: small talk holds nothing
    worth keeping."""

    name = "observations"
    version = prompt_version(GENERATION, SYSTEM_PROMPT, USER_PROMPT)
    system_prompt = SYSTEM_PROMPT
    user_prompt = USER_PROMPT

    def session_notes(
        self, model: TextModel, history: History, session: Session, asked: Asked
    ) -> list[Note]:
        facts = self.ask_session(
            model, history, session, asked, partial(parse_facts, session=session)
        )
        return [Note(fact, ids, session.date, session.session_id) for fact, ids in facts]

    def no_notes(self, history: History) -> str:
        return (
            f"the memory model kept no fact from any of the {len(history.sessions)} sessions "
            f"of history {history.history_id!r}"
        )


def observations_system(
    retriever: str = "bm25", embedding_model: str | None = None
) -> ObservationsSystem:
    """`-T memory=observations`: facts from the memory model (`--model-role memory=...`)."""
    return ObservationsSystem(retriever, embedding_model)

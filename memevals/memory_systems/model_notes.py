"""What the model-using built-in systems (`observations`, `summaries`) share.

Both read a history one session at a time, ask the memory model once per session for notes
(dated facts citing turn ids, or one summary), keep the notes as JSON in the store and rank
them for a question with a retriever of memevals.core.retrievers. This module holds:

- the rendering of a session for a prompt (its id, its date, each turn with its turn id);
- `ask`: one model call, strict parsing, one repair call saying what was wrong, then
  MemorySystemError naming the history, the session and the problem;
- the note store (`notes.json`) and the index that ranks notes into `MemoryItem`s;
- `NoteSystem`: the ingestion loop and retrieval both systems run (they differ in their
  prompts and in how a reply becomes notes);
- `prompt_version`: a version string that changes whenever a prompt or the session rendering
  changes, so the disk cache never mixes stores built from different prompts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from memevals.core.memory_system import (
    History,
    IngestReport,
    MemoryItem,
    MemoryQuery,
    MemorySystemError,
    ModelReply,
    Session,
    TextModel,
    Turn,
)
from memevals.core.retrievers import Index, MemoryUnit, Retriever, make_retriever
from memevals.memory_systems.units import save_vectors, stored_index

__all__ = [
    "NOTES_FILE",
    "NOTES_FORMAT",
    "QUOTED_REPLY_CHARS",
    "Asked",
    "BadReply",
    "Note",
    "NoteIndex",
    "NoteRetrieval",
    "NoteSystem",
    "ask",
    "notes_report",
    "parse_facts",
    "parse_summary",
    "prompt_version",
    "read_notes",
    "render_session",
    "repair_prompt",
    "require_model",
    "session_date",
    "strip_fence",
    "turn_line",
    "write_notes",
]

NOTES_FILE = "notes.json"
#: The layout of notes.json; a store of another layout is refused, never half-read.
NOTES_FORMAT = 1
#: How much of an unusable reply the repair prompt quotes back (a runaway reply must not
#: blow up the second prompt).
QUOTED_REPLY_CHARS = 2000

T = TypeVar("T")


class BadReply(ValueError):
    """The model's reply cannot be used; the message says why (it is sent back to the model)."""


# --------------------------------------------------------------------------------------------
# Rendering a session


def turn_line(turn: Turn, *, with_id: bool) -> str:
    """One turn as the prompt shows it: `[D1:3] Caroline: text (shared an image: caption)`."""
    line = f"{turn.speaker}: {turn.text.strip()}"
    if turn.image_caption:
        line += f" (shared an image: {turn.image_caption.strip()})"
    return f"[{turn.turn_id}] {line}" if with_id else line


def session_date(session: Session) -> str:
    return session.date.strip() or "an unknown date"


def render_session(session: Session, *, with_ids: bool) -> str:
    """The session's header (id and date) and its turns, one per line."""
    lines = [f"Session {session.session_id}, held on {session_date(session)}.", ""]
    lines += [turn_line(t, with_id=with_ids) for t in session.turns]
    return "\n".join(lines)


# A fixed session rendered into the version hash: a change of the rendering code changes the
# prompts the model sees, so it must change the version as a prompt edit does.
_PROBE = Session(
    session_id="S0",
    date="1 January 2000",
    turns=(
        Turn("D0:1", "A", " first ", image_caption=" a caption "),
        Turn("D0:2", "B", "second"),
    ),
)


def prompt_version(generation: str, *texts: str) -> str:
    """`<generation>-<hash>`: `generation` is bumped by hand when parsing or storing changes;
    the hash covers the prompt texts and the session rendering (with and without ids)."""
    digest = hashlib.sha256()
    for text in (
        *texts,
        render_session(_PROBE, with_ids=True),
        render_session(_PROBE, with_ids=False),
    ):
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return f"{generation}-{digest.hexdigest()[:10]}"


# --------------------------------------------------------------------------------------------
# Asking the model


def require_model(name: str, model: TextModel | None) -> TextModel:
    if model is None:
        raise MemorySystemError(
            f"memory={name} needs a memory model to ingest a history; in Inspect give one with "
            "--model-role memory=<model>"
        )
    return model


def repair_prompt(user: str, reply: str, problem: str) -> str:
    """The original request again, with the unusable reply quoted and what was wrong with it
    (the model is stateless: it sees one (system, user) pair per call)."""
    quoted = reply if len(reply) <= QUOTED_REPLY_CHARS else reply[:QUOTED_REPLY_CHARS] + " [...]"
    return (
        f"{user}\n\n"
        "Your previous reply to this request could not be used.\n"
        f"Problem: {problem}\n"
        f"Previous reply:\n{quoted}\n\n"
        "Reply again, following the required format exactly."
    )


@dataclass
class Asked:
    """What asking cost beyond the first call (for the ingestion report)."""

    repairs: int = 0


def ask(
    model: TextModel,
    system: str,
    user: str,
    parse: Callable[[str], T],
    *,
    name: str,
    history: History,
    session: Session,
    asked: Asked,
) -> T:
    """Ask once; on a bad reply ask once more with the problem spelled out; a second bad reply
    raises MemorySystemError naming the history, the session and the problem."""
    reply = _call(model, system, user, name, history, session)
    try:
        return parse(reply.text)
    except BadReply as exc:
        first = str(exc)
    asked.repairs += 1
    again = _call(model, system, repair_prompt(user, reply.text, first), name, history, session)
    try:
        return parse(again.text)
    except BadReply as exc:
        raise MemorySystemError(
            f"{name}: history {history.history_id!r}, session {session.session_id!r}: the "
            f"memory model's reply was unusable twice (first: {first}; after the repair "
            f"request: {exc}); {name} needs a memory model that writes the format its prompt "
            "asks for (--model-role memory=<model>)"
        ) from exc


def _call(
    model: TextModel, system: str, user: str, name: str, history: History, session: Session
) -> ModelReply:
    reply = model(system, user)
    if not isinstance(reply, ModelReply):
        raise MemorySystemError(
            f"{name}: history {history.history_id!r}, session {session.session_id!r}: the "
            f"memory model returned {type(reply).__name__}, not a ModelReply"
        )
    return reply


# --------------------------------------------------------------------------------------------
# Strict reply parsing


def strip_fence(text: str) -> str:
    """The reply without one surrounding ```json (or bare ```) fence; anything else around
    the fence is left in place, so it makes the reply unreadable rather than being dropped."""
    body = text.strip()
    if not body.startswith("```"):
        return body
    first, _, rest = body.partition("\n")
    if first.strip() not in ("```", "```json", "```JSON") or not rest.rstrip().endswith("```"):
        return body
    return rest.rstrip()[:-3].strip()


def parse_facts(text: str, session: Session) -> list[tuple[str, tuple[str, ...]]]:
    """A JSON array of {"fact": str, "turns": [turn id, ...]} (optionally fenced) ->
    [(fact, cited ids in session order)].

    Strict: the reply must be exactly that array; every element an object with exactly the
    keys "fact" (a non-empty string) and "turns" (a non-empty list of ids of turns of this
    session). Repeated ids in one citation are merged. `[]` is a valid reply.
    """
    body = strip_fence(text)
    if not body:
        raise BadReply(
            "the reply is empty; reply with a JSON array ([] if nothing is worth keeping)"
        )
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise BadReply(f"the reply is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, list):
        raise BadReply(f"the reply is a JSON {type(data).__name__}, not an array")
    order = {t.turn_id: j for j, t in enumerate(session.turns)}
    facts: list[tuple[str, tuple[str, ...]]] = []
    for n, element in enumerate(data, start=1):
        where = f"element {n}"
        if not isinstance(element, dict):
            raise BadReply(f"{where} is a JSON {type(element).__name__}, not an object")
        keys = set(element)
        if keys != {"fact", "turns"}:
            missing = sorted({"fact", "turns"} - keys)
            extra = sorted(keys - {"fact", "turns"})
            parts = [f"missing {', '.join(map(repr, missing))}"] if missing else []
            parts += [f"unexpected {', '.join(map(repr, extra))}"] if extra else []
            raise BadReply(
                f"{where} must have exactly the keys 'fact' and 'turns' ({'; '.join(parts)})"
            )
        fact, turns = element["fact"], element["turns"]
        if not isinstance(fact, str) or not fact.strip():
            raise BadReply(f"{where}: 'fact' must be a non-empty string, got {fact!r}")
        if not isinstance(turns, list) or not turns:
            raise BadReply(f"{where}: 'turns' must be a non-empty list of turn ids, got {turns!r}")
        bad = [t for t in turns if not isinstance(t, str) or t not in order]
        if bad:
            raise BadReply(
                f"{where} cites {', '.join(map(repr, bad))}, which is no turn id of session "
                f"{session.session_id} (its turn ids are {', '.join(order)})"
            )
        cited = tuple(sorted(set(turns), key=order.__getitem__))
        facts.append((fact.strip(), cited))
    return facts


def parse_summary(text: str) -> str:
    """The reply itself, stripped; an empty or blank reply is bad."""
    summary = text.strip()
    if not summary:
        raise BadReply("the reply is empty; reply with the summary of the session as plain text")
    return summary


# --------------------------------------------------------------------------------------------
# The note store


@dataclass(frozen=True)
class Note:
    """One stored note: its text, the ids it cites (turn ids for a fact, the session id for a
    summary), its session's date and session id."""

    text: str
    source_ids: tuple[str, ...]
    date: str
    session_id: str


def write_notes(store: Path, notes: Sequence[Note]) -> None:
    rows = [
        {
            "text": n.text,
            "source_ids": list(n.source_ids),
            "date": n.date,
            "session_id": n.session_id,
        }
        for n in notes
    ]
    body = {"format": NOTES_FORMAT, "notes": rows}
    (store / NOTES_FILE).write_text(json.dumps(body, ensure_ascii=False, indent=1), "utf-8")


def read_notes(store: Path) -> list[Note]:
    """The notes of a finished store; ValueError naming the file when it is not one."""
    path = store / NOTES_FILE
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read as a note store ({exc})") from exc
    if not isinstance(body, dict) or body.get("format") != NOTES_FORMAT:
        raise ValueError(f"{path} is not a note store of format {NOTES_FORMAT}")
    rows = body.get("notes")
    if not isinstance(rows, list):
        raise ValueError(f"{path} has no list of notes")
    notes = []
    for n, row in enumerate(rows):
        try:
            note = Note(
                text=row["text"],
                source_ids=tuple(row["source_ids"]),
                date=row["date"],
                session_id=row["session_id"],
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: note {n} is malformed ({exc!r})") from exc
        if not all(isinstance(v, str) for v in (note.text, note.date, note.session_id)) or not (
            note.source_ids and all(isinstance(i, str) for i in note.source_ids)
        ):
            raise ValueError(f"{path}: note {n} is malformed ({row!r})")
        notes.append(note)
    return notes


def notes_report(notes: Sequence[Note], history: History, asked: Asked) -> IngestReport:
    """The ingestion report: notes stored, sessions, repair calls (the harness counts the model
    calls and tokens itself; `llm_calls` is for a system's own endpoint, so it stays None)."""
    return IngestReport(
        items_stored=len(notes),
        extra={
            "sessions": len(history.sessions),
            "sessions_without_notes": len(
                {s.session_id for s in history.sessions} - {n.session_id for n in notes}
            ),
            "repair_calls": asked.repairs,
        },
    )


# --------------------------------------------------------------------------------------------
# Retrieval over notes


@dataclass(frozen=True)
class NoteIndex:
    """Notes ranked by a retriever for the query text."""

    retriever_index: Index
    notes: tuple[Note, ...]

    def retrieve(self, query: MemoryQuery) -> Sequence[MemoryItem]:
        if query.k < 1:
            raise ValueError(f"k must be >= 1, got {query.k}")
        return [
            MemoryItem(
                text=self.notes[p].text,
                source_ids=self.notes[p].source_ids,
                date=self.notes[p].date or None,
                verbatim=False,
            )
            for p in self.retriever_index.rank(query.text)[: query.k]
        ]


class NoteRetrieval:
    """The retriever part of a note system: validated at construction, in the cache key."""

    def __init__(self, retriever: str, embedding_model: str | None) -> None:
        self.retriever_name = retriever
        self._retriever: Retriever = make_retriever(retriever, embedding_model)
        self._embedding_model = embedding_model

    def args(self) -> dict[str, Any]:
        out: dict[str, Any] = {"retriever": self.retriever_name}
        if self.retriever_name == "embedding":
            out["embedding_model"] = getattr(self._retriever, "model_name", self._embedding_model)
        return out

    def save(self, store: Path, notes: Sequence[Note]) -> None:
        """What the retriever keeps of the notes (the embedding vectors, `save_vectors`)."""
        save_vectors(self._retriever, [note.text for note in notes], store)

    def open(self, store: Path) -> NoteIndex:
        notes = tuple(read_notes(store))
        units = [
            MemoryUnit(id=str(n), text=note.text, date=note.date, ids=note.source_ids)
            for n, note in enumerate(notes)
        ]
        return NoteIndex(stored_index(self._retriever, units, store), notes)


# --------------------------------------------------------------------------------------------
# The system both share


class NoteSystem:
    """A system whose memory model writes notes per session, ranked by a retriever.

    A subclass gives `name`, `version` (`prompt_version` of its prompts), `system_prompt` and
    `user_prompt` (with a `{session}` field; `with_ids` whether the session shows turn ids),
    `session_notes` (one session's call, through `ask_session`, and its notes) and `no_notes`
    (why a history gave nothing). A session without
    turns costs no call; a history that yields no note at all is an error, since an empty store
    would be scored as a memory that forgot everything when the model most likely failed.
    """

    name: str
    version: str
    system_prompt: str
    user_prompt: str
    with_ids = True
    uses_model = True  # the memory model writes the notes: it is part of the cache key

    def __init__(self, retriever: str = "bm25", embedding_model: str | None = None) -> None:
        self._retrieval = NoteRetrieval(retriever, embedding_model)

    @property
    def args(self) -> Mapping[str, Any]:
        return self._retrieval.args()

    def session_prompt(self, session: Session) -> str:
        """The user prompt that shows the memory model `session`."""
        return self.user_prompt.format(session=render_session(session, with_ids=self.with_ids))

    def ask_session(
        self,
        model: TextModel,
        history: History,
        session: Session,
        asked: Asked,
        parse: Callable[[str], T],
    ) -> T:
        """The memory model's parsed reply about one session (`ask`: one repair, then an error
        naming the history and the session).

        Args:
            model: the memory model.
            history: the history the session belongs to.
            session: the session shown.
            asked: the ingestion's call counts.
            parse: reads a reply (BadReply when unusable).

        Returns:
            What `parse` read.
        """
        return ask(
            model,
            self.system_prompt,
            self.session_prompt(session),
            parse,
            name=self.name,
            history=history,
            session=session,
            asked=asked,
        )

    def session_notes(
        self, model: TextModel, history: History, session: Session, asked: Asked
    ) -> list[Note]:
        """The notes of one session (a session with turns)."""
        raise NotImplementedError

    def no_notes(self, history: History) -> str:
        """The message of the error for a history that yielded no note."""
        raise NotImplementedError

    def ingest(self, history: History, store: Path, model: TextModel | None) -> IngestReport:
        model = require_model(self.name, model)
        asked = Asked()
        notes: list[Note] = []
        for session in history.sessions:
            if session.turns:  # nothing to read, nothing to cite: no call
                notes += self.session_notes(model, history, session, asked)
        if not notes:
            raise MemorySystemError(f"{self.name}: {self.no_notes(history)}")
        write_notes(store, notes)
        self._retrieval.save(store, notes)
        return notes_report(notes, history, asked)

    def open(self, store: Path, history: History) -> NoteIndex:
        return self._retrieval.open(store)

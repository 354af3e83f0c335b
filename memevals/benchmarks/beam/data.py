"""BEAM (Tavakoli et al., arXiv 2510.27246): conversations and probing questions, streamed.

A conversation is one folder `chats/<size>/<n>/` of the upstream repository: its chat (the
truncated copy `chat_trunecated.json`, sic, where upstream ships one, as upstream's answer
generation prefers it; else `chat.json`) and `probing_questions/probing_questions.json`. Every
file is pinned by its git blob id (eval.yaml `data`), so a 1M or 10M file can be verified
without anyone here having read it. The files are read from `<data dir>/beam/...` or
downloaded once into the cache; never vendored.

Chats are streamed with ijson: below 10M a chat is a list of batches, at 10M a list of plans
(one-key mappings `{plan name: [batches]}`); a batch holds `turns`, each a list of messages
`{"role", "content", ...}`. Messages come out one at a time in upstream's replay order (plans,
batches, turns, messages), so a 10M conversation (about 21,000 messages) is never a Python
object tree. Bad data is a DataError naming the file, the conversation, the question or
message, and the field.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from memevals.core.benchmark import read_eval_yaml
from memevals.core.files import (
    DATA_DIR_ENV,
    DataError,
    PinnedFile,
    cache_dir,
    cached_download,
    data_dir_file,
    override_dir,
    without_data_dir,
)
from memevals.core.validation import load_json

__all__ = [
    "ABILITIES",
    "COMMIT",
    "REPOSITORY",
    "SIZES",
    "BeamFile",
    "Conversation",
    "Message",
    "Question",
    "beam_files",
    "conversations",
    "git_blob_id",
    "iter_messages",
    "load_questions",
    "pinned_files",
]

REPOSITORY = "mohammadtavakoli78/BEAM"
COMMIT = "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"
_RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"

#: The four conversation sizes, smallest first (the paper calls 100K "128K").
SIZES: tuple[str, ...] = ("100K", "500K", "1M", "10M")
#: The size whose chats are lists of plans rather than lists of batches.
PLANNED_SIZE = "10M"
#: BEAM's ten memory abilities, in upstream's (alphabetical) report order.
ABILITIES: tuple[str, ...] = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
#: The field holding a question's reference answer, by ability. Only the rubric is scored; the
#: reference is the sample's target (logs, tables, a memevals-protocol judge).
REFERENCE_FIELDS: Mapping[str, str] = {
    "abstention": "ideal_response",
    "contradiction_resolution": "ideal_answer",
    "event_ordering": "answer",
    "information_extraction": "answer",
    "instruction_following": "expected_compliance",
    "knowledge_update": "answer",
    "multi_session_reasoning": "answer",
    "preference_following": "expected_compliance",
    "summarization": "ideal_summary",
    "temporal_reasoning": "answer",
}
CHAT = "chat.json"
TRUNCATED_CHAT = "chat_trunecated.json"  # sic: upstream's file name
QUESTIONS = "probing_questions/probing_questions.json"
ROLES = ("user", "assistant")


# ---------------------------------------------------------------------------------------------
# Pinned files


@dataclass(frozen=True)
class BeamFile:
    """One pinned upstream file: its repository path, git blob id and, where known, size and
    sha256."""

    path: str  # in the repository, e.g. "chats/100K/1/chat.json"
    git_blob: str
    size: int | None = None
    sha256: str | None = None

    @property
    def relpath(self) -> str:
        """Where it lives under a data dir and in the cache."""
        return f"beam/{self.path}"

    @property
    def url(self) -> str:
        return _RAW_URL.format(repo=REPOSITORY, commit=COMMIT, path=self.path)


@functools.cache
def beam_files() -> Mapping[str, BeamFile]:
    """The pinned files of eval.yaml `data`, by repository path.

    Returns:
        Path -> BeamFile, for every chat and question file of the four sizes.
    """
    meta = read_eval_yaml(Path(__file__).resolve().parent)
    out: dict[str, BeamFile] = {}
    for entry in meta["data"]:
        file = str(entry["file"])
        path = file.removeprefix("beam/")
        out[path] = BeamFile(
            path, str(entry["git_blob"]), entry.get("size_bytes"), entry.get("sha256")
        )
    return out


def pinned_files() -> tuple[PinnedFile, ...]:
    """The BEAM files whose sha256 is known, as pinned data files (the benchmark record's data).

    Every file, 1M and 10M too, is pinned by its git blob id (`beam_files`); these are the ones
    a sha256 also pins.

    Returns:
        One PinnedFile per such file.
    """
    return tuple(
        PinnedFile(f.relpath, f.url, f.sha256, f.size)
        for f in beam_files().values()
        if f.sha256 is not None
    )


def git_blob_id(path: Path) -> str:
    """The git blob id of a file: sha1 of `blob <size>\\0` followed by its bytes.

    Args:
        path: the file.

    Returns:
        The 40-hex id.
    """
    return _blob_id(str(path), *_stat(path))


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=512)
def _blob_id(path: str, size: int, mtime_ns: int) -> str:
    # keyed on size and mtime too: a file replaced in place is hashed again
    digest = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _blob_problem(path: Path, pinned: BeamFile) -> str | None:
    actual = git_blob_id(path)
    if actual == pinned.git_blob:
        return None
    return (
        f"git blob id is {actual}, expected {pinned.git_blob} ({REPOSITORY} at {COMMIT[:8]}); "
        "the file is corrupt or from another revision. Restore the pinned file."
    )


def _resolve(pinned: BeamFile, data_dir: str | os.PathLike[str] | None) -> Path:
    """A verified local copy of `pinned`: under the data dir (never downloaded there), else the
    cache, downloading once."""
    override = override_dir(data_dir)
    if override is not None:
        path = data_dir_file(override, pinned.relpath, pinned.url)
        problem = _blob_problem(path, pinned)
        if problem:
            raise DataError(
                f"{problem} Or {without_data_dir(override, pinned.url)}, or pass "
                "verify_checksum=false to read a same-schema copy unverified.",
                file=path,
            )
        return path
    path = cache_dir() / pinned.relpath
    if path.is_file() and _blob_problem(path, pinned) is None:
        return path
    return cached_download(
        pinned.url, pinned.relpath, timeout=300.0, verify=lambda tmp: _blob_problem(tmp, pinned)
    )


# ---------------------------------------------------------------------------------------------
# Conversations


@dataclass(frozen=True)
class Conversation:
    """One conversation's files: `chat` is the file upstream's answer generation reads."""

    size: str
    number: int
    chat: Path
    questions: Path
    chat_blob: str | None = None  # the verified git blob id (None when not verified)

    @property
    def id(self) -> str:
        """`<size>-<n>`, e.g. "100K-3"; the cluster of its questions."""
        return f"{self.size}-{self.number}"

    @property
    def where(self) -> str:
        return f"conversation {self.size}/{self.number}"


def check_size(size: str) -> str:
    """`size` as one of SIZES (case-insensitive: "100k" is 100K).

    Args:
        size: the `-T size=` value.

    Returns:
        The canonical spelling.
    """
    for known in SIZES:
        if str(size).strip().upper() == known:
            return known
    close = difflib.get_close_matches(str(size).upper(), SIZES, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(f"size={size!r} is not a BEAM size{hint}; choose from {', '.join(SIZES)}")


def _numbers(size: str) -> list[int]:
    prefix = f"chats/{size}/"
    found = {int(p[len(prefix) :].split("/")[0]) for p in beam_files() if p.startswith(prefix)}
    return sorted(found)


def conversations(
    size: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    verify_checksum: bool = True,
) -> list[Conversation]:
    """The conversations of one size, in number order, with verified local files.

    With `verify_checksum` (the default) the pinned files are used: the chat named by eval.yaml
    (the truncated copy where upstream has one), each file checked against its git blob id.
    Without it, a data dir is required and its folders are read as found (numeric folders of
    `beam/chats/<size>/`, the truncated chat where present): for same-schema copies such as a
    synthetic fixture.

    Args:
        size: one of SIZES.
        data_dir: a folder holding `beam/chats/...` (default MEMEVALS_DATA_DIR, else the cache).
        verify_checksum: check every file's git blob id.

    Returns:
        The conversations.
    """
    size = check_size(size)
    if not verify_checksum:
        return _unverified(size, data_dir)
    files = beam_files()
    out = []
    for n in _numbers(size):
        base = f"chats/{size}/{n}"
        chat = files.get(f"{base}/{TRUNCATED_CHAT}") or files[f"{base}/{CHAT}"]
        questions = files[f"{base}/{QUESTIONS}"]
        out.append(
            Conversation(
                size, n, _resolve(chat, data_dir), _resolve(questions, data_dir), chat.git_blob
            )
        )
    return out


def _unverified(size: str, data_dir: str | os.PathLike[str] | None) -> list[Conversation]:
    override = override_dir(data_dir)
    if override is None:
        raise ValueError(
            "verify_checksum=false reads unpinned copies from a data dir; give data_dir (or "
            f"{DATA_DIR_ENV})"
        )
    root = override / "beam" / "chats" / size
    if not root.is_dir():
        raise DataError(f"no folder of {size} conversations", file=root)
    out = []
    for folder in sorted(
        (p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
    ):
        chat = folder / TRUNCATED_CHAT
        chat = chat if chat.is_file() else folder / CHAT
        questions = folder / QUESTIONS
        for path in (chat, questions):
            if not path.is_file():
                raise DataError("missing", file=path, record=f"conversation {size}/{folder.name}")
        out.append(Conversation(size, int(folder.name), chat, questions))
    if not out:
        raise DataError(f"no numbered conversation folders of size {size}", file=root)
    return out


# ---------------------------------------------------------------------------------------------
# Probing questions


@dataclass(frozen=True)
class Question:
    """One probing question."""

    ability: str
    index: int  # position in its ability's list (0-based, as upstream's evaluation counts)
    order: int  # position in the file over all abilities (upstream asks in this order)
    question: str
    rubric: tuple[str, ...]
    reference: str  # the ability's reference answer field ("" when the file has none)
    difficulty: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)  # the item as in the file

    def sample_id(self, conv: Conversation) -> str:
        """`beam-<size>-<n>-<ability>-<i>`: stable across runs and machines."""
        return f"beam-{conv.size}-{conv.number}-{self.ability}-{self.index}"


def _question_error(conv: Conversation, where: str, fld: str, message: str) -> DataError:
    return DataError(message, file=conv.questions, record=f"{conv.where}, {where}", field=fld)


def _parse_question(conv: Conversation, ability: str, index: int, order: int, obj: Any) -> Question:
    where = f"question {ability}[{index}]"
    if not isinstance(obj, dict):
        raise _question_error(conv, where, ability, f"expected an object, got {type(obj).__name__}")
    text = obj.get("question")
    if not isinstance(text, str) or not text.strip():
        raise _question_error(conv, where, "question", "missing or not a non-empty string")
    rubric = obj.get("rubric")
    if not isinstance(rubric, list) or not rubric:
        raise _question_error(
            conv, where, "rubric", "missing or empty: every question is judged on its rubric"
        )
    for i, item in enumerate(rubric):
        if not isinstance(item, str) or not item.strip():
            raise _question_error(conv, where, f"rubric[{i}]", "not a non-empty string")
    reference = obj.get(REFERENCE_FIELDS[ability], "")
    if not isinstance(reference, str):
        raise _question_error(
            conv,
            where,
            REFERENCE_FIELDS[ability],
            f"expected a string, got {type(reference).__name__}",
        )
    difficulty = obj.get("difficulty")
    return Question(
        ability=ability,
        index=index,
        order=order,
        question=text,
        rubric=tuple(rubric),
        reference=reference,
        difficulty=difficulty if isinstance(difficulty, str) else None,
        fields=dict(obj),
    )


def load_questions(conv: Conversation) -> tuple[Question, ...]:
    """A conversation's probing questions, in file order (abilities as the file lists them).

    Args:
        conv: the conversation.

    Returns:
        Its questions; DataError (file, conversation, question, field) on bad data.
    """
    raw = load_json(conv.questions)
    if not isinstance(raw, dict):
        raise DataError(
            f"expected an object of ability -> questions, got {type(raw).__name__}",
            file=conv.questions,
            record=conv.where,
        )
    out: list[Question] = []
    for ability, items in raw.items():
        if ability not in ABILITIES:
            close = difflib.get_close_matches(str(ability), ABILITIES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise DataError(
                f"unknown ability {ability!r}{hint}; BEAM's abilities: {', '.join(ABILITIES)}",
                file=conv.questions,
                record=conv.where,
                field=str(ability),
            )
        if not isinstance(items, list):
            raise DataError(
                f"expected a list of questions, got {type(items).__name__}",
                file=conv.questions,
                record=conv.where,
                field=ability,
            )
        for index, obj in enumerate(items):
            out.append(_parse_question(conv, ability, index, len(out), obj))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Chats, streamed


@dataclass(frozen=True)
class Message:
    """One chat message in upstream's replay order."""

    role: str  # "user" | "assistant"
    content: str
    position: int  # 0-based over the whole conversation
    batch: int  # 1-based over the whole conversation (10M: plans in order, then batches)
    turn: int  # 1-based within its batch
    time_anchor: str | None = None  # the batch's time anchor, when it has one


def _ijson() -> Any:
    try:
        import ijson
    except ImportError as exc:
        raise ValueError(
            "BEAM streams its chats with ijson: pip install 'memevals[beam]' (or ijson)"
        ) from exc
    return ijson


def _chat_error(conv: Conversation, where: str, fld: str, message: str) -> DataError:
    return DataError(message, file=conv.chat, record=f"{conv.where}, {where}", field=fld)


def _batches(conv: Conversation, fh: BinaryIO) -> Iterator[tuple[str, Any]]:
    """(label, batch) in replay order: one top-level item at a time (a 10M plan is one item)."""
    ijson = _ijson()
    planned = conv.size == PLANNED_SIZE
    items = ijson.items(fh, "item", use_float=True)
    top = 0
    while True:
        try:
            obj = next(items)
        except StopIteration:
            return
        except ijson.JSONError as exc:
            raise DataError(
                f"invalid JSON after {top} top-level items: {str(exc).strip().splitlines()[0]}. "
                "The file is truncated or corrupt; restore the pinned file.",
                file=conv.chat,
                record=conv.where,
            ) from exc
        top += 1
        if not planned:
            yield f"batch {top}", obj
            continue
        if not isinstance(obj, dict) or len(obj) != 1:
            raise _chat_error(
                conv,
                f"plan {top}",
                "plan",
                "a 10M chat item must be a one-key object {plan: batches}",
            )
        [(name, batches)] = obj.items()
        if not isinstance(batches, list):
            raise _chat_error(conv, f"plan {top} ({name})", str(name), "expected a list of batches")
        for b, batch in enumerate(batches, start=1):
            yield f"plan {top} ({name}), batch {b}", batch


def iter_messages(conv: Conversation) -> Iterator[Message]:
    """Stream a conversation's messages in upstream's replay order.

    Args:
        conv: the conversation.

    Returns:
        Its messages one at a time; DataError naming the file, conversation, batch, turn and
        field on a malformed batch or message.
    """
    try:
        fh = conv.chat.open("rb")
    except OSError as exc:
        raise DataError(f"cannot open ({exc})", file=conv.chat, record=conv.where) from exc
    position = 0
    batch_no = 0
    with fh:
        first = fh.read(1)
        while first and first.isspace():
            first = fh.read(1)
        if first != b"[":
            raise DataError("expected a JSON list of batches", file=conv.chat, record=conv.where)
        fh.seek(0)
        for label, batch in _batches(conv, fh):
            batch_no += 1
            if not isinstance(batch, dict):
                raise _chat_error(
                    conv, label, "batch", f"expected an object, got {type(batch).__name__}"
                )
            turns = batch.get("turns")
            if not isinstance(turns, list):
                raise _chat_error(conv, label, "turns", "missing or not a list of turns")
            anchor = batch.get("time_anchor")
            anchor = anchor if isinstance(anchor, str) else None
            for t, turn in enumerate(turns, start=1):
                if not isinstance(turn, list):
                    raise _chat_error(
                        conv, f"{label}, turn {t}", "turns", "a turn must be a list of messages"
                    )
                for m, msg in enumerate(turn, start=1):
                    yield _message(
                        conv, f"{label}, turn {t}, message {m}", msg, position, batch_no, t, anchor
                    )
                    position += 1
    if position == 0:
        raise DataError("the chat holds no messages", file=conv.chat, record=conv.where)


def _message(
    conv: Conversation,
    where: str,
    msg: Any,
    position: int,
    batch: int,
    turn: int,
    anchor: str | None,
) -> Message:
    if not isinstance(msg, dict):
        raise _chat_error(conv, where, "message", f"expected an object, got {type(msg).__name__}")
    role = msg.get("role")
    if role not in ROLES:
        raise _chat_error(conv, where, "role", f"{role!r} is not one of {', '.join(ROLES)}")
    content = msg.get("content")
    if not isinstance(content, str):
        raise _chat_error(conv, where, "content", "missing or not a string")
    return Message(role, content, position, batch, turn, anchor)

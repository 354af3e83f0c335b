"""The agent mode's framework-free parts (`-T context=agent`, docs/agent_memory.md).

In every other context mode someone else builds what the model reads. Here the model under test
reads the history session by session and keeps its own memory, then answers from it:

- **Options.** `AgentOptions` from a task's option values (`agent_options`): the mode, the
  tool-calling rounds per session, the compaction strategy and its window, the MCP server, the
  length of a write-pass reply. An agent option without `context=agent`, or one of another
  mode, is an error naming it; `protocol=official` has no agent mode.
- **The write pass's input.** Each session in date order, rendered the way the benchmark renders
  its history for a memory system (its renderer, given the session verbatim), under our prompt
  (`write_prompt`). The question is asked as the benchmark asks it with no history block (its
  renderer given no items).
- **Once per history.** A finished write pass is kept in the disk cache
  (`<MEMEVALS_CACHE_DIR>/agent/<key>/`), keyed on the model, its generation settings, the agent
  options and the history's digest; written to a temporary folder and renamed when complete, so
  an interrupted pass is never read. `cache=False` keeps it in a folder of this run only.
- **Counted.** `WriteRecord`: model calls, tokens, tool calls by command, compactions, exhausted
  rounds, memory size, seconds.

This module imports no framework and names no benchmark.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
import shutil
import tempfile
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memevals.core.files import cache_dir
from memevals.core.memory_harness import IngestRecord, MemorySubject, Rendered, Retrieval
from memevals.core.memory_system import History, MemoryItem, MemorySystemError, Session
from memevals.core.options import (
    AGENT_CONTEXT,
    AGENT_DEFAULTS,
    AGENT_OPTIONS,
    checked_value,
    protocol_fix,
)
from memevals.core.prompt_item import PromptItem
from memevals.core.protocol import MEMEVALS, ProtocolError, resolve

__all__ = [
    "AGENT_KEY",
    "HOST_SYSTEM",
    "MEMORY_DIR",
    "READING_INTRO",
    "RECORD_FILE",
    "AgentCache",
    "AgentOptions",
    "McpServer",
    "StoredMemory",
    "WriteRecord",
    "agent_options",
    "answer_prompt",
    "cache_key",
    "host_values",
    "mcp_server",
    "memory_size",
    "read_folder",
    "session_texts",
    "write_estimate",
    "write_prompt",
]

#: The memory system whose binding to the questions (histories, queries, the benchmark's
#: renderer) the agent mode borrows; it never ingests or retrieves anything here.
HOST_SYSTEM = "bm25"
#: The folder Inspect's memory tool keeps its files under.
MEMORY_DIR = "/memories"
#: Written last into a finished store (its presence marks completion).
RECORD_FILE = "memevals-agent.json"
#: The per-sample metadata key of the write pass's record (and the answer pass's tool calls).
AGENT_KEY = "agent_memory"
#: Bumped when what a write pass stores changes, so an older store is never read as a new one.
STORE_VERSION = 1

_COMPACTION_MODES = ("compaction", "files+compaction")
_TOOL_MODES = ("files", "files+compaction", "mcp")


@dataclass(frozen=True)
class AgentOptions:
    """The checked `agent_*` options of a `context=agent` run."""

    memory: str = "files"
    steps: int = 8
    compaction: str = "auto"
    window: int = 16000
    mcp: str | None = None
    #: the most tokens of a write-pass reply and of a compaction summary
    write_tokens: int = 2048

    @property
    def files(self) -> bool:
        """The model keeps `/memories` files (Inspect's memory tool)."""
        return self.memory in ("files", "files+compaction")

    @property
    def compacts(self) -> bool:
        """All sessions stream through one context that a compaction strategy keeps small."""
        return self.memory in _COMPACTION_MODES

    @property
    def needs_tools(self) -> bool:
        """The mode only works with a model that calls tools."""
        return self.memory in _TOOL_MODES

    def settings(self) -> dict[str, Any]:
        """What the log records (and the cache keys on)."""
        out: dict[str, Any] = {
            "agent_memory": self.memory,
            "agent_steps": self.steps,
            "agent_write_tokens": self.write_tokens,
        }
        if self.compacts:
            out |= {"agent_compaction": self.compaction, "agent_window": self.window}
        if self.memory == "mcp":
            out["agent_mcp"] = self.mcp
        return out


def _positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{name} must be a whole number above 0, got {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name} must be a whole number above 0, got {value!r}") from None
    if number < 1:
        raise ValueError(f"{name} must be a whole number above 0, got {value!r}")
    return number


def _given(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: values[k] for k in AGENT_OPTIONS if values.get(k) is not None}


def agent_options(values: Mapping[str, Any]) -> AgentOptions | None:
    """The agent options of a task's option values (its `locals()`), checked: None unless
    `context=agent`. Raises ValueError naming the option: an agent option without
    `context=agent`, an option of another agent mode, `protocol=official`, a memory system or a
    retrieval option beside `context=agent`.

    Args:
        values: option name -> value, as the task was called.

    Returns:
        The options, or None for another context mode.
    """
    given = _given(values)
    if values.get("context") != AGENT_CONTEXT:
        if given:
            name = next(iter(given))
            raise ValueError(f"{name} applies only with context={AGENT_CONTEXT}")
        return None
    _check_host(values)
    mode = checked_value("agent_memory", given.get("agent_memory", AGENT_DEFAULTS["agent_memory"]))
    compacts = mode in _COMPACTION_MODES
    for name in ("agent_compaction", "agent_window"):
        if name in given and not compacts:
            raise ValueError(
                f"{name} applies only with agent_memory=compaction or files+compaction"
            )
    if "agent_mcp" in given and mode != "mcp":
        raise ValueError("agent_mcp applies only with agent_memory=mcp")
    if mode == "mcp" and not str(given.get("agent_mcp", "")).strip():
        raise ValueError(
            'agent_memory=mcp needs -T agent_mcp="<command> <args>" or an http(s):// URL'
        )
    if mode == "mcp":
        mcp_server(str(given["agent_mcp"]))  # a command that is not found fails here
    compaction = checked_value(
        "agent_compaction", given.get("agent_compaction", AGENT_DEFAULTS["agent_compaction"])
    )
    return AgentOptions(
        memory=mode,
        steps=_positive("agent_steps", given.get("agent_steps", AGENT_DEFAULTS["agent_steps"])),
        compaction=compaction,
        window=_positive("agent_window", given.get("agent_window", AGENT_DEFAULTS["agent_window"])),
        mcp=str(given["agent_mcp"]).strip() if mode == "mcp" else None,
        write_tokens=_positive(
            "agent_write_tokens",
            given.get("agent_write_tokens", AGENT_DEFAULTS["agent_write_tokens"]),
        ),
    )


#: Options of other context modes, refused beside context=agent rather than ignored.
_NOT_WITH_AGENT = (
    "memory", "memory_args", "memory_answers", "top_k", "max_context_tokens",
    "retrieval_unit", "retriever", "embedding_model",
)  # fmt: skip


def _check_host(values: Mapping[str, Any]) -> None:
    try:
        official = resolve(values.get("protocol", MEMEVALS.name)).official
    except ProtocolError as exc:
        raise ValueError(str(exc)) from exc
    if official:
        raise ValueError(
            f"protocol=official has no agent mode (context={AGENT_CONTEXT}); "
            f"{protocol_fix(MEMEVALS, lm_eval=False)}"
        )
    for name in _NOT_WITH_AGENT:
        if values.get(name) is not None:
            raise ValueError(f"{name} does not apply with context={AGENT_CONTEXT}")


def host_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """A task's option values as its benchmark's options take them: the agent knobs left out
    and, for `context=agent`, the memory-system binding (`HOST_SYSTEM`) asked for, which gives
    the histories, the questions and the benchmark's renderer the agent mode uses.

    Args:
        values: option name -> value, as the task was called.

    Returns:
        The values for the benchmark's options class.
    """
    out = {k: v for k, v in values.items() if k not in AGENT_OPTIONS}
    if out.get("context") == AGENT_CONTEXT:
        out |= {"context": "full", "memory": HOST_SYSTEM}
    return out


# --------------------------------------------------------------------------------------------
# What the model reads


def _no_ingest(history: History) -> IngestRecord:
    return IngestRecord(history.history_id, "", True, 0.0, 0, 0, 0)


def _context(rendered: Rendered, item: PromptItem) -> str:
    """The history block of a rendering (its context text, never the question)."""
    if rendered.system:
        return rendered.system.strip()
    user = rendered.user or ""
    return user.removesuffix(item.user).strip()


def session_texts(subject: MemorySubject, item: PromptItem) -> list[tuple[Session, str]]:
    """Each session of `item`'s history in date order with its text as the benchmark renders a
    memory system's verbatim items (one session at a time).

    Args:
        subject: the benchmark's memory binding of the run.
        item: a question of the history.

    Returns:
        (session, its rendered text) pairs.
    """
    _, history = subject.asked(item)
    out: list[tuple[Session, str]] = []
    for session in history.sessions:
        verbatim = MemoryItem(text="", source_ids=(session.session_id,), verbatim=True)
        retrieval = Retrieval((verbatim,), 1, 0, 0.0, _no_ingest(history))
        out.append((session, _context(subject.render(item, history, retrieval), item)))
    return out


def answer_prompt(subject: MemorySubject, item: PromptItem) -> tuple[str, str, dict[str, Any]]:
    """The question as the benchmark asks it with no history block (its rendering of a memory
    that returned nothing): (system text, user text, the rendering's metadata fields).

    Args:
        subject: the benchmark's memory binding of the run.
        item: the question.

    Returns:
        The prompt.
    """
    _, history = subject.asked(item)
    rendered = subject.render(item, history, Retrieval((), 0, 0, 0.0, _no_ingest(history)))
    if rendered.user is None:
        return rendered.system, item.user, dict(rendered.metadata)
    return "", rendered.user, dict(rendered.metadata)


def write_prompt(session: Session, text: str, number: int, total: int, mode: str) -> str:
    """The write pass's message for one session (our wording).

    Args:
        session: the session.
        text: the session as the benchmark renders it.
        number: its position (1-based).
        total: the sessions of the history.
        mode: the agent mode (what the model keeps its memory in).

    Returns:
        The message.
    """
    keep = {
        "files": f"Save what you will need in your memory directory {MEMORY_DIR} with the "
        "memory tool: you will not see this conversation again, only your memory.",
        "compaction": "Read it closely: your earlier context may be shortened at any time, "
        "and you will be asked about it later.",
        "files+compaction": f"Save what you will need in your memory directory {MEMORY_DIR} "
        "with the memory tool: your context may be shortened at any time.",
        "mcp": "Save what you will need with your memory tools: you will not see this "
        "conversation again, only your memory.",
    }[mode]
    date = session.date or "an unknown date"
    return (
        f"Session {number} of {total} of a long conversation, held on {date}. Later you "
        "will be asked questions about the people, events, dates and details in it. "
        f"{keep} Reply briefly when you are done.\n\n{text}"
    )


#: The first message of a compacted write pass: what the model is doing (kept through every
#: compaction, as a task's input is), the sessions following it one by one.
READING_INTRO = (
    "You will read a long conversation one session at a time. Later you will be asked "
    "questions about it, without seeing it again."
)

#: The answer pass's system note in the modes with a memory tool (the question is unchanged).
ANSWER_NOTE = (
    "Your memory holds the notes you kept while reading an earlier conversation. Consult it "
    "before you answer the question."
)


# --------------------------------------------------------------------------------------------
# What is stored, counted and cached


@dataclass
class WriteRecord:
    """One history's write pass, as each of its samples logs it (`cached`: read from the
    disk cache, so the counts are those of the run that wrote it)."""

    history_id: str
    key: str
    cached: bool = False
    sessions: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: dict[str, int] = field(default_factory=dict)
    #: sessions whose rounds ran out (`agent_steps`) while the model still called tools
    steps_exhausted: int = 0
    compactions: int = 0
    memory_files: int = 0
    memory_bytes: int = 0
    message_tokens: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def count_call(self, command: str) -> None:
        """Count one tool call by its command (or the tool's name)."""
        self.tool_calls[command] = self.tool_calls.get(command, 0) + 1


@dataclass(frozen=True)
class StoredMemory:
    """A finished write pass: the `/memories` files, the compacted messages (as the framework
    serialises them; empty without compaction) and the record."""

    files: Mapping[str, str]
    messages: Sequence[Mapping[str, Any]]
    record: WriteRecord
    #: the folder it lives in
    path: Path


def memory_size(files: Mapping[str, str]) -> tuple[int, int]:
    """(files, UTF-8 bytes) of a memory directory."""
    return len(files), sum(len(text.encode("utf-8")) for text in files.values())


def cache_key(
    model: str, generation: Mapping[str, Any], options: AgentOptions, history: History
) -> str:
    """The cache key of one write pass.

    Args:
        model: the model under test's name.
        generation: its generation settings (those that change what it writes).
        options: the agent options.
        history: the history read.

    Returns:
        A hex key.
    """
    body = json.dumps(
        {
            "version": STORE_VERSION,
            "model": model,
            "generation": dict(generation),
            "agent": options.settings(),
            "history_id": history.history_id,
            "history_digest": history.digest(),
        },
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]


class AgentCache:
    """The finished write passes of a run, on disk (the cache, or a folder of this run)."""

    def __init__(self, cache: bool = True, root: Path | None = None) -> None:
        self.cache = cache
        if cache:
            self.root = root or cache_dir() / "agent"
        else:
            self.root = Path(tempfile.mkdtemp(prefix="memevals-agent-"))
            weakref.finalize(self, shutil.rmtree, str(self.root), True)

    def load(self, key: str) -> StoredMemory | None:
        """The stored write pass of `key`, None when there is none (MemorySystemError when it
        is unreadable)."""
        path = self.root / key
        if not (path / RECORD_FILE).is_file():
            return None
        try:
            raw = json.loads((path / RECORD_FILE).read_text(encoding="utf-8"))
            files = json.loads((path / "memories.json").read_text(encoding="utf-8"))
            messages = json.loads((path / "messages.json").read_text(encoding="utf-8"))
            record = WriteRecord(**{**raw, "cached": True})
        except (OSError, ValueError, TypeError) as exc:
            raise MemorySystemError(
                f"agent memory: the cached write pass {path} is unreadable ({exc}); delete it "
                "or run with memory_cache=false"
            ) from exc
        return StoredMemory(files, messages, record, path)

    def save(
        self,
        key: str,
        files: Mapping[str, str],
        messages: Sequence[Mapping[str, Any]],
        record: WriteRecord,
    ) -> StoredMemory:
        """Store a finished write pass (a temporary folder renamed into place; a concurrent
        writer's store of the same key is kept)."""
        final = self.root / key
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        tmp.mkdir()
        (tmp / "memories.json").write_text(json.dumps(dict(files), indent=1), encoding="utf-8")
        (tmp / "messages.json").write_text(json.dumps(list(messages)), encoding="utf-8")
        for path, text in files.items():
            # the files as the model wrote them, for reading the store by hand
            target = tmp / "memories" / path.removeprefix(MEMORY_DIR).lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        (tmp / RECORD_FILE).write_text(json.dumps(record.as_dict(), indent=1), encoding="utf-8")
        try:
            os.rename(tmp, final)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not (final / RECORD_FILE).is_file():
                raise MemorySystemError(f"agent memory: could not move {tmp} to {final}") from None
        return StoredMemory(dict(files), list(messages), record, final)


# --------------------------------------------------------------------------------------------
# An MCP memory server (agent_memory=mcp)

#: What `agent_mcp` names the folder the server keeps its files in (in its args, env or URL).
STORE_PLACEHOLDER = "{store}"


@dataclass(frozen=True)
class McpServer:
    """An MCP memory server: a command line (stdio) with its environment, or a URL (http)."""

    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str = ""

    def at(self, store: Path) -> McpServer:
        """The server keeping its files in `store` (`{store}` replaced everywhere)."""

        def put(text: str) -> str:
            return text.replace(STORE_PLACEHOLDER, str(store))

        return McpServer(
            put(self.command),
            tuple(put(a) for a in self.args),
            {k: put(v) for k, v in self.env.items()},
            put(self.url),
        )


def mcp_server(spec: str) -> McpServer:
    """`agent_mcp` read: an http(s):// URL, or a command line whose leading `NAME=value` words
    are its environment (`{store}` names the store folder anywhere). ValueError for a command
    that is not found.

    Args:
        spec: the option's value.

    Returns:
        The server.
    """
    text = spec.strip()
    if text.startswith(("http://", "https://")):
        return McpServer(url=text)
    words = shlex.split(text)
    env: dict[str, str] = {}
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    if not words:
        raise ValueError(f"agent_mcp={spec!r} names no command")
    if shutil.which(words[0]) is None and not Path(words[0]).is_file():
        raise ValueError(f"agent_mcp: the command {words[0]!r} is not found")
    return McpServer(words[0], tuple(words[1:]), env)


def read_folder(folder: Path) -> dict[str, str]:
    """Every file under `folder` (a server's store) by its relative path, as text."""
    return {
        p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# --------------------------------------------------------------------------------------------
# Cost before a run (memevals.tools.estimate)

#: The share of a session's tokens a model is assumed to keep as notes when estimating what it
#: reads back (`write_estimate`): an assumption the estimate names, not a measurement.
NOTE_SHARE = 0.1


def write_estimate(
    sessions: Sequence[tuple[Session, str]],
    counter: Callable[[str], int],
    window: int = int(AGENT_DEFAULTS["agent_window"]),
    note_share: float = NOTE_SHARE,
) -> dict[str, int]:
    """Input tokens of one history's write pass under each `agent_memory`, before any call.

    `files` and `mcp`: every session's prompt once, plus the notes kept so far read back once
    per session (`note_share` of each earlier session); `compaction`: the context sent with
    each session, which grows by a session at a time and is cut back to the notes when it
    passes `window`; `files+compaction`: both.

    Args:
        sessions: the sessions with their rendered texts, in date order.
        counter: the token counter.
        window: `agent_window`.
        note_share: the share of a session assumed kept as notes.

    Returns:
        agent_memory -> input tokens.
    """
    prompts = [
        counter(write_prompt(s, text, n, len(sessions), "files"))
        for n, (s, text) in enumerate(sessions, 1)
    ]
    notes = [int(p * note_share) for p in prompts]
    files = sum(prompts) + sum(sum(notes[:k]) for k in range(len(prompts)))
    context, streamed = counter(READING_INTRO), 0
    for k, size in enumerate(prompts):
        if context + size > window:
            context = counter(READING_INTRO) + sum(notes[:k])
        context += size
        streamed += context
    return {
        "files": files,
        "mcp": files,
        "compaction": streamed,
        "files+compaction": streamed + sum(notes),
    }

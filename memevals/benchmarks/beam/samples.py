"""BEAM samples: the one assembly the Inspect tasks and the lm-eval tasks both call.

`build(options)` finds the conversations of a size (verified files), reads each one's probing
questions, keeps the asked abilities, gives each question its context (memory) and renders the
input under the protocol (official: upstream's texts; memevals: prompts). Conversations are
read one at a time and a chat is streamed, so a 10M dataset never holds more than one
conversation's chat; with a memory system under test no chat is read at all until the run asks
(`BeamHistories`).

Under the official protocol the long-context path also reproduces how upstream asks a
conversation's questions (answer_generation.py): the first question returns its message list
without the question, upstream keeps that list and appends every later question to it, never
removing one. So the first and second questions (file order, all abilities) are asked after the
history alone, and the j-th (j >= 3) after the history and questions 2 to j - 1, with no answers
between them; when the pruned history is empty, the kept list is empty too and upstream builds
it again for every question, so each is asked alone.

What each call sends besides its messages is decided here too (`decoding`): under the official
protocol what upstream's `ChatOpenAI(temperature=0)` sends (temperature 0 and no token limit, for
the reader, every rubric item and every equivalence call), under memevals temperature 0 and our
limits.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memevals.benchmarks.beam.data import (
    ABILITIES,
    COMMIT,
    REPOSITORY,
    Conversation,
    Question,
    check_size,
    conversations,
    git_blob_id,
    load_questions,
)
from memevals.benchmarks.beam.memory import (
    MESSAGE_TOKENS,
    PRUNE_MARGIN,
    BeamHistories,
    BeamMemory,
    Replay,
    Wrap,
    beam_memory,
    history_size,
    memory_renderer,
    rag_context,
    replay,
)
from memevals.benchmarks.beam.official import OfficialTexts, official_texts
from memevals.benchmarks.beam.prompts import FULL_SYSTEM, MEMORY_INTRO, RAG_INTRO
from memevals.core.build import Build
from memevals.core.memory_harness import MemoryRun, MemorySubject
from memevals.core.memory_options import MEMORY_CONTEXT, MemoryOptions
from memevals.core.memory_system import MemoryQuery
from memevals.core.prompt_item import PromptItem, parse_category_list
from memevals.core.protocol import DEFAULT, MEMEVALS, Protocol, resolve
from memevals.core.statistics import CLUSTER_KEY

__all__ = [
    "MEMEVALS_EQUIVALENCE_MAX_TOKENS",
    "MEMEVALS_JUDGE_MAX_TOKENS",
    "MEMEVALS_MAX_TOKENS",
    "TEMPERATURE",
    "BeamOptions",
    "Decoding",
    "build",
    "decoding",
    "judge_args",
    "parse_abilities",
    "upstream_dir",
]

logger = logging.getLogger(__name__)

#: Every call's temperature under both protocols (upstream builds each model with
#: `ChatOpenAI(temperature=0)`, src/llm.py).
TEMPERATURE = 0.0
#: protocol=memevals' token limits: the reader's answer, each rubric item's verdict and each
#: event-ordering equivalence call (which asks for one word). Upstream sends none.
MEMEVALS_MAX_TOKENS = 2048
MEMEVALS_JUDGE_MAX_TOKENS = 1024
MEMEVALS_EQUIVALENCE_MAX_TOKENS = 32


@dataclass(frozen=True)
class Decoding:
    """What each model call of a BEAM run sends besides its messages. A limit of None sends
    none and the provider's default applies, as with upstream's `ChatOpenAI` built without
    `max_tokens`."""

    temperature: float
    #: the reader's answer
    max_tokens: int | None
    #: each rubric item's grader call
    judge_max_tokens: int | None
    #: each event-ordering equivalence call
    equivalence_max_tokens: int | None

    def grader_settings(self) -> dict[str, Any]:
        """The grader's limits, for the task log (the reader's is Inspect's own config)."""
        return {
            "judge_max_tokens": self.judge_max_tokens,
            "equivalence_max_tokens": self.equivalence_max_tokens,
        }


def decoding(
    protocol: Protocol, max_tokens: int | None = None, judge_max_tokens: int | None = None
) -> Decoding:
    """The calls' settings under `protocol`: official, temperature 0 and no token limit
    anywhere (upstream's reader and grader); memevals, temperature 0 and our limits.

    Args:
        protocol: the run's protocol.
        max_tokens: the reader's limit (None: the protocol's; under official an explicit
            value caps the answer where upstream does not).
        judge_max_tokens: each rubric item's limit (None or memevals' default, the task's
            default: the protocol's); another value is memevals only, since upstream's grader
            sends none.

    Returns:
        The settings.
    """
    for name, value in (("max_tokens", max_tokens), ("judge_max_tokens", judge_max_tokens)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if judge_max_tokens == MEMEVALS_JUDGE_MAX_TOKENS:
        judge_max_tokens = None  # the task's default: the protocol's limit
    if protocol.official:
        if judge_max_tokens is not None:
            raise ValueError(
                f"judge_max_tokens={judge_max_tokens}: protocol={protocol} judges with "
                "upstream's grader, which sends no token limit; judge_max_tokens applies to "
                f"protocol={MEMEVALS}: {MEMEVALS.fix(lm_eval=False)}"
            )
        return Decoding(TEMPERATURE, max_tokens, None, None)
    return Decoding(
        TEMPERATURE,
        MEMEVALS_MAX_TOKENS if max_tokens is None else max_tokens,
        MEMEVALS_JUDGE_MAX_TOKENS if judge_max_tokens is None else judge_max_tokens,
        MEMEVALS_EQUIVALENCE_MAX_TOKENS,
    )


@dataclass(frozen=True)
class BeamOptions:
    """Everything that decides BEAM's samples (the `-T` / `--metadata` options), with their
    one set of defaults (memevals.core.options.options_from builds it in both frameworks)."""

    size: str = "100K"
    categories: str | tuple[str, ...] | None = None  # abilities; None = all ten
    protocol: Protocol = DEFAULT
    memory: MemoryOptions = field(default_factory=MemoryOptions)
    context_window: int | None = None
    data_dir: str | None = None
    verify_checksum: bool = True
    #: the reader's token limit (None: the protocol's, `decoding`)
    max_tokens: int | None = None
    #: each rubric item's limit under memevals; this default means the protocol's (`decoding`)
    judge_max_tokens: int | None = MEMEVALS_JUDGE_MAX_TOKENS

    def __post_init__(self) -> None:
        # a protocol given by name (a caller of its own) is resolved here, the option's check
        object.__setattr__(self, "protocol", resolve(self.protocol))


def judge_args(options: BeamOptions) -> dict[str, Any]:
    """The rubric judge's arguments for a run of `options`: its token limit per rubric item
    (the protocol's, `decoding`) and where upstream's copies are.

    Args:
        options: the run's options.

    Returns:
        `max_tokens` and `data_dir`, as the judge takes them.
    """
    sent = decoding(options.protocol, options.max_tokens, options.judge_max_tokens)
    return {"max_tokens": sent.judge_max_tokens, "data_dir": upstream_dir(options.data_dir)}


def parse_abilities(categories: Iterable[str] | str | None) -> list[str]:
    """Ability names from a `categories` value (comma-separated, kebab or snake case); None =
    all ten. An unknown name is an error listing the ten."""
    try:
        return parse_category_list(categories, ABILITIES, numbers={}, benchmark="BEAM ability")
    except ValueError as exc:
        given = categories.split(",") if isinstance(categories, str) else list(categories or ())
        unknown = [c.strip() for c in given if c.strip().lower().replace("-", "_") not in ABILITIES]
        close = difflib.get_close_matches(unknown[0], ABILITIES, n=1) if unknown else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{exc}{hint}") from None


def upstream_dir(data_dir: str | None) -> str | None:
    """The task's data dir when it holds upstream's copies, else None (MEMEVALS_DATA_DIR or the
    cache)."""
    if data_dir and (Path(data_dir) / "upstream" / "BEAM").is_dir():
        return data_dir
    return None


@dataclass(frozen=True)
class _Render:
    """What every question of one conversation shares."""

    conv: Conversation
    protocol: Protocol
    memory: BeamMemory
    texts: OfficialTexts | None
    history: Replay | None


def _question_message(r: _Render, q: Question) -> str:
    return r.texts.question_message(q.question) if r.texts is not None else q.question


def _base_metadata(r: _Render, q: Question) -> dict[str, Any]:
    conv = r.conv
    return {
        "benchmark": "beam",
        "size": conv.size,
        "conversation": conv.id,
        "category": q.ability,
        "question_index": q.index,
        "question_order": q.order,
        "question": q.question,
        "rubric": list(q.rubric),
        "difficulty": q.difficulty,
        "protocol": r.protocol.name,
        "context": r.memory.context,
        CLUSTER_KEY: conv.id,
    }


def _history_item(r: _Render, q: Question, asked_before: Sequence[Question]) -> PromptItem:
    """full / truncated / none: the (kept) chat as messages, then the question."""
    counter = r.memory.token_counter
    md = _base_metadata(r, q)
    history = r.history.messages if r.history is not None else ()
    system = ""
    prior: tuple[tuple[str, str], ...] = ()
    if not r.protocol.official and r.history is not None:
        system = FULL_SYSTEM
    elif r.memory.context == "full" and history:
        # upstream's kept message list grows by every question asked before (module docstring)
        prior = tuple(("user", _question_message(r, p)) for p in asked_before)
    user = _question_message(r, q)
    if r.history is not None:
        md |= {
            "history_messages": len(history),
            "history_total_messages": r.history.total_messages,
            "history_tokens": r.history.history_tokens,
            "history_shown_tokens": r.history.shown_tokens,
            "history_pruned": r.history.pruned,
            "prior_questions": len(prior),
        }
    # the history's size is known from the replay; only the messages around it are counted
    size = r.history.shown_tokens if r.history is not None and history else history_size([])
    extra = [system] if system else []
    extra += [c for _, c in prior] + [user]
    md |= {
        "prompt_tokens": size + sum(MESSAGE_TOKENS + counter(c) for c in extra),
        "token_counter": counter.name,
    }
    return PromptItem(
        id="", system=system, user=user, target=q.reference, metadata=md, messages=history + prior
    )


def _rag_item(r: _Render, q: Question) -> PromptItem:
    ids, chunks = r.memory.ranked_chunks(r.conv, q.question)
    context = rag_context(chunks)
    if r.texts is not None:
        system, user = "", r.texts.rag_prompt(context, q.question)
    else:
        system, user = f"{RAG_INTRO}\n\n{context}".rstrip() + "\n", q.question
    counter = r.memory.token_counter
    md = _base_metadata(r, q) | {
        "retrieved_ids": ids,
        "prompt_tokens": history_size([counter(c) for c in (system, user) if c]),
        "token_counter": counter.name,
    }
    return PromptItem(id="", system=system, user=user, target=q.reference, metadata=md)


def _memory_item(r: _Render, q: Question) -> PromptItem:
    """The question alone: the memory system gives the context at run time."""
    md = _base_metadata(r, q) | {"token_counter": r.memory.token_counter.name}
    return PromptItem(
        id="", system="", user=_question_message(r, q), target=q.reference, metadata=md
    )


def _conversation_items(
    r: _Render, questions: Sequence[Question], wanted: Sequence[str]
) -> list[PromptItem]:
    out = []
    for q in questions:
        if q.ability not in wanted:
            continue
        if r.memory.context == "rag":
            item = _rag_item(r, q)
        elif r.memory.context == MEMORY_CONTEXT:
            item = _memory_item(r, q)
        else:
            # upstream keeps the first question's list without it: questions 2 .. j - 1
            item = _history_item(r, q, questions[1 : q.order])
        out.append(
            PromptItem(
                id=q.sample_id(r.conv),
                system=item.system,
                user=item.user,
                target=item.target,
                metadata=item.metadata,
                messages=item.messages,
            )
        )
    return out


def build(options: BeamOptions) -> Build:
    """The samples of `options`; every option is checked before any file is read.

    Args:
        options: the task's options.

    Returns:
        The items (conversation by conversation, questions in file order), the run's log, the
        reader's settings (`decoding`), the memory subject (None without a memory system) and
        the dataset's name (`beam_<size>`).
    """
    size = check_size(options.size)
    protocol = options.protocol
    calls = decoding(protocol, options.max_tokens, options.judge_max_tokens)
    wanted = parse_abilities(options.categories)
    memory = beam_memory(options.memory, protocol=protocol, context_window=options.context_window)
    texts = official_texts(upstream_dir(options.data_dir)) if protocol.official else None
    convs = conversations(size, options.data_dir, verify_checksum=options.verify_checksum)
    items: list[PromptItem] = []
    empty: list[str] = []  # official full: the chats the window keeps nothing of
    for conv in convs:
        questions = load_questions(conv)
        if any(q.ability in wanted for q in questions):  # else its chat is never read
            r = _Render(conv, protocol, memory, texts, _history(conv, memory, protocol))
            if r.history is not None and r.history.total_messages and not r.history.messages:
                empty.append(conv.id)
            items.extend(_conversation_items(r, questions, wanted))
    if empty:
        logger.warning(_empty_warning(memory, empty, len(convs)))
    if not items:
        raise ValueError(f"no BEAM question of categories={options.categories!r} in size {size}")
    blobs = {c.id: c.chat_blob or git_blob_id(c.chat) for c in convs}
    log: dict[str, Any] = {
        "benchmark": "beam",
        "size": size,
        "protocol": protocol.name,
        "categories": wanted,
        "data_repository": REPOSITORY,
        "data_revision": COMMIT,
        "checksum_verified": options.verify_checksum,
        **calls.grader_settings(),
        **memory.settings(),
    }
    subject = _subject(convs, items, memory, blobs, _memory_wrap(texts))
    if subject is not None:
        log |= subject.settings()
    return Build.of(
        items,
        log,
        max_tokens=calls.max_tokens,
        temperature=calls.temperature,
        subject=subject,
        dataset=f"beam_{size}",
    )


def _history(conv: Conversation, memory: BeamMemory, protocol: Protocol) -> Replay | None:
    """The chat a question is asked after (full / truncated), as the protocol prunes it."""
    if memory.context not in ("full", "truncated"):
        return None
    history = replay(conv, memory.token_counter, memory.keep_rule(protocol))
    if memory.context == "truncated" and not history.messages:
        raise ValueError(
            f"{conv.where}: max_context_tokens={memory.max_context_tokens} leaves no "
            "room for any message; give a larger max_context_tokens"
        )
    if not history.messages and history.total_messages and not protocol.official:
        # upstream sends such a window's empty history (official: said once, `_empty_warning`)
        raise ValueError(
            f"{conv.where}: context_window={memory.context_window} leaves no room for any "
            f"message (memevals keeps the newest messages within the window less "
            f"{PRUNE_MARGIN:,} tokens); give a larger context_window"
        )
    return history


def _empty_warning(memory: BeamMemory, empty: Sequence[str], conversations: int) -> str:
    """The one-line warning of an official `full` run whose window keeps no message of some
    chats: upstream's pruning then keeps an empty history and upstream asks the question
    without it, so memevals does too and says so once."""
    shown = ", ".join(empty[:5]) + (", ..." if len(empty) > 5 else "")
    return (
        f"BEAM protocol=official: context_window={memory.context_window} keeps no message of "
        f"the chat for {len(empty)} of {conversations} conversations ({shown}); as "
        "upstream's pruning does, their questions are sent with no history. Use a larger "
        "context_window (protocol=memevals refuses such a window)"
    )


def _memory_wrap(texts: OfficialTexts | None) -> Wrap:
    """Where a memory system's context goes: official, upstream's RAG prompt (one user message
    with the context and the question, as its RAG reader sends retrieved chunks); memevals, a
    system message under our introduction beside the question."""
    if texts is not None:
        official = texts
        return lambda context, item: (
            context,
            official.rag_prompt(context, str(item.metadata["question"])),
        )
    return lambda context, item: (f"{MEMORY_INTRO}\n\n{context}".rstrip() + "\n", None)


def _subject(
    convs: Sequence[Conversation],
    items: Sequence[PromptItem],
    memory: BeamMemory,
    blobs: dict[str, str],
    wrap: Wrap,
) -> MemorySubject | None:
    """The memory system under test bound to these questions (None without one): one history
    per conversation (its id the conversation's), ingested once, keyed on its chat's blob id."""
    if memory.system is None:
        return None
    choice = memory.system
    asked = {str(i.metadata["conversation"]) for i in items}
    used = [c for c in convs if c.id in asked]
    digest = hashlib.sha256(
        "\n".join(f"{k} {blobs[k]}" for k in sorted(asked)).encode()
    ).hexdigest()
    return MemorySubject(
        run=MemoryRun(
            choice.system,
            data_sha256=digest,
            cache=choice.cache,
            history_data_sha256={c.id: blobs[c.id] for c in used},
        ),
        histories=BeamHistories(used),
        queries={
            i.id: MemoryQuery(
                text=str(i.metadata["question"]),
                k=choice.top_k,
                history_id=str(i.metadata["conversation"]),
            )
            for i in items
        },
        render=memory_renderer(wrap),
        counter=memory.token_counter,
        k=choice.top_k,
        answers=choice.answers,
    )

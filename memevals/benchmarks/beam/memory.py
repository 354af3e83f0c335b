"""BEAM memory: which part of the chat the model sees (README.md#protocol).

- `full`: upstream's long-context path. The chat is replayed as user/assistant messages. Under
  the official protocol it is pruned by upstream's rule (`upstream_prune`): when the history's
  estimated size (2 + Σ (4 + tokens of each message), cl100k_base) exceeds the window − 10,000
  tokens, upstream walks back from the newest message adding 6 + tokens per message and keeps
  the messages up to and including the one that takes the sum past window − 2,000, dropping
  the oldest kept one when their number is odd; when the walk never passes that limit it keeps
  nothing. Under the memevals protocol the newest messages that fit window − 10,000 are kept,
  starting with a user message (`tail_within`).
- `truncated`: the newest messages within `max_context_tokens` (same size estimate).
- `rag`: the chat's turns (a user message and the replies that follow it, upstream's
  `turn_chunk`: each message as `ROLE: content` and a blank line) ranked by the shared BM25 or
  embedding retrievers for the question; the `top_k` best in rank order, each added while the
  context stays under upstream's reader limit (characters / 3.5 < 29,000).
- `none`: the question alone.
- `memory`: a memory system under test ingests each conversation once (`beam_history`: every
  turn as a session, its messages as turns) and retrieves for the question; verbatim items are
  shown as rag shows its turns, other items as notes. No items is the system's answer: the
  sample is then sent as under `none`.

Token counts use memevals.core.tokens; upstream counts with tiktoken's cl100k_base, which the
default counter matches.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memevals.benchmarks.beam.data import Conversation, Message, iter_messages
from memevals.core.memory_harness import Rendered, Renderer, Retrieval
from memevals.core.memory_options import MemoryOptions, MemoryStrategy, RagDefaults
from memevals.core.memory_system import History, MemoryItem
from memevals.core.memory_system import Session as HistorySession
from memevals.core.memory_system import Turn as HistoryTurn
from memevals.core.protocol import MEMEVALS, Protocol
from memevals.core.retrievers import MemoryUnit, positive_tokens, strategy_settings
from memevals.core.tokens import TokenCounter, get_token_counter

__all__ = [
    "CONTEXT_MODES",
    "DEFAULT_CONTEXT_WINDOW",
    "BeamHistories",
    "BeamMemory",
    "Replay",
    "beam_history",
    "beam_memory",
    "chunk_text",
    "conversation_units",
    "replay",
    "tail_within",
    "upstream_prune",
]

logger = logging.getLogger(__name__)

CONTEXT_MODES: tuple[str, ...] = ("full", "truncated", "rag", "none")
#: upstream's default `max_tokens` of the reader (model_config_default): the window its
#: long-context pruning is computed for unless told otherwise
DEFAULT_CONTEXT_WINDOW = 1_000_000
#: upstream prunes when the history exceeds the window minus this
PRUNE_MARGIN = 10_000
#: and then keeps about the window minus this
KEEP_MARGIN = 2_000
#: upstream's size estimate: 2 tokens of priming, 4 per message around its content
PRIMING_TOKENS = 2
MESSAGE_TOKENS = 4
#: upstream's RAG reader limit: the context's characters / 3.5 stay below this
RAG_CHAR_TOKENS = 29_000
RAG_CHARS_PER_TOKEN = 3.5
RETRIEVAL_UNITS: tuple[str, ...] = ("turn",)
DEFAULT_TOP_K = 5
RAG_DEFAULTS = RagDefaults(
    benchmark="BEAM", units=RETRIEVAL_UNITS, unit="turn", top_k=DEFAULT_TOP_K, retriever="bm25"
)
#: the official protocol's counter (upstream's tiktoken encoding)
OFFICIAL_COUNTER = "cl100k_base"


# ---------------------------------------------------------------------------------------------
# Pruning rules


def history_size(tokens: Sequence[int]) -> int:
    """Upstream's size estimate of messages with these content token counts."""
    return PRIMING_TOKENS + sum(MESSAGE_TOKENS + t for t in tokens)


def upstream_prune(tokens: Sequence[int], window: int) -> int:
    """Where upstream's `prune_from_tail` starts the kept history (module docstring).

    Args:
        tokens: the content tokens of each message, oldest first.
        window: the reader's window (upstream's `max_tokens`).

    Returns:
        The index of the first message kept; `len(tokens)` when nothing is kept.
    """
    n = len(tokens)
    if history_size(tokens) <= window - PRUNE_MARGIN:
        return 0
    limit = window - KEEP_MARGIN
    count = 0
    for index, t in enumerate(reversed(tokens)):
        # upstream measures each message alone: priming + message overhead + content
        count += PRIMING_TOKENS + MESSAGE_TOKENS + t
        if count > limit:
            keep = index + 1
            if keep % 2 == 1:
                keep -= 1
            return n - keep
    return n  # the walk never passed the limit: upstream returns no history


def tail_within(tokens: Sequence[int], roles: Sequence[str], budget: int) -> int:
    """The start of the longest suffix whose size estimate fits `budget` and that begins with a
    user message (memevals' rule).

    Args:
        tokens: the content tokens of each message, oldest first.
        roles: each message's role.
        budget: the token budget of the history.

    Returns:
        The index of the first message kept; `len(tokens)` when none fits.
    """
    size = PRIMING_TOKENS
    start = len(tokens)
    for i in range(len(tokens) - 1, -1, -1):
        size += MESSAGE_TOKENS + tokens[i]
        if size > budget:
            break
        start = i
    while start < len(tokens) and roles[start] != "user":
        start += 1
    return start


@dataclass(frozen=True)
class Replay:
    """A conversation's history as shown: the kept messages and what was measured."""

    messages: tuple[tuple[str, str], ...]  # (role, content), oldest first
    total_messages: int
    history_tokens: int  # size estimate of the whole chat
    shown_tokens: int  # size estimate of the kept messages

    @property
    def pruned(self) -> bool:
        return len(self.messages) < self.total_messages


def replay(
    conv: Conversation, counter: TokenCounter, keep: Callable[[list[int], list[str]], int]
) -> Replay:
    """Stream the chat and keep the suffix `keep` chooses (one conversation in memory at a time).

    Args:
        conv: the conversation.
        counter: the token counter.
        keep: (tokens, roles) -> index of the first message kept.

    Returns:
        The kept messages and their sizes.
    """
    roles: list[str] = []
    contents: list[str] = []
    tokens: list[int] = []
    for msg in iter_messages(conv):
        roles.append(msg.role)
        contents.append(msg.content)
        tokens.append(counter(msg.content))
    start = keep(tokens, roles)
    kept = tuple(zip(roles[start:], contents[start:], strict=True))
    return Replay(
        kept, len(roles), history_size(tokens), history_size(tokens[start:]) if kept else 0
    )


# ---------------------------------------------------------------------------------------------
# Turns: the rag units and the memory systems' sessions


def chunk_text(messages: Sequence[tuple[str, str]]) -> str:
    """A turn as upstream's `turn_chunk` writes it: `ROLE: content`, a space and a blank line
    after each message."""
    return "".join(f"{role.upper()}: {content} \n\n" for role, content in messages)


def _turns(conv: Conversation) -> Iterator[tuple[str, str | None, list[Message]]]:
    """(turn id, time anchor, messages) for each turn of the chat, in replay order."""
    current: list[Message] = []
    for msg in iter_messages(conv):
        if current and (msg.batch, msg.turn) != (current[0].batch, current[0].turn):
            yield _turn_id(current[0]), current[0].time_anchor, current
            current = []
        current.append(msg)
    if current:
        yield _turn_id(current[0]), current[0].time_anchor, current


def _turn_id(msg: Message) -> str:
    return f"b{msg.batch}t{msg.turn}"


def conversation_units(conv: Conversation) -> list[MemoryUnit]:
    """The rag units of a conversation: one per turn, its text upstream's chunk."""
    return [
        MemoryUnit(id=tid, text=chunk_text([(m.role, m.content) for m in msgs]), date=anchor or "")
        for tid, anchor, msgs in _turns(conv)
    ]


def beam_history(conv: Conversation) -> History:
    """The conversation as a memory system ingests it: each turn a session `b<batch>t<turn>`
    dated by its batch's time anchor (or undated), its messages as turns `<session>m<k>` whose
    `search_text` is the message as rag's chunk writes it, so a session unit indexes exactly
    rag's turn chunk (`memory=bm25` ranks as `context=rag`)."""
    sessions = []
    for tid, anchor, msgs in _turns(conv):
        turns = tuple(
            HistoryTurn(
                turn_id=f"{tid}m{k}",
                speaker=m.role,
                text=m.content,
                search_text=chunk_text([(m.role, m.content)]),
            )
            for k, m in enumerate(msgs, start=1)
        )
        sessions.append(HistorySession(session_id=tid, date=anchor or "", turns=turns))
    return History(
        history_id=conv.id,
        sessions=tuple(sessions),
        speakers=("user", "assistant"),
        default_unit="session",
    )


class BeamHistories(Mapping[str, History]):
    """Conversation id -> History, read from the chat file when asked for (streamed), the most
    recent few kept: building a 10M dataset holds no history, and a run holds the few being
    asked about. Thread-safe (the Inspect solver asks from worker threads)."""

    def __init__(self, conversations: Sequence[Conversation], keep: int = 2) -> None:
        self._conversations = {c.id: c for c in conversations}
        self._keep = keep
        self._cache: OrderedDict[str, History] = OrderedDict()
        self._lock = threading.Lock()

    def __getitem__(self, key: str) -> History:
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
            history = beam_history(self._conversations[key])
            self._cache[key] = history
            while len(self._cache) > self._keep:
                self._cache.popitem(last=False)
            return history

    def __iter__(self) -> Iterator[str]:
        return iter(self._conversations)

    def __len__(self) -> int:
        return len(self._conversations)


# ---------------------------------------------------------------------------------------------
# Rendering retrieved turns and memory items


def rag_context(chunks: Sequence[str]) -> str:
    """Retrieved chunks joined in rank order as upstream's RAG reader does: each added while
    the context's characters / 3.5 stay below 29,000 (a chunk that does not fit is skipped,
    later ones may still be added)."""
    context = ""
    for chunk in chunks:
        if len(context + chunk) // RAG_CHARS_PER_TOKEN < RAG_CHAR_TOKENS:
            context += chunk
    return context


def memory_context(history: History, items: Sequence[MemoryItem]) -> tuple[str, list[str]]:
    """A memory system's items as context text and the ids shown: verbatim items citing turns
    or sessions as rag's chunks of their sessions (rank order, each session once), other items
    by their own text, dated when they have a date."""
    sessions = {s.session_id: s for s in history.sessions}
    by_turn = {t.turn_id: s for s in history.sessions for t in s.turns}
    chunks: list[str] = []
    shown: list[str] = []
    for item in items:
        cited = [sessions.get(i) or by_turn[i] for i in item.source_ids]
        if item.verbatim and cited:
            for s in cited:
                if s.session_id not in shown:
                    shown.append(s.session_id)
                    chunks.append(chunk_text([(t.speaker, t.text) for t in s.turns]))
            continue
        date = item.date or next((s.date for s in cited if s.date), "")
        chunks.append(f"{date}: {item.text.strip()}\n\n" if date else f"{item.text.strip()}\n\n")
        shown.extend(i for i in item.source_ids if i not in shown)
    return rag_context(chunks), shown


# ---------------------------------------------------------------------------------------------
# The strategy


@dataclass(frozen=True)
class BeamMemory(MemoryStrategy):
    """The validated memory settings of a BEAM run (`beam_memory`)."""

    context_window: int | None = None
    _indexes: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def settings(self) -> dict[str, Any]:
        """The parameters of its mode, for the log."""
        out = strategy_settings(self, self.token_counter.name)
        if self.context == "full":
            out["context_window"] = self.context_window
        return out

    def keep_rule(self, protocol: Protocol) -> Callable[[list[int], list[str]], int]:
        """The pruning rule of `full` / `truncated` under `protocol`."""
        if self.context == "truncated":
            assert self.max_context_tokens is not None
            budget = self.max_context_tokens
            return lambda tokens, roles: tail_within(tokens, roles, budget)
        assert self.context_window is not None
        window = self.context_window
        if protocol.official:
            return lambda tokens, roles: upstream_prune(tokens, window)
        return lambda tokens, roles: tail_within(tokens, roles, window - PRUNE_MARGIN)

    def ranked_chunks(self, conv: Conversation, question: str) -> tuple[list[str], list[str]]:
        """context=rag: the top_k turn ids and chunks for `question`, best first; the index of
        a conversation is built once per run."""
        assert self.retriever is not None and self.top_k is not None
        hit = self._indexes.get(conv.id)
        if hit is None:
            units = conversation_units(conv)
            hit = (self.retriever.index(units), units)
            self._indexes.clear()  # one conversation's index at a time (samples go in order)
            self._indexes[conv.id] = hit
        index, units = hit
        chosen = [units[p] for p in index.rank(question)[: self.top_k]]
        return [u.id for u in chosen], [u.text for u in chosen]


def beam_memory(
    options: MemoryOptions, *, protocol: Protocol, context_window: int | None = None
) -> BeamMemory:
    """Validate the memory options and build the strategy (ValueError naming the option).

    Args:
        options: the memory knobs.
        protocol: the run's protocol (official `full` counts with cl100k_base, as upstream).
        context_window: `full` only: the reader's window (default 1,000,000, upstream's).

    Returns:
        The strategy.
    """
    context = options.checked(CONTEXT_MODES).context
    if context_window is not None and context != "full":
        raise ValueError(f"context_window applies only to context=full (context={context!r})")
    counter = get_token_counter(options.token_counter)
    fields: dict[str, Any] = {}
    if context == "full":
        if protocol.official and counter.name != OFFICIAL_COUNTER:
            raise ValueError(
                f"protocol={protocol} prunes the history as upstream counts it, with "
                f"{OFFICIAL_COUNTER} (token_counter={options.token_counter!r} gives "
                f"{counter.name}): pip install 'memevals[tokens]', or {MEMEVALS.fix()}"
            )
        window = positive_tokens(
            "context_window", DEFAULT_CONTEXT_WINDOW if context_window is None else context_window
        )
        fields["context_window"] = window
    elif context == "truncated":
        if options.max_context_tokens is None:
            raise ValueError("context=truncated needs max_context_tokens (the history's budget)")
        fields["max_context_tokens"] = positive_tokens(
            "max_context_tokens", options.max_context_tokens
        )
    return BeamMemory.build(
        options, context, counter, default_top_k=DEFAULT_TOP_K, rag_defaults=RAG_DEFAULTS, **fields
    )


#: (the items' context, the sample's item) -> (the context or system text, the whole user
#: message or None to keep the sample's)
Wrap = Callable[[str, Any], tuple[str, str | None]]


def memory_renderer(wrap: Wrap) -> Renderer:
    """The renderer of a memory subject: the items' context (`memory_context`) placed by the
    protocol's `wrap` (a system text beside the question, or one user message). A retrieval
    that shows nothing (no items) leaves the sample as context=none sends it under either
    protocol: the question message alone, no introduction and no empty RAG prompt."""

    def render(item: Any, history: History, retrieval: Retrieval) -> Rendered:
        text, shown = memory_context(history, retrieval.items)
        if not text:
            # the system found nothing (or nothing that fits): no context, and no item shown
            return Rendered("", {"retrieved_ids": shown}, shown=0)
        system, user = wrap(text, item)
        return Rendered(system, {"retrieved_ids": shown}, user=user)

    return render

"""What the dialogue model sees (benchmarks/locomo_dialogue/README.md#protocol): the held-out turns
and their history.

**Held-out turns.** For each conversation, the eligible turns are those with a preceding turn
in the same session by the other speaker (the model always answers something). From them,
`turns_per_conversation` turns are drawn with `random.Random("locomo-dialogue:<seed>:<conv>")`
(a string seed, so the draw is the same on every machine and Python run) and put in
chronological order; 0 takes every eligible turn.

**History.** Everything before the held-out turn, shown by one of these context modes:

- `full`: every earlier turn, in dated session blocks (as in the QA prompt);
- `truncated`: the most recent earlier turns within `max_context_tokens`
  (LoCoMo's `truncate_to_budget`);
- `session`: only the earlier turns of the current session (the paper's "base" setting);
- `rag`: the `top_k` units of the *earlier sessions* most similar to the message being answered
  (observations by default, the paper's best setting; or session summaries or dialog turns),
  then the current session so far. Units of the current session are never retrieved: its
  observations and summary were written from the whole session, the held-out turn included.

**Images.** A turn that shared a photo shows its BLIP caption, as the paper's agents saw it.
With images on, the most recent `max_images` photo turns of the history carry an `ImagePart`
instead (the image URL, with the caption kept as fallback text).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass

from memevals.benchmarks.locomo import memory as locomo
from memevals.benchmarks.locomo.data import Conversation, Session, Turn
from memevals.benchmarks.locomo.memory import (
    LocomoMemory,
    locomo_memory,
    preamble,
    session_header,
    turn_line,
)
from memevals.core.memory_options import MemoryOptions
from memevals.core.retrievers import Index, MemoryUnit

__all__ = [
    "DIALOGUE_CONTEXT_MODES",
    "DIALOGUE_OPTION_VALUES",
    "DIALOGUE_RETRIEVAL_UNIT",
    "DIALOGUE_RETRIEVAL_UNITS",
    "DialogueContext",
    "DialogueTurn",
    "ImagePart",
    "Part",
    "caption_text",
    "dialogue_context",
    "dialogue_memory",
    "eligible_turns",
    "history_sessions",
    "join_parts",
    "rank_targets",
    "select_turns",
]

DIALOGUE_CONTEXT_MODES: tuple[str, ...] = ("full", "truncated", "session", "rag")

#: What context=rag retrieves when retrieval_unit is not given: observations, the paper's best
#: setting (the QA tasks default to dialog turns instead).
DIALOGUE_RETRIEVAL_UNIT = "observation"
#: The retrieval units `rag` takes, its default first.
DIALOGUE_RETRIEVAL_UNITS: tuple[str, ...] = (
    DIALOGUE_RETRIEVAL_UNIT,
    *(u for u in locomo.RETRIEVAL_UNITS if u != DIALOGUE_RETRIEVAL_UNIT),
)
#: The allowed values of the shared options the task takes (its options' docs show them).
DIALOGUE_OPTION_VALUES: dict[str, tuple[str, ...]] = {
    "context": DIALOGUE_CONTEXT_MODES,
    "retrieval_unit": DIALOGUE_RETRIEVAL_UNITS,
}


@dataclass(frozen=True)
class ImagePart:
    """A shared photo shown as an image: its URL and the caption used when it cannot be had."""

    url: str
    caption: str
    dia_id: str


Part = str | ImagePart


# ---------------------------------------------------------------------------------------------
# Held-out turns


@dataclass(frozen=True)
class DialogueTurn:
    """A held-out turn: `position` is its index in `conv.turns`."""

    conv: Conversation
    position: int

    @property
    def turn(self) -> Turn:
        return self.conv.turns[self.position]

    @property
    def speaker(self) -> str:
        return self.turn.speaker

    @property
    def other(self) -> str:
        return self.conv.other_speaker(self.speaker)

    @property
    def previous(self) -> Turn:
        """The message being answered."""
        return self.conv.turns[self.position - 1]


def _check_text(conv: Conversation, turn: Turn) -> None:
    if not turn.text.strip():
        raise ValueError(
            f"conversation {conv.sample_id}: turn {turn.dia_id} has an empty 'text' field; "
            "a held-out turn needs its text as the reference"
        )


def eligible_turns(conv: Conversation) -> list[int]:
    """Positions of turns that answer the other speaker within the same session."""
    turns = conv.turns
    return [
        i
        for i in range(1, len(turns))
        if turns[i].session == turns[i - 1].session and turns[i].speaker != turns[i - 1].speaker
    ]


def select_turns(conv: Conversation, n: int, seed: int) -> list[DialogueTurn]:
    """`n` eligible turns drawn with a seeded generator, chronological (0 = all eligible).

    Raises ValueError naming the conversation, turn and field when a chosen turn has no text.
    """
    if isinstance(n, bool) or n < 0:
        raise ValueError(f"turns_per_conversation must be >= 0, got {n!r}")
    pool = eligible_turns(conv)
    if n and n < len(pool):
        rng = random.Random(f"locomo-dialogue:{seed}:{conv.sample_id}")
        pool = sorted(rng.sample(pool, n))
    chosen = [DialogueTurn(conv, i) for i in pool]
    for d in chosen:
        _check_text(conv, d.turn)
    return chosen


# ---------------------------------------------------------------------------------------------
# History


def history_sessions(target: DialogueTurn) -> list[tuple[Session, list[Turn]]]:
    """(session, earlier turns) blocks of everything said before the held-out turn."""
    turn = target.turn
    out: list[tuple[Session, list[Turn]]] = []
    for s in target.conv.sessions:
        if s.index < turn.session:
            out.append((s, list(s.turns)))
        elif s.index == turn.session:
            out.append((s, list(s.turns[: _index_in(s, turn)])))
    return out


def _index_in(session: Session, turn: Turn) -> int:
    for j, t in enumerate(session.turns):
        if t is turn:
            return j
    raise ValueError(f"turn {turn.dia_id} is not in session {session.index}")


def _prefix_conversation(target: DialogueTurn) -> Conversation:
    blocks = history_sessions(target)
    sessions = tuple(dataclasses.replace(s, turns=tuple(ts)) for s, ts in blocks if ts)
    return dataclasses.replace(target.conv, sessions=sessions, qa=())


def _session_parts(
    blocks: Sequence[tuple[Session, Sequence[Turn]]], image_ids: set[str]
) -> list[Part]:
    """`render_sessions`'s text, with each chosen photo turn followed by an ImagePart."""
    parts: list[Part] = []
    for session, turns in blocks:
        if not turns:
            continue
        if parts:
            parts.append("\n\n")
        parts.append(session_header(session))
        for t in turns:
            parts.append("\n")
            if t.dia_id in image_ids and t.img_url:
                parts.append(f'{t.speaker} said, "{t.text.strip()}" and shared this image:')
                parts.append(ImagePart(t.img_url[0], (t.blip_caption or "").strip(), t.dia_id))
            else:
                parts.append(turn_line(t))
    return _merge(parts)


def _merge(parts: Sequence[Part]) -> list[Part]:
    out: list[Part] = []
    for p in parts:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        else:
            out.append(p)
    return out


def caption_text(part: ImagePart) -> str:
    """What replaces an image that is not sent: its caption, as in the caption-only prompt."""
    return f" {part.caption}." if part.caption else " (the image is not available)."


def join_parts(parts: Sequence[Part]) -> str:
    """The parts as plain text, each image replaced by its caption (the fallback rendering)."""
    return "".join(p if isinstance(p, str) else caption_text(p) for p in parts)


def _image_ids(blocks: Sequence[tuple[Session, Sequence[Turn]]], max_images: int) -> set[str]:
    photo_turns = [t.dia_id for _, ts in blocks for t in ts if t.img_url]
    return set(photo_turns[len(photo_turns) - max_images :]) if max_images > 0 else set()


@dataclass(frozen=True)
class DialogueContext:
    """What the model reads before the instruction, and what was selected for the log."""

    parts: list[Part]
    retrieved_ids: tuple[str, ...] | None = None
    turns_shown: int = 0

    @property
    def text(self) -> str:
        return join_parts(self.parts)


def dialogue_memory(options: MemoryOptions) -> LocomoMemory:
    """Validate the dialogue task's memory options and build the LoCoMo strategy behind them.

    Raises ValueError naming the option; options of another mode are rejected, not ignored.
    `session` uses the full-history strategy (`dialogue_context` cuts the history itself);
    `rag` retrieves observations unless told otherwise (`DIALOGUE_RETRIEVAL_UNIT`).
    """
    context = options.checked(DIALOGUE_CONTEXT_MODES).context
    if context == "session":
        return locomo_memory(dataclasses.replace(options, context="full"))
    if context == "rag" and options.retrieval_unit is None:
        return locomo_memory(dataclasses.replace(options, retrieval_unit=DIALOGUE_RETRIEVAL_UNIT))
    return locomo_memory(options)


def dialogue_context(
    target: DialogueTurn,
    mode: str,
    memory_strategy: LocomoMemory,
    *,
    images: bool = False,
    max_images: int = 0,
    ranking: Sequence[int] | None = None,
) -> DialogueContext:
    """The history of `target` under `mode` (see module doc); `memory_strategy` carries the
    validated truncation budget, token counter, retriever and index cache. With `rag`,
    `ranking` is the index's ranking for this target's query when the caller ranked all of a
    conversation's queries at once (`rank_targets`); otherwise the query is ranked here."""
    conv = target.conv
    if mode not in DIALOGUE_CONTEXT_MODES:
        allowed = ", ".join(DIALOGUE_CONTEXT_MODES)
        raise ValueError(f"context={mode!r} is not supported; allowed values: {allowed}")
    if mode == "truncated":
        assert memory_strategy.max_context_tokens is not None
        prefix = _prefix_conversation(target)
        _, kept = locomo.truncate_to_budget(
            prefix, memory_strategy.max_context_tokens, memory_strategy.token_counter
        )
        blocks = locomo.recent_turn_blocks(prefix, kept)
    elif mode == "full":
        blocks = history_sessions(target)
    else:  # session, rag: the current session so far
        blocks = [b for b in history_sessions(target) if b[0].index == target.turn.session]
    ids = _image_ids(blocks, max_images) if images else set()
    dialogue = _session_parts(blocks, ids)
    shown = sum(len(ts) for _, ts in blocks)
    if mode != "rag":
        return DialogueContext([preamble(conv) + "\n\n", *dialogue], None, shown)

    # rag: retrieve from earlier sessions only; query = the message being answered
    assert memory_strategy.top_k is not None
    index, units = _rag_index(conv, memory_strategy)
    if ranking is None:
        ranking = index.rank(target.previous.text)
    earlier = target.turn.session
    picked = [p for p in ranking if locomo.unit_session(units[p]) < earlier][
        : memory_strategy.top_k
    ]
    retrieved = tuple(i for p in picked for i in units[p].metric_ids)
    excerpts = locomo.render_excerpts(
        conv,
        [units[p] for p in sorted(picked)],
        blank_line=memory_strategy.retrieval_unit == "summary",
    )
    head = (
        f"{excerpts}\n\nThe conversation now continues:\n\n"
        if excerpts
        else f"{preamble(conv)}\n\n"
    )
    return DialogueContext([head, *dialogue], retrieved, shown)


def _rag_index(
    conv: Conversation, memory_strategy: LocomoMemory
) -> tuple[Index, Sequence[MemoryUnit]]:
    assert memory_strategy.index_cache is not None and memory_strategy.retrieval_unit
    build = locomo.UNIT_BUILDERS[memory_strategy.retrieval_unit]
    return memory_strategy.index_cache.get(
        f"{conv.sample_id}/{memory_strategy.retrieval_unit}", lambda: build(conv)
    )


def rank_targets(targets: Sequence[DialogueTurn], memory_strategy: LocomoMemory) -> list[list[int]]:
    """The index's rankings for the queries of `targets` (one conversation), in one batch: an
    embedding retriever encodes them together instead of one encoder call per held-out turn."""
    if not targets:
        return []
    index, _ = _rag_index(targets[0].conv, memory_strategy)
    return index.rank_many([t.previous.text for t in targets])

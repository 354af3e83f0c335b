"""LoCoMo QA samples: the one assembly the Inspect and lm-eval tasks both call.

`build(options)` loads the conversations, builds the memory strategy, renders one PromptItem
per question (`protocol=official`: upstream's prompt and layout; `memevals`: ours), adds the
per-sample bookkeeping (prompt size, token counter, unmatched evidence) and assembles the run's
log metadata and generation settings (a `Build`). Every sample is one user message
(`one_message`), which lm-eval and Inspect both send as it is, so both frameworks send, count
and score exactly the same samples.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memevals.benchmarks.locomo.audit import apply_gold, check_gold
from memevals.benchmarks.locomo.data import LOCOMO_FILE, Conversation, load_locomo
from memevals.benchmarks.locomo.memory import (
    LocomoMemory,
    evidence_turns,
    locomo_history,
    locomo_memory,
    memory_renderer,
    session_header,
    turn_line,
)
from memevals.benchmarks.locomo.official import (
    ANSWER_TOKENS,
    OfficialTexts,
    load_texts,
    official_memory_renderer,
)
from memevals.benchmarks.locomo.prompts import (
    build_items,
    build_official_items,
    check_adversarial,
    parse_categories,
)
from memevals.core.build import Build, SampleNote
from memevals.core.memory_harness import MemoryRun, MemorySubject, Rendered, Renderer, Retrieval
from memevals.core.memory_options import MemoryOptions
from memevals.core.memory_system import History, MemoryQuery
from memevals.core.prompt_item import PromptItem
from memevals.core.protocol import DEFAULT, Protocol, resolve
from memevals.core.statistics import CLUSTER_KEY
from memevals.core.tokens import TokenCounter

__all__ = [
    "LocomoOptions",
    "annotate_items",
    "build",
    "log_gold",
    "mark_gold_changes",
    "memory_subject",
    "message_tokens",
    "one_message",
    "one_message_renderer",
    "protocol_log",
    "question_query",
    "strategy_fields",
    "task_metadata",
    "tokens_after_turns",
    "unmatched_evidence_note",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LocomoOptions:
    """Every option of the LoCoMo QA tasks (Inspect's `-T`, lm-eval's `--metadata`), with their
    one set of defaults (the Inspect task's signature takes its defaults from here)."""

    #: comma-separated category names or file numbers, as `-T categories=`; None = all five
    categories: str | None = None
    adversarial: str = "choice"  # "choice" (two options) or "open"
    seed: int = 0  # of the two-option order (lm-eval: `choice_seed`)
    #: the reader's answer length (the paper's; lm-eval's is the YAML's max_gen_toks, the same
    #: constant through the record)
    max_tokens: int = ANSWER_TOKENS
    data_dir: str | os.PathLike[str] | None = None
    #: "original" (the official answers) or "audited" (locomo-audit's corrections)
    gold: str = "original"
    judge: bool = False  # Inspect: also score with the protocol's judge
    judge_runs: int = 1  # Inspect: judge each reply this many times (protocol=memevals)
    memory: MemoryOptions = field(default_factory=MemoryOptions)
    #: official (upstream's prompt, layout and judge) or memevals (ours); a name is resolved
    protocol: Protocol = DEFAULT
    uncertainty: str = "default"  # Inspect: which uncertainty figures are shown

    def __post_init__(self) -> None:
        # the one check of the option (core.protocol), also for a name given directly
        object.__setattr__(self, "protocol", resolve(self.protocol))


def build(options: LocomoOptions) -> Build:
    """The samples, the run's log metadata, the reader's generation settings and the memory
    subject. Options are checked before any file is read or model loaded; a bad one raises
    ValueError naming it.

    Args:
        options: the run's options.

    Returns:
        The Build (its metadata is the task's: `task_metadata`).
    """
    categories = parse_categories(options.categories)
    protocol = options.protocol
    check_adversarial(options.adversarial)
    check_gold(options.gold)
    memory = locomo_memory(options.memory)
    texts = load_texts(options.data_dir) if protocol.official else None
    gold = apply_gold(load_locomo(options.data_dir), options.gold, options.data_dir)
    log_gold(gold.log)
    conversations = gold.conversations
    items = _question_items(conversations, memory, texts, categories, options)
    out, summary = annotate_items(mark_gold_changes(items, gold.changes), conversations, memory)
    if protocol.official:
        summary.pop("turns_kept", None)  # the official window is upstream's walk, not ours
    subject = memory_subject(out, conversations, memory, protocol)
    if subject is not None:
        summary |= subject.settings()
    digests = texts.digests() if texts is not None else None
    log = summary | {"gold": gold.log} | protocol_log(protocol, digests)
    note = unmatched_evidence_note(out)
    return Build.of(
        [one_message(i) for i in out],
        task_metadata(options, log),
        max_tokens=options.max_tokens,
        temperature=protocol.temperature,  # upstream answers at 0; memevals leaves it to the run
        subject=subject,
        dataset="locomo",
        notes=() if note is None else (note,),
    )


def _question_items(
    conversations: Sequence[Conversation],
    memory: LocomoMemory,
    texts: OfficialTexts | None,
    categories: list[str],
    options: LocomoOptions,
) -> list[PromptItem]:
    """One item per question: upstream's prompt and layout when `texts` (protocol=official)
    are given, else ours."""
    if texts is not None:
        return build_official_items(
            conversations,
            memory=memory,
            texts=texts,
            categories=categories,
            adversarial=options.adversarial,
            seed=options.seed,
        )
    return build_items(
        conversations,
        categories=categories,
        context=memory,
        context_mode=memory.context,
        adversarial=options.adversarial,
        seed=options.seed,
    )


def task_metadata(options: LocomoOptions, log: Mapping[str, Any]) -> dict[str, Any]:
    """What the run logs about its configuration (Inspect's Task metadata).

    Args:
        options: the run's options.
        log: the memory log (the strategy's settings, the gold, the protocol).

    Returns:
        The metadata, its `memory` key the log.
    """
    return {
        "benchmark": "locomo",
        "protocol": str(options.protocol),
        "context": log["context"],
        "adversarial": options.adversarial,
        "seed": options.seed,
        "judge": options.judge,
        "data_sha256": LOCOMO_FILE.sha256,
        "memory": dict(log),
        "gold": options.gold,
        # the best score honest answers reach on the official gold (README#audited-gold)
        "gold_ceilings": log["gold"]["gold_ceilings"],
    }


def protocol_log(protocol: Protocol | str, digests: Mapping[str, str] | None) -> dict[str, Any]:
    """What the task log records of the protocol: its name and, when official, the sha256 of
    every upstream template it read."""
    out: dict[str, Any] = {"protocol": str(protocol)}
    if digests is not None:
        out["upstream_templates"] = dict(digests)
    return out


def one_message(item: PromptItem) -> PromptItem:
    """The item as one user message: its context and question joined as `as_text()` joins
    them (a blank line between), the way lm-eval sends every document, so Inspect sends the
    same roles and contents."""
    if not item.system:
        return item
    return dataclasses.replace(item, system="", user=item.as_text())


def one_message_renderer(render: Renderer) -> Renderer:
    """`render` with the context and the question joined into the whole user message (the
    memory harness then sends no system text), as `one_message` joins a built sample."""

    def joined(item: PromptItem, history: History, retrieval: Retrieval) -> Rendered:
        rendered = render(item, history, retrieval)
        user = PromptItem(id=item.id, system=rendered.system, user=item.user, target="")
        return dataclasses.replace(rendered, user=user.as_text())

    return joined


def question_query(item: PromptItem, k: int) -> MemoryQuery:
    """What a memory system is asked for a LoCoMo question: the raw question (no category
    hint), of its conversation's history."""
    md = item.metadata
    return MemoryQuery(text=str(md["question"]), k=k, history_id=str(md["conversation_id"]))


def memory_subject(
    items: Sequence[PromptItem],
    conversations: Sequence[Conversation],
    memory: LocomoMemory,
    protocol: Protocol = DEFAULT,
) -> MemorySubject | None:
    """The memory system under test bound to these questions (None without one): each sample
    asks its conversation's history with the raw question (no hint), k = top_k; the context
    and the question go out as one user message (upstream's rag layout under official)."""
    if memory.system is None:
        return None
    choice = memory.system
    wanted = {str(i.metadata["conversation_id"]) for i in items}
    histories = {c.sample_id: locomo_history(c) for c in conversations if c.sample_id in wanted}
    queries = {i.id: question_query(i, choice.top_k) for i in items}
    run = MemoryRun(choice.system, data_sha256=LOCOMO_FILE.sha256, cache=choice.cache)
    return MemorySubject(
        run=run,
        histories=histories,
        queries=queries,
        render=one_message_renderer(
            official_memory_renderer(conversations)
            if protocol.official
            else memory_renderer(conversations)
        ),
        counter=memory.token_counter,
        k=choice.top_k,
        answers=choice.answers,
    )


def mark_gold_changes(
    items: Iterable[PromptItem], changes: dict[tuple[str, int], dict[str, Any]]
) -> list[PromptItem]:
    """Record on each LoCoMo question whose gold the audit changed the original and audited
    gold and the error type (`audit.gold_metadata`); other items are returned as they are."""
    out = []
    for item in items:
        md = item.metadata
        # LoCoMo questions (also LoCoMo-Plus's) carry both; cognitive samples neither
        if "conversation_id" in md and "qa_index" in md:
            change = changes.get((str(md["conversation_id"]), int(md["qa_index"])))
        else:
            change = None
        out.append(dataclasses.replace(item, metadata={**md, **change}) if change else item)
    return out


def log_gold(log: dict[str, Any]) -> None:
    """Every LoCoMo run states the ceilings of the official gold in its log."""
    if log["gold_ceilings"] is None:
        return  # apply_gold has warned why
    logger.info(
        "LoCoMo gold=%s; ceilings of the official gold (locomo-audit): %s",
        log["gold"],
        ", ".join(f"{k} {100 * v:.2f} %" for k, v in log["gold_ceilings"].items()),
    )


def message_tokens(
    counter: TokenCounter, system: str, user: str, heads: dict[str, int] | None = None
) -> int:
    """Tokens of the one message `PromptItem(system, user).as_text()`, counted exactly.

    A pre-tokenizer piece never spans a newline followed by a letter (cl100k_base, o200k_base
    and the approx counter alike), so the count of a text cut there is the sum of its parts:
    the context up to the start of its last line is counted once per distinct context (`heads`
    caches it; every question of a conversation shares it) and only the rest with the question.
    """
    if not system:
        return counter(user)
    cut = _last_line_start(system)
    head = system[:cut]
    if heads is None:
        heads = {}
    if head not in heads:
        heads[head] = counter(head)
    return heads[head] + counter(f"{system[cut:]}\n\n{user}")


def _last_line_start(text: str) -> int:
    """Index just after the last newline of `text` that a letter follows (0 when none)."""
    at = len(text)
    while (at := text.rfind("\n", 0, at)) >= 0:
        if at + 1 < len(text) and text[at + 1].isalpha():
            return at + 1
    return 0


def strategy_fields(
    item: PromptItem, memory: LocomoMemory, context_tokens: dict[str, int]
) -> dict[str, Any]:
    """What every sample records of the strategy that built it: its prompt size, the counter,
    and whether its retrieved ids are dia ids (turn-level retrieval metrics apply).

    The prompt size is the token count of the one user message sent (context and question
    joined, `message_tokens`); chat-template tokens are not included. `context_tokens` caches
    the count of each distinct context head (in full and truncated mode a conversation's
    questions share one).
    """
    counter = memory.token_counter
    return {
        "prompt_tokens": message_tokens(counter, item.system, item.user, context_tokens),
        "token_counter": counter.name,
        "turn_level": memory.turn_level,
    }


def tokens_after_turns(conv: Conversation, counter: TokenCounter) -> dict[str, int]:
    """Per turn (dia id): the tokens of the conversation text that follows its line, as the
    full-context prompt renders the conversation (`render_sessions`: dated session blocks, one
    line per turn), counted with `counter`.

    Every line starts with a letter (a speaker's name, `DATE:`, `CONVERSATION`), so the text
    after a line is cut where no pre-tokenizer piece spans (see `message_tokens`): its count
    is the sum of its lines' counts (each with the newlines that follow it), and each line is
    counted once per conversation.

    Args:
        conv: the conversation.
        counter: the task's token counter (`token_counter`).

    Returns:
        dia id -> tokens after that turn's line (0 for the conversation's last turn).
    """
    pieces: list[tuple[str | None, str]] = []
    blocks = [s for s in conv.sessions if s.turns]
    for b, session in enumerate(blocks):
        lines = [
            (None, session_header(session)),
            *((t.dia_id, turn_line(t)) for t in session.turns),
        ]
        for i, (dia_id, text) in enumerate(lines):
            end = "\n" if i < len(lines) - 1 else "\n\n" if b < len(blocks) - 1 else ""
            pieces.append((dia_id, text + end))
    out: dict[str, int] = {}
    after = 0
    for dia_id, text in reversed(pieces):
        if dia_id is not None:
            out.setdefault(dia_id, after)
        after += counter(text)
    return out


def evidence_distance(
    conv: Conversation, qa_index: int, tokens_after: Mapping[str, int] | None = None
) -> dict[str, int]:
    """How far back a question's evidence lies from the end of its conversation, where the
    question is asked: the sessions, the turns and the tokens after its latest evidence turn
    (the record's analysis axes, read by memevals-report). Empty for a question without
    matched evidence.

    Args:
        conv: the conversation.
        qa_index: the question's index in it.
        tokens_after: `tokens_after_turns(conv, counter)` with the task's counter; None leaves
            `tokens_after_evidence` out.

    Returns:
        `sessions_after_evidence`, `turns_after_evidence` and `tokens_after_evidence`.
    """
    found, _ = evidence_turns(conv, conv.qa[qa_index])
    if not found:
        return {}
    last = found[-1].dia_id
    position, session = conv.first_turn_places[last]
    out = {
        "sessions_after_evidence": len(conv.sessions) - 1 - session,
        "turns_after_evidence": len(conv.turns) - 1 - position,
    }
    if tokens_after is not None:
        out["tokens_after_evidence"] = tokens_after[last]
    return out


def unmatched_evidence_note(items: Iterable[PromptItem]) -> SampleNote | None:
    """The warning of a retrieving run about the questions whose evidence ids match no dialog
    turn (such an id can never be retrieved), said when the first of them runs; None when no
    item has one.

    Args:
        items: the annotated items (`annotate_items`: their `unmatched_evidence`).

    Returns:
        The note, or None.
    """
    unmatched = {i.id: list(i.metadata.get("unmatched_evidence") or ()) for i in items}
    unmatched = {k: v for k, v in unmatched.items() if v}
    if not unmatched:
        return None
    listed = ", ".join(f"{k} {'/'.join(v)}" for k, v in unmatched.items())
    return SampleNote(
        "LoCoMo: this run asks a question whose evidence ids match no dialog turn and can "
        f"never be retrieved ({sum(map(len, unmatched.values()))} id(s) in "
        f"{len(unmatched)} question(s): {listed}); each sample's metadata "
        "'unmatched_evidence' lists its own",
        frozenset(unmatched),
    )


def annotate_items(
    items: Iterable[PromptItem],
    conversations: Iterable[Conversation],
    memory: LocomoMemory,
) -> tuple[list[PromptItem], dict[str, Any]]:
    """Add the strategy fields (and, for retrieving modes, unmatched evidence) to each item.

    Returns the new items and a summary for the task log: the strategy's settings, the token
    counter, total prompt tokens, index builds, and the number of evidence ids matching no turn
    and the questions that have them (a run whose questions include one says so:
    `unmatched_evidence_note`).
    """
    by_id = {c.sample_id: c for c in conversations}
    context_tokens: dict[str, int] = {}
    # per conversation: the tokens after each turn (counted once, shared by its questions)
    tokens_after: dict[str, dict[str, int]] = {}
    out: list[PromptItem] = []
    total_tokens = 0
    unmatched_total = 0
    unmatched_samples: list[str] = []
    for item in items:
        md = {**item.metadata, **strategy_fields(item, memory, context_tokens)}
        # the unit of the clustered standard errors: questions of one conversation are not
        # independent (README.md#standard-errors)
        md[CLUSTER_KEY] = str(md["conversation_id"])
        conversation = by_id.get(str(md.get("conversation_id")))
        if conversation is not None and "qa_index" in md:
            cid = conversation.sample_id
            if cid not in tokens_after:
                tokens_after[cid] = tokens_after_turns(conversation, memory.token_counter)
            md |= evidence_distance(conversation, int(md["qa_index"]), tokens_after[cid])
        total_tokens += md["prompt_tokens"]
        if memory.retrieves:
            conv = by_id[str(md["conversation_id"])]
            _, unmatched = evidence_turns(conv, conv.qa[int(md["qa_index"])])
            md["unmatched_evidence"] = list(unmatched)
            if unmatched:
                unmatched_total += len(unmatched)
                unmatched_samples.append(item.id)
        out.append(dataclasses.replace(item, metadata=md))
    summary: dict[str, Any] = {**memory.settings(), "prompt_tokens_total": total_tokens}
    if memory.context == "truncated":
        summary["turns_kept"] = memory.turns_kept()
    if memory.index_cache is not None:
        summary["index_builds"] = memory.index_cache.builds
        summary["index_build_seconds"] = round(memory.index_cache.build_seconds, 3)
    if memory.retrieves:
        summary["unmatched_evidence_count"] = unmatched_total
        summary["unmatched_evidence_samples"] = unmatched_samples
    return out, summary

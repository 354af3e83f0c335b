"""LoCoMo-Plus samples: the one assembly the Inspect and lm-eval tasks both call.

`build(options)` loads LoCoMo and LoCoMo-Plus, stitches the cue–trigger pairs into their host
conversations, builds one memory strategy for both kinds of sample, renders the samples, adds
the per-sample bookkeeping and puts them in the requested order. With a memory system under
test (`memory=<name>`) it also binds the system to the samples (`memory_subject`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memevals.benchmarks.locomo.audit import apply_gold, check_gold
from memevals.benchmarks.locomo.data import LOCOMO_FILE, Conversation, load_locomo
from memevals.benchmarks.locomo.memory import LocomoMemory, locomo_history, locomo_memory
from memevals.benchmarks.locomo.prompts import check_adversarial
from memevals.benchmarks.locomo.samples import (
    annotate_items,
    log_gold,
    mark_gold_changes,
    one_message,
    one_message_renderer,
    protocol_log,
    question_query,
    strategy_fields,
    unmatched_evidence_note,
)
from memevals.benchmarks.locomo_plus.data import LOCOMO_PLUS_FILE, load_locomo_plus
from memevals.benchmarks.locomo_plus.memory import (
    CognitiveContextFn,
    cognitive_context,
    cognitive_full,
    cue_turn_recall,
    dialogue_line,
    history,
    plus_memory_renderer,
    stitched_data_sha256,
    stitched_history,
    trigger_query,
)
from memevals.benchmarks.locomo_plus.official import PlusTexts, load_plus_texts
from memevals.benchmarks.locomo_plus.official_judge import JUDGE_MAX_TOKENS as UPSTREAM_JUDGE_TOKENS
from memevals.benchmarks.locomo_plus.prompts import (
    COGNITIVE,
    build_official_plus_items,
    build_plus_items,
    parse_plus_categories,
)
from memevals.benchmarks.locomo_plus.scoring import JUDGE_MAX_TOKENS
from memevals.benchmarks.locomo_plus.stitch import StitchedInstance, stitch_all
from memevals.core.build import Build
from memevals.core.memory_harness import MemoryRun, MemorySubject
from memevals.core.memory_options import MemoryOptions
from memevals.core.memory_system import History, MemoryQuery
from memevals.core.prompt_item import PromptItem
from memevals.core.protocol import DEFAULT, MEMEVALS, Protocol, resolve
from memevals.core.statistics import CLUSTER_KEY
from memevals.core.tokens import TokenCounter

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
    "SAMPLE_ORDERS",
    "LocomoPlusOptions",
    "annotate_cognitive_items",
    "build",
    "check_official",
    "check_official_judge",
    "check_sample_order",
    "cue_distance",
    "memory_subject",
    "order_samples",
    "task_metadata",
]

#: `sample_order` values: the official file order, or grouped by host conversation.
SAMPLE_ORDERS: tuple[str, ...] = ("file", "host")
#: The LoCoMo-Plus framework's answering settings (`evaluate_qa.py`), under both protocols
#: (README.md#protocol).
DEFAULT_MAX_TOKENS = 1024
DEFAULT_TEMPERATURE = 0.3


@dataclass(frozen=True)
class LocomoPlusOptions:
    """Every option of the LoCoMo-Plus tasks (Inspect's `-T`, lm-eval's `--metadata`), with
    their one set of defaults (the Inspect task's signature takes its defaults from here)."""

    #: comma-separated category names (LoCoMo file numbers too), as `-T categories=`;
    #: None = all six
    categories: str | None = None
    disclose_task: bool = False  # category-specific instructions instead of the unified one
    gap_fix: bool = False  # vague time gaps read as numbers (our deviation, off for parity)
    sample_order: str = "file"  # or "host" (grouped for provider prompt caches)
    adversarial: str = "choice"  # with disclose_task: "choice" (two options) or "open"
    seed: int = 0  # of the two-option order (lm-eval: `choice_seed`)
    #: the reader's answer length (lm-eval's is the YAML's max_gen_toks)
    max_tokens: int = DEFAULT_MAX_TOKENS
    judge_max_tokens: int = JUDGE_MAX_TOKENS  # Inspect: memevals' judge's limit per verdict
    judge_runs: int = 1  # Inspect: judge each reply this many times (protocol=memevals)
    data_dir: str | os.PathLike[str] | None = None
    memory: MemoryOptions = field(default_factory=MemoryOptions)
    #: the LoCoMo questions' gold: "original" or "audited" (cognitive samples have none)
    gold: str = "original"
    #: official (LoCoMo-Plus's unified input and judge) or memevals (ours); a name is resolved
    protocol: Protocol = DEFAULT
    uncertainty: str = "default"  # Inspect: which uncertainty figures are shown

    def __post_init__(self) -> None:
        # the one check of the option (core.protocol), also for a name given directly
        object.__setattr__(self, "protocol", resolve(self.protocol))


def check_sample_order(sample_order: str) -> None:
    if sample_order not in SAMPLE_ORDERS:
        raise ValueError(f"sample_order={sample_order!r} is not one of {', '.join(SAMPLE_ORDERS)}")


def check_official(options: LocomoPlusOptions, context: str) -> None:
    """Under protocol=official only upstream's input exists: the whole conversation, no
    disclosed task, the official gap rule. Anything else is a ValueError naming the option."""
    asked = {
        "context": context if context != "full" else None,
        "disclose_task": options.disclose_task or None,
        "gap_fix": options.gap_fix or None,
    }
    wrong = [f"{name}={value!r}" for name, value in asked.items() if value is not None]
    if wrong:
        raise ValueError(
            f"protocol='official' is LoCoMo-Plus's own input (context='full', "
            f"disclose_task=False, gap_fix=False); {', '.join(wrong)} runs under "
            f"protocol='memevals': {MEMEVALS.fix()}"
        )


def check_official_judge(options: LocomoPlusOptions) -> None:
    """Under protocol=official the judge is upstream's, once, at its own length: judge_runs or
    judge_max_tokens is refused when the task is built, not after every answer is generated."""
    options.protocol.check_judge_runs(options.judge_runs)
    if options.judge_max_tokens != JUDGE_MAX_TOKENS:
        raise ValueError(
            f"judge_max_tokens: protocol=official judges with upstream's {UPSTREAM_JUDGE_TOKENS} "
            f"tokens; the judge's limit applies to protocol=memevals: {MEMEVALS.fix()}"
        )


def build(options: LocomoPlusOptions) -> Build:
    """The samples, the run's log metadata, the reader's generation settings and the memory
    subject. Options are checked before any file is read; a bad one raises ValueError naming it.

    Args:
        options: the run's options.

    Returns:
        The Build (its metadata is the task's: `task_metadata`).
    """
    wanted = parse_plus_categories(options.categories)
    check_sample_order(options.sample_order)
    check_adversarial(options.adversarial)
    check_gold(options.gold)
    memory = locomo_memory(options.memory)
    texts: PlusTexts | None = None
    if options.protocol.official:
        check_official(options, memory.context)
        check_official_judge(options)
        texts = load_plus_texts(options.data_dir)
    # Checked even before loading: rag over observations or summaries cannot see the cue.
    cognitive = cognitive_context(memory) if COGNITIVE in wanted else cognitive_full
    gold = apply_gold(load_locomo(options.data_dir), options.gold, options.data_dir)
    log_gold(gold.log)
    # only qa items differ between the gold variants: the stitched histories are the same
    conversations = gold.conversations
    stitched = (
        stitch_all(load_locomo_plus(options.data_dir), conversations, gap_fix=options.gap_fix)
        if COGNITIVE in wanted
        else []
    )
    items = _items(options, conversations, stitched, texts, wanted, memory, cognitive)
    locomo_items, summary = annotate_items(
        mark_gold_changes([i for i in items if i.metadata["category"] != COGNITIVE], gold.changes),
        conversations,
        memory,
    )
    cognitive_items, cognitive_summary = annotate_cognitive_items(
        [i for i in items if i.metadata["category"] == COGNITIVE], stitched, memory
    )
    ordered = order_samples([*locomo_items, *cognitive_items], options.sample_order)
    log = summary | cognitive_summary
    subject = memory_subject(ordered, conversations, stitched, memory)
    if subject is not None:
        log |= subject.settings()
    digests = texts.digests() if texts else None
    log |= {"gold": gold.log} | protocol_log(options.protocol.name, digests)
    note = unmatched_evidence_note(locomo_items)
    return Build.of(
        [one_message(i) for i in ordered],
        task_metadata(options, wanted, log),
        max_tokens=options.max_tokens,
        temperature=DEFAULT_TEMPERATURE,
        subject=subject,
        dataset="locomo_plus",
        notes=() if note is None else (note,),
    )


def _items(
    options: LocomoPlusOptions,
    conversations: Sequence[Conversation],
    stitched: Sequence[StitchedInstance],
    texts: PlusTexts | None,
    wanted: list[str],
    memory: LocomoMemory,
    cognitive: CognitiveContextFn,
) -> list[PromptItem]:
    """The samples before their bookkeeping: LoCoMo-Plus's unified input when `texts`
    (protocol=official) are given, else ours."""
    if texts is not None:
        return build_official_plus_items(conversations, stitched, texts, categories=wanted)
    return build_plus_items(
        conversations,
        stitched,
        categories=wanted,
        context=memory,
        cognitive=cognitive,
        context_mode=memory.context,
        disclose_task=options.disclose_task,
        adversarial=options.adversarial,
        seed=options.seed,
        gap_fix=options.gap_fix,
    )


def task_metadata(
    options: LocomoPlusOptions, wanted: list[str], log: Mapping[str, Any]
) -> dict[str, Any]:
    """What the run logs about its configuration (Inspect's Task metadata).

    Args:
        options: the run's options.
        wanted: the categories asked.
        log: the memory log (the strategies' settings, the gold, the protocol).

    Returns:
        The metadata, its `memory` key the log.
    """
    return {
        "benchmark": "locomo_plus",
        "protocol": str(options.protocol),
        "categories": wanted,
        "disclose_task": options.disclose_task,
        "gap_fix": options.gap_fix,
        "adversarial": options.adversarial,
        "seed": options.seed,
        "sample_order": options.sample_order,
        "memory": dict(log),
        "gold": options.gold,
        "gold_ceilings": log["gold"]["gold_ceilings"],
        "data_sha256": {"locomo": LOCOMO_FILE.sha256, "locomo_plus": LOCOMO_PLUS_FILE.sha256},
    }


def memory_subject(
    items: Sequence[PromptItem],
    conversations: Sequence[Conversation],
    stitched: Sequence[StitchedInstance],
    memory: LocomoMemory,
) -> MemorySubject | None:
    """The memory system under test bound to these samples (None without one). A LoCoMo
    question asks its conversation's history (`locomo_history`, keyed as the `locomo` task keys
    it, so those stores are shared) with the raw question; a cognitive sample asks its stitched
    history (`stitched_history`) with the trigger text, as context=rag does. k = top_k."""
    if memory.system is None:
        return None
    choice = memory.system
    by_sample = {st.instance.sample_id: st for st in stitched}
    histories: dict[str, History] = {}
    queries: dict[str, MemoryQuery] = {}
    by_conv = {c.sample_id: c for c in conversations}
    for item in items:
        md = item.metadata
        if md["category"] == COGNITIVE:
            st = by_sample[item.id]
            query = trigger_query(st, choice.top_k)
            if query.history_id not in histories:
                histories[query.history_id] = stitched_history(st)
        else:
            query = question_query(item, choice.top_k)
            if query.history_id not in histories:
                histories[query.history_id] = locomo_history(by_conv[query.history_id])
        queries[item.id] = query
    # host conversations keep LoCoMo's sha256, so their stores are the `locomo` task's
    stitched_sha = stitched_data_sha256(LOCOMO_FILE.sha256, LOCOMO_PLUS_FILE.sha256)
    run = MemoryRun(
        choice.system,
        data_sha256=LOCOMO_FILE.sha256,
        cache=choice.cache,
        history_data_sha256={h: stitched_sha for h in histories if h not in by_conv},
    )
    return MemorySubject(
        run=run,
        histories=histories,
        queries=queries,
        render=one_message_renderer(plus_memory_renderer(conversations, stitched)),
        counter=memory.token_counter,
        k=choice.top_k,
        answers=choice.answers,
    )


def cue_distance(
    st: StitchedInstance, counter: TokenCounter, line_tokens: dict[str, int] | None = None
) -> dict[str, int]:
    """How far back a cognitive sample's evidence, its cue, lies from the trigger, under the
    keys LoCoMo's questions log theirs (`locomo.samples.evidence_distance`), so one analysis
    axis covers both kinds of sample: the host sessions, the turns and the tokens between the
    cue's last turn and the trigger. (The cue's time gap is logged as `gap_days`.)

    The tokens are those of the history lines between them as the full-context prompt renders
    them (`render_history`: one line per turn), counted with the task's counter. Each line
    starts with a speaker's name, a cut no pre-tokenizer piece spans, so the count is the sum
    of the lines' counts (each with its newline).

    Args:
        st: the instance stitched into its host.
        counter: the task's token counter (`token_counter`).
        line_tokens: a cache of line -> count shared across samples (hosts repeat lines).

    Returns:
        `sessions_after_evidence`, `turns_after_evidence` and `tokens_after_evidence`.
    """
    cue_end = st.cue_position + len(st.cue_turns)
    between = [dialogue_line(t) for t in history(st)[cue_end:]]
    cache = {} if line_tokens is None else line_tokens
    tokens = 0
    for i, line in enumerate(between):
        piece = line + "\n" if i < len(between) - 1 else line
        if piece not in cache:
            cache[piece] = counter(piece)
        tokens += cache[piece]
    return {
        "sessions_after_evidence": st.sessions_between,
        "turns_after_evidence": len(between),
        "tokens_after_evidence": tokens,
    }


def annotate_cognitive_items(
    items: Sequence[PromptItem], stitched: Sequence[StitchedInstance], memory: LocomoMemory
) -> tuple[list[PromptItem], dict[str, Any]]:
    """Add the strategy fields (prompt size, counter; see `locomo.samples.strategy_fields`),
    how far back the cue lies (`cue_distance`) and, for retrieving modes, cue recall to each
    cognitive item's metadata.

    Returns the items and a summary for the task log (total prompt tokens, mean cue recall).
    """
    by_id = {st.instance.sample_id: st for st in stitched}
    context_tokens: dict[str, int] = {}
    line_tokens: dict[str, int] = {}
    out: list[PromptItem] = []
    total_tokens = 0
    recalls: list[float] = []
    for item in items:
        md = {**item.metadata, **strategy_fields(item, memory, context_tokens)}
        # clustered with the host conversation's own questions: the history is that
        # conversation's (README.md#standard-errors)
        md[CLUSTER_KEY] = str(md["host"])
        md |= cue_distance(by_id[item.id], memory.token_counter, line_tokens)
        total_tokens += md["prompt_tokens"]
        retrieved = md.get("retrieved_ids")
        if retrieved is not None:
            md["cue_recall"] = cue_turn_recall(retrieved, by_id[item.id])
            recalls.append(md["cue_recall"])
        out.append(dataclasses.replace(item, metadata=md))
    summary: dict[str, Any] = {"cognitive_prompt_tokens_total": total_tokens}
    if recalls:
        summary["cognitive_cue_recall_mean"] = round(sum(recalls) / len(recalls), 4)
    return out, summary


def order_samples(items: Sequence[PromptItem], sample_order: str = "file") -> list[PromptItem]:
    """The samples in file order (LoCoMo questions, then `plus-<i>`), or with `host` grouped by
    conversation for provider prompt caches: each conversation's LoCoMo questions, then the
    cognitive samples stitched into it, latest cue first. A cognitive history equals its host's
    conversation up to the cue, so a later cue shares a longer start with the sample before it
    (full context: 92.8 % of input tokens shared with the previous sample instead of 84.6 %).
    Scores do not depend on the order; `--limit` takes other samples."""
    check_sample_order(sample_order)
    if sample_order == "file":
        return list(items)

    def host(item: PromptItem) -> str:
        md = item.metadata
        return str(md["host"] if md["category"] == COGNITIVE else md["conversation_id"])

    rank = {h: r for r, h in enumerate(dict.fromkeys(host(i) for i in items))}

    def key(item: PromptItem) -> tuple[int, int, int, int]:
        md = item.metadata
        if md["category"] != COGNITIVE:
            return (rank[host(item)], 0, 0, 0)  # the sort is stable: questions keep their order
        return (rank[host(item)], 1, -int(md["cue_position"]), int(md["instance_index"]))

    return sorted(items, key=key)

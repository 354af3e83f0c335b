"""LongMemEval samples: the one assembly the Inspect task and the lm-eval tasks both call.

`build(options)` reads a variant's file (streaming), keeps the questions of the asked
categories, gives each its context (memory), renders the prompt (prompts) and returns the items
with the task log. It returns a small record rather than a bare `(items, log)` pair because
chain-of-note needs one more thing, the session blocks of each question, which must not go into
the log (they are the whole histories) nor into the prompt (the notes replace them at run time),
and a memory system under test (`memory=<name>`) needs its subject, which gives each sample its
context at run time (`subject.fill`, called by the Inspect solver and the lm-eval documents).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memevals.benchmarks.longmemeval.data import (
    CATEGORIES,
    REVISION,
    Instance,
    data_file,
    iter_longmemeval,
)
from memevals.benchmarks.longmemeval.memory import (
    DEFAULT_ANSWER_TOKENS,
    LmeContext,
    LongMemEvalMemory,
    SessionBlock,
    longmemeval_history,
    longmemeval_memory,
    memory_depth,
    memory_renderer,
    warn_if_oversized,
)
from memevals.benchmarks.longmemeval.prompts import judge_inputs, question_text
from memevals.core.memory_harness import MemoryRun, MemorySubject
from memevals.core.memory_options import MemoryOptions
from memevals.core.memory_system import MemoryQuery
from memevals.core.prompt_item import PromptItem, parse_category_list
from memevals.core.statistics import CLUSTER_KEY


@dataclass(frozen=True)
class LongMemEvalOptions:
    """Everything that decides LongMemEval's samples (the `-T` / `--metadata` options).

    `answer_tokens` is the answer length the truncation budget reserves (Inspect's
    `max_tokens`); `categories` None means all of them.
    """

    variant: str = "s"
    categories: str | tuple[str, ...] | None = None
    memory: MemoryOptions = field(default_factory=MemoryOptions)
    history_format: str = "json"
    context_window: int | None = None
    answer_tokens: int = DEFAULT_ANSWER_TOKENS
    chain_of_note: bool = False
    data_dir: str | None = None
    verify_checksum: bool = True


@dataclass(frozen=True)
class LongMemEvalSamples:
    """What `build` returns: the items, the task log, for chain-of-note the sessions (in
    date order) that each question's notes are taken on, by sample id (empty otherwise), and
    with a memory system under test the subject that gives each sample its context (None
    otherwise)."""

    items: list[PromptItem]
    log: dict[str, Any]
    note_blocks: Mapping[str, tuple[SessionBlock, ...]]
    subject: MemorySubject | None = None


def parse_categories(categories: Iterable[str] | str | None) -> list[str]:
    """Category names (snake or kebab case, so the file's type names work too); None = all."""
    return parse_category_list(categories, CATEGORIES, numbers={}, benchmark="LongMemEval")


def in_categories(category: str, abstention: bool, categories: Sequence[str]) -> bool:
    """A question belongs to its type's category and, when `_abs`, also to abstention."""
    return category in categories or (abstention and "abstention" in categories)


def of_categories(items: Iterable[PromptItem], categories: Sequence[str]) -> list[PromptItem]:
    """The built items that belong to `categories`, in their order, each once."""
    return [
        item
        for item in items
        if in_categories(item.metadata["category"], item.metadata["abstention"], categories)
    ]


def item_metadata(inst: Instance, *, variant: str) -> dict[str, object]:
    """What the scorers, the judge and the reports read about the question itself."""
    return {
        "benchmark": "longmemeval",
        "variant": variant,
        "question_id": inst.question_id,
        "question_type": inst.question_type,
        "category": inst.category,
        "abstention": inst.is_abstention,
        "question": inst.question,
        "question_date": inst.question_date,
        "answer": inst.answer_text,
        "answer_session_ids": list(inst.answer_session_ids),
        "judge": judge_inputs(inst),
    }


def build_item(
    inst: Instance,
    memory: LongMemEvalMemory,
    ctx: LmeContext | None = None,
    *,
    variant: str,
    chain_of_note: bool = False,
) -> PromptItem:
    """One sample: the dated history (system), the current date and question (user), and the
    metadata the scorers and logs read (retrieval record, prompt size). `ctx` reuses a context
    already computed. Chain-of-note items carry no history, as the notes replace it at run
    time, and no prompt size, as the note calls are made then."""
    if ctx is None:
        ctx = memory(inst)
    user = question_text(inst)
    system = "" if chain_of_note else ctx.system_text
    md = item_metadata(inst, variant=variant)
    md |= {
        "context": memory.context,
        "history_format": memory.history_format,
        "n_sessions_shown": len(ctx.blocks),
        "session_ids_shown": [b.session_id for b in ctx.blocks],
        "chain_of_note": chain_of_note,
        "missing_answer_sessions": list(inst.missing_answer_session_ids),
    }
    if memory.context == "rag":
        md |= {
            "retrieval_unit": memory.retrieval_unit,
            "retrieved_ids": list(ctx.retrieved_ids or ()),
            "retrieval_scores": ctx.retrieval_scores,
            "retrieval_skipped": ctx.retrieval_skipped,
        }
    if memory.context == "truncated":
        assert ctx.history_tokens is not None and memory.max_context_tokens is not None
        md |= {
            "history_tokens": ctx.history_tokens,
            "history_truncated": ctx.history_tokens > memory.max_context_tokens,
        }
    if not chain_of_note:
        counter = memory.token_counter
        system_tokens = counter(system) if ctx.system_tokens is None else ctx.system_tokens
        # as chat APIs count: each message separately, chat-template tokens not included; both
        # frameworks report this one figure
        md |= {"prompt_tokens": system_tokens + counter(user), "token_counter": counter.name}
    # every question has its own haystack, so each is its own cluster (README.md#standard-errors)
    md[CLUSTER_KEY] = inst.question_id
    return PromptItem(
        id=inst.question_id, system=system, user=user, target=inst.answer_text, metadata=md
    )


def build(options: LongMemEvalOptions) -> LongMemEvalSamples:
    """The samples of `options`; every option is checked before the file is read."""
    spec = data_file(options.variant)
    categories = parse_categories(options.categories)
    if options.chain_of_note and options.memory.context == "truncated":
        raise ValueError(
            "chain_of_note takes notes on each session separately, so there is no single "
            "history to truncate; use chain_of_note with context=full, rag or oracle"
        )
    if options.chain_of_note and options.memory.memory is not None:
        raise ValueError(
            f"chain_of_note takes notes on every haystack session, while memory="
            f"{options.memory.memory!r} gives the context itself; use one or the other"
        )
    memory = longmemeval_memory(
        options.memory,
        history_format=options.history_format,
        context_window=options.context_window,
        answer_tokens=options.answer_tokens,
    )
    warn_if_oversized(options.variant, memory.context)

    digest: list[str] = []
    items: list[PromptItem] = []
    note_blocks: dict[str, tuple[SessionBlock, ...]] = {}
    kept: list[Instance] = []  # only with a memory system: it ingests every haystack
    for inst in iter_longmemeval(
        options.variant,
        options.data_dir,
        verify_checksum=options.verify_checksum,
        digest_out=digest,
    ):
        if not in_categories(inst.category, inst.is_abstention, categories):
            continue
        ctx = memory(inst)
        items.append(
            build_item(
                inst, memory, ctx, variant=options.variant, chain_of_note=options.chain_of_note
            )
        )
        if options.chain_of_note:
            note_blocks[inst.question_id] = ctx.blocks
        if memory.system is not None:
            kept.append(inst)
    if not items:
        raise ValueError(
            f"no LongMemEval question matches categories={options.categories!r} in variant "
            f"{options.variant}"
        )
    log = {
        "benchmark": "longmemeval",
        "variant": options.variant,
        "data_file": spec.filename,
        "data_revision": REVISION,
        "data_sha256": digest[0] if digest else None,
        "data_sha256_pinned": spec.sha256,
        "checksum_verified": spec.sha256 is not None and options.verify_checksum,
        "categories": categories,
        **memory.settings(),
        "chain_of_note": options.chain_of_note,
    }
    data_sha256 = digest[0] if digest else (spec.sha256 or spec.filename)
    subject = memory_subject(kept, memory, data_sha256)
    if subject is not None:
        log |= subject.settings()
    return LongMemEvalSamples(items, log, note_blocks, subject)


def memory_subject(
    instances: Sequence[Instance], memory: LongMemEvalMemory, data_sha256: str
) -> MemorySubject | None:
    """The memory system under test bound to these questions (None without one). Every
    question has its own haystack, so the history id is the question id; the query is the
    question with its date, asking for max(top_k, 50) items (the metrics' depth), of which the
    first top_k are shown."""
    if memory.system is None:
        return None
    choice = memory.system
    depth = memory_depth(choice.top_k)
    queries = {
        inst.question_id: MemoryQuery(
            text=inst.question, k=depth, date=inst.question_date, history_id=inst.question_id
        )
        for inst in instances
    }
    return MemorySubject(
        run=MemoryRun(choice.system, data_sha256=data_sha256, cache=choice.cache),
        histories={inst.question_id: longmemeval_history(inst) for inst in instances},
        queries=queries,
        render=memory_renderer(instances, choice.top_k, memory.history_format),
        counter=memory.token_counter,
        k=choice.top_k,
        answers=choice.answers,
    )

"""LongMemEval samples: the one assembly the Inspect task and the lm-eval tasks both call.

`build(options)` reads a variant's file (streaming), keeps the questions of the asked
categories, gives each its context (memory), renders the prompt for the protocol and returns
the run's `Build` (memevals.core.build): the items, the task log, the reader's generation
settings and, with a memory system under test (`memory=<name>`), its subject, which gives each
sample its context at run time (`subject.fill`, called by the Inspect solver and the lm-eval
documents). Chain-of-note needs one more thing, each question's note plan (the note requests and
how the notes become the message), which must not go into the log (the requests hold the whole
histories) nor into the prompt (the notes replace the history at run time): the Build is a
`LongMemEvalBuild`, which carries them beside.

Every sample is **one user message** under both protocols, so the Inspect task and the lm-eval
task (whose documents are one text) hand the model the same role and the same content:

- protocol=official (default): upstream's message for the configuration
  (memevals.benchmarks.longmemeval.official): its answer template with its history string,
  and its judge prompt in the metadata (`official_judge`);
- protocol=memevals: our own wording (memory, prompts): the dated history, a blank line,
  then the current date, the question and the answer cue; our own judge.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memevals.benchmarks.longmemeval import official
from memevals.benchmarks.longmemeval.data import (
    CATEGORIES,
    REVISION,
    Instance,
    data_file,
    iter_longmemeval,
)
from memevals.benchmarks.longmemeval.memory import (
    LmeContext,
    LongMemEvalMemory,
    SessionBlock,
    history_text,
    longmemeval_history,
    longmemeval_memory,
    memory_depth,
    memory_renderer,
    session_blocks,
    warn_if_oversized,
)
from memevals.benchmarks.longmemeval.prompts import (
    is_empty_note,
    judge_inputs,
    note_prompt,
    notes_text,
    question_text,
)
from memevals.core.build import Build, Generation
from memevals.core.memory_harness import MemoryRun, MemorySubject
from memevals.core.memory_options import MemoryOptions
from memevals.core.memory_system import MemoryQuery
from memevals.core.prompt_item import PromptItem, parse_category_list
from memevals.core.protocol import DEFAULT, MEMEVALS, OFFICIAL, Protocol, ProtocolError, resolve
from memevals.core.statistics import CLUSTER_KEY
from memevals.core.upstream_judge import OFFICIAL_JUDGE_KEY

__all__ = [
    "JUDGE_MAX_TOKENS",
    "LongMemEvalBuild",
    "LongMemEvalOptions",
    "NotePlan",
    "Reader",
    "Shown",
    "answer_distance",
    "build",
    "build_item",
    "check_options",
    "in_categories",
    "item_metadata",
    "make_reader",
    "memory_subject",
    "of_categories",
    "parse_categories",
    "question_context",
    "whole_history_tokens",
]

logger = logging.getLogger(__name__)


#: The memevals judge's token limit (the official judge's is upstream's, in each sample).
JUDGE_MAX_TOKENS = 256


@dataclass(frozen=True)
class LongMemEvalOptions:
    """LongMemEval's options, the Inspect task's `-T` and lm-eval's `--metadata` alike
    (memevals.core.options.options_from), with their one set of defaults.

    `answer_tokens` is the answer length, which the truncation budget reserves (Inspect's
    `max_tokens`; None: upstream's 800 with official step-by-step, else 500); `categories`
    None means all of them. `step_by_step` is upstream's `cot` answer template (official only).
    The note and judge limits, `judge_runs` and `uncertainty` are the Inspect task's.
    """

    variant: str = "s"
    categories: str | tuple[str, ...] | None = None
    memory: MemoryOptions = field(default_factory=MemoryOptions)
    history_format: str = "json"
    context_window: int | None = None
    answer_tokens: int | None = None
    chain_of_note: bool = False
    data_dir: str | None = None
    verify_checksum: bool = True
    protocol: Protocol = DEFAULT
    step_by_step: bool = False
    note_max_tokens: int = official.NOTE_MAX_TOKENS
    judge_max_tokens: int = JUDGE_MAX_TOKENS
    judge_runs: int = 1
    uncertainty: str = "default"

    def __post_init__(self) -> None:
        # the one check of the option: a name given here is resolved once, into its Protocol
        object.__setattr__(self, "protocol", resolve(self.protocol))


@dataclass(frozen=True)
class NotePlan:
    """Chain-of-note for one question: the note requests (one per session or chunk, in the
    order shown), how the notes become the one user message, and the temperature of the note
    calls (None: the model's own; upstream's is 0)."""

    prompts: tuple[str, ...]
    compose: Callable[[Sequence[str]], str]
    temperature: float | None = None

    def kept(self, notes: Sequence[str]) -> int:
        """How many notes are not the note taker's "empty" (a figure for the log)."""
        return sum(not is_empty_note(n) for n in notes)


@dataclass(frozen=True)
class LongMemEvalBuild(Build):
    """What `build` returns: the Build and, for chain-of-note, by sample id, the sessions (in
    date order) each question's notes are taken on and its note plan (both empty otherwise)."""

    note_blocks: Mapping[str, tuple[SessionBlock, ...]] = field(default_factory=dict)
    note_plans: Mapping[str, NotePlan] = field(default_factory=dict)


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


def answer_distance(inst: Instance) -> dict[str, int]:
    """How far back a question's evidence lies: the haystack sessions after its latest answer
    session in date order (ties in file order, as the history shows them), up to the question,
    which comes after the whole haystack (a record analysis axis, read by memevals-report).

    Args:
        inst: the question with its haystack.

    Returns:
        `{"sessions_after_answer": n}`, or empty when no answer session is in the haystack.
    """
    wanted = set(inst.answer_session_ids)
    ordered = inst.sessions_by_date()
    last = max((i for i, s in enumerate(ordered) if s.session_id in wanted), default=None)
    if last is None:
        return {}
    return {"sessions_after_answer": len(ordered) - 1 - last}


def whole_history_tokens(inst: Instance, memory: LongMemEvalMemory) -> int:
    """The token count of the question's whole haystack laid out as our dated history (what
    context=full shows and context=truncated cuts), with the task's counter: how long the
    history is, whatever the context mode shows of it (a record analysis axis).

    Args:
        inst: the question with its haystack.
        memory: the strategy, for its history format and token counter.

    Returns:
        The count (0 for an empty haystack).
    """
    blocks = session_blocks(inst.sessions, memory.history_format)
    return memory.token_counter(history_text(blocks))


@dataclass(frozen=True)
class Shown:
    """The one user message of a question and what it shows (for the metadata)."""

    user: str
    session_ids: tuple[str, ...]  # the session of each block shown, in the order shown
    history_tokens: int | None = None  # truncated: the whole history's tokens before the cut
    context: str = ""  # the part of `user` that is the context (the history shown)


@dataclass(frozen=True)
class Reader:
    """How a protocol turns a question and its context into the one user message."""

    protocol: Protocol
    history_format: str
    step_by_step: bool
    context: str
    texts: official.OfficialTexts | None = None  # official only
    budget: int | None = None  # official context=truncated: the history's token budget
    memory: LongMemEvalMemory | None = None
    #: official context=truncated: the questions whose budget keeps no turn (said once)
    empty: list[str] = field(default_factory=list, compare=False, repr=False)

    @property
    def upstream(self) -> official.OfficialTexts:
        assert self.texts is not None, "protocol=official without its upstream texts"
        return self.texts

    def shown(self, inst: Instance, ctx: LmeContext) -> Shown:
        """The message for `inst` with its context."""
        if not self.protocol.official:
            user = PromptItem("", ctx.system_text, question_text(inst), "").as_text()
            ids = tuple(b.session_id for b in ctx.blocks)
            return Shown(user, ids, ctx.history_tokens, ctx.system_text)
        if self.context == "none":
            return Shown(
                official.reader_prompt(inst, None, self.upstream, step_by_step=self.step_by_step),
                (),
            )
        if ctx.facts and ctx.units:
            raise ValueError(
                f"{inst.question_id}: protocol=official: the memory system shows both "
                "verbatim sessions or turns and notes; upstream has no configuration mixing "
                f"them: {MEMEVALS.fix()}"
            )
        facts = bool(ctx.facts)
        chunks = official.sorted_chunks(
            list(ctx.facts) if facts else official.unit_chunks(ctx.units)
        )
        history = official.history_string(chunks, self.history_format_upstream, self.upstream)
        ids = tuple(s.session_id for s, _ in self._sorted_units(ctx)) if not facts else ()
        total = None
        if self.budget is not None and self.memory is not None:
            history, total = official.cut_history(
                history, self.budget, self.memory.token_counter.head
            )
            fmt = self.history_format_upstream
            if len(history) <= official.first_content_at(chunks, fmt, self.upstream):
                self.empty.append(inst.question_id)
            ids = tuple(
                sid
                for i, (sid, (date, _)) in enumerate(zip(ids, chunks, strict=True), 1)
                if self._header(i, date) in history
            )
        user = official.reader_prompt(
            inst, history, self.upstream, step_by_step=self.step_by_step, facts=facts
        )
        return Shown(user, ids, total, history)

    @property
    def history_format_upstream(self) -> str:
        """Upstream's name of the history format (our `text` is its `nl`)."""
        return "json" if self.history_format == "json" else "nl"

    def _header(self, index: int, date: str) -> str:
        # a block's text up to its body: the block is cut there or later when it is shown
        return self.upstream.session_block.format(index, date, "\0").split("\0")[0]

    def _sorted_units(self, ctx: LmeContext) -> list[tuple[Any, Any]]:
        # the units in upstream's order (by date string, stable), as their chunks are sorted
        return sorted(ctx.units, key=lambda u: u[0].date)

    def memory_message(
        self, inst: Instance, ctx: LmeContext, user: str
    ) -> tuple[str, str, tuple[str, ...]]:
        """A memory system's context as the one user message, the context part of it and the
        session of each block shown."""
        if not self.protocol.official:
            text = PromptItem("", ctx.system_text, user, "").as_text()
            return text, ctx.system_text, tuple(b.session_id for b in ctx.blocks)
        if not ctx.units and not ctx.facts:
            # the system found nothing, which is its answer: upstream's no-retrieval prompt
            # (the question alone), exactly as context=none sends it
            none = Reader(self.protocol, self.history_format, self.step_by_step, "none", self.texts)
            shown = none.shown(inst, ctx)
        else:
            shown = self.shown(inst, ctx)
        return shown.user, shown.context, shown.session_ids

    def note_plan(self, inst: Instance, ctx: LmeContext) -> NotePlan:
        """Chain-of-note's requests and the message the notes make."""
        if not self.protocol.official:
            blocks = ctx.blocks

            def compose_ours(notes: Sequence[str]) -> str:
                return PromptItem("", notes_text(blocks, notes), question_text(inst), "").as_text()

            prompts = tuple(note_prompt(b, inst.question, inst.question_date) for b in blocks)
            return NotePlan(prompts, compose_ours)
        chunks = official.sorted_chunks(official.unit_chunks(ctx.units))
        texts = self.upstream

        def compose_upstream(notes: Sequence[str]) -> str:
            noted = official.note_chunks(chunks, notes)
            history = official.history_string(noted, "json", texts)
            return official.reader_prompt(inst, history, texts, step_by_step=self.step_by_step)

        prompts = tuple(official.note_prompts(inst, chunks, texts))
        return NotePlan(prompts, compose_upstream, 0.0)


def _context_metadata(
    inst: Instance, memory: LongMemEvalMemory, ctx: LmeContext, shown: Shown
) -> dict[str, Any]:
    """What the context mode logs: rag's retrieval record, and the history's token count."""
    md: dict[str, Any] = {}
    if memory.context == "rag":
        md |= {
            "retrieval_unit": memory.retrieval_unit,
            "retrieved_ids": list(ctx.retrieved_ids or ()),
            "retrieval_scores": ctx.retrieval_scores,
            "retrieval_skipped": ctx.retrieval_skipped,
        }
    if memory.context == "truncated":
        assert memory.max_context_tokens is not None
        total = shown.history_tokens if shown.history_tokens is not None else ctx.history_tokens
        assert total is not None
        md |= {"history_tokens": total, "history_truncated": total > memory.max_context_tokens}
    else:
        # truncated mode logs the figure it cuts by (under official: upstream's layout); every
        # other mode the whole history's count, so reports can bucket scores by history length
        md["history_tokens"] = whole_history_tokens(inst, memory)
    return md


def build_item(
    inst: Instance,
    memory: LongMemEvalMemory,
    ctx: LmeContext | None = None,
    *,
    variant: str,
    chain_of_note: bool = False,
    reader: Reader | None = None,
) -> PromptItem:
    """One sample: one user message (the context and the question, laid out by the protocol's
    reader; default protocol=memevals) and the metadata the scorers and logs read (retrieval
    record, prompt size). `ctx` reuses a context already computed. Chain-of-note items carry
    only the question, as the notes replace the history at run time, and no prompt size, as
    the note calls are made then."""
    if ctx is None:
        ctx = memory(inst)
    if reader is None:
        reader = Reader(MEMEVALS, memory.history_format, False, memory.context)
    # the question alone until the notes are taken (NotePlan.compose) or the memory system
    # under test gives the context (its renderer), both at run time
    later = chain_of_note or memory.system is not None
    shown = Shown(question_text(inst), ()) if later else reader.shown(inst, ctx)
    user = shown.user
    md = item_metadata(inst, variant=variant)
    md |= {
        "protocol": reader.protocol.name,
        "context": memory.context,
        "history_format": memory.history_format,
        "n_sessions_shown": len(ctx.blocks),
        "session_ids_shown": [b.session_id for b in ctx.blocks],
        "chain_of_note": chain_of_note,
        "missing_answer_sessions": list(inst.missing_answer_session_ids),
    }
    if reader.protocol.official:
        assert reader.texts is not None
        md[OFFICIAL_JUDGE_KEY] = official.judge_request(inst, reader.texts).as_metadata()
        if not later:
            md |= {
                "n_sessions_shown": len(shown.session_ids),
                "session_ids_shown": list(shown.session_ids),
            }
    md |= _context_metadata(inst, memory, ctx, shown)
    md |= answer_distance(inst)
    if not chain_of_note:
        # as chat APIs count a message (chat-template tokens not included); both frameworks
        # report this one figure
        counter = memory.token_counter
        md |= {"prompt_tokens": counter(user), "token_counter": counter.name}
    # every question has its own haystack, so each is its own cluster (README.md#standard-errors)
    md[CLUSTER_KEY] = inst.question_id
    return PromptItem(
        id=inst.question_id, system="", user=user, target=inst.answer_text, metadata=md
    )


def _check_limits(options: LongMemEvalOptions) -> None:
    """Token limits are positive; the judge's belong to our judge (the official one judges
    once, with upstream's 10 tokens)."""
    for name, value in (
        ("max_tokens", options.answer_tokens),
        ("note_max_tokens", options.note_max_tokens),
        ("judge_max_tokens", options.judge_max_tokens),
        ("judge_runs", options.judge_runs),
    ):
        if value is not None and value < 1:
            lm_eval = " (lm-eval: answer_tokens)" if name == "max_tokens" else ""
            raise ValueError(f"{name} must be at least 1, got {value}{lm_eval}")
    if not options.protocol.judges_once:
        return
    for name, value, default in (
        ("judge_runs", options.judge_runs, 1),
        ("judge_max_tokens", options.judge_max_tokens, JUDGE_MAX_TOKENS),
    ):
        if value != default:
            raise ProtocolError(
                f"{name}={value}: protocol={options.protocol} judges once with upstream's 10 "
                f"tokens; {name} applies to protocol=memevals: {MEMEVALS.fix(lm_eval=False)}"
            )


def check_options(options: LongMemEvalOptions) -> int:
    """Check the options that depend on each other or on the protocol; returns the answer
    length. An option combination upstream has no prompt for is an error naming the option.

    Args:
        options: the run's options.

    Returns:
        The answer length (upstream's when none is given).
    """
    _check_limits(options)
    protocol = options.protocol
    if options.step_by_step and not protocol.official:
        raise ValueError(
            "step_by_step is upstream's step-by-step answer template (protocol=official); "
            f"protocol={protocol} has no step-by-step prompt: {OFFICIAL.fix()}"
        )
    if protocol.official and options.chain_of_note and options.history_format != "json":
        raise ValueError(
            f"chain_of_note with history_format={options.history_format!r}: under "
            f"protocol={protocol} the notes are shown as JSON, as upstream can only show them "
            f"(its nl format reads turns): use history_format=json, or {MEMEVALS.fix()}"
        )
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
    if options.answer_tokens is None:
        return official.answer_tokens(protocol, options.step_by_step)
    return options.answer_tokens


def make_reader(options: LongMemEvalOptions, memory: LongMemEvalMemory) -> Reader:
    """The protocol's reader; under official the upstream texts are loaded (and verified) here,
    before any data is read."""
    texts = official.load_texts(options.data_dir) if options.protocol.official else None
    budget = memory.max_context_tokens if memory.context == "truncated" else None
    return Reader(
        options.protocol,
        memory.history_format,
        options.step_by_step,
        memory.context,
        texts=texts,
        budget=budget,
        memory=memory,
    )


def question_context(reader: Reader, memory: LongMemEvalMemory, inst: Instance) -> LmeContext:
    """The question's context; under official, context=truncated shows every session and the
    reader cuts upstream's history string (not our layout) to the budget."""
    if reader.protocol.official and memory.context == "truncated":
        return LmeContext((), units=tuple((s, None) for s in inst.sessions))
    return memory(inst)


def _protocol_log(options: LongMemEvalOptions, reader: Reader, answer: int) -> dict[str, Any]:
    log: dict[str, Any] = {
        "protocol": options.protocol.name,
        "step_by_step": options.step_by_step,
        "answer_tokens": answer,
    }
    if reader.texts is not None:
        log["upstream"] = {
            "repo": official.REPO,
            "commit": official.COMMIT,
            "files": {f.path: f.sha256 for f in (official.GENERATION, official.EVALUATION)},
            "templates": reader.texts.digests(),
        }
    return log


@dataclass
class _Questions:
    """The questions of a build, gathered while the file streams past."""

    items: list[PromptItem] = field(default_factory=list)
    note_blocks: dict[str, tuple[SessionBlock, ...]] = field(default_factory=dict)
    note_plans: dict[str, NotePlan] = field(default_factory=dict)
    kept: list[Instance] = field(default_factory=list)  # a memory system ingests each haystack
    digest: list[str] = field(default_factory=list)


def _questions(
    options: LongMemEvalOptions,
    categories: Sequence[str],
    memory: LongMemEvalMemory,
    reader: Reader,
) -> _Questions:
    """Every question of the asked categories as an item (with its note plan and, for a memory
    system, its instance)."""
    out = _Questions()
    for inst in iter_longmemeval(
        options.variant,
        options.data_dir,
        verify_checksum=options.verify_checksum,
        digest_out=out.digest,
    ):
        if not in_categories(inst.category, inst.is_abstention, categories):
            continue
        ctx = question_context(reader, memory, inst)
        out.items.append(
            build_item(
                inst,
                memory,
                ctx,
                variant=options.variant,
                chain_of_note=options.chain_of_note,
                reader=reader,
            )
        )
        if options.chain_of_note:
            out.note_blocks[inst.question_id] = ctx.blocks
            out.note_plans[inst.question_id] = reader.note_plan(inst, ctx)
        if memory.system is not None:
            out.kept.append(inst)
    if not out.items:
        raise ValueError(
            f"no LongMemEval question matches categories={options.categories!r} in variant "
            f"{options.variant}"
        )
    return out


def build(options: LongMemEvalOptions) -> LongMemEvalBuild:
    """The run of `options`; every option is checked before the file is read.

    Args:
        options: the run's options.

    Returns:
        The items, the task log, the reader's generation settings (the answer length; the
        protocol's temperature), the memory system under test and the chain-of-note plans.
    """
    spec = data_file(options.variant)
    categories = parse_categories(options.categories)
    answer = check_options(options)
    memory = longmemeval_memory(
        options.memory,
        history_format=options.history_format,
        context_window=options.context_window,
        answer_tokens=answer,
    )
    if options.chain_of_note and memory.context == "none":
        raise ValueError("chain_of_note needs sessions to take notes on; context=none has none")
    reader = make_reader(options, memory)
    warn_if_oversized(options.variant, memory.context)
    found = _questions(options, categories, memory, reader)
    if reader.empty and reader.budget is not None:
        logger.warning(
            official.empty_history_warning(reader.empty, len(found.items), reader.budget)
        )
    digest = found.digest
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
        **_protocol_log(options, reader, answer),
    }
    data_sha256 = digest[0] if digest else (spec.sha256 or spec.filename)
    subject = memory_subject(found.kept, memory, data_sha256, reader)
    if subject is not None:
        log |= subject.settings()
    return LongMemEvalBuild(
        items=tuple(found.items),
        metadata=log,
        generation=Generation(max_tokens=answer, temperature=options.protocol.temperature),
        subject=subject,
        dataset=f"longmemeval_{options.variant}",
        note_blocks=found.note_blocks,
        note_plans=found.note_plans,
    )


def memory_subject(
    instances: Sequence[Instance],
    memory: LongMemEvalMemory,
    data_sha256: str,
    reader: Reader | None = None,
) -> MemorySubject | None:
    """The memory system under test bound to these questions (None without one). Every
    question has its own haystack, so the history id is the question id; the query is the
    question with its date, asking for max(top_k, 50) items (the metrics' depth), of which the
    first top_k are shown, with the question in one user message laid out by `reader`
    (default protocol=memevals)."""
    if memory.system is None:
        return None
    if reader is None:
        reader = Reader(MEMEVALS, memory.history_format, False, memory.context)
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
        render=memory_renderer(
            instances, choice.top_k, memory.history_format, reader.memory_message
        ),
        counter=memory.token_counter,
        k=choice.top_k,
        answers=choice.answers,
    )

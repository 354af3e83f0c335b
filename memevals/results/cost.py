"""What a run will cost, before any model is called.

    memevals-estimate TASK [-T name=value ...] [--price-in X --price-out Y]
    python -m memevals.tools.estimate ...      # the same command

The task is built exactly as `inspect eval` builds it (same registry, same `-T` arguments), and
each sample's chat messages are counted offline with the project's token counter
(`memevals.core.tokens`, cl100k_base by default). Printed: the number of samples, input
tokens in total and per sample, and the share of input tokens that repeat the start of the
previous sample's input — the part a provider's prompt cache can serve, because the tasks put
the (shared) history first and order samples so that questions on one history follow each other.

Accounting rules (stated because a bill depends on them):

* Each message costs its text's tokens plus 3, and each request 3 more: OpenAI's published
  chat-format accounting. Other providers differ by a few tokens per message.
* Shared prefix of sample i = identical leading messages, plus, within the first message that
  differs, the common text up to its last newline (a token boundary in practice, so the count
  never claims more than the two token streams really share).
* What a cache can bill as cached: providers cache only prompts of some minimum length and in
  blocks (OpenAI: from 1,024 tokens, then in 128-token steps; Anthropic: from 1,024 or 2,048
  tokens at explicit breakpoints). `--cache-min-tokens` / `--cache-block` set this (default
  OpenAI's rule; 1 and 1 give the ideal).
* Cached input is billed at `--cached-price-ratio` times the input price. Default 0.5, the
  *highest* ratio among the major providers' cached-read prices (OpenAI's GPT-4o family);
  newer price sheets are lower (0.25 for GPT-4.1 and Gemini 2.5 implicit caching, 0.1 for
  Anthropic cache reads and the GPT-5 family), so the default gives a cautious figure: pass
  your provider's ratio. Tokens written to a cache can cost extra (Anthropic: 1.25x, 5-minute
  cache): `--cache-write-ratio`; a token counts as written when the next sample reuses it and it
  was not already read from the cache.
* The cache is assumed warm in sample order, as with one connection. With many parallel
  connections the first questions on a history can arrive before its first answer has filled
  the cache, so real savings are somewhat lower.
* Output tokens are not known in advance: `--output-tokens` per sample, default the task's
  `max_tokens` (an upper bound). A task that sends no token limit (a protocol whose upstream
  sends none) has no bound: the figure is then an assumption, `UNCAPPED_OUTPUT_TOKENS` per
  sample, and the printout says so. Multi-call solvers (a chain-of-note that reads each
  session first) are not included; the printout says when a task has them.
* Grader calls: a task whose scorers judge with a grader model (its record's judge scores)
  gets a count of the grader calls, per sample from what its record declares
  (`JudgeSpec.calls`: one per sample, or BEAM's one per rubric item) with the record's words on
  what the count leaves out (`JudgeSpec.calls_note`). Their tokens are not priced.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.util import registry_info

from memevals.benchmarks import record_for_task, records
from memevals.core.agent_memory import NOTE_SHARE
from memevals.core.tokens import TokenCounter, get_token_counter
from memevals.inspect_tasks.agent_task import write_estimates
from memevals.inspect_tasks.tasks import check_task_options, task_options

#: Tokens added per message and per request (OpenAI's chat-format accounting).
MESSAGE_OVERHEAD = 3


REQUEST_OVERHEAD = 3


DEFAULT_CACHED_PRICE_RATIO = 0.5


DEFAULT_CACHE_MIN_TOKENS = 1024


DEFAULT_CACHE_BLOCK = 128


#: Output tokens per sample assumed for a task that sends no token limit: its replies are as
#: long as the model makes them, so no figure is known; this one is a cautious guess for an
#: answer (pass --output-tokens for your own).
UNCAPPED_OUTPUT_TOKENS = 2048


@dataclass(frozen=True)
class SampleTokens:
    """Input tokens of one sample and how many of them repeat the previous sample's start."""

    id: str
    input_tokens: int
    shared_prefix: int


@dataclass(frozen=True)
class GraderCalls:
    """The grader calls one judge scorer makes, per sample, as its benchmark's record declares."""

    scorer: str
    #: calls per sample, in sample order
    per_sample: tuple[int, ...]
    #: the record's words on how they are counted and what the count leaves out
    note: str

    @property
    def total(self) -> int:
        return sum(self.per_sample)


@dataclass(frozen=True)
class CacheRule:
    """Which part of a shared prefix a provider bills as cached."""

    min_tokens: int = DEFAULT_CACHE_MIN_TOKENS
    block: int = DEFAULT_CACHE_BLOCK

    def __post_init__(self) -> None:
        if self.min_tokens < 1 or self.block < 1:
            raise ValueError("cache min tokens and block must be at least 1")


def cacheable(shared: int, rule: CacheRule) -> int:
    """Cached tokens for a shared prefix of `shared` tokens: nothing below the minimum, then
    whole blocks past it."""
    if shared < rule.min_tokens:
        return 0
    return rule.min_tokens + (shared - rule.min_tokens) // rule.block * rule.block


@dataclass(frozen=True)
class Costs:
    """Cost of a run in dollars, with and without a prompt cache."""

    without_cache: float
    with_cache: float
    cached_tokens: int
    written_tokens: int


@dataclass(frozen=True)
class Estimate:
    task: str
    task_args: dict[str, Any]
    token_counter: str
    samples: list[SampleTokens]
    output_tokens_per_sample: int
    output_tokens_source: str
    notes: list[str]
    grader_calls: list[GraderCalls] = field(default_factory=list)
    #: samples, where the task calls the model more than once per sample (the event summary's
    #: incremental=true): `samples` then holds one entry per call. None: one call per sample
    sample_count: int | None = None
    #: `context=agent`: each history's write-pass input tokens under every `agent_memory`
    #: (history id -> agent_memory -> tokens; empty in other modes)
    agent_writes: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def agent_write_tokens(self) -> dict[str, int]:
        """`context=agent`: write-pass input tokens under each `agent_memory`, over the
        histories the samples ask about (each written once)."""
        out: dict[str, int] = {}
        for modes in self.agent_writes.values():
            for mode, tokens in modes.items():
                out[mode] = out.get(mode, 0) + tokens
        return out

    @property
    def input_tokens(self) -> int:
        return sum(s.input_tokens for s in self.samples)

    @property
    def shared_prefix_tokens(self) -> int:
        return sum(s.shared_prefix for s in self.samples)

    @property
    def shared_share(self) -> float:
        total = self.input_tokens
        return self.shared_prefix_tokens / total if total else 0.0

    @property
    def output_tokens(self) -> int:
        return self.output_tokens_per_sample * len(self.samples)

    def costs(
        self,
        price_in: float,
        price_out: float,
        cached_ratio: float = DEFAULT_CACHED_PRICE_RATIO,
        write_ratio: float = 1.0,
        rule: CacheRule | None = None,
    ) -> Costs:
        """Prices are dollars per million tokens."""
        if min(price_in, price_out, cached_ratio, write_ratio) < 0:
            raise ValueError("prices and ratios must not be negative")
        rule = rule or CacheRule()
        cached = [min(cacheable(s.shared_prefix, rule), s.input_tokens) for s in self.samples]
        # a token is written when the next sample reads it and this sample did not read it
        reused_next = [*cached[1:], 0]
        written = [
            max(0, min(nxt, s.input_tokens) - c)
            for s, c, nxt in zip(self.samples, cached, reused_next, strict=True)
        ]
        total_in = self.input_tokens
        out_cost = self.output_tokens * price_out / 1e6
        plain = total_in * price_in / 1e6 + out_cost
        read, wrote = sum(cached), sum(written)
        billed = (total_in - read - wrote) + read * cached_ratio + wrote * write_ratio
        return Costs(
            without_cache=plain,
            with_cache=billed * price_in / 1e6 + out_cost,
            cached_tokens=read,
            written_tokens=wrote,
        )


def _task_functions() -> dict[str, Callable[..., Task]]:
    from memevals.inspect_tasks import registry as _registry

    fns: dict[str, Callable[..., Task]] = {}
    for mod in _registry.TASK_MODULES:
        for name in mod.__all_tasks__:
            fn = getattr(mod, name)
            fns[name] = fn
            fns[f"memevals/{name}"] = fn
    return fns


def build_task(name: str, args: Mapping[str, Any]) -> Task:
    """Build a memevals task by (bare or namespaced) name with `-T`-style arguments."""
    fns = _task_functions()
    fn = fns.get(name)
    if fn is None:
        bare = sorted(n for n in fns if "/" not in n)
        raise ValueError(
            f"unknown task {name!r}{_closest(name, bare)}; memevals tasks: {', '.join(bare)}"
        )
    # the same check (and message) as `inspect eval -T`, before anything is loaded
    check_task_options(name, args, task_options(fn))
    task = fn(**args)
    if not isinstance(task, Task):  # pragma: no cover - every registered task returns a Task
        raise TypeError(f"{name} did not build a Task")
    return task


def _closest(name: str, known: Sequence[str]) -> str:
    """` (did you mean 'locomo_plus'?)` for the task or benchmark name closest to `name` (its
    `memevals/` prefix and dashes for underscores forgiven), else ""."""
    wanted = name.removeprefix("memevals/").replace("-", "_").lower()
    names = {n.lower(): n for n in [*known, *records()]}
    close = [names[wanted]] if wanted in names else difflib.get_close_matches(wanted, names, n=1)
    return f" (did you mean {names.get(close[0], close[0])!r}?)" if close else ""


def _messages(sample: Sample) -> list[tuple[str, str]]:
    if isinstance(sample.input, str):
        return [("user", sample.input)]
    return [(m.role, m.text) for m in sample.input]


def _common_prefix_len(a: str, b: str) -> int:
    """Length of the common prefix (binary search over slice comparisons: fast on long texts)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def shared_prefix_tokens(
    prev: Sequence[tuple[str, str]], cur: Sequence[tuple[str, str]], count: Callable[[str], int]
) -> int:
    """Tokens at the start of `cur` that repeat the start of `prev` (see the module doc)."""
    shared = 0
    for (prole, ptext), (role, text) in zip(prev, cur, strict=False):
        if prole != role:
            break
        if ptext == text:
            shared += MESSAGE_OVERHEAD + count(text)
            continue
        common = text[: _common_prefix_len(ptext, text)]
        cut = common.rfind("\n")
        shared += MESSAGE_OVERHEAD + (count(common[: cut + 1]) if cut >= 0 else 0)
        break
    return shared


def estimate_samples(samples: Sequence[Sample], counter: TokenCounter) -> list[SampleTokens]:
    """Input tokens and shared prefix of each sample, in dataset (= execution) order."""
    cache: dict[str, int] = {}

    def count(text: str) -> int:
        n = cache.get(text)
        if n is None:
            n = cache[text] = counter(text)
        return n

    out: list[SampleTokens] = []
    prev: list[tuple[str, str]] | None = None
    for sample in samples:
        msgs = _messages(sample)
        total = REQUEST_OVERHEAD + sum(MESSAGE_OVERHEAD + count(t) for _, t in msgs)
        shared = shared_prefix_tokens(prev, msgs, count) if prev is not None else 0
        out.append(SampleTokens(str(sample.id), total, shared))
        prev = msgs
    return out


def grader_calls(
    task: Task, samples: Sequence[Sample], runs: int = 1, options: Mapping[str, Any] | None = None
) -> list[GraderCalls]:
    """The grader calls of the task's judge scorers (its record's judge scores, or every score
    of a record whose judge has no criterion: a fact-by-fact check such as the event summary's
    FactScore), per sample from the record's declaration (`JudgeSpec.calls`, which reads the
    sample's metadata over the task's `-T` options); a task without a record: one per sample for
    each scorer named like a judge.

    Args:
        task: the built task.
        samples: the samples counted.
        runs: how many times each sample is judged (`-T judge_runs`).
        options: the task's `-T` options (a judge's count may depend on them).

    Returns:
        One entry per judge scorer, in scorer order.
    """
    names = [registry_info(s).name.rpartition("/")[2] for s in task.scorer or []]
    benchmark = str((task.metadata or {}).get("benchmark") or "")
    # the record declaring the task first: the event summary's samples name LoCoMo's benchmark
    record = record_for_task(task.name) or records().get(benchmark)
    if record is None:
        judged = [n for n in names if "judge" in n]
        one = tuple(runs for _ in samples)
        return [GraderCalls(n, one, "one per sample (assumed: no record)") for n in judged]
    out: list[GraderCalls] = []
    for name in names:
        spec = record.score(name)
        judge = record.judge
        fact_check = judge is not None and judge.criterion is None
        if spec is None or (spec.kind != "judge" and not fact_check):
            continue
        if judge is None:
            out.append(GraderCalls(name, tuple(runs for _ in samples), "one per sample"))
            continue
        given = dict(options or {})
        per_sample = tuple(
            runs * int(judge.calls({**given, **(s.metadata or {})})) for s in samples
        )
        out.append(GraderCalls(name, per_sample, judge.calls_note))
    return out


def _model_calls(
    task: Task, samples: Sequence[Sample], args: Mapping[str, Any]
) -> tuple[list[Sample] | None, str]:
    """One entry per model call where a sample makes several (the event summary's
    incremental=true), from the record's `model_calls`, with its note; (None, "") where each
    sample makes one call, its input."""
    record = record_for_task(task.name)
    if record is None or record.model_calls is None:
        return None, ""
    per_sample = record.model_calls([s.metadata or {} for s in samples], args)
    if per_sample is None:
        return None, ""
    calls = [
        Sample(
            id=f"{sample.id} call {k}",
            input=[ChatMessageSystem(content=system), ChatMessageUser(content=user)],
        )
        for sample, prompted in zip(samples, per_sample, strict=True)
        for k, (system, user) in enumerate(prompted, 1)
    ]
    return calls, record.model_calls_note


def _without_scorer_model(name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The task's arguments with BERTScore off unless a `bertscore*` option is given: the
    prompts counted do not depend on the scorer, and its default model (roberta-large) is a
    download an offline estimate would fail on."""
    fn = _task_functions().get(name)
    if fn is None or "bertscore" not in task_options(fn):
        return dict(args)
    if any(key.startswith("bertscore") for key in args):
        return dict(args)
    return {**args, "bertscore": False}


def _notes(task: Task) -> list[str]:
    notes: list[str] = []
    md = task.metadata or {}
    if md.get("chain_of_note"):
        notes.append("chain_of_note makes one extra call per history session: not included")
    memory = md.get("memory")
    if isinstance(memory, Mapping) and memory.get("memory"):
        # the system retrieves at run time: the prompts counted hold only the question
        notes.append(
            f"memory={memory['memory']}: the context the memory system gives each question "
            f"(top_k={memory.get('top_k')} items) is retrieved at run time and not included, "
            "nor are the calls a system makes while ingesting the histories"
        )
    return notes


def estimate(
    task_name: str,
    task_args: Mapping[str, Any] | None = None,
    token_counter: str = "auto",
    output_tokens: int | None = None,
    limit: int | None = None,
) -> Estimate:
    """Build the task (no model is called) and count its samples' input tokens."""
    if output_tokens is not None and output_tokens < 0:
        raise ValueError(f"--output-tokens {output_tokens}: must not be negative")
    args = dict(task_args or {})
    task = build_task(task_name, _without_scorer_model(task_name, args))
    counter = get_token_counter(token_counter)
    samples = list(task.dataset)
    if limit is not None:
        samples = samples[:limit]
    notes = _notes(task)
    # the write pass counted with the counter asked for, as the prompts are
    writes = write_estimates(task, sample_ids=[str(s.id) for s in samples], counter=counter)
    if writes:
        notes.append(
            "context=agent: the notes the write pass reads back are assumed to be "
            f"{NOTE_SHARE:.0%} of each session; its output tokens and the answer pass's tool "
            "results are not included"
        )
    calls, calls_note = _model_calls(task, samples, args)
    if calls is not None:
        # a later call may carry what the call before returned: at most its max_tokens
        carried = (len(calls) - len(samples)) * int(task.config.max_tokens or 0)
        notes.append(
            f"{len(calls):,} model calls for {len(samples):,} samples: {calls_note}; at most "
            f"{carried:,} tokens more in all (max_tokens per call after a sample's first)"
        )
    if output_tokens is None:
        max_tokens = task.config.max_tokens
        if max_tokens is None:
            per_sample, source = UNCAPPED_OUTPUT_TOKENS, "assumed: the task sends no limit"
            notes.append(
                "the task sends no token limit (its protocol sends none), so the output figure "
                f"is an assumption ({UNCAPPED_OUTPUT_TOKENS:,} per sample), not a bound: pass "
                "--output-tokens N for your own"
            )
        else:
            per_sample, source = max_tokens, "max_tokens of the task, an upper bound"
    else:
        per_sample, source = output_tokens, "--output-tokens"
    return Estimate(
        task=task_name,
        task_args=args,
        token_counter=counter.name,
        samples=estimate_samples(samples if calls is None else calls, counter),
        output_tokens_per_sample=per_sample,
        output_tokens_source=source,
        notes=notes,
        # each judged judge_runs times (the note says so too)
        grader_calls=grader_calls(task, samples, int(args.get("judge_runs") or 1), args),
        agent_writes=writes,
        sample_count=None if calls is None else len(samples),
    )

"""`locomo_event_summary`: LoCoMo's event summarisation task on Inspect
(benchmarks/locomo_event_summary/README.md#protocol).

One sample per conversation and speaker. By default the model reads the whole conversation at
once; with `incremental=true` a solver walks the sessions in order, each step seeing one session
and the summary so far (the paper's protocol for short-context models). The scorer reports
ROUGE-1/2/L and FactScore-style fact precision/recall/F1 judged by the grader model
(`benchmarks/locomo_event_summary/scoring.py`); facts and per-fact verdicts go into
`Score.metadata`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai import Task
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
)
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from memevals.benchmarks.locomo.data import LOCOMO_FILE, Conversation, load_conversations
from memevals.benchmarks.locomo_event_summary.prompts import incremental_prompt
from memevals.benchmarks.locomo_event_summary.samples import EventSummaryOptions, build
from memevals.benchmarks.locomo_event_summary.scoring import (
    DEFAULT_FACTS_PER_CALL,
    DEFAULT_LINES_PER_CALL,
    ROUGE_TYPES,
    FactScoreResult,
    GraderFailure,
    factscore,
    rouge_scores,
)
from memevals.inspect_tasks.common import count, memevals_task, to_dataset, uncertainty_metrics
from memevals.inspect_tasks.judge import grader_model

logger = logging.getLogger(__name__)

__all__ = ["event_summary_scorer", "incremental_summary", "locomo_event_summary"]

REFERENCE_FACTS = ("decompose", "events")
FACT_KEYS = ("fact_precision", "fact_recall", "fact_f1")


@solver
def incremental_summary(conversations: Mapping[str, Conversation]) -> Solver:
    """Summarise session by session, feeding the previous summary forward.

    Each step replaces the messages with (one session, summary so far) and generates; the last
    reply is the sample's output. Every step's summary is kept in ``state.store`` under
    ``incremental_summaries`` (and each model call is in the transcript).
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        md = state.metadata
        conv = conversations[str(md["conversation_id"])]
        speaker = str(md["speaker"])
        wanted = set(md["sessions"])
        summary: str | None = None
        steps: list[str] = []
        for session in conv.sessions:
            if session.index not in wanted:
                continue
            system, user = incremental_prompt(conv, speaker, session, summary)
            state.messages = [ChatMessageSystem(content=system), ChatMessageUser(content=user)]
            state = await generate(state)
            summary = state.output.completion
            steps.append(summary)
        state.store.set("incremental_summaries", steps)
        return state

    return solve


def _grader_call(model: Model, config: GenerateConfig) -> Any:
    async def call(messages: Sequence[tuple[str, str]]) -> str:
        chat: list[ChatMessage] = [
            ChatMessageAssistant(content=text)
            if role == "assistant"
            else ChatMessageUser(content=text)
            for role, text in messages
        ]
        output = await model.generate(chat, config=config)
        return output.completion

    return call


def _facts_md(result: FactScoreResult) -> dict[str, Any]:
    return {
        "generated_facts": [{"fact": c.fact, "supported": c.supported} for c in result.generated],
        "reference_facts": [{"fact": c.fact, "covered": c.supported} for c in result.reference],
        "counts": {
            "generated": result.score.generated,
            "supported": result.score.supported,
            "reference": result.score.reference,
            "covered": result.score.covered,
        },
    }


@scorer(
    metrics={
        **{name: uncertainty_metrics(by_category=False) for name in (*ROUGE_TYPES, *FACT_KEYS)},
        "unscored": [count()],
    }
)
def event_summary_scorer(
    reference_facts: str = "decompose",
    lines_per_call: int = DEFAULT_LINES_PER_CALL,
    facts_per_call: int = DEFAULT_FACTS_PER_CALL,
    grader_max_tokens: int = 2048,
    retries: int = 1,
) -> Scorer:
    """ROUGE-1/2/L plus fact precision/recall/F1 from the `grader` model role.

    Args:
        reference_facts: "decompose" (the grader splits the reference into atomic facts, like
            the summary) or "events" (each annotated event is one fact).
        lines_per_call: text lines per decomposition call.
        facts_per_call: facts per support-check call.
        grader_max_tokens: the grader's token limit per reply.
        retries: extra attempts after an unreadable grader reply; then the sample's fact
            scores are unscored (NaN, excluded from the means, counted under "unscored").
    """
    if reference_facts not in REFERENCE_FACTS:
        raise ValueError(
            f"reference_facts={reference_facts!r} is not supported; allowed values: "
            + ", ".join(REFERENCE_FACTS)
        )
    if grader_max_tokens < 1 or retries < 0:
        raise ValueError("grader_max_tokens must be positive and retries >= 0")
    config = GenerateConfig(temperature=0.0, max_tokens=grader_max_tokens)

    async def score(state: TaskState, target: Target) -> Score:
        md = state.metadata
        summary = state.output.completion
        reference = target.text
        value: dict[str, float] = dict(rouge_scores(summary, reference))
        grader, fallback = grader_model()
        meta: dict[str, Any] = {
            "grader": str(grader),
            "grader_fallback": fallback,
            "reference_facts_mode": reference_facts,
        }
        events = md.get("reference_events") or []
        given = (
            [f"{e['date']}: {e['text']}" for e in events] if reference_facts == "events" else None
        )
        try:
            result = await factscore(
                summary,
                reference,
                str(md["speaker"]),
                _grader_call(grader, config),
                reference_facts=given,
                lines_per_call=lines_per_call,
                facts_per_call=facts_per_call,
                retries=retries,
            )
        except GraderFailure as exc:
            value |= {k: math.nan for k in FACT_KEYS} | {"unscored": 1}
            meta |= {"grader_replies": exc.replies, "failed_step": exc.step}
            return Score(
                value=value,
                answer=summary,
                explanation=f"UNSCORED facts: {exc}. ROUGE is still reported.",
                metadata=meta,
            )
        s = result.score
        value |= {
            "fact_precision": s.precision,
            "fact_recall": s.recall,
            "fact_f1": s.f1,
            "unscored": 0,
        }
        meta |= _facts_md(result) | {"grader_replies": result.replies}
        return Score(
            value=value,
            answer=summary,
            explanation=(
                f"facts: {s.supported}/{s.generated} generated supported, "
                f"{s.covered}/{s.reference} reference covered"
            ),
            metadata=meta,
        )

    return score


@memevals_task
def locomo_event_summary(
    incremental: bool = False,
    sessions: int | None = None,
    conversations: str | None = None,
    reference_facts: str = "decompose",
    max_tokens: int = 2048,
    lines_per_call: int = DEFAULT_LINES_PER_CALL,
    facts_per_call: int = DEFAULT_FACTS_PER_CALL,
    grader_max_tokens: int = 2048,
    data_dir: str | None = None,
    uncertainty: str = "default",
) -> Task:
    """LoCoMo event summarisation: each speaker's dated life events, 20 samples.

    Args:
        incremental: summarise session by session, feeding the summary so far forward (for
            short-context models); default: the whole conversation at once.
        sessions: use only the first N sessions (the reference keeps their events); default all.
        conversations: comma-separated conversation ids (e.g. conv-26); default all 10.
        reference_facts: "decompose" (default; the grader splits the reference into atomic
            facts) or "events" (one fact per annotated event, fewer grader calls).
        max_tokens: the summary's token limit (per step when incremental).
        lines_per_call: text lines per grader decomposition call.
        facts_per_call: facts per grader support-check call.
        grader_max_tokens: the grader's token limit per reply.
        data_dir: folder holding locomo/locomo10.json (overrides MEMEVALS_DATA_DIR).
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be positive, got {max_tokens}")
    options = EventSummaryOptions(
        conversations=conversations, sessions=sessions, incremental=incremental, data_dir=data_dir
    )
    items, log = build(options)
    solve = (
        incremental_summary({c.sample_id: c for c in load_conversations(data_dir, conversations)})
        if incremental
        else generate()
    )
    score = event_summary_scorer(
        reference_facts=reference_facts,
        lines_per_call=lines_per_call,
        facts_per_call=facts_per_call,
        grader_max_tokens=grader_max_tokens,
    )
    return Task(
        dataset=to_dataset(items, "locomo_event_summary"),
        solver=solve,
        scorer=score,
        config=GenerateConfig(max_tokens=max_tokens),
        metadata={
            "benchmark": "locomo",
            "task": "event_summary",
            "incremental": incremental,
            "sessions": sessions,
            "reference_facts": reference_facts,
            **log,
            "data_sha256": LOCOMO_FILE.sha256,
        },
    )


__all_tasks__ = ["locomo_event_summary"]


def posthoc_scorers(
    metadata: Sequence[Mapping[str, Any]], max_tokens: int | None, judge_runs: int
) -> list[Scorer]:
    """The scorer `python -m memevals.tools.judge` gives logged summaries: ROUGE and FactScore,
    as the task scores them (FactScore's grader calls are judged once).

    Args:
        metadata: the logged samples' metadata.
        max_tokens: the grader's token limit per reply (None: the scorer's default).
        judge_runs: must be 1.

    Returns:
        The scorers.
    """
    if judge_runs != 1:
        raise ValueError(
            f"judge_runs={judge_runs}: event summaries (FactScore) are judged once; repeated "
            "judging covers the benchmarks whose judge gives one verdict per reply"
        )
    if max_tokens is None:
        return [event_summary_scorer()]
    return [event_summary_scorer(grader_max_tokens=max_tokens)]

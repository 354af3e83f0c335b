"""LoCoMo QA on Inspect: `locomo` and one task per category, scored with the official F1.

`-T protocol=official` (default) sends upstream's one user message (32 tokens, temperature 0)
and, with `judge=true`, judges with LoCoMo-Plus's upstream judge
(memevals.benchmarks.locomo.official, memevals.inspect_tasks.official_judge);
`protocol=memevals` sends our own wording, also as one user message, and judges with our
criteria. Either way the lm-eval tasks send the same message."""

from __future__ import annotations

from typing import Any

from inspect_ai import Task
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from memevals.benchmarks.locomo import samples
from memevals.benchmarks.locomo.data import LOCOMO_FILE
from memevals.benchmarks.locomo.memory import CONTEXT_MODES, RETRIEVAL_UNITS
from memevals.benchmarks.locomo.prompts import prediction_for_scoring
from memevals.benchmarks.locomo.scoring import locomo_f1
from memevals.core.memory_options import MemoryOptions
from memevals.core.official_judge import OFFICIAL_JUDGE_KEY
from memevals.core.options import protocol_fix
from memevals.core.prompt_item import PromptItem
from memevals.inspect_tasks.common import (
    count,
    declared_tasks,
    memevals_task,
    to_dataset,
    uncertainty_metrics,
)
from memevals.inspect_tasks.judge import judge_runs_args, llm_judge
from memevals.inspect_tasks.memory_system import memory_system, solver_chain
from memevals.inspect_tasks.official_judge import judge_officially, official_request
from memevals.inspect_tasks.retrieval import prompt_tokens, retrieval_scorers, sample_prompt_tokens

__all__ = ["locomo", "locomo_f1_scorer", "locomo_official_judge", "posthoc_scorers"]


@scorer(metrics=uncertainty_metrics())
def locomo_f1_scorer() -> Scorer:
    """Official LoCoMo QA F1 per sample; letter replies to two-option questions are mapped to
    their option text first, as the official pipeline does. The sample's prompt size is
    recorded beside it (Score.metadata; the task's `prompt_tokens` score sums it). Uncertainty:
    the conversation-clustered `stderr` with its 95 % interval (`ci_lower`, `ci_upper`) and, with
    `-T uncertainty=full`, the naive `stderr_naive` and per category `<category>_stderr`,
    `<category>_ci_lower`, `<category>_ci_upper` (benchmarks/locomo/README.md#standard-errors)."""

    async def score(state: TaskState, target: Target) -> Score:
        reply = state.output.completion
        md = state.metadata
        prediction = prediction_for_scoring(reply, md)
        value = locomo_f1(prediction, md["answer"], int(md["category_id"]))
        return Score(
            value=value,
            answer=prediction,
            explanation=f"gold: {target.text!r}; category {md['category']}",
            metadata={"reply": reply, "category": md["category"], **sample_prompt_tokens(state)},
        )

    return score


@scorer(
    metrics={
        "judge": uncertainty_metrics(wilson=True),
        "unscored": [count()],
        "unclear": [count()],
    }
)
def locomo_official_judge() -> Scorer:
    """LoCoMo-Plus's upstream judge of each LoCoMo question (protocol=official): its template for
    the question's category with the reference and evidence turns, around the prediction (a
    letter reply to a two-option question judged as the option it chose, upstream's
    `get_cat_5_answer`), 512 tokens at temperature 0, read by its label rule (correct 1,
    partial 0.5, else 0), with the clustered standard error and Wilson interval overall and per
    category, and the count of grader replies that were no clear verdict (`unclear`)."""

    async def score(state: TaskState, target: Target) -> Score:
        request = official_request(state)
        if request is None:
            raise ValueError(
                f"sample {state.sample_id}: no metadata[{OFFICIAL_JUDGE_KEY!r}]; the sample was "
                "built under protocol=memevals (use memevals/llm_judge)"
            )
        prediction = prediction_for_scoring(state.output.completion, state.metadata)
        return await judge_officially(state, request, reply=prediction)

    return score


def _judge_scorer(protocol: str, judge_runs: int) -> Scorer:
    """The judge of `protocol`: upstream's (once, as upstream judges) or the memevals one."""
    if protocol == "official":
        if judge_runs != 1:
            raise ValueError(
                "judge_runs: protocol=official judges once with upstream's judge; repeated "
                f"judging applies to protocol=memevals: {protocol_fix('memevals', lm_eval=False)}"
            )
        return locomo_official_judge()
    return llm_judge(**judge_runs_args(judge_runs))


def _retrieval_scorers_for(items: list[PromptItem], memory_system_given: bool) -> list[Scorer]:
    """The retrieval scorers when the strategy retrieves (its samples carry retrieved ids, or
    a memory system gives them at run time: its cited dia ids, turn level)."""
    if memory_system_given:
        return [*retrieval_scorers(True), memory_system()]
    if not items or items[0].metadata["retrieved_ids"] is None:
        return []
    return retrieval_scorers(bool(items[0].metadata["turn_level"]))


@memevals_task(option_values={"context": CONTEXT_MODES, "retrieval_unit": RETRIEVAL_UNITS})
def locomo(
    categories: str | None = None,
    context: str = "full",
    adversarial: str = "choice",
    seed: int = 0,
    max_tokens: int = 32,
    data_dir: str | None = None,
    gold: str = "original",
    judge: bool = False,
    judge_runs: int = 1,
    max_context_tokens: int | None = None,
    retrieval_unit: str | None = None,
    top_k: int | None = None,
    retriever: str | None = None,
    embedding_model: str | None = None,
    token_counter: str = "auto",
    memory: str | None = None,
    memory_args: str | dict[str, Any] | None = None,
    memory_cache: bool | None = None,
    memory_answers: bool | None = None,
    protocol: str = "official",
    uncertainty: str = "default",
) -> Task:
    """LoCoMo QA (1,986 questions over 10 long conversations), official F1.

    Args:
        categories: comma-separated subset (single_hop, multi_hop, temporal, open_domain,
            adversarial); default all.
        adversarial: "choice" (the paper's two-option question, seeded order) or "open".
        seed: seed of the two-option order.
        max_tokens: answer length limit (the paper used 32).
        data_dir: folder holding locomo/locomo10.json (overrides MEMEVALS_DATA_DIR).
        gold: original (default, the official answers) or audited (locomo-audit's corrected
            answers and evidence for F1, the judge and evidence recall).
    """
    # The memory knobs are this task's parameters of the same names.
    memory_options = MemoryOptions.from_mapping(locals())
    judge_scorer = _judge_scorer(protocol, judge_runs) if judge else None
    items, memory_log, subject = samples.build(
        samples.LocomoOptions(
            categories=categories,
            adversarial=adversarial,
            seed=seed,
            data_dir=data_dir,
            memory=memory_options,
            gold=gold,
            protocol=protocol,
        )
    )
    scorers = [locomo_f1_scorer(), *_retrieval_scorers_for(items, subject is not None)]
    if judge_scorer is not None:
        scorers.append(judge_scorer)
    # the prompt size is a score of its own, as in the other benchmarks (not rows under F1)
    scorers.append(prompt_tokens())
    # upstream answers at temperature 0; memevals leaves the temperature to the run
    temperature = 0.0 if protocol == "official" else None
    return Task(
        dataset=to_dataset(items, "locomo"),
        solver=solver_chain(subject),
        scorer=scorers,
        config=GenerateConfig(max_tokens=max_tokens, temperature=temperature),
        metadata={
            "benchmark": "locomo",
            "protocol": protocol,
            "context": memory_log["context"],
            "adversarial": adversarial,
            "seed": seed,
            "judge": judge,
            "data_sha256": LOCOMO_FILE.sha256,
            "memory": memory_log,
            "gold": gold,
            # the best score honest answers reach on the official gold (README#audited-gold)
            "gold_ceilings": memory_log["gold"]["gold_ceilings"],
        },
    )


__all_tasks__ = declared_tasks(locomo)


def posthoc_scorers(
    metadata: list[dict[str, Any]], max_tokens: int | None, judge_runs: int
) -> list[Scorer]:
    """The scorers `python -m memevals.tools.judge` gives logged LoCoMo replies: F1 and the
    LLM judge, as `locomo` with `judge=true` scores them.

    Args:
        metadata: the logged samples' metadata.
        max_tokens: the judge's token limit (None: the grader role's, else the default).
        judge_runs: how many times each reply is judged.

    Returns:
        The scorers: upstream's judge for samples built under protocol=official.
    """
    if any(OFFICIAL_JUDGE_KEY in md for md in metadata):
        return [locomo_f1_scorer(), _judge_scorer("official", judge_runs)]
    return [locomo_f1_scorer(), llm_judge(max_tokens=max_tokens, **judge_runs_args(judge_runs))]

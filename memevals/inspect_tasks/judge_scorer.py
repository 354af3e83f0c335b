"""`llm_judge()`: the Inspect scorer around memevals.core.criteria_judge.

Each sample carries ``metadata["judge"]`` — the JudgeInput fields except the prediction (the
criterion, question, reference, evidence, dates). The prediction is the model's completion,
optionally mapped first (e.g. a two-option letter -> its option text); the map is named by the
scorer argument ``prediction`` or by ``metadata["judge"]["prediction_map"]``: "completion" (the
reply as it is) or a benchmark's name, whose record supplies the map (`JudgeSpec.prediction`),
so re-judging a log with ``inspect score LOG --scorer memevals/llm_judge`` needs no arguments.

The judge is ``get_model(role="grader")``: pass ``--model-role grader=<model>``. Without a grader
role it falls back to the model under test; every Score records which model judged and whether
that was the fallback. Temperature 0, bounded tokens; one retry on an unreadable verdict, then
the sample is left unscored (value NaN under the "judge" key, so means and stderrs exclude it)
and counted by the "unscored" metric.

Repeated judging (``judge_runs=N``, N > 1; ``-T judge_runs=N`` on the tasks, ``-S judge_runs=N``
when re-judging) asks the grader N times with seeds base, base+1, ... (base: the grader role's
seed, else 0); the seed is part of Inspect's cache key, so no run is answered from another's
cache entry. The sample's judge score is the mean label score over the readable verdicts (an
unreadable verdict leaves the sample unscored in that run only; no readable verdict at all leaves
it unscored), ``label`` is the majority label (a tie goes to the lower-scoring label) and every
verdict is kept in the Score metadata. The `repeated_judging` metric (`judge_agreement`,
`judge_kappa`, ...) reports the judges'
agreement: raw agreement and Fleiss' kappa over the samples with N readable verdicts, overall
and per category. With N = 1 (the default) nothing of this appears.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
    model_roles,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, Value, metric, scorer
from inspect_ai.solver import TaskState

from memevals.benchmarks import records
from memevals.core.agreement import agreement_figures, repeated_agreement
from memevals.core.criteria_judge import (
    CRITERIA_SETS,
    JudgeInput,
    Verdict,
    criterion_spec,
    criterion_under,
    judge_prompt,
    parse_verdict,
    repair_message,
)
from memevals.core.upstream_judge import OFFICIAL_JUDGE_KEY
from memevals.inspect_tasks.inspect_internals import as_prerequisite_error
from memevals.inspect_tasks.metrics import judge_metrics, uncertainty_metrics

__all__ = [
    "GRADER_ROLE",
    "PREDICTION_MAPS",
    "PredictionMap",
    "judge_runs_args",
    "llm_judge",
    "majority_label",
    "other_protocol",
    "repeated_judging",
]

logger = logging.getLogger(__name__)

GRADER_ROLE = "grader"
#: The judge's token limit unless the scorer argument or the grader role sets one.
DEFAULT_MAX_TOKENS = 256

#: (model completion, sample metadata) -> the text the judge grades.
PredictionMap = Callable[[str, Mapping[str, Any]], str]


def _completion(reply: str, metadata: Mapping[str, Any]) -> str:
    return reply


#: The prediction maps no benchmark declares (a benchmark's is its record's, by its name).
PREDICTION_MAPS: dict[str, PredictionMap] = {"completion": _completion}


def _declared_maps() -> dict[str, PredictionMap]:
    """Benchmark name -> the prediction map its record declares."""
    return {
        name: record.judge.prediction
        for name, record in records().items()
        if record.judge is not None and record.judge.prediction is not None
    }


def _prediction_map(name: str, sample_id: object) -> PredictionMap:
    if name in PREDICTION_MAPS:
        return PREDICTION_MAPS[name]
    declared = _declared_maps()
    if name in declared:
        return declared[name]
    raise ValueError(
        f"sample {sample_id}: unknown prediction map {name!r}; "
        f"known: {', '.join([*PREDICTION_MAPS, *declared])}"
    )


_fallback_warned = False


def grader_model() -> tuple[Model, bool]:
    """The grader model and whether it is the fallback (the model under test)."""
    global _fallback_warned
    bound = GRADER_ROLE in model_roles()
    model = get_model(role=GRADER_ROLE)
    if not bound and not _fallback_warned:
        _fallback_warned = True
        logger.warning(
            "llm_judge: no '%s' model role given; the model under test (%s) judges its own "
            "answers. Pass --model-role grader=<model> for an independent judge.",
            GRADER_ROLE,
            model,
        )
    return model, not bound


def other_protocol(scorer_name: str, sample_id: object, built: str, use: str) -> Exception:
    """The refusal of a scorer asked to judge a sample of the other protocol: one line on
    `inspect score`'s screen (Inspect's prerequisite error), still a ValueError in-process.

    Args:
        scorer_name: the scorer asked (`memevals/llm_judge`).
        sample_id: the first sample it met.
        built: the protocol the sample was built under.
        use: the scorer of that protocol, which the message names as the fix.

    Returns:
        The error to raise.
    """
    text = (
        f"{scorer_name}: sample {sample_id} was built under protocol={built}, which "
        f"{scorer_name} does not judge: re-judge the log with --scorer {use}"
    )
    from rich.markup import escape

    return as_prerequisite_error(ValueError(text), f"[bold]Error[/bold]: {escape(text)}")


def judge_runs_args(judge_runs: int) -> dict[str, Any]:
    """The scorer arguments for ``judge_runs``: none for 1 (so a default run's log records the
    judge exactly as before), else ``{"judge_runs": N}``. N < 1 is an error naming the option."""
    if isinstance(judge_runs, bool) or not isinstance(judge_runs, int) or judge_runs < 1:
        raise ValueError(f"judge_runs must be an integer of at least 1, got {judge_runs!r}")
    return {} if judge_runs == 1 else {"judge_runs": judge_runs}


def majority_label(labels: list[str], scores: Mapping[str, float]) -> str:
    """The most frequent label; a tie goes to the label with the lower score (the cautious
    reading of a split judge)."""
    counts = Counter(labels)
    return min(counts, key=lambda label: (-counts[label], scores[label], label))


@metric(name="judge")
def repeated_judging() -> Metric:
    """With judge_runs = N > 1: ``judge_runs`` (N), ``judge_compared`` (samples with N readable
    verdicts), ``judge_incomplete`` (scored samples with an unreadable verdict in some run),
    ``judge_agreement`` (share of compared samples whose N labels agree), ``judge_kappa``
    (Fleiss' kappa over the N judgments) and ``judge_<category>_agreement`` /
    ``judge_<category>_kappa``. Reports nothing when every sample was judged once, so a default
    run's metrics are unchanged."""

    def compute(scores: list[SampleScore]) -> Value:
        rows: list[tuple[object, list[str | None]]] = []
        runs: set[int] = set()
        for s in scores:
            md = s.score.metadata or {}
            labels = md.get("judge_labels")
            if isinstance(labels, list) and len(labels) > 1:
                runs.add(len(labels))
                rows.append((md.get("category"), labels))
        if not rows:
            return {}
        if len(runs) != 1:
            raise ValueError(f"repeated_judging: samples were judged {sorted(runs)} times")
        result = repeated_agreement([labels for _, labels in rows])
        out: dict[str, float] = {
            "judge_runs": float(runs.pop()),
            "judge_compared": float(result.items),
            "judge_incomplete": float(result.incomplete),
            **agreement_figures("judge_", [labels for _, labels in rows]),
        }
        for category in sorted({str(c) for c, _ in rows if c is not None}):
            group = [labels for c, labels in rows if str(c) == category]
            out.update(agreement_figures(f"judge_{category}_", group))
        return out

    return compute


async def _judge_once(
    grader: Model, inp: JudgeInput, prompt: str, config: GenerateConfig, retries: int
) -> tuple[Verdict | None, list[str]]:
    """One judgement: the verdict (None when unreadable after the retries) and every reply."""
    messages: list[ChatMessage] = [ChatMessageUser(content=prompt)]
    replies: list[str] = []
    verdict: Verdict | None = None
    for _ in range(1 + retries):
        output = await grader.generate(messages, config=config)
        reply = output.completion
        replies.append(reply)
        verdict = parse_verdict(reply, inp.criterion)
        if verdict is not None:
            break
        messages = [
            *messages,
            ChatMessageAssistant(content=reply),
            ChatMessageUser(content=repair_message(inp.criterion)),
        ]
    return verdict, replies


def _unscored(answer: str, why: str, metadata: dict[str, Any]) -> Score:
    """A sample the grader left without a readable verdict: unscored (NaN, counted), never
    wrong, with the raw replies kept for the reader of the log."""
    return Score(
        value={"judge": math.nan, "unscored": 1},
        answer=answer,
        reason="grader_failed",
        explanation=f"UNSCORED: {why}",
        metadata=metadata,
    )


def _judged(
    results: list[tuple[Verdict | None, list[str]]],
    criterion: str,
    answer: str,
    context: Mapping[str, Any],
    seeds: list[int],
) -> Score:
    """The judge's score of one sample from its judgements (one, or one per seed).

    One judgement scores its verdict's label; several score the mean of their readable
    verdicts, labelled by the majority (`majority_label`), with every run's label and score
    kept. No readable verdict leaves the sample unscored.
    """
    verdicts = [verdict for verdict, _ in results]
    readable = [v for v in verdicts if v is not None]
    repeated = len(results) > 1
    if repeated and readable:
        label: str | None = majority_label(
            [v.label for v in readable], criterion_spec(criterion).scores
        )
    else:
        label = readable[0].label if readable else None
    replies: list[Any] = [r for _, r in results] if repeated else results[0][1]
    metadata: dict[str, Any] = {
        "criterion": criterion,
        "label": label,
        "grader": context["grader"],
        "grader_fallback": context["grader_fallback"],
        "judge_replies": replies,
        "prediction_map": context["prediction_map"],
        "category": context["category"],
    }
    if repeated:
        metadata |= {
            "judge_runs": len(results),
            "judge_seeds": seeds,
            "judge_labels": [v.label if v else None for v in verdicts],
            "judge_scores": [v.score if v else None for v in verdicts],
        }
    if not readable:
        tried = f"in {len(results)} runs" if repeated else f"after {len(replies)} attempt(s)"
        why = f"no readable verdict from {context['grader']} {tried}. Raw replies: {replies!r}"
        return _unscored(answer, why, metadata)
    if not repeated:
        explanation = f"{readable[0].label}: {readable[0].reason}"
    else:
        runs = ", ".join(
            f"run {i + 1}: {v.label if v else 'unreadable'}" for i, v in enumerate(verdicts)
        )
        explanation = (
            f"{label} (majority of {len(readable)} readable verdicts of {len(results)}; {runs})"
        )
    value = sum(v.score for v in readable) / len(readable)
    return Score(
        value={"judge": value, "unscored": 0}, answer=answer, explanation=explanation,
        metadata=metadata,
    )  # fmt: skip


def _check_judge_args(max_tokens: int | None, retries: int, judge_runs: int, criteria: str) -> None:
    """Refuse a bad scorer argument before any sample is judged."""
    judge_runs_args(judge_runs)
    if criteria not in CRITERIA_SETS:
        known = ", ".join(CRITERIA_SETS)
        raise ValueError(f"llm_judge: unknown judge criteria {criteria!r}; choose from {known}")
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"llm_judge: max_tokens must be positive, got {max_tokens}")
    if retries < 0:
        raise ValueError(f"llm_judge: retries must be >= 0, got {retries}")


def _judge_input(
    state: TaskState, prediction: str | None, criteria: str
) -> tuple[JudgeInput, str, str]:
    """The sample's judge input (its criterion under `criteria`, the mapped prediction), the
    judge's prompt and the name of the prediction map applied."""
    if OFFICIAL_JUDGE_KEY in state.metadata:
        # upstream's judge request: an official sample, never judged by memevals' criteria
        raise other_protocol(
            "memevals/llm_judge", state.sample_id, "official", "memevals/official_judge"
        )
    judge_md = state.metadata.get("judge")
    if not isinstance(judge_md, Mapping):
        raise ValueError(
            f"sample {state.sample_id}: llm_judge needs metadata['judge'] (a dict of judge "
            "inputs); this task does not provide one"
        )
    if criteria != "default" and "criterion" in judge_md:
        judge_md = {**judge_md, "criterion": criterion_under(str(judge_md["criterion"]), criteria)}
    map_name = prediction or str(judge_md.get("prediction_map") or "completion")
    mapped = _prediction_map(map_name, state.sample_id)(state.output.completion, state.metadata)
    try:
        inp = JudgeInput.from_metadata(judge_md, mapped, ignore=("prediction_map",))
        prompt = judge_prompt(inp)
    except ValueError as exc:
        raise ValueError(f"sample {state.sample_id}: metadata['judge']: {exc}") from exc
    return inp, prompt, map_name


@scorer(
    metrics=judge_metrics([*uncertainty_metrics(wilson=True), repeated_judging()], ("unscored",))
)
def llm_judge(
    prediction: str | None = None,
    max_tokens: int | None = None,
    retries: int = 1,
    judge_runs: int = 1,
    criteria: str = "default",
) -> Scorer:
    """LLM-judge score per sample (criterion from ``metadata["judge"]``), with the clustered
    standard error and the clustered Wilson interval (a judge accuracy is a proportion),
    overall and per category.

    Args:
        prediction: the prediction map: "completion" or a benchmark's name; default: the sample's
            ``judge.prediction_map``, else the raw completion.
        max_tokens: the judge's token limit per reply. Default: the grader role's own
            max_tokens if it was configured with one (``--model-role
            grader="{model: ..., max_tokens: 64}"``), else 256.
        retries: extra attempts after an unreadable verdict (the issue's rule is one).
        judge_runs: judge each sample this many times (distinct seeds, no shared cache entry);
            the score is the mean over the readable verdicts and the agreement is reported.
        criteria: "default" (each sample's own criterion) or "lenient" (re-judging with the
            lenient rule of the mem0 lineage, to show how much leniency inflates a score:
            `inspect score ... -S criteria=lenient`; never the default).
    """
    _check_judge_args(max_tokens, retries, judge_runs, criteria)

    async def score(state: TaskState, target: Target) -> Score:
        inp, prompt, map_name = _judge_input(state, prediction, criteria)
        grader, fallback = grader_model()
        limit = max_tokens or (not fallback and grader.config.max_tokens) or DEFAULT_MAX_TOKENS
        config = GenerateConfig(temperature=0.0, max_tokens=limit)
        # one run keeps the config as is (its cache entry and log as without judge_runs);
        # repeated runs get distinct seeds, so no two share a cache entry
        base = grader.config.seed if grader.config.seed is not None else 0
        seeds = [base + i for i in range(judge_runs)] if judge_runs > 1 else []
        configs = [config.merge(GenerateConfig(seed=seed)) for seed in seeds] or [config]
        results = await asyncio.gather(
            *(_judge_once(grader, inp, prompt, c, retries) for c in configs)
        )
        metadata: dict[str, Any] = {
            "grader": str(grader),
            "grader_fallback": fallback,
            "prediction_map": map_name,
            "category": state.metadata.get("category"),
        }
        return _judged(list(results), inp.criterion, inp.prediction, metadata, seeds)

    return score

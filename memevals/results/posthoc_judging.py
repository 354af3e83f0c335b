"""Judging lm-eval replies post hoc: the logged replies replayed in an Inspect evaluation whose
scorers are the ones the benchmark's Inspect task judges with.

The grader prompt, the verdict parsing, the unscored rule and the aggregate table are therefore
the Inspect task's own code. The scorers come from the benchmark's thin Inspect module
(`posthoc_scorers(metadata, max_tokens, judge_runs)`); a benchmark whose module has none has no
post-hoc judge. Per benchmark the run writes `judge_<benchmark>.jsonl` (one verdict per sample)
and `judge_<benchmark>.json` (the aggregate table) beside its Inspect log. The conversation
context is not replayed: the judge never sees it, and leaving it out keeps the log small.

This module builds and runs the Inspect task as `inspect eval` does (as the cost estimate builds
one), which is why it lives with the library that may import the Inspect glue.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalLog
from inspect_ai.model import (
    CachePolicy,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from memevals.benchmarks import records
from memevals.core.benchmark import Benchmark
from memevals.results.lm_eval_samples import (
    LmEvalSample,
    SamplesError,
    lm_eval_model,
    samples_by_benchmark,
    samples_files,
    unique_questions,
)
from memevals.results.reading.inspect_reader import counts_only
from memevals.results.reading.lm_eval_reader import lm_eval_options

__all__ = [
    "POSTHOC_SCORERS",
    "JudgeRun",
    "JudgingError",
    "aggregate_table",
    "judge_samples",
    "posthoc_scorers",
    "replay_reply",
    "verdict_rows",
]

#: The function of a thin Inspect module that gives its post-hoc scorers:
#: (the samples' metadata, judge max_tokens or None, judge_runs) -> the Inspect scorers.
POSTHOC_SCORERS = "posthoc_scorers"


class JudgingError(RuntimeError):
    """The grader could not be built or the judging run failed (one line: the cause, the log)."""


def _one_line(text: str, limit: int = 400) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def posthoc_scorers(
    record: Benchmark, samples: Sequence[LmEvalSample], max_tokens: int | None, judge_runs: int
) -> list[Scorer]:
    """The scorers the benchmark's Inspect tasks judge with, from its thin Inspect module.

    Args:
        record: the benchmark's record.
        samples: its logged samples.
        max_tokens: the judge's token limit (None: each scorer's own default).
        judge_runs: how many times each reply is judged.

    Returns:
        The scorers.
    """
    where = samples[0].where
    factory = None
    if record.inspect_module is not None:
        module = importlib.import_module(record.inspect_module)
        factory = getattr(module, POSTHOC_SCORERS, None)
    if not callable(factory):
        raise SamplesError(
            f"{where}: benchmark {record.name!r} has no post-hoc judge (its Inspect module "
            f"{record.inspect_module} defines no {POSTHOC_SCORERS})"
        )
    try:
        scorers = factory([s.metadata for s in samples], max_tokens, judge_runs)
    except ValueError as exc:
        raise SamplesError(f"{where}: {record.name}: {exc}") from exc
    return list(scorers)


@solver
def replay_reply(model_name: str) -> Solver:
    """Give each sample the reply lm-eval logged, instead of calling a model.

    Args:
        model_name: the model lm-eval ran, named in each output.

    Returns:
        The solver.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        reply = str(state.metadata["lm_eval_reply"])
        state.output = ModelOutput.from_content(model=model_name, content=reply)
        state.messages.append(state.output.message)
        return state

    return solve


def _dataset(benchmark: str, samples: Sequence[LmEvalSample]) -> MemoryDataset:
    """One Inspect sample per question (unique_questions)."""
    out = [
        Sample(
            id=s.id,
            input=[ChatMessageUser(content=s.user)],
            target=s.target,
            metadata={
                **s.metadata,
                "lm_eval_task": s.task,
                "lm_eval_reply": s.reply,
                "lm_eval_source": s.where,
            },
        )
        for s in unique_questions(benchmark, samples)
    ]
    return MemoryDataset(out, name=f"{benchmark}_judge", shuffled=False)


@dataclass
class JudgeRun:
    """The judged samples of one benchmark."""

    benchmark: str
    log: EvalLog
    table: list[tuple[str, str, float]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)


def aggregate_table(log: EvalLog) -> list[tuple[str, str, float]]:
    """(scorer, metric, value) rows, as the Inspect log reports them; a count (a `count`
    metric's row, or a key aggregated by a count alone: `unscored`, `unclear`) as an int.

    Args:
        log: the judging run's log.

    Returns:
        The rows, in the log's order.
    """
    rows: list[tuple[str, str, float]] = []
    if log.results is None:
        return rows
    for score in log.results.scores:
        for name, m in score.metrics.items():
            value = float(m.value)
            counted = name.rsplit("/", 1)[-1] == "count" or counts_only(m.params)
            rows.append((score.name, name, int(value) if counted and value.is_integer() else value))
    return rows


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_number(v) for k, v in value.items()}
    return value


def verdict_rows(log: EvalLog) -> list[dict[str, Any]]:
    """One row per sample: the reply, what each scorer gave, and the judge's verdict.

    Args:
        log: the judging run's log.

    Returns:
        The rows (NaN written as None).
    """
    rows: list[dict[str, Any]] = []
    for sample in log.samples or []:
        md = sample.metadata
        row: dict[str, Any] = {
            "id": sample.id,
            "lm_eval_task": md.get("lm_eval_task"),
            "category": md.get("category"),
            "reply": md.get("lm_eval_reply"),
        }
        for name, score in (sample.scores or {}).items():
            row[name] = _json_number(score.value)
            smd = score.metadata or {}
            if "criterion" in smd:  # the judge's own record
                row.update(
                    prediction=score.answer,
                    criterion=smd.get("criterion"),
                    label=smd.get("label"),
                    grader=smd.get("grader"),
                    explanation=score.explanation,
                )
        if sample.error is not None:
            row["error"] = sample.error.message
        rows.append(row)
    return rows


def _grader_model(
    grader: str | Model, grader_args: dict[str, Any] | None, max_connections: int, cache: bool
) -> Model:
    config = GenerateConfig(
        max_connections=max_connections,
        cache=CachePolicy(expiry=None) if cache else None,
    )
    if not isinstance(grader, Model):
        try:
            return get_model(grader, config=config, **(grader_args or {}))
        except Exception as exc:  # an unknown provider, a missing package or key: Inspect's words
            why = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            raise JudgingError(f"--grader {grader}: {_one_line(str(why))}") from exc
    if cache:
        grader.config = grader.config.merge(config)
    return grader


def _write_outputs(run: JudgeRun, out_dir: Path, summary: dict[str, Any]) -> None:
    """`judge_<benchmark>.jsonl` (one verdict per sample) and `.json` (the table)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / f"judge_{run.benchmark}.jsonl").open("w", encoding="utf-8") as fh:
        for row in run.verdicts:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = {
        **summary,
        "samples": len(run.verdicts),
        "inspect_log": run.log.location,
        "metrics": [{"scorer": s, "metric": m, "value": _json_number(v)} for s, m, v in run.table],
    }
    (out_dir / f"judge_{run.benchmark}.json").write_text(
        json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def _judging_failed(benchmark: str, grader: Model, log: EvalLog) -> JudgingError:
    reason = _one_line(log.error.message) if log.error is not None else log.status
    where = f"(log: {log.location})"
    return JudgingError(f"{benchmark}: judging with {grader} failed: {reason} {where}")


def _judge_task(
    benchmark: str,
    samples: Sequence[LmEvalSample],
    model_name: str,
    max_tokens: int | None,
    judge_runs: int,
) -> Task:
    """The Inspect task replaying one benchmark's logged replies to its scorers."""
    dataset = _dataset(benchmark, samples)  # a question logged twice fails before the scorers
    scorers = posthoc_scorers(records()[benchmark], samples, max_tokens, judge_runs)
    return Task(
        dataset=dataset,
        solver=replay_reply(model_name),
        scorer=scorers,
        name=f"{benchmark}_judge",
        metadata={
            "benchmark": benchmark,
            # the lm-eval run's options (context, top_k, protocol, ...): compare, diff and the
            # report read the replay as the run whose replies it judged
            "lm_eval_options": _run_options(samples),
            "lm_eval_model": model_name,
            "lm_eval_files": sorted({str(s.file) for s in samples}),
            "lm_eval_tasks": sorted({s.task for s in samples}),
        },
    )


def _run_options(samples: Sequence[LmEvalSample]) -> dict[str, Any]:
    """The options (`--metadata`) of the lm-eval run the samples come from, when every file
    agrees on them (else none: the replay is then labelled by the record's defaults)."""
    try:  # the results files beside the samples: the samples themselves are read already
        found = [lm_eval_options(f) for f in sorted({s.file for s in samples})]
    except ValueError:
        return {}
    return found[0] if found and all(f == found[0] for f in found) else {}


def _check_settings(max_connections: int, judge_runs: int) -> None:
    if max_connections < 1:
        raise ValueError(f"max_connections must be at least 1, got {max_connections}")
    if isinstance(judge_runs, bool) or not isinstance(judge_runs, int) or judge_runs < 1:
        raise ValueError(f"judge_runs must be an integer of at least 1, got {judge_runs!r}")


def judge_samples(
    paths: Sequence[str | Path],
    grader: str | Model,
    *,
    grader_args: dict[str, Any] | None = None,
    max_connections: int = 10,
    cache: bool = True,
    judge_max_tokens: int | None = None,
    log_dir: str | None = None,
    output_dir: str | Path | None = None,
    display: str = "none",
    judge_runs: int = 1,
) -> list[JudgeRun]:
    """Judge the replies in lm-eval samples files; one Inspect evaluation per benchmark.

    Args:
        paths: samples files, or folders holding them.
        grader: the grader, an Inspect model or its name (`provider/model`).
        grader_args: the grader's model arguments.
        max_connections: concurrent grader calls (and samples).
        cache: cache grader calls (Inspect's cache).
        judge_max_tokens: the judge's token limit (None: the Inspect task's).
        log_dir: the Inspect log folder.
        output_dir: where `judge_<benchmark>.*` go (None: the first samples file's folder).
        display: Inspect's display.
        judge_runs: how many times each reply is judged.

    Returns:
        One run per benchmark.
    """
    _check_settings(max_connections, judge_runs)
    files = samples_files(paths)
    by_benchmark = samples_by_benchmark(files)
    grader_model = _grader_model(grader, grader_args, max_connections, cache)
    model_name = lm_eval_model(files) or "lm-eval"
    out_dir = Path(output_dir) if output_dir is not None else files[0].parent

    runs: list[JudgeRun] = []
    for benchmark, samples in by_benchmark.items():
        [log] = inspect_eval(
            _judge_task(benchmark, samples, model_name, judge_max_tokens, judge_runs),
            model="none",
            model_roles={"grader": grader_model},
            log_dir=log_dir,
            max_samples=max_connections,
            display=display,  # type: ignore[arg-type]
        )
        if log.status != "success":
            raise _judging_failed(benchmark, grader_model, log)
        run = JudgeRun(benchmark, log, aggregate_table(log), verdict_rows(log))
        summary = {
            "benchmark": benchmark,
            "grader": str(grader_model),
            **({"judge_runs": judge_runs} if judge_runs != 1 else {}),
            "lm_eval_model": model_name,
        }
        _write_outputs(run, out_dir, summary)
        runs.append(run)
    return runs

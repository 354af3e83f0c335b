"""Reading an Inspect log (`.eval` / `.json`) into a Run."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, read_eval_log

from memevals.core.benchmark import Benchmark
from memevals.results.reading.labels import subject_of, used_context, with_settings
from memevals.results.reading.model import Run, RunError
from memevals.results.reading.records import (
    FLAGS,
    MEMORY_KINDS,
    category_of,
    cluster_of,
    groups_of,
    is_compared,
    protocol_of,
    record_of,
)
from memevals.results.reading.scores import Epochs, ScoreReader, criterion_of, gold_text

# ---------------------------------------------------------------------------------------------
# Inspect


def read_inspect_run(path: str) -> Run:
    """One Inspect log file as a run.

    Args:
        path: the log file.

    Returns:
        The run.
    """
    try:
        # One pass over the whole log: measured faster than streaming the samples or asking
        # for fields to be left out (both parse sample by sample), even with their events.
        log = read_eval_log(path)
    except Exception as exc:
        # one line: a format parser's message (pydantic's) spans several
        reason = " ".join(str(exc).split())
        raise RunError(f"{path}: not a readable Inspect log ({reason[:200]})") from exc
    return read_inspect_log(log, path)


def read_inspect_log(log: EvalLog, path: str) -> Run:
    """An Inspect log already read, as a run.

    Args:
        log: the log.
        path: where it came from (shown in tables).

    Returns:
        The run.
    """
    metadata = dict(log.eval.metadata or {})
    # a replay of lm-eval replies (memevals-judge) records the lm-eval run's options
    options = dict(log.eval.task_args or {}) or dict(metadata.get("lm_eval_options") or {})
    task = log.eval.task.rsplit("/", 1)[-1]
    record = record_of(str(metadata.get("benchmark") or task), task)
    benchmark = record.name if record else str(metadata.get("benchmark") or task)
    memory = metadata.get("memory")
    used = dict(memory) if isinstance(memory, Mapping) else metadata
    reader = ScoreReader(record, FLAGS | _counted_only(log))
    by_id = _epochs_by_sample(log, record, reader)
    epoch_md = tuple(s.metadata or {} for s in log.samples or [])
    run = Run(
        label=f"{metadata.get('lm_eval_model') or log.eval.model}{subject_of(used)} "
        f"({Path(path).name})",
        path=path,
        framework="inspect",
        benchmark=benchmark,
        samples={sid: e.combined() for sid, e in by_id.items()},
        settings={},
        used_context=used_context(used),
        data_checksums=metadata.get("data_sha256"),
        judges={k: tuple(sorted(v)) for k, v in reader.judges.items()},
        # a replay of lm-eval replies (memevals-judge) runs the "none" model: name the one
        # whose replies it judged
        model=str(metadata.get("lm_eval_model") or log.eval.model),
        protocol=protocol_of(options, metadata, epoch_md),
        task=task,
        record=record,
        kinds=dict(reader.kinds),
        options=options,
        used=used,
        task_metadata=metadata,
        epoch_metadata=epoch_md,
        reduced=_reductions(log, reader),
        repeated={k: tuple(v) for k, v in reader.repeated.items()},
        status=str(log.status),
        has_results=bool(log.results is not None and log.results.scores),
        completed=_completed(log),
        grader_role=_grader_role(log),
        usage=_usage(log),
    )
    return with_settings(run)


def _epochs_by_sample(
    log: EvalLog, record: Benchmark | None, reader: ScoreReader
) -> dict[str, Epochs]:
    """Each sample id's epochs: scores (memory scores left out), replies, errors and flags."""
    by_id: dict[str, Epochs] = {}
    for sample in sorted(log.samples or [], key=lambda s: (str(s.id), s.epoch)):
        sid = str(sample.id)
        md = sample.metadata or {}
        epochs = by_id.get(sid)
        if epochs is None:
            epochs = by_id[sid] = Epochs(
                sid,
                category_of(md, record),
                cluster_of(md, sid, record),
                groups_of(md, record),
                gold_text(sample.target),
                criterion_of(md),
            )
        values, flags = reader.inspect_scores(sample, epochs.category)
        epochs.scores.append(
            {k: v for k, v in values.items() if reader.kinds.get(k) not in MEMORY_KINDS}
        )
        epochs.replies.append(sample.output.completion if sample.output else "")
        epochs.errored.append(sample.error is not None)
        for name, raised in flags.items():
            counts = epochs.flags.setdefault(name, {})
            for flag, n in raised.items():
                counts[flag] = counts.get(flag, 0) + n
    return by_id


def counts_only(params: Mapping[str, Any] | None) -> bool:
    """Whether a keyed metric row (memevals' `keyed` metrics log their key's figures in the
    row's params) aggregates its key by nothing but a count (`unscored`, `unclear`).

    Args:
        params: the row's params.

    Returns:
        True for a count-only key.
    """
    figures = (params or {}).get("figures")
    return isinstance(figures, list) and bool(figures) and set(figures) <= {"count"}


def _counted_only(log: EvalLog) -> frozenset[str]:
    """The scores a log aggregates by nothing but a count: flags, not scores. A key of a
    dict-valued score logs its metrics' names in its rows' params (`figures`); a log written
    before that has one result per key, named by the key."""
    out = set()
    for score in log.results.scores if log.results is not None else []:
        names = {name.rsplit("/", 1)[-1] for name in score.metrics}
        if names == {"count"}:
            out.add(score.name)
        for m in score.metrics.values():
            if counts_only(m.params):
                out.add(str(m.params["key"]))
    return frozenset(out)


def _reductions(log: EvalLog, reader: ScoreReader) -> dict[str, dict[str, float]]:
    """Per-sample values of epochs reduced other than by the mean (Inspect's own reduction)."""
    out: dict[str, dict[str, float]] = {}
    for reduction in log.reductions or []:
        if reduction.reducer in (None, "mean"):
            continue
        for sample in reduction.samples:
            named, _ = reader.named(reduction.scorer, sample.value)
            for name, number in named.items():
                if math.isfinite(number) and is_compared(reader.kinds.get(name), reader.record):
                    reduced = out.setdefault(f"{name}@{reduction.reducer}", {})
                    reduced[str(sample.sample_id)] = number
    return out


def _completed(log: EvalLog) -> int | None:
    """Samples completed, each counted once: Inspect counts every epoch (3 samples of 2
    epochs: 6)."""
    if log.results is None:
        return None
    epochs = log.eval.config.epochs or 1
    return log.results.completed_samples // max(1, epochs)


def _grader_role(log: EvalLog) -> str | None:
    roles = log.eval.model_roles or {}
    grader = roles.get("grader")
    if isinstance(grader, list):  # several graders bound to the role
        return ", ".join(g.model for g in grader)
    return grader.model if grader is not None else None


def _usage(log: EvalLog) -> dict[str, int]:
    usage: dict[str, int] = {}
    if log.stats and log.stats.model_usage:
        mu = log.stats.model_usage.get(log.eval.model)
        if mu is not None:
            usage = {"input_tokens": mu.input_tokens, "output_tokens": mu.output_tokens}
            if mu.input_tokens_cache_read is not None:
                usage["cache_read_tokens"] = mu.input_tokens_cache_read
    return usage

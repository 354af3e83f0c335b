"""Compare runs across providers: one table (Markdown + CSV) and one bar chart per benchmark.

    python -m memevals.tools.compare LOG_OR_DIR ... [--csv out.csv] [--png-dir DIR]
    memevals-compare logs/ lm-eval-out/ --csv compare.csv

Each Inspect log becomes one row, keyed by (model, judge, context mode, task); so does each
lm-eval run (the `samples_<task>_*.jsonl` files of one output folder, per benchmark). Rows are
grouped into one table per benchmark, so LoCoMo F1 never shares a column with LoCoMo-Plus or
LongMemEval numbers, and every row names the judge that produced its judge scores and the
context mode its model saw. When two logs of one table share that key, the task arguments that
tell them apart are added to the context label rather than letting them look like the same run.

The means, naive stderr and per-category means of an Inspect log are the metrics the task
already computed (its header). Beside them the table shows the cluster-robust standard error
and 95 % interval (Wilson for judge accuracies, a proportion), overall and per category,
computed here from the per-sample scores and their `cluster` metadata with
memevals.core.statistics, the same arithmetic as the tasks' Inspect metrics; for lm-eval runs
every figure comes from the samples. Nothing is rescored.

A judge run with repeated judging (`-T judge_runs=N`) gets, beside its judge column, N
(`judge runs`), the share of samples whose N verdicts agree (`judge agreement`) and Fleiss'
kappa (`judge kappa`); the per-category agreement is in the CSV.

A run whose context came from a memory system under test (`-T memory=<name>`) gets the
system's columns: its name and version, k, the retrieval latency percentiles, the items kept
and cut, the context size, and the ingestion totals (each history counted once), all computed
here from the per-sample memory record (memevals.core.memory_harness); other runs leave them
blank, and a table without such a run has none of them.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, list_eval_logs, read_eval_log

from memevals.benchmarks.locomo.data import PAPER_ORDER
from memevals.benchmarks.locomo_plus.prompts import COGNITIVE
from memevals.benchmarks.longmemeval.data import CATEGORIES as LME_CATEGORIES
from memevals.core import statistics
from memevals.core.memory_harness import (
    CONTEXT_TOKENS_KEY,
    CUT_KEY,
    INGEST_KEY,
    ITEMS_KEY,
    LATENCY_KEY,
    ingest_totals,
    latency_percentiles,
)
from memevals.core.validation import json_lines

__all__ = [
    "CATEGORY_ORDER",
    "KindScores",
    "Row",
    "lm_eval_rows",
    "load_rows",
    "main",
    "markdown_tables",
    "memory_figures",
    "plot_benchmark",
    "row_from_log",
    "sample_values",
    "write_csv",
]

#: Category columns come in this order (the project's category names), then any others sorted.
CATEGORY_ORDER: tuple[str, ...] = (*PAPER_ORDER, COGNITIVE, *LME_CATEGORIES)

#: Scorers whose main value is the official F1.
F1_SCORERS = frozenset({"locomo_f1_scorer", "locomo_plus_f1"})
#: Scorers reported as a single overall column (name -> column).
AUX_SCORERS: Mapping[str, str] = {
    "prompt_tokens": "prompt_tokens",
    "evidence_recall": "evidence_recall",
}
#: Prompt-size metrics an answer scorer may carry (metric -> column; "" = not shown).
PROMPT_TOKEN_METRICS: Mapping[str, str] = {
    "mean_prompt_tokens": "prompt_tokens",
    "total_prompt_tokens": "",
}
#: Scorers left out of the table (retrieval diagnostics; read the log for them).
SKIPPED_SCORERS = frozenset({"turn_precision", "turn_recall", "selected_k"})
#: The memory system's scorer (memevals.inspect_tasks.memory_system): its value is a latency,
#: not a score; its figures become the memory columns, recomputed from the samples.
MEMORY_SCORERS = frozenset({"memory_system"})
#: The memory columns: (figure, Markdown title); latencies are seconds in the CSV and shown in
#: milliseconds in the Markdown table (retrieval from a local index takes well under 1 ms).
MEMORY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("system", "memory system"),
    ("k", "k"),
    ("latency_p50_s", "latency p50 ms"),
    ("latency_p95_s", "latency p95 ms"),
    ("latency_p99_s", "latency p99 ms"),
    ("mean_items", "mean items"),
    ("items_cut", "items cut"),
    ("mean_context_tokens", "mean context tokens"),
    ("histories", "histories"),
    ("ingestions", "ingestions"),
    ("cache_hits", "cache hits"),
    ("build_seconds", "build s"),
    ("build_model_calls", "build model calls"),
    ("build_llm_calls", "build llm calls"),
    ("build_input_tokens", "build input tokens"),
    ("build_output_tokens", "build output tokens"),
)
OVERALL_METRICS = ("mean", "accuracy", "overall_accuracy")
NO_JUDGE = "-"
#: Score kinds that are proportions (judge accuracy): their interval is the Wilson interval.
PROPORTION_KINDS = frozenset({"judge"})
#: The uncertainty metrics the tasks log (memevals.inspect_tasks.common): recomputed here from
#: the samples (also for logs written before them), so their header values are not read.
UNCERTAINTY_GROUPS = frozenset(
    {"ci_clustered", "by_category", "abstention_wilson", "by_relation_type"}
)
UNCERTAINTY_METRICS = frozenset({"stderr_clustered"})
#: The metric group of repeated judging (memevals.inspect_tasks.judge.repeated_judging).
REPEATED_GROUP = "judge"
#: Its figures shown in the Markdown table (the rest, per category, go to the CSV only).
REPEATED_SHOWN = ("runs", "agreement", "kappa")
#: Sample-metadata keys that identify a sample's cluster in logs written before `cluster`
#: existed: LoCoMo-Plus cognitive samples' host, a LoCoMo conversation, a LongMemEval question.
LEGACY_CLUSTER_KEYS = ("host", "conversation_id", "question_id")
#: Per-document lm-eval metrics shown as score kinds (the others are aux columns or skipped).
LM_EVAL_KINDS = frozenset({"f1", "rouge1", "rouge2", "rougeL", "bleu1", "bleu2", "bertscore_f1"})
LM_EVAL_AUX = frozenset({"prompt_tokens", "evidence_recall"})


@dataclass
class KindScores:
    """The numbers of one kind of score (F1, judge, ...) in one log.

    `clustered` holds the figures computed from the samples: key "" for all samples, else a
    category (statistics.Summary: n, clusters, clustered stderr, 95 % interval).
    """

    overall: float | None = None
    stderr: float | None = None
    categories: dict[str, float] = field(default_factory=dict)
    extras: dict[str, float] = field(default_factory=dict)
    clustered: dict[str, statistics.Summary] = field(default_factory=dict)
    #: repeated judging: runs, compared, incomplete, agreement, kappa, <category>_agreement, ...
    repeated: dict[str, float] = field(default_factory=dict)


@dataclass
class Row:
    """One log: who answered, who judged, what context, and its scores by kind."""

    benchmark: str
    task: str
    model: str
    judge: str
    context: str
    samples: int
    status: str
    log: str
    kinds: dict[str, KindScores]
    aux: dict[str, float]
    usage: dict[str, int]
    task_args: dict[str, Any]
    framework: str = "inspect"
    #: LoCoMo's per-category ceilings under the original gold (share of questions whose gold the
    #: audit does not mark wrong), as the task logged them; empty for other benchmarks
    ceilings: dict[str, float] = field(default_factory=dict)
    #: the memory system under test and its measurements (`memory_figures`); empty without one
    memory: dict[str, float | int | str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        parts = [self.model, f"judge {self.judge}" if self.judge != NO_JUDGE else "", self.context]
        if self.task != self.benchmark:
            parts.append(self.task)
        return " | ".join(p for p in parts if p)


def _short(name: str) -> str:
    return name.split("/", 1)[1] if name.startswith("memevals/") else name


def _metric_name(name: str) -> str:
    """Strip the package prefix Inspect puts on registered metric names."""
    return name.rsplit("/", 1)[-1]


def _category_of(metric: str) -> str | None:
    """The category a per-group metric reports, or None if it is not per category."""
    if metric in CATEGORY_ORDER:
        return metric
    for prefix in ("grouped_", "type_accuracy_"):
        if metric.startswith(prefix):
            return metric[len(prefix) :]
    return None


def _extra_name(metric: str) -> str:
    if metric == "abstention_accuracy":
        return "abstention"
    if metric == "task_averaged_accuracy":
        return "task_avg"
    if metric.startswith("relation_type_"):
        return "relation_" + metric[len("relation_type_") :]
    return metric


def _kind_of(score_name: str, scorer: str) -> str | None:
    if score_name == "judge":
        return "judge"
    if scorer in SKIPPED_SCORERS:  # ("unscored" and AUX_SCORERS are handled by the caller)
        return None
    if scorer in F1_SCORERS or score_name in F1_SCORERS:
        return "f1"
    return score_name


def _judge_label(log: EvalLog, has_judge: bool) -> str:
    if not has_judge:
        return NO_JUDGE
    roles = log.eval.model_roles or {}
    grader = roles.get("grader")
    if isinstance(grader, list):  # several graders bound to the role
        return ", ".join(g.model for g in grader)
    if grader is not None:
        return grader.model
    return f"self ({log.eval.model})"


def _context_label(benchmark: str, args: Mapping[str, Any], metadata: Mapping[str, Any]) -> str:
    """The context mode plus the knobs that change what the model sees."""
    from memevals.benchmarks.locomo.memory import (
        DEFAULT_MAX_CONTEXT_TOKENS,
        DEFAULT_RETRIEVAL_UNIT,
        DEFAULT_RETRIEVER,
        DEFAULT_TOP_K,
    )

    # What the task logged it used (memevals.core.retrievers.strategy_settings; LongMemEval
    # logs it at the top level): the defaults differ per benchmark, so the arguments alone do
    # not say which unit or budget ran. The arguments and LoCoMo's defaults are the fallback.
    memory = metadata.get("memory")
    used: Mapping[str, Any] = memory if isinstance(memory, Mapping) else metadata

    def setting(name: str, default: Any) -> Any:
        return used.get(name) or args.get(name) or default

    context = str(setting("context", "full"))
    if context == "memory" and setting("memory", None):
        context = f"memory({setting('memory', None)}, k={setting('top_k', DEFAULT_TOP_K)})"
    elif context == "rag":
        unit = setting("retrieval_unit", DEFAULT_RETRIEVAL_UNIT)
        k = setting("top_k", DEFAULT_TOP_K)
        retriever = setting("retriever", DEFAULT_RETRIEVER)
        context = f"rag({unit}, k={k}, {retriever})"
    elif context == "truncated":
        context = f"truncated({setting('max_context_tokens', DEFAULT_MAX_CONTEXT_TOKENS)})"
    extras: list[str] = []
    if benchmark == "longmemeval":
        context = f"{args.get('variant') or metadata.get('variant') or 's'}:{context}"
        if args.get("history_format") not in (None, "json"):
            extras.append(f"history={args['history_format']}")
        if args.get("chain_of_note"):
            extras.append("chain-of-note")
    if args.get("disclose_task"):
        extras.append("disclosed")
    if args.get("gap_fix"):
        extras.append("gap-fix")
    if args.get("adversarial") == "open":
        extras.append("open-adversarial")
    return context + "".join(f" +{e}" for e in extras)


def row_from_log(log: EvalLog, path: str) -> Row | None:
    """A table row from a log header; None (with a message on stderr) when it has no results."""
    if log.results is None or not log.results.scores:
        print(
            f"memevals-compare: {path}: no results (status {log.status}); left out",
            file=sys.stderr,
        )
        return None
    metadata = log.eval.metadata or {}
    args = dict(log.eval.task_args or {})
    task = _short(log.eval.task)
    benchmark = str(metadata.get("benchmark") or task)
    kinds: dict[str, KindScores] = {}
    aux: dict[str, float] = {}
    for score in log.results.scores:
        repeated = {
            v.name: float(v.value)
            for v in score.metrics.values()
            if _metric_name(v.group or "") == REPEATED_GROUP
        }
        metrics = {
            _metric_name(k): float(v.value)
            for k, v in score.metrics.items()
            if v.group not in UNCERTAINTY_GROUPS
            and _metric_name(k) not in UNCERTAINTY_METRICS
            and _metric_name(v.group or "") != REPEATED_GROUP
        }
        if score.name == "unscored":
            kinds.setdefault("judge", KindScores()).extras["unscored"] = sum(metrics.values())
            continue
        if score.scorer in MEMORY_SCORERS:
            continue
        if score.scorer in AUX_SCORERS:
            if "mean" in metrics:
                aux[AUX_SCORERS[score.scorer]] = metrics["mean"]
            continue
        kind = _kind_of(score.name, score.scorer)
        if kind is None:
            continue
        if score.reducer not in (None, "mean"):  # epochs reduced another way: its own columns
            kind = f"{kind}@{score.reducer}"
        ks = kinds.setdefault(kind, KindScores())
        ks.repeated.update(repeated)
        for name, value in metrics.items():
            if name in PROMPT_TOKEN_METRICS:  # an answer scorer reporting the prompt size
                if PROMPT_TOKEN_METRICS[name]:
                    aux[PROMPT_TOKEN_METRICS[name]] = value
                continue
            category = _category_of(name)
            if name in OVERALL_METRICS and ks.overall is None:
                ks.overall = value
            elif name == "stderr":
                ks.stderr = value
            elif category is not None:
                ks.categories[category] = value
            else:
                ks.extras[_extra_name(name)] = value
    usage: dict[str, int] = {}
    if log.stats and log.stats.model_usage:
        mu = log.stats.model_usage.get(log.eval.model)
        if mu is not None:
            usage = {"input_tokens": mu.input_tokens, "output_tokens": mu.output_tokens}
            if mu.input_tokens_cache_read is not None:
                usage["cache_read_tokens"] = mu.input_tokens_cache_read
    return Row(
        benchmark=benchmark,
        task=task,
        model=log.eval.model,
        judge=_judge_label(log, "judge" in kinds and kinds["judge"].overall is not None),
        context=_context_label(benchmark, args, metadata),
        samples=log.results.completed_samples,
        status=str(log.status),
        log=path,
        kinds=kinds,
        aux=aux,
        usage=usage,
        task_args=args,
        ceilings={
            str(k): float(v)
            for k, v in (metadata.get("gold_ceilings") or {}).items()
            if k in CATEGORY_ORDER
        },
    )


def _system_label(settings: Mapping[str, Any]) -> str:
    """`<name> <version>` of the memory system, with its arguments when it was given any."""
    label = " ".join(str(settings[k]) for k in ("memory", "memory_version") if settings.get(k))
    args = settings.get("memory_args")
    if isinstance(args, Mapping) and args:
        label += " (" + ", ".join(f"{k}={v}" for k, v in sorted(args.items())) + ")"
    elif args:
        label += f" ({args})"
    return label


def memory_figures(
    settings: Mapping[str, Any], sample_metadata: Iterable[Mapping[str, Any]]
) -> dict[str, float | int | str]:
    """The memory columns of one run: the system and k from its settings (the `memory` dict
    an Inspect task logs), the rest from the samples' memory records. Every retrieval counts
    (each epoch's); the ingestion totals count each history once (`ingest_totals`). Empty for
    a run without a memory system."""
    records = [md for md in sample_metadata if LATENCY_KEY in md]
    if not records and not settings.get("memory"):
        return {}
    out: dict[str, float | int | str] = {"system": _system_label(settings)}
    if settings.get("top_k") is not None:
        out["k"] = int(settings["top_k"])
    out |= latency_percentiles([float(md[LATENCY_KEY]) for md in records])

    def mean(key: str) -> float:
        values = [float(md[key]) for md in records if key in md]
        return sum(values) / len(values) if values else math.nan

    out["mean_items"] = mean(ITEMS_KEY)
    out["items_cut"] = sum(int(md.get(CUT_KEY, 0)) for md in records)
    out["mean_context_tokens"] = mean(CONTEXT_TOKENS_KEY)
    out |= ingest_totals([md[INGEST_KEY] for md in records if INGEST_KEY in md])
    return out


def _is_lm_eval_samples(path: Path) -> bool:
    return path.name.startswith("samples_") and path.suffix == ".jsonl"


def _input_paths(paths: Iterable[str]) -> tuple[list[str], list[Path]]:
    """(Inspect logs, lm-eval samples files) under `paths`: files, or folders searched for
    both (lm-eval writes its files one folder per model below `--output_path`)."""
    logs: list[str] = []
    samples: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = [info.name for info in list_eval_logs(str(path), descending=False)]
            jsonl = sorted(f for f in path.rglob("samples_*.jsonl") if f.is_file())
            if not found and not jsonl:
                raise FileNotFoundError(
                    f"{p}: no Inspect logs (.eval or .json) and no lm-eval samples_*.jsonl "
                    "files in this folder"
                )
            logs.extend(found)
            samples.extend(jsonl)
        elif path.is_file() and _is_lm_eval_samples(path):
            samples.append(path)
        elif path.is_file():
            logs.append(str(path))
        else:
            raise FileNotFoundError(f"{p}: no such log file or folder")
    return logs, samples


def _lm_eval_memory_settings(folder: Path, benchmark: str) -> dict[str, Any]:
    """The memory settings of an lm-eval run (its `--metadata` memory knobs, recorded per task
    in results_*.json); lm-eval does not record the system's version, so it is left out. k is
    LoCoMo's default when not given (the benchmark whose memory option this is)."""
    from memevals.benchmarks.locomo.memory import DEFAULT_TOP_K

    given: dict[str, Any] = {}
    for results in sorted(folder.glob("results_*.json")):
        try:
            configs = json.loads(results.read_text(encoding="utf-8")).get("configs") or {}
        except (OSError, json.JSONDecodeError):
            continue
        for task_config in configs.values():
            metadata = task_config.get("metadata") or {}
            given |= {k: metadata[k] for k in ("memory", "memory_args", "top_k") if k in metadata}
    if given.get("memory") and "top_k" not in given and benchmark == "locomo":
        given["top_k"] = DEFAULT_TOP_K
    return given


def _lm_eval_model(folder: Path) -> str:
    """The model of an lm-eval run, from its results_*.json beside the samples files:
    `<model>` plus its `pretrained=` argument when given."""
    for results in sorted(folder.glob("results_*.json")):
        try:
            config = json.loads(results.read_text(encoding="utf-8")).get("config") or {}
        except (OSError, json.JSONDecodeError):
            continue
        model = str(config.get("model") or "?")
        args = config.get("model_args")
        if isinstance(args, str):
            args = dict(a.split("=", 1) for a in args.split(",") if "=" in a)
        if isinstance(args, Mapping) and args.get("pretrained"):
            model = f"{model}/{args['pretrained']}"
        return model
    return "?"


def _read_lm_eval_samples(path: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(record, document metadata) per line of an lm-eval samples file."""
    out = []
    for where, _, record in json_lines(path):
        try:
            raw = record["doc"]["metadata"]
            md = json.loads(raw) if isinstance(raw, str) else raw
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(
                f"{where}: not a memevals lm-eval sample (field doc.metadata: {exc})"
            ) from exc
        if not isinstance(md, dict) or "benchmark" not in md:
            raise ValueError(f"{where}: field 'doc.metadata.benchmark' is missing")
        out.append((record, md))
    return out


def lm_eval_rows(files: Iterable[Path]) -> list[Row]:
    """One row per lm-eval run folder and benchmark, every figure computed from the samples
    (per-document scores as logged by `--log_samples`; a document logged by two subtasks, like
    LongMemEval's abstention task beside its type's, counts once)."""
    runs: dict[tuple[Path, str, str], list[tuple[str, dict[str, Any], dict[str, Any]]]] = {}
    for path in files:
        task = path.name.removeprefix("samples_").rsplit("_", 1)[0]
        for record, md in _read_lm_eval_samples(path):
            # LoCoMo's event summaries and dialogue say benchmark "locomo" and their own task
            key = (path.parent, str(md["benchmark"]), str(md.get("task") or ""))
            runs.setdefault(key, []).append((task, record, md))
    rows: list[Row] = []
    for (folder, benchmark, _), records in sorted(runs.items()):
        values: dict[str, dict[str, SampleValue]] = {}
        aux: dict[str, list[float]] = {}
        tasks = sorted({task for task, _, _ in records})
        for _, record, md in records:
            sid = str(record["doc"].get("id", record.get("doc_id")))
            groups = _groups(md)
            cluster = _cluster_of(md, sid)
            for name in LM_EVAL_KINDS | LM_EVAL_AUX:
                v = record.get(name)
                if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
                    continue
                if name in LM_EVAL_AUX:
                    aux.setdefault(name, []).append(float(v))
                else:
                    values.setdefault(name, {}).setdefault(sid, (sid, groups, cluster, float(v)))
        kinds: dict[str, KindScores] = {}
        _add_clustered(kinds, {k: list(v.values()) for k, v in values.items()})
        for ks in kinds.values():
            ks.overall = ks.clustered[""].mean
            ks.stderr = ks.clustered[""].stderr
            ks.categories = {c: s.mean for c, s in ks.clustered.items() if c != "abstention" and c}
            if "abstention" in ks.clustered:
                ks.extras["abstention"] = ks.clustered["abstention"].mean
        model = _lm_eval_model(folder)
        first_md = records[0][2]
        memory = {}
        if first_md.get("context") == "memory":
            memory = _lm_eval_memory_settings(folder, benchmark)
        by_id = {str(r["doc"].get("id", r.get("doc_id"))): md for _, r, md in records}
        rows.append(
            Row(
                benchmark=benchmark,
                task="lm-eval: " + (tasks[0] if len(tasks) == 1 else benchmark),
                model=model,
                judge=NO_JUDGE,
                context=_context_label(benchmark, memory, first_md),
                samples=len({str(r["doc"].get("id", r.get("doc_id"))) for _, r, _ in records}),
                status="success",
                log=str(folder),
                kinds=kinds,
                aux={k: sum(v) / len(v) for k, v in aux.items()},
                usage={},
                task_args={},
                framework="lm-eval",
                # a document logged by two subtasks (see above) is one retrieval
                memory=memory_figures(memory, by_id.values()),
            )
        )
    return rows


def _disambiguate(rows: list[Row]) -> None:
    """Rows that share (benchmark, model, judge, context, task) get the task arguments that
    differ between them appended to their context label."""
    groups: dict[tuple[str, ...], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.benchmark, r.model, r.judge, r.context, r.task), []).append(r)
    for same in groups.values():
        if len(same) < 2:
            continue
        keys = sorted({k for r in same for k in r.task_args})
        differing = [k for k in keys if len({repr(r.task_args.get(k)) for r in same}) > 1]
        for i, r in enumerate(same, 1):
            if differing:
                r.context += " [" + ", ".join(f"{k}={r.task_args.get(k)}" for k in differing) + "]"
            else:
                r.context += f" [run {i}: {Path(r.log).name}]"


def _cluster_of(metadata: Mapping[str, Any], sample_id: object) -> str:
    """The sample's cluster: `metadata["cluster"]`, else (older logs) the first legacy key
    present, else the sample itself (an independent sample is its own cluster)."""
    for key in (statistics.CLUSTER_KEY, *LEGACY_CLUSTER_KEYS):
        if metadata.get(key) is not None:
            return str(metadata[key])
    return str(sample_id)


#: Per-sample values of one kind: (sample id, groups, cluster, value). The groups are the
#: sample's category and, for a LongMemEval `_abs` question, also "abstention".
SampleValue = tuple[str, tuple[str, ...], str, float]


def _groups(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    category = metadata.get("category")
    groups = () if category is None else (str(category),)
    return (*groups, "abstention") if metadata.get("abstention") is True else groups


def sample_values(samples: Iterable[EvalSample]) -> dict[str, list[SampleValue]]:
    """Per kind (as the table names them: f1, judge, rouge1, ...), one value per sample id.

    Several epochs of a sample are averaged first (Inspect's default reducer); unscored values
    (NaN, e.g. an unreadable judge verdict) are left out, never counted as 0.
    """
    by_kind: dict[str, dict[str, list[float]]] = {}
    info: dict[str, tuple[tuple[str, ...], str]] = {}
    for sample in samples:
        sid = str(sample.id)
        md = sample.metadata or {}
        info[sid] = (_groups(md), _cluster_of(md, sid))
        for scorer, score in (sample.scores or {}).items():
            if scorer in AUX_SCORERS or scorer in MEMORY_SCORERS:
                continue
            value = score.value
            named = value.items() if isinstance(value, Mapping) else [(scorer, value)]
            for name, v in named:
                kind = None if name == "unscored" else _kind_of(str(name), scorer)
                if kind is None or isinstance(v, str | bool) or not isinstance(v, int | float):
                    continue
                x = float(v)
                if not math.isnan(x):
                    by_kind.setdefault(kind, {}).setdefault(sid, []).append(x)
    return {
        kind: [(sid, *info[sid], sum(xs) / len(xs)) for sid, xs in values.items()]
        for kind, values in by_kind.items()
    }


def _add_clustered(kinds: dict[str, KindScores], values: Mapping[str, list[SampleValue]]) -> None:
    """The clustered figures of each kind, overall and per category, from its sample values."""
    for kind, rows in values.items():
        if not rows:
            continue
        ks = kinds.setdefault(kind, KindScores())
        proportion = kind in PROPORTION_KINDS and all(0.0 <= r[3] <= 1.0 for r in rows)
        groups: dict[str, list[SampleValue]] = {"": rows}
        for r in rows:
            for group_name in r[1]:
                groups.setdefault(group_name, []).append(r)
        for name, group in groups.items():
            ks.clustered[name] = statistics.summarize(  # "" = all samples
                [r[3] for r in group], [r[2] for r in group], proportion=proportion
            )


def load_rows(paths: Iterable[str]) -> list[Row]:
    """Rows for every Inspect log and every lm-eval run under `paths` (files or folders),
    sorted by benchmark, task, model."""
    rows: list[Row] = []
    logs, lm_eval_files = _input_paths(paths)
    for path in logs:
        try:
            log = read_eval_log(path)
        except Exception as exc:
            raise ValueError(f"{path}: not a readable Inspect log ({exc})") from exc
        row = row_from_log(log, path.removeprefix("file://"))
        if row is not None:
            _add_clustered(row.kinds, sample_values(log.samples or []))
            metadata = log.eval.metadata or {}
            used = metadata.get("memory")
            row.memory = memory_figures(
                # LoCoMo logs its memory settings as one record, LongMemEval at the top level
                used if isinstance(used, Mapping) else metadata,
                [s.metadata or {} for s in log.samples or []],
            )
            rows.append(row)
    rows += lm_eval_rows(lm_eval_files)
    _disambiguate(rows)
    rows.sort(key=lambda r: (r.benchmark, r.task, r.model, r.judge, r.context))
    return rows


def _ordered(categories: Iterable[str]) -> list[str]:
    cats = set(categories)
    known = [c for c in CATEGORY_ORDER if c in cats]
    return known + sorted(cats - set(known))


def _kind_order(kinds: Iterable[str]) -> list[str]:
    ks = set(kinds)
    return [k for k in ("f1", "judge") if k in ks] + sorted(ks - {"f1", "judge"})


@dataclass(frozen=True)
class _Column:
    key: str  # CSV header
    title: str  # Markdown header
    markdown: bool = True  # False: CSV only (per-category errors are shown in the mean's cell)


#: The clustered figures of a summary, by cell-key suffix.
_CLUSTERED_FIELDS = ("stderr_clustered", "ci_lower", "ci_upper")


def _clustered_cell(summary: statistics.Summary | None, field_name: str) -> float | None:
    if summary is None:
        return None
    if field_name == "stderr_clustered":
        return summary.stderr_clustered
    return summary.interval.lower if field_name == "ci_lower" else summary.interval.upper


def _layout(rows: Sequence[Row]) -> list[tuple[str, list[str], list[str]]]:
    """(kind, categories, extras) for the kinds present in `rows`."""
    kinds = _kind_order(k for r in rows for k in r.kinds)
    out = []
    for kind in kinds:
        cats = _ordered(c for r in rows if kind in r.kinds for c in r.kinds[kind].categories)
        extras = sorted({e for r in rows if kind in r.kinds for e in r.kinds[kind].extras})
        out.append((kind, cats, extras))
    return out


def _cell(row: Row, key: str) -> float | int | str | None:
    if key == "judge_model":
        return row.judge
    if key in ("benchmark", "task", "model", "context", "samples", "status", "log"):
        value: float | int | str = getattr(row, key)
        return value
    if key in row.usage:
        return row.usage[key]
    if key.startswith("aux:"):
        return row.aux.get(key[4:])
    if key.startswith("memory:"):
        return row.memory.get(key[7:])
    kind, _, rest = key.partition(":")
    ks = row.kinds.get(kind)
    if ks is None:
        return None
    if rest == "":
        return ks.overall
    if rest == "stderr":
        return ks.stderr
    if rest in _CLUSTERED_FIELDS:
        return _clustered_cell(ks.clustered.get(""), rest)
    if rest.startswith("extra:"):
        return ks.extras.get(rest[6:])
    if rest.startswith("repeated:"):
        return ks.repeated.get(rest[9:])
    category, _, figure = rest.partition(":")
    if figure:
        return _clustered_cell(ks.clustered.get(category), figure)
    return ks.categories.get(rest)


def _columns(rows: Sequence[Row]) -> list[_Column]:
    cols = [
        _Column("benchmark", "benchmark"),
        _Column("model", "model"),
        _Column("judge_model", "judge model"),
        _Column("context", "context"),
        _Column("task", "task"),
        _Column("samples", "n"),
    ]
    for kind, cats, extras in _layout(rows):
        title = "F1" if kind == "f1" else kind
        interval = "95% Wilson" if kind in PROPORTION_KINDS else "95% CI"
        cols.append(_Column(f"{kind}:", title))
        cols.append(_Column(f"{kind}:stderr", f"{title} stderr"))
        cols.append(_Column(f"{kind}:stderr_clustered", f"{title} stderr_clustered"))
        cols.append(_Column(f"{kind}:ci_lower", f"{title} {interval}"))
        cols.append(_Column(f"{kind}:ci_upper", "", markdown=False))
        repeated = _ordered_repeated(r.kinds[kind].repeated for r in rows if kind in r.kinds)
        for name in repeated:
            shown = name in REPEATED_SHOWN
            cols.append(_Column(f"{kind}:repeated:{name}", f"{title} {name}", markdown=shown))
        for c in cats:
            cols.append(_Column(f"{kind}:{c}", f"{title} {c}"))
            cols += [_Column(f"{kind}:{c}:{f}", "", markdown=False) for f in _CLUSTERED_FIELDS]
        for e in extras:
            cols.append(_Column(f"{kind}:extra:{e}", f"{title} {e}"))
            if any(e in r.kinds[kind].clustered for r in rows if kind in r.kinds):
                cols += [_Column(f"{kind}:{e}:{f}", "", markdown=False) for f in _CLUSTERED_FIELDS]
    for name in sorted({a for r in rows for a in r.aux}):
        cols.append(_Column(f"aux:{name}", name))
    if any(r.memory for r in rows):
        cols += [_Column(f"memory:{name}", title) for name, title in MEMORY_COLUMNS]
    return cols


def _ordered_repeated(figures: Iterable[Mapping[str, float]]) -> list[str]:
    """The repeated-judging figures present: the shown ones first, then the rest sorted."""
    names = {n for f in figures for n in f}
    return [n for n in REPEATED_SHOWN if n in names] + sorted(names - set(REPEATED_SHOWN))


def _csv_keys(rows: Sequence[Row]) -> list[str]:
    """The cell keys of the CSV, in column order (header and rows both follow it)."""
    usage = sorted({u for r in rows for u in r.usage})
    return [*(c.key for c in _columns(rows)), *usage, "status", "log"]


def _csv_name(key: str) -> str:
    kind, sep, rest = key.partition(":")
    if not sep:
        return key
    if kind == "aux":
        return rest
    if rest == "":
        return kind
    return f"{kind}_{rest.removeprefix('extra:').removeprefix('repeated:').replace(':', '_')}"


def write_csv(rows: Sequence[Row], path: Path) -> None:
    """All rows of all benchmarks in one CSV (empty cells where a row lacks a column)."""
    keys = _csv_keys(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([_csv_name(k) for k in keys])
        for r in rows:
            cells = [_cell(r, k) for k in keys]
            writer.writerow(["" if v is None else v for v in cells])


def _fmt(value: float | int | str | None, key: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.replace("|", "\\|")
    if isinstance(value, int) or key in ("aux:prompt_tokens", "samples"):
        return f"{value:.0f}" if not isinstance(value, int) else str(value)
    if key.endswith((":extra:unscored", ":repeated:runs", ":compared", ":incomplete")):
        return f"{value:.0f}"
    if math.isnan(value):
        return "nan"
    return f"{value:.3f}"


def _number(value: float | int | str | None) -> str:
    return "" if not isinstance(value, float | int) else _fmt(float(value), "")


def _markdown_cell(row: Row, key: str) -> str:
    """The cell's text; a mean gets its clustered standard error (`0.512 ± 0.031`), the
    interval column shows `[lower, upper]`; a memory latency is shown in milliseconds."""
    value = _cell(row, key)
    if key.startswith("memory:latency_") and isinstance(value, float):
        return "nan" if math.isnan(value) else f"{1000 * value:.3f}"
    text = _fmt(value, key)
    kind, _, rest = key.partition(":")
    if rest == "ci_lower":
        lower, upper = _number(_cell(row, key)), _number(_cell(row, f"{kind}:ci_upper"))
        return f"[{lower}, {upper}]" if lower or upper else ""
    ks = row.kinds.get(kind)
    name = rest.removeprefix("extra:")
    if text and ks is not None and name and (rest in ks.categories or name in ks.clustered):
        se = _number(_cell(row, f"{kind}:{name}:stderr_clustered"))
        if se:
            text += f" ± {se}"
    return text


def above_ceiling(row: Row) -> list[str]:
    """Per-category scores of a run on the original gold that exceed the audited-gold ceiling:
    no honest system reaches them, so such a score was earned from wrong gold (or a lenient
    judge). Runs on the audited gold have no ceiling below 100 %."""
    if str(row.task_args.get("gold", "original")) != "original":
        return []
    out = []
    for kind, ks in row.kinds.items():
        for category, value in ks.categories.items():
            ceiling = row.ceilings.get(category)
            if ceiling is not None and value > ceiling:
                out.append(f"{kind} {category} {value:.4f} > ceiling {ceiling:.4f}")
    return out


def markdown_tables(rows: Sequence[Row]) -> str:
    """One Markdown table per benchmark; each row states its model, judge and context mode.
    Per-category means carry their clustered standard error; the per-category intervals are
    in the CSV."""
    out: list[str] = []
    for benchmark in sorted({r.benchmark for r in rows}):
        sub = [r for r in rows if r.benchmark == benchmark]
        cols = [c for c in _columns(sub) if c.key != "benchmark" and c.markdown]
        out.append(f"### {benchmark}\n")
        out.append("| " + " | ".join(c.title for c in cols) + " |")
        out.append("|" + "|".join("---" for _ in cols) + "|")
        for r in sub:
            cells: list[str] = []
            for c in cols:
                text = _markdown_cell(r, c.key)
                if c.key == "samples" and r.status != "success":
                    text += f" ({r.status})"
                cells.append(text)
            out.append("| " + " | ".join(cells) + " |")
        for r in sub:
            flagged = above_ceiling(r)
            if flagged:
                out.append(
                    f"\nAbove the audited-gold ceiling ({r.label}): {'; '.join(flagged)}. "
                    "The original gold is wrong on these shares of questions: see "
                    "benchmarks/locomo/README.md#audited-gold."
                )
        judges = sorted({r.judge for r in sub if r.judge != NO_JUDGE})
        if len(judges) > 1:
            out.append(
                f"\nJudge scores come from {len(judges)} different judges "
                f"({', '.join(judges)}): compare judge columns only between rows with the same "
                "judge."
            )
        out.append("")
    return "\n".join(out)


def plot_benchmark(rows: Sequence[Row], benchmark: str, path: Path) -> Path:
    """Grouped bar chart: one panel per score kind, groups = overall + categories, one bar per
    row (stderr as error bars on overall)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sub = [r for r in rows if r.benchmark == benchmark]
    layout = [(k, c) for k, c, _ in _layout(sub)]
    if not layout:
        raise ValueError(f"{benchmark}: no scores to plot")
    width_groups = max(len(c) + 1 for _, c in layout)
    fig, axes = plt.subplots(
        len(layout),
        1,
        figsize=(max(6.0, 1.1 * width_groups + 2), 3.2 * len(layout) + 0.6 * len(sub)),
        squeeze=False,
    )
    bar_w = 0.8 / max(1, len(sub))
    for ax, (kind, cats) in zip(axes[:, 0], layout, strict=True):
        groups = ["overall", *cats]
        for i, r in enumerate(sub):
            ks = r.kinds.get(kind, KindScores())
            values = [ks.overall, *(ks.categories.get(c) for c in cats)]
            heights = [v if v is not None and not math.isnan(v) else 0.0 for v in values]
            xs = [g + (i - (len(sub) - 1) / 2) * bar_w for g in range(len(groups))]
            ax.bar(xs, heights, bar_w, label=r.label)
            if ks.stderr and heights[0]:
                ax.errorbar([xs[0]], [heights[0]], yerr=[ks.stderr], fmt="none", ecolor="black")
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, rotation=20, ha="right")
        ax.set_ylabel("F1" if kind == "f1" else kind)
        ax.set_ylim(0, 1.05 if kind in ("f1", "judge") else None)
        ax.set_title(f"{benchmark}: {'F1' if kind == 'f1' else kind}")
        ax.grid(axis="y", alpha=0.3)
    axes[-1, 0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), fontsize=8, ncol=1)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return path


def safe_file_stem(name: str) -> str:
    """A file name from log metadata: only [A-Za-z0-9_.-], never a path (logs are data)."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "benchmark"
    return stem[:100]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--paired" in args:
        # Question-by-question comparison of runs: the paired tool (memevals-diff) owns it.
        from memevals.tools.paired import main as paired_main

        args.remove("--paired")
        return paired_main(args)
    parser = argparse.ArgumentParser(
        prog="memevals-compare",
        description="Tabulate and plot Inspect logs of memevals tasks across models, judges "
        "and context modes (one table and one chart per benchmark).",
        epilog="memevals-compare --paired RUN_A RUN_B [RUN_C ...] compares runs question by "
        "question (paired tests, cluster-bootstrap intervals): see memevals-diff --help.",
    )
    parser.add_argument("logs", nargs="+", help="log files or folders of logs")
    parser.add_argument("--csv", type=Path, help="write all rows to this CSV file")
    parser.add_argument(
        "--png-dir",
        type=Path,
        help="folder for the charts (<benchmark>.png); default: the CSV's folder, else '.'",
    )
    parser.add_argument("--no-png", action="store_true", help="do not draw charts")
    ns = parser.parse_args(args)
    try:
        rows = load_rows(ns.logs)
    except (FileNotFoundError, ValueError) as exc:
        parser.error(str(exc))
    if not rows:
        print("memevals-compare: no log with results", file=sys.stderr)
        return 1
    print(markdown_tables(rows))
    if ns.csv:
        write_csv(rows, ns.csv)
        print(f"CSV: {ns.csv}", file=sys.stderr)
    if not ns.no_png:
        png_dir = ns.png_dir or (ns.csv.parent if ns.csv else Path("."))
        for benchmark in sorted({r.benchmark for r in rows}):
            out = plot_benchmark(rows, benchmark, png_dir / f"{safe_file_stem(benchmark)}.png")
            print(f"chart: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Compare runs across providers: Markdown tables, one CSV and one bar chart per benchmark.

    python -m memevals.tools.compare LOG_OR_DIR ... [--csv out.csv] [--png-dir DIR] [--wide]

Charts are drawn only with --png-dir (one `<benchmark>.png` each); nothing else is written
but the CSV asked for.
    memevals-compare logs/ lm-eval-out/ --csv compare.csv

Each Inspect log becomes one row, and so does each lm-eval run (the `samples_<task>_*.jsonl`
files one `lm_eval` call wrote for one benchmark); runs are read by `memevals.tools.runs`, the
reader `memevals-diff` uses too. Rows are grouped into one table per benchmark, so scores of
two benchmarks never share a column, and every row names the judge that produced its judge
scores, the protocol and the context its model saw. When two runs of one table share that
key, the task arguments that tell them apart are added to the context label rather than
letting them look like the same run.

What a table shows comes from the benchmark's record (`memevals.core.benchmark`): its declared
answer and judge scores get a column each (mean, naive and clustered standard error, 95 %
interval, the mean per category in the record's order, and the record's subgroups and macro
average); its retrieval and prompt-size scores one mean each; its memory scorer's figures the
memory columns. Every figure is computed here from the per-sample scores (the log's own metric
names are never read, so renaming a metric changes nothing), with memevals.core.statistics:
the same arithmetic as the tasks' Inspect metrics. Nothing is rescored.

A judge run with repeated judging (`-T judge_runs=N`) gets, beside its judge column, N
(`judge runs`), the share of samples whose N verdicts agree (`judge agreement`) and Fleiss'
kappa (`judge kappa`); the per-category agreement is in the CSV.

A run whose context came from a memory system under test (`-T memory=<name>`) gets the
system's columns: its name and version, k, the retrieval latency percentiles, the items kept
and cut, the context size, and the ingestion totals (each history counted once), all computed
here from the per-sample memory record (memevals.core.memory_harness); other runs leave them
blank, and a table without such a run has none of them.

The default Markdown fits MAX_WIDTH (120) columns: per benchmark a run key (`run 1`, ...), then
one table per score and one for the context, a figure per line and a run per column (split over
several tables when the runs do not fit); `--wide` gives the one wide table per benchmark. A
figure that cannot be estimated (a clustered error of one cluster, a mean of no scored sample)
is UNDEFINED in the tables and an empty cell in the CSV, never nan. An interval of fewer than
`statistics.MIN_CLUSTERS` clusters (6) is not stated: its cell says `too few clusters (n)`, a
note under the tables gives the rule, and the CSV leaves it empty; an interval never leaves its
score's range (memevals.core.statistics).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspect_ai.log import EvalLog

from memevals.core import statistics
from memevals.core.agreement import agreement_figures, repeated_agreement
from memevals.core.benchmark import Benchmark
from memevals.core.memory_harness import (
    CONTEXT_TOKENS_KEY,
    CUT_KEY,
    INGEST_KEY,
    ITEMS_KEY,
    LATENCY_KEY,
    ingest_totals,
    latency_percentiles,
)
from memevals.tools.runs import (
    FLAGS,
    NO_CATEGORY,
    Run,
    RunSample,
    context_label,
    effective,
    effective_options,
    is_compared,
    load_runs,
    memory_settings,
    read_inspect_log,
    score_order,
    system_label,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "MAX_WIDTH",
    "NO_SCORED",
    "UNDEFINED",
    "KindScores",
    "Row",
    "chart_figure",
    "load_rows",
    "main",
    "markdown_tables",
    "memory_figures",
    "plot_benchmark",
    "row_from_log",
    "row_from_run",
    "table_records",
    "write_csv",
]

#: Declared score kinds shown as one mean column each (not per category).
AUX_KINDS = frozenset({"retrieval", "tokens"})
#: The memory columns: (figure, Markdown title); latencies are seconds in the CSV and shown in
#: milliseconds in the Markdown table (retrieval from a local index takes well under 1 ms).
MEMORY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("system", "memory system"),
    ("k", "k"),
    ("latency_p50_s", "latency p50 ms"),
    ("latency_p95_s", "latency p95 ms"),
    ("latency_p99_s", "latency p99 ms"),
    ("mean_items", "mean items"),
    ("empty_retrievals", "empty retrievals"),
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
NO_JUDGE = "-"
#: What a table shows for a figure that cannot be estimated (a clustered error or interval of
#: one cluster, a mean of no scored sample): the figure is left out, never shown as nan.
UNDEFINED = "-"
#: What an interval's cell says where the clusters are too few for one (docs/compare.md).
TOO_FEW = "too few clusters"
#: The widest line of the default Markdown (a terminal's width); --wide has no limit.
MAX_WIDTH = 120
#: Repeated-judging figures shown in the Markdown table (the rest, per category, go to the CSV).
REPEATED_SHOWN = ("runs", "agreement", "kappa")


@dataclass
class KindScores:
    """The numbers of one score (F1, judge, ...) in one run, all computed from its samples.

    `clustered` holds the figures of each group: key "" for all samples, else a category or
    subgroup (statistics.Summary: n, clusters, mean, naive and clustered stderr, 95 % interval).
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
    """One run: who answered, who judged, under which protocol, what context, and its scores."""

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
    #: per-category ceilings under the original gold (share of questions whose gold an audit
    #: does not mark wrong), as the task logged them; empty when it logged none
    ceilings: dict[str, float] = field(default_factory=dict)
    #: the memory system under test and its measurements (`memory_figures`); empty without one
    memory: dict[str, float | int | str] = field(default_factory=dict)
    protocol: str = ""
    record: Benchmark | None = None
    #: score name -> its declared kind (None: the run has no record)
    score_kinds: dict[str, str | None] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """Model, judge, protocol, context and (when not the benchmark's) task: what tells two
        rows apart, as the charts' legends and the notes under the tables name a run."""
        parts = [
            self.model,
            f"judge {self.judge}" if self.judge != NO_JUDGE else "",
            f"protocol {self.protocol}" if self.protocol else "",
            self.context,
        ]
        if self.task != self.benchmark:
            parts.append(self.task)
        return " | ".join(p for p in parts if p)


def memory_figures(
    settings: Mapping[str, Any], sample_metadata: Iterable[Mapping[str, Any]]
) -> dict[str, float | int | str]:
    """The memory columns of one run.

    The system and k come from its settings, the rest from the samples' memory records. Every
    retrieval counts (each epoch's), `empty_retrievals` those that gave the model no item; the
    ingestion totals count each history once (`ingest_totals`). A figure with nothing to
    compute it from is NaN (shown as undefined).

    Args:
        settings: the run's memory settings (`memory`, `memory_version`, `memory_args`,
            `top_k`).
        sample_metadata: every sample's metadata.

    Returns:
        The figures; empty for a run without a memory system.
    """
    records = [md for md in sample_metadata if LATENCY_KEY in md]
    if not records and not settings.get("memory"):
        return {}
    out: dict[str, float | int | str] = {"system": system_label(settings)}
    if settings.get("top_k") is not None:
        out["k"] = int(settings["top_k"])
    out |= latency_percentiles([float(md[LATENCY_KEY]) for md in records])

    def mean(key: str) -> float:
        values = [float(md[key]) for md in records if key in md]
        return sum(values) / len(values) if values else math.nan

    out["mean_items"] = mean(ITEMS_KEY)
    # a retrieval that returned nothing is the system's answer (it found nothing), counted so
    # that a low score can be told apart from a system that gives the model no context
    out["empty_retrievals"] = sum(
        1 for md in records if ITEMS_KEY in md and int(md[ITEMS_KEY]) == 0
    )
    out["items_cut"] = sum(int(md.get(CUT_KEY, 0)) for md in records)
    out["mean_context_tokens"] = mean(CONTEXT_TOKENS_KEY)
    out |= ingest_totals([md[INGEST_KEY] for md in records if INGEST_KEY in md])
    return out


# ---------------------------------------------------------------------------------------------
# Rows from runs

#: Per-sample values of one score: (sample id, groups, cluster, value). The groups are the
#: sample's category and its subgroups.
SampleValue = tuple[str, tuple[str, ...], str, float]


def _groups(sample: RunSample) -> tuple[str, ...]:
    category = () if sample.category == NO_CATEGORY else (sample.category,)
    return (*category, *sample.groups)


def _values(run: Run, name: str) -> list[SampleValue]:
    """The finite values of one score (epochs averaged), one per sample that has one."""
    out: list[SampleValue] = []
    for s in run.samples.values():
        value = s.scores.get(name)
        if value is not None and math.isfinite(value) and not s.errored:
            out.append((s.id, _groups(s), s.cluster, value))
    return out


def _reduced_values(run: Run, name: str) -> list[SampleValue]:
    out: list[SampleValue] = []
    for sid, value in sorted(run.reduced[name].items()):
        s = run.samples.get(sid)
        if s is not None:
            out.append((sid, _groups(s), s.cluster, value))
    return out


def _is_proportion(kind: str | None, name: str, values: Sequence[SampleValue]) -> bool:
    """A judge's accuracy is a proportion: its interval is the Wilson interval."""
    judged = kind == "judge" or (kind is None and name.split("@", 1)[0] == "judge")
    return judged and all(0.0 <= v[3] <= 1.0 for v in values)


def _kind_scores(run: Run, name: str, values: Sequence[SampleValue]) -> KindScores:
    """Every figure of one score from its sample values (see the module doc)."""
    ks = KindScores()
    subgroups = {g for s in run.samples.values() for g in s.groups}
    proportion = _is_proportion(run.kinds.get(name.split("@", 1)[0]), name, values)
    groups: dict[str, list[SampleValue]] = {"": list(values)}
    for v in values:
        for group in v[1]:
            groups.setdefault(group, []).append(v)
    for group, members in groups.items():
        if members:  # a score every sample left unscored has no figure, only its count
            ks.clustered[group] = statistics.summarize(
                [m[3] for m in members], [m[2] for m in members], proportion=proportion
            )
    if "" in ks.clustered:
        ks.overall, ks.stderr = ks.clustered[""].mean, ks.clustered[""].stderr
    for group, summary in ks.clustered.items():
        if group in subgroups:
            ks.extras[group] = summary.mean
        elif group:
            ks.categories[group] = summary.mean
    if run.record is not None and run.record.macro_average and ks.categories:
        means = list(ks.categories.values())
        ks.extras[run.record.macro_average] = sum(means) / len(means)
    # a flag its scorer logs (unscored, unclear) is counted beside the score
    for s in run.samples.values():
        for flag, n in s.flags.get(name, {}).items():
            ks.extras[flag] = ks.extras.get(flag, 0.0) + n
    ks.repeated = _repeated(run.repeated.get(name, ()))
    return ks


def _repeated(rows: Sequence[tuple[str, tuple[str | None, ...]]]) -> dict[str, float]:
    """The repeated-judging figures of one score (its N labels per sample-epoch), overall and
    per category: runs, compared, incomplete, agreement, kappa."""
    if not rows:
        return {}

    overall = repeated_agreement([list(labels) for _, labels in rows])
    out: dict[str, float] = {
        "runs": float(max(len(labels) for _, labels in rows)),
        "compared": float(overall.items),
        "incomplete": float(overall.incomplete),
        **agreement_figures("", [labels for _, labels in rows]),
    }
    for category in sorted({c for c, _ in rows if c != NO_CATEGORY}):
        out |= agreement_figures(f"{category}_", [labels for c, labels in rows if c == category])
    return out


def _judge_label(run: Run, kinds: Mapping[str, KindScores]) -> str:
    """Who judged the run's judged scores: its declared judge scores and any score whose
    scorer recorded a grader model (a FactScore grader beside ROUGE); NO_JUDGE for none."""
    judged = [
        n
        for n in kinds
        if run.kinds.get(n.split("@", 1)[0]) == "judge"
        or (run.record is None and n.split("@", 1)[0] == "judge")
        or run.judges.get(n.split("@", 1)[0])
    ]
    if not judged:
        return NO_JUDGE
    if run.grader_role is not None:
        return run.grader_role
    if run.framework == "inspect":  # no grader role: the model under test judged itself
        return f"self ({run.model})"
    graders = sorted({g for n in judged for g in run.judges.get(n.split("@", 1)[0], ())})
    return ", ".join(graders) or "?"


def row_from_run(run: Run) -> Row | None:
    """A table row of one run; None (with a message on stderr) when an Inspect run has no
    results.

    Args:
        run: the run (`memevals.tools.runs`).

    Returns:
        The row, or None.
    """
    if not run.has_results:
        print(
            f"memevals-compare: {run.path}: no results (status {run.status}); left out",
            file=sys.stderr,
        )
        return None
    names = score_order(run.record, {n for s in run.samples.values() for n in s.scores}, run.kinds)
    kinds: dict[str, KindScores] = {}
    aux: dict[str, float] = {}
    for name in names:
        kind = run.kinds.get(name)
        values = _values(run, name)
        flagged = any(name in s.flags for s in run.samples.values())
        if not values and not (flagged and is_compared(kind, run.record)):
            continue
        if kind in AUX_KINDS:
            aux[name] = sum(v[3] for v in values) / len(values)
        elif is_compared(kind, run.record):
            kinds[name] = _kind_scores(run, name, values)
    for name in score_order(run.record, run.reduced, run.kinds):
        kinds[name] = _kind_scores(run, name, _reduced_values(run, name))
    ceilings = run.task_metadata.get("gold_ceilings") or {}
    categories = run.record.categories if run.record else ()
    return Row(
        benchmark=run.benchmark,
        task=run.task if run.framework == "inspect" else f"lm-eval: {run.task}",
        model=run.model,
        judge=_judge_label(run, kinds),
        context=context_label(run),
        samples=run.completed if run.completed is not None else len(run.samples),
        status=run.status,
        log=run.path,
        kinds=kinds,
        aux=aux,
        usage=dict(run.usage),
        task_args=effective_options(run),
        framework=run.framework,
        ceilings={
            str(k): float(v)
            for k, v in ceilings.items()
            if k in categories or (not categories and k != "overall")
        },
        memory=memory_figures(memory_settings(run), run.epoch_metadata),
        protocol=run.protocol,
        record=run.record,
        score_kinds=dict(run.kinds),
    )


def row_from_log(log: EvalLog, path: str) -> Row | None:
    """A table row from an Inspect log already read.

    Args:
        log: the log.
        path: where it came from.

    Returns:
        The row, or None when the log has no results.
    """
    return row_from_run(read_inspect_log(log, path))


def load_rows(paths: Iterable[str]) -> list[Row]:
    """Rows for every Inspect log and every lm-eval run under `paths` (files or folders).

    Args:
        paths: log files, lm-eval samples files, or folders of either.

    Returns:
        The rows, sorted by benchmark, task, model, judge and context.
    """
    rows = [row for run in load_runs(paths) if (row := row_from_run(run)) is not None]
    _disambiguate(rows)
    rows.sort(key=lambda r: (r.benchmark, r.task, r.model, r.judge, r.context, r.protocol))
    return rows


def disambiguate(rows: list[Row]) -> None:
    """Tell apart rows that share benchmark, model, judge, protocol, context and task (the
    rule of load_rows; memevals-report applies it to the runs it has read).

    Args:
        rows: the rows, relabelled in place.
    """
    _disambiguate(rows)


def _disambiguate(rows: list[Row]) -> None:
    """Rows that share (benchmark, model, judge, protocol, context, task) get the task
    arguments that differ between them appended to their context label (an option not given
    is its default: `top_k=5` and no `top_k` do not differ where 5 is the default)."""
    groups: dict[tuple[str, ...], list[Row]] = {}
    for r in rows:
        key = (r.benchmark, r.model, r.judge, r.protocol, r.context, r.task)
        groups.setdefault(key, []).append(r)
    for same in groups.values():
        if len(same) < 2:
            continue
        keys = sorted({k for r in same for k in r.task_args})

        def value(r: Row, key: str) -> Any:
            return r.task_args.get(key, effective(r.record, key, None))

        differing = [k for k in keys if len({repr(value(r, k)) for r in same}) > 1]
        for i, r in enumerate(same, 1):
            if differing:
                r.context += " [" + ", ".join(f"{k}={value(r, k)}" for k in differing) + "]"
            else:
                r.context += f" [run {i}: {Path(r.log).name}]"


def _ordered(record: Benchmark | None, categories: Iterable[str]) -> list[str]:
    """Categories in the record's display order, then any others by name."""
    cats = set(categories)
    if record is None:
        return sorted(cats)
    return sorted(cats, key=record.category_rank)


def _kind_order(rows: Sequence[Row]) -> list[str]:
    names = {k for r in rows for k in r.kinds}
    kinds = {n: k for r in rows for n, k in r.score_kinds.items()}
    return score_order(rows[0].record if rows else None, names, kinds)


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
    kinds = _kind_order(rows)
    record = rows[0].record if rows else None
    out = []
    for kind in kinds:
        cats = _ordered(
            record, (c for r in rows if kind in r.kinds for c in r.kinds[kind].categories)
        )
        extras = sorted({e for r in rows if kind in r.kinds for e in r.kinds[kind].extras})
        out.append((kind, cats, extras))
    return out


def _undefined(value: object) -> bool:
    """A figure that cannot be estimated (NaN: one cluster, one sample, nothing recorded)."""
    return isinstance(value, float) and not math.isfinite(value)


def _cell(row: Row, key: str) -> float | int | str | None:
    """A cell's value: None where the row lacks the column, NaN where the figure is undefined."""
    if key == "judge_model":
        return row.judge
    if key in ("benchmark", "task", "model", "protocol", "context", "samples", "status", "log"):
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
        _Column("protocol", "protocol"),
        _Column("context", "context"),
        _Column("task", "task"),
        _Column("samples", "n"),
    ]
    for kind, cats, extras in _layout(rows):
        title = _title(kind)
        interval = "95% Wilson" if _wilson(rows, kind) else "95% CI"
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


def _title(kind: str) -> str:
    return "F1" if kind == "f1" else kind


def _wilson(rows: Sequence[Row], kind: str) -> bool:
    """Whether a score's intervals are Wilson intervals (a judge's accuracy, a proportion)."""
    kinds = {n: k for r in rows for n, k in r.score_kinds.items()}
    values = [
        (r.kinds[kind].clustered[""].interval, r.kinds[kind].overall)
        for r in rows
        if kind in r.kinds and "" in r.kinds[kind].clustered
    ]
    judged = kinds.get(kind.split("@", 1)[0]) == "judge" or (
        not kinds.get(kind.split("@", 1)[0]) and kind.split("@", 1)[0] == "judge"
    )
    return judged and all(o is None or 0.0 <= o <= 1.0 for _, o in values)


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


def table_records(rows: Sequence[Row]) -> list[dict[str, float | int | str | None]]:
    """The numbers behind the CSV: one dict per row, keyed by the CSV's column names.

    Every row has every key (the union over `rows`); None where a row lacks the column or its
    figure is undefined (NaN is never handed on).

    Args:
        rows: the rows (`load_rows`), of any benchmarks.

    Returns:
        One record per row, in the rows' order, keys in the CSV's column order.
    """
    keys = _csv_keys(rows)
    out: list[dict[str, float | int | str | None]] = []
    for r in rows:
        record: dict[str, float | int | str | None] = {}
        for k in keys:
            value = _cell(r, k)
            if _undefined(value):
                value = None
            elif isinstance(value, float) and _is_count(k) and value.is_integer():
                value = int(value)
            record[_csv_name(k)] = value
        out.append(record)
    return out


def _is_count(key: str) -> bool:
    """A cell that counts samples or judge runs (a flag's count, judge runs, compared, ...)."""
    counts = tuple(f":extra:{flag}" for flag in sorted(FLAGS))
    return key.endswith((*counts, ":repeated:runs", ":compared", ":incomplete"))


def write_csv(rows: Sequence[Row], path: Path) -> None:
    """All rows of all benchmarks in one CSV: every figure, an empty cell where a row lacks a
    column or its figure is undefined (never the string nan).

    Args:
        rows: the rows.
        path: the CSV file (its folder is created).
    """
    keys = _csv_keys(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([_csv_name(k) for k in keys])
        for record in table_records(rows):
            writer.writerow(["" if v is None else v for v in record.values()])


def _fmt(value: float | int | str | None, key: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.replace("|", "\\|")
    if _undefined(value):
        return UNDEFINED
    if isinstance(value, int) or key == "samples" or key.startswith("tokens:"):
        return f"{value:.0f}" if not isinstance(value, int) else str(value)
    if _is_count(key):
        return f"{value:.0f}"
    return f"{value:.3f}"


def _shown_number(value: float | int | str | None) -> str:
    """A number as shown; empty when absent or undefined."""
    if not isinstance(value, float | int) or _undefined(value):
        return ""
    return _fmt(float(value), "")


def _interval_text(row: Row, kind: str, group: str = "") -> str:
    """`[lower, upper]`; TOO_FEW when the clusters are too few for one, UNDEFINED when neither
    bound can be estimated otherwise, empty without a mean."""
    prefix = f"{kind}:{group}:" if group else f"{kind}:"
    summary = row.kinds[kind].clustered.get(group) if kind in row.kinds else None
    if summary is None:
        return ""
    if summary.too_few_clusters:
        return too_few_text(summary.clusters)
    lower = _shown_number(_cell(row, f"{prefix}ci_lower"))
    upper = _shown_number(_cell(row, f"{prefix}ci_upper"))
    return f"[{lower}, {upper}]" if lower and upper else UNDEFINED


def too_few_text(clusters: int) -> str:
    """An interval's cell where `clusters` are too few for one: `too few clusters (2)`.

    Args:
        clusters: the clusters the values come from.

    Returns:
        The text.
    """
    return f"{TOO_FEW} ({clusters})"


def too_few_note(what: str = "95 % interval") -> str:
    """The note under a table that has a TOO_FEW cell: the rule and where it is explained.

    Args:
        what: the figures left out.

    Returns:
        The note.
    """
    return (
        f"{TOO_FEW} (n): the values come from n clusters, and a {what} needs at least "
        f"{statistics.MIN_CLUSTERS}: with fewer, even an exact sign-flip test cannot reject "
        "anything at 5 %, so no interval is stated (docs/compare.md#too-few-clusters)."
    )


def _any_too_few(sub: Sequence[Row]) -> bool:
    """Whether a shown interval (a score's overall one) is left out for want of clusters."""
    overall = [ks.clustered.get("") for r in sub for ks in r.kinds.values()]
    return any(s is not None and s.too_few_clusters for s in overall)


def _markdown_cell(row: Row, key: str) -> str:
    """The cell's text; a mean gets its clustered standard error (`0.512 ± 0.031`) when it can be
    estimated, the interval column shows `[lower, upper]`; a memory latency is shown in
    milliseconds; an undefined figure is UNDEFINED."""
    value = _cell(row, key)
    if key.startswith("aux:") and row.score_kinds.get(key[4:]) == "tokens":
        return _fmt(value, f"tokens:{key}")
    if key.startswith("memory:latency_") and isinstance(value, float):
        return UNDEFINED if _undefined(value) else f"{1000 * value:.3f}"
    text = _fmt(value, key)
    kind, _, rest = key.partition(":")
    if rest == "ci_lower":
        return _interval_text(row, kind)
    ks = row.kinds.get(kind)
    name = rest.removeprefix("extra:")
    if text and ks is not None and name and (rest in ks.categories or name in ks.clustered):
        se = _shown_number(_cell(row, f"{kind}:{name}:stderr_clustered"))
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


def _wide_table(sub: Sequence[Row]) -> list[str]:
    """The one wide table of a benchmark: a row per run, a column per figure (--wide)."""
    cols = [c for c in _columns(sub) if c.key != "benchmark" and c.markdown]
    out = ["| " + " | ".join(c.title for c in cols) + " |"]
    out.append("|" + "|".join("---" for _ in cols) + "|")
    for r in sub:
        cells: list[str] = []
        for c in cols:
            text = _markdown_cell(r, c.key)
            if c.key == "samples" and r.status != "success":
                text += f" ({r.status})"
            cells.append(text)
        out.append("| " + " | ".join(cells) + " |")
    return out


def _aligned(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table with its columns padded to one width (readable as plain text)."""
    widths = [max(len(row[i]) for row in (header, *body)) for i in range(len(header))]
    widths = [max(w, 3) for w in widths]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, body)]


def _run_key(sub: Sequence[Row], width: int) -> list[str]:
    """Which run is which: a table of the runs' labels, or a numbered list when the table would
    be wider than `width`."""
    memory = any(r.memory.get("system") for r in sub)
    titles = ["run", "model", "judge model", "protocol", "context", "task", "n"]
    titles += ["memory system"] if memory else []
    body = []
    for i, r in enumerate(sub, 1):
        n = str(r.samples) + ("" if r.status == "success" else f" ({r.status})")
        cells = [str(i), r.model, r.judge, r.protocol, r.context, r.task, n]
        cells += [str(r.memory.get("system", ""))] if memory else []
        body.append([c.replace("|", "\\|") for c in cells])
    table = _aligned(titles, body)
    if max(len(line) for line in table) <= width:
        return table
    out: list[str] = []
    for cells in body:
        text = "; ".join(f"{t} {c}" for t, c in zip(titles[1:], cells[1:], strict=True) if c)
        out += textwrap.wrap(f"{cells[0]}. {text}", width, subsequent_indent="   ")
    return out


def _chunks(label: Sequence[str], columns: Sequence[Sequence[str]], width: int) -> list[list[int]]:
    """The run columns of a transposed table, packed into tables no wider than `width`."""
    label_w = max(3, *(len(c) for c in label))
    groups: list[list[int]] = [[]]
    used = label_w + 4
    for i, col in enumerate(columns):
        w = max(3, *(len(c) for c in col)) + 3
        if groups[-1] and used + w > width:
            groups.append([])
            used = label_w + 4
        groups[-1].append(i)
        used += w
    return groups


def _transposed(
    title: str, figures: Sequence[tuple[str, Sequence[str]]], runs: Sequence[int], width: int
) -> list[str]:
    """One figure per line, one run per column (`run 1`, `run 2`, ...); split into several
    tables when the runs do not fit in `width`. `figures` holds (name, one cell per run)."""
    shown = [(name, cells) for name, cells in figures if any(cells)]
    if not shown:
        return []
    label = [title, *(name for name, _ in shown)]
    columns = [[f"run {n}", *(cells[i] for _, cells in shown)] for i, n in enumerate(runs)]
    out: list[str] = []
    for group in _chunks(label, columns, width):
        if out:
            out.append("")
        header = [title, *(columns[i][0] for i in group)]
        body = [[name, *(cells[i] for i in group)] for name, cells in shown]
        out += _aligned(header, body)
    return out


def _score_figures(sub: Sequence[Row], kind: str) -> list[tuple[str, list[str]]]:
    """The lines of one score's table: scored samples, mean ± clustered error, the interval,
    each category, the repeated-judging figures, then the subgroups, macro average and flags."""
    _, cats, extras = next(layout for layout in _layout(sub) if layout[0] == kind)
    interval = "95% Wilson" if _wilson(sub, kind) else "95% CI"

    def per_run(text: Callable[[Row, KindScores], str]) -> list[str]:
        return [text(r, r.kinds[kind]) if kind in r.kinds else "" for r in sub]

    def cells(key: str, undefined: str = "") -> list[str]:
        """The cells of one key; `undefined` where a run with this score has no figure."""
        return per_run(lambda r, ks: _markdown_cell(r, key) or undefined)

    def scored(r: Row, ks: KindScores) -> str:
        return str(ks.clustered[""].n) if "" in ks.clustered else "0"

    def mean(r: Row, ks: KindScores) -> str:
        summary = ks.clustered.get("")
        if summary is None or _undefined(summary.mean):
            return UNDEFINED
        se = summary.stderr_clustered
        return f"{summary.mean:.3f}" + ("" if _undefined(se) else f" ± {se:.3f}")

    figures = [("scored", per_run(scored)), ("mean ± se", per_run(mean))]
    figures.append((interval, per_run(lambda r, ks: _interval_text(r, kind) or UNDEFINED)))
    repeated = _ordered_repeated(r.kinds[kind].repeated for r in sub if kind in r.kinds)
    for name in (n for n in repeated if n in REPEATED_SHOWN):
        figures.append((f"judge {name}", cells(f"{kind}:repeated:{name}")))
    figures += [(c, cells(f"{kind}:{c}", UNDEFINED)) for c in cats]
    figures += [(e, cells(f"{kind}:extra:{e}")) for e in extras]
    return figures


def _context_figures(sub: Sequence[Row]) -> list[tuple[str, list[str]]]:
    """The lines of the context table: the prompt-size and retrieval means, then the memory
    system's figures (its name is in the run key)."""
    figures = [
        (name, [_markdown_cell(r, f"aux:{name}") for r in sub])
        for name in sorted({a for r in sub for a in r.aux})
    ]
    if any(r.memory for r in sub):
        figures += [
            (title, [_markdown_cell(r, f"memory:{name}") for r in sub])
            for name, title in MEMORY_COLUMNS
            if name != "system"
        ]
    return figures


def _compact_tables(sub: Sequence[Row], width: int) -> list[str]:
    """The default view of a benchmark: the run key, then one table per score and one for the
    context, each a figure per line and a run per column."""
    out = _run_key(sub, width)
    runs = list(range(1, len(sub) + 1))
    for kind, _, _ in _layout(sub):
        out += ["", f"#### {_title(kind)}", ""]
        out += _transposed(_title(kind), _score_figures(sub, kind), runs, width)
    context = _transposed("context", _context_figures(sub), runs, width)
    if context:
        out += ["", "#### context", "", *context]
    return out


def _wrapped(text: str, width: int | None) -> list[str]:
    """A note under a table, as one paragraph wrapped to `width` (None: one line)."""
    return [text] if width is None else textwrap.wrap(text, width, break_on_hyphens=False)


def markdown_tables(rows: Sequence[Row], *, wide: bool = False, width: int = MAX_WIDTH) -> str:
    """The Markdown of every benchmark: by default a run key and one table per score (and one
    for the context), a figure per line and a run per column, no line wider than `width`; with
    `wide`, one table per benchmark with a row per run and a column per figure.

    Means carry their clustered standard error (`0.512 ± 0.031`) when it can be estimated; an
    undefined figure is UNDEFINED; per-category intervals and naive errors are in the CSV (and
    the naive error in the wide table).

    Args:
        rows: the rows (`load_rows`).
        wide: one wide table per benchmark instead.
        width: the widest line of the default view.

    Returns:
        The Markdown text.
    """
    limit = None if wide else width
    out: list[str] = []
    for benchmark in sorted({r.benchmark for r in rows}):
        sub = [r for r in rows if r.benchmark == benchmark]
        out.append(f"### {benchmark}\n")
        out += _wide_table(sub) if wide else _compact_tables(sub, width)
        for i, r in enumerate(sub, 1):
            flagged = above_ceiling(r)
            if flagged:
                name = r.label if wide else f"run {i}"
                out.append("")
                out += _wrapped(
                    f"Above the audited-gold ceiling ({name}): {'; '.join(flagged)}. "
                    "The original gold is wrong on these shares of questions: see "
                    f"{_readme(r.record)}#audited-gold.",
                    limit,
                )
        if _any_too_few(sub):
            out += ["", *_wrapped(too_few_note(), limit)]
        judges = sorted({r.judge for r in sub if r.judge != NO_JUDGE})
        if len(judges) > 1:
            out.append("")
            out += _wrapped(
                f"Judge scores come from {len(judges)} different judges "
                f"({', '.join(judges)}): compare judge scores only between runs with the same "
                "judge.",
                limit,
            )
        out.append("")
    return "\n".join(out)


def _readme(record: Benchmark | None) -> str:
    """The benchmark's README, relative to the checkout when it lies in one."""
    if record is None:
        return "the benchmark's README.md"
    readme = record.folder / "README.md"
    root = Path(__file__).resolve().parents[2]
    return str(readme.relative_to(root)) if readme.is_relative_to(root) else str(readme)


#: The note a chart panel carries where runs have no scored sample (nothing to draw).
NO_SCORED = "no scored samples"


def chart_figure(rows: Sequence[Row], benchmark: str) -> Figure:
    """The chart of one benchmark as a matplotlib figure: one panel per score, groups = overall
    + categories, one bar per run (clustered stderr as the error bar on overall).

    The legend (below the panels, clear of every panel's x labels) names each run by
    `Row.label` (model, judge, protocol, context). A panel where a run has no scored sample
    says so ("no scored samples", with the unscored count) instead of drawing nothing.

    Args:
        rows: the rows (`load_rows`); those of other benchmarks are left out.
        benchmark: the benchmark charted.

    Returns:
        The figure (the caller saves or closes it).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sub = [r for r in rows if r.benchmark == benchmark]
    layout = [(k, c) for k, c, _ in _layout(sub)]
    if not sub:
        raise ValueError(f"{benchmark}: no run of this benchmark")
    width_groups = max((len(c) + 1 for _, c in layout), default=1)
    fig, axes = plt.subplots(
        max(1, len(layout)),
        1,
        figsize=(max(6.0, 1.2 * width_groups + 2), 3.6 * max(1, len(layout))),
        squeeze=False,
        layout="constrained",
    )
    if not layout:  # every sample errored: no score at all
        _note(axes[0, 0], NO_SCORED)
        axes[0, 0].set_title(benchmark)
        return fig
    for ax, (kind, cats) in zip(axes[:, 0], layout, strict=True):
        _draw_panel(ax, sub, kind, cats, benchmark)
    # "outside": the layout engine puts the legend below every panel and its x labels (placed
    # by hand under the last panel, it ran over long rotated labels)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", fontsize=8, ncols=1)
    return fig


def _draw_panel(
    ax: Axes, sub: Sequence[Row], kind: str, cats: Sequence[str], benchmark: str
) -> None:
    """Draw one score's panel: per group (overall + `cats`), one bar per run.

    Runs without a scored sample get a note; the y axis is 0-1 when every value shown is a
    fraction.
    """
    groups = ["overall", *cats]
    bar_w = 0.8 / max(1, len(sub))
    missing: list[str] = []
    for i, r in enumerate(sub):
        ks = r.kinds.get(kind, KindScores())
        xs = [g + (i - (len(sub) - 1) / 2) * bar_w for g in range(len(groups))]
        values = [ks.overall, *(ks.categories.get(c) for c in cats)]
        heights = [v if v is not None and not math.isnan(v) else 0.0 for v in values]
        ax.bar(xs, heights, bar_w, label=f"run {i + 1}: {r.label}")
        if ks.overall is None and kind in r.kinds:
            unscored = int(ks.extras.get("unscored", 0))
            missing.append(f"run {i + 1}" + (f" ({unscored} unscored)" if unscored else ""))
        if ks.stderr and heights[0] and math.isfinite(ks.stderr):
            ax.errorbar([xs[0]], [heights[0]], yerr=[ks.stderr], fmt="none", ecolor="black")
    if missing:
        _note(ax, f"{NO_SCORED}: {', '.join(missing)}")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=35, ha="right", rotation_mode="anchor")
    ax.set_ylabel(_title(kind))
    shown = [r.kinds[kind] for r in sub if kind in r.kinds]
    unit = all(
        0.0 <= v <= 1.0 for ks in shown for v in (ks.overall or 0.0, *ks.categories.values())
    )
    ax.set_ylim(0, 1.05 if unit else None)
    ax.set_title(f"{benchmark}: {_title(kind)}")
    ax.grid(axis="y", alpha=0.3)


def _note(ax: Axes, text: str) -> None:
    ax.text(
        0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=10, wrap=True
    )


def plot_benchmark(rows: Sequence[Row], benchmark: str, path: Path) -> Path:
    """Draw `chart_figure(rows, benchmark)` to a PNG file.

    Args:
        rows: the rows.
        benchmark: the benchmark charted.
        path: the PNG file (its folder is created).

    Returns:
        The path.
    """
    import matplotlib.pyplot as plt

    fig = chart_figure(rows, benchmark)
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
        from memevals.tools.diff import main as paired_main

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
        help="draw one chart per benchmark (<benchmark>.png) into this folder; without it no "
        "chart is written",
    )
    parser.add_argument(
        "--no-png", action="store_true", help="draw no chart (the default without --png-dir)"
    )
    parser.add_argument(
        "--wide",
        action="store_true",
        help="one wide table per benchmark (a row per run, a column per figure) instead of the "
        f"default tables that fit {MAX_WIDTH} columns",
    )
    ns = parser.parse_args(args)
    try:
        rows = load_rows(ns.logs)
    except (FileNotFoundError, ValueError) as exc:
        parser.error(str(exc))
    if not rows:
        print("memevals-compare: no log with results", file=sys.stderr)
        return 1
    print(markdown_tables(rows, wide=ns.wide))
    if ns.csv:
        write_csv(rows, ns.csv)
        print(f"CSV: {ns.csv}", file=sys.stderr)
    if ns.png_dir is not None and not ns.no_png:  # charts only where asked for
        for benchmark in sorted({r.benchmark for r in rows}):
            out = plot_benchmark(rows, benchmark, ns.png_dir / f"{safe_file_stem(benchmark)}.png")
            print(f"chart: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

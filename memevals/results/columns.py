"""The columns of a table of runs and each row's value in them (the CSV's records too)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from memevals.core import statistics
from memevals.results.agent import AGENT_COLUMNS
from memevals.results.axes import ordered_categories
from memevals.results.formatting import is_count, is_undefined, score_title
from memevals.results.rows import REPEATED_SHOWN, Row
from memevals.results.runs import score_order

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


def kind_order(rows: Sequence[Row]) -> list[str]:
    """The scores of `rows`, in their record's order (memevals.results.runs.score_order).

    Args:
        rows: rows of one benchmark.

    Returns:
        The score names.
    """
    names = {k for r in rows for k in r.kinds}
    kinds = {n: k for r in rows for n, k in r.score_kinds.items()}
    return score_order(rows[0].record if rows else None, names, kinds)


@dataclass(frozen=True)
class Column:
    """One column of a table of runs: its cell key (the CSV's header) and Markdown title."""

    key: str  # CSV header
    title: str  # Markdown header
    markdown: bool = True  # False: CSV only (per-category errors are shown in the mean's cell)


#: The clustered figures of a summary, by cell-key suffix.
CLUSTERED_FIELDS = ("stderr_clustered", "ci_lower", "ci_upper")


def clustered_cell(summary: statistics.Summary | None, field_name: str) -> float | None:
    """One clustered figure of a summary: its clustered error or an interval bound.

    Args:
        summary: the figures of one score and group (None: the row lacks them).
        field_name: one of CLUSTERED_FIELDS.

    Returns:
        The figure, or None.
    """
    if summary is None:
        return None
    if field_name == "stderr_clustered":
        return summary.stderr_clustered
    return summary.interval.lower if field_name == "ci_lower" else summary.interval.upper


def score_layout(rows: Sequence[Row]) -> list[tuple[str, list[str], list[str]]]:
    """(kind, categories, extras) for the kinds present in `rows`."""
    kinds = kind_order(rows)
    record = rows[0].record if rows else None
    out = []
    for kind in kinds:
        cats = ordered_categories(
            record, (c for r in rows if kind in r.kinds for c in r.kinds[kind].categories)
        )
        extras = sorted({e for r in rows if kind in r.kinds for e in r.kinds[kind].extras})
        out.append((kind, cats, extras))
    return out


def cell_value(row: Row, key: str) -> float | int | str | None:
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
    if key.startswith("agent:"):
        return row.agent.get(key[6:])
    kind, _, rest = key.partition(":")
    ks = row.kinds.get(kind)
    if ks is None:
        return None
    if rest == "":
        return ks.overall
    if rest == "stderr":
        return ks.stderr
    if rest in CLUSTERED_FIELDS:
        return clustered_cell(ks.clustered.get(""), rest)
    if rest.startswith("extra:"):
        return ks.extras.get(rest[6:])
    if rest.startswith("repeated:"):
        return ks.repeated.get(rest[9:])
    category, _, figure = rest.partition(":")
    if figure:
        return clustered_cell(ks.clustered.get(category), figure)
    return ks.categories.get(rest)


def table_columns(rows: Sequence[Row]) -> list[Column]:
    """Every column of a table of `rows`, in order: the run's labels, then per score its mean,
    errors, interval, repeated-judging figures, categories and extras, then the prompt-size and
    retrieval means, then the memory columns (only when a row has a memory system), then the
    agent columns (only when a row is of the agent mode).

    Args:
        rows: the rows.

    Returns:
        The columns.
    """
    cols = [
        Column("benchmark", "benchmark"),
        Column("model", "model"),
        Column("judge_model", "judge model"),
        Column("protocol", "protocol"),
        Column("context", "context"),
        Column("task", "task"),
        Column("samples", "n"),
    ]
    for kind, cats, extras in score_layout(rows):
        title = score_title(kind)
        interval = "95% Wilson" if is_wilson(rows, kind) else "95% CI"
        cols.append(Column(f"{kind}:", title))
        cols.append(Column(f"{kind}:stderr", f"{title} stderr"))
        cols.append(Column(f"{kind}:stderr_clustered", f"{title} stderr_clustered"))
        cols.append(Column(f"{kind}:ci_lower", f"{title} {interval}"))
        cols.append(Column(f"{kind}:ci_upper", "", markdown=False))
        repeated = ordered_repeated(r.kinds[kind].repeated for r in rows if kind in r.kinds)
        for name in repeated:
            shown = name in REPEATED_SHOWN
            cols.append(Column(f"{kind}:repeated:{name}", f"{title} {name}", markdown=shown))
        for c in cats:
            cols.append(Column(f"{kind}:{c}", f"{title} {c}"))
            cols += [Column(f"{kind}:{c}:{f}", "", markdown=False) for f in CLUSTERED_FIELDS]
        for e in extras:
            cols.append(Column(f"{kind}:extra:{e}", f"{title} {e}"))
            if any(e in r.kinds[kind].clustered for r in rows if kind in r.kinds):
                cols += [Column(f"{kind}:{e}:{f}", "", markdown=False) for f in CLUSTERED_FIELDS]
    for name in sorted({a for r in rows for a in r.aux}):
        cols.append(Column(f"aux:{name}", name))
    if any(r.memory for r in rows):
        cols += [Column(f"memory:{name}", title) for name, title in MEMORY_COLUMNS]
    if any(r.agent for r in rows):
        cols += [Column(f"agent:{name}", title) for name, title in AGENT_COLUMNS]
    return cols


def is_wilson(rows: Sequence[Row], kind: str) -> bool:
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


def ordered_repeated(figures: Iterable[Mapping[str, float]]) -> list[str]:
    """The repeated-judging figures present: the shown ones first, then the rest sorted."""
    names = {n for f in figures for n in f}
    return [n for n in REPEATED_SHOWN if n in names] + sorted(names - set(REPEATED_SHOWN))


def csv_keys(rows: Sequence[Row]) -> list[str]:
    """The cell keys of the CSV, in column order (header and rows both follow it)."""
    usage = sorted({u for r in rows for u in r.usage})
    return [*(c.key for c in table_columns(rows)), *usage, "status", "log"]


def csv_name(key: str) -> str:
    """A cell key's CSV header (`f1:temporal:ci_lower` -> `f1_temporal_ci_lower`).

    Args:
        key: the cell key.

    Returns:
        The header.
    """
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
    keys = csv_keys(rows)
    out: list[dict[str, float | int | str | None]] = []
    for r in rows:
        record: dict[str, float | int | str | None] = {}
        for k in keys:
            value = cell_value(r, k)
            if is_undefined(value):
                value = None
            elif isinstance(value, float) and is_count(k) and value.is_integer():
                value = int(value)
            record[csv_name(k)] = value
        out.append(record)
    return out

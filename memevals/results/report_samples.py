"""The report's per-sample figures: scores by bucket of the records' analysis axes ("where
memory fails") and the question browser's data (every question, each run's reply and scores).

Pure functions over a `Report` (`report_data.build_report`): no markup; `report_page` draws them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memevals.core import statistics
from memevals.core.benchmark import AnalysisAxis
from memevals.results.formatting import score_title
from memevals.results.paired import flipped_rows
from memevals.results.report_data import TEXT_LIMIT, Report
from memevals.results.report_figures import DotChart, Mark, number
from memevals.results.rows import Row
from memevals.results.runs import Run

__all__ = ["AxisFigures", "FailureFigures", "QuestionFigures", "bucket", "failures", "questions"]


@dataclass(frozen=True)
class AxisFigures:
    """One analysis axis of one benchmark: the chart of every run's buckets (None: no run logs
    the axis's field), whether a bucket had too few clusters, the runs that do not log it."""

    title: str
    key: str
    chart: DotChart | None
    too_few: bool
    missing: list[str]
    #: the runs that log the field but have no scored sample of their score (all unscored)
    unscored: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FailureFigures:
    """A benchmark's analysis axes (declared False: its record declares none)."""

    benchmark: str
    declared: bool
    axes: list[AxisFigures]


@dataclass(frozen=True)
class QuestionFigures:
    """The question browser: its benchmark and run choices, and its two data blocks."""

    benchmarks: list[str]
    runs: list[str]
    #: runs, questions and the view folder (the page's `report-data` block)
    data: dict[str, Any]
    #: each distinct memory result once (the `report-items` block, read when a question opens)
    items: list[list[Any]]


def bucket(axis: AnalysisAxis, value: Any) -> str | None:
    """The bucket of one value on an analysis axis.

    Args:
        axis: the declared axis.
        value: the sample's metadata value.

    Returns:
        The bucket's name (`>= 3`, `3–5`), or None for a missing value.
    """
    if value is None or value == "":
        return None
    if not axis.edges:
        return str(value)
    figure = number(value)
    if figure is None:
        return None
    edges = list(axis.edges)
    at = max((i for i, e in enumerate(edges) if e <= figure), default=None)
    if at is None:
        return f"< {_edge(edges[0])}"
    if at == len(edges) - 1:
        return f"≥ {_edge(edges[at])}"
    upper = edges[at + 1] - 1 if _is_int(edges) else edges[at + 1]
    return f"{_edge(edges[at])}–{_edge(upper)}"


def _is_int(edges: Sequence[float]) -> bool:
    return all(float(e).is_integer() for e in edges)


def _edge(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _bucket_order(axis: AnalysisAxis, names: Iterable[str]) -> list[str]:
    if not axis.edges:
        return sorted(set(names))
    order: dict[str, int] = {}
    edges = list(axis.edges)
    for v in [edges[0] - 1, *edges]:
        b = bucket(axis, v)
        if b is not None:
            order.setdefault(b, len(order))
    return sorted(set(names), key=lambda n: order.get(n, len(order)))


def _axis_groups(
    run: Run, details: Mapping[str, Any], axis: AnalysisAxis, kind: str | None
) -> dict[str, list[tuple[float, str]]]:
    """A run's scored samples of one score by bucket of an analysis axis: (value, cluster)."""
    groups: dict[str, list[tuple[float, str]]] = {}
    for sid, s in run.samples.items():
        b = bucket(axis, details.get(sid, {}).get("metadata", {}).get(axis.key))
        value = s.scores.get(kind) if kind else None
        if b is None or value is None or not math.isfinite(value) or s.errored:
            continue
        groups.setdefault(b, []).append((value, s.cluster))
    return groups


def failures(report: Report) -> list[FailureFigures]:
    """Scores by bucket of each benchmark's analysis axes, with each bucket's clustered 95 %
    interval (per run: its first score).

    Args:
        report: the runs and their samples' details.

    Returns:
        One entry per benchmark, by name.
    """
    out = []
    for benchmark in sorted({r.benchmark for r in report.rows}):
        idx = [i for i, r in enumerate(report.runs) if r.benchmark == benchmark]
        record = report.runs[idx[0]].record
        if record is None or not record.analysis_axes:
            out.append(FailureFigures(benchmark, False, []))
            continue
        axes = [_axis_figures(report, benchmark, idx, axis) for axis in record.analysis_axes]
        out.append(FailureFigures(benchmark, True, axes))
    return out


def _axis_figures(
    report: Report, benchmark: str, idx: Sequence[int], axis: AnalysisAxis
) -> AxisFigures:
    too_few = False
    missing: list[str] = []
    unscored: list[str] = []
    marks = []
    for i in idx:
        run, row = report.runs[i], _row_of(report, report.runs[i])
        kind = next(iter(row.kinds), None) if row is not None else None
        groups = _axis_groups(run, report.details[i], axis, kind)
        if not groups:
            logged = any(
                bucket(axis, d.get("metadata", {}).get(axis.key)) is not None
                for d in report.details[i].values()
            )
            if logged:
                unscored.append(f"{run.label} ({score_title(kind or '')})")
            else:
                missing.append(run.label)
            continue
        for b in _bucket_order(axis, groups):
            values = groups[b]
            summary = statistics.summarize([v for v, _ in values], [c for _, c in values])
            too_few = too_few or summary.too_few_clusters
            series = f"{row.label if row else run.label} ({score_title(kind or '')})"
            marks.append(
                Mark(series, b, summary.mean, summary.interval.lower, summary.interval.upper)
            )
    chart = None
    if marks:
        unit = all(0.0 <= m.value <= 1.0 for m in marks)
        xlabel = f"score per bucket of {axis.title}"
        chart = DotChart(f"axis-{benchmark}-{axis.key}", marks, xlabel, unit=unit)
    return AxisFigures(axis.title, axis.key, chart, too_few, missing, unscored)


def _row_of(report: Report, run: Run) -> Row | None:
    return report.rows[report.runs.index(run)]


def _flipped_by_run(report: Report) -> dict[tuple[int, str], set[str]]:
    """(run index, sample id) -> the runs it flipped against, over every comparison."""
    flipped: dict[tuple[int, str], set[str]] = {}
    for c in report.comparisons:
        ia, ib = report.runs.index(c.a), report.runs.index(c.b)
        for f in flipped_rows(c):
            flipped.setdefault((ia, f["id"]), set()).add(c.name_b)
            flipped.setdefault((ib, f["id"]), set()).add(c.name_a)
    return flipped


def _questions_data(report: Report) -> dict[str, Any]:
    """The question browser's data: one entry per question (benchmark, id), each run's reply,
    scores, judge label, retrieved ids, a memory system's results and an agent's stored files
    (indices into one table, `items`, that holds each distinct result and file once)."""
    flipped = _flipped_by_run(report)
    questions: dict[tuple[str, str], dict[str, Any]] = {}
    items = _Items()
    runs = []
    for i, run in enumerate(report.runs):
        row = report.rows[i]
        kind = next(iter(row.kinds), None)
        runs.append(
            {
                "name": row.label,
                "benchmark": run.benchmark,
                "score": kind or "",
                "log": Path(run.path).name,
                "framework": run.framework,
            }
        )
        for sid, s in run.samples.items():
            d = report.details[i].get(sid, {})
            q = questions.setdefault(
                (run.benchmark, sid),
                {
                    "b": run.benchmark,
                    "id": sid,
                    "c": s.category,
                    "q": d.get("question", ""),
                    "gold": s.gold[:TEXT_LIMIT],
                    "ev": d.get("evidence", []),
                    "r": [],
                },
            )
            value = s.scores.get(kind) if kind else None
            q["r"].append(
                {
                    "run": i,
                    "reply": s.reply[:TEXT_LIMIT],
                    "s": value if value is not None and math.isfinite(value) else None,
                    "scores": {k: (v if math.isfinite(v) else None) for k, v in s.scores.items()},
                    "label": d.get("label", ""),
                    "ret": d.get("retrieved", []),
                    # each distinct item once in the page's table (a system retrieves the
                    # same turns and facts for many questions): here only its index
                    "mem": [items.index(m) for m in d.get("items", [])],
                    "err": s.errored,
                    "flip": sorted(flipped.get((i, sid), ())),
                }
            )
            if d.get("files"):  # an agent's stored memory: every question of a history shares it
                q["r"][-1]["files"] = [items.file_index(f) for f in d["files"]]
    return {
        "runs": runs,
        "questions": list(questions.values()),
        "items": items.entries,
        "view": report.view,
    }


@dataclass
class _Items:
    """The page's table of memory results, each distinct one once: [text, ids] or, for a text
    the log cut, [text, ids, whole length]; an agent's stored files too, [text, [], whole
    length, path]."""

    entries: list[list[Any]] = field(default_factory=list)
    at: dict[str, int] = field(default_factory=dict)

    def index(self, item: Mapping[str, Any]) -> int:
        return self._add([item["text"], item["ids"], *([item["chars"]] if item["chars"] else [])])

    def file_index(self, file: Mapping[str, Any]) -> int:
        """An agent's stored file: [text (as the log cut it), [], whole length, path]."""
        return self._add([file["text"], [], file["chars"], file["path"]])

    def _add(self, entry: list[Any]) -> int:
        key = json.dumps(entry, ensure_ascii=False)
        if key not in self.at:
            self.at[key] = len(self.entries)
            self.entries.append(entry)
        return self.at[key]


def questions(report: Report) -> QuestionFigures:
    """The question browser's choices and data: one entry per question (benchmark, id), each
    run's reply, scores, judge label, retrieved ids and a memory system's results.

    Args:
        report: the runs, their samples' details and comparisons (a question that flipped).

    Returns:
        The browser's figures.
    """
    data = _questions_data(report)
    # the memory results are read when a question is opened, not while the page loads
    items = data.pop("items")
    return QuestionFigures(
        benchmarks=sorted({r.benchmark for r in report.runs}),
        runs=[r.label for r in report.rows],
        data=data,
        items=items,
    )

"""The figures of the report's sections, computed from a `Report` (pure: no markup, no charts).

Each function takes the report (`report_data.build_report`) and returns plain dataclasses:
the leaderboard's cells with their intervals, each benchmark's marks and category grid, the
paired comparisons' rows and flipped questions, the cost points with their Pareto frontier
(the per-sample figures, analysis-axis buckets and the question browser, are `report_samples`').
Every number is memevals-compare's or memevals-diff's; `memevals.render.report_page` only lays
them out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memevals.core.benchmark import Benchmark
from memevals.results.formatting import score_title, too_few_note
from memevals.results.paired import Comparison, flipped_rows
from memevals.results.report_data import TEXT_LIMIT, Report
from memevals.results.rows import NO_JUDGE, Row, above_ceiling

__all__ = [
    "FLIPS_SHOWN",
    "BenchmarkFigures",
    "CostFigures",
    "CostPlot",
    "DotChart",
    "Flip",
    "GridCell",
    "GridRow",
    "Interval",
    "LeaderCell",
    "LeaderLine",
    "Leaderboard",
    "Mark",
    "PairedFigures",
    "PairedRow",
    "ScatterChart",
    "ScoreFigures",
    "anchor",
    "benchmarks",
    "cost",
    "finite",
    "grid_id",
    "leaderboard",
    "number",
    "paired",
    "pareto",
]

#: Flipped questions listed per comparison on the page (the count says how many there are).
FLIPS_SHOWN = 40
#: The memory systems' build-cost columns (`memory_figures` keys), in table order.
MEMORY_COLUMNS = (
    "system", "k", "latency_p50_s", "latency_p95_s", "histories", "ingestions", "cache_hits",
    "build_seconds", "build_model_calls", "build_llm_calls", "build_input_tokens",
    "build_output_tokens",
)  # fmt: skip
#: The agent mode's write-pass columns (`agent_figures` keys) of the cost section, in order.
AGENT_SHOWN = (
    "mode", "histories", "write_passes", "write_cached", "write_seconds", "write_model_calls",
    "write_input_tokens", "write_output_tokens", "write_tool_calls", "compactions",
    "memory_files", "memory_bytes", "answer_tool_calls",
)  # fmt: skip


def anchor(*parts: object) -> str:
    """An element id made of `parts` (letters, digits, `-` and `_` only).

    Args:
        parts: what the id names.

    Returns:
        The id.
    """
    return re.sub(r"[^A-Za-z0-9_-]", "_", "-".join(str(p) for p in parts))


@dataclass(frozen=True)
class Mark:
    """One dot with its whiskers: a series (run, comparison) at one position (category)."""

    series: str
    position: str
    value: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class DotChart:
    """A horizontal dot-and-whisker chart: one row per position, one mark per series there."""

    name: str
    marks: list[Mark]
    xlabel: str
    #: a line at 0 (differences) instead of the 0..1 axis of scores
    zero: bool = False
    #: every value within 0..1: the axis spans exactly that
    unit: bool = True


@dataclass(frozen=True)
class ScatterChart:
    """Score (y) against a cost (x), one point per run: (name, cost, score)."""

    name: str
    points: list[tuple[str, float, float]]
    #: the points nothing beats on both cost and score, cheapest first
    frontier: list[tuple[str, float, float]]
    xlabel: str
    ylabel: str
    log: bool


def finite(value: float | None) -> bool:
    """Whether `value` is a number to show (not None, not nan or infinite).

    Args:
        value: the figure.

    Returns:
        True for a finite number.
    """
    return value is not None and math.isfinite(value)


def pareto(points: Sequence[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """The points no other point beats on both cost (lower x) and score (higher y), by cost.

    Args:
        points: (name, cost, score).

    Returns:
        The frontier, cheapest first.
    """
    out: list[tuple[str, float, float]] = []
    best = -math.inf
    for p in sorted(points, key=lambda p: (p[1], -p[2])):
        if p[2] > best:
            out.append(p)
            best = p[2]
    return out


@dataclass(frozen=True)
class Interval:
    """A 95 % interval, or the clusters too few for one."""

    low: float | None
    high: float | None
    too_few: bool = False
    clusters: int = 0


@dataclass(frozen=True)
class LeaderCell:
    """One leaderboard cell: a run's mean of one benchmark score (value None: a dash)."""

    value: float | None
    interval: Interval | None = None
    unscored: float | None = None
    log: str = ""
    benchmark: str = ""
    kind: str = ""
    #: the id of the run's row in its benchmark's grid
    link: str = ""


@dataclass(frozen=True)
class LeaderLine:
    """One subject (model × context × protocol × judge) and its cells, one per column."""

    model: str
    context: str
    protocol: str
    judge: str
    cells: list[LeaderCell]


@dataclass(frozen=True)
class Leaderboard:
    """The leaderboard: (benchmark, score) columns, one line per subject, the warnings."""

    columns: list[tuple[str, str]]
    lines: list[LeaderLine]
    warnings: list[str]


@dataclass(frozen=True)
class GridCell:
    """A grid cell: a figure, its sample count, digits shown, coloured by score or not."""

    value: float | None
    n: int | None = None
    digits: int = 3
    coloured: bool = True


@dataclass(frozen=True)
class GridRow:
    """A run's row of a benchmark's grid (its id is what the leaderboard links to)."""

    id: str
    name: str
    cells: list[GridCell]


@dataclass(frozen=True)
class ScoreFigures:
    """One score of one benchmark: the chart (None: nothing to draw) and the grid."""

    kind: str
    chart: DotChart | None
    columns: list[str]
    rows: list[GridRow]


@dataclass(frozen=True)
class BenchmarkFigures:
    """A benchmark's section: its title and each score's figures."""

    benchmark: str
    title: str
    scores: list[ScoreFigures]


@dataclass(frozen=True)
class PairedRow:
    """One score and category of a comparison: memevals-diff's figures."""

    id: str
    score: str
    category: str
    n: int
    mean_a: float | None
    mean_b: float | None
    difference: float | None
    interval: Interval
    p_value: float | None
    holm_p: float | None
    mde: float | None
    a_better: int
    b_better: int


@dataclass(frozen=True)
class Flip:
    """A question whose score differs between the two runs of a comparison."""

    score: str
    question: str
    gold: str
    reply_a: str
    score_a: float
    label_a: str
    reply_b: str
    score_b: float
    label_b: str


@dataclass(frozen=True)
class PairedFigures:
    """One comparison: its runs, factor, forest plot, table and flipped questions."""

    index: int
    comparison: Comparison
    factor: str
    chart: DotChart | None
    rows: list[PairedRow]
    too_few: bool
    flips: list[Flip]
    flips_total: int


@dataclass(frozen=True)
class CostPlot:
    """A score against one cost of one benchmark (chart None: no dollars, for `reason`)."""

    benchmark: str
    kind: str
    xlabel: str
    chart: ScatterChart | None
    #: why there is no chart, in words that follow "no dollar chart: "
    reason: str = ""


@dataclass(frozen=True)
class CostFigures:
    """The cost section: the plots, whether any was drawn, the memory build-cost table and the
    agent write-pass table."""

    plots: list[CostPlot]
    drawn: bool
    memory_columns: tuple[str, ...]
    #: (run label, values in MEMORY_COLUMNS order), one per run with a memory system
    memory_rows: list[tuple[str, list[Any]]]
    #: the agent mode's write-pass columns (`agent_figures` keys)
    agent_columns: tuple[str, ...] = ()
    #: (run label, values in AGENT_SHOWN order), one per run of the agent mode
    agent_rows: list[tuple[str, list[Any]]] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Leaderboard


def _headline_kinds(rows: Sequence[Row]) -> list[tuple[str, str]]:
    """(benchmark, score) columns of the leaderboard: each benchmark's answer and judge
    scores in the record's order."""
    out: list[tuple[str, str]] = []
    for benchmark in sorted({r.benchmark for r in rows}):
        names: list[str] = []
        for r in (r for r in rows if r.benchmark == benchmark):
            for name in r.kinds:
                if name not in names and r.score_kinds.get(name.split("@", 1)[0]) != "retrieval":
                    names.append(name)
        out += [(benchmark, n) for n in names]
    return out


def leaderboard(report: Report) -> Leaderboard:
    """The leaderboard's columns, lines and warnings.

    Args:
        report: the runs.

    Returns:
        The leaderboard.
    """
    columns = _headline_kinds(report.rows)
    # one line per subject; a second run of one subject and benchmark (another task, such as
    # an lm-eval subtask) gets a line of its own rather than hiding the first
    subjects: list[tuple[tuple[str, str, str, str], dict[str, Row]]] = []
    for r in report.rows:
        subject = (r.model, r.context, r.protocol, r.judge)
        line = next((c for key, c in subjects if key == subject and r.benchmark not in c), None)
        if line is None:
            line = {}
            subjects.append((subject, line))
        line[r.benchmark] = r
    lines = [
        LeaderLine(*subject, [_leader_cell(report, cells.get(b), b, k) for b, k in columns])
        for subject, cells in subjects
    ]
    return Leaderboard(columns, lines, _leaderboard_warnings(report, columns))


def _leader_cell(report: Report, held: Row | None, benchmark: str, kind: str) -> LeaderCell:
    ks = held.kinds.get(kind) if held is not None else None
    summary = ks.clustered.get("") if ks is not None else None
    unscored = ks.extras.get("unscored") if ks is not None else None
    if held is None or ks is None or summary is None or not finite(ks.overall):
        return LeaderCell(None, unscored=unscored)
    interval = Interval(
        summary.interval.lower,
        summary.interval.upper,
        summary.too_few_clusters,
        summary.clusters,
    )
    return LeaderCell(
        ks.overall, interval, unscored, held.log, benchmark, kind, grid_id(report, held, kind)
    )


def _too_few_rows(report: Report) -> bool:
    """Whether a leaderboard or chart interval is left out for want of clusters."""
    return any(
        s.too_few_clusters for r in report.rows for ks in r.kinds.values()
        for s in ks.clustered.values()
    )  # fmt: skip


def _leaderboard_warnings(report: Report, columns: Sequence[tuple[str, str]]) -> list[str]:
    out = [too_few_note("clustered 95 % interval")] if _too_few_rows(report) else []
    for benchmark, kind in columns:
        rows = [r for r in report.rows if r.benchmark == benchmark and kind in r.kinds]
        judges = sorted({r.judge for r in rows if r.judge != NO_JUDGE})
        if len(judges) > 1 and any(r.score_kinds.get(kind) == "judge" for r in rows):
            out.append(
                f"{benchmark} {score_title(kind)}: rows judged by {len(judges)} different judges "
                f"({', '.join(judges)}); compare only rows with the same judge"
            )
        protocols = sorted({r.protocol for r in rows})
        if len(protocols) > 1:
            out.append(
                f"{benchmark} {score_title(kind)}: rows under different protocols "
                f"({', '.join(protocols)}): other prompts and judges, not one measurement"
            )
    for r in report.rows:
        flagged = above_ceiling(r)
        if flagged:
            out.append(
                f"{r.benchmark}, {r.label}: above the audited-gold ceiling ({'; '.join(flagged)})"
                ": the original gold is wrong on that share of questions"
            )
        for kind, ks in r.kinds.items():
            if ks.extras.get("unscored"):
                out.append(
                    f"{r.benchmark}, {r.label}: {ks.extras['unscored']:.0f} sample(s) left "
                    f"unscored by {score_title(kind)} (left out of its mean, never counted wrong)"
                )
    return out


# ---------------------------------------------------------------------------------------------
# Per benchmark


def _categories(record: Benchmark | None, rows: Sequence[Row], kind: str) -> list[str]:
    cats = {c for r in rows if kind in r.kinds for c in r.kinds[kind].categories}
    return sorted(cats, key=record.category_rank) if record else sorted(cats)


def grid_id(report: Report, row: Row, kind: str) -> str:
    """The id of a run's row in its benchmark's grid of one score (a leaderboard cell links
    to it).

    Args:
        report: the runs.
        row: the run's row.
        kind: the score.

    Returns:
        The element id.
    """
    return anchor("grid", row.benchmark, kind, report.rows.index(row))


def benchmarks(report: Report) -> list[BenchmarkFigures]:
    """Each benchmark's scores: the dot-and-whisker chart and the category grid.

    Args:
        report: the runs.

    Returns:
        One entry per benchmark, by name.
    """
    out = []
    for benchmark in sorted({r.benchmark for r in report.rows}):
        rows = [r for r in report.rows if r.benchmark == benchmark]
        record = rows[0].record
        kinds = list(dict.fromkeys(k for r in rows for k in r.kinds))
        scores = [_score_figures(report, rows, kind, record) for kind in kinds]
        out.append(BenchmarkFigures(benchmark, record.title if record else benchmark, scores))
    return out


def _score_figures(
    report: Report, rows: list[Row], kind: str, record: Benchmark | None
) -> ScoreFigures:
    cats = _categories(record, rows, kind)
    marks = []
    for r in rows:
        ks = r.kinds.get(kind)
        for cat in ["overall", *cats] if ks is not None else []:
            assert ks is not None
            s = ks.clustered.get("" if cat == "overall" else cat)
            if s is not None and finite(s.mean):
                marks.append(Mark(r.label, cat, s.mean, s.interval.lower, s.interval.upper))
    chart = None
    if marks:
        xlabel = f"{score_title(kind)} (dot: mean; whiskers: clustered 95 % interval)"
        unit = all(0.0 <= m.value <= 1.0 for m in marks)
        chart = DotChart(f"bench-{rows[0].benchmark}-{kind}", marks, xlabel, unit=unit)
    extras = sorted({e for r in rows if kind in r.kinds for e in r.kinds[kind].extras})
    grid = []
    for r in rows:
        ks = r.kinds.get(kind)
        if ks is None:
            continue
        cells = []
        for cat in ["overall", *cats]:
            value = ks.overall if cat == "overall" else ks.categories.get(cat)
            summary = ks.clustered.get("" if cat == "overall" else cat)
            cells.append(GridCell(value, summary.n if summary is not None else None))
        for e in extras:
            digits = 0 if e in ("unscored", "unclear") else 3
            cells.append(GridCell(ks.extras.get(e), digits=digits, coloured=False))
        grid.append(GridRow(grid_id(report, r, kind), r.label, cells))
    return ScoreFigures(kind, chart, ["run", "overall", *cats, *extras], grid)


# ---------------------------------------------------------------------------------------------
# Is B better than A?


def paired(report: Report, index: int, c: Comparison) -> PairedFigures:
    """One of memevals-diff's comparisons: its forest plot, table and flipped questions.

    Args:
        report: the runs.
        index: the comparison's place on the page (its chart and rows carry it).
        c: the comparison.

    Returns:
        Its figures.
    """
    marks: list[Mark] = []
    rows: list[PairedRow] = []
    for t in c.tables:
        for row in t.rows:
            res = row.result
            marks.append(Mark(t.score, row.category, res.difference, res.ci_low, res.ci_high))
            interval = Interval(res.ci_low, res.ci_high, res.too_few_clusters, res.clusters)
            rows.append(
                PairedRow(
                    anchor("diff", index, t.score, row.category), t.score, row.category,
                    res.n, res.mean_a, res.mean_b, res.difference, interval, res.p_value,
                    row.holm_p, res.mde, res.a_better, res.b_better,
                )
            )  # fmt: skip
    chart = None
    if marks:
        xlabel = "B − A (dot) with its 95 % cluster-bootstrap interval"
        kept = [m for m in marks if finite(m.value)]
        chart = DotChart(f"paired-{index}", kept, xlabel, zero=True)
    too_few = any(row.result.too_few_clusters for t in c.tables for row in t.rows)
    all_flips = flipped_rows(c)
    details_a = report.details[report.runs.index(c.a)]
    details_b = report.details[report.runs.index(c.b)]
    flips = [
        Flip(
            f["score"],
            details_a.get(f["id"], {}).get("question", f["id"]),
            f["gold"],
            f["reply_a"][:TEXT_LIMIT],
            f["score_a"],
            details_a.get(f["id"], {}).get("label", ""),
            f["reply_b"][:TEXT_LIMIT],
            f["score_b"],
            details_b.get(f["id"], {}).get("label", ""),
        )
        for f in all_flips[:FLIPS_SHOWN]
    ]
    factor = c.factor.name if c.factor else "none"
    return PairedFigures(index, c, factor, chart, rows, too_few, flips, len(all_flips))


# ---------------------------------------------------------------------------------------------
# Cost and speed


def _dollars(report: Report, row: Row) -> float | None:
    price = report.prices.get(row.model)
    if price is None or "input_tokens" not in row.usage:
        return None
    return (
        row.usage["input_tokens"] * price[0] + row.usage.get("output_tokens", 0) * price[1]
    ) / 1e6


def number(value: Any) -> float | None:
    """`value` as a float when it is a number (a metadata or memory figure), else None.

    Args:
        value: what was logged.

    Returns:
        The float, or None.
    """
    return float(value) if isinstance(value, int | float) else None


def cost(report: Report) -> CostFigures:
    """Each benchmark's first score against input tokens, dollars and memory latency, the
    memory systems' build cost and the agent mode's write passes (each history once).

    Args:
        report: the runs and the models' prices.

    Returns:
        The cost section's figures.
    """
    plots: list[CostPlot] = []
    drawn = False
    for benchmark in sorted({r.benchmark for r in report.rows}):
        rows = [r for r in report.rows if r.benchmark == benchmark and r.kinds]
        if not rows:
            continue
        kind = next(iter(rows[0].kinds))
        scored = [r for r in rows if kind in r.kinds and finite(r.kinds[kind].overall)]
        ylabel = f"{benchmark} {score_title(kind)}"
        for name, xlabel, points, log in _cost_axes(report, scored, kind):
            if points:
                drawn = True
                chart = ScatterChart(
                    f"cost-{benchmark}-{name}", points, pareto(points), xlabel, ylabel, log
                )
                plots.append(CostPlot(benchmark, kind, xlabel, chart))
            elif name == "dollars":
                plots.append(CostPlot(benchmark, kind, xlabel, None, _no_dollars(report, rows)))
    memory = [(r.label, [r.memory.get(c) for c in MEMORY_COLUMNS]) for r in report.rows if r.memory]
    agent = [(r.label, [r.agent.get(c) for c in AGENT_SHOWN]) for r in report.rows if r.agent]
    return CostFigures(plots, drawn, MEMORY_COLUMNS, memory, AGENT_SHOWN, agent)


def _no_dollars(report: Report, rows: list[Row]) -> str:
    """Why a benchmark gets no dollar chart: no price, a price for none of its models (a
    misspelt model would otherwise pass unsaid), or no token usage reported."""
    if not report.prices:
        return "no --price MODEL=IN,OUT given"
    models = sorted({r.model for r in rows})
    if not set(models) & set(report.prices):
        return (
            f"--price names none of its models ({', '.join(models)}); it was given for "
            + ", ".join(sorted(report.prices))
        )
    return "no priced run has both a score and the token usage its provider reported"


def _cost_axes(
    report: Report, scored: list[Row], kind: str
) -> list[tuple[str, str, list[tuple[str, float, float]], bool]]:
    """The cost charts of one benchmark's scored rows: (name, x label, points, log scale) for
    input tokens, dollars and memory latency p50 / p95."""
    axes: list[tuple[str, str, list[tuple[str, float, float]], bool]] = []
    tokens = [
        (r.label, float(r.usage["input_tokens"]), r.kinds[kind].overall or 0.0)
        for r in scored
        if r.usage.get("input_tokens")
    ]
    axes.append(("tokens", "input tokens (log scale)", tokens, True))
    dollars = [
        (r.label, d, r.kinds[kind].overall or 0.0)
        for r in scored
        if (d := _dollars(report, r)) is not None
    ]
    axes.append(("dollars", "dollars (log scale)", dollars, True))
    for pct in ("p50", "p95"):
        lat = [
            (r.label, 1000 * float(r.memory[f"latency_{pct}_s"]), r.kinds[kind].overall or 0.0)
            for r in scored
            if finite(number(r.memory.get(f"latency_{pct}_s")))
        ]
        axes.append((f"latency-{pct}", f"memory latency {pct} (ms)", lat, False))
    return axes

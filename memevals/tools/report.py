"""memevals-report: one self-contained HTML page that compares runs.

    memevals-report LOG_OR_DIR ... -o report.html [--baseline RUN] [--title T]
        [--price MODEL=IN,OUT ...]
    python -m memevals.tools.report logs/ lm-eval-out/ -o report.html

Runs are read by `memevals.tools.runs` (the reader of memevals-compare and memevals-diff);
every figure on the page is computed by their code: the leaderboard's and the per-benchmark
means and intervals are memevals-compare's rows (`row_from_run`), the paired differences are
memevals-diff's comparisons (`compare_runs`, `flipped_rows`), the memory figures compare's
`memory_figures`. What a page shows of a benchmark comes from its record (categories, scores
and their kinds, subgroups, macro average, analysis axes); this module names no benchmark.

The page is one file: the charts are matplotlib SVG written inline, the sort and filter code a
small script of our own, the data of the question browser one inline JSON block. It makes no
request at view time, so it opens from file:// and can be published or mailed as is. It is
written to a temporary file beside the output and renamed, so a failure leaves no half page.
"""

from __future__ import annotations

import argparse
import html
import io
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memevals.core import statistics
from memevals.core.benchmark import AnalysisAxis, Benchmark
from memevals.core.memory_harness import RESULT_CHARS, RESULTS_KEY, RESULTS_LOGGED
from memevals.tools.compare import (
    NO_JUDGE,
    Row,
    above_ceiling,
    disambiguate,
    row_from_run,
    too_few_note,
    too_few_text,
)
from memevals.tools.diff import (
    EXPLICIT_FACTORS,
    Comparison,
    compare_runs,
    factors_of,
    find_mismatches,
    flipped_rows,
)
from memevals.tools.runs import Run, RunError, is_compared, load_runs

__all__ = ["Report", "ReportError", "build_report", "main", "parse_price", "render_html"]

PROG = "memevals-report"
#: The sections, in page order: (anchor, title).
SECTIONS = (
    ("leaderboard", "Leaderboard"),
    ("benchmarks", "Per benchmark"),
    ("paired", "Is B better than A?"),
    ("cost", "Cost and speed"),
    ("failures", "Where memory fails"),
    ("questions", "Every question"),
)
#: A reply or question longer than this is cut in the question browser (the log has it all).
TEXT_LIMIT = 2000
#: Flipped questions listed per comparison on the page (the count says how many there are).
FLIPS_SHOWN = 40


class ReportError(ValueError):
    """Input the report cannot be made of (the message says which and what to do)."""


@dataclass
class Report:
    """Everything the page shows, computed once."""

    title: str
    runs: list[Run]
    rows: list[Row]
    comparisons: list[Comparison]
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: run index -> sample id -> details (question, metadata fields, judge label)
    details: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    view: str | None = None


# ---------------------------------------------------------------------------------------------
# Input


def parse_price(text: str) -> tuple[str, tuple[float, float]]:
    """`MODEL=IN,OUT` (dollars per million input and output tokens).

    Args:
        text: the option's value.

    Returns:
        (model, (input price, output price)).
    """
    model, sep, rest = text.partition("=")
    parts = rest.split(",")
    try:
        if not sep or not model or len(parts) != 2:
            raise ValueError
        prices = (float(parts[0]), float(parts[1]))
    except ValueError:
        raise ReportError(
            f"--price {text!r}: expected MODEL=IN,OUT in dollars per million tokens, "
            "e.g. openai/gpt-4o-mini=0.15,0.60"
        ) from None
    return model, prices


def _details(run: Run) -> dict[str, dict[str, Any]]:
    """Per sample: the question, the evidence and retrieved ids, the judge's label (what the
    question browser shows beside the reply). Inspect: read from the log's samples; lm-eval:
    the documents' metadata, which the reader keeps in sample order."""
    out: dict[str, dict[str, Any]] = {}
    if run.framework == "inspect":
        from inspect_ai.log import read_eval_log

        log = read_eval_log(run.path)
        for sample in log.samples or []:
            sid = str(sample.id)
            if sid in out:
                continue
            labels = [
                str(s.metadata["label"])
                for s in (sample.scores or {}).values()
                if s.metadata and s.metadata.get("label") is not None
            ]
            question = sample.input if isinstance(sample.input, str) else ""
            out[sid] = _detail(sample.metadata or {}, question, labels)
    else:
        for sid, md in zip(run.samples, run.epoch_metadata, strict=False):
            out[sid] = _detail(md, "", [])
    return out


def _ids(value: Any) -> list[str]:
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return []


def _detail(md: Mapping[str, Any], fallback: str, labels: list[str]) -> dict[str, Any]:
    question = md.get("question") if isinstance(md.get("question"), str) else fallback
    return {
        "question": str(question or "")[-TEXT_LIMIT:],
        "evidence": _ids(md.get("evidence_ids") or md.get("evidence")),
        "retrieved": _ids(md.get("retrieved_ids")),
        "items": _items(md.get(RESULTS_KEY)),
        "label": ", ".join(labels),
        "metadata": md,
    }


def _items(value: Any) -> list[dict[str, Any]]:
    """A memory system's logged results (`memory_harness.logged_results`), as far as they are
    well formed: text, cited ids, and the whole length when the log cut the text."""
    out: list[dict[str, Any]] = []
    for entry in value if isinstance(value, list) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get("text"), str):
            out.append(
                {
                    "text": entry["text"],
                    "ids": _ids(entry.get("ids")),
                    "chars": entry.get("chars") if isinstance(entry.get("chars"), int) else None,
                }
            )
    return out


def _match(run: Run, wanted: str) -> bool:
    return wanted in (run.path, Path(run.path).name, run.label) or Path(run.path) == Path(wanted)


def _comparisons(
    runs: Sequence[Run], baseline: str | None, resamples: int, seed: int
) -> tuple[list[Comparison], list[str]]:
    """memevals-diff's comparisons: the baseline against every run of its benchmark, else
    every pair that differs in exactly one declared factor and nothing else (what memevals-diff
    compares without --allow-mismatch)."""
    notes: list[str] = []
    pairs: list[tuple[Run, Run]] = []
    if baseline is not None:
        base = [r for r in runs if _match(r, baseline)]
        if not base:
            raise ReportError(
                f"--baseline {baseline!r}: no run has that path, file name or label; "
                "the runs are: " + "; ".join(r.path for r in runs)
            )
        pairs = [(b, r) for b in base for r in runs if r is not b and r.benchmark == b.benchmark]
    else:
        for i, a in enumerate(runs):
            for b in runs[i + 1 :]:
                if a.benchmark != b.benchmark:
                    continue
                shared = [n for n in a.score_names if n in b.score_names]
                differences = find_mismatches(a, b, shared)
                factors = factors_of(a, b, differences)
                fair = all(m.factor is not None for m in differences)
                if len(factors) == 1 and fair and factors[0].name not in EXPLICIT_FACTORS:
                    pairs.append((a, b))
    out = []
    for a, b in pairs:
        c = compare_runs(a, b, resamples=resamples, seed=seed)
        if c.mismatches:
            why = "; ".join(str(m) for m in c.mismatches)
            notes.append(f"{a.label} vs {b.label}: not compared, the runs differ in {why}")
            continue
        out.append(c)
    return out, notes


def _scored_runs(paths: Sequence[str]) -> tuple[list[tuple[Run, Row]], list[Run]]:
    """The runs with a score to compare (each with its table row), and the failed runs."""
    if not paths:
        raise ReportError("no runs given: name Inspect logs, lm-eval samples files or folders")
    runs = load_runs(paths)
    failed = [r for r in runs if not r.has_results]
    kept: list[tuple[Run, Row]] = []
    for run in runs:
        row = row_from_run(run) if run.has_results else None
        if row is not None:
            kept.append((run, row))
    if not kept:
        raise ReportError(
            f"none of the {len(runs)} run(s) has results (a failed or cancelled run): "
            + "; ".join(f"{r.path} (status {r.status})" for r in failed)
        )
    scored = [
        (r, w) for r, w in kept if any(is_compared(r.kinds.get(k), r.record) for k in w.kinds)
    ]
    if not scored:
        raise ReportError(
            "the runs have no answer, judge or retrieval score to compare "
            "(are these logs of memevals tasks?): " + "; ".join(r.path for r, _ in kept)
        )
    return scored, failed


def build_report(
    paths: Sequence[str],
    *,
    title: str = "memevals report",
    baseline: str | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    view: str | None = None,
) -> Report:
    """Read the runs and compute everything the page shows.

    Args:
        paths: Inspect logs, lm-eval samples files, or folders of either.
        title: the page title.
        baseline: the run (path, file name or label) every other run is compared with;
            None: every pair differing in exactly one declared factor.
        prices: model -> (dollars per million input tokens, per million output tokens).
        resamples: bootstrap resamples of the paired differences.
        seed: seed of the resampling.
        view: the folder of an Inspect View bundle, relative to the page, to link samples into.

    Returns:
        The report.
    """
    scored, failed = _scored_runs(paths)
    rows = [w for _, w in scored]
    disambiguate(rows)
    runs = [r for r, _ in scored]
    comparisons, notes = _comparisons(runs, baseline, resamples, seed)
    notes += [f"{r.path}: no results (status {r.status}); left out" for r in failed]
    return Report(
        title=title,
        runs=runs,
        rows=rows,
        comparisons=comparisons,
        prices=dict(prices or {}),
        details=[_details(r) for r in runs],
        notes=notes,
        view=view,
    )


# ---------------------------------------------------------------------------------------------
# Charts (matplotlib SVG, inline)


def _plt() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ReportError('the charts need matplotlib: pip install "memevals[report]"') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # text as text (small, selectable, searchable), reproducible ids
    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["svg.hashsalt"] = "memevals-report"
    return plt


def _svg(fig: Any, chart: str) -> str:
    plt = _plt()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    # matplotlib's Dublin Core block (creator, date) says nothing the page needs
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    return f'<div class="chart" data-chart="{html.escape(chart)}">{text}</div>'


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


@dataclass(frozen=True)
class _Mark:
    """One dot with its whiskers: a series (run, comparison) at one position (category)."""

    series: str
    position: str
    value: float
    low: float | None
    high: float | None


def _dot_whisker(
    marks: Sequence[_Mark], chart: str, xlabel: str, zero: bool = False, unit: bool = True
) -> str:
    """Horizontal dot-and-whisker chart: one row per position, one mark per series there; each
    mark is one SVG group `mark-...` (a dot and its interval)."""
    plt = _plt()
    positions = list(dict.fromkeys(m.position for m in marks))
    series = list(dict.fromkeys(m.series for m in marks))
    height = max(2.0, 0.32 * len(positions) * max(1, min(len(series), 4)) + 1.2)
    fig, ax = plt.subplots(figsize=(7.5, height))
    step = 0.7 / max(1, len(series))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, m in enumerate(marks):
        s = series.index(m.series)
        y = positions.index(m.position) + (s - (len(series) - 1) / 2) * step
        err = None
        if _finite(m.low) and _finite(m.high):
            assert m.low is not None and m.high is not None
            err = [[max(0.0, m.value - m.low)], [max(0.0, m.high - m.value)]]
        eb = ax.errorbar(
            [m.value],
            [y],
            xerr=err,
            fmt="o",
            color=colours[s % len(colours)],
            capsize=3,
            markersize=5,
            label=m.series if m is next(x for x in marks if x.series == m.series) else None,
        )
        eb.lines[0].set_gid(f"mark-{chart}-{i}")
    ax.set_yticks(range(len(positions)))
    ax.set_yticklabels(positions)
    ax.invert_yaxis()
    if zero:
        ax.axvline(0.0, color="black", linewidth=0.8)
    elif unit:
        ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.5 / height), ncol=1)
    return _svg(fig, chart)


def _scatter(
    points: Sequence[tuple[str, float, float]], chart: str, xlabel: str, ylabel: str, log: bool
) -> str:
    """Score (y) against a cost (x), one mark per run, the Pareto frontier (nothing both cheaper
    and better) joined by a line."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, x, y) in enumerate(points):
        (line,) = ax.plot([x], [y], "o", color=colours[i % len(colours)], label=name)
        line.set_gid(f"mark-{chart}-{i}")
    front = pareto(points)
    if len(front) > 1:
        ax.plot([p[1] for p in front], [p[2] for p in front], "--", color="grey", linewidth=1)
    for p in front:
        ax.annotate("Pareto", (p[1], p[2]), fontsize=6, xytext=(4, 4), textcoords="offset points")
    if log and all(p[1] > 0 for p in points):
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1)
    return _svg(fig, chart)


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


# ---------------------------------------------------------------------------------------------
# HTML pieces


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _num(value: float | int | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def _value_attr(value: float | int | None) -> str:
    """The exact figure for sorting and checking (repr: what Python's CSV writer writes)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return repr(float(value)) if isinstance(value, float) else str(value)


def _ci_glyph(mean: float, low: float | None, high: float | None) -> str:
    """A small inline dot with whiskers on a 0..1 scale (the leaderboard's cells)."""
    w = 110

    def x(v: float) -> float:
        return 5 + max(0.0, min(1.0, v)) * (w - 10)

    whisker = ""
    if _finite(low) and _finite(high):
        assert low is not None and high is not None
        whisker = f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="7" y2="7" class="wh"/>'
    return (
        f'<svg class="ci" width="{w}" height="14" aria-hidden="true">'
        f'<line x1="5" x2="{w - 5}" y1="7" y2="7" class="axis"/>{whisker}'
        f'<circle cx="{x(mean):.1f}" cy="7" r="3.5"/></svg>'
    )


def _row_name(row: Row) -> str:
    return row.label


def _kind_title(kind: str) -> str:
    return "F1" if kind == "f1" else kind


def _headline_kinds(rows: Sequence[Row]) -> list[tuple[str, str]]:
    """(benchmark, score) columns of the leaderboard: each benchmark's answer and judge
    scores in the record's order."""
    out: list[tuple[str, str]] = []
    for benchmark in sorted({r.benchmark for r in rows}):
        sub = [r for r in rows if r.benchmark == benchmark]
        names: list[str] = []
        for r in sub:
            for name in r.kinds:
                if name not in names and r.score_kinds.get(name.split("@", 1)[0]) != "retrieval":
                    names.append(name)
        out += [(benchmark, n) for n in names]
    return out


def _subject(row: Row) -> tuple[str, str, str, str]:
    return (row.model, row.context, row.protocol, row.judge)


def _leaderboard(report: Report) -> str:
    rows = report.rows
    columns = _headline_kinds(rows)
    # one line per subject; a second run of one subject and benchmark (another task, such as
    # an lm-eval subtask) gets a line of its own rather than hiding the first
    subjects: list[tuple[tuple[str, str, str, str], dict[str, Row]]] = []
    for r in rows:
        line = next(
            (cells for key, cells in subjects if key == _subject(r) and r.benchmark not in cells),
            None,
        )
        if line is None:
            line = {}
            subjects.append((_subject(r), line))
        line[r.benchmark] = r
    head = "".join(
        f'<th data-sort="{i + 4}" class="num">{_e(b)}<br>{_e(_kind_title(k))} <small>mean '
        "[95 % CI]</small></th>"
        for i, (b, k) in enumerate(columns)
    )
    body = []
    for subject, cells in subjects:
        model, context, protocol, judge = subject
        tds = [
            f"<td>{_e(model)}</td><td>{_e(context)}</td><td>{_e(protocol)}</td><td>{_e(judge)}</td>"
        ]
        tds += [_leaderboard_cell(report, cells.get(b), b, k) for b, k in columns]
        body.append("<tr>" + "".join(tds) + "</tr>")
    warnings = _leaderboard_warnings(report, columns)
    return (
        "<p>One row per subject (model × context or memory system × protocol × judge), one "
        "column per benchmark score: the mean over its samples and the 95 % interval "
        "clustered by the record's cluster (a judge's accuracy: the clustered Wilson "
        "interval), as memevals-compare computes them. Click a header to sort, a mean to see "
        "its run's categories.</p>"
        '<table id="leaderboard-table" class="sortable"><thead><tr>'
        '<th data-sort="0">model</th><th data-sort="1">context</th>'
        '<th data-sort="2">protocol</th><th data-sort="3">judge</th>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        + ("".join(f'<p class="warn">⚠ {_e(w)}</p>' for w in warnings))
    )


def _leaderboard_cell(report: Report, held: Row | None, benchmark: str, kind: str) -> str:
    """One leaderboard cell: the mean with its interval glyph and link, or a dash."""
    ks = held.kinds.get(kind) if held is not None else None
    summary = ks.clustered.get("") if ks is not None else None
    if held is None or ks is None or summary is None or not _finite(ks.overall):
        unscored = ks.extras.get("unscored") if ks is not None else None
        note = f" ({_num(unscored, 0)} unscored)" if unscored else ""
        return f'<td class="num" data-value="">–{_e(note)}</td>'
    assert ks.overall is not None
    low, high = summary.interval.lower, summary.interval.upper
    flags = []
    if ks.extras.get("unscored"):
        flags.append(f"{_num(ks.extras['unscored'], 0)} unscored")
    return (
        f'<td class="num" data-value="{_value_attr(ks.overall)}" '
        f'data-low="{_value_attr(low)}" data-high="{_value_attr(high)}" '
        f'data-log="{_e(held.log)}" data-benchmark="{_e(benchmark)}" '
        f'data-kind="{_e(kind)}">'
        f'{_ci_glyph(ks.overall, low, high)}<a href="#{_grid_id(held, kind, report)}">'
        f'<span class="v">{_num(ks.overall)}</span></a> '
        f"<small>{_interval_html(summary.too_few_clusters, summary.clusters, low, high)}</small>"
        + (f' <span class="warn">{_e("; ".join(flags))}</span>' if flags else "")
        + "</td>"
    )


def _interval_html(too_few: bool, clusters: int, low: float | None, high: float | None) -> str:
    """`[low, high]`, or `too few clusters (n)` where the clusters are too few for one."""
    return _e(too_few_text(clusters)) if too_few else f"[{_num(low)}, {_num(high)}]"


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
                f"{benchmark} {_kind_title(kind)}: rows judged by {len(judges)} different judges "
                f"({', '.join(judges)}); compare only rows with the same judge"
            )
        protocols = sorted({r.protocol for r in rows})
        if len(protocols) > 1:
            out.append(
                f"{benchmark} {_kind_title(kind)}: rows under different protocols "
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
                    f"unscored by {_kind_title(kind)} (left out of its mean, never counted wrong)"
                )
    return out


def _colour(value: float | None) -> str:
    if not _finite(value):
        return ""
    assert value is not None
    hue = 120 * max(0.0, min(1.0, value))
    return f' style="background:hsl({hue:.0f},60%,85%)"'


def _benchmarks(report: Report) -> str:
    parts = []
    for benchmark in sorted({r.benchmark for r in report.rows}):
        rows = [r for r in report.rows if r.benchmark == benchmark]
        record = rows[0].record
        title = record.title if record else benchmark
        parts.append(f'<h3 id="bench-{_e(benchmark)}">{_e(title)}</h3>')
        kinds = list(dict.fromkeys(k for r in rows for k in r.kinds))
        for kind in kinds:
            cats = _categories(record, rows, kind)
            marks = []
            for r in rows:
                ks = r.kinds.get(kind)
                if ks is None:
                    continue
                for cat in ["overall", *cats]:
                    summary = ks.clustered.get("" if cat == "overall" else cat)
                    if summary is not None and _finite(summary.mean):
                        marks.append(
                            _Mark(
                                _row_name(r),
                                cat,
                                summary.mean,
                                summary.interval.lower,
                                summary.interval.upper,
                            )
                        )
            unit = all(0.0 <= m.value <= 1.0 for m in marks)
            if marks:
                parts.append(f"<h4>{_e(_kind_title(kind))}</h4>")
                parts.append(
                    _dot_whisker(
                        marks,
                        f"bench-{benchmark}-{kind}",
                        f"{_kind_title(kind)} (dot: mean; whiskers: clustered 95 % interval)",
                        unit=unit,
                    )
                )
            parts.append(_grid(rows, kind, cats, report))
    return "".join(parts)


def _categories(record: Benchmark | None, rows: Sequence[Row], kind: str) -> list[str]:
    cats = {c for r in rows if kind in r.kinds for c in r.kinds[kind].categories}
    return sorted(cats, key=record.category_rank) if record else sorted(cats)


def _anchor(*parts: object) -> str:
    """An element id made of `parts` (letters, digits, `-` and `_` only)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", "-".join(str(p) for p in parts))


def _grid_id(row: Row, kind: str, report: Report) -> str:
    """The id of a run's row in its benchmark's grid of one score (a leaderboard cell links
    to it)."""
    return _anchor("grid", row.benchmark, kind, report.rows.index(row))


def _grid(rows: Sequence[Row], kind: str, cats: Sequence[str], report: Report) -> str:
    """The category × run grid coloured by score, with subgroups, macro average and the
    judge's unscored and unclear counts; each run's row has an id the leaderboard links to."""
    extras = sorted({e for r in rows if kind in r.kinds for e in r.kinds[kind].extras})
    head = "".join(f"<th>{_e(c)}</th>" for c in ["run", "overall", *cats, *extras])
    body = []
    for r in rows:
        ks = r.kinds.get(kind)
        if ks is None:
            continue
        cells = [f"<td>{_e(_row_name(r))}</td>"]
        for cat in ["overall", *cats]:
            value = ks.overall if cat == "overall" else ks.categories.get(cat)
            summary = ks.clustered.get("" if cat == "overall" else cat)
            n = f" <small>n={summary.n}</small>" if summary is not None else ""
            cells.append(
                f'<td class="num" data-value="{_value_attr(value)}"{_colour(value)}>'
                f"{_num(value)}{n}</td>"
            )
        for e in extras:
            value = ks.extras.get(e)
            digits = 0 if e in ("unscored", "unclear") else 3
            cells.append(
                f'<td class="num" data-value="{_value_attr(value)}">{_num(value, digits)}</td>'
            )
        body.append(f'<tr id="{_grid_id(r, kind, report)}">' + "".join(cells) + "</tr>")
    return (
        f'<table class="grid"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def _paired(report: Report) -> str:
    if not report.comparisons:
        why = (
            "no two runs of one benchmark differ in exactly one declared factor (model, context "
            "settings, memory system) with everything else equal; pass --baseline RUN to "
            "compare one run with every other"
        )
        return f'<p class="none">No paired comparison: {_e(why)}.</p>' + "".join(
            f"<p class='warn'>{_e(n)}</p>" for n in report.notes
        )
    parts = [
        "<p>Each comparison is memevals-diff's: questions paired by id, B − A per score and "
        "category with its cluster-bootstrap 95 % interval, the paired test's p-value (Holm-"
        "adjusted across categories), the minimum detectable difference (80 % power), and "
        "the questions that flipped.</p>"
    ]
    for ci, c in enumerate(report.comparisons):
        factor = c.factor.name if c.factor else "none"
        parts.append(
            f'<h3 class="comparison" data-a="{_e(c.a.path)}" data-b="{_e(c.b.path)}">'
            f"{_e(c.a.benchmark)}: A = {_e(c.name_a)} vs B = "
            f"{_e(c.name_b)} <small>(factor: {_e(factor)}; protocol {_e(c.a.protocol)})"
            "</small></h3>"
        )
        marks, rows_html = _paired_rows(ci, c)
        if marks:
            parts.append(
                _dot_whisker(
                    [m for m in marks if _finite(m.value)],
                    f"paired-{ci}",
                    "B − A (dot) with its 95 % cluster-bootstrap interval",
                    zero=True,
                )
            )
        parts.append(
            "<table class='paired'><thead><tr><th>score</th><th>category</th><th>n</th>"
            "<th>mean A</th><th>mean B</th><th>B − A</th><th>95 % CI</th><th>p</th>"
            "<th>p (Holm)</th><th>MDE</th><th>A better</th><th>B better</th></tr></thead>"
            f"<tbody>{''.join(rows_html)}</tbody></table>"
        )
        if any(row.result.too_few_clusters for t in c.tables for row in t.rows):
            note = too_few_note("95 % interval or minimum detectable difference")
            parts.append(f"<p class='warn'>{_e(note)}</p>")
        parts.append(_flips_html(report, c))
    parts += [f"<p class='warn'>{_e(n)}</p>" for n in report.notes]
    return "".join(parts)


def _paired_rows(ci: int, c: Comparison) -> tuple[list[_Mark], list[str]]:
    """The chart marks and table rows of one comparison: one per score and category."""
    marks: list[_Mark] = []
    rows_html: list[str] = []
    for t in c.tables:
        for row in t.rows:
            res = row.result
            marks.append(_Mark(t.score, row.category, res.difference, res.ci_low, res.ci_high))
            rows_html.append(
                f"<tr class='diff' id='{_anchor('diff', ci, t.score, row.category)}' "
                f"data-c='{ci}' "
                f"data-score='{_e(t.score)}' data-category='{_e(row.category)}' "
                f"data-difference='{_value_attr(res.difference)}' "
                f"data-low='{_value_attr(res.ci_low)}' data-high='{_value_attr(res.ci_high)}' "
                f"data-p='{_value_attr(res.p_value)}' data-holm='{_value_attr(row.holm_p)}' "
                f"data-mde='{_value_attr(res.mde)}'>"
                f"<td>{_e(t.score)}</td><td>{_e(row.category)}</td><td class='num'>{res.n}</td>"
                f"<td class='num'>{_num(res.mean_a)}</td>"
                f"<td class='num'>{_num(res.mean_b)}</td>"
                f"<td class='num'>{_num(res.difference)}</td>"
                "<td class='num'>"
                f"{_interval_html(res.too_few_clusters, res.clusters, res.ci_low, res.ci_high)}"
                "</td>"
                f"<td class='num'>{_num(res.p_value, 4)}</td>"
                f"<td class='num'>{_num(row.holm_p, 4)}</td><td class='num'>{_num(res.mde)}"
                f"</td><td class='num'>{res.a_better}</td><td class='num'>{res.b_better}</td>"
                "</tr>"
            )
    return marks, rows_html


def _flips_html(report: Report, c: Comparison) -> str:
    """The flipped questions of one comparison (the first FLIPS_SHOWN), folded."""
    flips = flipped_rows(c)
    parts = [f"<details><summary>{len(flips)} flipped question(s)</summary>"]
    if flips:
        parts.append(
            "<table class='flips'><thead><tr><th>score</th><th>question</th><th>gold</th>"
            "<th>reply A</th><th>A</th><th>reply B</th><th>B</th></tr></thead><tbody>"
        )
        details_a = report.details[report.runs.index(c.a)]
        details_b = report.details[report.runs.index(c.b)]
        for f in flips[:FLIPS_SHOWN]:
            q = details_a.get(f["id"], {}).get("question", f["id"])
            la = details_a.get(f["id"], {}).get("label", "")
            lb = details_b.get(f["id"], {}).get("label", "")
            parts.append(
                f"<tr><td>{_e(f['score'])}</td><td>{_e(q)}</td><td>{_e(f['gold'])}</td>"
                f"<td>{_e(f['reply_a'][:TEXT_LIMIT])}</td>"
                f"<td>{_num(f['score_a'])} {_e(la)}</td>"
                f"<td>{_e(f['reply_b'][:TEXT_LIMIT])}</td>"
                f"<td>{_num(f['score_b'])} {_e(lb)}</td>"
                "</tr>"
            )
        parts.append("</tbody></table>")
        if len(flips) > FLIPS_SHOWN:
            parts.append(
                f"<p>… {len(flips) - FLIPS_SHOWN} more: filter the question table by "
                "<em>flipped</em>, or run memevals-diff --flips.</p>"
            )
    parts.append("</details>")
    return "".join(parts)


def _dollars(report: Report, row: Row) -> float | None:
    price = report.prices.get(row.model)
    if price is None or "input_tokens" not in row.usage:
        return None
    return (
        row.usage["input_tokens"] * price[0] + row.usage.get("output_tokens", 0) * price[1]
    ) / 1e6


def _cost(report: Report) -> str:
    parts = [
        "<p>Each benchmark's first score against what it cost: the model's input tokens (as "
        "the provider reported them), dollars when --price gives the model's price, and a "
        "memory system's retrieval latency. The dashed line joins the Pareto frontier: the runs "
        "no other run beats on both cost and score. A run off the frontier is dominated; a few "
        "points more at many times the cost sit far right on the logarithmic axis.</p>"
    ]
    drawn = False
    for benchmark in sorted({r.benchmark for r in report.rows}):
        rows = [r for r in report.rows if r.benchmark == benchmark and r.kinds]
        if not rows:
            continue
        kind = next(iter(rows[0].kinds))
        scored = [r for r in rows if kind in r.kinds and _finite(r.kinds[kind].overall)]
        ylabel = f"{benchmark} {_kind_title(kind)}"
        axes = _cost_axes(report, scored, kind)
        for name, xlabel, points, log in axes:
            if points:
                drawn = True
                parts.append(f"<h4>{_e(benchmark)}: {_e(_kind_title(kind))} vs {_e(xlabel)}</h4>")
                parts.append(_scatter(points, f"cost-{benchmark}-{name}", xlabel, ylabel, log))
            elif name == "dollars" and not report.prices:
                parts.append(
                    f"<p class='none'>{_e(benchmark)}: no dollar chart: no --price "
                    "MODEL=IN,OUT given.</p>"
                )
    if not drawn:
        parts.append("<p class='none'>No run reported its token usage or memory latency.</p>")
    parts.append(_memory_cost_table(report))
    return "".join(parts)


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
            if _finite(_float(r.memory.get(f"latency_{pct}_s")))
        ]
        axes.append((f"latency-{pct}", f"memory latency {pct} (ms)", lat, False))
    return axes


def _memory_cost_table(report: Report) -> str:
    """The memory systems' build cost, one row per run with a memory system ("" without)."""
    memory_rows = [r for r in report.rows if r.memory]
    if not memory_rows:
        return ""
    cols = [
        "system",
        "k",
        "latency_p50_s",
        "latency_p95_s",
        "histories",
        "ingestions",
        "cache_hits",
        "build_seconds",
        "build_model_calls",
        "build_llm_calls",
        "build_input_tokens",
        "build_output_tokens",
    ]
    head = "".join(f"<th>{_e(c)}</th>" for c in ["run", *cols])
    body = "".join(
        "<tr><td>"
        + _e(r.label)
        + "</td>"
        + "".join(f"<td class='num'>{_e(_shown(r.memory.get(c)))}</td>" for c in cols)
        + "</tr>"
        for r in memory_rows
    )
    return (
        "<h4>Memory build cost</h4><p>For the histories this run ingested (each once; a "
        "cache hit was built by an earlier run): seconds, memory-model and the system's "
        "own LLM calls, tokens.</p>"
        f"<table class='memory'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return _num(value, 4)
    return "–" if value is None else str(value)


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
    number = _float(value)
    if number is None:
        return None
    edges = list(axis.edges)
    at = max((i for i, e in enumerate(edges) if e <= number), default=None)
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


def _failures(report: Report) -> str:
    parts = [
        "<p>Scores broken down by the analysis axes each benchmark's record declares (how far "
        "back the evidence lies, how long the history is), with the clustered 95 % interval of "
        "each bucket. A run whose samples do not log an axis's field gets no chart for it.</p>"
    ]
    for benchmark in sorted({r.benchmark for r in report.rows}):
        idx = [i for i, r in enumerate(report.runs) if r.benchmark == benchmark]
        record = report.runs[idx[0]].record
        if record is None or not record.analysis_axes:
            parts.append(
                f"<p class='none'>{_e(benchmark)}: its record declares no analysis "
                "axes, so there is no breakdown.</p>"
            )
            continue
        for axis in record.analysis_axes:
            charted = too_few = False
            missing = []
            marks = []
            for i in idx:
                run, row = report.runs[i], _row_of(report, report.runs[i])
                kind = next(iter(row.kinds), None) if row is not None else None
                groups = _axis_groups(run, report.details[i], axis, kind)
                if not groups:
                    missing.append(run.label)
                    continue
                for b in _bucket_order(axis, groups):
                    values = groups[b]
                    summary = statistics.summarize([v for v, _ in values], [c for _, c in values])
                    too_few = too_few or summary.too_few_clusters
                    series = f"{row.label if row else run.label} ({_kind_title(kind or '')})"
                    marks.append(
                        _Mark(
                            series, b, summary.mean, summary.interval.lower, summary.interval.upper
                        )
                    )
                charted = True
            if charted:
                parts.append(f"<h4>{_e(benchmark)}: by {_e(axis.title)}</h4>")
                unit = all(0.0 <= m.value <= 1.0 for m in marks)
                parts.append(
                    _dot_whisker(
                        marks,
                        f"axis-{benchmark}-{axis.key}",
                        f"score per bucket of {axis.title}",
                        unit=unit,
                    )
                )
                if too_few:  # a bucket's dot without whiskers
                    note = too_few_note("clustered 95 % interval")
                    parts.append(f"<p class='none'>{_e(note)}</p>")
            if missing:
                parts.append(
                    f"<p class='none'>{_e(benchmark)}, {_e(axis.title)}: no chart for "
                    f"{_e(', '.join(missing))}: its samples do not log '{_e(axis.key)}' (a log "
                    "written before the field existed, or a context mode that does not "
                    "record it).</p>"
                )
    return "".join(parts)


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
    scores, judge label, retrieved ids and a memory system's results (indices into one table,
    `items`, that holds each distinct result once)."""
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
    return {
        "runs": runs,
        "questions": list(questions.values()),
        "items": items.entries,  # render_html writes them in a block of their own
        "view": report.view,
    }


@dataclass
class _Items:
    """The page's table of memory results, each distinct one once: [text, ids] or, for a text
    the log cut, [text, ids, whole length]."""

    entries: list[list[Any]] = field(default_factory=list)
    at: dict[str, int] = field(default_factory=dict)

    def index(self, item: Mapping[str, Any]) -> int:
        entry = [item["text"], item["ids"], *([item["chars"]] if item["chars"] else [])]
        key = json.dumps(entry, ensure_ascii=False)
        if key not in self.at:
            self.at[key] = len(self.entries)
            self.entries.append(entry)
        return self.at[key]


def _questions(report: Report) -> str:
    benchmarks = sorted({r.benchmark for r in report.runs})
    options = "".join(f"<option>{_e(b)}</option>" for b in benchmarks)
    run_options = "".join(
        f'<option value="{i}">{_e(r.label)}</option>' for i, r in enumerate(report.rows)
    )
    return (
        "<p>One row per question and run. Type to search question, gold and replies; pick a "
        "benchmark, category, run, verdict, or only the questions that flipped between runs "
        "compared above. Click a row to open the question: its gold, each run's reply, the "
        "judge's label, the retrieved ids and a memory system's results, their cited ids green "
        "where they hit the evidence (the first "
        f"{RESULTS_LOGGED} results a sample logs, each cut to {RESULT_CHARS} characters).</p>"
        '<div class="filters">'
        '<input id="q-search" type="search" placeholder="search questions, gold, replies">'
        f'<select id="q-benchmark"><option value="">all benchmarks</option>{options}</select>'
        '<select id="q-category"><option value="">all categories</option></select>'
        f'<select id="q-run"><option value="">all runs</option>{run_options}</select>'
        '<select id="q-verdict"><option value="">any verdict</option><option>right</option>'
        "<option>wrong</option><option>partial</option><option>unscored</option></select>"
        '<label><input id="q-flipped" type="checkbox"> flipped only</label>'
        '<span id="q-count"></span></div>'
        '<table id="questions-table"><thead><tr><th>benchmark</th><th>category</th>'
        "<th>question</th>"
        "<th>run</th><th>score</th><th>verdict</th><th>flipped</th></tr></thead>"
        '<tbody></tbody></table><div id="q-more"></div>'
        '<div id="q-detail" hidden></div>'
    )


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d1d1f}
header{padding:12px 24px;background:#f4f5f7;border-bottom:1px solid #ddd}
nav a{margin-right:14px}
main{padding:0 24px 40px;max-width:1400px}
section{margin-top:28px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 6px;vertical-align:top;text-align:left}
th{background:#f4f5f7;position:sticky;top:0;z-index:1}
/* a linked row (a leaderboard mean links to its grid row) stops below its table's sticky
   header, which would otherwise cover it */
tr[id]{scroll-margin-top:4em}tr:target td{box-shadow:inset 0 0 0 9999px rgba(255,200,0,.25)}
th[data-sort]{cursor:pointer}
th[data-sort]:after{content:" \\2195";color:#999}
td.num{text-align:right;white-space:nowrap}
.ci .axis{stroke:#ccc}.ci .wh{stroke:#333;stroke-width:2}.ci circle{fill:#1f77b4}
.warn{color:#a05a00}.none{color:#666;font-style:italic}
.chart svg{max-width:100%;height:auto}
.filters{display:flex;gap:8px;flex-wrap:wrap;align-items:center;margin:8px 0}
#questions-table tbody tr{cursor:pointer}#questions-table tbody tr:hover{background:#eef4ff}
#q-detail{border:1px solid #99b;padding:10px 14px;margin-top:10px;background:#fafbff}
.hit{background:#d7f5d7}.miss{background:#f5dede}
ol.mem{margin:4px 0;padding-left:20px;max-width:560px}ol.mem li{margin:2px 0}
ol.mem .id{font-size:11px;padding:0 3px;margin-right:4px;border-radius:3px}
.mem-text{white-space:pre-wrap}
.reply{white-space:pre-wrap}
@media print{nav,.filters,#q-more{display:none}th{position:static}
 section{page-break-inside:auto}details{display:block}}
"""

# Sorting and the question browser: a small script of our own (no library to inline).
_JS = r"""
(function(){
"use strict";
function num(td){var v=td.getAttribute("data-value");return v===null||v===""?null:parseFloat(v);}
document.querySelectorAll("table.sortable").forEach(function(table){
  table.querySelectorAll("th[data-sort]").forEach(function(th){
    th.addEventListener("click",function(){
      var col=parseInt(th.getAttribute("data-sort"),10);
      var asc=th.getAttribute("data-dir")!=="asc";
      table.querySelectorAll("th[data-sort]").forEach(function(h){h.removeAttribute("data-dir");});
      th.setAttribute("data-dir",asc?"asc":"desc");
      var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){
        var x=a.cells[col],y=b.cells[col];var nx=num(x),ny=num(y);
        var r;
        if(x.hasAttribute("data-value")||y.hasAttribute("data-value")){
          if(nx===null&&ny===null)r=0;else if(nx===null)return 1;else if(ny===null)return -1;
          else r=nx-ny;
        } else r=x.textContent.localeCompare(y.textContent);
        return asc?r:-r;});
      rows.forEach(function(r){body.appendChild(r);});
    });});});
var DATA=JSON.parse(document.getElementById("report-data").textContent);
var ITEMS=null;  // the memory results, parsed when a question is first opened
function items(){if(ITEMS===null)ITEMS=JSON.parse(
  document.getElementById("report-items").textContent);return ITEMS;}
var LIMIT=500;
var tbody=document.querySelector("#questions-table tbody");
if(!tbody)return;
var rows=[];
DATA.questions.forEach(function(q,qi){q.r.forEach(function(r,ri){rows.push([qi,ri]);});});
function verdict(r){if(r.err)return "errored";if(r.s===null)return "unscored";
  if(r.s>=1)return "right";if(r.s<=0)return "wrong";return "partial";}
function fmt(v){return v===null||v===undefined?"\u2013":(Math.round(v*1000)/1000).toFixed(3);}
function el(tag,text,cls){var e=document.createElement(tag);if(text!==undefined)e.textContent=text;
  if(cls)e.className=cls;return e;}
var sel={b:document.getElementById("q-benchmark"),c:document.getElementById("q-category"),
  run:document.getElementById("q-run"),v:document.getElementById("q-verdict"),
  f:document.getElementById("q-flipped"),s:document.getElementById("q-search")};
var cats={};DATA.questions.forEach(function(q){cats[q.c]=1;});
Object.keys(cats).sort().forEach(function(c){var o=el("option",c);sel.c.appendChild(o);});
function matches(q,r){
  if(sel.b.value&&q.b!==sel.b.value)return false;
  if(sel.c.value&&q.c!==sel.c.value)return false;
  if(sel.run.value!==""&&String(r.run)!==sel.run.value)return false;
  if(sel.v.value&&verdict(r)!==sel.v.value)return false;
  if(sel.f.checked&&!r.flip.length)return false;
  var s=sel.s.value.trim().toLowerCase();
  if(s){var hay=(q.q+"\n"+q.gold+"\n"+r.reply+"\n"+q.id).toLowerCase();
    if(hay.indexOf(s)<0)return false;}
  return true;}
function render(){
  tbody.textContent="";var shown=0,total=0;
  rows.forEach(function(p){var q=DATA.questions[p[0]],r=q.r[p[1]];
    if(!matches(q,r))return;total++;if(shown>=LIMIT)return;shown++;
    var tr=document.createElement("tr");tr.setAttribute("data-q",p[0]);
    tr.setAttribute("data-id",q.id);
    tr.appendChild(el("td",q.b));tr.appendChild(el("td",q.c));tr.appendChild(el("td",q.q||q.id));
    tr.appendChild(el("td",DATA.runs[r.run].name));
    var sc=el("td",fmt(r.s),"num");tr.appendChild(sc);
    tr.appendChild(el("td",r.label||verdict(r)));
    tr.appendChild(el("td",r.flip.length?"flipped":""));
    tr.addEventListener("click",function(){open(p[0]);});
    tbody.appendChild(tr);});
  document.getElementById("q-count").textContent=total+" matching";
  document.getElementById("q-more").textContent=total>shown?("showing the first "+shown+
    " of "+total+"; narrow the filter to see the rest"):"";}
function open(qi){var q=DATA.questions[qi];var d=document.getElementById("q-detail");
  d.textContent="";d.hidden=false;
  d.appendChild(el("h3",q.b+" \u00b7 "+q.c+" \u00b7 "+q.id));
  function line(label,text,cls){var p=el("p");p.appendChild(el("b",label));
    p.appendChild(el("span",text,cls));d.appendChild(p);}
  line("Question: ",q.q,"question");line("Gold: ",q.gold,"gold");
  if(q.ev.length)line("Evidence: ",q.ev.join(", "),"evidence");
  var t=el("table");var h=el("tr");
  ["run","reply","scores","judge","retrieved / memory results (green: evidence)"].forEach(
    function(x){
    h.appendChild(el("th",x));});
  t.appendChild(h);
  q.r.forEach(function(r){var tr=el("tr");var run=DATA.runs[r.run];
    var name=el("td");name.appendChild(el("span",run.name));
    if(DATA.view&&run.framework==="inspect"){var a=el("a"," [view]");
      a.href=DATA.view+"/index.html#/logs/"+encodeURIComponent(run.log)+"/samples/sample/"+
        encodeURIComponent(q.id)+"/1";
      name.appendChild(a);}
    tr.appendChild(name);tr.appendChild(el("td",r.reply,"reply"));
    tr.appendChild(el("td",Object.keys(r.scores).map(function(k){
      return k+"="+fmt(r.scores[k]);}).join(" ")));
    tr.appendChild(el("td",r.label||"\u2013"));
    var ret=el("td","","retrieved");r.ret.forEach(function(id){
      ret.appendChild(el("span",id+" ",q.ev.indexOf(id)>=0?"hit":"miss"));});
    if(r.mem.length){var ol=el("ol","","mem");r.mem.forEach(function(mi){
      var m=items()[mi];var li=el("li");var hit=false;
      m[1].forEach(function(id){var h=q.ev.indexOf(id)>=0;hit=hit||h;
        li.appendChild(el("span",id,h?"hit id":"miss id"));});
      li.appendChild(el("span",m[0],"mem-text"));
      if(m.length>2)li.appendChild(el("small"," \u2026 (cut; "+m[2]+" characters)"));
      li.setAttribute("data-hit",hit?"1":"0");ol.appendChild(li);});
      ret.appendChild(ol);}
    tr.appendChild(ret);t.appendChild(tr);});
  d.appendChild(t);d.scrollIntoView();}
// the search box redraws as one types ("change" would redraw again on blur, under a click)
Object.keys(sel).forEach(function(k){
  sel[k].addEventListener(k==="s"?"input":"change",render);});
render();
})();
"""


def render_html(report: Report) -> str:
    """The page.

    Args:
        report: what it shows.

    Returns:
        One self-contained HTML document.
    """
    bodies = {
        "leaderboard": _leaderboard(report),
        "benchmarks": _benchmarks(report),
        "paired": _paired(report),
        "cost": _cost(report),
        "failures": _failures(report),
        "questions": _questions(report),
    }
    nav = "".join(f'<a href="#{a}">{_e(t)}</a>' for a, t in SECTIONS)
    sections = "".join(
        f'<section id="{a}"><h2>{_e(t)}</h2>{bodies[a]}</section>' for a, t in SECTIONS
    )
    runs = "".join(
        f"<li>{_e(r.label)} — {_e(r.framework)}, {_e(r.benchmark)}, protocol {_e(r.protocol)}"
        f" <small>{_e(r.path)}</small></li>"
        for r in report.runs
    )
    questions = _questions_data(report)
    # the memory results are read when a question is opened, not while the page loads
    items = _json_block(questions.pop("items"))
    data = _json_block(questions)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        # nothing is fetched: the policy forbids every request the page could make
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{_e(report.title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{_e(report.title)}</h1><nav>{nav}</nav>"
        f"<details><summary>{len(report.runs)} run(s)</summary><ul>{runs}</ul></details>"
        f"</header><main>{sections}</main>"
        f'<script type="application/json" id="report-data">{data}</script>'
        f'<script type="application/json" id="report-items">{items}</script>'
        f"<script>{_JS}</script></body></html>\n"
    )


def _json_block(value: Any) -> str:
    """`value` as JSON that an HTML script element holds as it is (no `</` or `<!--`)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def write_atomic(text: str, path: Path) -> None:
    """Write `text` to `path` through a temporary file in the same folder, renamed at the end,
    so a failure never leaves a half-written page.

    Args:
        text: the content.
        path: the destination.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        # mkstemp's file is the owner's alone; a page is for others to read (a web server)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="One self-contained HTML page comparing runs of memevals tasks: leaderboard "
        "with intervals, per-benchmark scores, paired differences, cost and latency, scores by "
        "the records' analysis axes, and every question.",
    )
    parser.add_argument("runs", nargs="*", help="Inspect logs, lm-eval samples files, or folders")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")
    parser.add_argument("--title", default="memevals report", help="the page title")
    parser.add_argument(
        "--baseline",
        help="compare this run (path, file name or label) with every other run of its benchmark "
        "(default: every pair that differs in exactly one declared factor)",
    )
    parser.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="MODEL=IN,OUT",
        help="dollars per million input and output tokens of a model (repeatable)",
    )
    parser.add_argument(
        "--view",
        help="an Inspect View bundle (inspect view bundle --output-dir DIR) relative to the "
        "page: each question links into it (default: a folder 'view' beside the page, if any)",
    )
    parser.add_argument(
        "--resamples", type=int, default=10_000, help="bootstrap resamples (default 10000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command: exit status 0 on success, 2 on bad input (one line on stderr)."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        if not ns.runs:
            raise ReportError(
                "no runs given: name Inspect logs, lm-eval samples files or folders of them"
            )
        if ns.resamples < 1:
            raise ReportError(f"--resamples must be at least 1, got {ns.resamples}")
        prices = dict(parse_price(p) for p in ns.price)
        view = ns.view
        if view is None and (ns.output.parent / "view" / "index.html").is_file():
            view = "view"
        report = build_report(
            ns.runs,
            title=ns.title,
            baseline=ns.baseline,
            prices=prices,
            resamples=ns.resamples,
            seed=ns.seed,
            view=view,
        )
        page = render_html(report)
        write_atomic(page, ns.output)
    except (ReportError, RunError, OSError) as exc:
        # one line, whatever the reader's message (a validation error spans several)
        print(f"{PROG}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    size = ns.output.stat().st_size
    print(
        f"{PROG}: wrote {ns.output} ({size / 1e6:.2f} MB, {len(report.runs)} runs)", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

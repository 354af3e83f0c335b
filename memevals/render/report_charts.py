"""The report's charts drawn by matplotlib as inline SVG (the page fetches nothing).

`draw` takes a chart the figures describe (`report_figures.DotChart`, `ScatterChart`) and
returns its `<svg>` element; each mark is one SVG group with the id `mark-<chart>-<i>`.
"""

from __future__ import annotations

import io
import re
from typing import Any

from memevals.render.charts import pyplot
from memevals.results.report_data import ReportError
from memevals.results.report_figures import DotChart, ScatterChart, finite

__all__ = ["draw"]


def _plt() -> Any:
    """The renderers' matplotlib set-up (`charts.pyplot`), with SVG text left as text."""
    try:
        import matplotlib
    except ImportError:
        raise ReportError('the charts need matplotlib: pip install "memevals[report]"') from None
    plt = pyplot()
    # text as text (small, selectable, searchable), reproducible ids
    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["svg.hashsalt"] = "memevals-report"
    return plt


def _svg(fig: Any) -> str:
    plt = _plt()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    # matplotlib's Dublin Core block (creator, date) says nothing the page needs
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    return text


def draw(chart: DotChart | ScatterChart) -> str:
    """A chart as one SVG element (text as text, reproducible ids).

    Args:
        chart: what to draw.

    Returns:
        The `<svg>` element.
    """
    if isinstance(chart, DotChart):
        return _dot_whisker(chart)
    return _scatter(chart)


def _dot_whisker(chart: DotChart) -> str:
    """Horizontal dot-and-whisker chart: one row per position, one mark per series there; each
    mark is one SVG group `mark-...` (a dot and its interval)."""
    marks = chart.marks
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
        if finite(m.low) and finite(m.high):
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
        eb.lines[0].set_gid(f"mark-{chart.name}-{i}")
    ax.set_yticks(range(len(positions)))
    ax.set_yticklabels(positions)
    ax.invert_yaxis()
    if chart.zero:
        ax.axvline(0.0, color="black", linewidth=0.8)
    elif chart.unit:
        ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel(chart.xlabel)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.5 / height), ncol=1)
    return _svg(fig)


def _scatter(chart: ScatterChart) -> str:
    """Score (y) against a cost (x), one mark per run, the Pareto frontier (nothing both cheaper
    and better) joined by a line."""
    points = chart.points
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, x, y) in enumerate(points):
        (line,) = ax.plot([x], [y], "o", color=colours[i % len(colours)], label=name)
        line.set_gid(f"mark-{chart.name}-{i}")
    front = chart.frontier
    if len(front) > 1:
        ax.plot([p[1] for p in front], [p[2] for p in front], "--", color="grey", linewidth=1)
    for p in front:
        ax.annotate("Pareto", (p[1], p[2]), fontsize=6, xytext=(4, 4), textcoords="offset points")
    if chart.log and all(p[1] > 0 for p in points):
        ax.set_xscale("log")
    ax.set_xlabel(chart.xlabel)
    ax.set_ylabel(chart.ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1)
    return _svg(fig)

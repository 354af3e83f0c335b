"""The charts of results, on one matplotlib set-up (`pyplot`: the file-only Agg backend): a
bar chart per benchmark (memevals-compare) and the paired differences (memevals-diff)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from memevals.results.columns import score_layout
from memevals.results.formatting import score_title
from memevals.results.paired import Comparison
from memevals.results.rows import KindScores, Row

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg backend (charts are written to files, never shown);
    imported on first use, so reading runs never loads matplotlib.

    Returns:
        The `matplotlib.pyplot` module.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


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
    plt = pyplot()

    sub = [r for r in rows if r.benchmark == benchmark]
    layout = [(k, c) for k, c, _ in score_layout(sub)]
    if not sub:
        raise ValueError(f"{benchmark}: no run of this benchmark")
    width_groups = max((len(c) + 1 for _, c in layout), default=1)
    fig: Figure
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
    ax.set_ylabel(score_title(kind))
    shown = [r.kinds[kind] for r in sub if kind in r.kinds]
    unit = all(
        0.0 <= v <= 1.0 for ks in shown for v in (ks.overall or 0.0, *ks.categories.values())
    )
    ax.set_ylim(0, 1.05 if unit else None)
    ax.set_title(f"{benchmark}: {score_title(kind)}")
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
    plt = pyplot()
    fig = chart_figure(rows, benchmark)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return path


def safe_file_stem(name: str) -> str:
    """A file name from log metadata: only [A-Za-z0-9_.-], never a path (logs are data)."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "benchmark"
    return stem[:100]


def plot_differences(comparisons: Sequence[Comparison], path: Path) -> Path:
    """One figure: per score a panel of B − A per category with its interval, zero marked."""
    plt = pyplot()

    scores = list(dict.fromkeys(t.score for c in comparisons for t in c.tables if t.rows))
    if not scores:
        raise ValueError("nothing to plot: no shared score")
    fig, axes = plt.subplots(len(scores), 1, figsize=(9, 3.2 * len(scores)), squeeze=False)
    for ax, score in zip(axes[:, 0], scores, strict=True):
        tables = [(c, t) for c in comparisons for t in c.tables if t.score == score and t.rows]
        groups = list(dict.fromkeys(r.category for _, t in tables for r in t.rows))
        width = 0.6 / max(1, len(tables))
        for i, (c, t) in enumerate(tables):
            offset = (i - (len(tables) - 1) / 2) * width
            rows = {r.category: r.result for r in t.rows}
            xs = [g + offset for g, name in enumerate(groups) if name in rows]
            res = [rows[name] for name in groups if name in rows]
            ys = [r.difference for r in res]
            # no whisker where the interval is not stated (too few clusters)
            err = [
                [0.0 if r.too_few_clusters else r.difference - r.ci_low for r in res],
                [0.0 if r.too_few_clusters else r.ci_high - r.difference for r in res],
            ]
            ax.errorbar(xs, ys, yerr=err, fmt="o", capsize=4, label=f"B = {c.name_b}")
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, rotation=20, ha="right")
        ax.set_ylabel(f"{score}: B − A")
        ax.set_title(f"{score}: difference with its 95 % cluster-bootstrap interval")
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8, title=f"A = {comparisons[0].name_a}", title_fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

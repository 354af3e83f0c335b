"""memevals-compare: tabulate runs across providers (Markdown tables, one CSV, a chart per
benchmark).

    python -m memevals.tools.compare LOG_OR_DIR ... [--csv out.csv] [--png-dir DIR] [--wide]
    memevals-compare logs/ lm-eval-out/ --csv compare.csv

Charts are drawn only with --png-dir (one `<benchmark>.png` each); nothing else is written but
the CSV asked for. The rows come from the analysis library (`memevals.results.rows` states the
rules), the Markdown, CSV and charts from its renderers (`memevals.render`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import entry_points
from pathlib import Path

from inspect_ai.log import EvalLog

from memevals.render.charts import NO_SCORED, chart_figure, plot_benchmark, safe_file_stem
from memevals.render.csv_files import write_table_csv as write_csv
from memevals.render.markdown import MAX_WIDTH, markdown_tables
from memevals.results import rows as _rows
from memevals.results.columns import table_records
from memevals.results.formatting import UNDEFINED, too_few_note, too_few_text
from memevals.results.memory_figures import memory_figures
from memevals.results.rows import NO_JUDGE, KindScores, Row, above_ceiling, disambiguate
from memevals.results.runs import Run, left_out_note, read_inspect_log
from memevals.tools.command_line import output_problem, print_out

# The library's names, re-exported for what imports them from here (memevals-report's modules,
# tests, notebooks written before memevals.results).
__all__ = [
    "MAX_WIDTH", "NO_JUDGE", "NO_SCORED", "UNDEFINED", "KindScores", "Row", "above_ceiling",
    "chart_figure", "disambiguate", "load_rows", "main", "markdown_tables", "memory_figures",
    "plot_benchmark", "row_from_log", "row_from_run", "safe_file_stem", "table_records",
    "too_few_note", "too_few_text", "write_csv",
]  # fmt: skip


def _left_out(run: Run) -> None:
    print(f"memevals-compare: {left_out_note(run)}", file=sys.stderr)


def row_from_run(run: Run) -> Row | None:
    """A table row of one run (`memevals.results.rows.row_from_run`); None, said on stderr,
    when an Inspect run has no results.

    Args:
        run: the run.

    Returns:
        The row, or None.
    """
    row = _rows.row_from_run(run)
    if row is None:
        _left_out(run)
    return row


def row_from_log(log: EvalLog, path: str) -> Row | None:
    """A table row from an Inspect log already read (None, said on stderr, without results).

    Args:
        log: the log.
        path: where it came from.

    Returns:
        The row, or None.
    """
    return row_from_run(read_inspect_log(log, path))


def load_rows(paths: Iterable[str]) -> list[Row]:
    """The rows of every run under `paths` (`memevals.results.rows.load_rows`); each run
    without results is said on stderr.

    Args:
        paths: log files, lm-eval samples files, or folders of either.

    Returns:
        The rows, sorted by benchmark, task, model, judge and context.
    """
    return _rows.load_rows(paths, left_out=_left_out)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--paired" in args:
        # Question-by-question comparison of runs: the paired command (memevals-diff) owns it,
        # reached through its entry point (a command imports no other command)
        found = entry_points(group="console_scripts", name="memevals-diff")
        if not found:
            print(
                "memevals-compare: --paired needs memevals-diff (pip install memevals)",
                file=sys.stderr,
            )
            return 2
        args.remove("--paired")
        return int(next(iter(found)).load()(args))
    parser = _parser()
    ns = parser.parse_args(args)
    for problem in (
        output_problem("--csv", ns.csv, "compare.csv"),
        output_problem("--png-dir", ns.png_dir, folder=True),
    ):
        if problem:
            parser.error(problem)
    try:
        rows = load_rows(ns.logs)
    except (FileNotFoundError, ValueError) as exc:
        parser.error(str(exc))
    if not rows:
        print("memevals-compare: no log with results", file=sys.stderr)
        return 1
    print_out(markdown_tables(rows, wide=ns.wide))
    if ns.csv:
        write_csv(rows, ns.csv)
        print(f"CSV: {ns.csv}", file=sys.stderr)
    if ns.png_dir is not None and not ns.no_png:  # charts only where asked for
        for benchmark in sorted({r.benchmark for r in rows}):
            out = plot_benchmark(rows, benchmark, ns.png_dir / f"{safe_file_stem(benchmark)}.png")
            print(f"chart: {out}", file=sys.stderr)
    return 0


def _parser() -> argparse.ArgumentParser:
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
    return parser


if __name__ == "__main__":
    sys.exit(main())

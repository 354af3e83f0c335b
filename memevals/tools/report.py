"""memevals-report: one self-contained HTML page that compares runs.

    memevals-report LOG_OR_DIR ... -o report.html [--baseline RUN] [--title T]
        [--price MODEL=IN,OUT ...]
    python -m memevals.tools.report logs/ lm-eval-out/ -o report.html

The command only parses its arguments: the runs are read and compared by `report_data`
(memevals-compare's rows, memevals-diff's comparisons), each section's figures computed by
`report_figures` and `report_samples`, and the page drawn by `report_page` from its Jinja2
template and written atomically. What a page shows of a benchmark comes from its record; no
module of the report names a benchmark.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from memevals.render.report_page import SECTIONS, render_html, write_atomic
from memevals.results.report_data import Report, ReportError, build_report, parse_price
from memevals.results.report_figures import pareto
from memevals.results.report_samples import bucket
from memevals.results.runs import RunError
from memevals.tools.command_line import output_problem

__all__ = [
    "SECTIONS",
    "Report",
    "ReportError",
    "bucket",
    "build_report",
    "main",
    "pareto",
    "parse_price",
    "render_html",
    "write_atomic",
]

PROG = "memevals-report"


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
        problem = output_problem("-o", ns.output, "report.html")
        if problem:
            raise ReportError(problem)
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
    if ns.view is not None and "://" not in ns.view:
        bundle = ns.output.parent / ns.view
        if not (bundle / "index.html").is_file():  # links written, but they open nothing yet
            print(
                f"{PROG}: --view {ns.view}: no Inspect View bundle at {bundle} (no index.html); "
                f"the question links open once it is there (inspect view bundle --output-dir "
                f"{bundle})",
                file=sys.stderr,
            )
    size = ns.output.stat().st_size
    print(
        f"{PROG}: wrote {ns.output} ({size / 1e6:.2f} MB, {len(report.runs)} runs)", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

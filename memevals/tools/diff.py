"""memevals-diff: paired comparison of runs over the same questions (is run B really better
than run A?).

    memevals-diff RUN_A RUN_B [RUN_C ...] [--csv OUT] [--json OUT] [--flips OUT] [--png OUT]
    memevals-compare --paired RUN_A RUN_B ...          # the same command

The comparisons and their rules come from the analysis library (`memevals.results.paired`,
docs/paired.md), their Markdown, CSV, JSON and chart from its renderers (`memevals.render`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from memevals.render.charts import plot_differences
from memevals.render.csv_files import FLIP_COLUMNS, write_flips
from memevals.render.csv_files import write_comparison_csv as write_csv
from memevals.render.json_files import write_json
from memevals.render.paired_markdown import described, markdown
from memevals.results.paired import (
    EXPLICIT_FACTORS,
    BenchmarkMismatch,
    Comparison,
    check_same_benchmark,
    compare_runs,
    find_mismatches,
)
from memevals.results.runs import Run, RunError, RunSample, left_out_note, load_runs
from memevals.tools.command_line import output_problem, print_out

# The library's names that tests and perf scripts written before memevals.results import from
# here; anything new imports them from memevals.results.
__all__ = [
    "FLIP_COLUMNS", "Run", "RunSample", "compare_runs", "find_mismatches", "load_runs", "main",
]  # fmt: skip

PROG = "memevals-diff"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Paired comparison of runs over the same questions: run A (the first) "
        "against each later run, per score and category, with cluster-bootstrap intervals, "
        "paired tests and the questions that flipped.",
    )
    parser.add_argument("runs", nargs="+", help="Inspect logs or lm-eval samples files/folders")
    parser.add_argument("--csv", type=Path, help="write every table row to this CSV")
    parser.add_argument("--json", type=Path, help="write the comparison to this JSON file")
    parser.add_argument("--flips", type=Path, help="write the flipped questions to this CSV")
    parser.add_argument("--png", type=Path, help="draw the differences per category here")
    parser.add_argument(
        "--resamples", type=int, default=10_000, help="bootstrap resamples (default 10000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    parser.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="compare runs whose samples, data, judge or other settings differ, or that differ "
        "in more than one factor or in their protocol (each difference is printed under its "
        "table)",
    )
    return parser


def _why(c: Comparison) -> str:
    """Why a comparison is refused, in one line."""
    reasons = sorted({m.setting for m in c.mismatches if m.factor is None})
    if len(c.factors) > 1:
        names = ", ".join(f.name for f in c.factors)
        reasons.append(f"more than one factor ({names}); vary one at a time")
    elif c.factor is not None and c.factor.name in EXPLICIT_FACTORS:
        reasons.append(f"{c.factor.name} (its prompts and judge differ)")
    return "the runs differ in " + "; ".join(reasons)


def main(argv: Sequence[str] | None = None) -> int:
    """The command; also reached as `memevals-compare --paired RUN_A RUN_B ...`."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.resamples < 1:
        parser.error(f"--resamples must be at least 1, got {ns.resamples}")
    _check_outputs(parser, ns)
    try:
        runs = load_runs(ns.runs)
    except RunError as exc:
        parser.error(str(exc))
    # a failed or cancelled run has no results to pair (its samples errored), as in compare
    for run in runs:
        if not run.has_results:
            print(f"{PROG}: {left_out_note(run)}", file=sys.stderr)
    runs = [run for run in runs if run.has_results]
    seen: set[tuple[str, str]] = set()
    for run in runs:
        where = (str(Path(run.path).resolve()), run.benchmark)
        if where in seen:  # a run against itself differs in nothing: B - A is 0 by construction
            parser.error(f"{run.path}: named twice; compare two different runs")
        seen.add(where)
    if len(runs) < 2:
        parser.error(
            f"need at least two runs with results to compare, found {len(runs)} in {ns.runs}"
        )
    try:
        for other in runs[1:]:
            check_same_benchmark(runs[0], other)
    except BenchmarkMismatch as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    comparisons = [
        compare_runs(runs[0], other, resamples=ns.resamples, seed=ns.seed) for other in runs[1:]
    ]
    unfair = [c for c in comparisons if c.mismatches]
    if unfair and not ns.allow_mismatch:
        for c in unfair:
            print(
                f"{PROG}: refusing to compare {c.name_a} with {c.name_b}: {_why(c)}",
                file=sys.stderr,
            )
            print(f"  A = {c.a.path}\n  B = {c.b.path}", file=sys.stderr)
            for m in c.differences:
                print(f"  - {described(m)}", file=sys.stderr)
        print(f"{PROG}: pass --allow-mismatch to compare them anyway", file=sys.stderr)
        return 1
    print_out(markdown(comparisons, ns.allow_mismatch))
    _write_outputs(comparisons, ns)
    return 0


def _check_outputs(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> None:
    """Each output path can be written (checked before any run is read)."""
    outputs = [("--csv", ns.csv, "paired.csv"), ("--json", ns.json, "paired.json")]
    outputs += [("--flips", ns.flips, "flips.csv"), ("--png", ns.png, "paired.png")]
    for option, path, example in outputs:
        problem = output_problem(option, path, example)
        if problem:
            parser.error(problem)
    if ns.png is not None and not ns.png.suffix:
        ns.png = ns.png.with_suffix(".png")  # what matplotlib writes: say that file's name


def _write_outputs(comparisons: list[Comparison], ns: argparse.Namespace) -> None:
    """The files asked for, each said on stderr."""
    if ns.csv:
        write_csv(comparisons, ns.csv)
        print(f"CSV: {ns.csv}", file=sys.stderr)
    if ns.json:
        write_json(comparisons, ns.json)
        print(f"JSON: {ns.json}", file=sys.stderr)
    if ns.flips:
        count = write_flips(comparisons, ns.flips)
        print(f"flipped questions: {ns.flips} ({count} rows)", file=sys.stderr)
    if ns.png:
        plot_differences(comparisons, ns.png)
        print(f"chart: {ns.png}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

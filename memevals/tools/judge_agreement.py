"""Judge agreement: per-category agreement and Cohen's kappa between two LLM-judge runs.

    python -m memevals.tools.judge_agreement LOG_A LOG_B      # same samples, judged by two graders
    python -m memevals.tools.judge_agreement LOG              # one log that holds two judge scores

A judge score is any score written by `llm_judge` (a value with a "judge" key and the judge's
label in its metadata). With several judge scores in a log, pick them with --scorer-a /
--scorer-b. Samples are paired by (sample id, epoch); a pair where either judge left the sample
unscored is left out of the statistics and counted in the "unscored" column.

The labels and rows come from memevals.results.judge_labels; memevals.render.judge_tables lays
them out.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memevals.render.judge_tables import agreement_json, agreement_table
from memevals.results.judge_labels import (
    AgreementReport,
    agreement_rows,
    collect_labels,
    compared_scores,
    graders_of,
)
from memevals.tools.command_line import prog_name

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog_name(sys.argv[0], "memevals.tools.judge_agreement"),
        description="Per-category agreement and Cohen's kappa between two LLM-judge runs.",
    )
    parser.add_argument("log_a", help="Inspect log judged by judge A")
    parser.add_argument("log_b", nargs="?", help="log judged by judge B (omit: both in LOG_A)")
    parser.add_argument("--scorer-a", help="name of judge A's score (needed if ambiguous)")
    parser.add_argument("--scorer-b", help="name of judge B's score (needed if ambiguous)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)

    try:
        log_a, log_b, score_a, score_b = compared_scores(
            args.log_a, args.log_b, args.scorer_a, args.scorer_b
        )
        labels_a = collect_labels(log_a, score_a)
        labels_b = collect_labels(log_b, score_b)
        rows, unpaired = agreement_rows(labels_a, labels_b)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    report = AgreementReport(
        judge_a=f"{args.log_a} [{score_a}] grader {graders_of(labels_a)}",
        judge_b=f"{args.log_b or args.log_a} [{score_b}] grader {graders_of(labels_b)}",
        rows=rows,
        unpaired=unpaired,
    )
    print(agreement_json(report) if args.json else agreement_table(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

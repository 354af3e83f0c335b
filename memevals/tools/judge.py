"""Judge lm-evaluation-harness replies post hoc with the memevals LLM judge.

    lm_eval --model ... --tasks locomo --include_path "$(python -m memevals.lm_eval_tasks)" \\
        --output_path out --log_samples
    python -m memevals.tools.judge out/ --grader openai/gpt-4o-mini

The `samples_<task>_<date>.jsonl` files that `--log_samples` writes hold each document
(with the memevals metadata, including the judge inputs) and the model's reply. This command
replays those replies in an Inspect evaluation whose scorers are the ones the Inspect task
uses when it judges, so the grader prompt, the verdict parsing, the unscored rule and the
aggregate table are the same code. The grader is any Inspect model (`provider/model`); calls
run concurrently (`--max-connections`) and are cached by Inspect (`--no-cache` to turn that
off).

Which benchmark a file belongs to comes from its benchmark record (memevals.benchmarks): the
record declaring the file's lm-eval task name, else the record the documents' `benchmark`
metadata names. The record lists the metadata its judge reads (checked up front), and its thin
Inspect module's `posthoc_scorers(metadata, max_tokens, judge_runs)` gives the scorers; a
benchmark whose module has none has no post-hoc judge. Outputs: the Inspect log
(`--log-dir`), and per benchmark `judge_<benchmark>.jsonl` (one verdict per sample) and
`judge_<benchmark>.json` (the aggregate table) in `--output-dir` (default: the folder of the
first samples file). The conversation context is not replayed: the judge never sees it, and
leaving it out keeps the log small.

Repeated judging: `--judge-runs N` (or `-S judge_runs=N`, as `inspect score` spells it) judges
each reply N times with distinct seeds and reports the judges' agreement beside the mean score
(docs/judges.md#repeated-judging), where the benchmark's scorers support it.

The files are read by memevals.results.lm_eval_samples and judged by
memevals.results.posthoc_judging; memevals.render.judge_tables lays out the table printed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from memevals.render.judge_tables import judge_table
from memevals.results.lm_eval_samples import SamplesError
from memevals.results.posthoc_judging import JudgingError, judge_samples
from memevals.tools.command_line import parse_task_args, prog_name

__all__ = ["grader_args", "main"]


def _model_arg(text: str) -> str:
    """Check the shape of one `-M key=value`; values are read later, all together, as
    `inspect eval -M` reads them (YAML; a comma makes a list)."""
    key, sep, _ = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return text


def grader_args(pairs: Sequence[str]) -> dict[str, Any]:
    """`-M` pairs as model arguments, read exactly as `inspect eval -M` reads them."""
    return parse_task_args(pairs)


def _scorer_arg(text: str) -> int:
    """`-S judge_runs=N`, the one scorer option this command takes in `inspect score` form."""
    key, sep, value = text.partition("=")
    if key.strip() != "judge_runs" or not sep:
        raise argparse.ArgumentTypeError(
            f"-S takes judge_runs=N (other judge options have their own flags), got {text!r}"
        )
    return _judge_runs(value)


def _judge_runs(text: str) -> int:
    try:
        runs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"judge_runs must be an integer, got {text!r}") from None
    if runs < 1:
        raise argparse.ArgumentTypeError(f"judge_runs must be at least 1, got {runs}")
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog_name(sys.argv[0], "memevals.tools.judge"),
        description="Judge lm-eval --log_samples replies with the memevals LLM judge.",
    )
    parser.add_argument("paths", nargs="+", help="samples_*.jsonl files or folders holding them")
    parser.add_argument("--grader", required=True, help="Inspect model, e.g. openai/gpt-4o-mini")
    parser.add_argument(
        "-M", "--grader-arg", action="append", type=_model_arg, default=[],
        help="grader model argument key=value (repeatable)",
    )  # fmt: skip
    parser.add_argument("--max-connections", type=int, default=10)
    parser.add_argument("--no-cache", action="store_true", help="do not cache grader calls")
    parser.add_argument(
        "--judge-max-tokens", type=int, default=None,
        help="grader token limit per reply (default: the Inspect task's)",
    )  # fmt: skip
    parser.add_argument(
        "--judge-runs", type=_judge_runs, default=None,
        help="judge each reply N times (distinct seeds) and report the agreement (default 1)",
    )  # fmt: skip
    parser.add_argument(
        "-S", "--scorer-arg", type=_scorer_arg, action="append", default=[], metavar="judge_runs=N",
        help="the same as --judge-runs N, in inspect score's spelling",
    )  # fmt: skip
    parser.add_argument("--log-dir", default=None, help="Inspect log folder")
    parser.add_argument("--output-dir", default=None, help="where judge_<benchmark>.* go")
    parser.add_argument("--display", default="none", help="Inspect display (none, plain, ...)")
    args = parser.parse_args(argv)
    given = {r for r in [args.judge_runs, *args.scorer_arg] if r is not None}
    if len(given) > 1:
        parser.error(f"judge_runs given twice with different values: {sorted(given)}")
    try:
        runs = judge_samples(
            args.paths,
            args.grader,
            grader_args=grader_args(args.grader_arg),
            max_connections=args.max_connections,
            cache=not args.no_cache,
            judge_max_tokens=args.judge_max_tokens,
            log_dir=args.log_dir,
            output_dir=args.output_dir,
            display=args.display,
            judge_runs=given.pop() if given else 1,
        )
    except SamplesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except JudgingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for run in runs:
        print(judge_table(run))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

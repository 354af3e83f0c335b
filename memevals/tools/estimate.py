"""memevals-estimate: what a run will cost, before any model is called.

    memevals-estimate TASK [-T name=value ...] [--price-in X --price-out Y]
    python -m memevals.tools.estimate ...      # the same command

The counting and its rules come from the analysis library (`memevals.results.cost`), the text
from its renderer (`memevals.render.estimate_text`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memevals.core.tokens import TOKEN_COUNTERS
from memevals.render.estimate_text import estimate_text
from memevals.results.cost import (
    DEFAULT_CACHE_BLOCK,
    DEFAULT_CACHE_MIN_TOKENS,
    DEFAULT_CACHED_PRICE_RATIO,
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    UNCAPPED_OUTPUT_TOKENS,
    CacheRule,
    Costs,
    Estimate,
    GraderCalls,
    SampleTokens,
    build_task,
    cacheable,
    estimate,
    estimate_samples,
    grader_calls,
    shared_prefix_tokens,
)
from memevals.results.formatting import dollars
from memevals.tools.command_line import parse_task_args, print_out, prog_name

# The library's names, re-exported for what imports them from here (tests, perf scripts and
# docs written before memevals.results).
__all__ = [
    "MESSAGE_OVERHEAD", "REQUEST_OVERHEAD", "UNCAPPED_OUTPUT_TOKENS", "CacheRule", "Costs",
    "Estimate", "GraderCalls", "SampleTokens", "build_task", "cacheable", "dollars", "estimate",
    "estimate_samples", "grader_calls", "main", "parse_task_args", "prog_name",
    "shared_prefix_tokens",
]  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog_name(sys.argv[0], "memevals.tools.estimate"),
        description="Count a task's input tokens, the share a prompt cache can reuse, and the "
        "cost, without calling any model.",
    )
    parser.add_argument("task", help="task name, with or without its memevals/ prefix")
    parser.add_argument("-T", dest="task_args", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--price-in", type=float, help="$ per million input tokens")
    parser.add_argument("--price-out", type=float, help="$ per million output tokens")
    parser.add_argument(
        "--cached-price-ratio",
        type=float,
        default=DEFAULT_CACHED_PRICE_RATIO,
        help="cached input price / input price (default 0.5: the highest of the major "
        "providers; 0.1 for Anthropic reads and GPT-5)",
    )
    parser.add_argument(
        "--cache-write-ratio",
        type=float,
        default=1.0,
        help="price of tokens written to the cache / input price (1.25 for Anthropic)",
    )
    parser.add_argument("--cache-min-tokens", type=int, default=DEFAULT_CACHE_MIN_TOKENS)
    parser.add_argument("--cache-block", type=int, default=DEFAULT_CACHE_BLOCK)
    parser.add_argument(
        "--output-tokens",
        type=int,
        help="output tokens per sample (default: the task's max_tokens; "
        f"{UNCAPPED_OUTPUT_TOKENS:,}, an assumption, for a task that sends no limit)",
    )
    parser.add_argument(
        "--token-counter", default="auto", choices=TOKEN_COUNTERS, help="default cl100k_base"
    )
    parser.add_argument("--limit", type=int, help="only the first N samples")
    parser.add_argument("--per-sample", action="store_true", help="list every sample")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    ns = parser.parse_args(argv)
    # checked before the task is built and counted (a minute for all of LoCoMo)
    for option, value in (
        ("--price-in", ns.price_in),
        ("--price-out", ns.price_out),
        ("--cached-price-ratio", ns.cached_price_ratio),
        ("--cache-write-ratio", ns.cache_write_ratio),
        ("--limit", ns.limit),
    ):
        if value is not None and value < 0:
            parser.error(f"{option} {value}: must not be negative")
    try:
        rule = CacheRule(ns.cache_min_tokens, ns.cache_block)
        est = estimate(
            ns.task,
            parse_task_args(ns.task_args),
            token_counter=ns.token_counter,
            output_tokens=ns.output_tokens,
            limit=ns.limit,
        )
        text = estimate_text(
            est,
            ns.price_in,
            ns.price_out,
            ns.cached_price_ratio,
            ns.cache_write_ratio,
            rule,
            per_sample=ns.per_sample,
        )
    except ValueError as exc:
        parser.error(str(exc))
    print_out(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

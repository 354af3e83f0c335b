"""The text memevals-estimate prints: tokens, the cacheable share, the cost and the grader
calls."""

from __future__ import annotations

import statistics

from memevals.results.cost import (
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    CacheRule,
    Costs,
    Estimate,
    cacheable,
)
from memevals.results.formatting import dollars, percent


def estimate_text(
    est: Estimate,
    price_in: float | None,
    price_out: float | None,
    cached_ratio: float,
    write_ratio: float,
    rule: CacheRule,
    per_sample: bool = False,
) -> str:
    """The estimate as memevals-estimate prints it.

    Args:
        est: the estimate (`memevals.results.cost.estimate`).
        price_in: $ per million input tokens (None: no cost lines unless `price_out`).
        price_out: $ per million output tokens.
        cached_ratio: cached input price / input price.
        write_ratio: price of tokens written to the cache / input price.
        rule: what a provider caches.
        per_sample: add a table of every sample.

    Returns:
        The text.
    """
    sizes = [s.input_tokens for s in est.samples]
    args = " ".join(f"-T {k}={v}" for k, v in est.task_args.items())
    lines = [
        f"task: {est.task} {args}".rstrip(),
        f"token counter: {est.token_counter} (+{MESSAGE_OVERHEAD} per message, "
        f"+{REQUEST_OVERHEAD} per request)",
        _samples_line(est),
    ]
    if not sizes:
        return "\n".join([*lines, "no samples"])
    unit = "sample" if est.sample_count is None else "call"
    lines += [
        f"input tokens: {est.input_tokens:,} total; per {unit} mean {statistics.fmean(sizes):,.0f}"
        f", median {statistics.median(sizes):,.0f}, min {min(sizes):,}, max {max(sizes):,}",
        f"shared prefix with the previous {unit}: {est.shared_prefix_tokens:,} tokens = "
        f"{percent(est.shared_share)} of input",
    ]
    costs = est.costs(price_in or 0.0, price_out or 0.0, cached_ratio, write_ratio, rule)
    lines.append(
        f"cacheable (from {rule.min_tokens:,} tokens, {rule.block}-token blocks): "
        f"{costs.cached_tokens:,} tokens = "
        f"{percent(costs.cached_tokens / max(1, est.input_tokens))}"
    )
    lines.append(
        f"output tokens: {est.output_tokens_per_sample:,} per {unit} ({est.output_tokens_source})"
        f" = {est.output_tokens:,}"
    )
    if price_in is not None or price_out is not None:
        lines += _cost_lines(costs, price_in or 0, price_out or 0, cached_ratio, write_ratio)
    lines += _grader_lines(est)
    lines += _agent_lines(est)
    lines += [f"note: {n}" for n in est.notes]
    if per_sample:
        lines += ["", *_per_sample_table(est, rule)]
    return "\n".join(lines)


def _samples_line(est: Estimate) -> str:
    """The number of samples, and of model calls where a sample makes several (each counted
    in the figures below)."""
    if est.sample_count is None:
        return f"samples: {len(est.samples):,}"
    return (
        f"samples: {est.sample_count:,} ({len(est.samples):,} model calls; the token figures "
        "below are per call)"
    )


def _agent_lines(est: Estimate) -> list[str]:
    """`context=agent`: the write pass's input tokens under each `agent_memory` (once per
    history, before the questions; the input figures above are the answer pass's)."""
    if not est.agent_writes:
        return []
    histories = len(est.agent_writes)
    many = "history" if histories == 1 else "histories"
    lines = [f"agent write pass (once per history, {histories:,} {many}), input tokens:"]
    for mode, tokens in est.agent_write_tokens.items():
        lines.append(f"  agent_memory={mode}: {tokens:,} ({tokens // histories:,} per history)")
    return lines


def _cost_lines(
    costs: Costs, price_in: float, price_out: float, cached_ratio: float, write_ratio: float
) -> list[str]:
    """The cost at the prices given, without and with a prompt cache."""
    saved = 1 - costs.with_cache / costs.without_cache if costs.without_cache else 0.0
    return [
        f"cost at ${price_in:g}/M input, ${price_out:g}/M output:",
        f"  without caching: {dollars(costs.without_cache)}",
        f"  with caching:    {dollars(costs.with_cache)} (cached input at {cached_ratio:g}x, "
        f"{costs.written_tokens:,} tokens written at {write_ratio:g}x; saves {percent(saved)})",
    ]


def _grader_lines(est: Estimate) -> list[str]:
    """A line per grader scorer: its calls in all and per sample (their tokens are not counted)."""
    lines = []
    for calls in est.grader_calls:
        counts = calls.per_sample
        lines.append(
            f"grader calls ({calls.scorer}): {calls.total:,} = "
            f"{calls.total / len(counts):,.2f} per sample (min {min(counts):,}, "
            f"max {max(counts):,}): {calls.note}; their tokens are not included above"
        )
    return lines


def _per_sample_table(est: Estimate, rule: CacheRule) -> list[str]:
    """A Markdown table of every sample's input tokens, shared prefix and cacheable part."""
    lines = ["| sample | input tokens | shared prefix | cacheable |", "|---|---|---|---|"]
    for s in est.samples:
        lines.append(
            f"| {s.id} | {s.input_tokens} | {s.shared_prefix} | "
            f"{min(cacheable(s.shared_prefix, rule), s.input_tokens)} |"
        )
    return lines

"""Cost estimator: the cache and cost rules on a worked example, and the command line. Its
full-context LoCoMo numbers against a direct token-by-token count are checked in
tests/docs/test_doc_figures.py, on the estimate docs/cost.md's figures come from (one build and
count of those 1,986 prompts for both checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevals.core.tokens import approx_token_count
from memevals.tools.estimate import (
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    CacheRule,
    Estimate,
    SampleTokens,
    cacheable,
    main,
    parse_task_args,
    shared_prefix_tokens,
)


def test_shared_prefix_stops_at_the_last_common_newline() -> None:
    prev = [("system", "alpha beta\ngamma delta\nepsilon"), ("user", "q1")]
    cur = [("system", "alpha beta\ngamma delta\nzeta"), ("user", "q1")]
    expected = MESSAGE_OVERHEAD + approx_token_count("alpha beta\ngamma delta\n")
    assert shared_prefix_tokens(prev, cur, approx_token_count) == expected
    same_system = [("system", prev[0][1]), ("user", "another question")]
    assert shared_prefix_tokens(prev, same_system, approx_token_count) == (
        2 * MESSAGE_OVERHEAD + approx_token_count(prev[0][1])
    )
    assert shared_prefix_tokens(prev, [("user", "x")], approx_token_count) == 0


def test_cache_rule_and_costs_worked_example() -> None:
    rule = CacheRule(min_tokens=1024, block=128)
    assert cacheable(1023, rule) == 0
    assert cacheable(1024, rule) == 1024
    assert cacheable(1500, rule) == 1024 + 3 * 128
    assert cacheable(1500, CacheRule(1, 1)) == 1500

    est = Estimate(
        task="t",
        task_args={},
        token_counter="approx",
        samples=[
            SampleTokens("a", 2000, 0),
            SampleTokens("b", 2100, 1500),
            SampleTokens("c", 500, 400),
        ],
        output_tokens_per_sample=10,
        output_tokens_source="test",
        notes=[],
    )
    assert est.input_tokens == 4600 and est.shared_prefix_tokens == 1900
    c = est.costs(price_in=1.0, price_out=2.0, cached_ratio=0.5, write_ratio=1.25, rule=rule)
    # cached: b reads 1,408; written: a's first 1,408 tokens (read by b); the rest at full price
    assert c.cached_tokens == 1408 and c.written_tokens == 1408
    assert c.without_cache == pytest.approx(4600e-6 + 30 * 2e-6)
    assert c.with_cache == pytest.approx((1784 + 1408 * 0.5 + 1408 * 1.25) * 1e-6 + 60e-6)
    with pytest.raises(ValueError, match="negative"):
        est.costs(price_in=-1, price_out=0)


def test_parse_task_args() -> None:
    args = ["context=none", "top_k=5", "judge=true", "retriever=null", "categories=a,b"]
    assert parse_task_args(args) == {
        "context": "none",
        "top_k": 5,
        "judge": True,
        "retriever": None,
        "categories": ["a", "b"],
    }
    with pytest.raises(ValueError, match="name=value"):
        parse_task_args(["context"])


def test_cli_prints_counts_and_costs(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "memevals/locomo_adversarial",
            "-T",
            "context=none",
            "--limit",
            "4",
            "--price-in",
            "1",
            "--price-out",
            "4",
            "--output-tokens",
            "5",
            "--token-counter",
            "approx",
            "--per-sample",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "samples: 4" in out
    assert "output tokens: 5 per sample (--output-tokens) = 20" in out
    assert "without caching: $" in out and "with caching:" in out
    rows = [line for line in out.splitlines() if line.startswith("| conv-")]
    assert len(rows) == 4
    # context=none: each sample is one user message, nothing is shared across questions
    sizes = [int(r.split("|")[2]) for r in rows]
    shared = [int(r.split("|")[3]) for r in rows]
    assert all(s > MESSAGE_OVERHEAD + REQUEST_OVERHEAD for s in sizes)
    assert all(x <= MESSAGE_OVERHEAD + 50 for x in shared)


def test_cli_rejects_unknown_task_and_parameter(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["no_such_task"])
    assert exc.value.code == 2
    assert "unknown task 'no_such_task'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["locomo", "-T", "contxt=full"])
    err = capsys.readouterr().err
    assert "locomo: no option 'contxt' (did you mean 'context'?)." in err
    assert "Options: adversarial, " in err and ", categories, context, " in err


def test_cli_prints_the_agent_write_pass_once_per_history(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`context=agent` (issue 37): the write pass's input tokens under every agent_memory, once
    per history the samples ask about (the first three LoCoMo questions: conv-26 only), equal
    to the agent module's own per-history figures; other modes print no such block."""
    from memevals.core.tokens import get_token_counter
    from memevals.inspect_tasks.agent_task import write_estimates
    from memevals.results.cost import build_task

    args = ["-T", "context=agent", "-T", "protocol=memevals", "--limit", "3"]
    assert main(["locomo", *args, "--token-counter", "approx"]) == 0
    out = capsys.readouterr().out
    assert "agent write pass (once per history, 1 history), input tokens:" in out
    shown = {
        line.split("=", 1)[1].split(":")[0]: int(line.split(": ")[1].split(" ")[0].replace(",", ""))
        for line in out.splitlines()
        if line.startswith("  agent_memory=")
    }
    task = build_task("locomo", {"context": "agent", "protocol": "memevals"})
    ids = [str(s.id) for s in list(task.dataset)[:3]]
    assert {i.split("-q")[0] for i in ids} == {"conv-26"}
    approx = get_token_counter("approx")  # the counter asked for, not the task's own
    assert write_estimates(task, sample_ids=ids, note_share=0.1, counter=approx) == {
        "conv-26": shown
    }
    assert shown["files"] == shown["mcp"] and shown["files+compaction"] > shown["compaction"]
    assert "notes the write pass reads back are assumed to be 10%" in out

    assert main(["locomo", "-T", "context=none", "--limit", "3"]) == 0
    assert "agent write pass" not in capsys.readouterr().out

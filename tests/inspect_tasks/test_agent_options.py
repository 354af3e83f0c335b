"""The agent mode's write length, MCP server checks and write-pass estimate (issue 37), through
the real CLIs: `-T agent_write_tokens` bounds every write-pass call and compaction summary (and
nothing else) and is logged; an MCP server with no tools is one line; `memevals-estimate`
counts the write pass with the `--token-counter` it was given."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from agent_runs import CONV, TWO, agent_eval, agent_log, agent_record, model_events
from cli_support import SUPPORT
from inspect_ai.log import read_eval_log
from scripted_agent import ANSWER, COMPACTED, SESSION, SUMMARY_REQUEST

from memevals.benchmarks.locomo.official import ANSWER_TOKENS
from memevals.core.tokens import get_token_counter
from memevals.inspect_tasks.agent_task import write_estimates
from memevals.results.cost import build_task
from memevals.tools.estimate import main as estimate_main


def test_write_tokens_bound_each_write_call_and_summary(tmp_path: Path) -> None:
    log = agent_log(
        tmp_path,
        *("--model", "scripted_agent/tools", "-T", "protocol=memevals", "--sample-id", TWO),
        *("-T", "agent_memory=compaction", "-T", "agent_compaction=summary"),
        *("-T", "agent_window=6000", "-T", "agent_write_tokens=77"),
    )
    assert log.eval.metadata is not None
    assert log.eval.metadata["agent"]["agent_write_tokens"] == 77
    # one sample made the write pass (the other waited for it): its sessions, its summaries,
    # then its answer
    first = max(log.samples or [], key=lambda s: len(model_events(s)))
    events = model_events(first)
    write = agent_record(first)["write"]
    *writes, answer = events
    assert len(writes) == write["model_calls"] and write["compactions"] >= 2
    summaries = [e for e in writes if SUMMARY_REQUEST in e.input[-1].text]
    assert len(summaries) == write["compactions"]
    sessions = [e for e in writes if e not in summaries]
    assert len(sessions) == write["sessions"]
    # a session's call ends with the session, or with the summary that took it in
    assert all(SESSION.match(e.input[-1].text) or COMPACTED in e.input[-1].text for e in sessions)
    assert {e.config.max_tokens for e in writes} == {77}
    # the answer keeps the benchmark's own limit
    assert answer.config.max_tokens == ANSWER_TOKENS
    for sample in log.samples or []:
        assert agent_record(sample)["agent_write_tokens"] == 77
        assert sample.output.completion == ANSWER


@pytest.mark.parametrize("value", ["0", "many"])
def test_a_bad_write_length_is_one_line(tmp_path: Path, value: str) -> None:
    done = agent_eval(
        tmp_path,
        *("--model", "scripted_agent/tools", "-T", "protocol=memevals"),
        *("-T", f"agent_write_tokens={value}"),
    )
    shown = "0" if value == "0" else f"'{value}'"
    assert done.returncode != 0
    out = done.stdout + done.stderr
    assert f"agent_write_tokens must be a whole number above 0, got {shown}" in out
    assert "Traceback" not in out


def test_an_mcp_server_without_tools_is_one_line(tmp_path: Path) -> None:
    """A server that starts and answers but lists no tool: every question of the history is
    an error naming the server (no write pass runs on no memory)."""
    server = f"{sys.executable} {SUPPORT / 'mcp_no_tools.py'}"
    agent_eval(
        tmp_path,
        *("--model", "scripted_agent/tools", "-T", "protocol=memevals", "--sample-id", TWO),
        *("-T", "agent_memory=mcp", "-T", f"agent_mcp={server}"),
    )
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    message = f"agent_mcp: the server {server} exposes no tools"
    assert log.status == "error" and log.error is not None
    assert message in log.error.message and "\n" not in log.error.message
    assert log.samples and len(log.samples) == 2
    for sample in log.samples:
        assert sample.error is not None and message in sample.error.message
        assert not sample.scores


#: conv-26's write-pass input tokens under each counter, as `memevals-estimate --limit 1`
#: prints them (10 % of each session assumed kept as notes)
BY_COUNTER = {
    "approx": {"files": 44_510, "compaction": 147_730, "files+compaction": 150_116},
    "cl100k_base": {"files": 44_934, "compaction": 149_047, "files+compaction": 151_455},
}


@pytest.mark.parametrize("counter", sorted(BY_COUNTER))
def test_the_estimate_counts_the_write_pass_with_the_counter_given(
    data_dir: Path, capsys: pytest.CaptureFixture[str], counter: str
) -> None:
    args = ["-T", "context=agent", "-T", "protocol=memevals", "--limit", "1"]
    assert estimate_main(["locomo", *args, "--token-counter", counter]) == 0
    out = capsys.readouterr().out
    assert f"token counter: {counter} " in out
    shown = {
        line.split("=", 1)[1].split(":")[0]: int(line.split(": ")[1].split(" ")[0].replace(",", ""))
        for line in out.splitlines()
        if line.startswith("  agent_memory=")
    }
    assert shown == {**BY_COUNTER[counter], "mcp": BY_COUNTER[counter]["files"]}
    # the agent module's own figures with that counter (the task's own is cl100k_base)
    task = build_task("locomo", {"context": "agent", "protocol": "memevals"})
    ids = [f"{CONV}-q0"]
    assert write_estimates(task, sample_ids=ids, counter=get_token_counter(counter)) == {
        CONV: shown
    }

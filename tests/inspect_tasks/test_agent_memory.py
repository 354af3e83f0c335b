"""`-T context=agent` (issue 37) through the real `inspect eval` CLI, run in-process, with the
scripted tool-calling model of tests/support/scripted_agent.py on LoCoMo's conv-26: the write
pass stores exactly what the model wrote, once per history (a rerun makes no write call), the
question is asked with no history and its reply is scored by the benchmark's scorer; compaction
happens exactly as often as the window says; every benchmark runs; bad input is one line."""

from __future__ import annotations

import json
import shutil
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import beam_grader  # noqa: F401  (registers beamgrader/rule for the in-process CLI runs)
import pytest
import scripted_judge  # noqa: F401  (registers scripted/strict)
from agent_runs import CONV, TWO, agent_eval, agent_log, agent_record, model_events
from cli_support import run_python
from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalLog, EvalSample, read_eval_log
from loopback_anthropic import LoopbackAnthropic
from loopback_responses import LoopbackResponses
from scripted_agent import ANSWER, COMPACTED, SESSION

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.prompts import answer_f1
from memevals.core.agent_memory import READING_INTRO
from memevals.core.options import AGENT_DEFAULTS
from memevals.core.tokens import get_token_counter
from memevals.inspect_tasks.agent_task import write_estimates
from memevals.inspect_tasks.locomo import locomo

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: The reference knowledge-graph memory server, installed from package.json (setup.sh --dev)
MEMORY_SERVER = (
    Path(__file__).resolve().parents[2]
    / "node_modules/@modelcontextprotocol/server-memory/dist/index.js"
)


def _model_inputs(sample: EvalSample) -> list[list[Any]]:
    return [e.input for e in model_events(sample)]


def _session_prompts(log: EvalLog) -> dict[int, str]:
    """Every write-pass session prompt any model call was sent, by session number."""
    out: dict[int, str] = {}
    for sample in log.samples or []:
        for sent in _model_inputs(sample):
            assert not any(m.text.startswith("attachment://") for m in sent)
            for m in sent:
                match = SESSION.match(m.text) if m.role == "user" else None
                if match:
                    out[int(match.group(1))] = m.text
    return out


def _metric(log: EvalLog, name: str) -> float:
    assert log.results is not None
    for score in log.results.scores:
        for key, value in score.metrics.items():
            if key.rsplit("/", 1)[-1] == name:
                return float(value.value)
    raise AssertionError(f"no metric {name}")


def _created(log: EvalLog) -> dict[str, str]:
    """The files the scripted model asked the memory tool to create, by path."""
    out: dict[str, str] = {}
    for sample in log.samples or []:
        for event in sample.events:
            if isinstance(event, ModelEvent):
                for call in event.output.message.tool_calls or []:
                    if call.arguments.get("command") == "create":
                        out[call.arguments["path"]] = call.arguments["file_text"]
    return out


def test_files_mode_stores_what_the_model_wrote_and_a_rerun_writes_nothing(
    tmp_path: Path, data_dir: Path
) -> None:
    log_first = agent_log(
        tmp_path, "--model", "scripted_agent/tools", "-T", "protocol=memevals", "--sample-id", TWO
    )
    conv = next(c for c in load_locomo(data_dir) if c.sample_id == CONV)
    n = len(conv.sessions)
    created = _created(log_first)
    assert set(created) == {f"/memories/session_{i}.md" for i in range(1, n + 1)}
    records = [agent_record(s) for s in log_first.samples or []]
    stored = json.loads((Path(records[0]["store"]) / "memories.json").read_text("utf-8"))
    assert stored == created  # exactly the files the model wrote
    for session in conv.sessions:
        assert session.date_time in created[f"/memories/session_{session.index}.md"]
    write = records[0]["write"]
    assert {r["write"]["key"] for r in records} == {write["key"]}
    assert write["sessions"] == n and write["tool_calls"] == {"create": n}
    assert write["model_calls"] == 2 * n and write["steps_exhausted"] == 0
    assert write["memory_files"] == n
    assert write["memory_bytes"] == sum(len(t.encode("utf-8")) for t in created.values())
    assert not write["cached"]
    # each session's calls are bounded by agent_write_tokens, its default unless given
    default = AGENT_DEFAULTS["agent_write_tokens"]
    assert {r["agent_write_tokens"] for r in records} == {default}
    calls = [e for s in log_first.samples or [] for e in model_events(s)]
    sessions = [e for e in calls if any(SESSION.match(m.text) for m in e.input)]
    assert len(sessions) == 2 * n and {e.config.max_tokens for e in sessions} == {default}
    assert _metric(log_first, "write_passes") == 1
    assert _metric(log_first, "write_model_calls") == 2 * n
    # the estimate before a run counts exactly the session prompts the model was sent
    sent = _session_prompts(log_first)
    assert len(sent) == n
    task = locomo(context="agent", protocol="memevals")
    counter = get_token_counter()  # the task's own (token_counter=auto)
    prompts = sum(counter(t) for t in sent.values())
    assert write_estimates(task, note_share=0.0)[CONV]["files"] == prompts
    assert write_estimates(task)[CONV]["files"] > prompts  # notes read back on top
    for sample in log_first.samples or []:
        _answered_without_history(sample, created)
    # a rerun reads the stored write pass: no session is sent to the model again
    rerun = agent_log(
        tmp_path,
        *("--model", "scripted_agent/tools", "-T", "protocol=memevals", "--sample-id", TWO),
        log_dir="rerun",
    )
    assert _session_prompts(rerun) == {}
    assert all(agent_record(s)["write"]["cached"] for s in rerun.samples or [])
    assert {agent_record(s)["write"]["key"] for s in rerun.samples or []} == {write["key"]}
    assert _metric(rerun, "write_passes") == 0


def _answered_without_history(sample: EvalSample, created: dict[str, str]) -> None:
    """The answer pass: the question alone (no turn of the conversation), the memory tool
    seeded with the stored files, the reply scored by LoCoMo's F1."""
    users = [m.text for m in sample.messages if m.role == "user"]
    assert len(users) == 1 and str(sample.metadata["question"]) in users[0]
    assert ' said, "' not in users[0]
    assert not any(text[-200:] in users[0] for text in created.values())
    assert agent_record(sample)["answer_tool_calls"] == {"view": 1}
    listing = next(m.text for m in sample.messages if m.role == "tool")
    assert "/memories/session_1.md" in listing
    assert sample.output.completion == ANSWER
    assert sample.scores is not None
    f1 = sample.scores["locomo_f1_scorer"].value
    assert f1 == pytest.approx(answer_f1(ANSWER, sample.metadata)[0])


def _summary_count(sizes: list[int], intro: int, summary: int, window: int) -> int:
    """Hand calculation of CompactionSummary over the sessions: before each call, the context
    (the intro, what is left, the new session) over the window is summarised, the summary
    replacing everything but the intro; each reply adds one word ("Noted.")."""
    context, count = intro, 0
    for size in sizes:
        if context + size > window:
            count, context = count + 1, intro + summary
        else:
            context += size
        context += 1
    return count + int(context > window)


#: CompactionTrim's default share of the messages kept
PRESERVE = 0.8


def _trim_count(sizes: list[int], intro: int, window: int) -> int:
    """Hand calculation of CompactionTrim (preserve 0.8): over the window, the oldest fifth of
    the messages after the intro goes (again while still over, in the same compaction), a
    trailing reply too."""
    kept: list[tuple[str, int]] = []
    count = 0
    for size in sizes:
        kept.append(("user", size))
        if intro + sum(w for _, w in kept) > window:
            count += 1
            while intro + sum(w for _, w in kept) > window:
                # the share dropped as Inspect computes it: 1 - preserve, in floating point
                # (1 - 0.8 is just under 0.2, so 15 messages lose 2, not 3)
                kept = kept[int(len(kept) * (1 - PRESERVE)) :]
                if kept and kept[-1][0] == "assistant":
                    kept.pop()
        kept.append(("assistant", 1))
    return count + int(intro + sum(w for _, w in kept) > window)


@pytest.mark.parametrize(("strategy", "window"), [("summary", 6000), ("trim", 8000)])
def test_compaction_happens_as_often_as_the_window_says(
    tmp_path: Path, strategy: str, window: int
) -> None:
    log = agent_log(
        tmp_path,
        *("--model", "scripted_agent/tools", "-T", "protocol=memevals", "--sample-id", TWO),
        *("-T", "agent_memory=compaction", "-T", f"agent_compaction={strategy}"),
        *("-T", f"agent_window={window}"),
    )
    prompts = _session_prompts(log)
    sizes = [len(prompts[i].split()) for i in sorted(prompts)]
    intro = len(READING_INTRO.split())
    write = agent_record((log.samples or [])[0])["write"]
    if strategy == "summary":
        # Inspect joins the summary to the intro before it (two user messages in a row)
        summaries = {
            m.text[m.text.index(COMPACTED) :]
            for sample in log.samples or []
            for sent in _model_inputs(sample)
            for m in sent
            if COMPACTED in m.text
        }
        (summary,) = summaries
        expected = _summary_count(sizes, intro, len(summary.split()), window)
    else:
        expected = _trim_count(sizes, intro, window)
    assert expected >= 2
    assert write["compactions"] == expected
    assert write["tool_calls"] == {} and write["memory_files"] == 0
    # the stored context is logged for the report's question view: the compacted messages
    stored = json.loads((Path(agent_record(log.samples[0])["store"]) / "messages.json").read_text())
    [logged] = agent_record((log.samples or [])[0])["memory"]
    assert logged["path"] == "messages.json" and logged["messages"] == len(stored) > 0
    assert logged["text"].startswith("user: ") and logged["chars"] >= len(logged["text"])
    for sample in log.samples or []:
        # the question is asked at the end of the stored, compacted context
        first, last = sample.messages[0], [m for m in sample.messages if m.role == "user"][-1]
        assert first.text.startswith(READING_INTRO)
        assert str(sample.metadata["question"]) in last.text
        assert sample.output.completion == ANSWER


def test_files_and_compaction_together(tmp_path: Path) -> None:
    log = agent_log(
        tmp_path,
        *("--model", "scripted_agent/tools", "-T", "protocol=memevals", "--sample-id", TWO),
        *("-T", "agent_memory=files+compaction", "-T", "agent_compaction=summary"),
        *("-T", "agent_window=6000"),
    )
    for sample in log.samples or []:
        write = agent_record(sample)["write"]
        assert write["compactions"] > 0 and write["memory_files"] > 0
        assert write["message_tokens"] > 0
        assert agent_record(sample)["answer_tool_calls"] == {"view": 1}
        assert sample.output.completion == ANSWER


def test_spent_rounds_are_counted_not_errors(tmp_path: Path, data_dir: Path) -> None:
    log = agent_log(
        tmp_path,
        *("--model", "scripted_agent/busy", "-T", "protocol=memevals", "--sample-id", TWO),
        *("-T", "agent_steps=2"),
    )
    n = len(next(c for c in load_locomo(data_dir) if c.sample_id == CONV).sessions)
    write = agent_record((log.samples or [])[0])["write"]
    assert write["steps_exhausted"] == n and write["model_calls"] == 3 * n
    assert write["tool_calls"] == {"create": n, "view": 2 * n}


@pytest.mark.skipif(
    shutil.which("node") is None or not MEMORY_SERVER.is_file() or not find_spec("mcp"),
    reason="needs node, @modelcontextprotocol/server-memory (package.json) and the mcp package",
)
def test_mcp_memory_server_holds_what_the_model_wrote(tmp_path: Path, data_dir: Path) -> None:
    """The real reference server over stdio: the entities the scripted model created are in
    its snapshot, and each answer reads them back from a copy."""
    server = f"MEMORY_FILE_PATH={{store}}/memory.jsonl node {MEMORY_SERVER}"
    log = agent_log(
        tmp_path,
        *("--model", "scripted_agent/tools", "-T", "protocol=memevals", "--sample-id", TWO),
        *("-T", "agent_memory=mcp", "-T", f"agent_mcp={server}"),
    )
    conv = next(c for c in load_locomo(data_dir) if c.sample_id == CONV)
    wrote = {f"session_{s.index}": [f"held on {s.date_time}"] for s in conv.sessions}
    record = agent_record((log.samples or [])[0])
    snapshot = (Path(record["store"]) / "memories.json").read_text("utf-8")
    (graph,) = json.loads(snapshot).values()
    rows = [json.loads(line) for line in graph.splitlines() if line.strip()]
    assert {r["name"]: r["observations"] for r in rows if r["type"] == "entity"} == wrote
    assert record["write"]["tool_calls"] == {"create_entities": len(wrote)}
    for sample in log.samples or []:
        assert agent_record(sample)["answer_tool_calls"] == {"read_graph": 1}
        read = next(m.text for m in sample.messages if m.role == "tool")
        assert all(f"session_{s.index}" in read and s.date_time in read for s in conv.sessions)
        users = [m.text for m in sample.messages if m.role == "user"]
        assert len(users) == 1 and ' said, "' not in users[0]
        assert sample.output.completion == ANSWER


def test_claude_is_sent_its_native_memory_tool_in_both_passes(tmp_path: Path) -> None:
    """Inspect's real anthropic provider against a loopback Messages API: every write-pass and
    answer-pass request carries the memory tool as Anthropic's `memory_20250818`."""
    with LoopbackAnthropic() as server:
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test"}
        log = agent_log(
            tmp_path,
            *("--model", "anthropic/claude-sonnet-4-5", "-T", "protocol=memevals"),
            *("--sample-id", f"{CONV}-q0"),
            env=env,
        )
    (sample,) = log.samples or []

    def first_user(body: dict[str, Any]) -> str:
        first = body["messages"][0]["content"]
        return first if isinstance(first, str) else str(first[0].get("text", ""))

    writes = [b for b in server.requests if SESSION.match(first_user(b))]
    answers = [b for b in server.requests if str(sample.metadata["question"]) in first_user(b)]
    assert len(writes) == 2 * agent_record(sample)["write"]["sessions"] and len(answers) == 2
    for body in writes + answers:
        assert [(t.get("type"), t.get("name")) for t in body["tools"]] == [
            ("memory_20250818", "memory")
        ]
    assert sample.output.completion == ANSWER


def test_native_compaction_calls_the_responses_compact_endpoint(tmp_path: Path) -> None:
    """CompactionNative through Inspect's real openai provider (Responses API) against a
    loopback server: each compaction the write pass logs is one call of the compact endpoint."""
    with LoopbackResponses() as server:
        env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test"}
        log = agent_log(
            tmp_path,
            *("--model", "openai/gpt-5-mini", "-M", "responses_api=true"),
            *("-T", "protocol=memevals", "--sample-id", f"{CONV}-q0"),
            *("-T", "agent_memory=compaction", "-T", "agent_compaction=native"),
            *("-T", "agent_window=8000"),
            env=env,
        )
    (sample,) = log.samples or []
    compacts = server.paths.count("/v1/responses/compact")
    assert compacts >= 1
    assert agent_record(sample)["write"]["compactions"] == compacts
    assert sample.output.completion == ANSWER


@pytest.mark.parametrize(
    ("task", "args", "scorer"),
    [
        ("memevals/locomo_plus", ["-T", "categories=cognitive"], "locomo_plus_judge"),
        (
            "memevals/longmemeval",
            ["-T", f"data_dir={FIXTURES}", "-T", "verify_checksum=false", "-T", "variant=s"],
            "longmemeval_judge",
        ),
        ("memevals/beam", ["--limit", "1"], "beam_judge"),
    ],
)
def test_every_benchmark_runs_judged(
    tmp_path: Path, task: str, args: list[str], scorer: str
) -> None:
    grader = "beamgrader/rule" if "beam" in task else "scripted/strict"
    log = agent_log(
        tmp_path,
        *("--model", "scripted_agent/tools", "--model-role", f"grader={grader}"),
        *("-T", "protocol=memevals", *(args if "--limit" in args else ["--limit", "2", *args])),
        task=task,
    )
    for sample in log.samples or []:
        write = agent_record(sample)["write"]
        assert write["memory_files"] == write["sessions"] > 0
        assert sample.output.completion == ANSWER
        assert sample.scores is not None and scorer in sample.scores


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "protocol=official has no agent mode (context=agent); add -T protocol=memevals"),
        (["-T", "protocol=memevals", "-T", "agent_memory=filez"], "did you mean 'files'?"),
        (
            ["-T", "protocol=memevals", "-T", "agent_window=100"],
            "agent_window applies only with agent_memory=compaction or files+compaction",
        ),
        (["-T", "protocol=memevals", "-T", "top_k=3"], "top_k does not apply with context=agent"),
        (
            ["-T", "protocol=memevals", "-T", "agent_memory=mcp", "-T", "agent_mcp=no-such-server"],
            "agent_mcp: the command 'no-such-server' is not found",
        ),
    ],
)
def test_bad_options_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    done = agent_eval(tmp_path, "--model", "scripted_agent/tools", *args)
    assert done.returncode != 0
    assert message in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            "plain",
            "model scripted_agent/plain returned no tool call when asked to use the memory "
            "tool: agent_memory=files needs a tool-calling model; -T agent_memory=compaction "
            "needs no tools",
        ),
        ("viewer", f"the write pass of {CONV} stored nothing"),
    ],
)
def test_a_write_pass_that_cannot_keep_memory_is_an_error(
    tmp_path: Path, model: str, message: str
) -> None:
    done = agent_eval(
        tmp_path,
        *("--model", f"scripted_agent/{model}", "-T", "protocol=memevals", "--sample-id", TWO),
    )
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "error" and log.error is not None, done.stderr[-2000:]
    assert message in log.error.message
    for sample in log.samples or []:
        assert sample.error is not None and message in sample.error.message
        assert not sample.scores


def test_lm_eval_refuses_the_agent_mode(tmp_path: Path) -> None:
    from memevals.lm_eval_tasks import include_path

    done = run_python(
        [
            *(sys.executable, "-m", "lm_eval", "--model", "dummy", "--tasks", "locomo"),
            *("--include_path", include_path(), "--limit", "1"),
            *("--metadata", '{"context": "agent"}'),
        ],
        cwd=tmp_path,
    )
    assert "context=agent needs a tool loop, which lm-eval does not have" in done.stderr


def test_lm_eval_refuses_an_agent_option_given_alone() -> None:
    """An agent option without context=agent reaches lm-eval's options (the Inspect tasks take
    them out first): refused in one line rather than dropped unseen."""
    from memevals.benchmarks.locomo.samples import LocomoOptions
    from memevals.core.options import OptionValueError, options_from

    with pytest.raises(OptionValueError) as err:
        options_from(LocomoOptions, {"agent_memory": "files"}, where="locomo", strict=False)
    assert str(err.value) == (
        "locomo: agent_memory is an option of context=agent, which needs a tool loop that "
        "lm-eval does not have; run it with Inspect (docs/lm-eval.md#no-agent-mode)"
    )

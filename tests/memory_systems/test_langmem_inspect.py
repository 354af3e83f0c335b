"""LangMem end to end through the real `inspect eval` CLI: langmem's memory store manager over
LangGraph's InMemoryStore with the local MiniLM embedder, its LLM a loopback
OpenAI-compatible server on 127.0.0.1 started and stopped here, answering the manager's
tool calls deterministically (tests/support/loopback_langmem.py).

- LoCoMo `--limit 20`: conv-26 ingested once (one manager call per session), every LLM call
  counted, evidence recall from the turns the memories cite, latency in the log, LangSmith
  tracing asked for in the environment and still off; then one `inspect eval` of a task file
  running bm25, mem0, graphiti and langmem over the same cache, whose langmem task ingests
  nothing, and `memevals-compare` tabulating the four.
- The LongMemEval fixture, whose endpoint fails for one question's haystack until trustcall
  gives up: exactly that sample errors, and `--retry-on-error` recovers it.

torch gets one thread in the CLI runs (OMP_NUM_THREADS=1): on a shared 2-core machine torch's
default of one per core makes each small encoding wait for a busy core (docs/performance.md).
"""

from __future__ import annotations

import csv
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalLog, read_eval_log
from loopback_graphiti import graphiti_facts
from loopback_guard import needs, run_guarded
from loopback_langmem import LangMemScript, LoopbackTools
from loopback_openai import HttpFailure, LoopbackOpenAI, mem0_facts

from memevals.benchmarks.locomo.data import load_locomo

pytestmark = [
    pytest.mark.server,
    needs(
        langmem="langmem",
        graphiti_core="graphiti",
        mem0="mem0",
        sentence_transformers="embeddings",
    ),
]

TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "fixtures"
#: mem0's adds and graphiti's episodes on LoCoMo: conv-26's 419 turns in 19 chunks, one per
#: session, as LangMem's manager calls are (keeps the comparison cheap).
TURNS_PER_CHUNK = 40
SECRET = "test-key-langmem-4711"
SYSTEMS = ("bm25", "mem0", "graphiti", "langmem")


def _env(tmp: Path) -> dict[str, str]:
    return {
        "MEMEVALS_CACHE_DIR": str(tmp / "cache"),
        "OPENAI_API_KEY": SECRET,
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        # asked for, and refused by the adapter: with it on, LangSmith would post every
        # manager call to its cloud, which the guard below would catch
        "LANGSMITH_TRACING": "true",
        "LANGCHAIN_TRACING_V2": "true",
        "LANGSMITH_API_KEY": "lsv2-test-not-a-key",
    }


def _inspect(args: list[str], cwd: Path) -> None:
    """The real Inspect CLI (offline mockllm token count), run in this process by
    tests/support/loopback_guard.py, whose guard lets its sockets reach loopback only for the
    run (nothing is refused: `refused.txt` stays absent)."""
    script = str(TESTS / "support" / "inspect_offline.py")
    done = run_guarded(script, ["eval", *args, "--display", "none"], cwd, env=_env(cwd))
    assert done.returncode == 0, done.stderr[-3000:]
    refused = cwd / "refused.txt"
    assert not refused.exists(), f"something tried the network: {refused.read_text()}"


def _logs(folder: Path) -> list[EvalLog]:
    return [read_eval_log(str(p)) for p in sorted(folder.glob("*.eval"))]


def _metrics(log: EvalLog) -> dict[str, dict[str, float]]:
    assert log.results is not None
    return {s.name: {k: v.value for k, v in s.metrics.items()} for s in log.results.scores}


def _langmem_args(url: str) -> dict[str, Any]:
    return {"llm_base_url": url, "llm_model": "loopback", "llm_max_retries": 0}


TASK_FILE = """
from inspect_ai import task

from memevals.inspect_tasks.locomo import locomo


@task
def bm25():
    return locomo(memory="bm25")


@task
def mem0():
    return locomo(memory="mem0", memory_args={mem0!r})


@task
def graphiti():
    return locomo(memory="graphiti", memory_args={graphiti!r})


@task
def langmem():
    return locomo(memory="langmem", memory_args={langmem!r})
"""


def _mem0_one_fact(body: dict[str, Any]) -> str:
    """mem0's extraction reply with one fact per add: few memories keep mem0 cheap."""
    memory = json.loads(mem0_facts(body))["memory"][:1]
    return json.dumps({"memory": memory})


def test_langmem_on_locomo_then_a_rerun_and_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One test for the checks of one set of runs (a module fixture would run again on each
    xdist worker that draws one of them)."""
    script = LangMemScript()
    with (
        LoopbackTools(script) as langmem_llm,
        LoopbackOpenAI(_mem0_one_fact) as mem0_llm,
        LoopbackOpenAI(graphiti_facts) as graphiti_llm,
    ):
        args = tmp_path / "langmem.json"
        args.write_text(json.dumps(_langmem_args(langmem_llm.url)))
        _inspect(
            [
                *("memevals/locomo", "--model", "mockllm/model", "--limit", "20"),
                *("-T", "memory=langmem", "-T", f"memory_args={args}", "--log-dir", "first"),
            ],
            tmp_path,
        )
        first_calls, first_probes = langmem_llm.count, len(langmem_llm.probes)
        tasks = tmp_path / "systems.py"
        tasks.write_text(
            TASK_FILE.format(
                mem0={"llm_base_url": mem0_llm.url, "turns_per_add": TURNS_PER_CHUNK},
                graphiti={
                    "llm_base_url": graphiti_llm.url,
                    "llm_model": "loopback",
                    "turns_per_episode": TURNS_PER_CHUNK,
                    "llm_max_retries": 0,
                },
                langmem=_langmem_args(langmem_llm.url),
            )
        )
        _inspect(
            [tasks.name, "--model", "mockllm/model", "--limit", "20", "--log-dir", "systems"],
            tmp_path,
        )
        all_calls, all_probes = langmem_llm.count, len(langmem_llm.probes)
        assert mem0_llm.count > 0 and graphiti_llm.count > 0

    # -- the first run: one ingestion, every call counted, recall from cited turns -----------
    (log,) = _logs(tmp_path / "first")
    assert log.status == "success" and log.samples and len(log.samples) == 20
    conv = load_locomo()[0]
    memory = _metrics(log)["memory_system"]
    assert memory["ingestions"] == 1 and memory["cache_hits"] == 0
    assert 0 < memory["latency_p50_s"] <= memory["latency_p95_s"] <= memory["latency_p99_s"]
    assert memory["mean_items"] == 5
    ingest = log.samples[0].metadata["memory_ingest"]
    # one manager call per session, each one chat completion, all of them in the record
    assert ingest["llm_calls"] == first_calls == script.kinds["manager"] == len(conv.sessions)
    # the endpoint check, once per process, before ingesting: the tool-call probe and one
    # manager call on the two-turn test session
    assert first_probes == 2
    assert ingest["extra"]["manager_calls"] == len(conv.sessions) == 19
    # the scripted LLM writes one memory per speaker of a session
    assert ingest["items_stored"] == sum(len({t.speaker for t in s.turns}) for s in conv.sessions)
    assert ingest["extra"]["llm_input_tokens"] > 0 and ingest["extra"]["llm_output_tokens"] > 0
    assert ingest["model_calls"] == 0 and build_seconds(log) > 0
    # each memory cites the turns of its session's call: the retrieved ids are whole sessions
    sessions = [frozenset(t.dia_id for t in s.turns) for s in conv.sessions]
    for sample in log.samples:
        assert sample.error is None
        assert sample.metadata["memory_ingest"]["key"] == ingest["key"]
        retrieved = set(sample.metadata["retrieved_ids"])
        assert retrieved and retrieved == set().union(*(s for s in sessions if s & retrieved))
        assert " said: " in sample.messages[0].text  # LangMem's memories, not the raw turns
    evidence = _metrics(log)["evidence_recall"]["mean"]
    assert 0 < evidence <= 1
    assert log.eval.metadata is not None
    assert log.eval.metadata["memory"]["memory"] == "langmem"
    assert SECRET not in json.dumps(log.eval.metadata)

    # -- the rerun: the task file's langmem task reads the store, asks the LLM nothing ------
    logs = {str(x.eval.task).split("/")[-1]: x for x in _logs(tmp_path / "systems")}
    assert sorted(logs) == sorted(SYSTEMS)
    assert all(x.status == "success" for x in logs.values())
    again = logs["langmem"]
    # no manager call; the endpoint check of the new process, when its tasks were built
    assert (all_calls, all_probes) == (first_calls, 2 * first_probes)
    rerun = _metrics(again)["memory_system"]
    assert (rerun["ingestions"], rerun["cache_hits"]) == (0, 1)
    before = {s.id: s.metadata["retrieved_ids"] for s in log.samples}
    assert again.samples and {s.id: s.metadata["retrieved_ids"] for s in again.samples} == before

    # -- memevals-compare: bm25, mem0, graphiti and langmem in one table ---------------------
    from memevals.tools.compare import main as compare

    out = tmp_path / "rows.csv"
    folders = [str(tmp_path / "first"), str(tmp_path / "systems")]
    assert compare(["--no-png", "--csv", str(out), *folders]) == 0
    table = capsys.readouterr().out
    with out.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    names = sorted(r["memory_system"].split(" ")[0] for r in rows)
    assert names == sorted([*SYSTEMS, "langmem"])  # langmem built, then read again
    for name in SYSTEMS:
        assert name in table, name
    langmem = [r for r in rows if r["memory_system"].startswith("langmem")]
    assert sorted(r["memory_ingestions"] for r in langmem) == ["0", "1"]
    built = next(r for r in langmem if r["memory_ingestions"] == "1")
    assert int(built["memory_build_llm_calls"]) == first_calls
    assert float(built["memory_build_seconds"]) > 0
    assert SECRET not in table


def build_seconds(log: EvalLog) -> float:
    return float(_metrics(log)["memory_system"]["build_seconds"])


# --------------------------------------------------------------------------------------------
# LongMemEval

LIMIT = 2
FAILING_QUESTION = "fx02c4d5"


def _marker() -> str:
    """A line only FAILING_QUESTION's haystack holds: its evidence session's first turn."""
    data = json.loads((FIXTURES / "longmemeval" / "longmemeval_s_cleaned.json").read_text())
    by_id = {q["question_id"]: q for q in data}
    failing = by_id[FAILING_QUESTION]
    (answer,) = failing["answer_session_ids"]
    first = failing["haystack_sessions"][failing["haystack_session_ids"].index(answer)][0]
    others = [q for q in data[:LIMIT] if q is not failing]
    assert not any(first["content"] in json.dumps(q) for q in others)
    return str(first["content"])


class FailFor:
    """The scripted LLM, answering HTTP 500 to the first `times` requests that carry
    `marker`."""

    def __init__(self, marker: str, times: int) -> None:
        self.marker = marker
        self.times = times
        self.failed = 0
        self.script = LangMemScript()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any] | HttpFailure:
        with self.lock:
            if self.failed < self.times and self.marker in json.dumps(body, ensure_ascii=False):
                self.failed += 1
                return HttpFailure(500, "loopback model overloaded")
        return self.script(body)


def test_langmem_on_the_longmemeval_fixture(tmp_path: Path) -> None:
    from langchain_core.runnables.config import DEFAULT_RECURSION_LIMIT

    # trustcall asks again after a failed call (a "fix the error" message) until LangGraph's
    # recursion limit: an endpoint failing that often for one haystack fails its ingestion
    # (a single failure is absorbed: test_langmem_system.py)
    fail = FailFor(_marker(), times=DEFAULT_RECURSION_LIMIT)
    with LoopbackTools(fail) as server:
        args = tmp_path / "langmem.json"
        args.write_text(json.dumps(_langmem_args(server.url)))
        _inspect(
            [
                *("memevals/longmemeval_s", "--model", "mockllm/model", "--limit", str(LIMIT)),
                *("-T", f"data_dir={FIXTURES}", "-T", "verify_checksum=false"),
                *("-T", "memory=langmem", "-T", f"memory_args={args}"),
                *("--retry-on-error=1", "--log-dir", "logs"),
            ],
            tmp_path,
        )
    assert fail.failed == DEFAULT_RECURSION_LIMIT
    (log,) = _logs(tmp_path / "logs")
    assert log.status == "success" and log.samples and len(log.samples) == LIMIT
    by_id = {str(s.id): s for s in log.samples}
    # exactly the sample whose haystack met the failure erred, with the endpoint's message,
    # and Inspect's retry ingested its haystack again
    assert {sid for sid, s in by_id.items() if s.error_retries} == {FAILING_QUESTION}
    (error,) = by_id[FAILING_QUESTION].error_retries or []
    assert f"ingestion of {FAILING_QUESTION} failed" in error.message
    assert "loopback model overloaded" in error.message
    assert all(s.error is None for s in log.samples)
    memory = _metrics(log)["memory_system"]
    assert memory["ingestions"] == LIMIT
    assert log.eval.metadata and log.eval.metadata["retrieval_depth"] == 50
    # each haystack's memories cite its sessions' turns: the evidence session is found
    for sample in log.samples:
        assert sample.metadata["retrieval_scores"]["recall_any@50"] == 1

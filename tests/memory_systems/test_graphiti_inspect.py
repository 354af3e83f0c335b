"""graphiti end to end through the real `inspect eval` CLI: graphiti-core over Kuzu with the
local MiniLM embedder and reranker, its LLM a loopback OpenAI-compatible server on 127.0.0.1
started and stopped here, answering graphiti's structured-output calls deterministically
(tests/support/loopback_graphiti.py).

- LoCoMo `--limit 20`: conv-26 ingested once, every LLM call counted, evidence recall from the
  turn ids the facts cite, latency in the log; then one `inspect eval` of a task file running
  bm25, embedding, observations (scripted memory model), mem0 and graphiti over the same
  cache, whose graphiti task ingests nothing, and `memevals-compare` tabulating them all.
- The LongMemEval fixture, a copy in which one question's evidence session is dated after the
  question (graphiti must not return its facts) and whose endpoint fails once for another
  question's haystack: exactly that sample errors, and `--retry-on-error` recovers it.

torch gets one thread in the CLI runs (OMP_NUM_THREADS=1): on a shared 2-core machine torch's
default of one per core makes each small encoding wait for a busy core (docs/performance.md).
"""

from __future__ import annotations

import csv
import json
import math
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalLog, read_eval_log
from loopback_graphiti import graphiti_facts, schema_name
from loopback_guard import needs, run_guarded
from loopback_openai import HttpFailure, LoopbackOpenAI, mem0_facts

from memevals.benchmarks.locomo.data import load_locomo

pytestmark = [
    pytest.mark.server,
    needs(graphiti_core="graphiti", mem0="mem0", sentence_transformers="embeddings"),
]

TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "fixtures"
#: Turns per graphiti episode on LoCoMo: conv-26's 419 turns in 19 episodes, one per session
#: (each fact still cites its episode's turns); mem0's adds likewise.
TURNS_PER_EPISODE = 40
SECRET = "test-key-graphiti-4711"
SYSTEMS = ("bm25", "embedding", "observations", "mem0", "graphiti")
#: socket.connect before any guard (the guard must not outlive a run)
_UNGUARDED_CONNECT = socket.socket.connect


def _env(tmp: Path) -> dict[str, str]:
    return {
        "MEMEVALS_CACHE_DIR": str(tmp / "cache"),
        "OPENAI_API_KEY": SECRET,
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    }


def _inspect(script: str, args: list[str], cwd: Path) -> None:
    """The real Inspect CLI through one of the tests' entry scripts (offline mockllm token
    count; scripted_memory.py also registers the scripted memory model), run in this process
    by tests/support/loopback_guard.py, whose guard lets its sockets reach loopback only for
    the run (nothing is refused: `refused.txt` stays absent)."""
    script_path = str(TESTS / "support" / script)
    done = run_guarded(
        script_path, ["eval", *args, "--display", "none"], cwd, env=_env(cwd), timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    refused = cwd / "refused.txt"
    assert not refused.exists(), f"something tried the network: {refused.read_text()}"


def test_the_cli_guard_refuses_the_network(tmp_path: Path) -> None:
    """What the guard of every CLI run here catches: a connection beyond loopback; and it is
    gone after the run."""
    (tmp_path / "dial.py").write_text(
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 443), timeout=1)\n"
        "except OSError as exc:\n"
        "    print(exc)\n"
    )
    done = run_guarded("dial.py", [], tmp_path)
    assert "test: no network (('192.0.2.1', 443))" in done.stdout
    assert (tmp_path / "refused.txt").read_text() == "('192.0.2.1', 443)\n"
    assert socket.socket.connect is _UNGUARDED_CONNECT


def _logs(folder: Path) -> list[EvalLog]:
    return [read_eval_log(str(p)) for p in sorted(folder.glob("*.eval"))]


def _metrics(log: EvalLog) -> dict[str, dict[str, float]]:
    assert log.results is not None
    return {s.name: {k: v.value for k, v in s.metrics.items()} for s in log.results.scores}


def _graphiti_args(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "llm_base_url": url,
        "llm_model": "loopback",
        "turns_per_episode": TURNS_PER_EPISODE,
        "llm_max_retries": 0,
        **extra,
    }


TASK_FILE = """
from inspect_ai import task

from memevals.inspect_tasks.locomo import locomo

GRAPHITI = {graphiti!r}
MEM0 = {mem0!r}


@task
def bm25():
    return locomo(memory="bm25")


@task
def embedding():
    return locomo(memory="embedding")


@task
def observations():
    return locomo(memory="observations")


@task
def mem0():
    return locomo(memory="mem0", memory_args=MEM0)


@task
def graphiti():
    return locomo(memory="graphiti", memory_args=GRAPHITI)
"""


def _mem0_one_fact(body: dict[str, Any]) -> str:
    """mem0's extraction reply with one fact per add (its first message's): few memories to
    embed keep mem0's side of the comparison cheap."""
    memory = json.loads(mem0_facts(body))["memory"][:1]
    return json.dumps({"memory": memory})


class Counted:
    """The scripted graphiti LLM, counting the calls of each kind."""

    def __init__(self) -> None:
        self.kinds: dict[str | None, int] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self.lock:
            name = schema_name(body)
            self.kinds[name] = self.kinds.get(name, 0) + 1
        return graphiti_facts(body)


def _locomo_runs(root: Path) -> dict[str, Any]:
    """`memory=graphiti` on LoCoMo through the CLI, then the five systems from one task file,
    all over one memory cache."""
    counted = Counted()
    with LoopbackOpenAI(counted) as graphiti_llm, LoopbackOpenAI(_mem0_one_fact) as mem0_llm:
        args = root / "graphiti.json"
        args.write_text(json.dumps(_graphiti_args(graphiti_llm.url)))
        _inspect(
            "inspect_offline.py",
            [
                *("memevals/locomo", "--model", "mockllm/model", "--limit", "20"),
                *("-T", "memory=graphiti", "-T", f"memory_args={args}", "--log-dir", "first"),
            ],
            root,
        )
        first_calls = graphiti_llm.count
        mem0_args = {"llm_base_url": mem0_llm.url, "turns_per_add": TURNS_PER_EPISODE}
        tasks = root / "systems.py"
        tasks.write_text(
            TASK_FILE.format(graphiti=_graphiti_args(graphiti_llm.url), mem0=mem0_args)
        )
        _inspect(
            "scripted_memory.py",
            [
                *(tasks.name, "--model", "mockllm/model", "--limit", "20"),
                *("--model-role", "memory=scripted_memory/facts", "--log-dir", "systems"),
                # the five tasks at once: the embedders of two of them overlap the others' waits
                *("--max-tasks", str(len(SYSTEMS))),
            ],
            root,
        )
        return {
            "root": root,
            "first": _logs(root / "first"),
            "systems": {str(log.eval.task).split("/")[-1]: log for log in _logs(root / "systems")},
            "first_calls": first_calls,
            "kinds": dict(counted.kinds),
            "all_calls": graphiti_llm.count,
            "mem0_calls": mem0_llm.count,
        }


def test_graphiti_on_locomo_then_a_rerun_and_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One test for the three checks of one set of runs (a module fixture would run again on
    each xdist worker that draws one of them)."""
    runs = _locomo_runs(tmp_path)
    _first_run(runs)
    _rerun(runs)
    _compare(runs, tmp_path, capsys)


def _first_run(locomo_runs: dict[str, Any]) -> None:
    """LoCoMo --limit 20: one ingestion, every LLM call counted, evidence recall, latency."""
    (log,) = locomo_runs["first"]
    assert log.status == "success" and log.samples and len(log.samples) == 20
    conv = load_locomo()[0]
    episodes = sum(math.ceil(len(s.turns) / TURNS_PER_EPISODE) for s in conv.sessions)
    memory = _metrics(log)["memory_system"]
    assert memory["ingestions"] == 1 and memory["cache_hits"] == 0
    assert 0 < memory["latency_p50_s"] <= memory["latency_p95_s"] <= memory["latency_p99_s"]
    assert memory["mean_items"] <= 5
    # every call the endpoint received is in the ingestion record, none at retrieval
    ingest = log.samples[0].metadata["memory_ingest"]
    assert ingest["llm_calls"] == locomo_runs["first_calls"] > 0
    assert ingest["extra"]["episodes"] == episodes == 19
    assert locomo_runs["kinds"]["ExtractedEntities"] == episodes
    # the scripted LLM states one fact per speaker of an episode
    speakers = sum(
        len({t.speaker for t in s.turns[i : i + TURNS_PER_EPISODE]})
        for s in conv.sessions
        for i in range(0, len(s.turns), TURNS_PER_EPISODE)
    )
    assert ingest["items_stored"] == speakers
    assert ingest["extra"]["llm_input_tokens"] > 0 and ingest["model_calls"] == 0
    evidence = _metrics(log)["evidence_recall"]["mean"]
    assert 0 < evidence <= 1  # the facts cite their episodes' turns
    turn_ids = {t.dia_id for s in conv.sessions for t in s.turns}
    for sample in log.samples:
        assert sample.error is None
        assert sample.metadata["memory_ingest"]["key"] == ingest["key"]
        assert set(sample.metadata["retrieved_ids"]) <= turn_ids
        assert sample.metadata["memory_latency_s"] > 0
        assert " said: " in sample.messages[0].text  # graphiti's facts, not the raw turns
    assert log.eval.metadata is not None
    assert log.eval.metadata["memory"]["memory"] == "graphiti"
    assert log.eval.metadata["memory"]["memory_args"]["turns_per_episode"] == TURNS_PER_EPISODE
    assert SECRET not in json.dumps(log.eval.metadata)


def _rerun(locomo_runs: dict[str, Any]) -> None:
    """The task file's graphiti task is the same task with the same arguments: it reads the
    store the first run built, asks the LLM nothing and retrieves the same facts."""
    (first,) = locomo_runs["first"]
    again = locomo_runs["systems"]["graphiti"]
    assert again.status == "success" and again.samples and first.samples
    assert locomo_runs["all_calls"] == locomo_runs["first_calls"]
    memory = _metrics(again)["memory_system"]
    assert (memory["ingestions"], memory["cache_hits"]) == (0, 1)
    assert memory["build_seconds"] == 0
    before = {s.id: s.metadata["retrieved_ids"] for s in first.samples}
    assert {s.id: s.metadata["retrieved_ids"] for s in again.samples} == before
    assert all(s.metadata["memory_ingest"]["cached"] for s in again.samples)


def _compare(
    locomo_runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """memevals-compare: graphiti beside bm25, embedding, observations and mem0."""
    from memevals.tools.compare import main as compare

    logs: Mapping[str, EvalLog] = locomo_runs["systems"]
    assert sorted(logs) == sorted(SYSTEMS)
    assert all(log.status == "success" for log in logs.values())
    assert locomo_runs["mem0_calls"] > 0
    out = tmp_path / "rows.csv"
    folders = [str(locomo_runs["root"] / "first"), str(locomo_runs["root"] / "systems")]
    assert compare(["--no-png", "--wide", "--csv", str(out), *folders]) == 0  # memevals-compare
    table = capsys.readouterr().out
    with out.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    names = sorted(r["memory_system"].split(" ")[0] for r in rows)
    assert names == sorted([*SYSTEMS, "graphiti"])  # graphiti built, then read again
    for name in SYSTEMS:
        assert f"| {name} " in table, name
    graphiti = [r for r in rows if r["memory_system"].startswith("graphiti")]
    assert sorted(r["memory_ingestions"] for r in graphiti) == ["0", "1"]
    built = next(r for r in graphiti if r["memory_ingestions"] == "1")
    assert int(built["memory_build_llm_calls"]) == locomo_runs["first_calls"]
    assert float(built["memory_build_seconds"]) > 0
    assert SECRET not in table


# --------------------------------------------------------------------------------------------
# LongMemEval

#: The fixture's first two questions: the first one's evidence session is re-dated after its
#: question, and the endpoint fails once inside the second one's evidence session.
LIMIT = 2
LATE_QUESTION = "fx01a2b3"
LATE_DATE = "2023/06/02 (Fri) 10:00"
FAILING_QUESTION = "fx02c4d5"


def _fixture_copy(folder: Path) -> tuple[str, str]:
    """The LongMemEval fixture with LATE_QUESTION's evidence session dated after the question;
    returns that session's id and a line only FAILING_QUESTION's haystack holds."""
    src = FIXTURES / "longmemeval"
    dst = folder / "longmemeval"
    dst.mkdir(parents=True)
    for path in src.glob("*.json"):
        (dst / path.name).write_bytes(path.read_bytes())
    file = dst / "longmemeval_s_cleaned.json"
    data = json.loads(file.read_text(encoding="utf-8"))
    by_id = {q["question_id"]: q for q in data}
    late = by_id[LATE_QUESTION]
    (session,) = late["answer_session_ids"]
    position = late["haystack_session_ids"].index(session)
    assert late["haystack_dates"][position] < late["question_date"] < LATE_DATE
    late["haystack_dates"][position] = LATE_DATE
    file.write_text(json.dumps(data), encoding="utf-8")
    failing = by_id[FAILING_QUESTION]
    (answer,) = failing["answer_session_ids"]
    first = failing["haystack_sessions"][failing["haystack_session_ids"].index(answer)][0]
    others = [q for q in data[:LIMIT] if q is not failing]
    assert not any(first["content"] in json.dumps(q) for q in others)
    return session, str(first["content"])


class FailOnce:
    """The scripted LLM, answering HTTP 500 to the first request that carries `marker`."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.failed = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str | HttpFailure:
        with self.lock:
            if not self.failed and self.marker in json.dumps(body, ensure_ascii=False):
                self.failed += 1
                return HttpFailure(500, "loopback model overloaded")
        return graphiti_facts(body)


def test_graphiti_on_the_longmemeval_fixture(tmp_path: Path) -> None:
    late_session, marker = _fixture_copy(tmp_path / "data")
    fail_once = FailOnce(marker)
    with LoopbackOpenAI(fail_once) as server:
        args = tmp_path / "graphiti.json"
        args.write_text(json.dumps(_graphiti_args(server.url, turns_per_episode=4)))
        _inspect(
            "inspect_offline.py",
            [
                *("memevals/longmemeval_s", "--model", "mockllm/model", "--limit", str(LIMIT)),
                *("-T", f"data_dir={tmp_path / 'data'}", "-T", "verify_checksum=false"),
                *("-T", "memory=graphiti", "-T", f"memory_args={args}"),
                *("--retry-on-error=1", "--log-dir", "logs"),
            ],
            tmp_path,
        )
    assert fail_once.failed == 1
    (log,) = _logs(tmp_path / "logs")
    assert log.status == "success" and log.samples and len(log.samples) == LIMIT
    by_id = {str(s.id): s for s in log.samples}
    # exactly the sample whose haystack met the failure erred, with the endpoint's message,
    # and Inspect's retry ingested its haystack again
    retried = {sid for sid, s in by_id.items() if s.error_retries}
    assert retried == {FAILING_QUESTION}
    (error,) = by_id[FAILING_QUESTION].error_retries or []
    assert f"ingestion of {FAILING_QUESTION} failed" in error.message
    assert "loopback model overloaded" in error.message
    assert all(s.error is None for s in log.samples)
    memory = _metrics(log)["memory_system"]
    assert memory["ingestions"] == LIMIT
    assert 0 < memory["latency_p50_s"] <= memory["latency_p95_s"] <= memory["latency_p99_s"]
    assert log.eval.metadata and log.eval.metadata["retrieval_depth"] == 50
    # the question date: the late evidence session's facts are never returned, so its
    # question finds no evidence, while the other question finds its own
    late = by_id[LATE_QUESTION]
    assert not [i for i in late.metadata["retrieved_ids"] if i.startswith(f"{late_session}_")]
    assert late.metadata["retrieval_scores"]["recall_any@50"] == 0
    assert by_id[FAILING_QUESTION].metadata["retrieval_scores"]["recall_any@50"] == 1

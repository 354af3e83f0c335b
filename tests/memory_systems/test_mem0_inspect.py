"""mem0 end to end through the real `inspect eval` CLI: mem0ai in its open-source mode with the
local MiniLM embedder and embedded qdrant, its LLM a loopback OpenAI-compatible server on
127.0.0.1 started and stopped here (deterministic fact extraction). The log carries the
retrieval metrics and the retrieval latency."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_inspect_cli
from inspect_ai.log import read_eval_log
from loopback_guard import needs
from loopback_openai import LoopbackOpenAI, mem0_facts

from memevals.benchmarks.locomo.data import load_locomo

pytestmark = [pytest.mark.server, needs(mem0="mem0", sentence_transformers="embeddings")]

#: Turns per mem0 `add`: one LLM call and a handful of embeddings per chunk keeps conv-26
#: (419 turns) to ~40 calls; each memory still cites the turns of its chunk.
TURNS_PER_ADD = 10


def _run(
    tmp_path: Path,
    server: LoopbackOpenAI,
    task: str,
    *args: str,
    turns_per_add: int = TURNS_PER_ADD,
) -> Any:
    memory_args = tmp_path / "mem0.json"
    memory_args.write_text(
        json.dumps(
            {"llm_base_url": server.url, "llm_model": "loopback", "turns_per_add": turns_per_add}
        )
    )
    logs = tmp_path / "logs"
    env = {"MEMEVALS_CACHE_DIR": str(tmp_path / "cache"), "OPENAI_API_KEY": "test-key"}
    cmd = ["eval", task, "--model", "mockllm/model", "--log-dir", str(logs), "--display", "none"]
    done = run_inspect_cli(
        [*cmd, "-T", "memory=mem0", "-T", f"memory_args={memory_args}", *args],
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = sorted(logs.glob("*.eval"))[-1:]
    return read_eval_log(str(path))


def _one_fact(body: dict[str, Any]) -> str:
    """mem0's extraction reply with one fact per add (its first message's): each memory still
    cites every turn of its add, and a tenth of the memories to embed and store keeps conv-26
    cheap."""
    memory = json.loads(mem0_facts(body))["memory"][:1]
    return json.dumps({"memory": memory})


def test_mem0_on_locomo_limit_20(tmp_path: Path) -> None:
    conv = load_locomo()[0]
    turns = [t for s in conv.sessions for t in s.turns]
    chunks = sum(math.ceil(len(s.turns) / TURNS_PER_ADD) for s in conv.sessions)
    with LoopbackOpenAI(_one_fact) as server:
        log = _run(tmp_path, server, "memevals/locomo", "--limit", "20")
        calls = server.count
    assert log.status == "success"
    assert calls == chunks  # one extraction call per add, ingested once for 20 questions
    metrics = {s.name: {k: v.value for k, v in s.metrics.items()} for s in log.results.scores}
    memory = metrics["memory_system"]
    assert memory["ingestions"] == 1 and memory["mean_items"] <= 5
    assert 0 < memory["latency_p50_s"] <= memory["latency_p95_s"] <= memory["latency_p99_s"]
    assert 0 <= metrics["evidence_recall"]["mean"] <= 1
    assert metrics["evidence_recall"]["mean"] > 0  # the memories cite their turns
    turn_ids = {t.dia_id for t in turns}
    for sample in log.samples:
        assert sample.error is None
        assert set(sample.metadata["retrieved_ids"]) <= turn_ids
        assert sample.metadata["memory_ingest"]["llm_calls"] == chunks
        assert sample.metadata["memory_ingest"]["items_stored"] == chunks  # one fact per add
        assert "said:" in sample.messages[0].text  # the memories, not the raw turns
    assert log.eval.metadata["memory"]["memory"] == "mem0"
    assert "test-key" not in json.dumps(log.eval.metadata)


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_mem0_on_the_longmemeval_fixture(tmp_path: Path) -> None:
    from memevals.benchmarks.longmemeval.data import load_longmemeval

    haystacks = load_longmemeval("s", FIXTURES, verify_checksum=False)
    adds = sum(math.ceil(len(s.turns) / 4) for h in haystacks for s in h.sessions)
    with LoopbackOpenAI(mem0_facts) as server:
        log = _run(
            tmp_path,
            server,
            "memevals/longmemeval_s",
            "-T",
            f"data_dir={FIXTURES}",
            "-T",
            "verify_checksum=false",
            turns_per_add=4,
        )
        calls = server.count
    assert log.status == "success"
    assert calls == adds  # every haystack ingested once
    metrics = {s.name: {k: v.value for k, v in s.metrics.items()} for s in log.results.scores}
    memory = metrics["memory_system"]
    assert memory["ingestions"] == len(haystacks) == 16
    assert 0 < memory["latency_p50_s"] <= memory["latency_p95_s"] <= memory["latency_p99_s"]
    assert log.eval.metadata["memory"] == "mem0"  # LongMemEval logs its settings flat
    assert log.eval.metadata["retrieval_depth"] == 50 and log.eval.metadata["top_k"] == 5
    # the official retrieval metrics of the ids mem0's memories cite (10 questions have gold)
    # (one result named by the scorer, each figure's mean a row named by the figure)
    retrieval = metrics["longmemeval_retrieval"]
    for name in ("recall_any@5", "recall_all@10", "ndcg_any@10"):
        assert 0 < retrieval[name] <= 1, name
    scored = [s for s in log.samples if s.metadata["retrieval_scores"] is not None]
    assert len(scored) == 10
    for sample in log.samples:
        assert sample.error is None
        assert sample.metadata["memory_items"] <= 5  # shown: top_k of the depth-50 ranking
        assert sample.metadata["memory_returned"] <= 50
    from memevals.tools.compare import load_rows

    (row,) = load_rows([str(tmp_path / "logs")])
    assert row.memory is not None and row.memory["ingestions"] == 16

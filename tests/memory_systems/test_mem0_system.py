"""`memory=mem0` for real: mem0ai 2.2.1 with the local MiniLM embedder and embedded qdrant,
its LLM a deterministic chat-completions server on 127.0.0.1 (tests/support/loopback_openai.py).

The server extracts one fact per turn, so the counts are exact: one LLM call per `add`, one
memory per turn, each citing its turn. Nothing may leave the machine: every test runs with a
socket guard that refuses any address but loopback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from histories import PLAIN_DATES, caroline_and_melanie
from loopback_guard import loopback_only, needs  # noqa: F401 (autouse fixtures)
from loopback_openai import HttpFailure, LoopbackOpenAI, fact_sentence, mem0_facts, plain

from memevals.core.memory_harness import MemoryRun
from memevals.core.memory_system import (
    MemoryQuery,
    MemorySystemError,
    Session,
    Turn,
    load_memory_system,
)
from memevals.memory_systems.mem0 import Mem0System, mem0_system

pytestmark = [pytest.mark.server, needs(mem0="mem0", sentence_transformers="embeddings")]

API_KEY = "sk-loopback-secret-4711"
MODEL = "loopback-extractor"

# a space in the id: mem0 refuses whitespace in user ids
HISTORY = caroline_and_melanie(PLAIN_DATES)
TURNS = [(s, t) for s in HISTORY.sessions for t in s.turns]


def _fact(session: Session, turn: Turn) -> str:
    text = turn.text
    if turn.image_caption:
        text += f" [shared an image: {turn.image_caption}]"
    return fact_sentence(session.date, turn.speaker, text)


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackOpenAI]:
    with LoopbackOpenAI(mem0_facts, api_key=API_KEY) as running:
        yield running


def _system(url: str, **args: Any) -> Mem0System:
    return mem0_system(
        llm_base_url=url, llm_model=MODEL, llm_api_key=API_KEY, llm_max_retries=0, **args
    )


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mem0-cache")


@pytest.fixture(scope="module")
def first_run(server: LoopbackOpenAI, cache_root: Path) -> MemoryRun:
    run = MemoryRun(_system(server.url), data_sha256="test", cache_root=cache_root)
    run.index(HISTORY)
    return run


def test_ingestion_makes_one_llm_call_per_turn(
    first_run: MemoryRun, server: LoopbackOpenAI
) -> None:
    _, record = first_run.index(HISTORY)
    assert server.count == len(TURNS) == 8
    assert record.cached is False
    assert record.llm_calls == 8
    assert record.items_stored == 8
    assert record.model_calls == 0  # the harness's memory model is not used
    assert record.extra["adds"] == 8
    assert record.extra["adds_without_memory"] == 0
    assert record.extra["llm_input_tokens"] > 0
    assert first_run.ingestions == 1
    # every call is mem0's JSON-mode extraction, with our model, key and temperature
    for body, headers in zip(server.requests, server.headers, strict=True):
        assert body["model"] == MODEL
        assert body["response_format"] == {"type": "json_object"}
        assert body["temperature"] == 0.0
        assert headers["authorization"] == f"Bearer {API_KEY}"
    # the n-th call carries the n-th turn, dated and named
    for body, (session, turn) in zip(server.requests, TURNS, strict=True):
        user = body["messages"][-1]["content"]
        new = user.split("## New Messages\n", 1)[1].split("\n\n## ", 1)[0]
        line = f"[{session.date}] {turn.speaker}: {turn.text}"
        if turn.image_caption:
            line += f" [shared an image: {turn.image_caption}]"
        assert new.strip() == f"user: {line}"


def test_retrieval_cites_the_matching_turn(first_run: MemoryRun) -> None:
    query = MemoryQuery("When did Melanie's daughter start violin lessons?", k=3)
    retrieval = first_run.retrieve(HISTORY, query)
    top = retrieval.items[0]
    assert top.source_ids == ("D2:1",)
    assert top.text == _fact(HISTORY.sessions[1], HISTORY.sessions[1].turns[0])
    assert top.date == "25 May 2023"
    assert top.verbatim is False
    assert 1 <= len(retrieval.items) <= 3
    scores = [item.score if item.score is not None else -1.0 for item in retrieval.items]
    assert min(scores) > 0
    assert scores == sorted(scores, reverse=True)  # best first
    assert all(len(item.source_ids) == 1 for item in retrieval.items)

    one = first_run.retrieve(HISTORY, MemoryQuery("clay pot with blue glaze", k=1))
    assert [item.source_ids for item in one.items] == [("D1:3",)]
    assert "a photo of a clay pot with blue glaze" in one.items[0].text
    assert one.cut == 0 and one.returned == 1


def test_k_is_respected(first_run: MemoryRun) -> None:
    # a query close to every fact: mem0's 0.1 score threshold keeps more than k of them
    index, _ = first_run.index(HISTORY)
    query = "Caroline and Melanie said what they did"
    wide = index.retrieve(MemoryQuery(query, k=8))
    assert len(wide) > 2
    for k in (1, 2):
        got = first_run.retrieve(HISTORY, MemoryQuery(query, k=k))
        assert got.returned == k and len(got.items) == k
        assert [i.source_ids for i in got.items] == [i.source_ids for i in wide[:k]]


def test_a_second_run_reads_the_cache(
    first_run: MemoryRun, server: LoopbackOpenAI, cache_root: Path
) -> None:
    calls = server.count
    query = MemoryQuery("Who went to a support group?", k=2)
    before = first_run.retrieve(HISTORY, query).items
    second = MemoryRun(_system(server.url), data_sha256="test", cache_root=cache_root)
    after = second.retrieve(HISTORY, query)
    assert server.count == calls  # nothing ingested again
    assert second.ingestions == 0 and second.cache_hits == 1
    assert after.ingest.cached is True
    assert after.ingest.llm_calls == 8 and after.ingest.items_stored == 8
    assert [(i.text, i.source_ids, i.date) for i in after.items] == [
        (i.text, i.source_ids, i.date) for i in before
    ]
    assert after.items[0].source_ids == ("D1:1",)
    assert [i.score for i in after.items] == pytest.approx([i.score for i in before])
    second.index(HISTORY)[0].close()  # type: ignore[attr-defined]


def test_a_closed_store_opens_again(first_run: MemoryRun, server: LoopbackOpenAI) -> None:
    from qdrant_client import QdrantClient

    index, record = first_run.index(HISTORY)
    store = first_run.root / record.key
    system = _system(server.url)
    twice = system.open(store, HISTORY)  # while the run's index is open: the store is shared
    assert twice.retrieve(MemoryQuery("necklace from Sweden", k=1))[0].source_ids == ("D3:1",)
    twice.close()
    assert index.retrieve(MemoryQuery("necklace", k=1))[0].source_ids == ("D3:1",)
    index.close()  # type: ignore[attr-defined]
    # qdrant's folder lock is free: another client may take it, then a new index
    probe = QdrantClient(path=str(store / "qdrant"))
    probe.close()
    again = system.open(store, HISTORY)
    assert again.retrieve(MemoryQuery("running shoes", k=1))[0].source_ids == ("D3:2",)
    again.close()
    with pytest.raises(MemorySystemError, match="closed"):
        again.retrieve(MemoryQuery("running shoes", k=1))


def test_chunks_of_turns_cite_every_turn(tmp_path: Path) -> None:
    with LoopbackOpenAI(mem0_facts) as srv:
        run = MemoryRun(_system(srv.url, turns_per_add=2), data_sha256="test", cache_root=tmp_path)
        _, record = run.index(HISTORY)
        # sessions of 3, 3 and 2 turns in chunks of 2: 2 + 2 + 1 adds
        assert srv.count == 5 and record.llm_calls == 5
        assert record.items_stored == 8
        chunks = [
            [line.split("] ", 1)[1].split(":", 1)[0] for line in _new_lines(body)]
            for body in srv.requests
        ]
        assert chunks == [
            ["Caroline", "Melanie"],
            ["Caroline"],
            ["Melanie", "Caroline"],
            ["Melanie"],
            ["Caroline", "Melanie"],
        ]
        got = run.retrieve(HISTORY, MemoryQuery("adoption agencies", k=1))
        assert got.items[0].source_ids == ("D2:1", "D2:2")
        assert got.items[0].date == "25 May 2023"


def _new_lines(body: dict[str, Any]) -> list[str]:
    user = str(body["messages"][-1]["content"])
    return user.split("## New Messages\n", 1)[1].split("\n\n## ", 1)[0].strip().splitlines()


@pytest.mark.parametrize(
    "reply",
    ["Sure! Here are the facts: none", json.dumps({"facts": ["Caroline likes pottery"]})],
    ids=["not-json", "wrong-schema"],
)
def test_nothing_stored_is_an_error(tmp_path: Path, reply: str) -> None:
    with LoopbackOpenAI(plain(reply)) as srv:
        run = MemoryRun(_system(srv.url), data_sha256="test", cache_root=tmp_path)
        with pytest.raises(MemorySystemError, match="mem0 stored no memory for history 'conv 7'"):
            run.index(HISTORY)
        assert srv.count == 8  # every turn was tried
    assert list(run.root.iterdir()) == []  # no store left behind


def test_replies_cut_at_the_token_limit_are_named(tmp_path: Path) -> None:
    def cut(body: dict[str, Any]) -> dict[str, Any]:
        text = mem0_facts(body)[:24]  # the JSON stops inside the first fact
        return {"role": "assistant", "content": text, "finish_reason": "length"}

    with LoopbackOpenAI(cut) as srv:
        run = MemoryRun(_system(srv.url, llm_max_tokens=64), data_sha256="t", cache_root=tmp_path)
        with pytest.raises(MemorySystemError) as failed:
            run.index(HISTORY)
    assert (
        "after 8 add() calls (8 LLM replies; 8 of them were cut at the token limit "
        "(finish_reason 'length', llm_max_tokens=64): raise llm_max_tokens in -T memory_args)"
    ) in str(failed.value)


def test_http_500_raises(tmp_path: Path) -> None:
    with LoopbackOpenAI(lambda body: HttpFailure(500, "model crashed")) as srv:
        run = MemoryRun(_system(srv.url), data_sha256="test", cache_root=tmp_path)
        with pytest.raises(MemorySystemError, match=r"LLMError.*model crashed"):
            run.index(HISTORY)
        assert srv.count == 1  # the first add failed, nothing after it
        retried = MemoryRun(
            mem0_system(llm_base_url=srv.url, llm_max_retries=1, llm_api_key=API_KEY),
            data_sha256="test",
            cache_root=tmp_path,
        )
        with pytest.raises(MemorySystemError, match="500"):
            retried.index(HISTORY)
        assert srv.count == 3  # one try and one retry
    assert list(run.root.iterdir()) == []


def test_server_down_raises(tmp_path: Path) -> None:
    with LoopbackOpenAI(mem0_facts) as srv:
        url = srv.url
    run = MemoryRun(_system(url, llm_timeout_s=5), data_sha256="test", cache_root=tmp_path)
    with pytest.raises(MemorySystemError, match=r"LLMError.*Connection error"):
        run.index(HISTORY)


def test_args_and_cache_key() -> None:
    system = _system("http://127.0.0.1:9/v1")
    assert system.name == "mem0"
    assert system.version.startswith("mem0ai-2.2.1-")
    assert dict(system.args) == {
        "llm_base_url": "http://127.0.0.1:9/v1",
        "llm_model": MODEL,
        "embedding_model": "all-MiniLM-L6-v2",
        "turns_per_add": 1,
        "temperature": 0.0,
    }
    run = MemoryRun(system, data_sha256="test")
    assert API_KEY not in json.dumps(run.settings()) + repr(system) + run.key(HISTORY)
    other_key = MemoryRun(
        mem0_system(llm_base_url="http://127.0.0.1:9/v1", llm_model=MODEL, llm_api_key="other"),
        data_sha256="test",
    )
    assert other_key.key(HISTORY) == run.key(HISTORY)
    chunked = MemoryRun(_system("http://127.0.0.1:9/v1", turns_per_add=2), data_sha256="test")
    assert chunked.key(HISTORY) != run.key(HISTORY)
    other_model = MemoryRun(
        mem0_system(llm_base_url="http://127.0.0.1:9/v1", llm_model="other"), data_sha256="test"
    )
    assert other_model.key(HISTORY) != run.key(HISTORY)


def test_entry_point_and_bad_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_memory_system("mem0", {"llm_base_url": "http://127.0.0.1:9/v1"})
    assert isinstance(loaded, Mem0System)
    assert loaded.args["llm_model"] == "gpt-4o-mini"
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="llm_base_url"):
        mem0_system()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    assert mem0_system().args["llm_base_url"] == "http://127.0.0.1:9/v1"
    with pytest.raises(ValueError, match="turns_per_add must be an integer >= 1, not 0"):
        mem0_system(turns_per_add=0)
    with pytest.raises(
        ValueError, match=r"memory_args 'top' is not an argument of mem0; arguments: llm_base_url, "
    ):
        load_memory_system("mem0", {"llm_base_url": "http://x/v1", "top": 3})
    import mem0.memory.telemetry as telemetry

    assert telemetry.MEM0_TELEMETRY is False


def test_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mem0", None)  # import mem0 now raises ImportError
    with pytest.raises(ValueError, match=r"pip install 'memevals\[mem0\]'"):
        mem0_system(llm_base_url="http://127.0.0.1:9/v1")


def test_a_wrong_api_key_raises(server: LoopbackOpenAI, tmp_path: Path) -> None:
    calls = server.count
    wrong = mem0_system(llm_base_url=server.url, llm_api_key="wrong", llm_max_retries=0)
    run = MemoryRun(wrong, data_sha256="test", cache_root=tmp_path)
    with pytest.raises(MemorySystemError, match="401"):
        run.index(HISTORY)
    assert server.count == calls + 1


def test_loopback_facts_follow_the_new_messages_only() -> None:
    prompt = (
        "## Last k Messages\nuser: [1 May 2023] Old: not new\n\n"
        "## New Messages\nuser: [2 May 2023] Ann: first line\nsecond line\n"
        "assistant: [2 May 2023] assistant: a reply\n\n## Observation Date\n2026-01-01"
    )
    body = {"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": prompt}]}
    assert json.loads(mem0_facts(body)) == {
        "memory": [
            {"id": "0", "text": "On 2 May 2023, Ann said: first line second line"},
            {"id": "1", "text": "On 2 May 2023, assistant said: a reply"},
        ]
    }
    with pytest.raises(ValueError, match="New Messages"):
        mem0_facts({"messages": [{"role": "user", "content": "hello"}]})

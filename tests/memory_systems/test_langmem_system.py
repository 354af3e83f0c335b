"""`memory=langmem` for real: langmem 0.0.30's memory store manager, LangGraph's
InMemoryStore indexed by the local MiniLM embedder, its LLM a deterministic chat-completions
server on 127.0.0.1 answering with tool calls (tests/support/loopback_langmem.py).

The scripted LLM writes one memory per speaker of a manager call (one call per session), and
patches an existing memory when a session says MARK, so the counts are exact: three calls,
five memories, each citing the turns of the calls that wrote it. Nothing may leave the
machine: every test runs with a socket guard that refuses any address but loopback.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from histories import FIRST_SESSION, history
from loopback_guard import loopback_only, needs  # noqa: F401 (an autouse fixture)
from loopback_langmem import (
    PATCHED_PREFIX,
    LangMemScript,
    LoopbackTools,
    conversation_lines,
    memory_sentence,
)
from loopback_openai import HttpFailure, plain

from memevals.core.memory_harness import MemoryRun
from memevals.core.memory_system import MemoryQuery, MemorySystemError, load_memory_system
from memevals.memory_systems import langmem as langmem_module
from memevals.memory_systems.endpoint import forget_probes
from memevals.memory_systems.langmem import (
    STORE_FILE,
    LangMemSystem,
    call_chunks,
    langmem_system,
    turn_content,
)

pytestmark = [pytest.mark.server, needs(langmem="langmem", sentence_transformers="embeddings")]

API_KEY = "sk-loopback-secret-4711"
MODEL = "loopback-manager"
MARK = "MARK"

HISTORY = history(
    FIRST_SESSION
    + f"""session_2 | 1:14 pm on 25 May, 2023
  D2:1 | Melanie | My daughter started violin lessons on Tuesday.
  D2:2 | Caroline | {MARK} I am researching adoption agencies.
session_3 | 10:31 am on 2 July, 2023
  D3:1 | Melanie | I bought new running shoes for the marathon.
""",
    "conv 7",
)


@pytest.fixture(scope="module")
def script() -> LangMemScript:
    return LangMemScript(patch_marker=MARK)


@pytest.fixture(scope="module")
def server(script: LangMemScript) -> Iterator[LoopbackTools]:
    with LoopbackTools(script, api_key=API_KEY) as running:
        yield running


def _system(url: str, **args: Any) -> LangMemSystem:
    return langmem_system(
        **{"llm_base_url": url, "llm_model": MODEL, "llm_api_key": API_KEY, "llm_max_retries": 0}
        | args
    )


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("langmem-cache")


@pytest.fixture(scope="module")
def first_run(server: LoopbackTools, cache_root: Path) -> MemoryRun:
    forget_probes()
    run = MemoryRun(_system(server.url), data_sha256="test", cache_root=cache_root)
    run.index(HISTORY)
    return run


def _memories(run: MemoryRun) -> dict[str, dict[str, Any]]:
    """The saved store's memories by text."""
    (store,) = [p for p in run.root.iterdir() if (p / STORE_FILE).is_file()]
    items = json.loads((store / STORE_FILE).read_text(encoding="utf-8"))["items"]
    return {i["value"]["content"]["content"]: i for i in items}


def test_ingestion_calls_the_manager_once_per_session_and_counts_its_calls(
    first_run: MemoryRun, server: LoopbackTools, script: LangMemScript
) -> None:
    _, record = first_run.index(HISTORY)
    assert first_run.ingestions == 1 and record.cached is False
    # one manager call per session, every reply counted; the endpoint check is two requests:
    # the tool-call probe and one manager call on the two-turn test session
    assert record.llm_calls == server.count == script.kinds["manager"] == 3
    assert len(server.probes) == 2
    assert record.items_stored == 5  # one memory per speaker of each session
    assert record.model_calls == 0  # the harness's memory model is not used
    assert record.extra["manager_calls"] == 3 and record.extra["calls_without_memory"] == 0
    # the tokens are the loopback's word counts of the prompts and of the tool arguments
    prompts = sum(
        len(" ".join(str(m.get("content", "")) for m in body["messages"]).split())
        for body in server.requests
    )
    assert record.extra["llm_input_tokens"] == prompts
    assert record.extra["llm_output_tokens"] > 0
    for body, headers, session in zip(
        server.requests, server.headers, HISTORY.sessions, strict=True
    ):
        assert body["model"] == MODEL and body["temperature"] == 0.0
        assert headers["authorization"] == f"Bearer {API_KEY}"
        assert "Memory" in {t["function"]["name"] for t in body["tools"]}
        # the session's turns, in order, dated, as the manager was given them
        lines = conversation_lines(body)
        assert [f"[{d}] {s}: {t}" for d, s, t in lines] == [
            turn_content(session, t) for t in session.turns
        ]
    # the second and third calls saw memories already stored: trustcall offers PatchDoc
    assert "PatchDoc" not in json.dumps(server.requests[0]["tools"])
    assert "PatchDoc" in json.dumps(server.requests[1]["tools"])


def test_each_memory_cites_the_turns_of_the_calls_that_wrote_it(first_run: MemoryRun) -> None:
    s1, s2, s3 = HISTORY.sessions
    caroline_1 = memory_sentence(
        s1.date, "Caroline", [turn_content(s1, t).split(": ", 1)[1] for t in s1.turns[::2]]
    )
    expected = {
        # session 2 said MARK: the first memory listed (Caroline's of session 1) was patched,
        # so it cites both calls' turns and keeps its first session's date
        PATCHED_PREFIX + caroline_1: (["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"], s1.date),
        memory_sentence(s1.date, "Melanie", [s1.turns[1].text]): (
            ["D1:1", "D1:2", "D1:3"],
            s1.date,
        ),
        memory_sentence(s2.date, "Melanie", [s2.turns[0].text]): (["D2:1", "D2:2"], s2.date),
        memory_sentence(s2.date, "Caroline", [s2.turns[1].text]): (["D2:1", "D2:2"], s2.date),
        memory_sentence(s3.date, "Melanie", [s3.turns[0].text]): (["D3:1"], s3.date),
    }
    saved = _memories(first_run)
    assert {text: (m["turn_ids"], m["date"]) for text, m in saved.items()} == expected
    # the store's own vectors are saved with each memory (MiniLM: 384 dimensions)
    assert all(len(m["vectors"]["$"]) == 384 for m in saved.values())


def test_retrieval_is_the_stores_search_best_first(first_run: MemoryRun) -> None:
    retrieval = first_run.retrieve(
        HISTORY, MemoryQuery("Who bought running shoes for the marathon?", k=2)
    )
    assert len(retrieval.items) == 2
    top = retrieval.items[0]
    assert top.text.startswith("On 10:31 am on 2 July, 2023, Melanie said: I bought new")
    assert top.source_ids == ("D3:1",) and top.date == "10:31 am on 2 July, 2023"
    assert top.verbatim is False
    scores = [i.score for i in retrieval.items]
    assert all(s is not None for s in scores) and scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    everything = first_run.retrieve(HISTORY, MemoryQuery("anything", k=50))
    assert len(everything.items) == 5  # the whole store, never more than it holds
    assert first_run.retrieve(HISTORY, MemoryQuery("anything", k=0)).items == ()


def test_a_second_run_reads_the_cache(
    first_run: MemoryRun, server: LoopbackTools, cache_root: Path
) -> None:
    calls, probes = server.count, len(server.probes)
    query = MemoryQuery("Who started violin lessons?", k=3)
    before = first_run.retrieve(HISTORY, query).items
    second = MemoryRun(_system(server.url), data_sha256="test", cache_root=cache_root)
    after = second.retrieve(HISTORY, query)
    assert (server.count, len(server.probes)) == (calls, probes)  # no LLM call, no check
    assert second.ingestions == 0 and second.cache_hits == 1
    assert after.ingest.cached is True and after.ingest.items_stored == 5
    # the loaded store ranks as the built one did, scores included
    assert after.items == before


def test_sessions_split_into_calls_of_turns_per_call(tmp_path: Path) -> None:
    assert [len(turns) for _, turns in call_chunks(HISTORY, None)] == [3, 2, 1]
    assert [len(turns) for _, turns in call_chunks(HISTORY, 2)] == [2, 1, 2, 1]
    with LoopbackTools(LangMemScript()) as srv:
        run = MemoryRun(_system(srv.url, turns_per_call=1), data_sha256="test", cache_root=tmp_path)
        _, record = run.index(HISTORY)
        assert record.llm_calls == srv.count == 6
    # one turn per call: each memory cites exactly its turn
    assert sorted(tuple(m["turn_ids"]) for m in _memories(run).values()) == [
        (t.turn_id,) for s in HISTORY.sessions for t in s.turns
    ]


def test_an_endpoint_without_tool_calls_fails_in_one_line_before_ingesting(
    tmp_path: Path,
) -> None:
    forget_probes()
    with LoopbackTools(plain("I cannot call tools."), answer_probes=False) as srv:
        url = srv.url
        run = MemoryRun(_system(srv.url), data_sha256="test", cache_root=tmp_path)
        with pytest.raises(MemorySystemError) as caught:
            run.index(HISTORY)
        assert srv.count == 1 == len(srv.probes)  # the check, and no manager call
    message = str(caught.value)
    assert "\n" not in message
    assert f"langmem: the LLM endpoint {url} (model {MODEL!r}) answered a " in message
    assert "not a tool call" in message and "llm_base_url=" in message
    assert list(run.root.iterdir()) == []  # no store left behind


def test_a_token_limit_reaches_every_call_and_no_check_without_preflight(tmp_path: Path) -> None:
    forget_probes()
    with LoopbackTools(LangMemScript()) as srv:
        system = _system(srv.url, llm_max_tokens=256, llm_preflight=False)
        system.preflight()  # switched off: asks nothing
        MemoryRun(system, data_sha256="test", cache_root=tmp_path).index(HISTORY)
        assert srv.probes == [] and srv.count == 3
        # langchain-openai sends the limit as max_completion_tokens (OpenAI's current name)
        assert [body["max_completion_tokens"] for body in srv.requests] == [256] * 3


def test_an_unreachable_endpoint_fails_before_ingesting(tmp_path: Path) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    run = MemoryRun(_system(f"http://127.0.0.1:{port}/v1"), data_sha256="test", cache_root=tmp_path)
    with pytest.raises(MemorySystemError, match=r"^langmem: .* cannot be reached"):
        run.index(HISTORY)


def test_nothing_stored_is_an_error(tmp_path: Path) -> None:
    # a model that answers the manager with text: trustcall extracts nothing
    with LoopbackTools(plain("Nothing worth remembering.")) as srv:
        run = MemoryRun(_system(srv.url), data_sha256="test", cache_root=tmp_path)
        with pytest.raises(
            MemorySystemError,
            match=r"langmem stored no memory for history 'conv 7' after 3 manager calls "
            r"\(3 LLM replies\)",
        ):
            run.index(HISTORY)
        assert srv.count == 3  # every session was tried
    assert list(run.root.iterdir()) == []


def test_http_500_raises_with_the_endpoints_message(tmp_path: Path) -> None:
    with LoopbackTools(lambda body: HttpFailure(500, "model crashed")) as srv:
        run = MemoryRun(_system(srv.url), data_sha256="test", cache_root=tmp_path)
        with pytest.raises(
            MemorySystemError, match=r"ingestion of conv 7 failed: .*500 - model crashed"
        ):
            run.index(HISTORY)
        assert srv.count == 1  # the first session failed, nothing after it
    assert list(run.root.iterdir()) == []


def test_one_failed_call_is_asked_again_by_trustcall(tmp_path: Path) -> None:
    """LangMem's own retry: once memories exist, trustcall answers a failed call by asking
    again with the error, so an endpoint failing once loses nothing."""
    script = LangMemScript()
    failed: list[str] = []

    def fail_session_2(body: dict[str, Any]) -> dict[str, Any] | HttpFailure:
        if not failed and "violin" in json.dumps(body):
            failed.append("once")
            return HttpFailure(500, "model overloaded")
        return script(body)

    with LoopbackTools(fail_session_2) as srv:
        run = MemoryRun(_system(srv.url), data_sha256="test", cache_root=tmp_path)
        _, record = run.index(HISTORY)
        assert srv.count == 4  # session 1, session 2 failed and asked again, session 3
    assert "overloaded" in str(srv.requests[2]["messages"][-1]["content"])
    assert record.llm_calls == 3 and record.extra["llm_errors"] == 1
    assert record.items_stored == 5


def test_an_endpoint_failing_until_trustcall_gives_up_names_its_error(tmp_path: Path) -> None:
    from langchain_core.runnables.config import DEFAULT_RECURSION_LIMIT

    script = LangMemScript()

    def fail_session_2(body: dict[str, Any]) -> dict[str, Any] | HttpFailure:
        if "violin" in json.dumps(body):
            return HttpFailure(500, "model overloaded")
        return script(body)

    with LoopbackTools(fail_session_2) as srv:
        run = MemoryRun(_system(srv.url), data_sha256="test", cache_root=tmp_path)
        with pytest.raises(MemorySystemError) as caught:
            run.index(HISTORY)
        # session 1, then session 2 until LangGraph's recursion limit
        assert srv.count == 1 + DEFAULT_RECURSION_LIMIT
    assert (
        f"langmem: session 'session_2': {DEFAULT_RECURSION_LIMIT} LLM call(s) failed, the last "
        "with OpenAIAPIError: Error code: 500 - model overloaded (GraphRecursionError after "
        "trustcall's retries)"
    ) in str(caught.value)
    assert list(run.root.iterdir()) == []


def test_args_version_and_cache_key(monkeypatch: pytest.MonkeyPatch) -> None:
    system = _system("http://127.0.0.1:9/v1")
    assert system.name == "langmem"
    assert system.version == "langmem-0.0.30-langgraph-1.2.24-1"
    assert dict(system.args) == {
        "llm_base_url": "http://127.0.0.1:9/v1",
        "llm_model": MODEL,
        "embedding_model": "all-MiniLM-L6-v2",
        "turns_per_call": None,
        "query_limit": 5,
        "temperature": 0.0,
    }
    assert dict(system.runtime_args) == {
        "llm_timeout_s": 120.0,
        "llm_max_retries": 0,
        "llm_preflight": True,
    }
    run = MemoryRun(system, data_sha256="test")
    assert API_KEY not in json.dumps(run.settings()) + repr(system) + run.key(HISTORY)
    same = langmem_system(llm_base_url="http://127.0.0.1:9/v1", llm_model=MODEL, llm_api_key="x")
    assert MemoryRun(same, data_sha256="test").key(HISTORY) == run.key(HISTORY)
    for changed in (
        {"turns_per_call": 2},
        {"llm_model": "other"},
        {"query_limit": 10},
        {"temperature": 0.5},
        {"embedding_model": "sentence-transformers/all-MiniLM-L6-v2"},
        {"llm_max_tokens": 512},
    ):
        other = langmem_system(
            **{"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": MODEL, **changed}
        )
        assert MemoryRun(other, data_sha256="test").key(HISTORY) != run.key(HISTORY), changed
    # how the LLM is called decides nothing stored: the same store
    for runtime in ({"llm_timeout_s": 5}, {"llm_max_retries": 1}, {"llm_preflight": False}):
        other = _system("http://127.0.0.1:9/v1", **runtime)
        assert MemoryRun(other, data_sha256="test").key(HISTORY) == run.key(HISTORY), runtime


def test_entry_point_and_bad_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_memory_system("langmem", {"llm_base_url": "http://127.0.0.1:9/v1"})
    assert isinstance(loaded, LangMemSystem)
    assert loaded.args["llm_model"] == "gpt-4o-mini"
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="llm_base_url"):
        langmem_system()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    assert langmem_system().args["llm_base_url"] == "http://127.0.0.1:9/v1"
    bad: list[tuple[dict[str, Any], str]] = [
        ({"turns_per_call": 0}, "turns_per_call must be an integer >= 1"),
        ({"query_limit": 0}, "query_limit must be an integer >= 1"),
        ({"temperature": "hot"}, "temperature must be a number"),
        ({"llm_timeout_s": 0}, "llm_timeout_s must be > 0"),
        ({"llm_model": ""}, "llm_model must be a model name"),
        ({"llm_max_tokens": 0}, "llm_max_tokens must be an integer >= 1"),
        ({"llm_preflight": "yes"}, "llm_preflight must be true or false"),
    ]
    for args, message in bad:
        with pytest.raises(ValueError, match=f"memory=langmem: {message}"):
            langmem_system(**args)
    with pytest.raises(
        ValueError,
        match=r"memory_args 'top' is not an argument of langmem; arguments: llm_base_url, ",
    ):
        load_memory_system("langmem", {"llm_base_url": "http://x/v1", "top": 3})


def test_a_store_of_another_layout_is_refused(tmp_path: Path) -> None:
    system = _system("http://127.0.0.1:9/v1")
    with pytest.raises(MemorySystemError, match=f"{STORE_FILE} is unreadable"):
        system.open(tmp_path, HISTORY)
    (tmp_path / STORE_FILE).write_text(json.dumps({"format": 0, "items": []}))
    with pytest.raises(MemorySystemError, match="is not a store of format 1"):
        system.open(tmp_path, HISTORY)
    (tmp_path / STORE_FILE).write_text(json.dumps({"format": 1, "items": [{"key": "a"}]}))
    with pytest.raises(MemorySystemError, match="has a malformed memory"):
        system.open(tmp_path, HISTORY)


def test_langsmith_tracing_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from langsmith.utils import tracing_is_enabled

    monkeypatch.setenv("LANGSMITH_TRACING", "true")
    monkeypatch.setenv("LANGCHAIN_TRACING_V2", "true")
    _system("http://127.0.0.1:9/v1")
    assert os.environ["LANGSMITH_TRACING"] == os.environ["LANGCHAIN_TRACING_V2"] == "false"
    with langmem_module._untraced():
        assert tracing_is_enabled() is False


def test_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    langmem_module._api.cache_clear()
    monkeypatch.setitem(sys.modules, "langmem", None)  # import now raises ImportError
    try:
        with pytest.raises(ValueError, match=r"pip install 'memevals\[langmem\]'"):
            langmem_system(llm_base_url="http://127.0.0.1:9/v1")
    finally:
        langmem_module._api.cache_clear()

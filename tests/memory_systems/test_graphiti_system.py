"""`memory=graphiti` for real: graphiti-core 0.31.2 over Kuzu in the store folder, the local
MiniLM embedder and reranker, its LLM a deterministic chat-completions server on 127.0.0.1
(tests/support/loopback_openai.py answering graphiti's structured-output calls with
tests/support/loopback_graphiti.py).

The scripted LLM extracts one fact per speaker of an episode, so with one turn per episode the
counts are exact: eight episodes, eight facts, each citing its turn and dated by its session.
Nothing may leave the machine: every test runs with a socket guard that refuses any address
but loopback.
"""

from __future__ import annotations

import collections
import gc
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from histories import caroline_and_melanie
from loopback_graphiti import fact_sentence, graphiti_facts, schema_name, section, topic_name
from loopback_guard import loopback_only, needs  # noqa: F401 (an autouse fixture)
from loopback_openai import HttpFailure, LoopbackOpenAI

from memevals.core.memory_harness import MemoryRun
from memevals.core.memory_system import (
    History,
    MemoryQuery,
    MemorySystemError,
    Session,
    Turn,
    load_memory_system,
)
from memevals.memory_systems import graphiti as graphiti_module
from memevals.memory_systems import graphiti_engine
from memevals.memory_systems.graphiti import (
    GraphitiSystem,
    episode_body,
    graphiti_system,
    parse_date,
)

pytestmark = [
    pytest.mark.server,
    needs(graphiti_core="graphiti", sentence_transformers="embeddings"),
]

API_KEY = "sk-loopback-secret-4711"
MODEL = "loopback-extractor"

# a space in the id: graphiti allows only letters, digits, - and _ in groups
HISTORY = caroline_and_melanie()
TURNS = [(s, t) for s in HISTORY.sessions for t in s.turns]


def _line(turn: Turn) -> str:
    return episode_body([turn]).split(": ", 1)[1]


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackOpenAI]:
    with LoopbackOpenAI(graphiti_facts, api_key=API_KEY) as running:
        yield running


def _system(url: str, **args: Any) -> GraphitiSystem:
    return graphiti_system(
        **{"llm_base_url": url, "llm_model": MODEL, "llm_api_key": API_KEY, "llm_max_retries": 0}
        | args
    )


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("graphiti-cache")


@pytest.fixture(scope="module")
def first_run(server: LoopbackOpenAI, cache_root: Path) -> MemoryRun:
    run = MemoryRun(_system(server.url), data_sha256="test", cache_root=cache_root)
    run.index(HISTORY)
    return run


def _kinds(requests: list[dict[str, Any]]) -> collections.Counter[str | None]:
    return collections.Counter(schema_name(body) for body in requests)


def test_ingestion_adds_one_episode_per_turn_and_counts_the_llm_calls(
    first_run: MemoryRun, server: LoopbackOpenAI
) -> None:
    _, record = first_run.index(HISTORY)
    assert first_run.ingestions == 1 and record.cached is False
    assert record.llm_calls == server.count  # every reply counted, none missed
    kinds = _kinds(server.requests)
    # graphiti's calls per episode: entities, facts, then the entity summaries; names that
    # recur are resolved against the graph and each new fact against the related ones
    assert kinds["ExtractedEntities"] == kinds["ExtractedEdges"] == len(TURNS) == 8
    assert set(kinds) <= {
        "ExtractedEntities",
        "ExtractedEdges",
        "NodeResolutions",
        "EdgeDuplicate",
        "SummarizedEntities",
    }
    assert record.items_stored == 8  # one fact per turn
    assert record.model_calls == 0  # the harness's memory model is not used
    assert record.extra["episodes"] == 8 and record.extra["episodes_without_facts"] == 0
    assert record.extra["llm_input_tokens"] > 0 and record.extra["llm_output_tokens"] > 0
    # every call asks for json_schema structured output, with our model, key and temperature
    for body, headers in zip(server.requests, server.headers, strict=True):
        assert body["model"] == MODEL
        assert body["response_format"]["type"] == "json_schema"
        assert body["temperature"] == 0.0
        assert headers["authorization"] == f"Bearer {API_KEY}"
    # the n-th episode is the n-th turn, as `speaker: text`, at its session's date
    edges = [b for b in server.requests if schema_name(b) == "ExtractedEdges"]
    for body, (session, turn) in zip(edges, TURNS, strict=True):
        assert section(body, "CURRENT_MESSAGE") == f"{turn.speaker}: {_line(turn)}"
        when = parse_date(session.date)
        assert when is not None
        assert section(body, "REFERENCE_TIME").startswith(str(when))


def test_retrieval_cites_the_turn_and_its_date(first_run: MemoryRun) -> None:
    retrieval = first_run.retrieve(
        HISTORY, MemoryQuery("When did Melanie's daughter start violin lessons?", k=3)
    )
    top = retrieval.items[0]
    violin = HISTORY.sessions[1].turns[0]
    assert top.source_ids == ("D2:1",)
    assert top.text == fact_sentence("Melanie", [violin.text])
    assert top.date == "1:14 pm on 25 May, 2023"  # the session's date, as the data gives it
    assert top.verbatim is False
    assert len(retrieval.items) == 3 and retrieval.cut == 0
    scores = [item.score for item in retrieval.items]
    assert all(s is not None for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]  # best first
    assert all(len(item.source_ids) == 1 for item in retrieval.items)

    one = first_run.retrieve(HISTORY, MemoryQuery("clay pot with blue glaze", k=1))
    assert [item.source_ids for item in one.items] == [("D1:3",)]
    assert "[shared an image: a photo of a clay pot with blue glaze]" in one.items[0].text


def test_every_reranker_ranks_the_store(first_run: MemoryRun, server: LoopbackOpenAI) -> None:
    """The same store searched with MMR and with the local cross-encoder slot (the embedder's
    cosine): no LLM call, the matching fact first."""
    _, record = first_run.index(HISTORY)
    store = first_run.root / record.key
    calls = server.count
    for reranker in ("mmr", "cross_encoder"):
        index = _system(server.url, reranker=reranker).open(store, HISTORY)
        got = index.retrieve(MemoryQuery("necklace from Sweden", k=2))
        assert got[0].source_ids == ("D3:1",), reranker
        # MMR drops facts below graphiti's minimum score; the cross-encoder slot keeps k
        assert 1 <= len(got) <= 2 if reranker == "mmr" else len(got) == 2
        index.close()
    # a question sharing no word with any fact: the top k all the same, unless graphiti's own
    # cosine floor (0.6, set for OpenAI's embeddings) is asked for
    vague = MemoryQuery("Which relative handed over a present?", k=3)
    assert len(first_run.retrieve(HISTORY, vague).items) == 3
    floored = _system(server.url, min_similarity=0.6).open(store, HISTORY)
    assert floored.retrieve(vague) == []
    floored.close()
    assert server.count == calls


def test_facts_dated_after_the_question_are_not_returned(first_run: MemoryRun) -> None:
    index, _ = first_run.index(HISTORY)

    def cited(text: str, date: str | None) -> list[str]:
        return [i.source_ids[0] for i in index.retrieve(MemoryQuery(text, k=8, date=date))]

    necklace = "Who gave Caroline a necklace from Sweden?"
    assert cited(necklace, None)[0] == "D3:1"
    # asked on 30 May 2023 (a LongMemEval question date): session 3 (2 July) is later
    late = {t.turn_id for t in HISTORY.sessions[2].turns}
    assert not late & set(cited(necklace, "2023/05/30 (Tue) 10:00"))
    violin = "When did Melanie's daughter start violin lessons?"
    assert cited(violin, "2023/05/30 (Tue) 10:00")[0] == "D2:1"
    # the bound is inclusive: asked at session 2's very minute its facts are there, not before
    assert cited(violin, "2023-05-25T13:14:00")[0] == "D2:1"
    assert "D2:1" not in cited(violin, "2023-05-25T13:13:00")
    assert cited(violin, "2023/05/01 (Mon) 09:00") == []  # before every session
    with pytest.raises(MemorySystemError, match="question date"):
        index.retrieve(MemoryQuery(violin, k=3, date="sometime in spring"))
    assert index.retrieve(MemoryQuery(violin, k=0)) == []


def test_a_second_run_reads_the_cache(
    first_run: MemoryRun, server: LoopbackOpenAI, cache_root: Path
) -> None:
    calls = server.count
    query = MemoryQuery("Who went to a support group?", k=2)
    before = first_run.retrieve(HISTORY, query).items
    second = MemoryRun(_system(server.url), data_sha256="test", cache_root=cache_root)
    after = second.retrieve(HISTORY, query)
    assert server.count == calls  # nothing ingested again, no LLM call to retrieve
    assert second.ingestions == 0 and second.cache_hits == 1
    assert after.ingest.cached is True and after.ingest.items_stored == 8
    assert after.items == before  # the one open store of this process, shared
    assert after.items[0].source_ids == ("D1:1",)


def test_a_closed_store_frees_its_database_and_opens_again(
    first_run: MemoryRun, server: LoopbackOpenAI
) -> None:
    import kuzu

    index, record = first_run.index(HISTORY)
    store = first_run.root / record.key
    system = _system(server.url)
    twice = system.open(store, HISTORY)  # while the run's index is open: shared
    assert twice.retrieve(MemoryQuery("running shoes", k=1))[0].source_ids == ("D3:2",)
    twice.close()
    assert index.retrieve(MemoryQuery("running shoes", k=1))[0].source_ids == ("D3:2",)
    index.close()  # type: ignore[attr-defined]
    # Kuzu's file lock is free: another database may take it
    probe = kuzu.Database(str(store / "graph.kuzu"), max_db_size=1 << 30)
    probe.close()
    again = system.open(store, HISTORY)
    assert again.retrieve(MemoryQuery("adoption agencies", k=1))[0].source_ids == ("D2:2",)
    again.close()
    with pytest.raises(MemorySystemError, match="closed"):
        again.retrieve(MemoryQuery("running shoes", k=1))
    # an index the garbage collector takes only queues its store: a collection may run while
    # a lock the closing needs is held by the same thread; the next call gives it back
    dropped = system.open(store, HISTORY)
    shared = graphiti_module._pool.stores[str(store.resolve())]
    del dropped
    gc.collect()
    assert shared in graphiti_module._pool.released and shared.users == 1
    reopened = system.open(store, HISTORY)
    assert not graphiti_module._pool.released
    assert graphiti_module._pool.stores[str(store.resolve())] is not shared
    assert reopened.retrieve(MemoryQuery("running shoes", k=1))[0].source_ids == ("D3:2",)
    reopened.close()


def test_json_mode_serves_a_server_without_json_schema(
    server: LoopbackOpenAI, tmp_path: Path
) -> None:
    """structured_output=json_object: every call asks for JSON mode, the schema written into
    the prompt (llama-cpp-python's server has no json_schema); the facts and their citations
    are those of json_schema mode, in a store of their own key."""
    history = History(
        history_id="json mode", sessions=(HISTORY.sessions[0],), speakers=HISTORY.speakers
    )
    system = _system(server.url, structured_output="json_object")
    assert system.args["structured_output"] == "json_object"
    assert "structured_output" not in _system(server.url).args  # earlier stores stay valid
    before = server.count
    store = tmp_path / "store"
    store.mkdir()
    report = system.ingest(history, store, None)
    asked = server.requests[before:]
    assert asked and {b["response_format"]["type"] for b in asked} == {"json_object"}
    assert _kinds(asked)["ExtractedEdges"] == len(history.sessions[0].turns) == 3
    assert report.items_stored == 3
    index = system.open(store, history)
    got = index.retrieve(MemoryQuery("clay pot with blue glaze", k=1))
    assert [item.source_ids for item in got] == [("D1:3",)]
    index.close()
    with pytest.raises(ValueError, match="structured_output='xml' is not one of json_schema"):
        _system(server.url, structured_output="xml")


def test_episodes_of_several_turns_cite_every_turn(tmp_path: Path) -> None:
    with LoopbackOpenAI(graphiti_facts) as srv:
        run = MemoryRun(
            _system(srv.url, turns_per_episode=2), data_sha256="test", cache_root=tmp_path
        )
        _, record = run.index(HISTORY)
        # sessions of 3, 3 and 2 turns in episodes of 2: 2 + 2 + 1 episodes, one fact per
        # speaker of each
        episodes = [
            section(b, "CURRENT_MESSAGE")
            for b in srv.requests
            if schema_name(b) == "ExtractedEdges"
        ]
        assert [[ln.split(":")[0] for ln in e.splitlines()] for e in episodes] == [
            ["Caroline", "Melanie"],
            ["Caroline"],
            ["Melanie", "Caroline"],
            ["Melanie"],
            ["Caroline", "Melanie"],
        ]
        assert record.extra["episodes"] == 5 and record.items_stored == 8
        assert record.llm_calls == srv.count
        got = run.retrieve(HISTORY, MemoryQuery("researching adoption agencies", k=1))
        assert got.items[0].source_ids == ("D2:1", "D2:2")
        assert got.items[0].text == fact_sentence(
            "Caroline", ["I am researching adoption agencies."]
        )
        assert got.items[0].date == "1:14 pm on 25 May, 2023"


def test_an_undated_history_ingests_in_order(tmp_path: Path) -> None:
    """LoCoMo-Plus stitched histories carry no dates: graphiti gets one ordinal day per
    session, and the items no date."""
    undated = History(
        "plus 1",
        tuple(Session(s.session_id, "", s.turns) for s in HISTORY.sessions[1:]),
    )
    with LoopbackOpenAI(graphiti_facts) as srv:
        run = MemoryRun(_system(srv.url), data_sha256="test", cache_root=tmp_path)
        got = run.retrieve(undated, MemoryQuery("necklace from Sweden", k=1))
        stamps = [
            section(b, "REFERENCE_TIME")[:10]
            for b in srv.requests
            if schema_name(b) == "ExtractedEdges"
        ]
    assert stamps == ["2000-01-01"] * 3 + ["2000-01-02"] * 2
    assert got.items[0].source_ids == ("D3:1",) and got.items[0].date is None
    half = History("half", (HISTORY.sessions[0], Session("S9", "", HISTORY.sessions[1].turns)))
    with pytest.raises(MemorySystemError, match="dates some sessions but not 'S9'"):
        MemoryRun(_system("http://127.0.0.1:9/v1"), data_sha256="t", cache_root=tmp_path).index(
            half
        )


def _camping_ended(body: dict[str, Any]) -> str:
    """The scripted LLM, marking the camping fact as true only until the next day."""
    reply = graphiti_facts(body)
    if schema_name(body) != "ExtractedEdges":
        return reply
    edges = json.loads(reply)
    for edge in edges["edges"]:
        if "camping" in edge["fact"]:
            edge["invalid_at"] = "2023-05-26T00:00:00Z"
    return json.dumps(edges)


def test_a_fact_that_ended_says_until_when(tmp_path: Path) -> None:
    with LoopbackOpenAI(_camping_ended) as srv:
        run = MemoryRun(
            _system(srv.url, turns_per_episode=3), data_sha256="test", cache_root=tmp_path
        )
        got = run.retrieve(HISTORY, MemoryQuery("camping at the lake", k=1)).items[0]
    assert got.text.endswith("We are camping at the lake in June. (until 2023-05-26)")
    assert got.source_ids == ("D2:1", "D2:2", "D2:3")


def _no_facts(body: dict[str, Any]) -> str:
    """A model that finds the entities but no relation between them."""
    if schema_name(body) == "ExtractedEdges":
        return json.dumps({"edges": []})
    return graphiti_facts(body)


def test_nothing_stored_is_an_error(tmp_path: Path) -> None:
    with LoopbackOpenAI(_no_facts) as srv:
        run = MemoryRun(_system(srv.url), data_sha256="test", cache_root=tmp_path)
        with pytest.raises(
            MemorySystemError, match=r"graphiti stored no fact for history 'conv 7' after 8 ep"
        ):
            run.index(HISTORY)
        assert _kinds(srv.requests)["ExtractedEdges"] == 8  # every episode was tried
    assert list(run.root.iterdir()) == []  # no store left behind


def test_a_store_of_another_layout_is_refused(tmp_path: Path) -> None:
    system = _system("http://127.0.0.1:9/v1")
    meta = tmp_path / graphiti_module.STORE_FILE
    with pytest.raises(MemorySystemError) as caught:
        system.open(tmp_path, HISTORY)
    assert str(caught.value).startswith(f"graphiti: {meta} is unreadable (")
    meta.write_text(json.dumps({"format": 0, "group_id": "g", "episodes": []}))
    with pytest.raises(MemorySystemError) as caught:
        system.open(tmp_path, HISTORY)
    assert str(caught.value) == f"graphiti: {meta} is not a store of format 1"
    meta.write_text("[1]")
    with pytest.raises(MemorySystemError, match="is not a store of format 1"):
        system.open(tmp_path, HISTORY)


def test_http_500_raises_with_the_endpoints_message(tmp_path: Path) -> None:
    with LoopbackOpenAI(lambda body: HttpFailure(500, "model crashed")) as srv:
        run = MemoryRun(_system(srv.url), data_sha256="test", cache_root=tmp_path)
        with pytest.raises(MemorySystemError, match=r"InternalServerError.*model crashed"):
            run.index(HISTORY)
        assert srv.count == 1  # the first episode failed, nothing after it
        retried = MemoryRun(
            _system(srv.url, llm_max_retries=1), data_sha256="test", cache_root=tmp_path
        )
        with pytest.raises(MemorySystemError, match="500"):
            retried.index(HISTORY)
        assert srv.count == 3  # one try and one retry
    assert list(run.root.iterdir()) == []


def test_a_wrong_api_key_raises(server: LoopbackOpenAI, tmp_path: Path) -> None:
    calls = server.count
    wrong = graphiti_system(llm_base_url=server.url, llm_api_key="wrong", llm_max_retries=0)
    with pytest.raises(MemorySystemError, match="401"):
        MemoryRun(wrong, data_sha256="test", cache_root=tmp_path).index(HISTORY)
    assert server.count == calls + 1


def test_args_version_and_cache_key(monkeypatch: pytest.MonkeyPatch) -> None:
    system = _system("http://127.0.0.1:9/v1")
    assert system.name == "graphiti"
    assert system.version == "graphiti-core-0.31.2-kuzu-0.11.3-1"
    assert dict(system.args) == {
        "llm_base_url": "http://127.0.0.1:9/v1",
        "llm_model": MODEL,
        "embedding_model": "all-MiniLM-L6-v2",
        "turns_per_episode": 1,
        "temperature": 0.0,
        "reranker": "rrf",
        "min_similarity": 0.0,
        "backend": "kuzu",
    }
    run = MemoryRun(system, data_sha256="test")
    assert API_KEY not in json.dumps(run.settings()) + repr(system) + run.key(HISTORY)
    same = graphiti_system(llm_base_url="http://127.0.0.1:9/v1", llm_model=MODEL, llm_api_key="x")
    assert MemoryRun(same, data_sha256="test").key(HISTORY) == run.key(HISTORY)
    for changed in (
        {"turns_per_episode": 2},
        {"llm_model": "other"},
        {"reranker": "mmr"},
        {"min_similarity": 0.6},
        {"temperature": 0.5},
        {"embedding_model": "sentence-transformers/all-MiniLM-L6-v2"},
    ):
        other = graphiti_system(
            **{"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": MODEL, **changed}
        )
        assert MemoryRun(other, data_sha256="test").key(HISTORY) != run.key(HISTORY), changed
    # a new graphiti or Kuzu is a new version, so a new store
    monkeypatch.setattr(
        graphiti_module, "package_version", lambda package: {"graphiti-core": "0.32.0"}[package]
    )
    assert _system("http://127.0.0.1:9/v1").version == "graphiti-core-0.32.0-kuzu-0.11.3-1"


def test_entry_point_and_bad_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_memory_system("graphiti", {"llm_base_url": "http://127.0.0.1:9/v1"})
    assert isinstance(loaded, GraphitiSystem)
    assert loaded.args["llm_model"] == "gpt-4o-mini"
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="llm_base_url"):
        graphiti_system()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    assert graphiti_system().args["llm_base_url"] == "http://127.0.0.1:9/v1"
    bad: list[tuple[dict[str, Any], str]] = [
        ({"turns_per_episode": 0}, "turns_per_episode must be an integer >= 1"),
        ({"reranker": "cohere"}, "reranker='cohere' is not one of rrf, mmr, cross_encoder"),
        ({"backend": "neo4j"}, "backend=neo4j needs uri"),
        ({"uri": "bolt://127.0.0.1:7687"}, "uri is for backend=neo4j or falkordb"),
        ({"backend": "sqlite"}, "backend='sqlite' is not one of kuzu, neo4j, falkordb"),
        ({"temperature": "hot"}, "temperature must be a number"),
        ({"min_similarity": 2}, r"min_similarity must be a cosine in \[-1, 1\]"),
    ]
    for args, message in bad:
        with pytest.raises(ValueError, match=message):
            graphiti_system(**args)
    with pytest.raises(
        ValueError,
        match=r"memory_args 'top' is not an argument of graphiti; arguments: llm_base_url, ",
    ):
        load_memory_system("graphiti", {"llm_base_url": "http://x/v1", "top": 3})
    neo4j = graphiti_system(backend="neo4j", uri="bolt://127.0.0.1:7687")
    assert neo4j.args["uri"] == "bolt://127.0.0.1:7687"
    assert neo4j.version == "graphiti-core-0.31.2-neo4j-1"


def test_telemetry_is_off() -> None:
    from graphiti_core.telemetry import telemetry

    graphiti_system(llm_base_url="http://127.0.0.1:9/v1")
    assert os.environ["GRAPHITI_TELEMETRY_ENABLED"] == "false"
    assert telemetry.is_telemetry_enabled() is False


def test_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    graphiti_engine.imported.cache_clear()
    monkeypatch.setitem(sys.modules, "graphiti_core", None)  # import now raises ImportError
    try:
        with pytest.raises(ValueError, match=r"pip install 'memevals\[graphiti\]'"):
            graphiti_system(llm_base_url="http://127.0.0.1:9/v1")
    finally:
        graphiti_engine.imported.cache_clear()


def test_dates_are_read_in_every_benchmark_format() -> None:
    from datetime import datetime, timezone

    utc = timezone.utc
    assert parse_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=utc)
    assert parse_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21, tzinfo=utc)
    assert parse_date("8 May 2023") == datetime(2023, 5, 8, tzinfo=utc)
    assert parse_date("2023-05-08T10:00:00") == datetime(2023, 5, 8, 10, tzinfo=utc)
    assert parse_date("  ") is None
    with pytest.raises(ValueError, match="cannot read 'yesterday' as a date"):
        parse_date("yesterday")
    bad = History("h", (Session("S1", "the day after", HISTORY.sessions[0].turns),))
    with pytest.raises(MemorySystemError, match="session 'S1' of 'h': cannot read"):
        MemoryRun(_system("http://127.0.0.1:9/v1"), data_sha256="t").index(bad)


def test_the_scripted_llm_reads_graphitis_sections() -> None:
    def body(schema: str, prompt: str) -> dict[str, Any]:
        return {
            "messages": [{"role": "user", "content": prompt}],
            "response_format": {"type": "json_schema", "json_schema": {"name": schema}},
        }

    episode = "Ann: I love the Blue Lake trail!\nBo: Me too.\nAnn: We go every week."
    entities = json.loads(
        graphiti_facts(
            body("ExtractedEntities", f"<CURRENT MESSAGE>\n{episode}\n</CURRENT MESSAGE>")
        )
    )
    assert [e["name"] for e in entities["extracted_entities"]] == [
        "Ann",
        "I love the Blue Lake",
        "Bo",
        "Me too",
    ]
    prompt = (
        f"<CURRENT_MESSAGE>\n{episode}\n</CURRENT_MESSAGE>\n\n"
        "<REFERENCE_TIME>\n2023-05-08 13:56:00+00:00  # ISO 8601\n</REFERENCE_TIME>"
    )
    edges = json.loads(graphiti_facts(body("ExtractedEdges", prompt)))["edges"]
    assert [(e["source_entity_name"], e["target_entity_name"], e["fact"]) for e in edges] == [
        ("Ann", "I love the Blue Lake", "Ann said: I love the Blue Lake trail! We go every week."),
        ("Bo", "Me too", "Bo said: Me too."),
    ]
    assert {e["valid_at"] for e in edges} == {"2023-05-08T13:56:00Z"}
    assert topic_name("...") == "something"
    with pytest.raises(ValueError, match="no scripted answer for schema 'Unknown'"):
        graphiti_facts(body("Unknown", ""))

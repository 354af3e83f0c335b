"""The memory-system harness and options, framework-free: ingest once per key, the disk cache,
the cut to k, the checks on what a system returns, failures, and the option rules."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from memevals.core.memory_harness import RECORD_FILE, MemoryRun, ingest_totals, latency_percentiles
from memevals.core.memory_options import MemoryOptions, system_choice
from memevals.core.memory_system import (
    History,
    IngestReport,
    MemoryItem,
    MemoryQuery,
    MemorySystemError,
    ModelReply,
    Session,
    TextModel,
    Turn,
    available_memory_systems,
    load_memory_system,
    parse_memory_args,
)

HISTORY = History(
    "h1",
    (
        Session(
            "S1", "1 May 2023", (Turn("D1:1", "Ann", "I adopted a cat"), Turn("D1:2", "Bo", "nice"))
        ),
        Session("S2", "9 May 2023", (Turn("D2:1", "Ann", "The cat is called Miso"),)),
    ),
)


class FakeIndex:
    def __init__(self, items: Sequence[Any], fail_on: str | None = None) -> None:
        self.items = list(items)
        self.fail_on = fail_on

    def retrieve(self, query: MemoryQuery) -> Sequence[Any]:
        if query.text == self.fail_on:
            raise RuntimeError(f"backend timeout for {query.text}")
        return self.items


class FakeSystem:
    """Counts ingestions; returns the items it was built with."""

    name = "fake"
    version = "1"

    def __init__(self, items: Sequence[Any] = (), *, fail_ingest: bool = False, **args: Any):
        self.items = items
        self.fail_ingest = fail_ingest
        self._args = args
        self.ingested: list[str] = []
        self.delay = 0.0

    @property
    def args(self) -> Mapping[str, Any]:
        return self._args

    def ingest(self, history: History, store: Path, model: TextModel | None) -> IngestReport:
        time.sleep(self.delay)
        self.ingested.append(history.history_id)
        if self.fail_ingest:
            raise ConnectionError("vector store unreachable")
        (store / "x.json").write_text("[]")
        if model is not None:
            model("sys", "user")
        return IngestReport(items_stored=3, llm_calls=2)

    def open(self, store: Path, history: History) -> FakeIndex:
        assert (store / "x.json").is_file()
        return FakeIndex(self.items)


def item(*ids: str) -> MemoryItem:
    return MemoryItem(text="t", source_ids=ids)


def test_one_ingestion_per_history_and_the_disk_cache_is_reused(tmp_path: Path) -> None:
    system = FakeSystem([item("D1:1")])
    run = MemoryRun(system, data_sha256="abc", cache_root=tmp_path)
    for _ in range(3):
        got = run.retrieve(HISTORY, MemoryQuery("cat", k=5))
    assert system.ingested == ["h1"] and run.ingestions == 1 and run.cache_hits == 0
    assert got.ingest.items_stored == 3 and got.ingest.llm_calls == 2 and not got.ingest.cached
    store = tmp_path / "fake" / run.key(HISTORY)
    assert json.loads((store / RECORD_FILE).read_text())["history_id"] == "h1"
    # a new run (another process, model or task) reads the store: no ingestion
    again = MemoryRun(FakeSystem([item("D1:1")]), data_sha256="abc", cache_root=tmp_path)
    hit = again.retrieve(HISTORY, MemoryQuery("cat", k=5))
    assert again.ingestions == 0 and again.cache_hits == 1 and hit.ingest.cached
    assert hit.ingest.seconds == got.ingest.seconds  # the record of the run that built it


def test_the_key_covers_arguments_data_content_and_the_memory_model(tmp_path: Path) -> None:
    base = MemoryRun(FakeSystem(unit="turn"), data_sha256="abc", cache_root=tmp_path)
    key = base.key(HISTORY)
    assert (
        MemoryRun(FakeSystem(unit="turn"), data_sha256="abc", cache_root=tmp_path).key(HISTORY)
        == key
    )
    assert MemoryRun(FakeSystem(unit="session"), data_sha256="abc").key(HISTORY) != key
    assert MemoryRun(FakeSystem(unit="turn"), data_sha256="abd").key(HISTORY) != key
    stitched = History("h1", HISTORY.sessions[:1])  # same id, other content
    assert base.key(stitched) != key

    class Named:
        def __init__(self, name: str) -> None:
            self.model_name = name

        def __call__(self, system: str, user: str) -> ModelReply:
            return ModelReply("x", 3, 1)

    assert base.key(HISTORY, Named("a")) == key  # a system without uses_model ignores it
    uses = FakeSystem(unit="turn")
    uses.uses_model = True  # type: ignore[attr-defined]
    keyed = MemoryRun(uses, data_sha256="abc", cache_root=tmp_path)
    assert keyed.key(HISTORY, Named("a")) != keyed.key(HISTORY, Named("b"))


def test_model_calls_and_tokens_are_counted_per_ingestion(tmp_path: Path) -> None:
    def model(system: str, user: str) -> ModelReply:
        return ModelReply("reply", input_tokens=11, output_tokens=4)

    run = MemoryRun(FakeSystem([item("D1:1")]), data_sha256="abc", cache_root=tmp_path)
    record = run.retrieve(HISTORY, MemoryQuery("cat", k=1), model).ingest
    assert (record.model_calls, record.input_tokens, record.output_tokens) == (1, 11, 4)


def test_more_than_k_items_are_cut_and_counted(tmp_path: Path) -> None:
    run = MemoryRun(
        FakeSystem([item("D1:1"), item("D1:2"), item("D2:1")]), data_sha256="a", cache_root=tmp_path
    )
    got = run.retrieve(HISTORY, MemoryQuery("cat", k=2))
    assert [i.source_ids for i in got.items] == [("D1:1",), ("D1:2",)]
    assert (got.returned, got.cut) == (3, 1)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([item("D9:9")], "cites 'D9:9', which is no turn or session of h1"),
        (["a string"], "returned str at position 0, not a MemoryItem"),
    ],
)
def test_a_bad_retrieval_is_an_error(tmp_path: Path, items: list[Any], message: str) -> None:
    run = MemoryRun(FakeSystem(items), data_sha256="a", cache_root=tmp_path)
    with pytest.raises(MemorySystemError, match=message):
        run.retrieve(HISTORY, MemoryQuery("cat", k=2))


def test_session_ids_are_valid_sources(tmp_path: Path) -> None:
    run = MemoryRun(FakeSystem([item("S2")]), data_sha256="a", cache_root=tmp_path)
    assert run.retrieve(HISTORY, MemoryQuery("cat", k=2)).items[0].source_ids == ("S2",)


def test_a_failing_retrieval_names_the_system_query_and_history(tmp_path: Path) -> None:
    system = FakeSystem([item("D1:1")])
    run = MemoryRun(system, data_sha256="a", cache_root=tmp_path)
    index, _ = run.index(HISTORY)
    index.fail_on = "boom"  # type: ignore[attr-defined]
    with pytest.raises(
        MemorySystemError,
        match=r"fake: retrieval for 'boom' in h1 failed: "
        r"RuntimeError: backend timeout for boom",
    ):
        run.retrieve(HISTORY, MemoryQuery("boom", k=2))
    assert run.retrieve(HISTORY, MemoryQuery("fine", k=2)).items  # other questions unaffected


def test_a_failed_ingestion_leaves_no_store_and_is_retried_by_later_callers(tmp_path: Path) -> None:
    system = FakeSystem(fail_ingest=True)
    run = MemoryRun(system, data_sha256="a", cache_root=tmp_path)
    with pytest.raises(
        MemorySystemError,
        match="fake: ingestion of h1 failed: ConnectionError: vector store unreachable",
    ):
        run.retrieve(HISTORY, MemoryQuery("cat", k=2))
    assert not any((tmp_path / "fake").iterdir())  # no half-written store
    with pytest.raises(MemorySystemError):
        run.retrieve(HISTORY, MemoryQuery("cat", k=2))
    assert system.ingested == ["h1", "h1"]  # a later call (Inspect's retry) tries again


def test_threads_waiting_for_one_ingestion_share_it_and_its_failure(tmp_path: Path) -> None:
    for fail in (False, True):
        system = FakeSystem([item("D1:1")], fail_ingest=fail)
        system.delay = 0.3
        run = MemoryRun(system, data_sha256=str(fail), cache_root=tmp_path)
        errors: list[str] = []

        def ask(run: MemoryRun = run, errors: list[str] = errors) -> None:
            try:
                run.retrieve(HISTORY, MemoryQuery("cat", k=1))
            except MemorySystemError as exc:
                errors.append(str(exc))

        threads = [threading.Thread(target=ask) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert system.ingested == ["h1"]  # one ingestion for six waiting questions
        assert len(errors) == (6 if fail else 0)
        assert len(set(errors)) <= 1


def test_an_unreadable_cached_record_is_an_error(tmp_path: Path) -> None:
    run = MemoryRun(FakeSystem([item("D1:1")]), data_sha256="a", cache_root=tmp_path)
    store = tmp_path / "fake" / run.key(HISTORY)
    store.mkdir(parents=True)
    (store / RECORD_FILE).write_text("{not json")
    with pytest.raises(MemorySystemError, match=r"is unreadable .* memory_cache=false"):
        run.retrieve(HISTORY, MemoryQuery("cat", k=1))


def test_without_the_cache_stores_live_in_a_folder_of_the_run(tmp_path: Path) -> None:
    system = FakeSystem([item("D1:1")])
    run = MemoryRun(system, data_sha256="a", cache=False)
    root = run.root
    run.retrieve(HISTORY, MemoryQuery("cat", k=1))
    assert root.is_dir() and system.ingested == ["h1"]
    again = MemoryRun(system, data_sha256="a", cache=False)
    again.retrieve(HISTORY, MemoryQuery("cat", k=1))
    assert system.ingested == ["h1", "h1"]  # nothing shared
    del run
    import gc

    gc.collect()
    assert not root.exists()


def test_latency_percentiles_and_ingest_totals() -> None:
    got = latency_percentiles([0.1, 0.2, 0.3, 0.4, 1.0])
    assert got == pytest.approx(
        {"latency_p50_s": 0.3, "latency_p95_s": 0.88, "latency_p99_s": 0.976}
    )
    records = [
        {
            "key": "a",
            "cached": False,
            "seconds": 1.5,
            "model_calls": 3,
            "input_tokens": 10,
            "output_tokens": 5,
            "llm_calls": None,
        },
        {
            "key": "a",
            "cached": False,
            "seconds": 1.5,
            "model_calls": 3,
            "input_tokens": 10,
            "output_tokens": 5,
            "llm_calls": None,
        },
        {
            "key": "b",
            "cached": True,
            "seconds": 9.0,
            "model_calls": 7,
            "input_tokens": 1,
            "output_tokens": 1,
            "llm_calls": 4,
        },
    ]
    assert ingest_totals(records) == {
        "histories": 2,
        "ingestions": 1,
        "cache_hits": 1,
        "build_seconds": 1.5,
        "build_model_calls": 3,
        "build_input_tokens": 10,
        "build_output_tokens": 5,
        "build_llm_calls": 0,
        "open_seconds": 0.0,
    }


# ------------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, {}),
        ("", {}),
        ("unit=session,k=3", {"unit": "session", "k": 3}),
        ('{"ids": [1, 2], "on": true}', {"ids": [1, 2], "on": True}),
        ({"a": 1}, {"a": 1}),
        # what the Inspect CLI makes of -T memory_args=llm_base_url=http://h:1/v1,turns_per_add=2
        (
            ["llm_base_url=http://h:1/v1", "turns_per_add=2"],
            {"llm_base_url": "http://h:1/v1", "turns_per_add": 2},
        ),
    ],
)
def test_memory_args_are_read_as_inspect_reads_model_args(value: Any, expected: Any) -> None:
    assert parse_memory_args(value) == expected


def test_memory_args_from_a_file_and_bad_values(tmp_path: Path) -> None:
    path = tmp_path / "args.yaml"
    path.write_text("unit: turn\nembedding_model: all-MiniLM-L6-v2\n")
    assert parse_memory_args(str(path)) == {"unit": "turn", "embedding_model": "all-MiniLM-L6-v2"}
    with pytest.raises(ValueError, match="does not exist"):
        parse_memory_args(str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="'unit' is not key=value"):
        parse_memory_args("unit")
    with pytest.raises(ValueError, match="the value of 'x'"):
        parse_memory_args("x=[1")


def test_systems_are_found_by_name_with_a_suggestion() -> None:
    names = available_memory_systems()
    assert {"bm25", "embedding", "observations", "summaries", "mem0"} <= set(names)
    with pytest.raises(
        ValueError,
        match=r"memory='bm52' is not a registered memory system "
        r"\(did you mean 'bm25'\?\)",
    ):
        load_memory_system("bm52")
    with pytest.raises(
        ValueError,
        match=r"^memory='bm25': memory_args 'colour' is not an argument of bm25; arguments: unit$",
    ):
        load_memory_system("bm25", {"unit": "turn", "colour": "red"})
    with pytest.raises(
        ValueError, match=r"memory_args 'unt' is not an argument of bm25 \(did you mean 'unit'\?\)"
    ):
        load_memory_system("bm25", {"unt": "turn"})
    with pytest.raises(
        ValueError, match=r"^unit='turnz' is not supported \(did you mean 'turn'\?\); allowed"
    ):
        load_memory_system("bm25", {"unit": "turnz"})
    with pytest.raises(
        ValueError, match="unit='paragraph' is not supported; allowed values: auto, turn, session"
    ):
        load_memory_system("bm25", {"unit": "paragraph"})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (MemoryOptions(context="rag", memory="bm25"), "cannot be combined with context='rag'"),
        (MemoryOptions(memory="bm25", retriever="bm25"), "retriever applies only to context=rag"),
        (
            MemoryOptions(memory="bm25", max_context_tokens=100),
            "max_context_tokens applies only to context=truncated",
        ),
        (MemoryOptions(memory_args="unit=turn"), "memory_args applies only with memory=<name>"),
        (MemoryOptions(memory_cache=False), "memory_cache applies only with memory=<name>"),
        (MemoryOptions(context="memory"), "context=memory needs a memory system"),
    ],
)
def test_options_of_another_mode_are_rejected(options: MemoryOptions, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        options.checked(("full", "rag", "truncated"))


def test_system_choice_builds_the_system_with_its_k() -> None:
    checked = MemoryOptions(memory="bm25", top_k=7, memory_args="unit=session").checked(("full",))
    assert checked.context == "memory"
    choice = system_choice(checked, default_top_k=5)
    assert (choice.system.name, dict(choice.system.args), choice.top_k, choice.cache) == (
        "bm25",
        {"unit": "session"},
        7,
        True,
    )
    assert not system_choice(MemoryOptions(memory="bm25", memory_cache=False), 5).cache
    with pytest.raises(ValueError, match="top_k must be an integer >= 1"):
        system_choice(MemoryOptions(memory="bm25", top_k=0), 5)


def test_logged_results_keep_the_first_items_with_their_text_cut() -> None:
    """A sample logs the text of what its system returned (memevals-report's question view),
    bounded: the first RESULTS_LOGGED items, each cut to RESULT_CHARS characters with its whole
    length beside it, the cited ids and the score (a numpy score as a plain float)."""
    import numpy as np

    from memevals.core.memory_harness import RESULT_CHARS, RESULTS_LOGGED, logged_results

    long_text = "x" * (RESULT_CHARS + 100)
    items = [
        MemoryItem(long_text, ("D1:1", "D1:2"), score=np.float32(0.5)),
        *(MemoryItem(f"fact {i}", (f"D2:{i}",)) for i in range(12)),
    ]
    logged = logged_results(items)
    assert (RESULTS_LOGGED, RESULT_CHARS) == (10, 500)
    assert len(logged) == RESULTS_LOGGED
    assert logged[0] == {"text": "x" * RESULT_CHARS, "ids": ["D1:1", "D1:2"], "score": 0.5,
                         "chars": RESULT_CHARS + 100}  # fmt: skip
    assert type(logged[0]["score"]) is float
    assert logged[1] == {"text": "fact 0", "ids": ["D2:0"], "score": None}
    assert logged[-1]["text"] == "fact 8"
    json.dumps(logged)  # what lm-eval writes into its documents
    assert logged_results([]) == []

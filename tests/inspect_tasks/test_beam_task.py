"""BEAM through Inspect: the real `inspect eval` CLI with a rule-based grader, the report's
figures recomputed from the logged samples, the protocols' item rules, and a memory system on
500K end to end (one ingestion per conversation, the official RAG prompt of its items)."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any

from beam_grader import grade, item_score
from cli_support import TESTS, run_python
from inspect_ai import eval as inspect_eval
from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessage, ModelOutput, get_model
from logged_figures import figures

from memevals.benchmarks.beam.data import conversations
from memevals.benchmarks.beam.memory import beam_memory, rag_context
from memevals.benchmarks.beam.official import official_texts
from memevals.benchmarks.beam.scoring import BeamRow, summarize
from memevals.core.memory_options import MemoryOptions
from memevals.core.protocol import OFFICIAL
from memevals.inspect_tasks.beam import beam

GRADER = TESTS / "support" / "beam_grader.py"
ABILITIES = ("event_ordering", "knowledge_update")


def judged(log: EvalLog) -> list[tuple[Any, dict[str, Any]]]:
    out = []
    for sample in log.samples or []:
        [score] = [v for k, v in (sample.scores or {}).items() if k.endswith("beam_judge")]
        out.append((sample, score))
    return out


def grader_model() -> Any:
    return get_model(
        "mockllm/model",
        custom_outputs=lambda messages, *_: ModelOutput.from_content("g", grade(messages)),
        memoize=False,
    )


def test_beam_through_the_real_cli(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    proc = run_python(
        [
            sys.executable,
            str(GRADER),
            "eval",
            "beam",
            "--model",
            "mockllm/model",
            "--model-role",
            "grader=beamgrader/rule",
            "-T",
            "categories=event_ordering,knowledge_update",
            # one question of each ability from each of two conversations (two clusters): each
            # sample carries a whole ~100K-token conversation into the log, twice (its input and
            # its model event), and the checks below are per sample
            "--sample-id",
            ",".join(f"beam-100K-{c}-{a}-0" for c in (1, 2) for a in ABILITIES),
            "--log-dir",
            str(log_dir),
            "--display",
            "none",
        ],
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    [path] = log_dir.glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and log.eval.task_version == "1.1"  # eval.yaml's version
    assert log.eval.metadata is not None and log.eval.metadata["protocol"] == "official"
    # official: every call at temperature 0 with no token limit, as upstream's ChatOpenAI (the
    # rule grader also refuses any other limit); the reader's is also the task's config
    assert log.plan.config.max_tokens is None and log.plan.config.temperature == 0.0
    for sample in log.samples or []:
        sent = [e for e in sample.events if isinstance(e, ModelEvent)]
        assert {e.role == "grader" for e in sent} == {True, False}
        assert {(e.config.temperature, e.config.max_tokens) for e in sent} == {(0.0, None)}
    rows = []
    assert len(log.samples or []) == 4
    for sample, score in judged(log):
        md = sample.metadata
        assert len(score.metadata["item_scores"]) == len(md["rubric"])
        # mockllm's one-line reply: each rubric item is judged on it by the word rule
        want = [item_score(r, score.answer) for r in md["rubric"]]
        want = want if md["category"] == "event_ordering" else [float(int(w)) for w in want]
        assert score.metadata["item_scores"] == want
        if md["category"] == "event_ordering":
            # one answer line, compared with every rubric item in turn
            assert score.metadata["equivalence_calls"] == len(md["rubric"])
            assert score.value["beam"] == score.metadata["event_order"]["tau_norm"]
        rows.append(BeamRow(md["conversation"], md["category"], score.value["beam"]))
    got = figures(log)
    summary = summarize(rows)
    assert got[("beam", "overall")] == summary.overall
    assert {a: got[("beam", a)] for a in summary.per_ability} == summary.per_ability
    assert got[("unscored", "count")] == 0.0
    # one result named by the scorer: beam's figures under their own names, then the count
    assert log.results is not None
    [judge] = [s for s in log.results.scores if s.name == "beam_judge"]
    assert judge.scored_samples == 4
    assert list(judge.metrics) == ["overall", "stderr", *summary.per_ability, "unscored"]


def _reply_for(messages: list[ChatMessage], half: bool) -> ModelOutput:
    """A reply naming every word of the question's rubric (or half of each item's words)."""
    question = messages[-1].text
    rubric = RUBRICS[next(q for q in RUBRICS if q in question)]
    lines = []
    for item in rubric:
        words = item.split()
        lines.append(" ".join(words[: max(1, len(words) // 2)]) if half else item)
    return ModelOutput.from_content("mockllm/model", "\n".join(lines))


RUBRICS: dict[str, list[str]] = {}


def _run(protocol: str, half: bool, tmp_path: Path) -> EvalLog:
    task = beam(categories="knowledge_update,event_ordering", protocol=protocol, context="none")
    for sample in task.dataset:
        assert sample.metadata is not None
        RUBRICS[sample.metadata["question"]] = sample.metadata["rubric"]
    model = get_model(
        "mockllm/model", custom_outputs=lambda m, *_: _reply_for(m, half), memoize=False
    )
    [log] = inspect_eval(
        task,
        model=model,
        model_roles={"grader": grader_model()},
        limit=8,
        display="none",
        log_dir=str(tmp_path / protocol),
    )
    assert log.status == "success", log.error
    return log


def test_the_protocols_read_a_half_right_item_differently(tmp_path: Path) -> None:
    official = judged(_run("official", True, tmp_path))
    memevals = judged(_run("memevals", True, tmp_path))
    for (sample, off), (_, mine) in zip(official, memevals, strict=True):
        rubric = sample.metadata["rubric"]
        answer = off.answer
        rule = [item_score(r, answer) for r in rubric]
        if sample.metadata["category"] == "event_ordering":
            assert off.metadata["item_scores"] == rule  # float: 0.5 kept
        else:
            assert off.metadata["item_scores"] == [float(int(v)) for v in rule]  # 0.5 -> 0
        assert mine.metadata["item_scores"] == rule
    assert any(0.5 in m.metadata["item_scores"] for _, m in memevals)
    full = judged(_run("official", False, tmp_path))
    for sample, score in full:
        assert score.metadata["rubric_score"] == 1.0, sample.id
        if sample.metadata["category"] == "event_ordering":
            # every rubric item answered in order: perfect alignment and order
            assert score.metadata["event_order"]["f1"] == 1.0 and score.value["beam"] == 1.0


def test_memory_bm25_on_500k_ingests_each_conversation_once(tmp_path: Path) -> None:
    task = beam(
        size="500K",
        categories="information_extraction",
        memory="bm25",
        memory_cache=False,
        top_k=3,
    )
    [log] = inspect_eval(
        task,
        model=get_model("mockllm/model"),
        model_roles={"grader": grader_model()},
        limit=6,  # conversations 1, 2, 3
        display="none",
        log_dir=str(tmp_path),
    )
    assert log.status == "success", log.error
    got = figures(log)
    assert got[("memory_system", "ingestions")] == 3.0
    assert got[("memory_system", "cache_hits")] == 0.0
    texts = official_texts()
    rag = beam_memory(MemoryOptions(context="rag", top_k=3), protocol=OFFICIAL)
    convs = {c.id: c for c in conversations("500K")[:3]}
    for sample in log.samples or []:
        md = sample.metadata
        # the system's verbatim turns, in upstream's RAG prompt, are exactly what rag retrieves
        ids, chunks = rag.ranked_chunks(convs[md["conversation"]], md["question"])
        assert md["retrieved_ids"] == ids
        sent = next(m for m in sample.messages if m.role == "user").text
        assert sent == texts.rag_prompt(rag_context(chunks), md["question"])
        assert not [m for m in sample.messages if m.role == "system"]
    assert not math.isnan(got[("beam", "overall")])


def test_unknown_option_and_size_are_clear_errors() -> None:
    import pytest

    with pytest.raises(ValueError, match=re.escape("size='100KB' is not a BEAM size")):
        beam(size="100KB")
    with pytest.raises(ValueError, match="did you mean 'summarization'"):
        beam(categories="sumarization")
    with pytest.raises(ValueError, match="context_window applies only to context=full"):
        beam(context="none", context_window=1000)

"""The lm-eval twin of `locomo_dialogue`: indexed, the same documents and prompt text as the
Inspect samples, and the same per-sample BLEU-1/2, ROUGE-L (and BERTScore) for the same
replies in both frameworks; options that lm-eval cannot honour fail clearly."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lm_eval")

from inspect_results import merged_scores
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from lm_eval_support import TableLM, inspect_prompt, run_inspect, run_lm_eval_cli, samples_of
from logged_figures import figures

from memevals.benchmarks.locomo_dialogue.scoring import (
    BleuStats,
    bleu,
    bleu_stats,
    clean_reply,
    corpus_bleu,
)
from memevals.inspect_tasks.locomo_dialogue import locomo_dialogue
from memevals.lm_eval_tasks import include_path
from memevals.lm_eval_tasks.documents import doc_item, doc_to_text
from memevals.lm_eval_tasks.locomo_dialogue.utils import dialogue_docs
from memevals.lm_eval_tasks.option_checks import OptionError

#: Keys the lm-eval documents add to the Inspect metadata (what process_results needs).
LM_EVAL_EXTRA = {"bertscore", "bertscore_model", "bertscore_layers"}


def inspect_samples(**options: Any) -> dict[str, Any]:
    task = locomo_dialogue(bertscore=False, **options)
    return {str(s.id): s for s in task.dataset}


def lm_eval_docs(**options: Any) -> list[dict[str, Any]]:
    return list(dialogue_docs(**options)["test"])


def test_task_is_indexed() -> None:
    tm = TaskManager(include_path=include_path(), include_defaults=False)
    assert "locomo_dialogue" in tm.all_tasks


@pytest.mark.parametrize(
    ("lm_options", "inspect_options"),
    [
        ({}, {}),  # the defaults: full history, 20 turns of each of the 10 conversations
        (
            {"context": "truncated", "max_context_tokens": 600, "turn_seed": 4},
            {"context": "truncated", "max_context_tokens": 600, "seed": 4},
        ),
        (
            {"context": "rag", "top_k": 2, "conversations": "conv-30,conv-26"},
            {"context": "rag", "top_k": 2, "conversations": "conv-30,conv-26"},
        ),
        (
            {"context": "session", "turns_per_conversation": 0, "conversations": "conv-42"},
            {"context": "session", "turns_per_conversation": 0, "conversations": "conv-42"},
        ),
    ],
    ids=["defaults", "truncated-seed4", "rag-observations", "session-all-turns"],
)
def test_documents_are_the_inspect_samples(
    lm_options: dict[str, Any], inspect_options: dict[str, Any], data_dir: Path
) -> None:
    docs = lm_eval_docs(**lm_options)
    samples = inspect_samples(**inspect_options)
    assert [d["id"] for d in docs] == list(samples)  # same turns, same order
    for doc in docs:
        sample = samples[doc["id"]]
        assert doc_to_text(doc) == inspect_prompt(sample.input)
        assert doc["target"] == sample.target
        md = doc_item(doc).metadata
        assert {k: md[k] for k in LM_EVAL_EXTRA} == {
            "bertscore": False,
            "bertscore_model": None,
            "bertscore_layers": None,
        }
        assert {k: v for k, v in md.items() if k not in LM_EVAL_EXTRA} == sample.metadata
    if not lm_options:
        assert len(docs) == 200 and docs[0]["id"] == "conv-26-D1:7"
    if lm_options.get("context") == "rag":  # the dialogue default unit: observations
        retrieved = [i for d in docs for i in doc_item(d).metadata["retrieved_ids"]]
        assert retrieved and all(i.startswith("D") for i in retrieved)
        assert any("Below are excerpts" in doc_to_text(d) for d in docs)


def test_options_lm_eval_cannot_honour_fail_clearly(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(OptionError, match=r"images=true: lm-eval tasks send text only"):
        dialogue_docs(images=True)
    with pytest.raises(OptionError, match=r"max_images: lm-eval tasks send text only"):
        dialogue_docs(max_images=2)
    with pytest.raises(OptionError, match="apply only with bertscore=true"):
        dialogue_docs(bertscore_layers=6)
    with pytest.raises(OptionError, match=r"locomo_dialogue: context='oracle' is not supported"):
        dialogue_docs(context="oracle")
    with pytest.raises(OptionError, match="top_k applies only to context=rag"):
        dialogue_docs(context="session", top_k=3)
    with pytest.raises(OptionError, match="did you mean 'turns_per_conversation'"):
        dialogue_docs(turns_per_conversaton=3)
    with pytest.raises(OptionError, match="'turn_seed' must be a whole number"):
        dialogue_docs(turn_seed="abc")
    with pytest.raises(OptionError, match="conversations='conv-1'"):
        dialogue_docs(conversations="conv-1")
    # a `seed` model argument does not change the draw (and says so); turn_seed does
    base = [d["id"] for d in lm_eval_docs(conversations="conv-26", context="session")]
    with caplog.at_level(logging.WARNING):
        seeded = lm_eval_docs(conversations="conv-26", context="session", seed=9, pretrained="x")
    assert [d["id"] for d in seeded] == base
    assert any("turn_seed" in r.message for r in caplog.records)
    assert [d["id"] for d in lm_eval_docs(conversations="conv-26", turn_seed=9)] != base


# ----------------------------------------------------------------------------------------------
# Cross-framework consistency


def varied_reply(index: int, doc: dict[str, Any]) -> str:
    """Replies covering the clean-up and scoring paths: exact, labelled, quoted and partial,
    unrelated, empty, running on into the other speaker's turn, scrambled."""
    md = doc_item(doc).metadata
    target, speaker, other = str(doc["target"]), md["speaker"], md["other_speaker"]
    words = target.split()
    return [
        target,
        f"{speaker}: {target}",
        f'"{" ".join(words[: max(1, len(words) // 2)])}"',
        "Wow, that's so cool! Tell me more about it.",
        "",
        f"{target}\n{other}: Thanks, that means a lot!",
        " ".join(reversed(words)),
    ][index % 7]


@pytest.mark.parametrize(
    ("lm_options", "inspect_options"),
    [
        (
            {
                "context": "session",
                "conversations": "conv-26,conv-41",
                "turns_per_conversation": 4,
                "bertscore": True,
                "bertscore_model": "all-MiniLM-L6-v2",
                "bertscore_layers": 6,
            },
            {
                "context": "session",
                "conversations": "conv-26,conv-41",
                "turns_per_conversation": 4,
                "bertscore": True,
                "bertscore_model": "all-MiniLM-L6-v2",
                "bertscore_layers": 6,
            },
        ),
        (
            {"context": "rag", "top_k": 3, "conversations": "conv-30", "turn_seed": 2},
            {
                "context": "rag",
                "top_k": 3,
                "conversations": "conv-30",
                "seed": 2,
                "bertscore": False,
            },
        ),
    ],
    ids=["session-bertscore", "rag"],
)
def test_scores_match_across_frameworks(
    lm_options: dict[str, Any], inspect_options: dict[str, Any], data_dir: Path, tmp_path: Path
) -> None:
    docs = lm_eval_docs(**lm_options)
    replies = {doc_to_text(d): varied_reply(n, d) for n, d in enumerate(docs)}
    with_bert = bool(lm_options.get("bertscore"))

    lm = TableLM(replies)
    results = simple_evaluate(
        model=lm,
        tasks=["locomo_dialogue"],
        task_manager=TaskManager(
            include_path=include_path(), include_defaults=False, metadata=lm_options
        ),
        log_samples=True,
        bootstrap_iters=0,
    )
    assert results is not None
    assert sorted(lm.prompts) == sorted(replies)  # every document, each prompt once
    lm_samples = {s["doc"]["id"]: s for s in results["samples"]["locomo_dialogue"]}
    row = results["results"]["locomo_dialogue"]

    log = run_inspect(locomo_dialogue(**inspect_options), replies, tmp_path)
    assert log.samples is not None and sorted(str(s.id) for s in log.samples) == sorted(lm_samples)

    keys = ["bleu1", "bleu2", "rougeL", *(["bertscore_f1"] if with_bert else [])]
    stats: list[BleuStats] = []
    for sample in log.samples:
        mine = lm_samples[str(sample.id)]
        theirs = merged_scores(sample)
        for key in keys:
            assert mine[key] == theirs[key], (sample.id, key)  # identical, not approximately
        assert mine["prompt_tokens"] == sample.metadata["prompt_tokens"]
        # and both are the metric functions applied to the cleaned reply
        md = sample.metadata
        prediction = clean_reply(sample.output.completion, md["speaker"], md["other_speaker"])
        assert mine["bleu2"] == bleu(prediction, str(sample.target), 2)
        stats.append(bleu_stats(prediction, str(sample.target), 2))
        assert mine["corpus_bleu2"] == {
            "counts": list(stats[-1].counts),
            "totals": list(stats[-1].totals),
            "sys_len": stats[-1].sys_len,
            "ref_len": stats[-1].ref_len,
        }
    if not with_bert:
        assert "bertscore_f1,none" not in row
    # the replies really exercise the scores: exact (1.0), empty (0.0) and values between
    bleu1 = [s["bleu1"] for s in lm_samples.values()]
    assert len(set(bleu1)) >= 4 and 0.0 in bleu1 and max(bleu1) == pytest.approx(1.0)

    metrics = figures(log)
    for key in keys:
        assert row[f"{key},none"] == pytest.approx(metrics[(key, "mean")], abs=1e-12), key
    for order in (1, 2):
        corpus = row[f"corpus_bleu{order},none"]
        assert corpus == metrics[(f"bleu{order}", "corpus")]
        assert corpus == corpus_bleu(stats, order)
        assert 0.0 < corpus < 1.0


def test_real_lm_eval_cli_writes_the_dialogue_metrics(data_dir: Path, tmp_path: Path) -> None:
    """`python -m lm_eval --model dummy --tasks locomo_dialogue` offline: the YAML's custom
    corpus-BLEU aggregation and the per-sample statistics survive the real CLI and its logs."""
    run_dir = run_lm_eval_cli(
        [
            "--model",
            "dummy",
            "--tasks",
            "locomo_dialogue",
            "--metadata",
            json.dumps({"context": "session", "conversations": "conv-26"}),
            "--limit",
            "3",
        ],
        tmp_path,
    )
    [results_file] = run_dir.glob("results_*.json")
    row = json.loads(results_file.read_text())["results"]["locomo_dialogue"]
    logged = samples_of(run_dir, "locomo_dialogue")
    expected = inspect_samples(context="session", conversations="conv-26")
    assert [s["doc"]["id"] for s in logged] == list(expected)[:3]
    stats = []
    for s in logged:
        md = json.loads(s["doc"]["metadata"])
        prediction = clean_reply(s["filtered_resps"][0], md["speaker"], md["other_speaker"])
        assert s["bleu1"] == bleu(prediction, s["doc"]["target"], 1)
        stats.append(BleuStats(**s["corpus_bleu1"]))
    assert row["bleu1,none"] == pytest.approx(sum(s["bleu1"] for s in logged) / 3, abs=1e-12)
    assert row["corpus_bleu1,none"] == corpus_bleu(stats, 1)
    assert "bertscore_f1,none" not in row  # off by default in lm-eval

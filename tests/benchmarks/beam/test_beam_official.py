"""BEAM's official protocol against upstream's own logic, rebuilt here from the shared copies.

Upstream's long-context path (long_term_memory_methods.py, answer_generation.py) is written out
again below from reading it: the chat flattened to role/content messages, `prune_from_tail`
with cl100k_base counts, the question f-string (taken from the file's syntax tree, filled here
by its parts), and the message list answer_generation keeps and extends question after
question. Every 100K conversation's messages must equal memevals' under three windows: no
pruning (upstream's default), 128K (where upstream's rule keeps no history for half of them)
and 60K (a cut inside every chat).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import json
import os
import shutil
from pathlib import Path
from typing import Any

import bpe_openai
import pytest

from memevals.benchmarks.beam import official
from memevals.benchmarks.beam.data import conversations, load_questions
from memevals.benchmarks.beam.memory import chunk_text
from memevals.benchmarks.beam.samples import BeamOptions, build
from memevals.core.memory_options import MemoryOptions
from memevals.core.upstream import UpstreamError, extract_template

UPSTREAM = Path(os.environ["MEMEVALS_DATA_DIR"]) / "upstream" / "BEAM" / "src"
ENC = bpe_openai.get_encoding("cl100k_base")


@functools.cache
def question_parts() -> tuple[str | None, ...]:
    """Upstream's question f-string as its parts (None for the replacement field), from the
    file's syntax tree."""
    tree = ast.parse(
        (UPSTREAM / "answer_probing_questions" / "long_term_memory_methods.py").read_text()
    )
    fn = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == "probing_question_evaluation"
    )
    for node in ast.walk(fn):
        if isinstance(node, ast.Dict) and isinstance(node.values[-1], ast.JoinedStr):
            return tuple(
                p.value if isinstance(p, ast.Constant) else None for p in node.values[-1].values
            )
    raise AssertionError("no question f-string")


def question_message(question: str) -> str:
    """The f-string filled with the question, part by part."""
    return "".join(question if p is None else p for p in question_parts())


def total_tokens(messages: list[dict[str, str]]) -> int:
    return 2 + sum(4 + len(ENC.encode(m["content"])) for m in messages)


def prune_from_tail(messages: list[dict[str, str]], max_tokens: int) -> list[dict[str, str]]:
    if total_tokens(messages) > max_tokens - 10000:
        final: list[dict[str, str]] = []
        count = 0
        for index, message in enumerate(reversed(messages)):
            count += total_tokens([message])
            if count > max_tokens - 2000:
                final = messages[-(index + 1) :]
                if len(final) % 2 == 1:
                    final = final[1:]
                break
        return final
    return messages


def upstream_runs(chat: Path, questions: list[str], window: int) -> list[list[dict[str, str]]]:
    """The messages upstream sends for each question of one conversation, in file order."""
    data = json.loads(chat.read_text(encoding="utf-8"))
    flat = [
        {"role": m["role"], "content": m["content"]}
        for batch in data
        for turn in batch["turns"]
        for m in turn
    ]
    # upstream builds and prunes the list again whenever it kept none; the result is the same
    # every time, so it is computed once here
    fresh = prune_from_tail(flat, window)
    saved: list[dict[str, str]] | None = None
    sent = []
    for q in questions:
        messages = saved if saved else list(fresh)
        messages.append({"role": "user", "content": question_message(q)})
        sent.append(list(messages))
        returned = messages[:-1]
        if not saved:
            saved = returned
    return sent


def memevals_messages(item: Any) -> list[dict[str, str]]:
    out = [{"role": "system", "content": item.system}] if item.system else []
    out += [{"role": r, "content": c} for r, c in item.messages]
    return [*out, {"role": "user", "content": item.user}]


@pytest.mark.parametrize("window", [None, 128_000, 60_000])
def test_long_context_messages_equal_upstreams_for_every_100k_conversation(
    window: int | None,
) -> None:
    items = build(BeamOptions(context_window=window)).items
    by_id = {i.id: i for i in items}
    pruned_empty = 0
    for conv in conversations("100K"):
        questions = load_questions(conv)
        runs = upstream_runs(conv.chat, [q.question for q in questions], window or 1_000_000)
        for q, expected in zip(questions, runs, strict=True):
            assert memevals_messages(by_id[q.sample_id(conv)]) == expected, q.sample_id(conv)
        pruned_empty += len(runs[0]) == 1
    # 128K: upstream's walk never passes its limit on the 11 chats between window - 10,000 and
    # window - 2,000 tokens (by its measure), and keeps no history for them
    assert pruned_empty == {None: 0, 128_000: 11, 60_000: 0}[window]


def test_rag_prompt_is_upstreams_template_with_the_retrieved_turns() -> None:
    items = build(
        BeamOptions(categories="temporal_reasoning", memory=MemoryOptions(context="rag", top_k=3))
    ).items
    conv = conversations("100K")[0]
    turns: dict[str, list[tuple[str, str]]] = {}
    for b, batch in enumerate(json.loads(conv.chat.read_text(encoding="utf-8")), start=1):
        for t, turn in enumerate(batch["turns"], start=1):
            turns[f"b{b}t{t}"] = [(m["role"], m["content"]) for m in turn]
    template = (UPSTREAM / "prompts.py").read_text()
    assert "<context>" in template
    item = items[0]
    assert item.metadata["conversation"] == "100K-1" and len(item.metadata["retrieved_ids"]) == 3
    context = "".join(chunk_text(turns[i]) for i in item.metadata["retrieved_ids"])
    rag = extract_template(official.RAG)
    assert item.user == rag.replace("<context>", context).replace(
        "<question>", item.metadata["question"]
    )
    assert item.system == "" and item.messages == ()


def test_judge_prompt_keeps_upstreams_unfilled_question_slot() -> None:
    texts = official.official_texts()
    prompt = texts.judge_prompt("mentions the budget", "We set a budget of 5k.")
    assert "<question>" in prompt  # upstream never fills it
    assert "mentions the budget" in prompt and "We set a budget of 5k." in prompt
    assert "<rubric_item>" not in prompt and "<llm_response>" not in prompt


def test_a_changed_upstream_file_or_template_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(UpstreamError) as info:
        extract_template(dataclasses.replace(official.JUDGE, sha256="0" * 64))
    msg = str(info.value)
    assert "unified_llm_judge_base_prompt" in msg and "0" * 64 in msg
    assert official.JUDGE.sha256 in msg or "sha256" in msg

    copy = tmp_path / "upstream" / "BEAM"
    shutil.copytree(UPSTREAM.parent, copy)
    methods = copy / "src" / "answer_probing_questions" / "long_term_memory_methods.py"
    methods.write_text(methods.read_text().replace("Question:", "Query:"), encoding="utf-8")
    with pytest.raises(UpstreamError) as info:
        official.question_template(tmp_path)
    assert "long_term_memory_methods.py" in str(info.value)
    assert official.METHODS.sha256 in str(info.value)


def test_a_window_that_keeps_no_message(caplog: pytest.LogCaptureFixture) -> None:
    """Upstream's pruning keeps no message of a chat under a 10-token window and asks the
    questions without a history: protocol=official sends them so and says it once;
    protocol=memevals refuses the window (issue 40)."""
    one = "temporal_reasoning"
    with caplog.at_level("WARNING", logger="memevals.benchmarks.beam.samples"):
        items = build(BeamOptions(categories=one, context_window=10)).items
    assert items and all(not i.messages and not i.system for i in items)
    [warning] = [r.getMessage() for r in caplog.records if "keeps no message" in r.getMessage()]
    assert warning.startswith(
        "BEAM protocol=official: context_window=10 keeps no message of the chat for 20 of 20 "
        "conversations (100K-1, 100K-2, 100K-3, 100K-4, 100K-5, ...)"
    )
    with pytest.raises(ValueError, match=r"^conversation 100K/1: context_window=10 leaves no"):
        build(BeamOptions(categories=one, context_window=10, protocol="memevals"))
    caplog.clear()
    with caplog.at_level("WARNING", logger="memevals.benchmarks.beam.samples"):
        build(BeamOptions(categories=one, context_window=60_000))
    assert not caplog.records

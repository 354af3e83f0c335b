"""LongMemEval protocol=official: every message equals upstream's, built from the shared copies.

The reference is upstream's own logic re-implemented in upstream_longmemeval.py (texts found in
the pinned copies by upstream's branch conditions). Checked on the fixture: oracle and S, json
and nl (`text`), with and without step-by-step, every context mode, chain-of-note, a memory
system; the judge prompt of every question type and abstention; upstream's label rule through
a scripted grader; and the refusal of a corrupted copy, a wrong template digest or a missing
template.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import upstream_longmemeval as up
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, get_model
from inspect_ai.solver import generate
from logged_figures import figures

from memevals.benchmarks.longmemeval import official
from memevals.benchmarks.longmemeval.data import iter_longmemeval
from memevals.benchmarks.longmemeval.memory import longmemeval_memory, memory_context
from memevals.benchmarks.longmemeval.prompts import question_text
from memevals.benchmarks.longmemeval.samples import (
    LongMemEvalBuild,
    LongMemEvalOptions,
    build,
    make_reader,
)
from memevals.core.memory_options import MemoryOptions
from memevals.core.memory_system import MemoryItem
from memevals.core.tokens import get_token_counter
from memevals.core.upstream import UpstreamError
from memevals.core.upstream_judge import OFFICIAL_JUDGE_KEY, OfficialJudge, yes_in_reply
from memevals.inspect_tasks.dataset import to_dataset
from memevals.inspect_tasks.official_scorer import official_judge

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FILES = {"oracle": "longmemeval_oracle.json", "s": "longmemeval_s_cleaned.json"}
NL = {"json": "json", "text": "nl"}


def _build(variant: str, context: str = "full", **options: Any) -> LongMemEvalBuild:
    memory = {
        k: options.pop(k)
        for k in ("top_k", "retrieval_unit", "max_context_tokens", "memory")
        if k in options
    }
    return build(
        LongMemEvalOptions(
            variant=variant,
            memory=MemoryOptions(context=context, **memory),
            data_dir=str(FIXTURES),
            verify_checksum=False,
            **options,
        )
    )


def _entries(variant: str) -> dict[str, dict[str, Any]]:
    return up.load_entries(FIXTURES / "longmemeval" / FILES[variant])


# ---------------------------------------------------------------------------------------------
# The reader's message


@pytest.mark.parametrize("step_by_step", [False, True], ids=["plain", "step"])
@pytest.mark.parametrize("history_format", ["json", "text"])
@pytest.mark.parametrize("variant", ["oracle", "s"])
def test_full_history_is_upstreams_message(
    variant: str, history_format: str, step_by_step: bool
) -> None:
    built = _build(variant, history_format=history_format, step_by_step=step_by_step)
    entries = _entries(variant)
    assert len(built.items) == len(entries) == 16
    for item in built.items:
        want = up.reader_prompt(
            entries[item.id],
            retriever_type="orig-session",
            history_format=NL[history_format],
            cot=step_by_step,
        )
        assert (item.system, item.user) == ("", want), item.id
        assert item.metadata["protocol"] == "official"
        assert item.metadata["prompt_tokens"] == get_token_counter()(want)
    assert built.metadata["protocol"] == "official"
    assert built.metadata["answer_tokens"] == (800 if step_by_step else 500)
    assert built.metadata["upstream"]["commit"] == official.COMMIT
    # the oracle file lists its sessions out of date order: upstream sorts them, so do we
    if variant == "oracle":
        assert any(e["haystack_dates"] != sorted(e["haystack_dates"]) for e in entries.values())


def test_oracle_context_is_upstreams_oracle_session_message() -> None:
    built = _build("s", context="oracle", step_by_step=True)
    entries = _entries("s")
    for item in built.items:
        entry = dict(entries[item.id])
        keep = [
            i
            for i, sid in enumerate(entry["haystack_session_ids"])
            if sid in entry["answer_session_ids"]
        ]
        for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
            entry[key] = [entry[key][i] for i in keep]
        want = up.reader_prompt(entry, retriever_type="oracle-session", cot=True)
        assert item.user == want, item.id


@pytest.mark.parametrize(
    ("unit", "retriever_type", "top_k"),
    [("session", "flat-session", 3), ("turn", "flat-turn", 4)],
)
@pytest.mark.parametrize("history_format", ["json", "text"])
def test_rag_is_upstreams_flat_retrieval_message(
    unit: str, retriever_type: str, top_k: int, history_format: str
) -> None:
    built = _build(
        "s", context="rag", retrieval_unit=unit, top_k=top_k, history_format=history_format
    )
    entries = _entries("s")
    for item in built.items:
        ranked = item.metadata["retrieved_ids"]
        assert len(ranked) == top_k
        want = up.reader_prompt(
            entries[item.id],
            retriever_type=retriever_type,
            history_format=NL[history_format],
            ranked=ranked,
            topk=top_k,
        )
        assert item.user == want, item.id
        # each retrieved unit is its own block, as upstream shows it
        assert item.metadata["n_sessions_shown"] == top_k


def test_no_retrieval_is_the_bare_question() -> None:
    for step_by_step in (False, True):
        built = _build("s", context="none", step_by_step=step_by_step)
        entries = _entries("s")
        for item in built.items:
            want = up.reader_prompt(
                entries[item.id], retriever_type="no-retrieval", cot=step_by_step
            )
            assert item.user == want


def test_truncated_cuts_upstreams_history_string() -> None:
    budget = 150
    built = _build("s", context="truncated", max_context_tokens=budget)
    counter = get_token_counter()
    entries = _entries("s")
    truncated = 0
    for item in built.items:
        want = up.reader_prompt(
            entries[item.id],
            retriever_type="orig-session",
            cut=lambda history: counter.head(history, budget).text,
        )
        assert item.user == want, item.id
        truncated += item.metadata["history_truncated"]
        shown = item.metadata["session_ids_shown"]
        assert 1 <= len(shown) < len(entries[item.id]["haystack_session_ids"])
    assert truncated == len(built.items)


@pytest.mark.parametrize("variant", ["oracle", "s"])
def test_chain_of_note_is_upstreams_con(variant: str) -> None:
    built = _build(variant, chain_of_note=True, step_by_step=variant == "s")
    entries = _entries(variant)
    for item in built.items:
        plan = built.note_plans[item.id]
        requests = up.note_requests(entries[item.id], "orig-session")
        # the same requests (upstream asks in file order, memevals in date order)
        assert sorted(plan.prompts) == sorted(requests)
        assert plan.temperature == 0.0
        notes = {
            r: f"  note {n}: the user said something relevant.  " for n, r in enumerate(requests)
        }
        if requests:  # an "empty" note stays, as upstream keeps every note
            notes[requests[0]] = "empty"
        composed = plan.compose([notes[p] for p in plan.prompts])
        want = up.reader_prompt(
            entries[item.id], retriever_type="orig-session", cot=variant == "s", notes=notes
        )
        assert composed == want, item.id
        assert item.user == question_text_of(built, item.id)


def question_text_of(built: LongMemEvalBuild, qid: str) -> str:
    [inst] = [
        i
        for i in iter_longmemeval(built.metadata["variant"], FIXTURES, verify_checksum=False)
        if i.question_id == qid
    ]
    return question_text(inst)


def test_memory_system_items_are_upstreams_flat_session_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMEVALS_CACHE_DIR", str(tmp_path / "cache"))
    built = _build("s", context="full", memory="bm25", top_k=3)
    assert built.subject is not None
    entries = _entries("s")
    for item in built.items[:6]:
        filled = built.subject.fill(item)
        ranked = filled.metadata["retrieved_ids"]
        want = up.reader_prompt(
            entries[item.id], retriever_type="flat-session", ranked=ranked, topk=3
        )
        assert (filled.system, filled.user) == ("", want), item.id
        assert filled.metadata["prompt_tokens"] == get_token_counter()(want)


def test_memory_notes_are_upstreams_facts_configuration() -> None:
    """Items shown by their own text are upstream's `replace` configuration (facts, json);
    under nl, and mixed with verbatim items, they are errors upstream has no prompt for."""
    reader = make_reader(
        LongMemEvalOptions(data_dir=str(FIXTURES), step_by_step=True),
        longmemeval_memory(MemoryOptions(context="full")),
    )
    [inst] = [
        i
        for i in iter_longmemeval("s", FIXTURES, verify_checksum=False)
        if i.question_id == "fx09e9f0"
    ]
    items = [
        MemoryItem("Bought a $70 helmet.", ("answer_b6f0c2a9_2_3",)),
        MemoryItem(
            "Asked about baking soda.", ("ultrachat_118873_1",), date="2023/01/02 (Mon) 10:00"
        ),
        MemoryItem("Bought a road bike for $780.", ("answer_b6f0c2a9_1_1",)),
    ]
    ctx = memory_context(inst, items, top_k=3)
    user, context, shown = reader.memory_message(inst, ctx, "")
    facts = [(date, item.text) for (date, _), item in zip(ctx.facts, items, strict=True)]
    assert user == up.facts_prompt(_entries("s")["fx09e9f0"], facts, cot=True)
    assert context in user and shown == ()
    assert ctx.facts[1][0] == "2023/01/02 (Mon) 10:00"  # an item's own date wins
    text_reader = dataclasses.replace(reader, history_format="text")
    with pytest.raises(ValueError, match="history_format=json"):
        text_reader.memory_message(inst, ctx, "")
    mixed = memory_context(inst, [*items, MemoryItem("", ("answer_b6f0c2a9_1",), verbatim=True)], 4)
    with pytest.raises(ValueError, match="no configuration mixing"):
        reader.memory_message(inst, mixed, "")


# ---------------------------------------------------------------------------------------------
# protocol=memevals: our own words, one user message


def test_memevals_protocol_is_our_text_in_one_user_message() -> None:
    built = _build("s", protocol="memevals")
    memory = longmemeval_memory(MemoryOptions(context="full"))
    by_id = {i.question_id: i for i in iter_longmemeval("s", FIXTURES, verify_checksum=False)}
    for item in built.items:
        inst = by_id[item.id]
        assert item.system == ""
        assert item.user == f"{memory(inst).system_text}\n\n{question_text(inst)}"
        assert OFFICIAL_JUDGE_KEY not in item.metadata
        assert item.metadata["protocol"] == "memevals"
    assert "upstream" not in built.metadata


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"protocol": "offical"}, r"protocol='offical' is not supported \(did you mean"),
        ({"protocol": "memevals", "step_by_step": True}, "step_by_step is upstream's"),
        ({"chain_of_note": True, "history_format": "text"}, "use history_format=json"),
    ],
)
def test_options_upstream_has_no_prompt_for_are_errors(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _build("s", **options)


# ---------------------------------------------------------------------------------------------
# The judge


def test_judge_prompt_of_every_type_and_abstention_is_upstreams() -> None:
    built = _build("oracle")
    entries = _entries("oracle")
    seen = set()
    for item in built.items:
        request = OfficialJudge.from_metadata(item.metadata[OFFICIAL_JUDGE_KEY])
        reply = "  I think it is {the answer} 42.\n"
        assert request.prompt(reply) == up.judge_prompt(entries[item.id], reply.strip())
        assert (request.max_tokens, request.temperature, request.rule) == (10, 0.0, "yes_in_reply")
        seen.add("abstention" if "_abs" in item.id else entries[item.id]["question_type"])
    assert seen == set(up.upstream().judge)  # six types and abstention


REPLIES = ["Yes", "yes.", "No", "no.", "eyes", "The answer is yes.", "No, but yes", "Not sure", ""]


@pytest.mark.parametrize("reply", REPLIES)
def test_label_rule_is_upstreams(reply: str) -> None:
    got = yes_in_reply(reply)
    assert got.score == (1.0 if up.label(reply) else 0.0)
    assert got.clear == (reply in ("Yes", "yes.", "No", "no."))


def _scripted(table: Callable[[str], str], seen: list[tuple[str, GenerateConfig]]) -> Any:
    def reply(
        messages: list[ChatMessage], tools: Any, tool_choice: Any, config: GenerateConfig
    ) -> ModelOutput:
        [message] = messages
        assert message.role == "user"
        seen.append((message.text, config))
        return ModelOutput.from_content(model="mockllm/model", content=table(message.text))

    return get_model("mockllm/model", custom_outputs=reply)


def test_scripted_grader_gets_upstreams_prompt_and_its_label_counts(tmp_path: Path) -> None:
    built = _build("oracle")
    entries = _entries("oracle")
    answers = {item.id: f"  My answer to {item.id}: {item.target}  " for item in built.items}
    grader_replies = {item.id: REPLIES[n % len(REPLIES)] for n, item in enumerate(built.items)}

    def answer(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        [item] = [i for i in built.items if i.user == messages[0].text]
        return ModelOutput.from_content(model="mockllm/model", content=answers[item.id])

    def grade(prompt: str) -> str:
        [qid] = [q for q in answers if answers[q].strip() in prompt]
        return grader_replies[qid]

    seen: list[tuple[str, GenerateConfig]] = []
    task = Task(
        dataset=to_dataset(built.items, "lme"), solver=[generate()], scorer=official_judge()
    )
    [log] = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=answer),
        model_roles={"grader": _scripted(grade, seen)},
        display="none",
        log_dir=str(tmp_path),
    )
    assert log.status == "success", log.error
    assert sorted(p for p, _ in seen) == sorted(
        up.judge_prompt(entries[qid], answers[qid].strip()) for qid in answers
    )
    assert all((c.max_tokens, c.temperature) == (10, 0.0) for _, c in seen)
    assert log.samples is not None
    for sample in log.samples:
        score = sample.scores["official_judge"]
        reply = grader_replies[str(sample.id)]
        assert score.value["judge"] == (1.0 if up.label(reply) else 0.0)
        assert score.value["unclear"] == (0 if yes_in_reply(reply).clear else 1)
    # the judge is one result named by its scorer
    assert log.results is not None
    assert [s.name for s in log.results.scores if s.scorer == "official_judge"] == [
        "official_judge"
    ]
    m = figures(log)
    labels = [up.label(grader_replies[q]) for q in answers]
    assert m[("judge", "mean")] == pytest.approx(sum(labels) / len(labels))
    # the unclear replies are counted beside the accuracy
    unclear = sum(not yes_in_reply(grader_replies[q]).clear for q in answers)
    assert unclear > 0 and m[("unclear", "count")] == unclear


# ---------------------------------------------------------------------------------------------
# Bad upstream files and templates


def _copy_upstream(tmp_path: Path) -> Path:
    target = tmp_path / "upstream" / "LongMemEval"
    shutil.copytree(up.UPSTREAM, target)
    return target


def test_a_corrupted_upstream_copy_is_refused_naming_both_digests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _copy_upstream(tmp_path) / official.GENERATION.path
    data = bytearray(copy.read_bytes())
    data[-2] = ord("x") if data[-2] != ord("x") else ord("y")  # one byte changed
    copy.write_bytes(bytes(data))
    monkeypatch.setenv("MEMEVALS_DATA_DIR", str(tmp_path))
    with pytest.raises(UpstreamError) as info:
        _build("s")
    text = str(info.value)
    assert str(copy) in text and "'answer'" in text
    assert official.GENERATION.sha256 in text
    assert hashlib.sha256(bytes(data)).hexdigest() in text


def test_an_extracted_template_with_another_digest_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrong = dataclasses.replace(official.TEMPLATES["judge_temporal"], sha256="0" * 64)
    monkeypatch.setitem(official.TEMPLATES, "judge_temporal", wrong)
    with pytest.raises(UpstreamError) as info:
        _build("s")
    text = str(info.value)
    actual = hashlib.sha256(up.upstream().judge["temporal-reasoning"].encode()).hexdigest()
    assert "'judge_temporal'" in text and "0" * 64 in text and actual in text
    assert official.EVALUATION.relpath in text


@pytest.mark.parametrize("locator", ["get_anscheck_prompt.template#9", "no_such_function.template"])
def test_a_template_that_cannot_be_found_is_refused(
    locator: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = dataclasses.replace(official.TEMPLATES["judge_standard"], locator=locator)
    monkeypatch.setitem(official.TEMPLATES, "judge_standard", moved)
    with pytest.raises(UpstreamError, match=r"'judge_standard'.*not found"):
        _build("s")

"""LoCoMo protocol=official: every message equals upstream's, built from the shared copies.

The reference is upstream's logic restated in upstream_locomo.py (texts found in the pinned
copies by their own paths, data read raw under upstream's field names). Checked for all 1,986
questions: the whole conversation, upstream's window rule at two small windows, rag over dialog
turns and over session summaries with the retrieved ids fixed; the two-option answer rule; the
LoCoMo-Plus judge prompt of every question and its label rule; the recorded numbers and
digests; and the refusal of a corrupted copy or a template whose digest differs.
"""

from __future__ import annotations

import hashlib
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
import upstream_locomo as up

from memevals.benchmarks.locomo import official
from memevals.benchmarks.locomo.prompts import prediction_for_scoring
from memevals.benchmarks.locomo.samples import LocomoOptions, build
from memevals.benchmarks.locomo.scoring import locomo_f1
from memevals.benchmarks.locomo_plus import official_judge as judge
from memevals.core.memory_options import MemoryOptions
from memevals.core.upstream import Template, UpstreamError, extract_template, template_digest
from memevals.core.upstream_judge import LABEL_RULES, OFFICIAL_JUDGE_KEY, OfficialJudge


def _items(**memory: Any) -> list[Any]:
    return build(LocomoOptions(protocol="official", memory=MemoryOptions(**memory))).items


def _questions(data_dir: Path) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(sample id, raw conversation sample, raw qa) in memevals' order."""
    return [
        (f"{sample['sample_id']}-q{j}", sample, qa)
        for sample in up.raw(data_dir, "locomo/locomo10.json")
        for j, qa in enumerate(sample["qa"])
    ]


def _refusal_first(sample_id: str, seed: int = 0) -> bool:
    # upstream draws with the unseeded random.random(); memevals seeds that draw per sample
    return random.Random(f"{seed}:{sample_id}").random() < 0.5


def test_texts_and_numbers_are_upstreams(data_dir: Path) -> None:
    texts = official.load_texts(data_dir)
    ref = up.locomo_texts(data_dir)
    plus = up.plus_texts(data_dir)
    assert (texts.start, texts.answer, texts.answer_adversarial, texts.batch) == (
        ref["start"],
        ref["qa"],
        ref["qa_cat_5"],
        ref["batch"],
    )
    assert (texts.temporal_hint, texts.two_options, texts.not_mentioned) == (
        ref["temporal_hint"],
        ref["two_options"],
        ref["refusal"],
    )
    assert texts.judge.judge_pattern == plus["pattern"]
    for name, template in plus["templates"].items():
        assert texts.judge.judge_template(name) == template, name
    assert texts.judge.judge_template("no such category") == plus["templates"]["default"]
    # the numbers memevals states are upstream's
    assert ref["max_length"]["gpt-4-turbo"] == official.FULL_WINDOW
    assert ref["per_qa"] == official.PER_QA_TOKEN_BUDGET
    assert plus["scores"] == judge.JUDGE_SCORES
    assert plus["categories"] == judge.JUDGE_CATEGORY
    answer_call = next(
        node
        for node in up.ast.walk(up.function(data_dir, up.LOCOMO, "get_gpt_answers"))
        if isinstance(node, up.ast.Call)
        and up.ast.unparse(node.func) == "run_chatgpt"
        and any(k.arg == "temperature" for k in node.keywords)
    )
    limits = {
        k.arg: up.ast.literal_eval(k.value)
        for k in answer_call.keywords
        if k.arg in ("num_tokens_request", "temperature")
    }
    assert limits == {"num_tokens_request": official.ANSWER_TOKENS, "temperature": 0}
    # each recorded digest is the extracted text's
    for name, digest in texts.digests().items():
        held = texts.judge if name.startswith("judge_") else texts
        assert digest == template_digest(getattr(held, name)), name


def test_whole_conversation_messages_equal_upstreams(data_dir: Path) -> None:
    items = {i.id: i for i in _items(context="full")}
    texts = up.locomo_texts(data_dir)
    walks: dict[str, up.Walk] = {}
    for sid, sample, qa in _questions(data_dir):
        item = items[sid]
        # byte counts bound token counts: a walk that keeps every turn by bytes is upstream's
        walk = walks.setdefault(
            sample["sample_id"],
            up.Walk(up.upstream_conversation(sample), lambda t: len(t.encode())),
        )
        want = up.full_query(sample, qa, texts, _refusal_first(sid), walk, official.FULL_WINDOW)
        assert not walk.stopped
        assert item.system == "" and item.user == want, sid
    assert len(items) == 1986


@pytest.mark.parametrize("window", [4096])
def test_window_rule_messages_equal_upstreams(data_dir: Path, window: int) -> None:
    """`context=truncated` is upstream's walk under a window of max_context_tokens (4,096 is
    upstream's gpt-4 entry)."""
    items = {i.id: i for i in _items(context="truncated", max_context_tokens=window)}
    texts = up.locomo_texts(data_dir)
    walks: dict[str, up.Walk] = {}
    kept: set[int] = set()
    for sid, sample, qa in _questions(data_dir):
        walk = walks.setdefault(sample["sample_id"], up.Walk(up.upstream_conversation(sample)))
        want = up.full_query(sample, qa, texts, _refusal_first(sid), walk, window)
        assert items[sid].user == want, sid
        kept.add(len(want))
    assert all(w.stopped for w in walks.values())
    assert len(kept) > 100  # the questions' own lengths move the cut


@pytest.mark.parametrize(("unit", "top_k"), [("dialog", 5), ("summary", 2)])
def test_rag_messages_equal_upstreams(data_dir: Path, unit: str, top_k: int) -> None:
    """Upstream's rag layout for the units memevals retrieved (the retriever is memevals'
    BM25; the ids are fixed from each sample's retrieved_ids)."""
    items = {i.id: i for i in _items(context="rag", retrieval_unit=unit, top_k=top_k)}
    texts = up.locomo_texts(data_dir)
    for sid, sample, qa in _questions(data_dir):
        item = items[sid]
        ids = item.metadata["retrieved_ids"]
        assert len(ids) == top_k
        data = up.upstream_conversation(sample)
        if unit == "summary":
            data = {**data, **sample["session_summary"]}
        want = up.rag_query(data, qa, texts, _refusal_first(sid), ids, unit)
        assert item.user == want, sid


def test_two_option_replies_map_back_as_upstream(data_dir: Path) -> None:
    replies = [
        "a", "B", " (a) ", "(b)", "(A)", "b.", "a)", "(c)", "x", "", "Not mentioned in the "
        "conversation.", "The answer is (a)", "No information available", "(a) self-care",
    ]  # fmt: skip
    items = [i for i in _items(context="none") if i.metadata["category"] == "adversarial"][:2]
    for item in items:
        options = item.metadata["choices"]
        key = {"a": options[0], "b": options[1]}
        for reply in replies:
            want = up.cat_5_answer(reply, key).strip()
            got = prediction_for_scoring(reply, item.metadata)
            assert got == want, reply
            # upstream's category-5 score: a refusal phrase in the prediction
            lowered = want.lower()
            upstream_score = int(
                "no information available" in lowered or "not mentioned" in lowered
            )
            assert locomo_f1(got, None, 5) == upstream_score, reply
    # other categories keep the stripped reply, as upstream stores its predictions
    other = next(i for i in _items(context="none") if i.metadata["category"] == "single_hop")
    assert prediction_for_scoring("  Paris \n", other.metadata) == "Paris"


def test_judge_messages_equal_upstreams(data_dir: Path) -> None:
    """LoCoMo with judge=true, all 1,986 questions: LoCoMo-Plus's prompt for the question's
    category, reference and evidence turns, around the (stripped) prediction, sent as
    `llm_as_judge.py` sends it (`call_llm`'s prefix, then the prompt stripped) at its default
    temperature and token limit."""
    items = {i.id: i for i in _items(context="none")}
    categories = up.plus_texts(data_dir)["categories"]
    judge_cli = up.argparse_defaults(data_dir, up.PLUS_JUDGE)
    preds = ["Paris", " a long reply {with braces} \n", "", "Not mentioned in the conversation"]
    questions = _questions(data_dir)
    assert len(questions) == 1986
    for n, (sid, sample, qa) in enumerate(questions):
        request = OfficialJudge.from_metadata(items[sid].metadata[OFFICIAL_JUDGE_KEY])
        assert request.rule == judge.JUDGE_RULE
        assert (request.max_tokens, request.temperature) == (
            judge_cli["max_tokens"],
            judge_cli["temperature"],
        )
        pred = preds[n % len(preds)]
        evidence = up.evidence_text(sample["conversation"], qa.get("evidence") or [])
        args = (data_dir, categories[qa["category"]], evidence, pred.strip(), qa.get("answer"))
        assert request.filled(pred) == up.judge_prompt(*args), sid
        assert request.prompt(pred) == up.judge_message(*args), sid


GRADER_REPLIES = [
    '{"label": "correct", "reason": "same"}',
    '{"label": "partial", "reason": "misses one"}',
    "{'label': 'wrong', 'reason': 'different'}",
    '```json\n{"label": "Correct", "reason": "ok"}\n```',
    '{"reason": "first", "label": "wrong"}',
    '{"label": "correct"}',
    '{"label": "nonsense", "reason": "x"}',
    '{"label": 1, "reason": "x"}',
    '{"label": "partial", "reason": 5}',
    '{"label": "correct", "reason": ["a"]}',
    '["correct"]',
    "The prediction is incorrect.",
    "wrong, but partially right",
    "PARTIAL credit",
    "",
    "no verdict at all",
]


def test_label_rule_is_upstreams(data_dir: Path) -> None:
    rule = LABEL_RULES[judge.JUDGE_RULE]
    for reply in GRADER_REPLIES:
        label = up.judge_label(data_dir, reply)
        verdict = rule(reply)
        assert (verdict.label, verdict.score) == (label, up.judge_score(data_dir, label)), reply
    # "incorrect" reads as correct, as upstream's word search has it; never a clear verdict
    assert rule("The prediction is incorrect.").score == 1.0
    assert not rule("The prediction is incorrect.").clear
    assert rule('{"label": "partial", "reason": "r"}').clear


def _copy_data(data_dir: Path, tmp: Path) -> Path:
    for name in ("locomo/locomo10.json", "locomo_plus/locomo_plus.json"):
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(data_dir / name, tmp / name)
    shutil.copytree(data_dir / "upstream", tmp / "upstream")
    return tmp


def test_a_corrupted_upstream_copy_is_refused_naming_both_digests(
    data_dir: Path, tmp_path: Path
) -> None:
    tmp = _copy_data(data_dir, tmp_path)
    path = tmp / official.EVALUATE_GPTS.relpath
    text = path.read_bytes()
    at = text.index(b"Short answer")
    path.write_bytes(text[:at] + b"s" + text[at + 1 :])  # one byte changed
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(UpstreamError) as err:
        build(LocomoOptions(protocol="official", data_dir=str(tmp)))
    message = str(err.value)
    assert official.EVALUATE_GPTS.sha256 in message and actual in message
    assert "evaluate_gpts.py" in message
    # protocol=memevals reads no upstream file
    assert build(LocomoOptions(protocol="memevals", data_dir=str(tmp), categories="temporal"))


def test_a_template_whose_digest_differs_is_refused(data_dir: Path) -> None:
    wrong = "0" * 64
    with pytest.raises(UpstreamError) as err:
        extract_template(Template(official.EVALUATE_GPTS, "QA_PROMPT", wrong), data_dir)
    assert wrong in str(err.value) and official.TEMPLATES["answer"].sha256 in str(err.value)
    inline = official.InlineText(official.EVALUATE_GPTS, "get_gpt_answers", 25, wrong)
    with pytest.raises(UpstreamError) as err:
        official.inline_text(inline, data_dir)
    assert wrong in str(err.value) and official.TEMPLATES["two_options"].sha256 in str(err.value)
    missing = official.InlineText(official.EVALUATE_GPTS, "no_such_function", 0, wrong)
    with pytest.raises(UpstreamError, match="not found"):
        official.inline_text(missing, data_dir)


def test_protocol_is_checked() -> None:
    wanted = r"protocol='offical' is not supported \(did you mean 'official'\?\); allowed values"
    with pytest.raises(ValueError, match=wanted + ": official, memevals"):
        build(LocomoOptions(protocol="offical"))


def test_official_log_names_the_protocol_and_digests() -> None:
    built = build(LocomoOptions(protocol="official", categories="temporal"))
    log = built.metadata["memory"]
    assert built.metadata["protocol"] == log["protocol"] == "official"
    assert log["upstream_templates"]["answer"] == official.TEMPLATES["answer"].sha256
    assert all(i.metadata["protocol"] == "official" for i in built.items)
    memevals = build(LocomoOptions(protocol="memevals", categories="temporal"))
    log = memevals.metadata["memory"]
    assert log["protocol"] == "memevals" and "upstream_templates" not in log


def test_inspect_judges_the_chosen_option_with_upstreams_prompt(
    data_dir: Path, tmp_path: Path
) -> None:
    """`locomo -T judge=true` under official, end to end: letter replies to two-option
    questions are judged as upstream's `get_cat_5_answer` maps them; scripted grader."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ChatMessage, ModelOutput, get_model

    from memevals.inspect_tasks.locomo import locomo_adversarial

    questions = [q for q in _questions(data_dir) if q[2]["category"] == 5][:4]
    texts = up.locomo_texts(data_dir)
    replies = ["(a)", "b", "Not mentioned in the conversation.", "A long answer here"]
    verdicts = ['{"label": "correct", "reason": "r"}', "wrong", "partial credit", "nothing"]
    categories = up.plus_texts(data_dir)["categories"]
    by_question: dict[str, int] = {}
    by_prompt: dict[str, int] = {}
    for n, (sid, sample, qa) in enumerate(questions):
        question, key = up.question_entry(qa, texts, _refusal_first(sid))
        by_question[question] = n
        assert key is not None
        pred = up.cat_5_answer(replies[n], key).strip()
        evidence = up.evidence_text(sample["conversation"], qa["evidence"])
        by_prompt[up.judge_message(data_dir, categories[5], evidence, pred, qa.get("answer"))] = n

    def answer(messages: list[ChatMessage], *args: object) -> ModelOutput:
        n = next(n for q, n in by_question.items() if q in messages[-1].text)
        return ModelOutput.from_content("mockllm/model", replies[n])

    def grade(messages: list[ChatMessage], *args: object) -> ModelOutput:
        assert [m.role for m in messages] == ["user"]  # one user message, upstream's
        return ModelOutput.from_content("mockllm/model", verdicts[by_prompt[messages[0].text]])

    [log] = inspect_eval(
        locomo_adversarial(judge=True),
        model=get_model("mockllm/model", custom_outputs=answer),
        model_roles={"grader": get_model("mockllm/model", custom_outputs=grade)},
        limit=len(questions),
        display="none",
        log_dir=str(tmp_path),
    )
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == len(questions)
    assert log.plan.config.temperature == 0.0 and log.plan.config.max_tokens == 32
    for sample in log.samples:
        n = [q[0] for q in questions].index(str(sample.id))
        judged = sample.scores["locomo_official_judge"]  # type: ignore[index]
        label = up.judge_label(data_dir, verdicts[n])
        assert judged.value["judge"] == up.judge_score(data_dir, label)  # type: ignore[index]
        f1 = sample.scores["locomo_f1_scorer"]  # type: ignore[index]
        _, key = up.question_entry(questions[n][2], texts, _refusal_first(questions[n][0]))
        assert key is not None
        assert f1.answer == up.cat_5_answer(replies[n], key).strip()


def test_memory_system_contexts_are_upstreams_rag_layout() -> None:
    """memory=bm25 under official: its items shown in upstream's rag layout, the same message
    as context=rag with the same retrieval (the bm25 system ranks the units rag ranks)."""
    rag = build(LocomoOptions(categories="temporal", memory=MemoryOptions(context="rag", top_k=4)))
    mem = build(LocomoOptions(categories="temporal", memory=MemoryOptions(memory="bm25", top_k=4)))
    assert mem.subject is not None
    for a, item in zip(rag.items, mem.items, strict=True):
        b = mem.subject.fill(item)
        assert (a.id, a.system, a.user) == (b.id, b.system, b.user)
        assert a.metadata["retrieved_ids"] == b.metadata["retrieved_ids"]
        assert a.metadata["prompt_tokens"] == b.metadata["prompt_tokens"]

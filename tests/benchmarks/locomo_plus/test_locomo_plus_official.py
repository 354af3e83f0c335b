"""LoCoMo-Plus protocol=official: the model input and the judge prompt of all 2,387 samples equal
what LoCoMo-Plus's evaluation framework builds from its unified samples, and the judge's reply
is read and scored as upstream reads it.

The reference is upstream's logic restated in tests/support/upstream_locomo.py
(`build_unified_samples`, `build_context`, `_build_model_input`, `_prepend_conv_prefix`,
`call_llm`, `get_judge_prompt`, `_parse_judge_response`, `label_to_score`), on the raw JSON,
with texts, parameter defaults and command-line defaults found in the pinned copies by their
own paths.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "locomo"))
import upstream_locomo as up

from memevals.benchmarks.locomo_plus import official
from memevals.benchmarks.locomo_plus.official_judge import JUDGE_RULE
from memevals.benchmarks.locomo_plus.samples import LocomoPlusOptions, build
from memevals.core.memory_options import MemoryOptions
from memevals.core.upstream import UpstreamError, template_digest
from memevals.core.upstream_judge import LABEL_RULES, OFFICIAL_JUDGE_KEY, OfficialJudge


@pytest.fixture(scope="module")
def official_items() -> list[object]:
    return list(build(LocomoPlusOptions(protocol="official")).items)


def test_wrapper_texts_are_upstreams(data_dir: Path) -> None:
    texts = official.load_plus_texts(data_dir)
    ref = up.plus_texts(data_dir)
    assert (texts.start, texts.instruction_qa, texts.instruction_cognitive) == (
        ref["start"],
        ref["instruction_qa"],
        ref["instruction_cognitive"],
    )
    for name, template in official.TEMPLATES.items():
        assert template.sha256 == template_digest(getattr(texts, name)), name


def test_every_model_input_equals_upstreams(data_dir: Path, official_items: list) -> None:
    unified = up.unified_samples(data_dir)
    assert len(official_items) == len(unified) == 2387
    for item, sample in zip(official_items, unified, strict=True):
        assert item.system == "", item.id
        # `evaluate_qa.py` calls `call_model` with the sample's category: `call_llm` sends
        # `_build_model_input`
        want = up.call_llm_content(data_dir, sample["input_prompt"], sample["category"])
        assert item.user == want == up.model_input(data_dir, sample), item.id
        assert item.metadata["protocol"] == "official"
    ids = [i.id for i in official_items]
    assert ids[1985] == "conv-50-q203" and ids[1986:] == [f"plus-{i}" for i in range(401)]


def test_every_judge_message_equals_upstreams(data_dir: Path, official_items: list) -> None:
    """All 2,387 judge requests: the one user message is what `llm_as_judge.py` sends through
    `call_model` with its default backend `call_llm` and no category (the start sentence
    named "A" and "B", then the filled template stripped), at its default temperature and
    token limit."""
    unified = up.unified_samples(data_dir)
    judge_cli = up.argparse_defaults(data_dir, up.PLUS_JUDGE)
    assert (judge_cli["temperature"], judge_cli["max_tokens"]) == (0.0, 512)
    prefix = up.prepend_conv_prefix(data_dir, "x")[:-1]
    assert prefix.startswith("Below is a conversation between two people: A and B.")
    preds = ["A reply.", "  {pred} braces and a\nnewline  ", "", "Not mentioned.", "\n x \t"]
    seen = set()
    for n, (item, sample) in enumerate(zip(official_items, unified, strict=True)):
        request = OfficialJudge.from_metadata(item.metadata[OFFICIAL_JUDGE_KEY])
        assert (request.rule, request.max_tokens, request.temperature) == (
            JUDGE_RULE,
            judge_cli["max_tokens"],
            judge_cli["temperature"],
        )
        assert (request.prefix, request.strip_prompt) == (prefix, True), item.id
        pred = preds[n % len(preds)]
        # upstream's prediction is the stripped reply; the reference is the sample's answer
        answer = sample.get("answer")
        args = (data_dir, sample["category"], sample["evidence"], pred.strip(), answer)
        filled = up.judge_prompt(*args)
        assert request.filled(pred) == filled, item.id
        assert request.prompt(pred) == up.judge_message(*args), item.id
        # upstream's templates open and close with a newline, which the strip takes away
        assert filled.startswith("\n") and filled.endswith("\n"), item.id
        assert request.prompt(pred) == prefix + filled.strip(), item.id
        seen.add(sample["category"])
    assert seen == {
        "multi-hop",
        "temporal",
        "common-sense",
        "single-hop",
        "adversarial",
        "Cognitive",
    }


def test_judge_scores_by_upstreams_rule(data_dir: Path, official_items: list) -> None:
    """A scripted grader's replies, read by the label rule the samples name."""
    cognitive = next(i for i in official_items if i.metadata["category"] == "cognitive")
    request = OfficialJudge.from_metadata(cognitive.metadata[OFFICIAL_JUDGE_KEY])
    rule = LABEL_RULES[request.rule]
    replies = {
        '{"label": "correct", "reason": "links to the cue"}': 1.0,
        '{"label": "wrong", "reason": "generic"}': 0.0,
        '{"label": "partial", "reason": "half"}': 0.5,  # upstream scores it, template or not
        "It is incorrect.": 1.0,  # upstream's word search
        "no idea": 0.0,
    }
    for reply, score in replies.items():
        label = up.judge_label(data_dir, reply)
        assert rule(reply).score == up.judge_score(data_dir, label) == score, reply


def test_official_is_upstreams_input_only() -> None:
    for option, value in (
        ("memory", MemoryOptions(context="rag")),
        ("disclose_task", True),
        ("gap_fix", True),
    ):
        with pytest.raises(ValueError, match="protocol='official' is LoCoMo-Plus's own input"):
            build(LocomoPlusOptions(protocol="official", **{option: value}))  # type: ignore[arg-type]


def test_a_corrupted_upstream_copy_is_refused_naming_both_digests(
    data_dir: Path, tmp_path: Path
) -> None:
    for name in ("locomo/locomo10.json", "locomo_plus/locomo_plus.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(data_dir / name, tmp_path / name)
    shutil.copytree(data_dir / "upstream", tmp_path / "upstream")
    path = tmp_path / official.UTILS.relpath
    text = path.read_bytes()
    at = text.index(b"Answer the following")
    path.write_bytes(text[:at] + b"a" + text[at + 1 :])
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(UpstreamError) as err:
        build(LocomoPlusOptions(protocol="official", data_dir=str(tmp_path)))
    assert official.UTILS.sha256 in str(err.value) and actual in str(err.value)
    assert "utils.py" in str(err.value)


def test_inspect_judges_with_upstreams_prompt_and_rule(data_dir: Path, tmp_path: Path) -> None:
    """The Inspect task end to end: scripted replies (one empty), a scripted grader; each
    grader prompt is upstream's for that reply, each score upstream's for that verdict."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ChatMessage, ModelOutput, get_model

    from memevals.inspect_tasks.locomo_plus import locomo_plus_cognitive

    unified = up.unified_samples(data_dir)[1986:1992]
    replies = ["", "  I remember you said that. ", "Sure.", "{}", "No.", "(a)"]
    verdicts = [
        '{"label": "correct", "reason": "x"}',
        '{"label": "wrong", "reason": "x"}',
        "The reply is incorrect.",
        '{"label": "partial", "reason": "x"}',
        "no verdict",
        '{"reason": "x", "label": "correct"}',
    ]
    by_input = {up.model_input(data_dir, s): n for n, s in enumerate(unified)}
    by_prompt: dict[str, int] = {}
    for n, sample in enumerate(unified):
        pred = replies[n].strip() or "(empty)"  # upstream's model call returns "(empty)"
        by_prompt[up.judge_message(data_dir, "Cognitive", sample["evidence"], pred, None)] = n
    configs: list[tuple[float | None, int | None]] = []

    def answer(messages: list[ChatMessage], *args: object) -> ModelOutput:
        return ModelOutput.from_content("mockllm/model", replies[by_input[messages[-1].text]])

    def grade(messages: list[ChatMessage], *args: Any) -> ModelOutput:
        # one user message; a prompt that is not upstream's for this reply fails the run
        assert [m.role for m in messages] == ["user"]
        configs.append((args[2].temperature, args[2].max_tokens))
        return ModelOutput.from_content("mockllm/model", verdicts[by_prompt[messages[0].text]])

    [log] = inspect_eval(
        locomo_plus_cognitive(protocol="official"),
        model=get_model("mockllm/model", custom_outputs=answer),
        model_roles={"grader": get_model("mockllm/model", custom_outputs=grade)},
        limit=len(unified),
        display="none",
        log_dir=str(tmp_path),
    )
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == len(unified)
    for sample in log.samples:
        n = int(str(sample.id).removeprefix("plus-"))
        score = sample.scores["locomo_plus_judge"]  # type: ignore[index]
        label = up.judge_label(data_dir, verdicts[n])
        assert score.value["judge"] == up.judge_score(data_dir, label)  # type: ignore[index]
        assert score.value["unscored"] == 0  # type: ignore[index]
    values = sorted(s.scores["locomo_plus_judge"].value["judge"] for s in log.samples)  # type: ignore[index]
    assert values == [0.0, 0.0, 0.5, 1.0, 1.0, 1.0]
    assert configs == [(0.0, 512)] * len(unified)
    assert log.eval.metadata is not None and log.eval.metadata["protocol"] == "official"


def test_the_call_wrapper_is_prepend_conv_prefix_for_any_text(data_dir: Path) -> None:
    """`OfficialJudge`'s prefix-and-strip is `_prepend_conv_prefix` for any text, the empty
    and all-whitespace ones included (upstream then sends the start sentence stripped); without
    a wrapper the filled text leaves as it is."""
    prefix = up.prepend_conv_prefix(data_dir, "x")[:-1]
    wrapped = OfficialJudge(
        before="", after="", rule=JUDGE_RULE, max_tokens=512, prefix=prefix, strip_prompt=True
    )
    for text in ("", " \n\t", "  a reply \n", "\nline one\nline two\n\n"):
        assert wrapped.prompt(text) == up.prepend_conv_prefix(data_dir, text), repr(text)
    assert wrapped.prompt("") == prefix.strip() and not prefix.strip().endswith("\n")
    around = OfficialJudge(
        before="\nQ: ",
        after=" \n",
        rule=JUDGE_RULE,
        max_tokens=512,
        prefix=prefix,
        strip_prompt=True,
    )
    assert around.prompt(" r ") == prefix + "Q: r"
    plain = OfficialJudge(before="\nQ: ", after=" \n", rule=JUDGE_RULE, max_tokens=512)
    assert plain.prompt(" r ") == plain.filled(" r ") == "\nQ: r \n"
    # read back from a sample's metadata (a log written before the wrapper has no prefix)
    assert OfficialJudge.from_metadata(around.as_metadata()) == around
    old = {k: v for k, v in plain.as_metadata().items() if k not in ("prefix", "strip_prompt")}
    assert OfficialJudge.from_metadata(old) == plain

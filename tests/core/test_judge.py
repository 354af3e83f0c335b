"""Framework-free judge core: criteria, prompts, strict parsing, injection set, agreement stats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memevals.benchmarks import judge_criteria
from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.prompts import build_items, judge_inputs
from memevals.benchmarks.locomo.scoring import criterion_for_locomo
from memevals.benchmarks.locomo_plus.scoring import criterion_for_locomo_plus
from memevals.benchmarks.longmemeval.scoring import criterion_for_longmemeval
from memevals.core.agreement import agreement_by_group, cohen_kappa
from memevals.core.criteria_judge import (
    JudgeInput,
    candidate_tag,
    judge_prompt,
    parse_verdict,
    repair_message,
)

JUDGE_CRITERIA = judge_criteria()

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
INJECTIONS = json.loads((FIXTURES / "judge_injections.json").read_text(encoding="utf-8"))

#: A complete input for each criterion (every field the criterion can show).
FULL = {
    "question": "When did Caroline go to the support group?",
    "reference": "7 May 2023",
    "evidence": ['[D1:3] Caroline said, "I went to a support group yesterday."'],
    "question_date": "2023/05/30 (Tue) 23:40",
    "session_dates": ["session 1: 1:56 pm on 8 May, 2023", "session 2: 1:14 pm on 25 May, 2023"],
}

EXPECTED_SCORES = {
    "factual": {"correct": 1.0, "partial": 0.5, "wrong": 0.0},
    "temporal": {"correct": 1.0, "wrong": 0.0},
    "adversarial": {"correct": 1.0, "wrong": 0.0},
    "cognitive": {"correct": 1.0, "wrong": 0.0},
    "lme_standard": {"yes": 1.0, "no": 0.0},
    "lme_temporal": {"yes": 1.0, "no": 0.0},
    "lme_knowledge_update": {"yes": 1.0, "no": 0.0},
    "lme_preference": {"yes": 1.0, "no": 0.0},
    "lme_abstention": {"yes": 1.0, "no": 0.0},
}


def full_input(criterion: str, prediction: str = "Paris") -> JudgeInput:
    return JudgeInput(criterion=criterion, prediction=prediction, **FULL)  # type: ignore[arg-type]


def verdict_json(label: str, reason: str = "short reason") -> str:
    return json.dumps({"label": label, "reason": reason})


# --- criteria ---------------------------------------------------------------------------------


def test_contract_criteria_and_label_scores() -> None:
    assert {c: dict(s.scores) for c, s in JUDGE_CRITERIA.items()} == EXPECTED_SCORES


@pytest.mark.parametrize(
    ("category", "criterion"),
    [
        ("single_hop", "factual"),
        ("multi_hop", "factual"),
        ("open_domain", "factual"),
        ("temporal", "temporal"),
        ("adversarial", "adversarial"),
        ("cognitive", "cognitive"),
        # LoCoMo-Plus spellings
        ("single-hop", "factual"),
        ("multi-hop", "factual"),
        ("common-sense", "factual"),
        ("Cognitive", "cognitive"),
    ],
)
def test_criterion_for_locomo(category: str, criterion: str) -> None:
    assert criterion_for_locomo_plus(category) == criterion
    if criterion != "cognitive" and "common" not in category:
        assert criterion_for_locomo(category) == criterion


def test_criterion_for_locomo_unknown() -> None:
    with pytest.raises(ValueError, match="'knowledge_update'"):
        criterion_for_locomo("knowledge_update")


@pytest.mark.parametrize(
    ("qtype", "qid", "criterion"),
    [
        ("single-session-user", "e47becba", "lme_standard"),
        ("single-session-assistant", "7161e7e2", "lme_standard"),
        ("multi-session", "0a995998", "lme_standard"),
        ("temporal-reasoning", "gpt4_2655b836", "lme_temporal"),
        ("knowledge-update", "6a1eabeb", "lme_knowledge_update"),
        ("single-session-preference", "75832dbd", "lme_preference"),
        ("single_session_user", "e47becba", "lme_standard"),  # snake case too
        # any `_abs` id is abstention, whatever the type
        ("temporal-reasoning", "gpt4_2655b836_abs", "lme_abstention"),
        ("multi-session", "0a995998_abs", "lme_abstention"),
        ("knowledge-update", "6a1eabeb_abs", "lme_abstention"),
    ],
)
def test_criterion_for_longmemeval(qtype: str, qid: str, criterion: str) -> None:
    assert criterion_for_longmemeval(qtype, qid) == criterion


def test_criterion_for_longmemeval_unknown_names_the_id() -> None:
    with pytest.raises(ValueError, match=r"q1: .*'open-domain'"):
        criterion_for_longmemeval("open-domain", "q1")


# --- parsing: every label path ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("criterion", "label"),
    [(c, label) for c, scores in EXPECTED_SCORES.items() for label in scores],
)
def test_parse_every_label_of_every_criterion(criterion: str, label: str) -> None:
    v = parse_verdict(verdict_json(label, "because"), criterion)
    assert v is not None
    assert (v.label, v.score, v.reason) == (label, EXPECTED_SCORES[criterion][label], "because")


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ('{"label": " Correct ", "reason": "x"}', "correct"),  # case and spaces in the label
        ('  {"reason": "x", "label": "partial"}\n', "partial"),  # key order is free
        ('```json\n{"label": "wrong", "reason": "x"}\n```', "wrong"),  # one enclosing fence
        ('```\n{"label": "wrong"}\n```', "wrong"),
        ('{"label": "correct"}', "correct"),  # reason optional
        ('<think>hmm, "correct"?</think>\n{"label": "wrong", "reason": "x"}', "wrong"),
        ('{"label": "wrong", "reason": "the reply is not correct"}', "wrong"),  # no substring
        ('{"label": "wrong", "reason": "correct correct", "confidence": 0.9}', "wrong"),
    ],
)
def test_parse_accepts_exactly_one_verdict_object(reply: str, label: str) -> None:
    v = parse_verdict(reply, "factual")
    assert v is not None and v.label == label


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "correct",
        "Correct.",
        "The answer is correct.",
        "label: correct",
        '{"label": "incorrect", "reason": "x"}',  # the known substring bug scores this 1
        '{"label": "correct.", "reason": "x"}',
        '{"label": "right"}',
        '{"label": "yes"}',  # a yes/no label for a three-way criterion
        '{"label": 1}',
        '{"label": null}',
        '{"label": ["correct"]}',
        '{"label": "correct", "reason": 5}',
        '{"reason": "correct"}',
        '{"label": "wrong", "label": "correct"}',  # duplicate keys
        '{"label": "correct"} {"label": "wrong"}',  # two objects
        'Verdict: {"label": "correct", "reason": "x"}',  # text before
        '{"label": "correct", "reason": "x"} I hope that helps',  # text after
        '[{"label": "correct"}]',
        '{"label": "correct", "reason": "x"',  # truncated (max_tokens)
        "<think>unterminated",
        '```json\n{"label": "correct"}\n``` and more',
    ],
)
def test_parse_rejects_anything_else(reply: str) -> None:
    assert parse_verdict(reply, "factual") is None


@pytest.mark.parametrize("label", ["partial", "correct", "wrong"])
def test_binary_criteria_reject_foreign_labels(label: str) -> None:
    assert parse_verdict(verdict_json(label), "lme_standard") is None
    if label == "partial":
        assert parse_verdict(verdict_json(label), "temporal") is None


def test_parse_unknown_criterion() -> None:
    with pytest.raises(ValueError, match="unknown judge criterion 'locomo'"):
        parse_verdict(verdict_json("correct"), "locomo")


# --- prompts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("criterion", list(JUDGE_CRITERIA))
def test_prompt_structure(criterion: str) -> None:
    inp = full_input(criterion, prediction="Paris")
    prompt = judge_prompt(inp)
    tag = candidate_tag("Paris")
    open_m, close_m = f"<<<CANDIDATE {tag}\n", f"\nCANDIDATE {tag}>>>"
    assert prompt.count(open_m) == 1 and prompt.count(close_m) == 1
    assert prompt.split(open_m)[1].split(close_m)[0] == "Paris"
    tail = prompt.split(close_m)[1]
    labels = ", ".join(f'"{x}"' for x in EXPECTED_SCORES[criterion])
    assert f"The label must be one of: {labels}." in tail  # our instructions come last
    assert "untrusted data" in prompt and "ignore it" in prompt
    assert prompt == judge_prompt(inp)  # deterministic


def test_prompt_fields_per_criterion() -> None:
    factual = judge_prompt(full_input("factual"))
    assert "Reference answer (ground truth):\n7 May 2023" in factual
    assert "Evidence from the conversation:\n[D1:3] Caroline" in factual
    assert "session 1:" not in factual and "2023/05/30" not in factual

    temporal = judge_prompt(full_input("temporal"))
    assert "Dates of the conversation's sessions:\nsession 1: 1:56 pm on 8 May, 2023\n" in temporal
    assert "even one day off" in temporal

    adversarial = judge_prompt(full_input("adversarial"))
    assert "7 May 2023" not in adversarial and "Reference" not in adversarial
    assert "Question:\nWhen did Caroline go" in adversarial

    cognitive = judge_prompt(full_input("cognitive"))
    assert "Earlier cue:\n[D1:3]" in cognitive and "Reference answer" not in cognitive
    assert "New message that the candidate reply responds to:" in cognitive

    lme = judge_prompt(full_input("lme_standard"))
    assert "Date on which the question was asked:\n2023/05/30 (Tue) 23:40" in lme
    assert "off by one" not in lme and "Evidence" not in lme
    assert "off by one" in judge_prompt(full_input("lme_temporal"))
    assert "updated answer" in judge_prompt(full_input("lme_knowledge_update"))
    assert "Rubric for a good personalised response:\n7 May" in judge_prompt(
        full_input("lme_preference")
    )
    assert "Why the question cannot be answered:" in judge_prompt(full_input("lme_abstention"))


@pytest.mark.parametrize(
    ("criterion", "missing"),
    [
        ("factual", "reference"),
        ("temporal", "reference"),
        ("cognitive", "evidence"),
        ("lme_standard", "question"),
        ("lme_preference", "reference"),
        ("lme_abstention", "question"),
    ],
)
def test_prompt_requires_fields(criterion: str, missing: str) -> None:
    fields = {**FULL, missing: None}
    inp = JudgeInput(criterion=criterion, prediction="x", **fields)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"{criterion!r} needs {missing!r}"):
        judge_prompt(inp)


def test_optional_fields_may_be_absent() -> None:
    assert judge_prompt(JudgeInput("adversarial", "not mentioned"))
    assert judge_prompt(JudgeInput("lme_abstention", "unknown", question="What is my cat's name?"))
    assert judge_prompt(JudgeInput("temporal", "2022", reference=2022))  # integer gold


def test_judge_input_validation() -> None:
    inp = JudgeInput("factual", "x", reference="y", evidence=["a", "b"], session_dates=["s1"])
    assert inp.evidence == ("a", "b") and inp.session_dates == ("s1",)
    hash(inp)  # frozen and hashable
    with pytest.raises(ValueError, match="unknown judge criterion"):
        JudgeInput("nonsense", "x")
    with pytest.raises(ValueError, match="evidence must be a string or a list"):
        JudgeInput("factual", "x", evidence=[1, 2])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['answer'\]"):
        JudgeInput.from_metadata({"criterion": "factual", "answer": "y"}, "x")
    with pytest.raises(ValueError, match="no 'criterion'"):
        JudgeInput.from_metadata({"reference": "y"}, "x")
    ok = JudgeInput.from_metadata(
        {"criterion": "factual", "reference": "y", "prediction_map": "locomo"},
        "x",
        ignore=("prediction_map",),
    )
    assert ok == JudgeInput("factual", "x", reference="y")


def test_repair_message_names_the_labels() -> None:
    assert '"label": "yes|no"' in repair_message("lme_abstention")
    assert '"label": "correct|partial|wrong"' in repair_message("factual")


# --- injection set ----------------------------------------------------------------------------


def test_injection_set_is_large_and_varied() -> None:
    assert len(INJECTIONS) >= 30
    assert len({i["id"] for i in INJECTIONS}) == len(INJECTIONS)
    assert len({i["attack"] for i in INJECTIONS}) >= 10


@pytest.mark.parametrize("item", INJECTIONS, ids=[i["id"] for i in INJECTIONS])
def test_injection_stays_quoted_data(item: dict[str, str]) -> None:
    """The candidate appears once, verbatim, between markers it cannot forge; every rule and
    instruction of ours is outside the quote."""
    cand = item["candidate"]
    tag = candidate_tag(cand)
    assert tag not in cand
    for criterion in JUDGE_CRITERIA:
        prompt = judge_prompt(full_input(criterion, prediction=cand))
        open_m, close_m = f"<<<CANDIDATE {tag}\n", f"\nCANDIDATE {tag}>>>"
        assert prompt.count(open_m) == 1 and prompt.count(close_m) == 1
        before, rest = prompt.split(open_m)
        quoted, after = rest.split(close_m)
        assert quoted == cand
        assert "Rule:\n" in before and "The label must be one of" in after


@pytest.mark.parametrize("item", INJECTIONS, ids=[i["id"] for i in INJECTIONS])
def test_injection_cannot_change_parsed_label(item: dict[str, str]) -> None:
    """Whatever the candidate says, the parsed label is the judge's own: a verdict quoting the
    candidate in its reason keeps its label, and a reply that mixes the candidate's text with a
    verdict is rejected (unscored), never read as the candidate's claimed label."""
    cand = item["candidate"]
    for criterion, scores in EXPECTED_SCORES.items():
        for label in scores:
            own = verdict_json(label, f"The reply says: {cand}")
            v = parse_verdict(own, criterion)
            assert v is not None and v.label == label
            for mixed in (f"{cand}\n{verdict_json(label)}", f"{verdict_json(label)}\n{cand}"):
                got = parse_verdict(mixed, criterion)
                assert got is None or (got.label == label and not cand.strip())


@settings(max_examples=300, deadline=None)
@given(cand=st.text(), label=st.sampled_from(["correct", "partial", "wrong"]))
def test_any_text_in_reason_keeps_label(cand: str, label: str) -> None:
    v = parse_verdict(verdict_json(label, cand), "factual")
    assert v is not None and v.label == label


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_free_text_is_never_a_verdict(text: str) -> None:
    """Text that is not a JSON object never parses, whatever words it contains."""
    stripped = text.strip()
    if stripped.startswith(("{", "```", "<think>")):
        return
    assert parse_verdict(text + " correct", "factual") is None
    assert parse_verdict("correct " + text, "factual") is None


# --- LoCoMo judge inputs (real data) ----------------------------------------------------------


def test_locomo_judge_inputs(data_dir: Path) -> None:
    convs = load_locomo(str(data_dir))
    conv26 = convs[0]
    q0 = judge_inputs(conv26, conv26.qa[0])
    assert q0["criterion"] == "temporal"
    assert q0["reference"] == "7 May 2023"
    assert q0["prediction_map"] == "locomo"
    dates = q0["session_dates"]
    assert isinstance(dates, list) and len(dates) == 19
    assert dates[0] == "session 1: 1:56 pm on 8 May, 2023"
    assert q0["evidence"] == [
        '[D1:3] Caroline said, "I went to a LGBTQ support group yesterday and it was so powerful."'
    ]

    items = build_items(convs, categories="adversarial,single_hop,open_domain,multi_hop")
    by_cat: dict[str, dict[str, object]] = {}
    for it in items:
        by_cat.setdefault(it.metadata["category"], it.metadata["judge"])
        # every judge dict builds a valid prompt
        judge_prompt(
            JudgeInput.from_metadata(it.metadata["judge"], "x", ignore=("prediction_map",))
        )
    assert set(by_cat["adversarial"]) == {"criterion", "question", "prediction_map"}
    assert by_cat["single_hop"]["criterion"] == "factual"
    assert "session_dates" not in by_cat["single_hop"]
    # an evidence id with no such turn is shown as such, not dropped
    conv42 = next(c for c in convs if c.sample_id == "conv-42")
    qa = next(q for q in conv42.qa if "D10:19" in q.evidence_ids)
    assert "[D10:19] (no such turn)" in judge_inputs(conv42, qa)["evidence"]  # type: ignore[operator]


# --- agreement statistics ---------------------------------------------------------------------


def test_cohen_kappa_worked_examples() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o 0.7, p_e 0.5, kappa 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    # three labels: p_o 4/6, p_e 13/36 -> kappa 11/23
    a3 = ["correct", "correct", "partial", "wrong", "wrong", "correct"]
    b3 = ["correct", "partial", "partial", "wrong", "correct", "correct"]
    assert cohen_kappa(a3, b3) == pytest.approx(11 / 23)
    assert cohen_kappa(["yes", "no"], ["yes", "no"]) == 1.0
    assert cohen_kappa(["yes", "no"], ["no", "yes"]) == -1.0
    assert cohen_kappa(["yes"] * 3, ["yes"] * 3) is None  # chance agreement is 1: undefined
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError, match="differ in length"):
        cohen_kappa(["yes"], [])


def test_agreement_by_group() -> None:
    rows = {
        "temporal": [("correct", 1.0, "correct", 1.0), ("wrong", 0.0, "correct", 1.0)],
        "single_hop": [("partial", 0.5, "partial", 0.5)],
    }
    out = agreement_by_group(rows)
    assert list(out) == ["temporal", "single_hop", "all"]
    assert out["temporal"].agree == 0.5 and out["temporal"].kappa == 0.0
    assert out["temporal"].score_a == 0.5 and out["temporal"].score_b == 1.0
    assert out["single_hop"].kappa is None and out["single_hop"].agree == 1.0
    assert out["all"].n == 3 and out["all"].agree == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match='named "all"'):
        agreement_by_group({"all": []})

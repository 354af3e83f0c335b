"""The Inspect `llm_judge` scorer with scripted graders: label paths, retry -> unscored, every
criterion, the injection set, the grader-role fallback, `locomo -T judge`, re-judging a log with
the real `inspect score` CLI, and the judge-agreement command."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_python
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, get_model
from inspect_ai.solver import generate
from logged_figures import figures
from scripted_judge import quoted_candidate

from memevals.benchmarks import judge_criteria
from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.prompts import NOT_MENTIONED, build_items
from memevals.core.criteria_judge import repair_message
from memevals.inspect_tasks.judge_scorer import llm_judge
from memevals.inspect_tasks.locomo import locomo

JUDGE_CRITERIA = judge_criteria()

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
INJECTIONS = json.loads((TESTS / "fixtures" / "judge_injections.json").read_text("utf-8"))

Generate = Callable[[list[ChatMessage], Any, Any, GenerateConfig], ModelOutput]


def echo_answerer() -> Any:
    """Answers each sample with its own input text: the sample input *is* the candidate."""

    def answer(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        return ModelOutput.from_content("mockllm", input[-1].text)

    return get_model("mockllm/model", custom_outputs=answer)


def scripted_grader(script: Callable[[str, int], str], calls: list[Any]) -> Any:
    """A mockllm grader: `script(candidate, attempt)` -> reply; records every call."""

    def grade(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        calls.append((input, config))
        attempt = (len(input) - 1) // 2
        reply = script(quoted_candidate(input[0].text), attempt)
        return ModelOutput.from_content("mockllm", reply)

    return get_model("mockllm/model", custom_outputs=grade)


def judge_task(rows: list[tuple[str, str, dict[str, Any], str]], **judge_args: Any) -> Task:
    """rows: (id, category, judge metadata, candidate); judge_args go to llm_judge()."""
    samples = [
        Sample(id=sid, input=cand, target="", metadata={"category": cat, "judge": judge})
        for sid, cat, judge, cand in rows
    ]
    return Task(
        dataset=MemoryDataset(samples, shuffled=False),
        solver=generate(),
        scorer=llm_judge(**judge_args),
    )


def run(task: Task, tmp_path: Path, **kwargs: Any) -> EvalLog:
    kwargs.setdefault("model", echo_answerer())
    log = eval(task, display="none", log_dir=str(tmp_path / "logs"), **kwargs)[0]
    assert log.status == "success", log.error
    return log


def judge_scores(log: EvalLog, name: str = "llm_judge") -> dict[str, Any]:
    return {str(s.id): s.scores[name] for s in log.samples or [] if s.scores}


def verdict(label: str, reason: str = "scripted") -> str:
    return json.dumps({"label": label, "reason": reason})


FACTUAL = {"criterion": "factual", "question": "Where?", "reference": "Paris"}


def test_label_paths_retry_and_unscored(tmp_path: Path) -> None:
    script = {
        "ans-correct": [verdict("correct")],
        "ans-partial": [verdict("partial")],
        "ans-wrong": [verdict("wrong")],
        "ans-temporal": [verdict("correct")],
        "ans-yes": [verdict("yes")],
        "ans-no": [verdict("no")],
        "ans-retry": ["The answer is correct.", verdict("wrong", "second try")],
        "ans-unscored": ["correct", "I'd say it is correct!"],
    }
    rows = [
        ("c", "single_hop", FACTUAL, "ans-correct"),
        ("p", "single_hop", FACTUAL, "ans-partial"),
        ("w", "single_hop", FACTUAL, "ans-wrong"),
        ("t", "temporal", {"criterion": "temporal", "reference": "7 May 2023"}, "ans-temporal"),
        (
            "y",
            "single_session_user",
            {"criterion": "lme_standard", "question": "Q?", "reference": "A"},
            "ans-yes",
        ),
        ("n", "abstention", {"criterion": "lme_abstention", "question": "Q?"}, "ans-no"),
        ("r", "single_hop", FACTUAL, "ans-retry"),
        ("u", "single_hop", FACTUAL, "ans-unscored"),
    ]
    calls: list[Any] = []
    grader = scripted_grader(lambda cand, attempt: script[cand][attempt], calls)
    log = run(judge_task(rows), tmp_path, model_roles={"grader": grader})

    scores = judge_scores(log)
    values = {sid: s.value["judge"] for sid, s in scores.items()}
    assert {k: v for k, v in values.items() if k != "u"} == {
        "c": 1.0, "p": 0.5, "w": 0.0, "t": 1.0, "y": 1.0, "n": 0.0, "r": 0.0
    }  # fmt: skip
    assert {sid: s.metadata["label"] for sid, s in scores.items()} == {
        "c": "correct", "p": "partial", "w": "wrong", "t": "correct", "y": "yes", "n": "no",
        "r": "wrong", "u": None,
    }  # fmt: skip

    # retry: a second call that shows the bad reply and asks again; its verdict counts
    assert scores["r"].metadata["judge_replies"] == [
        "The answer is correct.",
        verdict("wrong", "second try"),
    ]
    assert scores["r"].explanation == "wrong: second try"
    retry_input = next(inp for inp, _ in calls if len(inp) == 3)
    assert retry_input[1].text == "The answer is correct."
    assert retry_input[2].text == repair_message("factual")

    # unscored: NaN under "judge", reason and raw replies kept, never 0 or 1
    u = scores["u"]
    assert math.isnan(u.value["judge"]) and u.value["unscored"] == 1
    assert u.reason == "grader_failed"
    assert "UNSCORED" in u.explanation and "I'd say it is correct!" in u.explanation
    assert u.metadata["judge_replies"] == ["correct", "I'd say it is correct!"]
    assert len(calls) == 10  # 8 first attempts + 2 retries

    # every call: temperature 0, bounded tokens, grader recorded, not the fallback
    assert all(c.temperature == 0.0 and c.max_tokens == 256 for _, c in calls)
    assert {s.metadata["grader"] for s in scores.values()} == {"mockllm/model"}
    assert not any(s.metadata["grader_fallback"] for s in scores.values())

    m = figures(log)
    scored = [1.0, 0.5, 0.0, 1.0, 1.0, 0.0, 0.0]
    mean = sum(scored) / 7
    sd = math.sqrt(sum((x - mean) ** 2 for x in scored) / 6)
    assert m[("judge", "mean")] == pytest.approx(0.5)
    # these samples have no cluster ids: the clustered stderr is left out (the naive one, with
    # -T uncertainty=full, would be sd / sqrt(7))
    assert ("judge", "stderr") not in m and sd > 0
    assert m[("judge", "single_hop")] == pytest.approx(1.5 / 4)  # c, p, w, r
    assert m[("judge", "temporal")] == 1.0
    assert m[("judge", "abstention")] == 0.0
    assert m[("unscored", "count")] == 1.0
    # one result, named by the scorer: it counts the samples with a score dict (all 8); the
    # judge-unscored one is counted by its `unscored` row
    assert log.results is not None
    [judge_eval] = [s for s in log.results.scores if s.scorer == "llm_judge"]
    assert judge_eval.name == "llm_judge"
    assert (judge_eval.scored_samples, judge_eval.unscored_samples) == (8, 0)
    assert judge_eval.metrics["unscored"].value == 1.0


def test_every_criterion_through_the_scorer(tmp_path: Path) -> None:
    full = {
        "question": "Q?",
        "reference": "A",
        "evidence": ["cue line"],
        "question_date": "2023/05/30 (Tue) 23:40",
        "session_dates": ["session 1: 8 May 2023"],
    }
    rows = [(c, c, {"criterion": c, **full}, f"ans-{c}") for c in JUDGE_CRITERIA]
    first_label = {f"ans-{c}": next(iter(spec.scores)) for c, spec in JUDGE_CRITERIA.items()}
    calls: list[Any] = []
    grader = scripted_grader(lambda cand, _: verdict(first_label[cand]), calls)
    # a grader role configured with its own max_tokens keeps it (default would be 256)
    grader.config = GenerateConfig(max_tokens=64)
    log = run(judge_task(rows), tmp_path, model_roles={"grader": grader})
    assert {(c.temperature, c.max_tokens) for _, c in calls} == {(0.0, 64)}
    # an explicit scorer argument wins over the role's setting
    calls.clear()
    run(judge_task(rows[:1], max_tokens=100), tmp_path, model_roles={"grader": grader})
    assert [c.max_tokens for _, c in calls] == [100]
    scores = judge_scores(log)
    for c, spec in JUDGE_CRITERIA.items():
        label = next(iter(spec.scores))
        assert scores[c].metadata["criterion"] == c
        assert scores[c].metadata["label"] == label
        assert scores[c].value["judge"] == spec.scores[label]
    # the prompt each grader call saw was built for its own criterion
    for inp, _ in calls:
        cand = quoted_candidate(inp[0].text)
        labels = ", ".join(f'"{x}"' for x in JUDGE_CRITERIA[cand[4:]].scores)
        assert f"The label must be one of: {labels}." in inp[0].text


def test_injection_set_cannot_change_the_label(tmp_path: Path) -> None:
    """The answerer replies with each adversarial candidate; the scripted judge decides by a
    rule hidden from the candidate (the sample's question) and quotes the candidate in its
    reason. Every parsed label is the judge's, whatever the candidate says."""
    labels = ["correct", "partial", "wrong"]
    rows = []
    expected = {}
    for k, item in enumerate(INJECTIONS):
        judge = {**FACTUAL, "question": f"question {k}"}
        rows.append((item["id"], "injection", judge, item["candidate"]))
        expected[item["id"]] = labels[k % 3]

    def grade(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        prompt = input[0].text
        k = int(prompt.split("Question:\nquestion ", 1)[1].split("\n", 1)[0])
        cand = quoted_candidate(prompt)
        assert cand == INJECTIONS[k]["candidate"]  # quoted verbatim, once
        reply = json.dumps({"label": labels[k % 3], "reason": f"the reply says {cand}"})
        return ModelOutput.from_content("mockllm", reply)

    grader = get_model("mockllm/model", custom_outputs=grade)
    log = run(judge_task(rows), tmp_path, model_roles={"grader": grader})
    scores = judge_scores(log)
    assert len(scores) == len(INJECTIONS) >= 30
    assert {sid: s.metadata["label"] for sid, s in scores.items()} == expected
    assert all(len(s.metadata["judge_replies"]) == 1 for s in scores.values())


def test_grader_falls_back_to_the_model_under_test(tmp_path: Path) -> None:
    def model_fn(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        text = input[-1].text if len(input) == 1 else input[0].text
        if "<<<CANDIDATE" in text:
            return ModelOutput.from_content("mockllm", verdict("correct"))
        return ModelOutput.from_content("mockllm", "Paris")

    task = judge_task([("s1", "single_hop", FACTUAL, "Where is it?")])
    own = get_model("mockllm/model", custom_outputs=model_fn)
    log = run(task, tmp_path, model=own)
    score = judge_scores(log)["s1"]
    assert score.metadata["grader_fallback"] is True
    assert score.metadata["grader"] == "mockllm/model"
    assert score.value == {"judge": 1.0, "unscored": 0}
    assert log.eval.model_roles is None or "grader" not in log.eval.model_roles

    # with a grader role the role's model judges and the log names it
    grader = get_model("scripted/strict")
    log2 = run(task, tmp_path, model=own, model_roles={"grader": grader})
    score2 = judge_scores(log2)["s1"]
    assert score2.metadata["grader_fallback"] is False
    assert score2.metadata["grader"] == "scripted/strict"
    assert score2.metadata["label"] == "correct"  # strict rule: reply "Paris" == reference
    assert log2.eval.model_roles is not None and "grader" in log2.eval.model_roles


def test_missing_judge_metadata_is_an_error(tmp_path: Path) -> None:
    task = Task(
        dataset=MemoryDataset([Sample(id="x", input="hi", metadata={"category": "c"})]),
        solver=generate(),
        scorer=llm_judge(),
    )
    log = eval(task, model=echo_answerer(), display="none", log_dir=str(tmp_path))[0]
    assert log.status == "error"
    assert (
        log.error is not None and "sample x: llm_judge needs metadata['judge']" in log.error.message
    )

    bad = judge_task([("y", "c", {"criterion": "factual", "answer": "Paris"}, "Paris")])
    log = eval(bad, model=echo_answerer(), display="none", log_dir=str(tmp_path))[0]
    assert log.status == "error"
    assert log.error is not None and "sample y: metadata['judge']" in log.error.message
    assert "unknown key(s) ['answer']" in log.error.message

    # a prediction map is "completion" or a benchmark's name whose record declares one
    unknown = judge_task(
        [("z", "c", {"criterion": "factual", "reference": "Paris"}, "Paris")], prediction="nope"
    )
    log = eval(unknown, model=echo_answerer(), display="none", log_dir=str(tmp_path))[0]
    assert log.status == "error" and log.error is not None
    known = log.error.message.split("unknown prediction map 'nope'; known: ", 1)[1]
    assert known.split(",")[0] == "completion" and "locomo" in known


# --- LoCoMo: -T judge, re-judging through the CLI, agreement command --------------------------


def locomo_answerer(items: list[Any], pattern: Callable[[int, Any], str]) -> Any:
    """Answers each LoCoMo question by `pattern(position, item)` (position among `items`)."""
    by_question = {}
    for k, it in enumerate(items):
        key = it.user
        assert key not in by_question, "questions must be distinct for the scripted answerer"
        by_question[key] = pattern(k, it)

    def answer(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        return ModelOutput.from_content("mockllm", by_question[input[-1].text])

    return get_model("mockllm/model", custom_outputs=answer)


def test_locomo_judge_flag_adversarial_choice(data_dir: Path, tmp_path: Path) -> None:
    """`-T judge=true` puts judge metrics beside F1; letter replies are judged as option text."""
    items = build_items(load_locomo(str(data_dir)), categories="adversarial", seed=0)[:4]
    ids = [it.id for it in items]

    def letter(k: int, it: Any) -> str:
        opts = it.metadata["choices"]
        want = NOT_MENTIONED if k % 2 == 0 else next(o for o in opts if o != NOT_MENTIONED)
        return "(" + "ab"[opts.index(want)] + ")"

    task = locomo(categories="adversarial", context="none", judge=True, protocol="memevals")
    log = run(
        task,
        tmp_path,
        model=locomo_answerer(items, letter),
        model_roles={"grader": get_model("scripted/strict")},
        sample_id=ids,
    )
    assert log.eval.metadata is not None and log.eval.metadata["judge"] is True
    scores = judge_scores(log)
    for k, sid in enumerate(ids):
        s = scores[sid]
        distractor = next(o for o in items[k].metadata["choices"] if o != NOT_MENTIONED)
        assert s.answer == (NOT_MENTIONED if k % 2 == 0 else distractor)  # letter mapped
        assert s.metadata["label"] == ("correct" if k % 2 == 0 else "wrong")
        assert s.metadata["prediction_map"] == "locomo"
    m = figures(log)
    assert m[("locomo_f1_scorer", "mean")] == 0.5
    assert m[("judge", "mean")] == 0.5
    assert m[("judge", "adversarial")] == 0.5
    assert m[("unscored", "count")] == 0.0


def test_rejudge_with_inspect_score_cli_and_agreement(data_dir: Path, tmp_path: Path) -> None:
    """Log A is judged by the strict scripted grader; `inspect score` re-judges it with the
    lenient one (appending a second judge score); the agreement command compares them."""
    convs = load_locomo(str(data_dir))
    temporal = build_items(convs, categories="temporal")[:6]
    adversarial = build_items(convs, categories="adversarial")[:2]
    items = temporal + adversarial

    def pattern(k: int, it: Any) -> str:
        if it.metadata["category"] == "adversarial":
            want = (
                NOT_MENTIONED
                if k % 2 == 0
                else next(o for o in it.metadata["choices"] if o != NOT_MENTIONED)
            )
            return "ab"[it.metadata["choices"].index(want)]
        gold = it.target
        return [gold, f"{gold} approximately", "I do not know"][k % 3]

    log_a = run(
        locomo(categories="temporal,adversarial", context="none", judge=True, protocol="memevals"),
        tmp_path,
        model=locomo_answerer(items, pattern),
        model_roles={"grader": get_model("scripted/strict")},
        sample_id=[it.id for it in items],
    )
    strict = {sid: s.metadata["label"] for sid, s in judge_scores(log_a).items()}
    assert list(strict.values()).count("correct") == 3  # 2 exact temporal + 1 refusal

    log_b = tmp_path / "rejudged.eval"
    cli = run_python(
        [
            sys.executable,
            str(TESTS / "support" / "scripted_judge.py"),
            "score",
            log_a.location,
            "--scorer",
            "memevals/llm_judge",
            "--model-role",
            "grader=scripted/lenient",
            "--action",
            "append",
            "--output-file",
            str(log_b),
            "--display",
            "plain",
        ],
        timeout=600,
        cwd=tmp_path,
    )
    assert cli.returncode == 0, cli.stderr[-3000:]
    rejudged = read_eval_log(str(log_b))
    lenient = judge_scores(rejudged, "llm_judge1")
    assert judge_scores(rejudged, "llm_judge") == judge_scores(log_a)  # first judge kept
    assert {s.metadata["grader"] for s in lenient.values()} == {"scripted/lenient"}
    assert [lenient[it.id].metadata["label"] for it in items] == [
        "correct", "correct", "wrong", "correct", "correct", "wrong", "correct", "wrong"
    ]  # fmt: skip
    # one result per judge, the appended one named by its scorer: every name is unique
    assert rejudged.results is not None
    names = [(s.name, s.scorer) for s in rejudged.results.scores]
    assert len({n for n, _ in names}) == len(names)
    assert set(names) >= {
        ("locomo_f1_scorer", "locomo_f1_scorer"),
        ("llm_judge", "llm_judge"),
        ("llm_judge1", "llm_judge1"),
    }
    appended = next(s for s in rejudged.results.scores if s.name == "llm_judge1").metrics
    assert appended["mean"].value == pytest.approx(5 / 8)  # lenient: 5 of 8 correct
    assert appended["unscored"].value == 0

    def agreement(*args: str) -> subprocess.CompletedProcess[str]:
        return run_python(
            [sys.executable, "-m", "memevals.tools.judge_agreement", *args], timeout=300, cwd=REPO
        )

    # one log holding both judges
    out = agreement(str(log_b), "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["category"]: r for r in json.loads(out.stdout)["rows"]}
    # temporal: strict C W W C W W vs lenient C C W C C W -> 4/6 agree, kappa 8/20
    assert rows["temporal"]["n"] == 6
    assert rows["temporal"]["agree"] == pytest.approx(4 / 6)
    assert rows["temporal"]["kappa"] == pytest.approx(0.4)
    assert rows["temporal"]["mean_a"] == pytest.approx(2 / 6)
    assert rows["temporal"]["mean_b"] == pytest.approx(4 / 6)
    assert rows["adversarial"]["agree"] == 1.0 and rows["adversarial"]["kappa"] == 1.0
    assert rows["all"]["n"] == 8 and rows["all"]["kappa"] == pytest.approx(9 / 17)
    assert rows["all"]["unscored"] == 0

    # two logs, table output
    out = agreement(log_a.location, str(log_b), "--scorer-b", "llm_judge1")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "grader scripted/strict" in lines[0] and "grader scripted/lenient" in lines[1]
    table = {ln.split()[0]: ln.split()[1:] for ln in lines[3:]}
    assert table["temporal"] == ["6", "0.667", "0.400", "0.333", "0.667", "0"]
    assert table["all"] == ["8", "0.750", "0.529", "0.375", "0.625", "0"]

    # ambiguous choice is a clear error
    out = agreement(log_a.location, str(log_b))
    assert out.returncode == 2 and "choose one with --scorer-b" in out.stderr

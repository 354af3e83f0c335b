"""LoCoMo QA on Inspect: sample construction, scripted answers scored exactly, real CLI."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessage, ModelOutput, get_model

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.prompts import NOT_MENTIONED, choice_options, resolve_choice
from memevals.inspect_tasks.locomo import locomo, locomo_adversarial, locomo_temporal
from memevals.scorers import locomo_f1


def _metrics(log: EvalLog, score: str = "locomo_f1_scorer") -> dict[str, float]:
    """One score's metrics, the F1 scorer's by default (names without the package prefix
    Inspect may add)."""
    assert log.results is not None
    return {
        name.rsplit("/", 1)[-1]: float(m.value)
        for s in log.results.scores
        if s.name.rsplit("/", 1)[-1] == score
        for name, m in s.metrics.items()
    }


def test_dataset_shape_ids_and_prefix_cache_friendly_context(data_dir: Path) -> None:
    task = locomo(protocol="memevals")
    samples = list(task.dataset)
    assert len(samples) == 1986
    assert samples[0].id == "conv-26-q0"
    assert samples[-1].id == "conv-50-q203"
    by_conv: dict[str, set[str]] = {}
    for s in samples:
        assert isinstance(s.input, list)
        [message] = s.input  # one user message: the conversation, then the question
        assert message.role == "user"
        context = message.text.rsplit("\n\nQuestion: ", 1)[0]
        by_conv.setdefault(s.metadata["conversation_id"], set()).add(context)  # type: ignore[index]
        assert s.metadata["category"] in {  # type: ignore[index]
            "single_hop",
            "multi_hop",
            "temporal",
            "open_domain",
            "adversarial",
        }
    # one byte-identical context per conversation, first in the message (prefix caches hit)
    assert len(by_conv) == 10 and all(len(v) == 1 for v in by_conv.values())
    first = next(iter(by_conv["conv-26"]))
    assert "DATE: 1:56 pm on 8 May, 2023" in first
    assert 'Caroline said, "Hey Mel! Good to see you! How have you been?"' in first
    assert "and shared a photo of a dog walking past a wall" in first
    # samples are ordered by conversation
    convs = [s.metadata["conversation_id"] for s in samples]  # type: ignore[index]
    assert convs == sorted(convs, key=lambda c: list(by_conv).index(c))


def test_category_filter_and_per_category_tasks(data_dir: Path) -> None:
    assert len(locomo(categories="temporal,multi_hop").dataset) == 321 + 282
    assert len(locomo(categories="2").dataset) == 321
    assert len(locomo_temporal().dataset) == 321
    assert len(locomo_adversarial().dataset) == 446
    with pytest.raises(ValueError, match="unknown LoCoMo category 'temporl'"):
        locomo(categories="temporl")
    with pytest.raises(ValueError, match="context='windowed' is not supported"):
        locomo(context="windowed")


def test_official_judges_once_refused_before_the_data(tmp_path: Path) -> None:
    """protocol=official (the default) judges once with upstream's judge: judge_runs=3 with the
    judge is refused with the fix before the data (an empty data_dir) is read; without the
    judge judge_runs is not read, and the run gets as far as the missing data."""
    with pytest.raises(ValueError, match=r"^judge_runs: protocol=official judges once") as err:
        locomo(judge=True, judge_runs=3, data_dir=str(tmp_path))
    fix = "repeated judging applies to protocol=memevals: add -T protocol=memevals"
    assert str(err.value).endswith(fix)
    with pytest.raises(ValueError, match=r"locomo/locomo10\.json: not found under the data dir"):
        locomo(judge_runs=3, data_dir=str(tmp_path))


def test_temporal_hint_and_adversarial_choice(data_dir: Path) -> None:
    samples = {s.id: s for s in locomo(protocol="memevals").dataset}
    temporal = samples["conv-26-q0"]
    assert "session dates" in temporal.input[-1].text  # type: ignore[index,union-attr]
    single = next(s for s in samples.values() if s.metadata["category"] == "single_hop")  # type: ignore[index]
    assert "session dates" not in single.input[-1].text  # type: ignore[index,union-attr]
    adv = next(s for s in samples.values() if s.metadata["category"] == "adversarial")  # type: ignore[index]
    options = adv.metadata["choices"]  # type: ignore[index]
    assert sorted(options) == sorted([NOT_MENTIONED, adv.metadata["adversarial_answer"]])  # type: ignore[index]
    text = adv.input[-1].text  # type: ignore[index,union-attr]
    assert f"(a) {options[0]}" in text and f"(b) {options[1]}" in text
    # the order is seeded per sample: both orders occur, and a rebuild gives the same order
    firsts = [s.metadata["choices"][0] for s in samples.values() if s.metadata["choices"]]  # type: ignore[index]
    assert 0.35 < sum(f == NOT_MENTIONED for f in firsts) / len(firsts) < 0.65
    again = {s.id: s.metadata["choices"] for s in locomo(protocol="memevals").dataset}  # type: ignore[index]
    assert all(again[i] == s.metadata["choices"] for i, s in samples.items())  # type: ignore[index]
    assert choice_options("x", "Yes", seed=1) in ([NOT_MENTIONED, "Yes"], ["Yes", NOT_MENTIONED])
    # open form: a plain question, no options
    open_adv = next(s for s in locomo_adversarial(adversarial="open", protocol="memevals").dataset)
    assert open_adv.metadata["choices"] is None  # type: ignore[index]
    assert "(a)" not in open_adv.input[-1].text  # type: ignore[index,union-attr]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("a", 0), ("(b)", 1), ("B.", 1), (" a) it is", 0), ("b: yes", 1), ("bananas", None)],
)
def test_resolve_choice(reply: str, expected: int | None) -> None:
    options = ["first", "second"]
    assert resolve_choice(reply, options) == (options[expected] if expected is not None else reply)


def _answer_by_sample(answers: dict[str, str]) -> Any:
    """mockllm callable: answer each sample by its question text."""

    def reply(messages: list[ChatMessage], *args: Any) -> ModelOutput:
        found = re.search(r"^Question: (.*)$", messages[-1].text, re.MULTILINE)
        question = found.group(1) if found else ""
        return ModelOutput.from_content("mockllm/model", answers.get(question, "no idea"))

    return reply


def test_scripted_answers_are_scored_with_official_f1(data_dir: Path, tmp_path: Path) -> None:
    conv = load_locomo()[0]
    qas = conv.qa[:40]
    answers: dict[str, str] = {}
    for qa in qas:
        if qa.category == 5:
            answers[qa.question] = "a"  # a letter: mapped back to its option before scoring
        else:
            answers[qa.question] = f"I think {qa.answer}"
    task = locomo(protocol="memevals")
    [log] = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=_answer_by_sample(answers)),
        limit=40,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success"
    assert log.samples is not None
    expected: dict[str, list[float]] = {}
    for sample in log.samples:
        qa = qas[int(str(sample.id).rsplit("q", 1)[1])]
        score = sample.scores["locomo_f1_scorer"]  # type: ignore[index]
        reply = answers[qa.question]
        if qa.category == 5:
            options = sample.metadata["choices"]
            want = 1.0 if options[0] == NOT_MENTIONED else 0.0
            assert score.answer == options[0]
        else:
            want = locomo_f1(reply, qa.answer, qa.category)
        assert score.value == pytest.approx(want, abs=1e-12)
        expected.setdefault(sample.metadata["category"], []).append(want)
    metrics = _metrics(log)
    every = [v for vs in expected.values() for v in vs]
    assert metrics["mean"] == pytest.approx(sum(every) / len(every), abs=1e-12)
    for cat, values in expected.items():
        assert metrics[cat] == pytest.approx(sum(values) / len(values), abs=1e-12)


def _log_results(path: Path) -> tuple[str, dict[str, float], int]:
    log = read_eval_log(str(path), header_only=True)
    assert log.results is not None
    return log.eval.task, _metrics(log), log.results.completed_samples


def test_cli_full_run_namespaced_and_bare(inspect_cli: Any, tmp_path: Path) -> None:
    full = inspect_cli(
        "eval",
        "memevals/locomo",
        "--model",
        "mockllm/model",
        # results and each sample's scores (the log's reductions), not the samples: writing
        # 1,986 whole conversations into the log is most of the run; the bare run below logs its
        # samples
        "--no-log-samples",
        "--log-dir",
        "full",
        "--display",
        "none",
    )
    assert full.returncode == 0, full.stderr[-3000:]
    [log_path] = (tmp_path / "full").glob("*.eval")
    name, metrics, completed = _log_results(log_path)
    assert name == "memevals/locomo"
    assert completed == 1986
    cats = ["single_hop", "multi_hop", "temporal", "open_domain", "adversarial"]
    # the first screen: the mean, the conversation-clustered standard error and its 95 %
    # interval, the per-category means (the rest with -T uncertainty=full)
    assert set(metrics) == {
        "mean",
        "stderr",
        "ci_lower",
        "ci_upper",
        *cats,
    }
    # the clustered error over the 10 conversations is the core's, from each logged score
    from memevals.core.statistics import clustered_stderr

    dataset = locomo().dataset
    cluster_of = {s.id: str(s.metadata["cluster"]) for s in dataset}  # type: ignore[index]
    reductions = read_eval_log(str(log_path)).reductions or []
    [scores] = [r.samples for r in reductions if r.scorer.endswith("locomo_f1_scorer")]
    assert len(scores) == 1986
    f1 = [float(s.value) for s in scores]  # type: ignore[arg-type]
    clusters = [cluster_of[s.sample_id] for s in scores]  # type: ignore[index]
    assert len(set(clusters)) == 10
    assert metrics["stderr"] == pytest.approx(clustered_stderr(f1, clusters), abs=1e-12)
    # the prompt size (a score of its own) is the offline count of the prompts we built
    tokens = [int(s.metadata["prompt_tokens"]) for s in dataset]  # type: ignore[index]
    sizes = _metrics(read_eval_log(str(log_path), header_only=True), "prompt_tokens")
    assert sizes["total"] == sum(tokens)
    assert sizes["mean"] == pytest.approx(sum(tokens) / len(tokens))

    bare = inspect_cli(
        "eval",
        "locomo_adversarial",
        "--model",
        "mockllm/model",
        "--limit",
        "3",
        "--log-dir",
        "bare",
        "--display",
        "none",
    )
    assert bare.returncode == 0, bare.stderr[-3000:]
    [bare_log] = (tmp_path / "bare").glob("*.eval")
    name, metrics, completed = _log_results(bare_log)
    # Inspect records the name the task was asked for; the bare alias runs the same task
    assert name == "locomo_adversarial"
    # three questions of one conversation: the clustered error and interval are undefined, so
    # they are left out (no NaN row, never 0), and the log says why
    assert completed == 3 and set(metrics) == {
        "mean",
        "adversarial",
    }
    note = read_eval_log(str(bare_log), header_only=True).eval.metadata["uncertainty"]
    assert "fewer than two clusters" in note["left_out"]
    # the sample inputs in the log are the one user message we built (protocol=official)
    first_id = next(s.id for s in dataset if s.metadata["category"] == "adversarial")  # type: ignore[index]
    with zipfile.ZipFile(bare_log) as z:
        first = json.loads(z.read(f"samples/{first_id}_epoch_1.json"))
    assert [m["role"] for m in first["input"]] == ["user"]
    assert first["metadata"]["protocol"] == "official"


def test_cli_bad_parameter_fails_before_any_model_call(inspect_cli: Any) -> None:
    res = inspect_cli(
        "eval",
        "memevals/locomo",
        "--model",
        "mockllm/model",
        "-T",
        "context=windowed",
        "--display",
        "none",
    )
    assert res.returncode != 0
    assert "context='windowed' is not supported" in res.stdout + res.stderr


@pytest.mark.slow
# torch on one thread: on a busy 2-core machine (xdist's two workers) a second thread waits
# for a core the other holds (docs/performance.md)
def test_real_smollm2_answers_locomo_questions(
    smollm2_dir: Path, inspect_cli: Any, tmp_path: Path
) -> None:
    res = inspect_cli(
        "eval",
        "memevals/locomo",
        "--model",
        "hf/local",
        "-M",
        f"model_path={smollm2_dir}",
        "-M",
        "device=cpu",
        "-M",
        "do_sample=false",
        "-T",
        "context=none",
        # two questions: the checks are per sample (a real reply, its F1), one batch either way
        "--limit",
        "2",
        "--log-dir",
        "real",
        "--display",
        "none",
    )
    assert res.returncode == 0, res.stderr[-3000:]
    [log_path] = (tmp_path / "real").glob("*.eval")
    log = read_eval_log(str(log_path))
    assert log.status == "success" and log.samples is not None and len(log.samples) == 2
    for sample in log.samples:
        assert sample.output.completion.strip()  # the model really generated text
        value = sample.scores["locomo_f1_scorer"].value  # type: ignore[index]
        assert isinstance(value, float) and 0.0 <= value <= 1.0

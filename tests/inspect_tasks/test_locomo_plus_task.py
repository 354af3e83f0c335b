"""LoCoMo-Plus on Inspect: task shape, all 2,387 samples end to end with a scripted answerer and
a scripted grader (exact judge and F1 metrics), the real CLI under both names, bad parameters,
and a real local model as answerer and grader."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, get_model
from logged_figures import figures
from scripted_judge import judge_labels, quoted_candidate

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.prompts import prediction_for_scoring
from memevals.inspect_tasks.locomo_plus import locomo_plus, locomo_plus_cognitive
from memevals.scorers import locomo_f1

RELATIONS = ("causal", "state", "goal", "value")
SIX = ("single_hop", "multi_hop", "temporal", "open_domain", "adversarial", "cognitive")


def _metrics(log: EvalLog) -> dict[tuple[str, str, str], float]:
    """(score name, metric group, metric name) -> value; groups: "" (plain), "grouped" (per
    category), "relation_type" (per cognitive relation type)."""
    assert log.results is not None
    # registry names carry the package prefix ("memevals/count") when loaded via the entry point
    return {
        (s.name, (m.group or "").split("/")[-1], m.name.split("/")[-1]): float(m.value)
        for s in log.results.scores
        for m in s.metrics.values()
    }


@pytest.fixture(scope="module")
def full_task(data_dir: Path) -> Any:
    return locomo_plus(protocol="memevals")


@pytest.fixture(scope="module")
def cognitive_task(data_dir: Path) -> Any:
    """The cognitive task in file order (read by two tests: one build)."""
    return locomo_plus_cognitive(protocol="memevals")


def test_task_shape(full_task: Any) -> None:
    samples = list(full_task.dataset)
    assert len(samples) == 2387
    ids = [s.id for s in samples]
    assert len(set(ids)) == 2387 and ids[-1] == "plus-400"
    cog = [s for s in samples if s.metadata["category"] == "cognitive"]
    assert len(cog) == 401
    for s in cog:
        md = s.metadata
        for key in ("host", "gap_days", "cue_position", "relation_type", "cue_session_idx"):
            assert key in md, key
        assert md["judge"]["criterion"] == "cognitive" and md["judge"]["evidence"]
        assert md["prompt_tokens"] > 0
    assert {s.metadata["relation_type"] for s in cog} == set(RELATIONS)
    for s in samples:
        assert set(s.metadata["judge"]) <= {
            "criterion",
            "question",
            "reference",
            "evidence",
            "question_date",
            "session_dates",
            "prediction_map",
        }
    assert full_task.config.max_tokens == 1024 and full_task.config.temperature == 0.3
    assert [type(s).__name__ for s in full_task.scorer] == ["function", "function"]
    assert full_task.metadata["memory"]["context"] == "full"


def test_cognitive_task_and_gap_fix(cognitive_task: Any) -> None:
    fixed = {s.id: s for s in locomo_plus_cognitive(protocol="memevals", gap_fix=True).dataset}
    plain = {s.id: s for s in cognitive_task.dataset}
    assert len(plain) == len(fixed) == 401

    def texts(sample: Any) -> list[str]:
        return [m.text for m in sample.input]

    moved = [i for i in plain if texts(plain[i]) != texts(fixed[i])]
    assert len(moved) == 15
    assert all(plain[i].metadata["gap_days"] == 0 for i in moved)
    assert {fixed[i].metadata["time_gap"]: fixed[i].metadata["gap_days"] for i in moved} == {
        "several months later": 90,
        "several years later": 1095,
        "a couple of months later": 60,
        "several weeks later": 21,
        "a few weeks later": 21,
    }


def test_official_judge_settings_refused_before_the_data(tmp_path: Path) -> None:
    """protocol=official judges once with upstream's judge at its own length: judge_runs=3 or
    judge_max_tokens is refused when the task is built, before the data (an empty data_dir) is
    read, not after every answer is generated."""
    fix = "add -T protocol=memevals"
    with pytest.raises(ValueError, match=r"^judge_runs: protocol=official judges once") as err:
        locomo_plus(judge_runs=3, data_dir=str(tmp_path))
    assert str(err.value).endswith(f"repeated judging applies to protocol=memevals: {fix}")
    with pytest.raises(ValueError) as err:
        locomo_plus(judge_max_tokens=100, data_dir=str(tmp_path))
    assert str(err.value).startswith(
        "judge_max_tokens: protocol=official judges with upstream's 512 tokens; the judge's "
        f"limit applies to protocol=memevals: {fix}"
    )


def test_bad_parameters_fail_before_any_model_call(data_dir: Path) -> None:
    with pytest.raises(ValueError, match="unknown LoCoMo-Plus category 'memory'"):
        locomo_plus(protocol="memevals", categories="memory")
    with pytest.raises(ValueError, match="context='windowed' is not supported"):
        locomo_plus(protocol="memevals", context="windowed")
    with pytest.raises(ValueError, match="retrieval_unit='observation' does not apply"):
        locomo_plus(protocol="memevals", context="rag", retrieval_unit="observation")
    # without cognitive samples the observation unit is fine
    assert (
        len(
            locomo_plus(
                protocol="memevals",
                categories="temporal",
                context="rag",
                retrieval_unit="observation",
            ).dataset
        )
        == 321
    )


# --------------------------------------------------------------------------- scripted run


def _bucket(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) % 3


def scripted_reply(md: dict[str, Any], target: str, user: str) -> str:
    """The answerer's rule, a function of the sample alone."""
    if md["category"] == "cognitive":
        i = md["instance_index"]
        if i % 40 == 1:
            return "GARBLE"  # the grader will fail to produce a verdict -> unscored
        return f"I remember: {md['cue']}" if i % 2 == 0 else "Sounds nice."
    kind = _bucket(user)
    if kind == 0:
        return target
    if kind == 1:
        return "I do not know."
    return f"Perhaps {target}"


def expected_judge(md: dict[str, Any], reply: str) -> float | None:
    if reply == "GARBLE":
        return None
    if reply.startswith(("I do not know.", "Sounds nice.")):
        return 0.0
    if reply.startswith("Perhaps "):
        return 0.5 if md["judge"]["criterion"] == "factual" else 0.0
    return 1.0


def _grade(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> ModelOutput:
    prompt = input[0].text
    assert config.temperature == 0.0
    candidate = quoted_candidate(prompt)
    labels = judge_labels(prompt)
    if candidate == "GARBLE":
        return ModelOutput.from_content("mockllm", "I cannot decide.")
    if candidate.startswith(("I do not know.", "Sounds nice.")):
        label = labels[-1]
    elif candidate.startswith("Perhaps "):
        label = "partial" if "partial" in labels else labels[-1]
    else:
        label = labels[0]
    return ModelOutput.from_content("mockllm", json.dumps({"label": label, "reason": "rule"}))


@pytest.mark.slow
def test_all_2387_samples_with_scripted_answerer_and_grader(full_task: Any, tmp_path: Path) -> None:
    by_input: dict[tuple[str, str], str] = {}
    expected: dict[str, tuple[str, dict[str, Any]]] = {}
    for s in full_task.dataset:
        system = s.input[0].text if s.input[0].role == "system" else ""
        user = s.input[-1].text
        reply = scripted_reply(s.metadata, s.target, user)
        by_input.setdefault((system, user), reply)
        expected[str(s.id)] = (by_input[(system, user)], s.metadata)

    def answer(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        system = input[0].text if input[0].role == "system" else ""
        return ModelOutput.from_content("mockllm", by_input[(system, input[-1].text)])

    log = inspect_eval(
        full_task,
        model=get_model("mockllm/model", custom_outputs=answer),
        model_roles={"grader": get_model("mockllm/model", custom_outputs=_grade)},
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_connections=64,
        log_samples=False,  # only the metrics are read: writing 2,387 samples is half the run
        log_realtime=False,  # nor is the buffer of samples in flight
    )[0]
    assert log.status == "success", log.error
    assert log.results is not None and log.results.completed_samples == 2387
    got = _metrics(log)
    judged = figures(log)

    # independent expectation from the scripted rules
    judge: dict[str, list[float]] = defaultdict(list)
    f1: dict[str, list[float]] = defaultdict(list)
    unscored = 0
    for reply, md in expected.values():
        value = expected_judge(md, reply)
        if value is None:
            unscored += 1
        else:
            judge["all"].append(value)
            judge[md["category"]].append(value)
            if md["relation_type"]:
                judge[md["relation_type"]].append(value)
        if md["category"] != "cognitive":
            score = locomo_f1(prediction_for_scoring(reply, md), md["answer"], md["category_id"])
            f1["all"].append(score)
            f1[md["category"]].append(score)

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    assert unscored == 10
    assert judged[("unscored", "count")] == 10
    assert math.isclose(judged[("judge", "mean")], mean(judge["all"]), abs_tol=1e-12)
    for group in SIX:
        assert math.isclose(judged[("judge", group)], mean(judge[group]), abs_tol=1e-12)
    for relation in RELATIONS:
        value = judged[("judge", relation)]
        assert math.isclose(value, mean(judge[relation]), abs_tol=1e-12), relation
    assert len(judge["cognitive"]) == 391 and len(judge["all"]) == 2377
    assert len(f1["all"]) == 1986
    assert math.isclose(got[("locomo_plus_f1", "", "mean")], mean(f1["all"]), abs_tol=1e-12)
    for group in SIX[:5]:
        value = got[("locomo_plus_f1", "grouped", group)]
        assert math.isclose(value, mean(f1[group]), abs_tol=1e-12), group
    assert ("locomo_plus_f1", "grouped", "cognitive") not in got
    # the scripted mix exercises every label: 1, 0.5 and 0 all occur
    assert {0.0, 0.5, 1.0} <= set(judge["all"])


# --------------------------------------------------------------------------- real CLI


@pytest.mark.slow
def test_cli_bare_name_runs_every_category(
    full_task: Any, inspect_cli: Any, tmp_path: Path, data_dir: Path
) -> None:
    """`inspect eval locomo_plus` end to end. mockllm's default grader reply is no verdict, so
    every judge score is unscored (counted); F1 is real for the LoCoMo questions. The run asks
    ten samples of each category and every LoCoMo question whose gold shares a token with
    mockllm's reply; all 2,387 samples run through Inspect in the scripted test above."""
    default = "Default output from mockllm/model"
    golds = {
        f"{conv.sample_id}-q{i}": qa
        for conv in load_locomo(data_dir)
        for i, qa in enumerate(conv.qa)
    }
    ids: list[str] = [i for i, qa in golds.items() if locomo_f1(default, qa.answer, qa.category)]
    per_category: dict[str, int] = defaultdict(int)
    for sample in full_task.dataset:
        category = sample.metadata["category"]
        if per_category[category] < 10 and str(sample.id) not in ids:
            per_category[category] += 1
            ids.append(str(sample.id))
    assert set(per_category) == set(SIX)
    res = inspect_cli(
        "eval",
        "locomo_plus",
        "--model",
        "mockllm/model",
        "--model-role",
        "grader=mockllm/model",
        # the memevals judge: a reply that is no verdict stays unscored
        "-T",
        "protocol=memevals",
        "--sample-id",
        ",".join(ids),
        "--max-connections",
        "64",
        "--no-log-realtime",
        "--no-log-samples",  # only the log's header is read
        "--log-dir",
        "logs",
        "--display",
        "none",
        timeout=1500,
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    [path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path), header_only=True)
    assert log.status == "success" and log.eval.task.endswith("locomo_plus")
    assert log.results is not None and log.results.completed_samples == len(ids) == 81
    got = _metrics(log)
    judged = figures(log)
    assert judged[("unscored", "count")] == 81  # "Default output from mockllm" is no verdict
    assert not [k for k in judged if k[0] == "judge"]  # no figure over no scored sample
    # F1 of mockllm's fixed reply against each asked LoCoMo gold, computed here from the adapter
    asked = [golds[i] for i in ids if i in golds]
    expected_f1 = sum(locomo_f1(default, qa.answer, qa.category) for qa in asked) / len(asked)
    assert 0 < expected_f1 < 1  # a few golds share a token ("model") with the reply
    assert math.isclose(got[("locomo_plus_f1", "", "mean")], expected_f1, abs_tol=1e-12)
    assert {k[2] for k in got if k[:2] == ("locomo_plus_f1", "grouped")} == set(SIX[:5])
    scores = {s.name: s for s in log.results.scores}
    assert scores["locomo_plus_f1"].scored_samples == len(asked) == 71
    # the judge is one result named by its scorer, counting every sample with a score dict
    assert (
        scores["locomo_plus_judge"].scored_samples,
        scores["locomo_plus_judge"].unscored_samples,
    ) == (81, 0)


@pytest.mark.slow
def test_cli_namespaced_names(inspect_cli: Any, tmp_path: Path) -> None:
    for name, categories, size in (
        ("memevals/locomo_plus", "temporal,cognitive", 722),
        ("memevals/locomo_plus_cognitive", None, 401),
    ):
        args = ["-T", f"categories={categories}"] if categories else []
        res = inspect_cli(
            "eval",
            name,
            "--model",
            "mockllm/model",
            "--model-role",
            "grader=mockllm/model",
            *args,
            "-T",
            "context=oracle",
            "-T",
            "protocol=memevals",
            "--limit",
            "4",
            "--log-dir",
            name.replace("/", "_"),
            "--display",
            "none",
        )
        assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
        [path] = (tmp_path / name.replace("/", "_")).glob("*.eval")
        log = read_eval_log(str(path), header_only=True)
        assert log.status == "success" and log.eval.dataset.samples == size
        assert log.results is not None and log.results.completed_samples == 4


# --------------------------------------------------------------------------- real local model


@pytest.mark.slow
# torch on one thread: on a busy 2-core machine (xdist's two workers) a second thread waits
# for a core the other holds (docs/performance.md)
def test_real_smollm2_answers_and_judges_cognitive_samples(
    smollm2_dir: Path, data_dir: Path, tmp_path: Path
) -> None:
    """SmolLM2-135M (8K window) as answerer and grader on a cognitive sample. The history is the
    cue alone (context=oracle) to keep CPU time small. Its verdicts may be unreadable: then they
    are unscored."""
    model = get_model("hf/local", model_path=str(smollm2_dir), device="cpu", do_sample=False)
    task = locomo_plus_cognitive(
        protocol="memevals", context="oracle", max_tokens=16, judge_max_tokens=24
    )
    # one sample: every check below is per sample (the answer, its prompt size, the judge's
    # metadata and score, the scored/unscored count), and each sample's judge prompt is most of
    # the CPU time
    ids = ["plus-0"]
    log = inspect_eval(
        task,
        model=model,
        model_roles={"grader": model},
        sample_id=ids,
        display="none",
        log_dir=str(tmp_path),
    )[0]
    assert log.status == "success", log.error
    assert log.samples is not None and sorted(str(s.id) for s in log.samples) == ids
    judge = {s.name: s for s in log.results.scores}["locomo_plus_judge"]  # type: ignore[union-attr]
    assert (judge.scored_samples, judge.unscored_samples) == (len(ids), 0)
    unscored = sum(s.scores["locomo_plus_judge"].value["unscored"] for s in log.samples)  # type: ignore[index]
    assert figures(log)[("unscored", "count")] == unscored
    for sample in log.samples:
        assert sample.output.completion.strip()  # the model really answered
        assert sample.metadata["prompt_tokens"] < 200  # cue + trigger + instruction
        score = sample.scores["locomo_plus_judge"]  # type: ignore[index]
        md = score.metadata or {}
        assert md["criterion"] == "cognitive" and md["grader"].startswith("hf/")
        assert 1 <= len(md["judge_replies"]) <= 2
        assert isinstance(score.value, dict)
        if md["label"] is None:
            assert math.isnan(score.value["judge"]) and score.value["unscored"] == 1
        else:
            assert score.value["judge"] in (0.0, 1.0)


# --------------------------------------------------------------------------- sample order


def test_host_order_groups_by_conversation_and_raises_the_shared_prefix(
    full_task: Any, data_dir: Path
) -> None:
    from memevals.core.tokens import get_token_counter
    from memevals.tools.estimate import estimate_samples

    file_order = list(full_task.dataset)
    host_task = locomo_plus(protocol="memevals", sample_order="host")
    assert host_task.metadata["sample_order"] == "host"
    host_order = list(host_task.dataset)
    # the same samples, inputs and metadata; only the order differs
    assert sorted(str(s.id) for s in host_order) == sorted(str(s.id) for s in file_order)
    by_id = {s.id: s for s in file_order}
    for s in host_order:
        assert [m.text for m in s.input] == [m.text for m in by_id[s.id].input]
        assert s.metadata == by_id[s.id].metadata

    # independent statement of the order: conversations in file order; in each, its LoCoMo
    # questions (qa order), then the cognitive samples stitched into it, latest cue first
    expected: list[str] = []
    for conv in load_locomo():
        expected += [f"{conv.sample_id}-q{i}" for i in range(len(conv.qa))]
        mine = [s for s in file_order if s.metadata.get("host") == conv.sample_id]
        mine.sort(key=lambda s: (-s.metadata["cue_position"], s.metadata["instance_index"]))
        expected += [str(s.id) for s in mine]
    assert [str(s.id) for s in host_order] == expected

    # both orders hold the same texts: one memo of each text's count serves both estimates
    base = get_token_counter()
    counter = dataclasses.replace(base, count=functools.lru_cache(maxsize=None)(base.count))

    def shared(samples: list[Any]) -> float:
        est = estimate_samples(samples, counter)
        return sum(e.shared_prefix for e in est) / sum(e.input_tokens for e in est)

    assert shared(file_order) == pytest.approx(0.8457, abs=5e-5)
    assert shared(host_order) == pytest.approx(0.92846, abs=5e-5)  # one message per sample


def test_host_order_of_the_cognitive_task_and_bad_values(cognitive_task: Any) -> None:
    ids = [
        str(s.id) for s in locomo_plus_cognitive(protocol="memevals", sample_order="host").dataset
    ]
    file_ids = [str(s.id) for s in cognitive_task.dataset]
    assert file_ids == [f"plus-{i}" for i in range(401)]
    assert sorted(ids) == sorted(file_ids) and ids != file_ids
    with pytest.raises(ValueError, match="sample_order='random' is not one of file, host"):
        locomo_plus(protocol="memevals", sample_order="random")

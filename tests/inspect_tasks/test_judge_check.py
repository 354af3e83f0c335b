"""judge_check: the grader is the model under test. Scripted graders (accept everything, exact
gold only, lenient by rule, unreadable) give metrics equal to a second computation here; the
audit's own verdicts reproduce its published 10.61 % and 62.81 %; the lenient criterion is a
separate, named criterion chosen by the option."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from cli_support import run_python
from inspect_ai import eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, get_model
from inspect_ai.scorer import MetricProtocol, SampleScore, Score
from scripted_judge import norm, quoted_candidate, section

from memevals.benchmarks import judge_criteria
from memevals.benchmarks.judge_check.samples import KINDS, JudgeCheckOptions, build
from memevals.benchmarks.locomo.scoring import criterion_for_locomo
from memevals.core.criteria_judge import COMPARISON_CRITERIA, criterion_spec, criterion_under
from memevals.inspect_tasks.judge_check import judge_check, judge_check_metrics

TESTS = Path(__file__).resolve().parents[1]
CATEGORY_SIZES = {"single_hop": 841, "multi_hop": 282, "temporal": 321, "open_domain": 96}
LIMIT = 45  # 15 questions x 3 candidates


@pytest.fixture(scope="module")
def built(data_dir: Path) -> tuple[list[Any], dict[str, Any]]:
    built = build(JudgeCheckOptions(data_dir=str(data_dir)))
    return list(built.items), dict(built.metadata)


def test_three_candidates_for_each_of_the_1540_questions(
    built: tuple[list[Any], dict[str, Any]],
) -> None:
    items, log = built
    assert len(items) == 3 * 1540 and log["questions"] == 1540
    assert len({i.id for i in items}) == len(items)
    assert [i.metadata["kind"] for i in items[:6]] == [*KINDS, *KINDS]  # question-major
    for kind in KINDS:
        of_kind = [i for i in items if i.metadata["kind"] == kind]
        sizes = {c: sum(i.metadata["category"] == c for i in of_kind) for c in CATEGORY_SIZES}
        assert sizes == CATEGORY_SIZES
    for i in items:
        assert i.metadata["cluster"] == i.metadata["conversation_id"]
        assert i.target == ("accept" if i.metadata["kind"] == "gold" else "reject")
        assert quoted_candidate(i.user) == i.metadata["candidate"]
        if i.metadata["kind"] == "gold":
            assert i.metadata["candidate"] == i.metadata["reference"]
            assert i.metadata["audit_verdicts"] is None


def _raw_audit(data_dir: Path, version: str) -> dict[str, Any]:
    path = data_dir / "locomo_audit" / "ap-baseline" / version / "ap_eval_results_scored.json"
    raw: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return raw


def test_audit_reference_acceptance_reproduces_the_published_rates(
    built: tuple[list[Any], dict[str, Any]], data_dir: Path
) -> None:
    items, _ = built
    scores = [
        SampleScore(score=Score(value={"accepted": 1.0, "unscored": 0}), sample_metadata=i.metadata)
        for i in items
    ]
    out = cast(MetricProtocol, judge_check_metrics())(scores)
    assert isinstance(out, dict)
    assert round(100 * out["specific_wrong_audit_accept"], 2) == 10.61
    assert round(100 * out["vague_wrong_audit_accept"], 2) == 62.81
    # the same as the files' own accuracy field
    assert out["specific_wrong_audit_accept"] == pytest.approx(
        _raw_audit(data_dir, "v1")["accuracy"]
    )
    assert out["vague_wrong_audit_accept"] == pytest.approx(_raw_audit(data_dir, "v2")["accuracy"])


# --- scripted graders, end to end ------------------------------------------------------------


def _reply_model(rule: Callable[[str], str]) -> Any:
    def grade(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        return ModelOutput.from_content("mockllm", rule(input[0].text))

    return get_model("mockllm/model", custom_outputs=grade)


def _verdict(ok: bool) -> str:
    return json.dumps({"label": "correct" if ok else "wrong", "reason": "scripted"})


def _exact(prompt: str) -> bool:
    return norm(quoted_candidate(prompt)) == norm(
        section(prompt, "Reference answer (ground truth)") or ""
    )


def _lenient(prompt: str) -> bool:
    ref = norm(section(prompt, "Reference answer (ground truth)") or "")
    return bool(ref) and set(ref.split()) <= set(norm(quoted_candidate(prompt)).split())


#: grader name -> (its rule on the prompt, the expected accepted value: 1, 0 or NaN)
GRADERS: dict[str, tuple[Callable[[str], str], Callable[[str], float]]] = {
    "accept_all": (lambda p: _verdict(True), lambda p: 1.0),
    "exact_gold": (lambda p: _verdict(_exact(p)), lambda p: float(_exact(p))),
    "lenient_rule": (lambda p: _verdict(_lenient(p)), lambda p: float(_lenient(p))),
    "unreadable": (lambda p: "The answer looks correct to me.", lambda p: math.nan),
}


def _expected(
    items: list[Any], rule: Callable[[str], float], audit: dict[str, dict[str, float]]
) -> dict[str, float]:
    """The metrics computed a second way, with numpy over the first LIMIT items; `audit` is
    wrong kind -> question id -> mean of the audit's three verdicts. A figure with nothing
    scored to compute it from is absent."""
    rows = [(i.metadata["kind"], i.metadata["category"], rule(i.user), i) for i in items[:LIMIT]]

    def rates(sub: list[Any]) -> dict[str, float]:
        out: dict[str, float] = {}
        for kind in KINDS:
            vals = np.array([v for k, _, v, _ in sub if k == kind], dtype=float)
            scored = vals[~np.isnan(vals)]
            if scored.size:
                out[kind] = float(scored.mean())
        return out

    def balanced(r: dict[str, float]) -> float | None:
        wrong = [k for k in ("specific_wrong", "vague_wrong") if k in r]
        if "gold" not in r or not wrong:
            return None
        return float(np.mean([np.mean([r["gold"], 1 - r[k]]) for k in wrong]))

    overall = rates(rows)
    out: dict[str, float] = {}
    if (b := balanced(overall)) is not None:
        out["balanced"] = b
    out |= {f"{k}_accept": v for k, v in overall.items()}
    for kind in ("specific_wrong", "vague_wrong"):
        ids = [i.metadata["question_id"] for k, _, _, i in rows if k == kind]
        if ids:
            out[f"{kind}_audit_accept"] = float(np.mean([audit[kind][q] for q in ids]))
    out["unscored"] = float(sum(np.isnan(v) for _, _, v, _ in rows))
    for c in sorted({r[1] for r in rows}):
        if (b := balanced(rates([r for r in rows if r[1] == c]))) is not None:
            out[f"{c}_balanced"] = b
    return out


def _audit_means(data_dir: Path, version: str) -> dict[str, float]:
    raw = _raw_audit(data_dir, version)["detailed_results"]
    return {
        r["question_id"]: float(np.mean(list(r["llm_judgments"].values())))
        for records in raw.values()
        for r in records
    }


def _metrics(log: EvalLog) -> dict[str, float]:
    assert log.status == "success", log.error
    assert log.results is not None
    return {k: m.value for k, m in log.results.scores[0].metrics.items()}


def _same(got: dict[str, float], want: dict[str, float]) -> None:
    assert list(got) == list(want)  # the order too: the headline first
    for key, value in want.items():
        assert got[key] == pytest.approx(value), key


@pytest.mark.parametrize("grader", list(GRADERS))
def test_scripted_grader_metrics_equal_a_second_computation(
    grader: str, built: tuple[list[Any], dict[str, Any]], data_dir: Path, tmp_path: Path
) -> None:
    items, _ = built
    reply, rule = GRADERS[grader]
    log = eval(
        judge_check(data_dir=str(data_dir)),
        model=_reply_model(reply),
        limit=LIMIT,
        display="none",
        log_dir=str(tmp_path),
    )[0]
    audit = {
        "specific_wrong": _audit_means(data_dir, "v1"),
        "vague_wrong": _audit_means(data_dir, "v2"),
    }
    _same(_metrics(log), _expected(items, rule, audit))
    if grader == "unreadable":  # one repair request, then unscored
        samples = read_eval_log(log.location).samples or []
        score = (samples[0].scores or {})["judge_check_scorer"]
        assert (score.metadata or {})["replies"] == ["The answer looks correct to me."] * 2
        assert score.reason == "grader_failed"


# --- the lenient criterion ---------------------------------------------------------------------


def test_lenient_criterion_is_separate_and_chosen_by_name(data_dir: Path) -> None:
    lenient = criterion_spec("lenient")
    JUDGE_CRITERIA = judge_criteria()
    assert "lenient" not in JUDGE_CRITERIA and COMPARISON_CRITERIA["lenient"] is lenient
    assert lenient.rule not in (JUDGE_CRITERIA["factual"].rule, JUDGE_CRITERIA["temporal"].rule)
    for category in CATEGORY_SIZES:
        assert criterion_for_locomo(category) in ("factual", "temporal")  # the default
        assert criterion_for_locomo(category, "lenient") == "lenient"
    assert criterion_for_locomo("adversarial", "lenient") == "adversarial"
    assert [criterion_under(c, "lenient") for c in ("factual", "temporal", "adversarial")] == [
        "lenient",
        "lenient",
        "adversarial",
    ]
    assert criterion_under("temporal", "default") == "temporal"
    with pytest.raises(ValueError, match="unknown judge criteria 'lax'"):
        criterion_for_locomo("temporal", "lax")

    task = judge_check(judge_criteria="lenient", data_dir=str(data_dir))
    samples = list(task.dataset)
    assert {s.metadata["criterion"] for s in samples if s.metadata} == {"lenient"}
    assert all(isinstance(s.input, list) and lenient.rule in s.input[0].text for s in samples[:9])
    default = judge_check(data_dir=str(data_dir))
    assert {s.metadata["criterion"] for s in default.dataset if s.metadata} == {
        "factual",
        "temporal",
    }
    with pytest.raises(ValueError, match="judge_criteria='lax'"):
        judge_check(judge_criteria="lax", data_dir=str(data_dir))


def test_gold_audited_skips_questions_whose_gold_is_wrong(data_dir: Path) -> None:
    audited = build(JudgeCheckOptions(gold="audited", data_dir=str(data_dir)))
    items, log = audited.items, audited.metadata
    skipped = {"multi_hop": 28, "temporal": 26, "open_domain": 9, "single_hop": 36}
    assert log["skipped_wrong_gold"] == skipped
    assert len(items) == 3 * (1540 - 99)
    # the share kept per category is the audit's ceiling (90.07, 91.90, 90.62, 95.72 %)
    for category, size in CATEGORY_SIZES.items():
        kept = sum(i.metadata["category"] == category for i in items) // 3
        assert kept == size - skipped[category]
    with pytest.raises(ValueError, match="gold='fixed'"):
        build(JudgeCheckOptions(gold="fixed"))


# --- the real CLI ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["memevals/judge_check", "judge_check"])
def test_cli_runs_under_both_names(inspect_cli: Any, tmp_path: Path, name: str) -> None:
    """mockllm's default reply is no verdict: every sample is unscored, none counted wrong."""
    res = inspect_cli(
        "eval",
        name,
        "--model",
        "mockllm/model",
        "--limit",
        "6",
        "--log-dir",
        "logs",
        "--display",
        "none",
    )
    assert res.returncode == 0, res.stderr
    log = read_eval_log(str(next((tmp_path / "logs").glob("*.eval"))))
    # nothing scored: the count and the audit's own reference rates, no NaN figure
    metrics = _metrics(log)
    assert list(metrics) == ["specific_wrong_audit_accept", "vague_wrong_audit_accept", "unscored"]
    assert metrics["unscored"] == 6.0


def test_cli_with_the_scripted_exact_grader(
    tmp_path: Path, built: tuple[list[Any], dict[str, Any]]
) -> None:
    res = run_python(
        [
            sys.executable,
            str(TESTS / "support" / "scripted_judge.py"),
            "eval",
            "memevals/judge_check",
            "-T",
            "judge_criteria=lenient",
            "--model",
            "scripted/strict",
            "--limit",
            "9",
            "--log-dir",
            "logs",
            "--display",
            "none",
        ],
        cwd=tmp_path,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    log = read_eval_log(str(next((tmp_path / "logs").glob("*.eval"))))
    metrics = _metrics(log)
    items, _ = built
    exact = [float(_exact(i.user)) for i in items[:9]]
    assert metrics["gold_accept"] == 1.0
    assert metrics["specific_wrong_accept"] == pytest.approx(np.mean(exact[1::3]))
    assert metrics["vague_wrong_accept"] == pytest.approx(np.mean(exact[2::3]))
    assert log.eval.task_args["judge_criteria"] == "lenient"

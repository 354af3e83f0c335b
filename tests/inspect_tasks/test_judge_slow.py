"""The real local SmolLM2 answers LoCoMo questions and judges them: the pipeline end to end.

A 135M model is a poor judge (it rarely writes the verdict JSON), so the numbers are not the
point: the run must complete with F1 and judge metrics in one log, every judge call must come
from the real grader role, and every sample must be either scored or explicitly unscored.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from inspect_ai import eval
from inspect_ai.model import GenerateConfig, get_model
from logged_figures import figures

from memevals.benchmarks import judge_criteria
from memevals.inspect_tasks.locomo import locomo

IDS = ["conv-26-q82", "conv-26-q152"]  # one single-hop question, one adversarial


@pytest.mark.slow
# torch on one thread: on a busy 2-core machine (xdist's two workers) a second thread waits
# for a core the other holds (docs/performance.md)
def test_smollm2_answers_and_judges(smollm2_dir: Path, data_dir: Path, tmp_path: Path) -> None:
    # one model instance in both roles; the grader role's own max_tokens bounds the judge
    model = get_model(
        "hf/local",
        model_path=str(smollm2_dir),
        device="cpu",
        do_sample=False,
        config=GenerateConfig(max_tokens=24),
    )
    task = locomo(
        categories="single_hop,adversarial",
        context="none",
        judge=True,
        max_tokens=8,
        protocol="memevals",  # our judge: strict JSON verdicts, unscored when unreadable
    )
    log = eval(
        task,
        model=model,
        model_roles={"grader": model},
        sample_id=IDS,
        display="none",
        log_dir=str(tmp_path),
    )[0]
    assert log.status == "success", log.error
    assert log.results is not None
    by_name = {s.name: s for s in log.results.scores}
    assert math.isfinite(by_name["locomo_f1_scorer"].metrics["mean"].value)
    # the judge is one result named by its scorer, counting every sample with a score dict
    judge = by_name["llm_judge"]
    assert (judge.scored_samples, judge.unscored_samples) == (len(IDS), 0)
    assert log.samples is not None
    unscored = sum(s.scores["llm_judge"].value["unscored"] for s in log.samples)  # type: ignore[index]
    m = figures(log)
    assert m[("unscored", "count")] == unscored
    judged = {figure for key, figure in m if key == "judge"}
    if unscored < len(IDS):
        assert {"mean", "stderr"} <= judged
    else:  # every verdict unreadable: no figure over no scored sample (never NaN)
        assert not judged
    assert all(math.isfinite(m.value) for s in log.results.scores for m in s.metrics.values())

    assert {str(s.id) for s in log.samples} == set(IDS)
    for sample in log.samples:
        assert sample.scores is not None
        score = sample.scores["llm_judge"]
        md = score.metadata or {}
        assert md["grader"].startswith("hf/") and md["grader_fallback"] is False
        replies = md["judge_replies"]
        assert 1 <= len(replies) <= 2 and all(isinstance(r, str) for r in replies)
        assert isinstance(score.value, dict)
        if md["label"] is None:
            assert math.isnan(score.value["judge"]) and score.value["unscored"] == 1
            assert score.explanation is not None and repr(replies[-1]) in score.explanation
        else:
            spec = judge_criteria()[md["criterion"]]
            assert score.value["judge"] == spec.scores[md["label"]]
    criteria = {str(s.id): s.scores["llm_judge"].metadata["criterion"] for s in log.samples}  # type: ignore[index]
    assert criteria == {"conv-26-q82": "factual", "conv-26-q152": "adversarial"}

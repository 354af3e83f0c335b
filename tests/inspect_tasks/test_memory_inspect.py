"""Memory strategies end to end on Inspect: every context mode through the real task, the
retrieval and prompt-size scorers, errors before any model call, one real-CLI run, and the real
SmolLM2 model on rag and oracle."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ModelOutput, get_model

from memevals.core.tokens import get_token_counter
from memevals.inspect_tasks.locomo import locomo, locomo_open_domain
from memevals.scorers import locomo_evidence_recall, turn_precision_recall


def _run(task: Any, tmp_path: Path, limit: int | None = 4, answer: str = "pottery") -> EvalLog:
    outputs = [ModelOutput.from_content("mockllm/model", answer)] * 500
    log = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        limit=limit,
        display="none",
        log_dir=str(tmp_path),
    )[0]
    assert log.status == "success", log.error
    return log


def _scores(log: EvalLog) -> dict[str, dict[str, float]]:
    assert log.results is not None
    # Inspect may prefix our metrics with the package name (`memevals/mean_prompt_tokens`).
    return {
        s.name: {k.rsplit("/", 1)[-1]: float(m.value) for k, m in s.metrics.items()}
        for s in log.results.scores
    }


@pytest.mark.parametrize(
    ("params", "scorers"),
    [
        ({"context": "full"}, {"locomo_f1_scorer", "prompt_tokens"}),
        ({"context": "none"}, {"locomo_f1_scorer", "prompt_tokens"}),
        (
            {"context": "truncated", "max_context_tokens": 1500},
            {"locomo_f1_scorer", "prompt_tokens"},
        ),
        (
            {"context": "rag", "top_k": 3},
            {"locomo_f1_scorer", "evidence_recall", "prompt_tokens"}
            | {"turn_precision", "turn_recall", "selected_k"},
        ),
        (
            {"context": "oracle"},
            {"locomo_f1_scorer", "evidence_recall", "prompt_tokens"}
            | {"turn_precision", "turn_recall", "selected_k"},
        ),
    ],
)
def test_every_mode_runs_end_to_end(
    params: dict[str, Any], scorers: set[str], tmp_path: Path, data_dir: Path
) -> None:
    log = _run(locomo(protocol="memevals", categories="multi_hop", **params), tmp_path)
    assert set(_scores(log)) == scorers
    assert log.eval.metadata is not None
    memory = log.eval.metadata["memory"]
    assert memory["context"] == params["context"]
    counter = get_token_counter()
    assert memory["token_counter"] == counter.name
    assert log.samples
    for sample in log.samples:
        assert sample.scores is not None
        f1 = sample.scores["locomo_f1_scorer"]
        assert f1.metadata is not None
        # the prompt size counts exactly the messages the model was sent
        sent = [m.text for m in sample.messages if m.role in ("system", "user")]
        assert f1.metadata["prompt_tokens"] == sum(counter(t) for t in sent)
        assert f1.metadata["token_counter"] == counter.name
        # one user message: the context (if any), a blank line, then the question
        assert [m.role for m in sample.messages if m.role != "assistant"] == ["user"]
        context, _, question = sent[0].rpartition("\n\nQuestion: ")
        assert question
        if params["context"] == "none":
            assert context == "" and sent[0].startswith("Question: ")
        elif params["context"] == "truncated":
            assert 0 < counter(context) <= 1500
        else:
            assert context
    counts = [s.scores["locomo_f1_scorer"].metadata["prompt_tokens"] for s in log.samples]  # type: ignore[index]
    metrics = _scores(log)["prompt_tokens"]
    assert metrics["mean"] == pytest.approx(sum(counts) / len(counts))
    assert metrics["total"] == sum(counts)


def test_prompt_tokens_scorer_counts_plain_samples(tmp_path: Path) -> None:
    """Without a stored count (tasks that do not annotate), the input messages are counted."""
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from inspect_ai.solver import generate

    from memevals.inspect_tasks.context_scorers import prompt_tokens

    cat = {"category": "demo"}  # every memevals sample has one (per-category metric)
    samples = [
        Sample(id="s", input="How many tokens is this question?", target="x", metadata=cat),
        Sample(
            id="m",
            input=[ChatMessageSystem(content="Some context."), ChatMessageUser(content="Why?")],
            target="y",
            metadata=cat,
        ),
    ]
    log = _run(Task(dataset=samples, solver=generate(), scorer=prompt_tokens()), tmp_path, None)
    counter = get_token_counter()
    assert log.samples is not None
    got = {str(s.id): s.scores["prompt_tokens"].value for s in log.samples if s.scores}
    assert got == {
        "s": counter("How many tokens is this question?"),
        "m": counter("Some context.") + counter("Why?"),
    }
    assert _scores(log)["prompt_tokens"]["total"] == got["s"] + got["m"]  # type: ignore[operator]


def test_retrieval_scores_per_sample_and_official_category_denominator(
    tmp_path: Path, data_dir: Path
) -> None:
    """Open-domain has 96 questions, 4 of them without evidence: official category recall is
    the sum over the 92 with evidence divided by 96."""
    log = _run(
        locomo_open_domain(protocol="memevals", context="rag", top_k=5), tmp_path, limit=None
    )
    assert log.samples is not None and len(log.samples) == 96
    total, skipped, precisions = 0.0, 0, []
    for sample in log.samples:
        assert sample.scores is not None
        recall = sample.scores["evidence_recall"]
        md = recall.metadata or {}
        retrieved, evidence = md["retrieved_ids"], md["evidence"]
        assert retrieved == sample.metadata["retrieved_ids"] and len(retrieved) == 5
        assert evidence == sample.metadata["evidence"]
        assert md["evidence_recall"] == locomo_evidence_recall(retrieved, evidence)
        if evidence:
            total += round(md["evidence_recall"], 3)
        else:
            skipped += 1
            assert recall.value == 0.0 and md["evidence_recall"] == 1.0
            assert math.isnan(float(sample.scores["turn_precision"].value))  # type: ignore[arg-type]
            continue
        pr = turn_precision_recall(retrieved, evidence)
        assert pr is not None
        assert sample.scores["turn_precision"].value == pr[0]
        assert sample.scores["turn_recall"].value == pr[1]
        assert sample.scores["selected_k"].value == len(set(retrieved))
        precisions.append(pr[0])
    assert skipped == 4
    scores = _scores(log)
    assert scores["evidence_recall"]["mean"] == pytest.approx(total / 96)
    assert scores["evidence_recall"]["open_domain"] == pytest.approx(total / 96)
    # HiGMem: questions without evidence are skipped (macro over the 92 others)
    assert scores["turn_precision"]["mean"] == pytest.approx(sum(precisions) / 92)
    assert log.results is not None
    tp = next(s for s in log.results.scores if s.name == "turn_precision")
    assert (tp.scored_samples, tp.unscored_samples) == (92, 4)
    assert scores["selected_k"]["mean"] == 5.0


def test_oracle_with_scripted_gold_answers(tmp_path: Path, data_dir: Path) -> None:
    """The oracle context holds only evidence turns; a model that answers the gold scores 1."""
    task = locomo(protocol="memevals", categories="single_hop", context="oracle")
    samples = list(task.dataset)[:3]
    outputs = [ModelOutput.from_content("mockllm/model", s.target) for s in samples]  # type: ignore[arg-type]
    log = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        limit=3,
        display="none",
        log_dir=str(tmp_path),
    )[0]
    assert log.samples is not None
    for sample in log.samples:
        assert sample.scores is not None
        assert sample.scores["locomo_f1_scorer"].value == 1.0
        assert sample.scores["evidence_recall"].value == 1.0
        system = sample.messages[0].text
        assert system.count(" said, ") == len(sample.metadata["retrieved_ids"])


def test_summary_rag_has_no_turn_metrics(tmp_path: Path, data_dir: Path) -> None:
    log = _run(
        locomo(
            protocol="memevals",
            categories="temporal",
            context="rag",
            retrieval_unit="summary",
            top_k=2,
        ),
        tmp_path,
    )
    assert set(_scores(log)) == {"locomo_f1_scorer", "evidence_recall", "prompt_tokens"}
    assert log.samples is not None
    for sample in log.samples:
        assert sample.scores is not None
        ids = sample.scores["evidence_recall"].metadata["retrieved_ids"]  # type: ignore[index]
        assert len(ids) == 2 and all(i.startswith("S") for i in ids)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"context": "rag", "top_k": 0}, "top_k must be an integer >= 1"),
        ({"context": "rag", "retrieval_unit": "event"}, "retrieval_unit='event'"),
        ({"context": "truncated", "max_context_tokens": 30}, "smaller than one turn"),
    ],
)
def test_bad_parameters_fail_before_any_model_call(
    params: dict[str, Any], message: str, tmp_path: Path, data_dir: Path
) -> None:
    calls: list[object] = []

    def output(*args: object) -> ModelOutput:
        calls.append(args)
        return ModelOutput.from_content("mockllm/model", "x")

    with pytest.raises(ValueError, match=message):
        inspect_eval(
            locomo(protocol="memevals", **params),
            model=get_model("mockllm/model", custom_outputs=output),
            limit=2,
            display="none",
            log_dir=str(tmp_path),
        )
    assert calls == []


def test_real_cli_rag_observation(inspect_cli: Any, tmp_path: Path, data_dir: Path) -> None:
    logs = tmp_path / "logs"
    proc = inspect_cli(
        "eval",
        "memevals/locomo",
        "--model",
        "mockllm/model",
        "-T",
        "context=rag",
        "-T",
        "retrieval_unit=observation",
        "-T",
        "top_k=10",
        "-T",
        "categories=temporal",
        "-T",
        "protocol=memevals",
        "--limit",
        "3",
        "--log-dir",
        str(logs),
        "--display",
        "none",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    [path] = list(logs.glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.status == "success"
    assert log.eval.task_args["retrieval_unit"] == "observation"
    assert log.eval.metadata is not None
    assert log.eval.metadata["memory"]["top_k"] == 10
    assert "evidence_recall" in _scores(log) and "turn_recall" in _scores(log)
    assert log.samples is not None
    for sample in log.samples:
        assert sample.scores is not None
        ids = sample.scores["evidence_recall"].metadata["retrieved_ids"]  # type: ignore[index]
        assert len(ids) >= 10  # observations may cover several dia ids each


def test_paper_rag_sweep_runs_as_one_eval_set(tmp_path: Path, data_dir: Path) -> None:
    """The README's sweep: one eval_set over memory settings, one log per setting."""
    from inspect_ai import eval_set

    grid = [("dialog", 5), ("observation", 10), ("summary", 2)]
    tasks = [locomo(protocol="memevals", context="none", categories="temporal")] + [
        locomo(protocol="memevals", context="rag", retrieval_unit=u, top_k=k, categories="temporal")
        for u, k in grid
    ]
    ok, logs = eval_set(
        tasks,
        log_dir=str(tmp_path / "sweep"),
        model=get_model("mockllm/model"),
        limit=2,
        display="none",
    )
    assert ok and len(logs) == 4
    settings = sorted(
        (str(lg.eval.task_args.get("retrieval_unit")), lg.eval.task_args.get("top_k"))
        for lg in logs
    )
    assert settings == [("None", None), ("dialog", 5), ("observation", 10), ("summary", 2)]
    assert all(lg.status == "success" for lg in logs)


@pytest.mark.slow
@pytest.mark.parametrize("params", [{"context": "rag", "top_k": 5}, {"context": "oracle"}])
# torch on one thread: on a busy 2-core machine (xdist's two workers) a second thread waits
# for a core the other holds (docs/performance.md)
def test_smollm2_rag_and_oracle(params: dict[str, Any], smollm2_dir: Path, tmp_path: Path) -> None:
    model = get_model("hf/local", model_path=str(smollm2_dir), device="cpu", do_sample=False)
    log = inspect_eval(
        locomo(protocol="memevals", categories="single_hop", max_tokens=16, **params),
        model=model,
        # one question: every check below is per sample or a mean over the samples, and each
        # sample's prompt (five retrieved turns, or the evidence) is most of the CPU time
        limit=1,
        display="none",
        log_dir=str(tmp_path),
    )[0]
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 1
    for sample in log.samples:
        assert sample.output.completion.strip()  # the model answered
        assert sample.scores is not None
        assert 0.0 <= float(sample.scores["locomo_f1_scorer"].value) <= 1.0  # type: ignore[arg-type]
        assert 0 < sample.scores["locomo_f1_scorer"].metadata["prompt_tokens"] < 8000  # type: ignore[index]
    scores = _scores(log)
    assert set(scores) >= {"evidence_recall", "turn_recall", "locomo_f1_scorer"}
    assert 0 < scores["prompt_tokens"]["mean"] < 8000
    if params["context"] == "oracle":
        assert scores["evidence_recall"]["mean"] == 1.0

"""Cross-framework consistency: the same replies scored through lm-eval and through Inspect.

A deterministic "model" answers from a table keyed by the exact prompt text. lm-eval gets it
as an LM subclass (TableLM); Inspect gets it as mockllm with a callable output. A prompt that
differs between the frameworks is not in the table and fails the run, so the test also
proves both frameworks send the same text. Then per-sample F1 must be identical and the
aggregates (per category and overall) equal.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lm_eval")

from inspect_ai.model import ModelOutput, get_model
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from lm_eval_support import TableLM, run_inspect

from memevals.core.prompt_item import PromptItem
from memevals.lm_eval_tasks import include_path

#: Questions per category taken by both frameworks (the first ones, in file order).
PER_CATEGORY = 6


def varied_reply(index: int, item: PromptItem) -> str:
    """Replies spanning the scoring paths: exact gold, partial, padded, wrong, letters, refusals."""
    gold = str(item.metadata.get("answer") or item.target)
    words = gold.split()
    choices = item.metadata.get("choices") or []
    kind = index % 7
    if kind == 0:
        return gold
    if kind == 1:
        return " ".join(words[: max(1, len(words) // 2)])
    if kind == 2:
        return f"I think it was {gold.lower()}, probably."
    if kind == 3:
        return "Not mentioned in the conversation."
    if kind == 4:
        return "(b)" if choices else "a completely unrelated reply"
    if kind == 5:
        return "a" if choices else ", ".join(reversed([p.strip() for p in gold.split(",")]))
    return "No information available"


def run_lm_eval(
    tasks: list[str], answers: dict[str, str], metadata: dict[str, Any], limit: int
) -> dict[str, Any]:
    lm = TableLM(answers)
    results = simple_evaluate(
        model=lm,
        tasks=tasks,
        task_manager=TaskManager(
            include_path=include_path(), include_defaults=False, metadata=metadata
        ),
        limit=limit,
        log_samples=True,
        bootstrap_iters=0,
    )
    assert results is not None
    assert lm.prompts, "lm-eval sent no prompts"
    return results


def lm_eval_sample_scores(results: dict[str, Any], metric: str) -> dict[str, float]:
    """Per-document values of `metric` (documents without it are left out)."""
    scores: dict[str, float] = {}
    for samples in results["samples"].values():
        for s in samples:
            if metric in s:
                scores[s["doc"]["id"]] = s[metric]
    return scores


@pytest.mark.parametrize(
    "options",
    [{"context": "full"}, {"context": "rag", "top_k": 5}],
    ids=["full", "rag"],
)
def test_locomo_scores_match_across_frameworks(
    options: dict[str, Any], data_dir: Path, tmp_path: Path
) -> None:
    from memevals.benchmarks.locomo import samples
    from memevals.benchmarks.locomo.data import CATEGORY_NAMES
    from memevals.core.memory_options import MemoryOptions
    from memevals.inspect_tasks.locomo import locomo

    # The first PER_CATEGORY questions of each category, as lm-eval's --limit takes them.
    # the default protocol (official): upstream's messages, its two-option rule
    items = samples.build(samples.LocomoOptions(memory=MemoryOptions(**options))).items
    chosen: list[PromptItem] = []
    for name in CATEGORY_NAMES.values():
        chosen += [i for i in items if i.metadata["category"] == name][:PER_CATEGORY]
    answers = {item.as_text(): varied_reply(n, item) for n, item in enumerate(chosen)}

    lm_results = run_lm_eval(["locomo"], answers, options, PER_CATEGORY)
    lm_f1 = lm_eval_sample_scores(lm_results, "f1")
    ids = [i.id for i in chosen]
    assert sorted(lm_f1) == sorted(ids)

    log = run_inspect(locomo(**options), answers, tmp_path, ids)
    inspect_f1 = {str(s.id): s.scores["locomo_f1_scorer"].value for s in log.samples}
    assert inspect_f1 == lm_f1  # identical per sample, not approximately
    # one prompt size per sample, the same in both frameworks
    inspect_tokens = {
        str(s.id): s.scores["locomo_f1_scorer"].metadata["prompt_tokens"] for s in log.samples
    }
    assert lm_eval_sample_scores(lm_results, "prompt_tokens") == inspect_tokens

    # The replies really exercise the score: several distinct values, not all 0 or 1.
    assert len(set(lm_f1.values())) >= 4

    metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    for name in CATEGORY_NAMES.values():
        lm_value = lm_results["results"][f"locomo_{name}"]["f1,none"]
        assert lm_value == pytest.approx(metrics[name], abs=1e-12), name
    overall = lm_results["groups"]["locomo"]["f1,none"]
    assert overall == pytest.approx(metrics["mean"], abs=1e-12)
    assert overall == pytest.approx(sum(lm_f1.values()) / len(lm_f1), abs=1e-12)

    if options["context"] != "rag":
        return
    # Retrieval: the same ids reach the same official rules in both frameworks (Inspect leaves
    # the HiGMem metrics unscored, NaN, where lm-eval leaves them out).
    for name in ("evidence_recall", "turn_precision", "turn_recall", "selected_k"):
        lm_values = lm_eval_sample_scores(lm_results, name)
        inspect_values = {
            str(s.id): s.scores[name].value
            for s in log.samples
            if not math.isnan(float(s.scores[name].value))
        }
        assert lm_values == inspect_values, name
        assert len(lm_values) >= len(ids) - 1, name
    recalls = lm_eval_sample_scores(lm_results, "evidence_recall")
    assert len(set(recalls.values())) >= 2
    by_name = {s.name: s for s in log.results.scores}
    assert lm_results["groups"]["locomo"]["evidence_recall,none"] == pytest.approx(
        by_name["evidence_recall"].metrics["mean"].value, abs=1e-12
    )


def grader_verdicts() -> Any:
    """A grader that always answers with a readable verdict (the Plus task always judges)."""
    verdict = '{"label": "correct", "reason": "scripted grader"}'
    return get_model(
        "mockllm/model",
        custom_outputs=lambda *_: ModelOutput.from_content(model="mockllm/model", content=verdict),
    )


def test_locomo_plus_factual_scores_match_across_frameworks(data_dir: Path, tmp_path: Path) -> None:
    from memevals.benchmarks.locomo.data import CATEGORY_NAMES
    from memevals.benchmarks.locomo_plus import samples
    from memevals.core.memory_options import MemoryOptions
    from memevals.inspect_tasks.locomo_plus import locomo_plus

    factual = list(CATEGORY_NAMES.values())
    items = samples.build(
        samples.LocomoPlusOptions(
            protocol="memevals",
            categories=",".join(factual),
            memory=MemoryOptions(context="oracle"),
        )
    ).items
    chosen: list[PromptItem] = []
    for name in factual:
        chosen += [i for i in items if i.metadata["category"] == name][:PER_CATEGORY]
    answers = {item.as_text(): varied_reply(n + 3, item) for n, item in enumerate(chosen)}

    tasks = [f"locomo_plus_{name}" for name in factual]
    metadata = {"context": "oracle", "protocol": "memevals"}  # oracle is memevals' own
    lm_results = run_lm_eval(tasks, answers, metadata, PER_CATEGORY)
    lm_f1 = lm_eval_sample_scores(lm_results, "f1")
    ids = [i.id for i in chosen]
    assert sorted(lm_f1) == sorted(ids)

    log = run_inspect(
        locomo_plus(categories=",".join(factual), context="oracle", protocol="memevals"),
        answers,
        tmp_path,
        ids,
        roles={"grader": grader_verdicts()},
    )
    inspect_f1 = {str(s.id): s.scores["locomo_plus_f1"].value for s in log.samples}
    assert inspect_f1 == lm_f1
    inspect_tokens = {
        str(s.id): s.scores["locomo_plus_f1"].metadata["prompt_tokens"] for s in log.samples
    }
    assert lm_eval_sample_scores(lm_results, "prompt_tokens") == inspect_tokens
    assert len(set(lm_f1.values())) >= 3

    scores = {s.name: s for s in log.results.scores}
    metrics = {k: v.value for k, v in scores["locomo_plus_f1"].metrics.items()}
    for name in factual:
        lm_value = lm_results["results"][f"locomo_plus_{name}"]["f1,none"]
        assert lm_value == pytest.approx(metrics[name], abs=1e-12), name
    assert sum(lm_f1.values()) / len(lm_f1) == pytest.approx(metrics["mean"], abs=1e-12)

"""Repeated judging (`judge_runs=N`): a scripted grader that disagrees with itself on known
samples, keyed on (sample, seed); the mean, the majority label, raw agreement and Fleiss' kappa
must equal hand computation (and statsmodels), every run must reach the grader (distinct seeds,
no cache hit between runs), and `judge_runs=1` must leave a run exactly as it was."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_support import run_python
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalLog
from inspect_ai.model import CachePolicy, ChatMessage, GenerateConfig, ModelOutput, get_model
from inspect_ai.solver import generate
from logged_figures import figures
from scripted_judge import quoted_candidate
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from memevals.core.agreement import fleiss_kappa, repeated_agreement
from memevals.inspect_tasks.judge_scorer import llm_judge, majority_label

TESTS = Path(__file__).resolve().parents[1]
GARBLED = "I would say it is mostly right."  # no JSON object: an unreadable verdict

FACTUAL = {"criterion": "factual", "question": "Q?", "reference": "gold"}
TEMPORAL = {"criterion": "temporal", "question": "When?", "reference": "May 2023"}

#: candidate (the sample's echoed input) -> (category, judge inputs, label of run 1, 2, 3);
#: None = unreadable in that run (both attempts), "retry:<label>" = unreadable, then <label>.
TABLE: dict[str, tuple[str, dict[str, Any], list[str | None]]] = {
    "s1": ("multi_hop", FACTUAL, ["correct", "correct", "correct"]),
    "s2": ("multi_hop", FACTUAL, ["correct", "retry:wrong", "correct"]),
    "s3": ("multi_hop", FACTUAL, ["partial", "wrong", "correct"]),
    "s4": ("temporal", TEMPORAL, ["wrong", "wrong", "wrong"]),
    "s5": ("temporal", TEMPORAL, ["correct", None, "wrong"]),
    "s6": ("temporal", TEMPORAL, [None, None, None]),
}


def echo_answerer() -> Any:
    def answer(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        return ModelOutput.from_content("mockllm", input[-1].text)

    return get_model("mockllm/model", custom_outputs=answer)


def table_grader(calls: list[tuple[str, int | None, int]], base: int = 0, **kw: Any) -> Any:
    """Answers by TABLE[candidate][seed - base]; records (candidate, seed, attempt)."""

    def grade(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        cand = quoted_candidate(input[0].text)
        attempt = (len(input) - 1) // 2
        calls.append((cand, config.seed, attempt))
        assert config.seed is not None
        label = TABLE[cand][2][config.seed - base]
        if label is not None and label.startswith("retry:"):
            label = None if attempt == 0 else label.removeprefix("retry:")
        content = GARBLED if label is None else json.dumps({"label": label, "reason": "table"})
        return ModelOutput.from_content("mockllm", content)

    return get_model("mockllm/model", custom_outputs=grade, memoize=False, **kw)


def table_task(**judge_args: Any) -> Task:
    samples = [
        Sample(id=sid, input=sid, target="", metadata={"category": cat, "judge": judge})
        for sid, (cat, judge, _) in TABLE.items()
    ]
    return Task(
        dataset=MemoryDataset(samples, shuffled=False),
        solver=generate(),
        scorer=llm_judge(**judge_args),
    )


def run(task: Task, tmp_path: Path, grader: Any) -> EvalLog:
    log = eval(
        task,
        model=echo_answerer(),
        model_roles={"grader": grader},
        display="none",
        log_dir=str(tmp_path / "logs"),
    )[0]
    assert log.status == "success", log.error
    return log


def metrics(log: EvalLog) -> dict[str, float]:
    """The judge key's logged figures, by figure name."""
    return {figure: v for (key, figure), v in figures(log).items() if key == "judge"}


def by_id(log: EvalLog) -> dict[str, Any]:
    return {str(s.id): s.scores["llm_judge"] for s in log.samples or []}  # type: ignore[index]


# Hand computation. Readable verdicts: s1 c,c,c; s2 c,w,c; s3 p,w,c; s4 w,w,w; s5 c,w; s6 none.
MEANS = {"s1": 1.0, "s2": 2 / 3, "s3": 0.5, "s4": 0.0, "s5": 0.5}
MAJORITY = {"s1": "correct", "s2": "correct", "s3": "wrong", "s4": "wrong", "s5": "wrong"}
# Fleiss over s1-s4 (s5 has an unreadable run): P_i = 1, 1/3, 0, 1 -> P = 7/12; label shares
# c 6/12, p 1/12, w 5/12 -> P_e = 62/144 = 31/72; kappa = (7/12 - 31/72) / (41/72) = 11/41.
KAPPA = 11 / 41
# multi_hop (s1-s3): P = 4/9; shares c 2/3, p 1/9, w 2/9 -> P_e = 41/81; kappa = -5/40.
KAPPA_MULTI_HOP = -1 / 8


def test_mean_majority_and_agreement_equal_hand_computation(tmp_path: Path) -> None:
    calls: list[tuple[str, int | None, int]] = []
    log = run(table_task(judge_runs=3), tmp_path, table_grader(calls))
    scores = by_id(log)
    for sid, mean in MEANS.items():
        assert scores[sid].value == {"judge": pytest.approx(mean, abs=1e-15), "unscored": 0}
        md = scores[sid].metadata
        assert md["label"] == MAJORITY[sid]
        assert md["judge_runs"] == 3 and md["judge_seeds"] == [0, 1, 2]
        expected = [x.removeprefix("retry:") if x else None for x in TABLE[sid][2]]
        assert md["judge_labels"] == expected
        assert len(md["judge_replies"]) == 3
    assert scores["s2"].metadata["judge_replies"][1][0] == GARBLED  # retried within its run
    s6 = scores["s6"]
    assert math.isnan(s6.value["judge"]) and s6.value["unscored"] == 1
    assert s6.metadata["label"] is None and s6.metadata["judge_labels"] == [None] * 3

    m = metrics(log)
    assert m["mean"] == pytest.approx(sum(MEANS.values()) / 5, abs=1e-12)  # s6 left out
    assert m["judge_runs"] == 3 and m["judge_compared"] == 4 and m["judge_incomplete"] == 1
    assert m["judge_agreement"] == 0.5
    assert m["judge_kappa"] == pytest.approx(KAPPA, abs=1e-12)
    assert m["judge_multi_hop_agreement"] == pytest.approx(1 / 3, abs=1e-12)
    assert m["judge_multi_hop_kappa"] == pytest.approx(KAPPA_MULTI_HOP, abs=1e-12)
    assert m["judge_temporal_agreement"] == 1.0
    assert "judge_temporal_kappa" not in m  # one label only: kappa undefined, not reported

    # every run reached the grader with its own seed; unreadable runs retried once
    per_sample = {sid: sorted((s, a) for c, s, a in calls if c == sid) for sid in TABLE}
    assert per_sample["s1"] == [(0, 0), (1, 0), (2, 0)]
    assert per_sample["s2"] == [(0, 0), (1, 0), (1, 1), (2, 0)]
    assert per_sample["s6"] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]


def test_kappa_equals_statsmodels_on_the_count_table() -> None:
    ratings = [
        ["correct"] * 3,
        ["correct", "wrong", "correct"],
        ["partial", "wrong", "correct"],
        ["wrong"] * 3,
    ]
    # rows: items, columns: correct, partial, wrong
    counts = np.array([[3, 0, 0], [2, 0, 1], [1, 1, 1], [0, 0, 3]])
    assert fleiss_kappa(ratings) == pytest.approx(float(sm_fleiss_kappa(counts)), abs=1e-15)
    assert fleiss_kappa(ratings) == pytest.approx(KAPPA, abs=1e-15)
    result = repeated_agreement([*ratings, ["correct", None, "wrong"]])
    assert (result.items, result.incomplete, result.agree) == (4, 1, 0.5)
    assert fleiss_kappa([["yes", "yes"], ["yes", "yes"]]) is None
    assert fleiss_kappa([]) is None
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([["a", "b"], ["a"]])


def test_majority_tie_goes_to_the_lower_score() -> None:
    scores = {"correct": 1.0, "partial": 0.5, "wrong": 0.0}
    assert majority_label(["correct", "wrong"], scores) == "wrong"
    assert majority_label(["correct", "partial", "correct"], scores) == "correct"
    assert majority_label(["partial", "correct"], scores) == "partial"


def test_grader_seed_is_the_base_and_runs_miss_each_others_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With caching on, the N runs still all reach the grader (the seed is in the cache key);
    judging again is answered wholly from the cache, with the same verdicts."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    config = GenerateConfig(seed=10, cache=CachePolicy(expiry=None))
    calls: list[tuple[str, int | None, int]] = []
    first = run(table_task(judge_runs=3), tmp_path, table_grader(calls, base=10, config=config))
    assert {s for _, s, _ in calls} == {10, 11, 12}
    assert len([c for c in calls if c[0] == "s1"]) == 3
    n = len(calls)
    second = run(table_task(judge_runs=3), tmp_path, table_grader(calls, base=10, config=config))
    assert len(calls) == n
    assert metrics(second) == metrics(first)


def test_judge_runs_below_one_is_an_error_naming_the_option() -> None:
    from memevals.inspect_tasks.locomo import locomo
    from memevals.inspect_tasks.locomo_plus import locomo_plus
    from memevals.inspect_tasks.longmemeval import longmemeval

    for bad in (0, -2):
        with pytest.raises(ValueError, match="judge_runs"):
            llm_judge(judge_runs=bad)
    with pytest.raises(ValueError, match="judge_runs"):
        locomo(judge=True, judge_runs=0)
    with pytest.raises(ValueError, match="judge_runs"):
        locomo_plus(judge_runs=0)
    fixtures = str(TESTS / "fixtures")
    with pytest.raises(ValueError, match="judge_runs"):
        longmemeval(variant="oracle", data_dir=fixtures, verify_checksum=False, judge_runs=0)


def _single_run_grader(calls: list[Any]) -> Any:
    def grade(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        calls.append(config)
        label = TABLE[quoted_candidate(input[0].text)][2][0]
        content = GARBLED if label is None else json.dumps({"label": label, "reason": "table"})
        return ModelOutput.from_content("mockllm", content)

    return get_model("mockllm/model", custom_outputs=grade, memoize=False)


def test_one_run_is_todays_judge(tmp_path: Path) -> None:
    """judge_runs=1: no seed, no extra metadata or metrics, and the same scores, metrics and
    logged scorer arguments as the judge without the option."""
    calls_a: list[Any] = []
    calls_b: list[Any] = []
    a = run(table_task(), tmp_path / "a", _single_run_grader(calls_a))
    b = run(table_task(judge_runs=1), tmp_path / "b", _single_run_grader(calls_b))
    assert all(c.seed is None for c in calls_a + calls_b)
    assert len(calls_a) == len(calls_b)
    sa, sb = by_id(a), by_id(b)
    for sid in TABLE:
        assert sa[sid].model_dump_json() == sb[sid].model_dump_json()
        assert "judge_labels" not in sa[sid].metadata
    assert metrics(a) == metrics(b)
    assert not [k for k in metrics(a) if k.startswith("judge_")]


def test_locomo_task_option_and_rejudging_with_inspect_score(
    data_dir: Path, tmp_path: Path
) -> None:
    """`locomo -T judge_runs=1` logs the judge as before; `inspect score -S judge_runs=3` (the
    real CLI, scripted grader) re-judges the log three times per sample."""
    from memevals.inspect_tasks.locomo import locomo

    def answer(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        return ModelOutput.from_content("mockllm", "May 2023")

    logs = []
    runs_options: list[dict[str, Any]] = [{}, {"judge_runs": 1}]
    for kwargs in runs_options:
        [log] = eval(
            locomo(
                categories="temporal", context="none", judge=True, protocol="memevals", **kwargs
            ),
            model=get_model("mockllm/model", custom_outputs=answer),
            model_roles={"grader": "mockllm/model"},
            limit=4,
            display="none",
            log_dir=str(tmp_path / "logs"),
        )
        assert log.status == "success", log.error
        logs.append(log)
    assert logs[0].eval.scorers == logs[1].eval.scorers  # same scorer arguments logged
    assert logs[0].results is not None and logs[1].results is not None
    assert logs[0].results.scores == logs[1].results.scores

    cli = run_python(
        [
            sys.executable, str(TESTS / "support" / "scripted_judge.py"), "score", logs[0].location,
            "--scorer", "memevals/llm_judge", "-S", "judge_runs=3",
            "--model-role", "grader=scripted/strict", "--action", "overwrite",
            "--output-file", str(tmp_path / "rejudged.eval"), "--display", "none",
        ],
        timeout=600, cwd=TESTS.parent,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr[-3000:]
    from inspect_ai.log import read_eval_log

    rescored = read_eval_log(str(tmp_path / "rejudged.eval"))
    assert rescored.results is not None
    assert [s.name for s in rescored.results.scores].count("llm_judge") == 1
    m = metrics(rescored)
    assert m["judge_runs"] == 3 and m["judge_compared"] == 4 and m["judge_agreement"] == 1.0
    for sample in rescored.samples or []:
        assert sample.scores is not None
        md = sample.scores["llm_judge"].metadata or {}
        assert md["judge_seeds"] == [0, 1, 2] and len(set(md["judge_labels"])) == 1


def test_compare_shows_runs_and_agreement_beside_the_judge(tmp_path: Path) -> None:
    from memevals.tools.compare import markdown_tables, row_from_log, write_csv

    repeated = run(table_task(judge_runs=3), tmp_path / "r", table_grader([]))
    single = run(table_task(), tmp_path / "s", _single_run_grader([]))
    rows = [row_from_log(repeated, "repeated.eval"), row_from_log(single, "single.eval")]
    assert rows[0] is not None and rows[1] is not None
    figures = rows[0].kinds["judge"].repeated
    assert figures["runs"] == 3 and figures["agreement"] == 0.5
    assert figures["kappa"] == pytest.approx(KAPPA, abs=1e-12)
    assert figures["multi_hop_kappa"] == pytest.approx(KAPPA_MULTI_HOP, abs=1e-12)
    assert rows[1].kinds["judge"].repeated == {}
    assert not [e for e in rows[0].kinds["judge"].extras if "agreement" in e or "kappa" in e]

    table = markdown_tables([r for r in rows if r is not None], wide=True)
    header = next(line for line in table.splitlines() if line.startswith("| model"))
    titles = [t.strip() for t in header.strip("|").split("|")]
    at = titles.index("judge runs")
    assert titles[at : at + 3] == ["judge runs", "judge agreement", "judge kappa"]
    assert titles.index("judge") < at < titles.index("judge multi_hop")
    body = [line for line in table.splitlines() if line.startswith("| mockllm")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in body]
    assert [c[at : at + 3] for c in cells] == [["3", "0.500", f"{KAPPA:.3f}"], ["", "", ""]]

    write_csv([r for r in rows if r is not None], tmp_path / "c.csv")
    header_csv = (tmp_path / "c.csv").read_text().splitlines()[0].split(",")
    assert {"judge_runs", "judge_agreement", "judge_kappa", "judge_multi_hop_agreement"} <= set(
        header_csv
    )


def test_lm_eval_rejudging_takes_judge_runs(data_dir: Path, tmp_path: Path) -> None:
    """`python -m memevals.tools.judge ... -S judge_runs=3` (and --judge-runs) judges each reply
    three times; the summary file records N."""
    pytest.importorskip("lm_eval")
    from lm_eval_support import write_lm_eval_samples

    from memevals.benchmarks.locomo.data import load_locomo
    from memevals.benchmarks.locomo.memory import no_context
    from memevals.benchmarks.locomo.prompts import build_items
    from memevals.tools.judge import main

    items = [
        i for i in build_items(load_locomo(), context=no_context, context_mode="none")
        if i.metadata["category"] == "temporal"
    ][:3]  # fmt: skip
    answers = {i.as_text(): str(i.metadata["answer"]) for i in items}
    run_dir = write_lm_eval_samples(
        ["locomo_temporal"],
        answers,
        {"context": "none", "protocol": "memevals"},
        tmp_path / "out",
        3,
    )
    base = [str(run_dir), "--grader", "scripted/strict", "--no-cache"]
    assert main([*base, "-S", "judge_runs=3", "--log-dir", str(tmp_path / "l1")]) == 0
    summary = json.loads((run_dir / "judge_locomo.json").read_text())
    assert summary["judge_runs"] == 3
    m = {r["metric"].removeprefix("memevals/"): r["value"] for r in summary["metrics"]}
    assert m["judge_runs"] == 3 and m["judge_compared"] == 3 and m["judge_agreement"] == 1.0
    rows = [json.loads(x) for x in (run_dir / "judge_locomo.jsonl").read_text().splitlines()]
    assert [r["llm_judge"]["judge"] for r in rows] == [1.0, 1.0, 1.0]
    with pytest.raises(SystemExit):
        main([*base, "-S", "judge_runs=0"])
    with pytest.raises(SystemExit):
        main([*base, "-S", "criteria=lenient"])
    with pytest.raises(SystemExit):
        main([*base, "--judge-runs", "2", "-S", "judge_runs=3"])


def test_rejudging_under_the_lenient_criteria(tmp_path: Path) -> None:
    """`llm_judge(criteria="lenient")` (`-S criteria=lenient`) sends each sample the prompt of
    its criterion under the lenient rule; the default sends the sample's own criterion."""
    from memevals.core.criteria_judge import JudgeInput, criterion_under, judge_prompt

    def prompts_sent(**judge_args: Any) -> dict[str, str]:
        seen: dict[str, str] = {}

        def grade(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
            seen[quoted_candidate(input[0].text)] = input[0].text
            return ModelOutput.from_content("mockllm", json.dumps({"label": "correct"}))

        grader = get_model("mockllm/model", custom_outputs=grade, memoize=False)
        run(table_task(**judge_args), tmp_path / str(len(judge_args)), grader)
        return seen

    default, lenient = prompts_sent(), prompts_sent(criteria="lenient")
    for sid, (_, judge, _) in TABLE.items():
        own = judge_prompt(JudgeInput.from_metadata(judge, sid))
        relaxed = {**judge, "criterion": criterion_under(judge["criterion"], "lenient")}
        assert relaxed["criterion"] == "lenient"  # factual and temporal both become lenient
        assert default[sid] == own
        assert lenient[sid] == judge_prompt(JudgeInput.from_metadata(relaxed, sid))
        assert lenient[sid] != own
    with pytest.raises(ValueError, match="unknown judge criteria 'lax'"):
        llm_judge(criteria="lax")

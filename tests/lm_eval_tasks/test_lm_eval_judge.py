"""`python -m memevals.tools.judge`: lm-eval --log_samples output judged by the memevals LLM judge.

The samples files are written by lm-eval's own EvaluationTracker (the code its CLI uses), the
grader is scripted (tests/support/scripted_judge.py rules), and the verdicts and aggregate tables
must
equal those of the Inspect task judging the same replies with the same grader.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lm_eval")

from cli_support import run_python
from inspect_ai.model import ChatMessage, ModelOutput, get_model
from lm_eval_support import run_inspect, samples_of, write_lm_eval_samples
from logged_figures import figures
from scripted_judge import quoted_candidate, scripted_verdict

from memevals.benchmarks.locomo.memory import no_context
from memevals.core.prompt_item import PromptItem
from memevals.results.lm_eval_samples import SamplesError
from memevals.results.posthoc_judging import judge_samples

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
UNREADABLE = "zzz"  # a reply containing this gets an unreadable verdict (-> unscored)

# The LoCoMo and LoCoMo-Plus tables here are of the memevals judge (protocol=memevals); the
# official judge's: tests/benchmarks/locomo
MEMEVALS_NONE = {"context": "none", "protocol": "memevals"}
MEMEVALS_ORACLE = {"context": "oracle", "protocol": "memevals"}


def grader(calls: list[str] | None = None) -> Any:
    """The scripted lenient judge, except that candidates containing UNREADABLE get prose."""

    def reply(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        prompt = messages[0].text
        if calls is not None:
            calls.append(prompt)
        if UNREADABLE in quoted_candidate(prompt):
            content = "I think this one is probably fine."
        else:
            content = scripted_verdict(prompt, "lenient")
        return ModelOutput.from_content(model="mockllm/model", content=content)

    return get_model("mockllm/model", custom_outputs=reply, memoize=False)


def replies_for(items: list[PromptItem], pick: Callable[[int, PromptItem], str]) -> dict[str, str]:
    return {item.as_text(): pick(n, item) for n, item in enumerate(items)}


def reply_mix(n: int, item: PromptItem) -> str:
    gold = str(item.metadata.get("answer") or item.target)
    return [gold, f"I believe {gold}", "Not mentioned in the conversation", "no idea", UNREADABLE][
        n % 5
    ]


def judged(value: Any) -> float:
    """The judge value of a score (dict for llm_judge-style scorers), NaN when unscored."""
    v = value["judge"] if isinstance(value, dict) else value
    return math.nan if v is None else float(v)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def metrics_of(log: Any, key: str) -> dict[str, float]:
    """The logged figures of a dict score's key (`judge`, `unscored`), or of a result with
    plain rows (`locomo_f1_scorer`), by figure name (tests/support/logged_figures.py)."""
    return {figure: v for (k, figure), v in figures(log).items() if k == key}


def result_names(log: Any) -> list[str]:
    return [s.name for s in log.results.scores]


def assert_same_metrics(a: dict[str, float], b: dict[str, float]) -> None:
    assert a and a.keys() == b.keys()
    for k in a:
        assert same(float(a[k]), float(b[k])) or a[k] == pytest.approx(b[k], abs=1e-12), k


def test_locomo_verdicts_and_table_equal_the_inspect_task(data_dir: Path, tmp_path: Path) -> None:
    from memevals.benchmarks.locomo.data import CATEGORY_NAMES, load_locomo
    from memevals.benchmarks.locomo.prompts import build_items
    from memevals.inspect_tasks.locomo import locomo

    per_category = 4
    items = build_items(load_locomo(), context=no_context, context_mode="none")
    chosen = [
        i for name in CATEGORY_NAMES.values() for i in
        [x for x in items if x.metadata["category"] == name][:per_category]
    ]  # fmt: skip
    answers = replies_for(chosen, reply_mix)
    run_dir = write_lm_eval_samples(
        ["locomo"], answers, MEMEVALS_NONE, tmp_path / "out", per_category
    )

    [run] = judge_samples(
        [run_dir], grader(), cache=False, log_dir=str(tmp_path / "logs"), output_dir=tmp_path
    )
    log = run_inspect(
        locomo(context="none", judge=True, protocol="memevals"),
        answers,
        tmp_path / "inspect",
        [i.id for i in chosen],
        roles={"grader": grader()},
    )

    posthoc = {str(s.id): s.scores for s in run.log.samples}
    direct = {str(s.id): s.scores for s in log.samples}
    assert posthoc.keys() == direct.keys() == {i.id for i in chosen}
    for sid in direct:
        assert same(judged(posthoc[sid]["llm_judge"].value), judged(direct[sid]["llm_judge"].value))
        assert (
            posthoc[sid]["llm_judge"].metadata["label"]
            == direct[sid]["llm_judge"].metadata["label"]
        )
        assert posthoc[sid]["locomo_f1_scorer"].value == direct[sid]["locomo_f1_scorer"].value
    values = [judged(s["llm_judge"].value) for s in posthoc.values()]
    assert 0 < sum(math.isnan(v) for v in values) < len(values)  # some unscored, not all
    assert {0.0, 1.0} <= {v for v in values if not math.isnan(v)}

    # the judge is one result, named by its scorer, in both logs
    assert {"llm_judge", "locomo_f1_scorer"} <= set(result_names(log))
    assert {"llm_judge", "locomo_f1_scorer"} <= set(result_names(run.log))
    for key in ("judge", "unscored", "locomo_f1_scorer"):
        assert_same_metrics(metrics_of(run.log, key), metrics_of(log, key))

    # the files written for the user
    rows = [json.loads(x) for x in (tmp_path / "judge_locomo.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [str(s.id) for s in run.log.samples]
    assert {r["lm_eval_task"] for r in rows} == {f"locomo_{c}" for c in CATEGORY_NAMES.values()}
    unscored_rows = [r for r in rows if r["llm_judge"]["unscored"] == 1]
    assert unscored_rows and all(
        r["label"] is None and r["llm_judge"]["judge"] is None for r in unscored_rows
    )
    summary = json.loads((tmp_path / "judge_locomo.json").read_text())
    assert summary["samples"] == len(chosen)
    assert summary["lm_eval_model"] == "TableLM"
    assert summary["grader"] == "mockllm/model"


def test_longmemeval_table_equals_the_inspect_task(tmp_path: Path) -> None:
    from memevals.benchmarks.longmemeval.samples import LongMemEvalOptions, build
    from memevals.core.memory_options import MemoryOptions
    from memevals.inspect_tasks.longmemeval import longmemeval

    items = build(
        LongMemEvalOptions(
            variant="oracle",
            memory=MemoryOptions("oracle"),
            data_dir=str(FIXTURES),
            verify_checksum=False,
            protocol="memevals",
        )
    ).items
    answers = replies_for(items, reply_mix)
    options = {
        "data_dir": str(FIXTURES),
        "verify_checksum": False,
        "context": "oracle",
        "protocol": "memevals",  # our judge; the official one: tests/benchmarks/longmemeval
    }
    # the abstention task repeats the _abs questions of the group: judged once
    run_dir = write_lm_eval_samples(
        ["longmemeval_oracle", "longmemeval_oracle_abstention"], answers, options,
        tmp_path / "out", None,
    )  # fmt: skip
    [run] = judge_samples([run_dir], grader(), cache=False, log_dir=str(tmp_path / "logs"))
    log = run_inspect(
        longmemeval(
            variant="oracle",
            context="oracle",
            data_dir=str(FIXTURES),
            verify_checksum=False,
            protocol="memevals",
        ),
        answers,
        tmp_path / "inspect",
        roles={"grader": grader()},
    )
    assert len(run.log.samples) == len(log.samples) == len(items)
    assert_same_metrics(metrics_of(run.log, "judge"), metrics_of(log, "judge"))
    assert_same_metrics(metrics_of(run.log, "unscored"), metrics_of(log, "unscored"))
    names = set(metrics_of(log, "judge"))
    assert {"overall_accuracy", "task_averaged_accuracy", "abstention_accuracy"} <= names
    assert not math.isnan(metrics_of(run.log, "judge")["abstention_accuracy"])
    assert (run_dir / "judge_longmemeval.jsonl").is_file()


def test_grader_calls_are_cached(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memevals.benchmarks.locomo.data import load_locomo
    from memevals.benchmarks.locomo.prompts import build_items

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    items = [
        i for i in build_items(load_locomo(), context=no_context, context_mode="none")
        if i.metadata["category"] == "single_hop"
    ][:3]  # fmt: skip
    answers = {i.as_text(): str(i.metadata["answer"]) for i in items}
    run_dir = write_lm_eval_samples(
        ["locomo_single_hop"], answers, MEMEVALS_NONE, tmp_path / "out", 3
    )
    calls: list[str] = []
    [first] = judge_samples([run_dir], grader(calls), log_dir=str(tmp_path / "logs"))
    assert len(calls) == 3
    [second] = judge_samples([run_dir], grader(calls), log_dir=str(tmp_path / "logs"))
    assert len(calls) == 3  # every verdict came from the cache
    assert [r["llm_judge"] for r in second.verdicts] == [r["llm_judge"] for r in first.verdicts]
    [third] = judge_samples([run_dir], grader(calls), cache=False, log_dir=str(tmp_path / "logs"))
    assert len(calls) == 6
    assert [r["llm_judge"] for r in third.verdicts] == [r["llm_judge"] for r in first.verdicts]


def test_cli_with_a_scripted_grader(data_dir: Path, tmp_path: Path) -> None:
    """The real command line (argument parsing, printing, files)."""
    from memevals.benchmarks.locomo.data import load_locomo
    from memevals.benchmarks.locomo.prompts import build_items

    items = [
        i for i in build_items(load_locomo(), context=no_context, context_mode="none")
        if i.metadata["category"] == "temporal"
    ][:4]  # fmt: skip
    answers = {
        i.as_text(): str(i.metadata["answer"]) if n % 2 else "no idea" for n, i in enumerate(items)
    }
    run_dir = write_lm_eval_samples(
        ["locomo_temporal"], answers, MEMEVALS_NONE, tmp_path / "out", 4
    )
    # the judge's command line with the scripted grader registered first, run as a script
    # in this process (cli_support.run_python)
    script = tmp_path / "judge_cli.py"
    script.write_text(
        "import sys\n\nimport scripted_judge  # noqa: F401\n"
        "from memevals.tools.judge import main\n\nsys.exit(main(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    cmd = [
        sys.executable, str(script), str(run_dir),
        "--grader", "scripted/strict", "--log-dir", str(tmp_path / "logs"), "--no-cache",
    ]  # fmt: skip
    proc = run_python(cmd, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "locomo: 4 samples judged" in proc.stdout
    assert "judge" in proc.stdout and "mean" in proc.stdout
    rows = [json.loads(x) for x in (run_dir / "judge_locomo.jsonl").read_text().splitlines()]
    assert [r["llm_judge"]["judge"] for r in rows] == [0.0, 1.0, 0.0, 1.0]
    assert all(r["grader"] == "scripted/strict" for r in rows)


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_bad_samples_files_name_file_line_and_field(tmp_path: Path) -> None:
    good_md = json.dumps(
        {"benchmark": "locomo", "judge": {"criterion": "factual"}, "answer": "A", "category_id": 4}
    )
    doc = {"id": "q1", "system": "", "user": "Q?", "target": "A", "metadata": good_md}
    record = {"doc": doc, "target": "A", "filtered_resps": ["an answer"]}

    bad = _write(tmp_path / "samples_locomo_x_2026-01-01T00-00-00.0.jsonl", [record, {"doc": {}}])
    with pytest.raises(SamplesError, match=r"samples_locomo_x_.*\.jsonl:2: field 'doc.metadata'"):
        judge_samples([bad], grader())

    no_judge = {"benchmark": "locomo", "answer": "A", "category_id": 4}
    not_ours = {**record, "doc": {**doc, "metadata": json.dumps(no_judge)}}
    path = _write(tmp_path / "samples_other_2026-01-01T00-00-00.0.jsonl", [not_ours])
    with pytest.raises(
        SamplesError, match=r":1: field 'doc.metadata.judge' is missing; the locomo"
    ):
        judge_samples([path], grader())

    twice = _write(
        tmp_path / "samples_dup_2026-01-01T00-00-00.0.jsonl",
        [record, {**record, "filtered_resps": ["another answer"]}],
    )
    with pytest.raises(SamplesError, match=r":2: locomo question 'q1' was also logged at .*:1"):
        judge_samples([twice], grader())

    (tmp_path / "garbage").mkdir()
    with pytest.raises(SamplesError, match="no samples_"):
        judge_samples([tmp_path / "garbage"], grader())


def test_locomo_plus_cognitive_verdicts_equal_the_inspect_task(
    data_dir: Path, tmp_path: Path
) -> None:
    """Cognitive samples are judged only: same prompts, same verdicts, same per-relation table."""
    from memevals.benchmarks.locomo.data import load_locomo
    from memevals.benchmarks.locomo_plus.data import load_locomo_plus
    from memevals.benchmarks.locomo_plus.memory import cognitive_oracle
    from memevals.benchmarks.locomo_plus.prompts import cognitive_item
    from memevals.benchmarks.locomo_plus.stitch import stitch_all
    from memevals.inspect_tasks.locomo_plus import locomo_plus_cognitive

    conversations = load_locomo()
    stitched = stitch_all(load_locomo_plus()[:8], conversations)
    items = [cognitive_item(st, context=cognitive_oracle, context_mode="oracle") for st in stitched]
    cues = [str(i.metadata["cue"]).split("：", 1)[-1] for i in items]

    def reply(n: int, item: PromptItem) -> str:
        # the scripted rule has no reference for cognitive samples and credits a reply saying
        # the thing was "never said"; some replies are unreadable
        return [cues[n], "Sounds good!", UNREADABLE, "You never said that before."][n % 4]

    answers = replies_for(items, reply)
    run_dir = write_lm_eval_samples(
        ["locomo_plus_cognitive"], answers, MEMEVALS_ORACLE, tmp_path / "out", len(items)
    )
    [run] = judge_samples([run_dir], grader(), cache=False, log_dir=str(tmp_path / "logs"))
    log = run_inspect(
        locomo_plus_cognitive(context="oracle", protocol="memevals"),
        answers,
        tmp_path / "inspect",
        [i.id for i in items],
        roles={"grader": grader()},
    )
    posthoc = {str(s.id): s.scores for s in run.log.samples}
    direct = {str(s.id): s.scores for s in log.samples}
    assert posthoc.keys() == direct.keys() == {i.id for i in items}
    for sid in direct:
        [p] = posthoc[sid].values()
        [d] = direct[sid].values()
        assert same(judged(p.value), judged(d.value)) and p.metadata["label"] == d.metadata["label"]
    assert_same_metrics(metrics_of(run.log, "judge"), metrics_of(log, "judge"))
    assert_same_metrics(metrics_of(run.log, "unscored"), metrics_of(log, "unscored"))
    assert metrics_of(log, "unscored")["count"] == 2
    values = {judged(next(iter(v.values())).value) for v in posthoc.values()}
    assert {0.0, 1.0} <= values


def test_event_summary_rouge_and_facts_equal_the_inspect_task(
    data_dir: Path, tmp_path: Path
) -> None:
    """lm-eval's locomo_event_summary: native ROUGE per sample and the post-hoc FactScore table
    equal Inspect's locomo_event_summary on the same replies and scripted grader."""
    from event_summary_grader import scripted_grader

    from memevals.benchmarks.locomo_event_summary.samples import EventSummaryOptions, build
    from memevals.inspect_tasks.locomo_event_summary import locomo_event_summary

    convs = "conv-26,conv-30"
    items = build(EventSummaryOptions(conversations=convs)).items
    assert len(items) == 4

    def reply(n: int, item: PromptItem) -> str:
        lines = item.target.splitlines()
        return [
            "\n".join(lines),
            "\n".join(lines[: len(lines) // 2]),
            "Nothing happened.",
            lines[0],
        ][n]

    answers = replies_for(items, reply)
    run_dir = write_lm_eval_samples(
        ["locomo_event_summary"], answers, {"conversations": convs}, tmp_path / "out", None
    )
    [run] = judge_samples([run_dir], scripted_grader(), cache=False, log_dir=str(tmp_path / "l"))
    log = run_inspect(
        locomo_event_summary(conversations=convs),
        answers,
        tmp_path / "inspect",
        roles={"grader": scripted_grader()},
    )

    lm_rows = {r["doc"]["id"]: r for r in samples_of(run_dir, "locomo_event_summary")}
    direct = {str(s.id): next(iter(s.scores.values())).value for s in log.samples}
    posthoc = {str(s.id): next(iter(s.scores.values())).value for s in run.log.samples}
    assert lm_rows.keys() == direct.keys() == posthoc.keys()
    for sid, value in direct.items():
        for key in ("rouge1", "rouge2", "rougeL"):
            assert lm_rows[sid][key] == value[key] == posthoc[sid][key], (sid, key)
        for key in ("fact_precision", "fact_recall", "fact_f1", "unscored"):
            assert same(float(posthoc[sid][key]), float(value[key])), (sid, key)
    assert lm_rows[items[0].id]["rouge1"] == 1.0
    # one result of the scorer, whose rows are every key's figures
    names = result_names(log)
    assert names == result_names(run.log)
    assert "event_summary_scorer" in names and "rouge1" not in names
    keys = {k for k, _ in figures(log)}
    assert keys == {k for k, _ in figures(run.log)}
    assert {"rouge1", "fact_f1", "unscored"} <= keys
    for key in keys:
        assert_same_metrics(metrics_of(run.log, key), metrics_of(log, key))
    unscored = [v["unscored"] for v in posthoc.values()]
    assert 0 < sum(unscored) < len(unscored)  # Melanie's summaries: unreadable grader replies


def test_grader_args_are_read_as_inspect_reads_dash_m(capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m memevals.tools.judge -M` values mean what they mean after `inspect eval -M`."""
    from inspect_ai._util.config import parse_cli_args

    from memevals.tools.judge import grader_args, main

    pairs = ["temperature=0.5", "stop=a,b", "name=gpt", "flag=true", "port=8000", "x=[1, 2]"]
    got = grader_args(pairs)
    assert got == {
        "temperature": 0.5,
        "stop": ["a", "b"],
        "name": "gpt",
        "flag": True,
        "port": 8000,
        "x": [1, 2],
    }
    assert got == parse_cli_args(pairs)
    with pytest.raises(SystemExit):
        main(["somewhere", "--grader", "mockllm/model", "-M", "no_value"])
    assert "expected key=value, got 'no_value'" in capsys.readouterr().err

"""The one reader of runs (memevals.results.runs) that memevals-compare and memevals-diff share.

Real Inspect logs of small runs (mockllm, scripted judge), some rewritten to look like logs
written before a key existed: the cluster of each sample follows one rule in both tools
(`cluster`, else the record's legacy key, else the sample), score names and kinds come from
the benchmark record, and a run's protocol is the one it records, else `memevals`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, write_eval_log
from inspect_ai.model import get_model

from memevals.benchmarks import records
from memevals.core.protocol import BEFORE_OPTION
from memevals.inspect_tasks.locomo_plus import locomo_plus
from memevals.results.runs import load_runs, read_inspect_run
from memevals.tools.compare import load_rows, markdown_tables, row_from_run
from memevals.tools.diff import compare_runs


def _run(task: Any, ids: list[str], folder: Path, **roles: str) -> EvalLog:
    [log] = inspect_eval(
        task,
        model=get_model("mockllm/model"),
        model_roles={k: get_model(v) for k, v in roles.items()},
        sample_id=ids,
        log_dir=str(folder),
        display="none",
    )
    assert log.status == "success", log.error
    return log


def _rewritten(log: EvalLog, path: Path, **changes: Any) -> str:
    """The log written again to `path` after `changes`: `drop` sample-metadata keys,
    `task`, `benchmark` and `task_args` replaced in the header."""
    copy = log.model_copy(deep=True)
    for sample in copy.samples or []:
        for key in changes.get("drop", ()):
            (sample.metadata or {}).pop(key, None)
    if "task" in changes:
        copy.eval.task = changes["task"]
    if "benchmark" in changes:
        copy.eval.metadata = {**(copy.eval.metadata or {}), "benchmark": changes["benchmark"]}
    if "task_args" in changes:
        copy.eval.task_args = changes["task_args"]
    if "metadata" in changes:
        copy.eval.metadata = changes["metadata"]
    write_eval_log(copy, str(path))
    return str(path)


@pytest.fixture(scope="module")
def cognitive(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[EvalLog, Path]:
    """LoCoMo-Plus cognitive samples hosted by three conversations (two each), judged by the
    scripted grader under our own judge prompt."""
    import scripted_judge  # noqa: F401  (registers the scripted/ provider)

    task = locomo_plus(categories="cognitive", context="none", protocol="memevals")
    by_host: dict[str, list[str]] = {}
    for s in task.dataset:
        by_host.setdefault(str((s.metadata or {})["host"]), []).append(str(s.id))
    ids = [sid for host in sorted(by_host)[:3] for sid in by_host[host][:2]]
    folder = tmp_path_factory.mktemp("cognitive")
    return _run(task, ids, folder, grader="scripted/strict"), folder


def test_one_cluster_rule_for_compare_and_diff(cognitive: tuple[EvalLog, Path]) -> None:
    """A log written before `cluster` existed: its cognitive samples are clustered by their
    host conversation (the record's legacy key) in compare's errors and diff's bootstrap
    alike; with no legacy key either, every sample is its own cluster."""
    log, folder = cognitive
    hosts = {str(s.id): str((s.metadata or {})["host"]) for s in log.samples or []}
    assert len(set(hosts.values())) == 3 and records()["locomo_plus"].legacy_cluster_key == "host"
    assert {str(s.id): (s.metadata or {})["cluster"] for s in log.samples or []} == hosts

    old = _rewritten(log, folder / "old.eval", drop=["cluster"])
    run = read_inspect_run(old)
    assert {sid: s.cluster for sid, s in run.samples.items()} == hosts
    [row] = load_rows([old])
    assert row.kinds["judge"].clustered[""].clusters == 3
    # the judge's flags (unscored, unclear) are counted, never compared as scores
    [table] = compare_runs(run, run, resamples=50).tables
    assert table.score == "judge" and table.rows[0].result.clusters == 3

    bare = _rewritten(log, folder / "bare.eval", drop=["cluster", "host"])
    run = read_inspect_run(bare)
    assert all(s.cluster == sid for sid, s in run.samples.items())
    assert row_from_run(run) is not None
    assert row_from_run(run).kinds["judge"].clustered[""].clusters == 6  # type: ignore[union-attr]
    [table] = compare_runs(run, run, resamples=50).tables
    assert table.rows[0].result.clusters == 6


def test_groups_beside_the_category_come_from_the_record(cognitive: tuple[EvalLog, Path]) -> None:
    """LoCoMo-Plus declares relation types as subgroups: each cognitive sample is in
    `relation_<type>`, and compare shows each group's mean beside the category's."""
    log, folder = cognitive
    run = read_inspect_run(str(next(folder.glob("*.eval"))))
    relations = Counter(str((s.metadata or {})["relation_type"]) for s in log.samples or [])
    assert Counter(g for s in run.samples.values() for g in s.groups) == Counter(
        {f"relation_{r}": n for r, n in relations.items()}
    )
    row = row_from_run(run)
    assert row is not None
    judge = row.kinds["judge"]
    assert set(judge.categories) == {"cognitive"}
    for relation, n in relations.items():
        assert judge.clustered[f"relation_{relation}"].n == n
        assert f"relation_{relation}" in judge.extras
    # the judge's flags, counted beside it: no verdict unreadable or unclear here
    assert (judge.extras["unscored"], judge.extras["unclear"]) == (0, 0)
    assert judge.overall == pytest.approx(
        sum(float(s.scores["locomo_plus_judge"].value["judge"]) for s in log.samples or [])  # type: ignore[index, call-overload]
        / len(log.samples or [])
    )


def test_score_names_and_kinds_come_from_the_record(
    locomo_task: Callable[..., Task], tmp_path: Path
) -> None:
    """A LoCoMo rag run logs F1, evidence recall and three retrieval diagnostics: the record
    names F1 `f1` (answer) and evidence recall (retrieval) and the prompt size (tokens, read
    from the answer scorer's record of it); the diagnostics it does not declare are neither
    compared nor tabulated. Without a record every numeric value counts, named as logged."""
    task = locomo_task(context="rag")
    ids = [str(s.id) for s in list(task.dataset)[:4]]
    log = _run(task, ids, tmp_path / "rag")
    run = read_inspect_run(log.location)
    assert run.kinds == {
        "f1": "answer",
        "evidence_recall": "retrieval",
        "turn_precision": None,
        "turn_recall": None,
        "selected_k": None,
        "prompt_tokens": "tokens",
    }
    assert run.score_names == ["f1", "evidence_recall"]
    sizes = [float((s.metadata or {})["prompt_tokens"]) for s in log.samples or []]
    assert sorted(s.scores["prompt_tokens"] for s in run.samples.values()) == sorted(sizes)
    row = row_from_run(run)
    assert row is not None and list(row.kinds) == ["f1"]
    assert row.aux == {
        "evidence_recall": pytest.approx(
            sum(float(s.scores["evidence_recall"].value) for s in log.samples or []) / 4  # type: ignore[arg-type, index]
        ),
        "prompt_tokens": pytest.approx(sum(sizes) / 4),
    }
    assert row.context == "rag(dialog, k=5, bm25)"

    other = _rewritten(
        log, tmp_path / "other.eval", task="elsewhere/some_task", benchmark="not_declared"
    )
    loose = read_inspect_run(other)
    assert loose.record is None and loose.benchmark == "not_declared"
    assert loose.score_names == [
        "evidence_recall", "locomo_f1_scorer", "prompt_tokens", "selected_k", "turn_precision",
        "turn_recall",
    ]  # fmt: skip


def test_protocol_recorded_else_the_documented_default(
    locomo_task: Callable[..., Task], tmp_path: Path
) -> None:
    """A run records its protocol as a task argument; one from before the option records none
    and reads as `memevals` (the only prompts then). Compare shows it in every table."""
    task = locomo_task(context="none", protocol="memevals")
    ids = [str(s.id) for s in list(task.dataset)[:2]]
    log = _run(task, ids, tmp_path / "new")
    assert read_inspect_run(log.location).protocol == "memevals"

    args = {k: v for k, v in (log.eval.task_args or {}).items() if k != "protocol"}
    metadata = {k: v for k, v in (log.eval.metadata or {}).items() if k != "protocol"}
    old = _rewritten(
        log, tmp_path / "old.eval", task_args=args, metadata=metadata, drop=["protocol"]
    )
    assert read_inspect_run(old).protocol == BEFORE_OPTION.name == "memevals"
    official = _rewritten(log, tmp_path / "official.eval", task_args={**args, "protocol": "x"})
    assert read_inspect_run(official).protocol == "x"
    [row_old, row_x] = sorted(load_rows([old, official]), key=lambda r: r.protocol)
    assert (row_old.protocol, row_x.protocol) == ("memevals", "x")
    table = markdown_tables([row_old, row_x], wide=True)
    header = next(line for line in table.splitlines() if line.startswith("| model"))
    assert header.split("|")[3].strip() == "protocol"
    assert "| memevals |" in table and "| x |" in table


def test_a_folder_is_its_logs_oldest_first(
    locomo_task: Callable[..., Task], tmp_path: Path
) -> None:
    task = locomo_task(context="none")
    ids = [str(s.id) for s in list(task.dataset)[:2]]
    first = _run(task, ids, tmp_path / "logs")
    second = _run(locomo_task(context="oracle"), ids, tmp_path / "logs")
    runs = load_runs([str(tmp_path / "logs")])
    assert [r.path for r in runs] == [
        first.location.removeprefix("file://"),
        second.location.removeprefix("file://"),
    ]
    assert [r.setting("context") for r in runs] == ["none", "oracle"]

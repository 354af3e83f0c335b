"""memevals-diff compares runs that differ in one declared factor, named by its values.

Real runs, as a new user makes them: `inspect eval memevals/locomo -T context=none` and
`-T context=rag` through the Inspect CLI, the same through `lm_eval`, and small in-process runs
for the other cases (another model, another judge, other samples, the other protocol). A
comparison whose runs differ in exactly one factor (model, context settings, memory system)
runs without --allow-mismatch and names its runs by the factor (`context=none` vs
`context=rag`); other samples, data or judge, a second factor, or another protocol are refused
(exit status 1) and named, and compared only with --allow-mismatch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_inspect_cli, run_python
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.model import get_model

from memevals.tools.diff import compare_runs, load_runs, main

LIMIT = 6


def _diff(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command, as `python -m memevals.tools.diff` (the memevals-diff script)."""
    cmd = [sys.executable, "-m", "memevals.tools.diff", *map(str, args), "--resamples", "200"]
    return run_python(cmd, cwd=cwd, timeout=300)


@pytest.fixture
def diff(capsys: pytest.CaptureFixture[str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """The command's entry point in this process (what the script calls), as a finished
    process: its exit status, stdout and stderr."""

    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()
        code = main([*map(str, args), "--resamples", "200"])
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["memevals-diff", *map(str, args)], code, out, err)

    return run


def _in_process(task: Any, folder: Path, model: str = "mockllm/model", **kw: Any) -> str:
    ids = [str(s.id) for s in list(task.dataset)[: kw.pop("limit", LIMIT)]]
    [log] = inspect_eval(
        task, model=get_model(model), sample_id=ids, log_dir=str(folder), display="none", **kw
    )
    assert log.status == "success", log.error
    return log.location.removeprefix("file://")


@pytest.fixture(scope="module")
def cli_runs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`inspect eval memevals/locomo -T context=none|rag --limit 6` with the same model."""
    root = tmp_path_factory.mktemp("factor-cli")
    out = {}
    for context in ("none", "rag"):
        args = ["eval", "memevals/locomo", "--model", "mockllm/model", "--limit", str(LIMIT)]
        args += ["-T", f"context={context}", "--log-dir", str(root / context)]
        proc = run_inspect_cli([*args, "--display", "none"], cwd=root)
        assert proc.returncode == 0, proc.stderr[-3000:]
        [out[context]] = (root / context).glob("*.eval")
    return out


def test_context_is_the_factor_compared_and_names_the_runs(
    cli_runs: dict[str, Path], tmp_path: Path
) -> None:
    proc = _diff(cli_runs["none"], cli_runs["rag"], "--json", tmp_path / "d.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "refusing" not in proc.stderr
    assert "## A: context=none  vs  B: context=rag\n" in proc.stdout
    assert "differ in one declared factor, the context (context settings: context: " in proc.stdout
    assert "protocol official" in proc.stdout  # every table states its protocol
    assert f"| overall | {LIMIT} | 1 |" in proc.stdout
    [comparison] = json.loads((tmp_path / "d.json").read_text(encoding="utf-8"))
    assert comparison["factor"] == "context" and comparison["mismatches"] == []
    assert (comparison["run_a"]["label"], comparison["run_b"]["label"]) == (
        "context=none",
        "context=rag",
    )
    assert {d["factor"] for d in comparison["differences"]} == {"context"}


def test_the_model_alone_is_a_factor_and_two_factors_are_refused(
    cli_runs: dict[str, Path],
    locomo_task: Callable[..., Any],
    tmp_path: Path,
    diff: Callable[..., Any],
) -> None:
    other = _in_process(locomo_task(context="rag"), tmp_path / "other", model="mockllm/other")
    proc = diff(cli_runs["rag"], other)
    assert proc.returncode == 0, proc.stderr
    assert "## A: model=mockllm/model  vs  B: model=mockllm/other\n" in proc.stdout

    proc = diff(cli_runs["none"], other)
    assert proc.returncode == 1 and proc.stdout == ""
    first = proc.stderr.splitlines()[0]
    assert first == (
        "memevals-diff: refusing to compare model=mockllm/model, context=none with "
        "model=mockllm/other, context=rag: the runs differ in more than one factor "
        "(model, context); vary one at a time"
    )
    assert "  - model: A='mockllm/model', B='mockllm/other' (factor: model)" in proc.stderr
    assert "  - context settings: context: A='none', B='rag' (factor: context)" in proc.stderr

    proc = diff(cli_runs["none"], other, "--allow-mismatch")
    assert proc.returncode == 0, proc.stderr
    assert "Differences between the runs (compared anyway, --allow-mismatch)" in proc.stdout


def test_other_samples_data_or_judge_are_refused_even_with_one_factor(
    cli_runs: dict[str, Path],
    locomo_task: Callable[..., Any],
    tmp_path: Path,
    diff: Callable[..., Any],
) -> None:
    import scripted_judge  # noqa: F401  (registers the scripted/ judge provider)

    fewer = _in_process(locomo_task(context="rag"), tmp_path / "fewer", limit=4)
    proc = diff(cli_runs["none"], fewer)
    assert proc.returncode == 1
    assert "context=none with context=rag: the runs differ in sample set" in proc.stderr
    assert "  - sample set: 2 only in A" in proc.stderr

    log = read_eval_log(str(cli_runs["rag"]))
    log.eval.metadata = {**(log.eval.metadata or {}), "data_sha256": "0" * 64}
    other_data = tmp_path / "other-data.eval"
    write_eval_log(log, str(other_data))
    proc = diff(cli_runs["none"], other_data)
    assert proc.returncode == 1 and "the runs differ in data checksums" in proc.stderr

    # our own judge prompt (protocol=memevals), read by two rule-based graders; the runs'
    # one factor is their context (oracle: the evidence sessions, with no retrieval index to
    # build)
    judged = [
        _in_process(
            locomo_task(context=context, judge=True, protocol="memevals"),
            tmp_path / context,
            model_roles={"grader": get_model(grader)},
        )
        for context, grader in (("none", "scripted/strict"), ("oracle", "scripted/lenient"))
    ]
    [a, b] = load_runs(judged)
    comparison = compare_runs(a, b, resamples=50)
    assert comparison.factor is not None and comparison.factor.name == "context"
    assert [str(m) for m in comparison.mismatches] == [
        "judge model (judge): A=scripted/strict; B=scripted/lenient"
    ]
    proc = diff(*judged)
    assert proc.returncode == 1 and "the runs differ in judge model (judge)" in proc.stderr


def test_another_protocol_needs_allow_mismatch_and_says_so(
    locomo_task: Callable[..., Any], tmp_path: Path, diff: Callable[..., Any]
) -> None:
    runs = [
        _in_process(locomo_task(context="none", protocol=protocol), tmp_path / protocol)
        for protocol in ("official", "memevals")
    ]
    proc = diff(*runs)
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.splitlines()[0] == (
        "memevals-diff: refusing to compare protocol=official with protocol=memevals: the runs "
        "differ in protocol (its prompts and judge differ)"
    )
    assert "  - protocol: A='official', B='memevals' (factor: protocol)" in proc.stderr

    proc = diff(*runs, "--allow-mismatch")
    assert proc.returncode == 0, proc.stderr
    assert "## A: protocol=official  vs  B: protocol=memevals\n" in proc.stdout
    assert "protocols A = official, B = memevals" in proc.stdout
    assert "**The runs differ in their protocol** (protocol=official vs protocol=memevals)" in (
        proc.stdout
    )


def test_lm_eval_runs_of_two_contexts_are_named_by_them(
    data_dir: Path, tmp_path: Path, shared_lm_eval: Callable[[list[str]], Path]
) -> None:
    """The same questions through `lm_eval` (its dummy model): two output folders, one per
    context, compared as the context's comparison and labelled by it, not by the folder.
    The context=none run is test_diff's (the same arguments: one run, shared)."""
    folders = []
    for context in ("none", "rag"):
        args = ["--model", "dummy", "--tasks", "locomo_temporal,locomo_open_domain"]
        args += ["--limit", "4", "--metadata", json.dumps({"context": context})]
        folders.append(shared_lm_eval(args))
    proc = _diff(*folders, "--json", tmp_path / "d.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "## A: context=none  vs  B: context=rag\n" in proc.stdout
    [comparison] = json.loads((tmp_path / "d.json").read_text(encoding="utf-8"))
    assert comparison["run_a"]["framework"] == "lm-eval"
    assert comparison["factor"] == "context"
    assert comparison["run_a"]["model"] == comparison["run_b"]["model"] == "dummy"

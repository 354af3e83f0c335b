"""Provider faults: a model that fails on a fixed, seeded share of calls.

* With Inspect's model retries (``max_retries``, ``attempt_timeout``) transient errors, hangs and
  empty streams are retried and the run ends with every sample scored once, with the same
  numbers as a fault-free run.
* Non-retryable errors fail the sample; ``retry_on_error`` reruns it, again to the same numbers.
  Without it the failure is visible (errored samples, no score), never a silent 0.
* A real ``inspect eval`` process killed with SIGKILL mid-run is completed by the real
  ``inspect eval-retry LOG``: no sample lost or duplicated, finished samples not rerun, and the
  same final metrics as an uninterrupted run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import faulty_model
import pytest
from cli_support import run_python
from inspect_ai import Task, eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import get_model
from log_values import metrics, scores_by_id
from reliability_figures import count
from scripted_api import register

from memevals.inspect_tasks.locomo import locomo

HERE = Path(__file__).resolve().parent
FAULTY = HERE.parent / "support" / "faulty_model.py"


@pytest.fixture(scope="module")
def sample_ids() -> list[str]:
    """40 questions spread over all ten conversations and five categories."""
    ids = [str(s.id) for s in locomo(context="none").dataset]
    return ids[:: len(ids) // 40][:40]


def _task() -> Task:
    return locomo(context="none")


def _run(tmp_path: Path, ids: list[str], name: str, **kwargs: Any) -> EvalLog:
    model_args = kwargs.pop("model_args", {})
    model = get_model("faulty/answerer", **model_args)
    return eval(
        _task(),
        model=model,
        sample_id=ids,
        display="none",
        log_dir=str(tmp_path / name),
        **kwargs,
    )[0]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory, sample_ids: list[str]) -> EvalLog:
    log = _run(tmp_path_factory.mktemp("clean"), sample_ids, "clean")
    assert log.status == "success"
    return log


def _every_sample_scored_once(log: EvalLog, ids: list[str]) -> None:
    assert log.status == "success", log.error
    assert sorted(str(s.id) for s in log.samples or []) == sorted(ids)
    for sample in log.samples or []:
        assert sample.error is None, (sample.id, sample.error)
        assert sample.scores and set(sample.scores) >= {"locomo_f1_scorer"}, sample.id


def test_a_fault_free_run_scores_something(clean_run: EvalLog, sample_ids: list[str]) -> None:
    """Guards the comparisons below: identical numbers must not be identical zeros."""
    _every_sample_scored_once(clean_run, sample_ids)
    assert metrics(clean_run)["locomo_f1_scorer/mean"] > 0.05


def test_retries_absorb_errors_hangs_and_empty_streams(
    tmp_path: Path, sample_ids: list[str], clean_run: EvalLog
) -> None:
    before = sum(faulty_model.INJECTED.values())
    log = _run(
        tmp_path,
        sample_ids,
        "faulty",
        model_args={"fault_rate": 0.3, "faults": "error,empty,timeout", "seed": 11, "hang": 5},
        max_retries=10,
        attempt_timeout=1,
        # every sample at once: a hung call's second before its timeout overlaps the others
        # (a call's faults depend on its input and attempt only, never on the schedule)
        max_connections=len(sample_ids),
    )
    injected = sum(faulty_model.INJECTED.values()) - before
    count("provider faults injected", injected)
    assert injected >= 10, injected  # the schedule really did inject faults
    _every_sample_scored_once(log, sample_ids)
    assert scores_by_id(log) == scores_by_id(clean_run)
    assert metrics(log) == metrics(clean_run)


def test_retry_on_error_reruns_failed_samples(
    tmp_path: Path, sample_ids: list[str], clean_run: EvalLog
) -> None:
    before = faulty_model.INJECTED["fatal"]
    log = _run(
        tmp_path,
        sample_ids,
        "fatal",
        model_args={"fault_rate": 0.3, "faults": "fatal", "seed": 5},
        retry_on_error=6,
    )
    injected = faulty_model.INJECTED["fatal"] - before
    count("provider faults injected", injected)
    reruns = sum(len(s.error_retries or []) for s in log.samples or [])
    assert injected >= 5 and reruns == injected  # each fatal fault cost exactly one rerun
    count("samples rerun after an error", reruns)
    _every_sample_scored_once(log, sample_ids)
    assert scores_by_id(log) == scores_by_id(clean_run)
    assert metrics(log) == metrics(clean_run)


def test_without_retries_a_failure_is_visible_never_a_zero(
    tmp_path: Path, sample_ids: list[str], clean_run: EvalLog
) -> None:
    log = _run(
        tmp_path,
        sample_ids,
        "no-retry",
        model_args={"fault_rate": 0.3, "faults": "fatal", "seed": 5},
        fail_on_error=False,
    )
    count("provider faults injected", sum(1 for s in log.samples or [] if s.error))
    failed = {str(s.id) for s in log.samples or [] if s.error is not None}
    assert failed and len(failed) < len(sample_ids)
    scored = scores_by_id(log)
    clean = scores_by_id(clean_run)
    for sid in failed:
        assert not scored[sid], f"errored sample {sid} was scored: {scored[sid]}"
    # the mean is over the samples that ran, not the failures counted as 0
    ok = [clean[s]["locomo_f1_scorer"] for s in clean if s not in failed]
    assert metrics(log)["locomo_f1_scorer/mean"] == pytest.approx(sum(ok) / len(ok), abs=1e-12)
    assert log.results is not None and log.results.completed_samples == len(ok)


# -- kill the real CLI, then `inspect eval-retry` -----------------------------------------------


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _cli(args: list[str]) -> list[str]:
    return [sys.executable, str(FAULTY), *args]


def test_killed_run_is_completed_by_eval_retry(
    tmp_path: Path, sample_ids: list[str], clean_run: EvalLog
) -> None:
    logs = tmp_path / "logs"
    calls, faults = tmp_path / "calls.jsonl", tmp_path / "faults.jsonl"
    args = [
        "eval", "memevals/locomo", "-T", "context=none",
        "--sample-id", ",".join(sample_ids),
        "--model", "faulty/answerer",
        "-M", "delay=0.4", "-M", "fault_rate=0.2", "-M", "faults=error,empty", "-M", "seed=3",
        "-M", f"call_log={calls}", "-M", f"fault_log={faults}",
        "--max-retries", "10", "--max-connections", "2", "--max-samples", "2",
        "--log-buffer", "1",
        "--log-dir", str(logs), "--display", "none",
    ]  # fmt: skip
    out = (tmp_path / "eval.out").open("w")
    proc = subprocess.Popen(_cli(args), cwd=tmp_path, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 300
        while _lines(calls) < 12:
            assert proc.poll() is None, (tmp_path / "eval.out").read_text()[-3000:]
            assert time.monotonic() < deadline, "the run never got going"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        out.close()
    assert proc.returncode == -signal.SIGKILL
    calls_at_kill = _lines(calls)
    [killed_path] = sorted(logs.glob("*.eval"))
    killed = read_eval_log(str(killed_path))
    done = {str(s.id) for s in killed.samples or []}
    assert killed.status == "started" and 0 < len(done) < len(sample_ids), len(done)

    # the retry runs in this process (cli_support.run_python); the killed run above needs one
    # of its own, to be killed. It may run the missing samples side by side (the slow calls of
    # the killed run were there to be caught mid-run; a sample's faults depend on its input and
    # attempt only, faulty_model.py): what is checked is which samples and calls it makes.
    try:
        retry = run_python(
            _cli(["eval-retry", str(killed_path), "--log-dir", str(logs), "--display", "none",
                  "--max-connections", "40", "--max-samples", "40"]),
            cwd=tmp_path,
            timeout=400,
        )
    finally:
        # the script ran as __main__ registered its own copy of the provider, whose fault
        # counter (INJECTED) is not faulty_model's: a later test of this worker would count
        # no faults; the imported module's provider comes back
        register(faulty_model.FaultyModel)
    assert retry.returncode == 0, retry.stderr[-3000:]
    others = [read_eval_log(str(p)) for p in logs.glob("*.eval") if p != killed_path]
    [final] = [log for log in others if log.status == "success"]
    _every_sample_scored_once(final, sample_ids)  # nothing lost, nothing twice
    # Finished samples were carried over, not rerun. eval-retry also recovers samples that had
    # finished but were not yet flushed to the log (Inspect's sample buffer), so the retry
    # makes at most one call per missing sample; over both processes only the calls in
    # flight at the kill (at most --max-samples 2) can have been made twice.
    missing = len(sample_ids) - len(done)
    rerun = _lines(calls) - calls_at_kill
    recovered = missing - rerun
    assert 0 <= recovered <= missing, (rerun, missing)
    assert len(sample_ids) <= _lines(calls) <= len(sample_ids) + 2, _lines(calls)
    assert scores_by_id(final) == scores_by_id(clean_run)
    # the resumed log lists carried-over samples first, so a mean may be summed in another
    # order: equal up to rounding in the last bit
    final_metrics, clean_metrics = metrics(final), metrics(clean_run)
    # a clustered figure over one conversation is NaN (no variance to estimate): the same
    # metrics must be NaN in both runs, and the rest equal
    nan_in = {k for k, v in clean_metrics.items() if v == "nan"}
    assert {k for k, v in final_metrics.items() if v == "nan"} == nan_in
    assert {k: v for k, v in final_metrics.items() if k not in nan_in} == pytest.approx(
        {k: v for k, v in clean_metrics.items() if k not in nan_in}, rel=1e-12, abs=1e-15
    )
    count("runs killed and resumed")
    count("samples carried over from a killed run", len(done))
    count("samples recovered from Inspect's sample buffer", recovered)
    count("samples rerun after the kill", rerun)
    count("samples lost", len(sample_ids) - len(scores_by_id(final)))
    count("provider faults injected", _lines(faults))

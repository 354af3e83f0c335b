"""A vendor's memory system plugs in without a change to memevals: a separate distribution,
installed into the venv by this test with its own `memevals.memory_systems` entry points, is
found by name through the real `inspect eval` CLI. Its `flaky` system raises on chosen
questions: exactly those samples are errors carrying its message, every other sample scores
as in a fault-free run."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_inspect_cli
from inspect_ai.log import read_eval_log

from memevals.benchmarks.locomo.data import load_locomo
from memevals.core.memory_system import available_memory_systems, load_memory_system

pytest.importorskip("bm25s", reason="needs the [rag] extra")

#: One distribution per pytest-xdist worker: the module's tests may run on two workers at once,
#: and one worker uninstalling a shared distribution would pull it from under the other.
#: Their entry points carry the same names and code, so whichever is found first serves.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
DIST = f"memevals-test-plugin-{WORKER}"
MODULE = f"memevals_test_plugin_{WORKER}"

PLUGIN = '''
"""A tiny third-party memory system: keyword overlap over the turns (no memevals internals)."""

import json
import time
from pathlib import Path

from memevals.core.memory_system import IngestReport, MemoryItem

VERSION = "0.1"


class KeywordIndex:
    def __init__(self, rows, fail_on):
        self.rows = rows
        self.fail_on = fail_on

    def retrieve(self, query):
        if query.text in self.fail_on:
            raise TimeoutError(f"plugin backend timed out on {query.text!r}")
        words = set(query.text.lower().split())
        scored = sorted(
            ((len(words & set(r["text"].lower().split())), -n, r) for n, r in enumerate(self.rows)),
            key=lambda t: (t[0], t[1]),
            reverse=True,
        )
        return [
            MemoryItem(text=r["text"], source_ids=(r["id"],), score=float(s), date=r["date"])
            for s, _, r in scored[: query.k]
        ]

    def answer(self, query):
        best = self.retrieve(query)[0]
        return best.text.split(": ", 1)[1]


class KeywordSystem:
    version = VERSION

    def __init__(self, name, fail_on=()):
        self.name = name
        self.fail_on = tuple(fail_on)

    @property
    def args(self):
        return {"fail_on": list(self.fail_on)}

    def ingest(self, history, store, model):
        rows = [
            {"id": t.turn_id, "text": f"{t.speaker}: {t.text}", "date": s.date}
            for s in history.sessions
            for t in s.turns
        ]
        (store / "rows.json").write_text(json.dumps(rows))
        return IngestReport(items_stored=len(rows))

    def open(self, store, history):
        return KeywordIndex(json.loads((store / "rows.json").read_text()), self.fail_on)


def keyword_system():
    return KeywordSystem("keyword_overlap")


class FailsOnce(KeywordSystem):
    """Its first ingestion in a process fails (a backend that was still starting)."""

    failed = False

    def ingest(self, history, store, model):
        if not FailsOnce.failed:
            FailsOnce.failed = True
            time.sleep(0.5)  # the other samples of the history are waiting by now
            raise ConnectionError("backend not ready yet")
        return super().ingest(history, store, model)


def fails_once_system():
    return FailsOnce("fails_once")


def flaky_system(fail_on=()):
    return KeywordSystem("flaky", fail_on)
'''

PYPROJECT = f"""
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{DIST}"
version = "0.1"

[tool.setuptools]
py-modules = ["{MODULE}"]

[project.entry-points."memevals.memory_systems"]
keyword_overlap = "{MODULE}:keyword_system"
flaky = "{MODULE}:flaky_system"
fails_once = "{MODULE}:fails_once_system"
"""


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    # a process of its own: pip changes the venv, which this test then reads in this one.
    # No version check: it would ask the package index, which this test has no need of
    return subprocess.run(
        [sys.executable, "-m", "pip", *args, "--disable-pip-version-check"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    src = tmp_path_factory.mktemp("plugin")
    (src / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    (src / f"{MODULE}.py").write_text(PLUGIN)
    done = _pip("install", "-q", "--no-deps", "--no-build-isolation", "--no-index", str(src))
    assert done.returncode == 0, done.stderr
    importlib.invalidate_caches()
    try:
        yield
    finally:
        _pip("uninstall", "-y", "-q", DIST)
        importlib.invalidate_caches()


def _run(tmp_path: Path, name: str, *args: str) -> Any:
    """`inspect eval` of LoCoMo in this process (cli_support.run_inspect_cli): the plugin's
    per-process state (FailsOnce's first failure) starts afresh, as in a new process."""
    if MODULE in sys.modules:
        sys.modules[MODULE].FailsOnce.failed = False
    logs = tmp_path / name
    env = {"MEMEVALS_CACHE_DIR": str(tmp_path / "cache")}
    cmd = ["eval", "memevals/locomo", "--model", "mockllm/model", "--log-dir", str(logs)]
    done = run_inspect_cli([*cmd, "--display", "none", *args], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = logs.glob("*.eval")
    return read_eval_log(str(path))


def test_a_separately_installed_system_is_found_by_name(plugin: None, tmp_path: Path) -> None:
    assert {"keyword_overlap", "flaky"} <= set(available_memory_systems())
    assert load_memory_system("keyword_overlap").name == "keyword_overlap"
    log = _run(tmp_path, "kw", "-T", "memory=keyword_overlap", "-T", "top_k=3", "--limit", "6")
    assert log.status == "success"
    assert log.eval.metadata["memory"]["memory"] == "keyword_overlap"
    assert log.eval.metadata["memory"]["memory_version"] == "0.1"
    for sample in log.samples:
        # the system's context and the question go to the model as one user message
        assert [m.role for m in sample.messages[:1]] == ["user"]
        assert len(sample.metadata["retrieved_ids"]) == 3
        assert sample.scores["evidence_recall"].value is not None
    names = {s.name for s in log.results.scores}
    assert {"memory_system", "evidence_recall", "turn_precision"} <= names


def test_a_system_failing_on_chosen_questions_errors_exactly_those_samples(
    plugin: None, tmp_path: Path
) -> None:
    conv = load_locomo()[0]
    chosen = {
        f"{conv.sample_id}-q2": conv.qa[2].question,
        f"{conv.sample_id}-q5": conv.qa[5].question,
    }
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"fail_on": sorted(chosen.values())}))
    faulty = _run(
        tmp_path,
        "faulty",
        "-T",
        "memory=flaky",
        "-T",
        f"memory_args={args}",
        "--limit",
        "10",
        "--no-fail-on-error",
    )
    clean_args = tmp_path / "clean.json"
    clean_args.write_text(json.dumps({"fail_on": []}))
    clean = _run(
        tmp_path, "clean", "-T", "memory=flaky", "-T", f"memory_args={clean_args}", "--limit", "10"
    )
    errored = {str(s.id) for s in faulty.samples if s.error is not None}
    assert errored == set(chosen)
    for sample in faulty.samples:
        if sample.error is not None:
            assert "plugin backend timed out on" in sample.error.message
            assert chosen[str(sample.id)] in sample.error.message
            assert not sample.scores  # never scored as a wrong answer
    by_id = {str(s.id): s for s in clean.samples}
    for sample in faulty.samples:
        if sample.error is None:
            other = by_id[str(sample.id)]
            assert sample.messages[0].text == other.messages[0].text
            for name, score in sample.scores.items():
                if name == "memory_system":
                    continue  # latency differs from run to run
                left, right = score.value, other.scores[name].value
                assert left == right or (left != left and right != right), name


def test_a_system_that_answers_by_itself(plugin: None, tmp_path: Path) -> None:
    log = _run(
        tmp_path,
        "answers",
        "-T",
        "memory=keyword_overlap",
        "-T",
        "memory_answers=true",
        "--limit",
        "4",
    )
    assert log.eval.metadata["memory"]["memory_answers"] is True
    for sample in log.samples:
        assert sample.output.model == "memory/keyword_overlap"  # the model under test is idle
        assert sample.output.completion  # the best item's text, which the context shows too
        assert sample.output.completion in sample.messages[0].text
        assert sample.scores["locomo_f1_scorer"].answer == sample.output.completion


def test_a_system_without_answer_errors_each_sample(tmp_path: Path) -> None:
    log = _run(
        tmp_path,
        "no-answers",
        "-T",
        "memory=bm25",
        "-T",
        "memory_answers=true",
        "--limit",
        "2",
        "--no-fail-on-error",
    )
    assert [s.error is not None for s in log.samples] == [True, True]
    assert "bm25 does not answer by itself" in log.samples[0].error.message


def test_a_failed_ingestion_is_retried_by_inspect(plugin: None, tmp_path: Path) -> None:
    """The samples waiting on the failed ingestion error with its message; Inspect's retry
    (`--retry-on-error`) asks again, the history is ingested, and every sample is scored."""
    failing = _run(
        tmp_path, "once", "-T", "memory=fails_once", "--limit", "3", "--no-fail-on-error"
    )
    assert all(s.error is not None for s in failing.samples)
    assert "ingestion of conv-26 failed: ConnectionError: backend not ready yet" in (
        failing.samples[0].error.message
    )
    retried = _run(
        tmp_path, "retried", "-T", "memory=fails_once", "--limit", "3", "--retry-on-error=1"
    )
    assert retried.status == "success"
    assert all(s.error is None for s in retried.samples)
    assert any(s.error_retries for s in retried.samples)  # the first attempts failed
    assert all(s.scores["evidence_recall"] is not None for s in retried.samples)

"""Fixtures of the tools' tests (this folder only)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task
from lm_eval_support import run_lm_eval_cli
from shared_runs import SharedRuns

from memevals.inspect_tasks.locomo import locomo


@pytest.fixture
def shared_lm_eval(shared_runs: SharedRuns) -> Callable[[list[str]], Path]:
    """`run(args)`: the output folder of the real lm-eval command line with `args`
    (lm_eval_support.run_lm_eval_cli), run once per pytest run for equal arguments and shared
    by the tests that only read it (test_diff's and test_diff_factors' dummy-model run)."""

    def run(args: list[str]) -> Path:
        def produce(folder: Path) -> None:
            run_lm_eval_cli(args, folder)

        folder = shared_runs.folder({"lm-eval-cli": args}, produce)
        [run_dir] = [p for p in (folder / "out").iterdir() if p.is_dir()]
        return run_dir

    return run


@pytest.fixture(scope="session")
def locomo_task(data_dir: Path) -> Callable[..., Task]:
    """`locomo_task(**options)`: the memevals/locomo task with those options, built once per
    worker and shared by the tests that run or read it. A build prepares all 1,986 questions
    (a rag build indexes every conversation); Inspect runs a shallow copy of the task it is
    given and filters its dataset into a new one, so one task serves any number of runs."""
    built: dict[str, Task] = {}

    def get(**options: Any) -> Task:
        key = json.dumps(options, sort_keys=True)
        if key not in built:
            built[key] = locomo(**options)
        return built[key]

    return get

"""Fixtures of the tools' tests (this folder only)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from lm_eval_support import run_lm_eval_cli
from shared_runs import SharedRuns


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

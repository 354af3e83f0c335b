"""A user's mistake reads as one message, not a traceback (issue 22, point 4).

Through the real `inspect eval` CLI, with its default display and with `--display none` (where
Inspect silences its console): a misspelt option, an unknown memory system and a missing data
file each print their message, naming the fix, in at most 15 lines, and no traceback; nothing
runs. In-process the error keeps its class (a ValueError), so callers catching it see no
change; a bug (an error that is not a user's mistake) keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task

from memevals.core.files import DataError
from memevals.inspect_tasks.common import TaskOptionError, fixed_param_task, memevals_task

CASES = {
    "misspelt option": (
        ["memevals/locomo_single_hop", "-T", "contxt=rag"],
        "locomo_single_hop: no option 'contxt' (did you mean 'context'?)",
    ),
    "unknown memory system": (
        ["memevals/locomo", "-T", "memory=mem00"],
        "locomo: memory='mem00' is not a registered memory system (did you mean 'mem0'?)",
    ),
    "missing data file": (
        ["memevals/locomo_plus_cognitive", "-T", "data_dir=nowhere"],
        "locomo_plus_cognitive: file nowhere/locomo/locomo10.json: not found under the data dir",
    ),
}


def _one_line(text: str) -> str:
    return " ".join(text.split())


# every case with the default display; one with --display none (a quiet console), which the
# same code path serves for every error
RUNS = [(case, "default") for case in CASES] + [("unknown memory system", "none")]


@pytest.mark.parametrize(("case", "display"), RUNS, ids=[f"{c}-{d}" for c, d in RUNS])
def test_cli_prints_the_message_alone(
    inspect_cli: Any, tmp_path: Path, case: str, display: str
) -> None:
    args, message = CASES[case]
    extra = [] if display == "default" else ["--display", "none"]
    res = inspect_cli("eval", *args, "--model", "mockllm/model", "--limit", "1", *extra)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    assert message in _one_line(out), out[-3000:]
    assert "Traceback" not in out and 'File "' not in out, out[-3000:]
    assert len(out.strip().splitlines()) <= 15, out
    assert out.count(message.split(":")[0] + ":") == 1  # said once, by the task asked for
    assert not (tmp_path / "logs").exists()


def test_in_process_the_error_keeps_its_class(data_dir: Path) -> None:
    from memevals.inspect_tasks.locomo import locomo, locomo_single_hop

    with pytest.raises(DataError, match=r"not found under the data dir") as exc:
        locomo(data_dir="nowhere")
    assert str(exc.value).startswith("file nowhere/locomo/locomo10.json")
    assert type(exc.value).__name__ == "DataError" and exc.value.file is not None
    with pytest.raises(ValueError, match="is not a registered memory system"):
        locomo_single_hop(memory="mem00")
    untyped: Any = locomo_single_hop
    with pytest.raises(TaskOptionError, match="did you mean 'context'"):
        untyped(contxt="rag")


@memevals_task(name="user_errors_buggy")
def buggy(fail: str = "key") -> Task:
    """A test-only task with a bug (a KeyError) or a user error (a ValueError)."""
    if fail == "key":
        return {}["missing"]  # type: ignore[no-any-return]
    raise ValueError("fail=value is not allowed")


buggy_fixed = fixed_param_task(buggy, "user_errors_buggy_fixed", {}, "The same task.")


def test_a_bug_keeps_its_traceback_and_a_user_error_becomes_a_message() -> None:
    from inspect_ai._util.error import PrerequisiteError

    with pytest.raises(KeyError) as bug:
        buggy()
    assert not isinstance(bug.value, PrerequisiteError)
    with pytest.raises(ValueError) as user:
        buggy_fixed(fail="value")
    assert isinstance(user.value, PrerequisiteError)
    assert user.value.message == (
        "[bold]Error[/bold]: user_errors_buggy_fixed: fail=value is not allowed"
    )

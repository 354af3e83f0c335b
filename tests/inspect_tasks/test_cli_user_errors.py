"""A user's mistake reads as one message, not a traceback (issue 22, point 4).

Through the real `inspect eval` CLI, with its default display and with `--display none` (where
Inspect silences its console): a misspelt option, an unknown memory system, a missing data
file, an option of the other protocol and an unpinned LongMemEval copy each print their message,
naming the fix (issue 28: the option that gave the data dir, `-T protocol=memevals`,
`verify_checksum=false`), in at most 15 lines, and no traceback; nothing runs. In-process the
error keeps its class (a ValueError), so callers catching it see no change; a bug (an error
that is not a user's mistake) keeps its traceback.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task

from memevals.benchmarks.longmemeval.data import data_file
from memevals.core.files import DataError, sha256_of
from memevals.inspect_tasks.tasks import TaskOptionError, fixed_param_task, memevals_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DATA_DIR = Path(os.environ["MEMEVALS_DATA_DIR"])  # set by tests/conftest.py
LME_FIXTURE_SHA = sha256_of(FIXTURES / "longmemeval" / "longmemeval_s_cleaned.json")
LME_PINNED_SHA = "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442"
LME_URL = data_file("s").url

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
        # the dir came from the option, so the fix is the option's (MEMEVALS_DATA_DIR is set by
        # tests/conftest.py, and leaving data_dir out reads it)
        "locomo_plus_cognitive: file nowhere/locomo/locomo10.json: not found under the data dir "
        "nowhere. The dir is the data_dir option: put the pinned file at locomo/locomo10.json "
        "in it, give data_dir the folder that holds locomo/locomo10.json, or leave data_dir out "
        "to read MEMEVALS_DATA_DIR=" + str(DATA_DIR) + ".",
    ),
    "option of the other protocol": (
        ["memevals/locomo_plus", "-T", "context=rag"],
        "locomo_plus: protocol='official' is LoCoMo-Plus's own input (context='full', "
        "disclose_task=False, gap_fix=False); context='rag' runs under protocol='memevals': "
        "add -T protocol=memevals (lm-eval: --metadata '{\"protocol\": \"memevals\"}')",
    ),
    "unpinned LongMemEval copy": (
        ["memevals/longmemeval_s", "-T", f"data_dir={FIXTURES}"],
        f"longmemeval_s: file {FIXTURES}/longmemeval/longmemeval_s_cleaned.json: sha256 is "
        f"{LME_FIXTURE_SHA}, expected {LME_PINNED_SHA} (the pinned release). Replace it with "
        f"the pinned file from {LME_URL}, pass -T verify_checksum=false (lm-eval: --metadata "
        "'{\"verify_checksum\": false}') to read a same-schema copy unverified, or leave "
        f"data_dir out to read MEMEVALS_DATA_DIR={DATA_DIR}.",
    ),
}


def _squeezed(text: str) -> str:
    # Inspect's console wraps at its width, inside long words too (a URL): compare without
    # whitespace
    return "".join(text.split())


# every case with the default display; one with --display none (a quiet console), which the
# same code path serves for every error
RUNS = [(case, "default") for case in CASES] + [("unknown memory system", "none")]


@pytest.mark.parametrize(("case", "display"), RUNS, ids=[f"{c}-{d}" for c, d in RUNS])
def test_cli_prints_the_message_alone(
    inspect_cli: Any, tmp_path: Path, case: str, display: str
) -> None:
    args, message = CASES[case]
    extra = [] if display == "default" else ["--display", "none"]
    # what the user sees is printed by Inspect's excepthook at exit (in-process, the helper
    # calls the command's hook as the interpreter does)
    res = inspect_cli("eval", *args, "--model", "mockllm/model", "--limit", "1", *extra)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    assert _squeezed(message) in _squeezed(out), out[-3000:]
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


def test_a_changed_beam_file_names_each_fix(tmp_path: Path) -> None:
    """BEAM's git-blob check says what to do for the dir the option gave (issue 28)."""
    from memevals.benchmarks.beam.data import _resolve, beam_files

    pinned = next(iter(beam_files().values()))
    copy = tmp_path / pinned.relpath
    copy.parent.mkdir(parents=True)
    copy.write_text("[]", encoding="utf-8")
    with pytest.raises(DataError) as exc:
        _resolve(pinned, tmp_path)
    assert str(exc.value).endswith(
        f"the file is corrupt or from another revision. Restore the pinned file. Or leave "
        f"data_dir out to read MEMEVALS_DATA_DIR={DATA_DIR}, or pass verify_checksum=false to "
        "read a same-schema copy unverified."
    )

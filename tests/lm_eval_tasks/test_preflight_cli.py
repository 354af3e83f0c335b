"""A user error while lm-eval builds a memevals task ends in one line, not lm-eval's traceback
(issue 28, point 7), through the real `lm_eval` command: a memory system whose LLM endpoint
cannot be reached (the endpoint check names the URL, what is missing and the `memory_args`
syntax) and a misspelt `--metadata` option. Exit status 1, no traceback, nothing after the
message; the run stops before any document is built.

The one line is memevals' excepthook, installed when a task's module first imports
memevals.lm_eval_tasks.common. The lm_eval runs are the real console script's entry point in
this process (tests/support/in_process.py), started the way a new interpreter is at that
point: Python's own hook, then memevals' installed over it (this worker imported the module
already, so lm-eval's task loading cannot install it here). That the import installs it, and
that a real interpreter then ends on a user error with the one line, is checked in a process
of its own (test_a_fresh_interpreter_installs_the_one_line_hook): the lm_eval runs need no
process each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import run_python
from loopback_openai import free_port

from memevals.lm_eval_tasks import include_path

pytest.importorskip("lm_eval")

#: The `lm_eval` console script's entry point, after what a new interpreter has done by the
#: time lm-eval imports a memevals task: memevals' hook installed over Python's own.
LM_EVAL = """
import sys

from memevals.lm_eval_tasks.common import user_errors_in_one_line

user_errors_in_one_line()  # what the first import of common does in a new interpreter

from lm_eval.__main__ import cli_evaluate

sys.argv[0] = "lm_eval"
sys.exit(cli_evaluate())
"""


def _lm_eval(metadata: dict[str, str | int], cwd: Path) -> list[str]:
    """`lm_eval` (its console script's entry point, in this process) on LoCoMo; its output
    lines."""
    (cwd / "lm_eval_main.py").write_text(LM_EVAL, encoding="utf-8")
    res = run_python(
        [
            sys.executable,
            str(cwd / "lm_eval_main.py"),
            "--model",
            "dummy",
            "--tasks",
            "locomo",
            "--limit",
            "1",
            "--include_path",
            include_path(),
            "--metadata",
            json.dumps(metadata),
            "--output_path",
            str(cwd / "out"),
        ],
        cwd=cwd,
        env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        timeout=600,
    )
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    assert "Traceback" not in out and 'File "' not in out, out[-3000:]
    assert not (cwd / "out").exists()  # stopped before any result
    return res.stderr.strip().splitlines()


#: A new interpreter imports a task's module as lm-eval does, then a user error reaches the top.
FRESH = """
import sys

import memevals.lm_eval_tasks.locomo.utils  # what lm-eval imports for the task
from memevals.lm_eval_tasks.common import OptionError

print(getattr(sys.excepthook, "_memevals_user_errors_in_one_line", False))
raise OptionError("locomo: --metadata key 'topk' is not an option")
"""


def test_a_fresh_interpreter_installs_the_one_line_hook(tmp_path: Path) -> None:
    # a process of its own: only a new interpreter imports the module for the first time
    res = subprocess.run(
        [sys.executable, "-c", FRESH],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 1, res.stderr[-3000:]
    assert res.stdout == "True\n"
    assert res.stderr == "Error: locomo: --metadata key 'topk' is not an option\n"


@pytest.mark.server
def test_unreachable_memory_endpoint_is_one_line(data_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("mem0", reason="needs the [mem0] extra")
    url = f"http://127.0.0.1:{free_port()}/v1"
    args = f"llm_base_url={url},llm_model=local"
    lines = _lm_eval({"memory": "mem0", "memory_args": args}, tmp_path)
    errors = [line for line in lines if line.startswith("Error:")]
    assert errors == [lines[-1]], lines  # one message, and the last line
    assert errors[0].startswith(
        f"Error: mem0: the LLM endpoint {url} (model 'local') cannot be reached ("
    ), errors
    assert "a response_format json_object (JSON mode) request" in errors[0]  # what is missing
    assert 'memory_args="llm_base_url=http://HOST:PORT/v1,llm_model=NAME"' in errors[0]
    assert "(lm-eval: the same memory_args in --metadata; docs/memory_systems.md)" in errors[0]


def test_misspelt_option_is_one_line(data_dir: Path, tmp_path: Path) -> None:
    lines = _lm_eval({"topk": 5}, tmp_path)
    assert lines[-1].startswith("Error: locomo"), lines
    assert "--metadata key 'topk' is not an option; did you mean 'top_k'?" in lines[-1]
    assert [line for line in lines if line.startswith("Error:")] == [lines[-1]]

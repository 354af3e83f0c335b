"""A user error while lm-eval builds a memevals task is one line (issue 28, point 7), and
memevals leaves lm-eval's own error handling alone (issue 38, point 1), through the real
`lm_eval` command: a memory system whose LLM endpoint cannot be reached (the endpoint check
names the URL, what is missing and the `memory_args` syntax) and a misspelt `--metadata` option.
Exit status 1, Python's own traceback (memevals installs no `sys.excepthook`), and the error's
one-line message as its last line; the run stops before any document is built.

That importing memevals' lm-eval task modules leaves `sys.excepthook` as it was, and that a
foreign error then still gets Python's traceback, is checked in a process of its own
(test_importing_the_task_modules_leaves_the_excepthook_alone): only a new interpreter imports
them for the first time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import run_python
from loopback_openai import free_port

from memevals.lm_eval_tasks import include_path

pytest.importorskip("lm_eval")

#: Python's own output for an uncaught error: a traceback, then `<module>.<class>: <message>`.
LAST_LINE = re.compile(r"^[\w.]+Error: (?P<message>.+)$")


def _lm_eval(metadata: dict[str, str | int], cwd: Path) -> str:
    """`lm_eval` (its console script, in this process) on LoCoMo: a user error ends it with
    Python's traceback; returns the error's message, the last line."""
    res = run_python(
        [
            str(Path(sys.executable).parent / "lm_eval"),
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
    assert "Traceback (most recent call last):" in res.stderr, out[-3000:]  # lm-eval's own way
    assert not (cwd / "out").exists()  # stopped before any result
    last = res.stderr.strip().splitlines()[-1]
    found = LAST_LINE.match(last)
    assert found, res.stderr[-3000:]
    assert res.stderr.count(found["message"]) == 1, res.stderr[-3000:]  # said once, in one line
    return found["message"]


#: A new interpreter imports every memevals lm-eval task module, as lm-eval would with
#: `--include_path`, then a foreign task's error reaches the top.
FRESH = """
import importlib
import pkgutil
import sys

import memevals.lm_eval_tasks as tasks

before = sys.excepthook
for info in pkgutil.walk_packages(tasks.__path__, tasks.__name__ + "."):
    importlib.import_module(info.name)
print(sys.excepthook is before is sys.__excepthook__)
raise ValueError("a foreign task's error")
"""


def test_importing_the_task_modules_leaves_the_excepthook_alone(tmp_path: Path) -> None:
    # a process of its own: only a new interpreter imports the modules for the first time
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
    lines = res.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):", res.stderr[-3000:]
    assert lines[-1] == "ValueError: a foreign task's error"


@pytest.mark.server
def test_unreachable_memory_endpoint_is_one_line(data_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("mem0", reason="needs the [mem0] extra")
    url = f"http://127.0.0.1:{free_port()}/v1"
    args = f"llm_base_url={url},llm_model=local"
    message = _lm_eval({"memory": "mem0", "memory_args": args}, tmp_path)
    assert message.startswith(
        f"mem0: the LLM endpoint {url} (model 'local') cannot be reached ("
    ), message
    assert "a response_format json_object (JSON mode) request" in message  # what is missing
    assert 'memory_args="llm_base_url=http://HOST:PORT/v1,llm_model=NAME"' in message
    assert "(lm-eval: the same memory_args in --metadata; docs/memory_systems.md)" in message


def test_misspelt_option_is_one_line(data_dir: Path, tmp_path: Path) -> None:
    message = _lm_eval({"topk": 5}, tmp_path)
    assert message.startswith("locomo"), message
    assert "--metadata key 'topk' is not an option; did you mean 'top_k'?" in message

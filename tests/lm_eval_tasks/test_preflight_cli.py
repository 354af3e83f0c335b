"""A user error while lm-eval builds a memevals task ends in one line, not lm-eval's traceback
(issue 28, point 7), through the real `lm_eval` command: a memory system whose LLM endpoint
cannot be reached (the endpoint check names the URL, what is missing and the `memory_args`
syntax) and a misspelt `--metadata` option. Exit status 1, no traceback, nothing after the
message; the run stops before any document is built.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from loopback_openai import free_port

from memevals.lm_eval_tasks import include_path

pytest.importorskip("lm_eval")


def _lm_eval(metadata: dict[str, str | int], cwd: Path) -> list[str]:
    """The real `lm_eval` console script (as a user runs it) on LoCoMo; its output lines."""
    script = shutil.which("lm_eval", path=str(Path(sys.executable).parent))
    assert script is not None, "lm-eval's console script is not installed beside this Python"
    # a process of its own: the one line at exit is memevals' excepthook, which only a real
    # interpreter runs (in the pytest worker an uncaught error would be a traceback)
    res = subprocess.run(
        [
            script,
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
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    assert "Traceback" not in out and 'File "' not in out, out[-3000:]
    assert not (cwd / "out").exists()  # stopped before any result
    return res.stderr.strip().splitlines()


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

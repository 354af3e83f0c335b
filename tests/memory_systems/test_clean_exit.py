"""No traceback at process exit (issue 40, item 5): a pytest run that touches mem0 ends with
pytest's summary line as its last line.

A run keeps the indexes it opened until the process ends (an `inspect eval` does); their
embedded qdrant clients used to be left to the interpreter's teardown, where
`QdrantClient.__del__` fails and prints a traceback after everything the command printed. The
check runs a real pytest in a subprocess over a test that runs the real `inspect eval` on one
question of the LongMemEval fixture with mem0 (its LLM the loopback server of
tests/support/loopback_openai.py), and reads the last line of its output.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from loopback_guard import loopback_only, needs  # noqa: F401 (autouse fixtures)

pytestmark = [pytest.mark.server, needs(mem0="mem0", sentence_transformers="embeddings")]

TESTS = Path(__file__).resolve().parents[1]
SUPPORT = TESTS / "support"
FIXTURES = TESTS / "fixtures"

INNER = """
import json
from pathlib import Path

from cli_support import run_inspect_cli
from loopback_openai import LoopbackOpenAI, mem0_facts

FIXTURES = Path(%r)


def test_one_longmemeval_question_with_mem0(tmp_path: Path) -> None:
    with LoopbackOpenAI(mem0_facts) as server:
        args = tmp_path / "mem0.json"
        args.write_text(json.dumps({"llm_base_url": server.url, "turns_per_add": 8}))
        done = run_inspect_cli(
            [
                *("eval", "memevals/longmemeval_s", "--model", "mockllm/model", "--limit", "1"),
                *("-T", f"data_dir={FIXTURES}", "-T", "verify_checksum=false"),
                *("-T", "memory=mem0", "-T", f"memory_args={args}", "--display", "none"),
                *("--log-dir", str(tmp_path / "logs")),
            ],
            cwd=tmp_path,
            env={"MEMEVALS_CACHE_DIR": str(tmp_path / "cache")},
        )
    assert done.returncode == 0, done.stderr[-2000:]
"""


def test_a_pytest_run_touching_mem0_ends_with_its_summary(tmp_path: Path) -> None:
    test_file = tmp_path / "test_inner_mem0.py"
    test_file.write_text(INNER % str(FIXTURES), encoding="utf-8")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
            *("-p", "no:randomly", "--rootdir", str(tmp_path), str(test_file)),
        ],
        cwd=tmp_path,
        env={**_env(), "PYTHONPATH": str(SUPPORT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = (done.stdout + done.stderr).rstrip().splitlines()
    assert done.returncode == 0, "\n".join(out[-40:])
    assert out[-1].startswith("1 passed in "), "\n".join(out[-40:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}

"""`inspect eval ... -T memory=graphiti` with an LLM endpoint that cannot serve graphiti, through
the real CLI (issue 28, point 7): a port where nothing listens, and a server that answers
`json_schema` with HTTP 500 as llama-cpp-python's server 0.3.36 does. Each run stops when the
task is built, before any sample: one short message naming the URL, what is missing and
`memory_args`, no traceback, exit status 1, no log, and nothing asked of the server but the
one endpoint check.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from loopback_guard import needs
from loopback_openai import LoopbackOpenAI, free_port, json_mode_only

from memevals.memory_systems.endpoint import is_probe

pytestmark = [pytest.mark.server, needs(graphiti_core="graphiti")]

#: Seconds a failed run may take: the CLI's imports on a busy machine; no ingestion, no retry.
BOUND_S = 150


def _run(inspect_cli: Any, url: str) -> tuple[str, float]:
    started = time.monotonic()
    res = inspect_cli(
        "eval",
        "memevals/locomo",
        "--model",
        "mockllm/model",
        "--limit",
        "1",
        "-T",
        "memory=graphiti",
        "-T",
        f"memory_args=llm_base_url={url},llm_model=local",
        timeout=BOUND_S + 60,
    )
    elapsed = time.monotonic() - started
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    assert "Traceback" not in out and 'File "' not in out, out[-3000:]
    assert len(out.strip().splitlines()) <= 8, out
    return " ".join(out.split()), elapsed


def test_unreachable_and_incapable_endpoints_fail_in_one_message(
    inspect_cli: Any, tmp_path: Path
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    text, elapsed = _run(inspect_cli, nowhere)
    assert text.startswith(
        f"Error: locomo: graphiti: the LLM endpoint {nowhere} (model 'local') cannot be reached ("
    ), text
    assert '-T memory_args="llm_base_url=http://HOST:PORT/v1,llm_model=NAME"' in text
    assert elapsed < BOUND_S

    with LoopbackOpenAI(json_mode_only, answer_probes=False) as server:
        url = server.url
        text, elapsed = _run(inspect_cli, url)
        asked = list(server.requests)
    assert text.startswith(
        f"Error: locomo: graphiti: the LLM endpoint {url} (model 'local') failed a "
        "response_format json_schema (structured output) request with HTTP 500 ("
    ), text
    assert "memory_args" in text and elapsed < BOUND_S
    assert len(asked) == 1 and is_probe(asked[0])  # the check, then nothing
    assert not (tmp_path / "logs").exists()

"""A memory system's failure is one line, before the expensive part where possible (issue 40,
item 5), through the real `inspect eval` with scripted endpoints reproducing each failure:

- langmem, a model that answers the memory manager with text (no tool call) although it passes
  the tool-call probe: the task is refused at its build, in one line, before any history is
  ingested;
- graphiti with `llm_max_tokens=512`, a model whose structured reply is cut at the limit
  (finish_reason "length", JSON ending inside a string): the ingestion stops at the first cut
  reply, named as such with the limit and the fix;
- observations, a memory model that writes no JSON: each failed history is one warning line
  naming the system, the history, the model and the cause, the sample's error that same line,
  and the screen shows no chained traceback of the cause (it is in the log only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log
from loopback_graphiti import graphiti_facts
from loopback_guard import loopback_only, needs, run_guarded  # noqa: F401 (autouse fixture)
from loopback_openai import LoopbackOpenAI, probe_answer

from memevals.memory_systems.endpoint import PROBE_NAME

pytestmark = [pytest.mark.server]

TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "fixtures"
INSPECT = str(TESTS / "support" / "inspect_offline.py")
#: The fixture's first two questions, each its own haystack.
FIRST, SECOND = "fx01a2b3", "fx02c4d5"
LONGMEMEVAL = [
    *("memevals/longmemeval_s", "--model", "mockllm/model"),
    *("-T", f"data_dir={FIXTURES}", "-T", "verify_checksum=false"),
]


def _squeezed(text: str) -> str:
    # Inspect's console wraps at its width: compare without whitespace
    return "".join(text.split())


def _eval(tmp_path: Path, *args: str) -> tuple[int, str]:
    env = {"MEMEVALS_CACHE_DIR": str(tmp_path / "cache"), "OPENAI_API_KEY": "test-key"}
    done = run_guarded(INSPECT, ["eval", *LONGMEMEVAL, *args], tmp_path, env=env, timeout=300)
    return done.returncode, done.stdout + done.stderr


def _memory_args(tmp_path: Path, **args: Any) -> str:
    path = tmp_path / "memory_args.json"
    path.write_text(json.dumps(args), encoding="utf-8")
    return f"memory_args={path}"


@needs(langmem="langmem", sentence_transformers="embeddings")
def test_langmem_manager_without_tool_calls_is_refused_before_ingesting(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> str | dict[str, Any]:
        if any(t["function"]["name"] == PROBE_NAME for t in body.get("tools") or []):
            return probe_answer(body)  # the tool-call probe passes
        return "Noted: Alex adopted a beagle called Biscuit."  # the manager gets prose

    with LoopbackOpenAI(reply, answer_probes=False) as server:
        url = server.url
        args = _memory_args(tmp_path, llm_base_url=url, llm_model="chatty")
        code, out = _eval(tmp_path, "--limit", "1", "-T", "memory=langmem", "-T", args)
        asked = [b for b in server.requests if b.get("tool_choice") != "required"]
    assert code == 1, out[-3000:]
    message = (
        f"longmemeval_s: langmem: the LLM endpoint {url} (model 'chatty') stored no memory "
        "from the memory manager's call on a two-turn test session (it answered 'Noted: Alex "
        "adopted a beagle called Biscuit.'): langmem needs a model that answers the manager with "
        "tool calls"
    )
    assert _squeezed(message) in _squeezed(out), out[-3000:]
    assert "Traceback" not in out and len(out.strip().splitlines()) <= 15, out
    # one manager call, on the test session; no history was ingested, no log written
    assert len(asked) == 1 and PROBE_NAME in json.dumps(asked[0])
    assert not (tmp_path / "logs").exists()


@needs(graphiti_core="graphiti", sentence_transformers="embeddings")
def test_graphiti_reply_cut_at_the_token_limit_is_named(tmp_path: Path) -> None:
    def cut(body: dict[str, Any]) -> dict[str, Any]:
        # the structured reply stops inside a string, as at a token limit
        text = graphiti_facts(body)[:30]
        return {"role": "assistant", "content": text, "finish_reason": "length"}

    with LoopbackOpenAI(cut) as server:
        url = server.url
        args = _memory_args(
            tmp_path, llm_base_url=url, llm_model="small", llm_max_tokens=512,
            llm_max_retries=0, turns_per_episode=50,
        )  # fmt: skip
        _, out = _eval(
            tmp_path, "--limit", "1", "-T", "memory=graphiti", "-T", args, "--log-dir", "logs"
        )
        calls = server.count
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "error" and log.error is not None, out[-3000:]
    expected = (
        f"graphiti: ingestion of {FIRST} failed: graphiti: history '{FIRST}': the model's reply "
        "was cut at the token limit (finish_reason 'length' at max_tokens=512), so its JSON is "
        "incomplete; "
        "the limit is llm_max_tokens=512: raise it in -T memory_args (e.g. llm_max_tokens=2048) "
        f"or leave it out for graphiti's own limits (endpoint {url}, model 'small')"
    )
    assert expected in log.error.message
    # named at the first cut reply: graphiti's retries of an unreadable reply never ran
    assert calls == 1
    assert "The above exception was the direct cause" not in out, out[-3000:]
    assert "Unterminated string" not in out and "JSONDecodeError" not in out, out[-3000:]


def test_observations_model_without_json_is_one_line_per_history(tmp_path: Path) -> None:
    # mockllm's reply is a sentence: no JSON array of facts
    code, out = _eval(
        tmp_path, "--limit", "2", "-T", "memory=observations", "--no-fail-on-error",
        "--model-role", "memory=mockllm/model", "--display", "plain", "--log-dir", "logs",
    )  # fmt: skip
    assert code == 0, out[-3000:]
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.samples is not None and len(log.samples) == 2
    for sample, history in zip(log.samples, (FIRST, SECOND), strict=True):
        assert sample.error is not None
        message = sample.error.message  # Inspect logs the error's repr
        assert message.startswith(f'MemorySystemError("observations: ingestion of {history} failed')
        assert "the memory model's reply was unusable twice" in message
        assert "the reply is not valid JSON" in message
        assert message.endswith(
            "needs a memory model that writes the format its prompt asks for (--model-role "
            'memory=<model>) (memory model mockllm/model)")'
        )
        # the screen: the harness's warning once per history (Inspect adds its own line per
        # sample error), and no cause chained under it
        warning = _squeezed(f"memory observations: ingestion of {history} failed")
        assert _squeezed(out).count(warning) == 1, out
    assert "The above exception was the direct cause" not in out, out[-3000:]
    assert "BadReply" not in out, out[-3000:]

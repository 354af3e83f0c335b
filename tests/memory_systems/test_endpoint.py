"""The endpoint check of a memory system's own LLM (memevals.memory_systems.endpoint): one tiny
request per need, against loopback servers that can or cannot do what is asked (one refuses
`json_schema` with HTTP 500, as llama-cpp-python's server 0.3.36 does), and a port where
nothing listens. A failure is one line naming the URL, what is missing and the memory_args;
a pass is remembered for the process by (endpoint, model, need).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loopback_openai import LoopbackOpenAI, free_port, json_mode_only, plain

from memevals.core.memory_system import MemorySystemError
from memevals.memory_systems.endpoint import PROBE_NAME, forget_probes, is_probe, preflight

pytestmark = pytest.mark.server

KEY = "sk-probe-secret-0815"
HOW = (
    ': -T memory_args="llm_base_url=http://HOST:PORT/v1,llm_model=NAME" '
    "(lm-eval: the same memory_args in --metadata; docs/memory_systems.md)"
)


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    forget_probes()
    yield
    forget_probes()


def test_a_capable_endpoint_is_asked_once_per_need() -> None:
    with LoopbackOpenAI(plain("unused"), answer_probes=True, api_key=KEY) as server:
        for _ in range(3):
            preflight(server.url, KEY, "m1", system="graphiti")
        assert len(server.probes) == 1 and server.count == 0
        (body,) = server.probes
        assert is_probe(body)
        assert body["model"] == "m1" and body["max_tokens"] == 64 and body["temperature"] == 0
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["name"] == PROBE_NAME
        # another model, another need: asked again, each once
        preflight(server.url + "/", KEY, "m2", system="graphiti")
        preflight(server.url, KEY, "m1", system="langmem", needs=("json_object", "tool_calls"))
        preflight(server.url, KEY, "m1", system="langmem", needs=("tool_calls",))
        kinds = [
            ("tools" if b.get("tools") else b["response_format"]["type"], b["model"])
            for b in server.probes
        ]
        assert kinds == [
            ("json_schema", "m1"),
            ("json_schema", "m2"),
            ("json_object", "m1"),
            ("tools", "m1"),
        ]
        tool_probe = server.probes[-1]
        assert tool_probe["tool_choice"] == "required"
        assert [t["function"]["name"] for t in tool_probe["tools"]] == [PROBE_NAME]


def test_a_server_refusing_json_schema_is_named_in_one_line() -> None:
    with LoopbackOpenAI(json_mode_only, answer_probes=False) as server:
        url = server.url
        preflight(url, KEY, "local", system="mem0", needs=("json_object",))
        with pytest.raises(MemorySystemError) as err:
            preflight(server.url, KEY, "local", system="graphiti")
        assert server.count == 2  # one probe each; the refused need is not remembered
        with pytest.raises(MemorySystemError):
            preflight(server.url, KEY, "local", system="graphiti")
        assert server.count == 3
    assert str(err.value) == (
        f"graphiti: the LLM endpoint {url} (model 'local') failed a response_format "
        'json_schema (structured output) request with HTTP 500 ({"error": {"message": '
        "\"response_format type 'json_schema': only 'text' or 'json_object'\"}}); graphiti "
        "needs an OpenAI-compatible server that answers a response_format json_schema "
        f"(structured output) request{HOW}"
    )
    assert "\n" not in str(err.value) and KEY not in str(err.value)


def test_nothing_listening_is_named_at_once() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(MemorySystemError) as err:
        preflight(url, KEY, "gpt-4o-mini", system="graphiti", timeout_s=5)
    text = str(err.value)
    assert text.startswith(
        f"graphiti: the LLM endpoint {url} (model 'gpt-4o-mini') cannot be reached ("
    )
    assert text.endswith(HOW) and "\n" not in text


def test_what_a_server_answers_wrongly() -> None:
    with LoopbackOpenAI(plain("Sure! Here it is."), answer_probes=False) as server:
        with pytest.raises(MemorySystemError, match=r"answered a tool-calling request with "):
            preflight(server.url, KEY, "m", system="langmem", needs=("tool_calls",))
        with pytest.raises(MemorySystemError) as err:
            preflight(server.url, KEY, "m", system="mem0", needs=("json_object",))
        assert "with text that is not a JSON object ('Sure! Here it is.')" in str(err.value)
    # a reply cut at the probe's token limit passes: the server took the request (a model
    # that thinks first spends the few tokens before its answer)
    thinking = {"role": "assistant", "content": "<think>The user", "finish_reason": "length"}
    with LoopbackOpenAI(lambda body: thinking, answer_probes=False) as server:
        preflight(server.url, KEY, "m", system="graphiti")
        assert server.count == 1
    # a fenced JSON object passes, as graphiti and mem0 strip the fence themselves
    with LoopbackOpenAI(plain('```json\n{"ok": true}\n```'), answer_probes=False) as server:
        preflight(server.url, KEY, "m", system="mem0", needs=("json_object",))
    with LoopbackOpenAI(plain("{}"), answer_probes=False, api_key="right") as server:
        url = server.url
        with pytest.raises(MemorySystemError, match=r"refused the API key \(HTTP 401: set "):
            preflight(url, "wrong", "m", system="mem0", needs=("json_object",))
    with pytest.raises(ValueError, match="unknown need 'json'"):
        preflight("http://127.0.0.1:9/v1", KEY, "m", system="x", needs=("json",))


def test_each_system_checks_what_it_sends() -> None:
    """graphiti checks json_schema (json_object with structured_output=json_object), mem0
    json_object; `llm_preflight=false` asks nothing."""
    pytest.importorskip("graphiti_core", reason="needs the [graphiti] extra")
    pytest.importorskip("mem0", reason="needs the [mem0] extra")
    from memevals.memory_systems.graphiti import graphiti_system
    from memevals.memory_systems.mem0 import mem0_system

    with LoopbackOpenAI(json_mode_only, answer_probes=False, api_key=KEY) as server:
        args = {"llm_base_url": server.url, "llm_model": "local", "llm_api_key": KEY}
        mem0_system(**args).preflight()
        assert [b["response_format"]["type"] for b in server.requests] == ["json_object"]
        with pytest.raises(
            MemorySystemError, match=r"^graphiti: the LLM endpoint .* HTTP 500"
        ) as e:
            graphiti_system(**args).preflight()
        # graphiti names the setting that serves a server with JSON mode only
        assert (
            'llm_model=NAME" or structured_output=json_object (a server with JSON mode only) '
            "(lm-eval:" in str(e.value)
        )
        graphiti_system(**args, llm_preflight=False).preflight()
        mem0_system(**args).preflight()  # remembered
        graphiti_system(**args, structured_output="json_object").preflight()  # remembered too
        assert server.count == 2

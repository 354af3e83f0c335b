"""The preflight of a memory system's own LLM endpoint: reachable, and able to do what the
system sends it, checked with one tiny request per need before anything is ingested.

graphiti asks for `json_schema` structured output, mem0 for a `json_object`, a tool-calling
system for tool calls; a server that cannot (llama-cpp-python's server answers `json_schema`
with HTTP 500) or that is not there would otherwise fail deep inside the first ingestion, one
long traceback per sample. `preflight` fails instead with one line naming the endpoint, what
is missing and the `memory_args` to change:

    preflight("http://127.0.0.1:8080/v1", key, "qwen", system="graphiti")

A need that passed is remembered for the process by (endpoint, model, need): a run asks once,
not once per sample or task. A failure is not remembered (the server may come up). A system
passes `hints` to name another setting that avoids a need (graphiti's JSON mode).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memevals.core.memory_system import MemorySystemError

__all__ = [
    "NEEDS",
    "PREFLIGHT_TIMEOUT_S",
    "PROBE_NAME",
    "EndpointClient",
    "check_once",
    "forget_probes",
    "is_probe",
    "one_line",
    "preflight",
]

#: What a system may need of its endpoint (each is one probe request):
#: `json_schema`: response_format json_schema (structured output);
#: `json_object`: response_format json_object (JSON mode);
#: `tool_calls`: a tool call back for a request with one tool and tool_choice "required".
NEEDS: tuple[str, ...] = ("json_schema", "json_object", "tool_calls")
#: The schema and tool name of the probes; their question starts with it (`is_probe`).
PROBE_NAME = "memevals_endpoint_check"
#: The longest a system's endpoint check waits for its one reply (a model still loading answers
#: late); a shorter `llm_timeout_s` bounds it instead.
PREFLIGHT_TIMEOUT_S = 60.0
#: Tokens a probe may generate: the expected reply is `{"ok": true}` or one short tool call.
PROBE_MAX_TOKENS = 64

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
_ASK = f'{PROBE_NAME}: reply with the JSON object {{"ok": true}} and nothing else.'
_ASK_TOOL = f"{PROBE_NAME}: call the tool {PROBE_NAME} with ok set to true."
#: What a system sends for each need, in the words of the message.
_DOING = {
    "json_schema": "a response_format json_schema (structured output) request",
    "json_object": "a response_format json_object (JSON mode) request",
    "tool_calls": "a tool-calling request (tools with tool_choice)",
}
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)

_passed: set[tuple[str, str, str]] = set()
_lock = threading.Lock()


def is_probe(body: dict[str, Any]) -> bool:
    """True for a chat-completions request body that a check of this module's sent: a probe
    (its last message is the probe's question) or a system's own check call (`check_once`)
    on text that carries `PROBE_NAME:` (langmem's manager call on a test session).

    Args:
        body: the request's JSON body.

    Returns:
        Whether it is a check's request.
    """
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    return any(f"{PROBE_NAME}:" in str(m.get("content") or "") for m in messages)


def forget_probes() -> None:
    """Forget every need and check that passed in this process (tests; a server swapped
    under a run)."""
    with _lock:
        _passed.clear()


def check_once(key: tuple[str, str, str], check: Callable[[], None]) -> None:
    """Run `check` unless one with this key passed in this process; remember it when it
    passes (a failure is not remembered: the server may be fixed).

    Args:
        key: (endpoint URL, model, what is checked).
        check: raises MemorySystemError when the endpoint fails it.
    """
    with _lock:
        if key in _passed:
            return
    check()
    with _lock:
        _passed.add(key)


def preflight(
    base_url: str,
    api_key: str,
    model: str,
    *,
    system: str,
    needs: Sequence[str] = ("json_schema",),
    timeout_s: float = 30.0,
    hints: Mapping[str, str] | None = None,
) -> None:
    """Check that the endpoint answers the kind of request `system` sends, once per need.

    Args:
        base_url: the OpenAI-compatible base URL (`.../v1`; `/chat/completions` is added).
        api_key: the key sent as `Authorization: Bearer` (never part of a message).
        model: the model name the system asks for.
        system: the memory system's name, which starts the message (`graphiti: ...`).
        needs: what the system needs of the endpoint, from NEEDS.
        timeout_s: the limit of one probe request in seconds.
        hints: per need, another `memory_args` setting that avoids it, named in its message
            (graphiti: `{"json_schema": "structured_output=json_object"}`).

    Raises:
        MemorySystemError: one line naming the URL, what failed or is missing and the
            `memory_args` that choose another endpoint or model.
        ValueError: a need that is not one of NEEDS.
    """
    unknown = [n for n in needs if n not in NEEDS]
    if unknown:
        raise ValueError(f"preflight: unknown need {unknown[0]!r} (known: {', '.join(NEEDS)})")
    url = base_url.rstrip("/")
    for need in needs:
        key = (url, model, need)
        with _lock:
            if key in _passed:
                continue
        problem = _probe(url, api_key, model, need, timeout_s)
        if problem is not None:
            hint = (hints or {}).get(need)
            other = f" or {hint}" if hint else ""
            raise MemorySystemError(
                f"{system}: the LLM endpoint {url} (model {model!r}) {problem}; {system} needs "
                f"an OpenAI-compatible server that answers {_DOING[need]}: "
                f'-T memory_args="llm_base_url=http://HOST:PORT/v1,llm_model=NAME"{other} '
                "(lm-eval: the same memory_args in --metadata; docs/memory_systems.md)"
            )
        with _lock:
            _passed.add(key)


def _request(model: str, need: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": PROBE_MAX_TOKENS,
        "temperature": 0,
        "messages": [{"role": "user", "content": _ASK_TOOL if need == "tool_calls" else _ASK}],
    }
    if need == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": PROBE_NAME, "schema": _SCHEMA},
        }
    elif need == "json_object":
        body["response_format"] = {"type": "json_object"}
    else:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": PROBE_NAME,
                    "description": "Confirms that tool calls work.",
                    "parameters": _SCHEMA,
                },
            }
        ]
        body["tool_choice"] = "required"
    return body


def one_line(text: str, limit: int = 160) -> str:
    """`text` on one line (whitespace runs made one space), cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _probe(url: str, api_key: str, model: str, need: str, timeout_s: float) -> str | None:
    """What is wrong with the endpoint for `need` (None when the probe passed)."""
    import httpx

    try:
        response = httpx.post(
            f"{url}/chat/completions",
            json=_request(model, need),
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout_s,
        )
    except httpx.TimeoutException:
        return f"did not answer within {timeout_s:g} s"
    except httpx.HTTPError as exc:
        reason = one_line(str(exc) or type(exc).__name__, 100)
        return f"cannot be reached ({reason})"
    status = response.status_code
    if status in (401, 403):
        return f"refused the API key (HTTP {status}: set OPENAI_API_KEY or llm_api_key)"
    if status == 404:
        return f"has no /chat/completions or no such model (HTTP 404: {one_line(response.text)})"
    if status >= 400:
        return f"failed {_DOING[need]} with HTTP {status} ({one_line(response.text)})"
    try:
        choice = response.json()["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return f"answered with no chat completion ({one_line(response.text)})"
    if choice.get("finish_reason") == "length" and not message.get("tool_calls"):
        # the server took the request; a model that thinks first spent the probe's few
        # tokens before its answer, which says nothing about what the system will get
        return None
    if need == "tool_calls":
        calls = message.get("tool_calls") or []
        if not calls:
            content = one_line(str(message.get("content") or ""))
            return f"answered a tool-calling request with text, not a tool call ({content!r})"
        return None
    content = str(message.get("content") or "")
    fenced = _FENCE.match(content)
    try:
        parsed = json.loads(fenced.group(1) if fenced else content)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        quoted = one_line(content)
        return f"answered {_DOING[need]} with text that is not a JSON object ({quoted!r})"
    return None


class EndpointClient:
    """What a memory system calling an OpenAI-compatible LLM shares: its call settings logged
    as `runtime_args` (never keyed: no stored memory depends on them) and its endpoint check.

    The system sets the attributes below in its constructor.
    """

    name: str
    llm_base_url: str
    llm_model: str
    llm_timeout_s: float
    llm_max_retries: int
    llm_preflight: bool
    _api_key: str

    @property
    def runtime_args(self) -> Mapping[str, Any]:
        """How the LLM is called, logged with the run's settings but not keyed."""
        return {
            "llm_timeout_s": self.llm_timeout_s,
            "llm_max_retries": self.llm_max_retries,
            "llm_preflight": self.llm_preflight,
        }

    def check_endpoint(self, needs: Sequence[str], hints: Mapping[str, str] | None = None) -> None:
        """`preflight` of this system's endpoint for `needs`, unless `llm_preflight` is off (a
        rerun that reads only stored memories needs no endpoint).

        Args:
            needs: what the system sends (names from NEEDS).
            hints: need -> a memory_args setting that serves a server without it.
        """
        if not self.llm_preflight:
            return
        preflight(
            self.llm_base_url,
            self._api_key,
            self.llm_model,
            system=self.name,
            needs=needs,
            timeout_s=min(self.llm_timeout_s, PREFLIGHT_TIMEOUT_S),
            hints=hints,
        )

"""`faulty/<name>`: a deterministic scripted model that fails on a fixed, seeded share of calls.

Registered as an Inspect model API, so it runs in-process (``get_model("faulty/answerer",
fault_rate=0.3)``) and from the real CLI (``python tests/support/faulty_model.py eval ...
--model faulty/answerer -M fault_rate=0.3``; this file then hands over to Inspect's own
command-line entry point, exactly like tests/support/inspect_offline.py).

Why deterministic: a reliability test must fail on a regression, never by chance. Whether a call
faults depends only on (seed, the call's input, how many times this input was already tried), so
the same run injects the same faults whatever the concurrency or scheduling.

Model args (``-M`` on the CLI):
    fault_rate: share of calls that fault (0 = never).
    faults: comma-separated kinds to draw from: ``error`` (a retryable provider error, like a
        503), ``timeout`` (the call hangs until Inspect's ``attempt_timeout`` abandons it),
        ``empty`` (an HTTP 200 stream with no data, Inspect's NoStreamDataError), ``fatal``
        (a non-retryable error: the sample fails and only ``retry_on_error`` reruns it).
    seed: seeds the fault schedule.
    delay: seconds every call takes (a slow provider, for the kill-and-resume test).
    hang: seconds a ``timeout`` fault hangs (bounded, so a missing attempt_timeout cannot hang
        a test for long).
    fault_log: file that gets one JSON line per injected fault (counts across processes).
    call_log: file that gets one JSON line per successful call.
    judge: answer judge prompts with a verdict JSON by tests/support/scripted_judge.py's lenient
        rule (a grader that is flaky at the transport level but never unreadable).

The answer is a fixed function of the last user message (never of the attempt), so a retried
call gets the same answer as a first-time call.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.model import ChatMessage, GenerateConfig
from inspect_ai.model._stream import NoStreamDataError
from scripted_api import ScriptedAPI, register, run_inspect
from scripted_judge import scripted_verdict
from tenacity.wait import wait_fixed

KINDS = ("error", "timeout", "empty", "fatal")

#: Faults injected in this process, by kind (read by the reliability summary).
INJECTED: Counter[str] = Counter()


class ProviderFault(RuntimeError):
    """A transient provider error (retryable)."""


class FatalProviderFault(RuntimeError):
    """A provider error that the model layer does not retry."""


def _unit(*parts: object) -> float:
    """A number in [0, 1) that depends only on `parts`."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def scripted_answer(text: str) -> str:
    """A deterministic answer: a refusal for a third of the questions, else their last words.

    Gives non-trivial LoCoMo scores (refusals score on adversarial questions, question words
    sometimes overlap the gold) without looking at the gold.
    """
    if _unit("answer", text) < 1 / 3:
        return "Not mentioned in the conversation"
    question = [line for line in text.splitlines() if line.strip()]
    words = " ".join(question[:1]).split()
    return " ".join(words[-4:]) if words else "nothing"


class FaultyModel(ScriptedAPI):
    provider = "faulty"

    def configure(
        self,
        fault_rate: float = 0.0,
        faults: str | list[str] = "error",
        seed: int = 0,
        delay: float = 0.0,
        hang: float = 5.0,
        fault_log: str | None = None,
        call_log: str | None = None,
        judge: bool = False,
        **other: Any,
    ) -> None:
        if other:
            raise ValueError(f"faulty model: unknown model args {sorted(other)}")
        self.fault_rate = float(fault_rate)
        # the CLI reads `-M faults=error,empty` as a list
        listed = faults if isinstance(faults, list) else str(faults).split(",")
        self.kinds = tuple(str(k).strip() for k in listed if str(k).strip())
        unknown = set(self.kinds) - set(KINDS)
        if unknown or not self.kinds:
            raise ValueError(f"faulty model: faults must be a subset of {KINDS}, got {faults!r}")
        self.seed = int(seed)
        self.delay = float(delay)
        self.hang = float(hang)
        self.fault_log = Path(fault_log) if fault_log else None
        self.call_log = Path(call_log) if call_log else None
        self.judge = bool(judge)
        self.attempts: Counter[str] = Counter()

    def _record(self, path: Path | None, entry: dict[str, Any]) -> None:
        if path is not None:
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")

    async def answer(self, messages: list[ChatMessage], config: GenerateConfig) -> str:
        key = hashlib.sha256(
            "\x1e".join(f"{m.role}:{m.text}" for m in messages).encode("utf-8")
        ).hexdigest()
        attempt = self.attempts[key]
        self.attempts[key] += 1
        if self.delay:
            await anyio.sleep(self.delay)
        if _unit(self.seed, key, attempt) < self.fault_rate:
            kind = self.kinds[int(_unit("kind", self.seed, key, attempt) * len(self.kinds))]
            INJECTED[kind] += 1
            self._record(self.fault_log, {"kind": kind, "key": key[:16], "attempt": attempt})
            if kind == "error":
                raise ProviderFault(f"injected 503 (attempt {attempt})")
            if kind == "fatal":
                raise FatalProviderFault(f"injected non-retryable error (attempt {attempt})")
            if kind == "empty":
                raise NoStreamDataError(f"injected empty stream (attempt {attempt})")
            await anyio.sleep(self.hang)  # "timeout": Inspect's attempt_timeout cancels this
            raise ProviderFault(f"injected hang outlived its {self.hang}s bound")
        last_user = next((m.text for m in reversed(messages) if m.role == "user"), "")
        if self.judge:
            answer = scripted_verdict(messages[0].text, "lenient")
        else:
            answer = scripted_answer(last_user)
        self._record(self.call_log, {"key": key[:16], "attempt": attempt})
        return answer

    def should_retry(self, ex: Exception) -> bool:
        return isinstance(ex, ProviderFault)

    def retry_wait(self) -> Any:
        # Inspect backs off from 3 s by default; a test needs the retries, not the waiting.
        return wait_fixed(0.01)

    def max_connections(self) -> int:
        return 10


register(FaultyModel)


if __name__ == "__main__":
    run_inspect()

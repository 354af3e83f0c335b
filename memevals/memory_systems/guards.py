"""What the memory systems with their own LLM endpoint share to fail in one line, or not at all.

- `close_at_exit`: the stores a process still holds open are closed at its exit, while closing
  still works (embedded qdrant and Kuzu left to the interpreter's teardown print tracebacks
  after the last line a command printed).
- `was_cut` / `cut_reply_error`: a reply the endpoint cut at its token limit (`finish_reason`
  "length", or JSON that ends early) is named as such, with the `llm_max_tokens` value and the
  fix, instead of the parser's error about an unterminated string.
"""

from __future__ import annotations

import atexit
import json
import sys
import threading
from collections.abc import Callable, MutableMapping
from typing import Any, Protocol

from memevals.core.memory_system import MemorySystemError

__all__ = [
    "CutReply",
    "close_at_exit",
    "cut_reply_error",
    "ended_early",
    "unreadable_cut",
    "was_cut",
]


class _Closable(Protocol):
    key: str

    def close(self) -> None: ...


def close_at_exit(
    system: str,
    open_stores: MutableMapping[str, Any],
    lock: threading.Lock,
    drain: Callable[[], None],
) -> None:
    """Register, at the interpreter's exit, the closing of every store still in `open_stores`.

    Args:
        system: the memory system's name (a store that fails to close is named in one line).
        open_stores: the module's open stores by key, each with `key` and an idempotent
            `close()`.
        lock: the lock guarding `open_stores`.
        drain: gives back the stores of indexes the garbage collector took.
    """

    def close_all() -> None:
        drain()
        with lock:
            stores: list[_Closable] = list(open_stores.values())
            open_stores.clear()
        for store in stores:
            try:
                store.close()
            except Exception as exc:  # one store failing to close must not keep others open
                print(f"{system}: closing the store {store.key} failed: {exc}", file=sys.stderr)

    atexit.register(close_all)


def was_cut(response: Any) -> bool:
    """True when a chat completion's (first) choice stopped at the token limit.

    Args:
        response: an OpenAI-client chat completion (or anything shaped like one).

    Returns:
        Whether its `finish_reason` is "length".
    """
    choices = getattr(response, "choices", None) or []
    return bool(choices) and getattr(choices[0], "finish_reason", None) == "length"


class CutReply(MemorySystemError):
    """A reply the endpoint cut at the token limit that cannot be read: raised at once by a
    system's client (a retry at temperature 0 is cut the same way; graphiti's would wait)."""


def unreadable_cut(response: Any) -> bool:
    """True when a chat completion stopped at the token limit and its text is no JSON (a reply
    cut exactly after its closing brace is still read).

    Args:
        response: an OpenAI-client chat completion.

    Returns:
        Whether the reply is cut and unreadable.
    """
    if not was_cut(response):
        return False
    message = getattr(response.choices[0], "message", None)
    text = str(getattr(message, "content", None) or "").strip()
    text = text.removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


def ended_early(exc: BaseException) -> json.JSONDecodeError | None:
    """The JSON error in `exc`'s chain that a reply ending early gives (the parser reached the
    end of the text still inside a value), or None.

    Args:
        exc: the failure.

    Returns:
        That JSONDecodeError, if any.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, json.JSONDecodeError) and (
            current.msg.startswith("Unterminated") or current.pos >= len(current.doc.rstrip())
        ):
            return current
        current = current.__cause__ or current.__context__
    return None


def cut_reply_error(
    system: str,
    history_id: str,
    cut_at: int | None,
    llm_max_tokens: int | None,
    exc: BaseException,
) -> MemorySystemError | None:
    """The one-line error of an ingestion that failed on a reply cut at the token limit, or
    None when nothing says a reply was cut.

    Args:
        system: the memory system's name.
        history_id: the history being ingested.
        cut_at: the `max_tokens` of the last reply the endpoint cut (finish_reason "length"),
            0 when one was cut under no limit of ours, None when none was.
        llm_max_tokens: the system's `llm_max_tokens` setting (None: not set).
        exc: the failure.

    Returns:
        The error naming the cut, the limit and the fix.
    """
    early = ended_early(exc)
    if cut_at is None and early is None:
        return None
    if cut_at is None:
        how = "its JSON ends early"
    else:
        how = "finish_reason 'length'" + (f" at max_tokens={cut_at}" if cut_at else "")
    cause = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
    if llm_max_tokens is not None:
        fix = (
            f"the limit is llm_max_tokens={llm_max_tokens}: raise it in -T memory_args (e.g. "
            f"llm_max_tokens={llm_max_tokens * 4}) or leave it out for {system}'s own limits"
        )
    else:
        fix = (
            "llm_max_tokens is not set, so the limit is the server's or the model's own: raise "
            "the server's output limit (llama.cpp: --n-predict, --ctx-size)"
        )
    unread = "so its JSON is incomplete" if isinstance(exc, CutReply) else f"and unread ({cause})"
    return MemorySystemError(
        f"{system}: history {history_id!r}: the model's reply was cut at the token limit "
        f"({how}), {unread}; {fix}"
    )

"""Per-object memos for pure functions of immutable objects.

A frozen dataclass of tuples (a parsed conversation) is hashed field by field, so an
`lru_cache` keyed on it re-reads the whole object on every call. `per_object` keys on the
object's identity instead and forgets the entry when the object is garbage-collected, so a new
object that happens to reuse the address never sees an old result.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from functools import update_wrapper
from typing import Any, Generic, TypeVar

__all__ = ["PerObject", "per_object"]

T = TypeVar("T")
R = TypeVar("R")


class PerObject(Generic[T, R]):
    """`fn` memoised per live object (see `per_object`)."""

    def __init__(self, fn: Callable[[T], R]) -> None:
        self._fn = fn
        self._results: dict[int, tuple[weakref.ref[Any], R]] = {}
        self._lock = threading.Lock()
        update_wrapper(self, fn)

    def __call__(self, obj: T) -> R:
        key = id(obj)
        hit = self._results.get(key)
        if hit is not None and hit[0]() is obj:
            return hit[1]
        value = self._fn(obj)
        with self._lock:
            self._results[key] = (weakref.ref(obj, self._forget(key)), value)
        return value

    def _forget(self, key: int) -> Callable[[weakref.ref[Any]], None]:
        def drop(ref: weakref.ref[Any]) -> None:
            with self._lock:
                hit = self._results.get(key)
                if hit is not None and hit[0] is ref:
                    del self._results[key]

        return drop

    def cache_clear(self) -> None:
        """Forget every result."""
        with self._lock:
            self._results.clear()


def per_object(fn: Callable[[T], R]) -> PerObject[T, R]:
    """Memoise `fn(obj)` per live object `obj`.

    Only for an `fn` whose result depends on nothing but the (immutable) object, and whose
    result no caller mutates (a str, a tuple of frozen values).

    Args:
        fn: a one-argument pure function; its argument must support weak references.

    Returns:
        The memoised function (`cache_clear()` empties it).
    """
    return PerObject(fn)

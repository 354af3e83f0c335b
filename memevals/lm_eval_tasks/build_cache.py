"""One build of a benchmark per options in this process, shared by the lm-eval subtasks of a
run (one per category), so the data are read once and a memory system ingests each history once."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["RecentBuilds"]

OptionsT = TypeVar("OptionsT")
T = TypeVar("T")


class RecentBuilds(Generic[OptionsT, T]):
    """A benchmark's builds of this process, newest last (two at most), keyed by the options'
    repr (`memory_args` may be a mapping): every subtask of a run (one per category) shares one
    build, so the data are read once and a memory system ingests each conversation once."""

    def __init__(self, build: Callable[[OptionsT], T]) -> None:
        """Remember the benchmark's `build` (options -> build).

        Args:
            build: the benchmark's build function.
        """
        self._build = build
        self._built: OrderedDict[str, T] = OrderedDict()

    def __call__(self, options: OptionsT) -> T:
        """The build of `options`, made on first use.

        Args:
            options: the benchmark's options.

        Returns:
            The build, the same object for equal options while it is among the newest two.
        """
        key = repr(options)
        if key not in self._built:
            self._built[key] = self._build(options)
            while len(self._built) > 2:
                self._built.popitem(last=False)
        return self._built[key]

    def clear(self) -> None:
        """Forget every build (a test's subject would keep another test's cache folder)."""
        self._built.clear()

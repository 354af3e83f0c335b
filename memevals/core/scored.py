"""One scored sample as a benchmark's framework-free figures read it.

A benchmark computes its report's figures (means per category, its headline, ...) from scored
samples without a framework; each framework hands its own scores over in this shape (Inspect:
memevals.inspect_tasks.adapters.scored). This module names no benchmark and imports no
framework.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["ScoredSample"]


class ScoredSample(Protocol):
    """A scored sample: its id and metadata, the score's value (None: unscored, or not a
    number) and the score's metadata."""

    @property
    def sample_id(self) -> str | int | None: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...

    @property
    def value(self) -> float | None: ...

    @property
    def score_metadata(self) -> Mapping[str, Any]: ...

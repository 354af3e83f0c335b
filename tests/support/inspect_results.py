"""Reading an Inspect sample's scores the way the dialogue tests compare them across frameworks
(imported by name); logged figures: tests/support/logged_figures.py."""

from __future__ import annotations

from typing import Any

__all__ = ["merged_scores"]


def merged_scores(sample: Any) -> dict[str, Any]:
    """Score values of all scorers merged (names with or without the `memevals/` prefix)."""
    out: dict[str, Any] = {}
    for score in sample.scores.values():
        out |= score.value
    return out


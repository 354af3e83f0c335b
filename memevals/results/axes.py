"""The analysis axes of results: categories in their benchmark's order."""

from __future__ import annotations

from collections.abc import Iterable

from memevals.core.benchmark import Benchmark


def ordered_categories(record: Benchmark | None, categories: Iterable[str]) -> list[str]:
    """Categories in the record's display order, then any others by name."""
    cats = set(categories)
    if record is None:
        return sorted(cats)
    return sorted(cats, key=record.category_rank)

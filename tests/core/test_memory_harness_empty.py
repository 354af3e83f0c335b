"""The harness counts empty retrievals from the per-sample metadata it writes."""

from __future__ import annotations

from memevals.core.memory_harness import ITEMS_KEY, RETURNED_KEY, empty_retrievals


def test_empty_retrievals_counts_samples_whose_system_returned_nothing() -> None:
    records = [
        {RETURNED_KEY: 0, ITEMS_KEY: 0},
        {RETURNED_KEY: 7, ITEMS_KEY: 5},  # cut to k: not empty
        {RETURNED_KEY: 0, ITEMS_KEY: 0},
        {"question": "no memory record (errored before retrieval)"},
        {RETURNED_KEY: 1, ITEMS_KEY: 1},
    ]
    assert (RETURNED_KEY, ITEMS_KEY) == ("memory_returned", "memory_items")
    assert empty_retrievals(records) == 2
    assert empty_retrievals([]) == 0

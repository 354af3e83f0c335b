"""Counters behind the docs/reliability.md figures, filled by the tests as they run.

The reliability conftest prints them at the end of a pytest run and writes them to
``reliability_figures.json`` in the suite's scratch folder (tests/support/scratch.py), so the
README figures can be re-measured with one command instead of being typed in by hand.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, settings

FIGURES: Counter[str] = Counter()
TIMINGS: dict[str, float] = {}


def count(name: str, n: int = 1) -> None:
    FIGURES[name] += n


def fuzz(max_examples: int) -> settings:
    """Fixed number of cases, seeded from the test itself (derandomize): CI is deterministic,
    and a failure found once is found on every run."""
    return settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )

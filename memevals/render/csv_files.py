"""The CSV files of results: the table of runs, the paired comparisons, the flipped questions."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memevals.results.columns import csv_keys, csv_name, table_records
from memevals.results.paired import Comparison, comparison_records, flipped_rows
from memevals.results.rows import Row


def write_table_csv(rows: Sequence[Row], path: Path) -> None:
    """All rows of all benchmarks in one CSV: every figure, an empty cell where a row lacks a
    column or its figure is undefined (never the string nan).

    Args:
        rows: the rows.
        path: the CSV file (its folder is created).
    """
    keys = csv_keys(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([csv_name(k) for k in keys])
        for record in table_records(rows):
            writer.writerow(["" if v is None else v for v in record.values()])


def write_comparison_csv(comparisons: Sequence[Comparison], path: Path) -> None:
    """One line per comparison, score and category (overall first); an undefined figure is an
    empty cell."""
    _write_records(comparison_records(comparisons), path)


def _write_records(records: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        if not records:
            return
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)


#: The columns of the --flips CSV (a header is written even when nothing flipped).
FLIP_COLUMNS = (
    "run_a",
    "run_b",
    "score",
    "id",
    "category",
    "cluster",
    "score_a",
    "score_b",
    "better",
    "gold",
    "reply_a",
    "reply_b",
)


def write_flips(comparisons: Sequence[Comparison], path: Path) -> int:
    """The flipped questions of every comparison as CSV; returns how many rows."""
    records = [r for c in comparisons for r in flipped_rows(c)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(FLIP_COLUMNS))
        writer.writeheader()
        writer.writerows(records)
    return len(records)

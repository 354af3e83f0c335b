"""The report's input: the runs read and compared once, everything the page's figures need.

Runs are read by `memevals.results.runs` (the reader of memevals-compare and memevals-diff);
the rows are memevals-compare's (`rows.row_from_run`), the paired comparisons memevals-diff's
(`paired.compare_runs`). Nothing here prints, parses a command line or writes markup: the
figures of each section are computed from a `Report` by `report_figures` and `report_samples`,
the page drawn by `memevals.render.report_page`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memevals.core.memory_harness import RESULTS_KEY
from memevals.results.agent import logged_files
from memevals.results.paired import (
    EXPLICIT_FACTORS,
    Comparison,
    compare_runs,
    factors_of,
    find_mismatches,
)
from memevals.results.rows import Row, disambiguate, row_from_run
from memevals.results.runs import Run, is_compared, left_out_note, load_runs

__all__ = ["TEXT_LIMIT", "Report", "ReportError", "build_report", "parse_price"]

#: A reply or question longer than this is cut in the question browser (the log has it all).
TEXT_LIMIT = 2000


class ReportError(ValueError):
    """Input the report cannot be made of (the message says which and what to do)."""


@dataclass
class Report:
    """Everything the page shows, computed once."""

    title: str
    runs: list[Run]
    rows: list[Row]
    comparisons: list[Comparison]
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: run index -> sample id -> details (question, metadata fields, judge label)
    details: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    view: str | None = None


# ---------------------------------------------------------------------------------------------
# Input


def parse_price(text: str) -> tuple[str, tuple[float, float]]:
    """`MODEL=IN,OUT` (dollars per million input and output tokens).

    Args:
        text: the option's value.

    Returns:
        (model, (input price, output price)).
    """
    model, sep, rest = text.partition("=")
    parts = rest.split(",")
    try:
        if not sep or not model or len(parts) != 2:
            raise ValueError
        prices = (float(parts[0]), float(parts[1]))
    except ValueError:
        raise ReportError(
            f"--price {text!r}: expected MODEL=IN,OUT in dollars per million tokens, "
            "e.g. openai/gpt-4o-mini=0.15,0.60"
        ) from None
    return model, prices


def _details(run: Run) -> dict[str, dict[str, Any]]:
    """Per sample: the question, the evidence and retrieved ids, a memory system's results, an
    agent's stored memory files, the judge's label (what the question browser shows beside
    the reply). Inspect: read from the log's samples; lm-eval:
    the documents' metadata, which the reader keeps in sample order."""
    out: dict[str, dict[str, Any]] = {}
    if run.framework == "inspect":
        from inspect_ai.log import read_eval_log

        log = read_eval_log(run.path)
        for sample in log.samples or []:
            sid = str(sample.id)
            if sid in out:
                continue
            labels = [
                str(s.metadata["label"])
                for s in (sample.scores or {}).values()
                if s.metadata and s.metadata.get("label") is not None
            ]
            question = sample.input if isinstance(sample.input, str) else ""
            out[sid] = _detail(sample.metadata or {}, question, labels)
    else:
        for sid, md in zip(run.samples, run.epoch_metadata, strict=False):
            out[sid] = _detail(md, "", [])
    return out


def _ids(value: Any) -> list[str]:
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return []


def _detail(md: Mapping[str, Any], fallback: str, labels: list[str]) -> dict[str, Any]:
    question = md.get("question") if isinstance(md.get("question"), str) else fallback
    return {
        "question": str(question or "")[-TEXT_LIMIT:],
        "evidence": _ids(md.get("evidence_ids") or md.get("evidence")),
        "retrieved": _ids(md.get("retrieved_ids")),
        "items": _items(md.get(RESULTS_KEY)),
        "files": logged_files(md),
        "label": ", ".join(labels),
        "metadata": md,
    }


def _items(value: Any) -> list[dict[str, Any]]:
    """A memory system's logged results (`memory_harness.logged_results`), as far as they are
    well formed: text, cited ids, and the whole length when the log cut the text."""
    out: list[dict[str, Any]] = []
    for entry in value if isinstance(value, list) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get("text"), str):
            out.append(
                {
                    "text": entry["text"],
                    "ids": _ids(entry.get("ids")),
                    "chars": entry.get("chars") if isinstance(entry.get("chars"), int) else None,
                }
            )
    return out


def _match(run: Run, wanted: str) -> bool:
    return wanted in (run.path, Path(run.path).name, run.label) or Path(run.path) == Path(wanted)


def _comparisons(
    runs: Sequence[Run], baseline: str | None, resamples: int, seed: int
) -> tuple[list[Comparison], list[str]]:
    """memevals-diff's comparisons: the baseline against every run of its benchmark, else
    every pair that differs in exactly one declared factor and nothing else (what memevals-diff
    compares without --allow-mismatch)."""
    notes: list[str] = []
    pairs: list[tuple[Run, Run]] = []
    if baseline is not None:
        base = [r for r in runs if _match(r, baseline)]
        if not base:
            raise ReportError(
                f"--baseline {baseline!r}: no run has that path, file name or label; "
                "the runs are: " + "; ".join(r.path for r in runs)
            )
        pairs = [(b, r) for b in base for r in runs if r is not b and r.benchmark == b.benchmark]
    else:
        for i, a in enumerate(runs):
            for b in runs[i + 1 :]:
                if a.benchmark != b.benchmark:
                    continue
                shared = [n for n in a.score_names if n in b.score_names]
                differences = find_mismatches(a, b, shared)
                factors = factors_of(a, b, differences)
                fair = all(m.factor is not None for m in differences)
                if len(factors) == 1 and fair and factors[0].name not in EXPLICIT_FACTORS:
                    pairs.append((a, b))
    out = []
    for a, b in pairs:
        c = compare_runs(a, b, resamples=resamples, seed=seed)
        if c.mismatches:
            why = "; ".join(str(m) for m in c.mismatches)
            notes.append(f"{a.label} vs {b.label}: not compared, the runs differ in {why}")
            continue
        out.append(c)
    return out, notes


def _scored_runs(paths: Sequence[str]) -> tuple[list[tuple[Run, Row]], list[Run]]:
    """The runs with a score to compare (each with its table row), and the failed runs."""
    if not paths:
        raise ReportError("no runs given: name Inspect logs, lm-eval samples files or folders")
    runs = load_runs(paths)
    failed = [r for r in runs if not r.has_results]
    kept: list[tuple[Run, Row]] = []
    for run in runs:
        row = row_from_run(run) if run.has_results else None
        if row is not None:
            kept.append((run, row))
    if not kept:
        raise ReportError(
            f"none of the {len(runs)} run(s) has results (a failed or cancelled run): "
            + "; ".join(f"{r.path} (status {r.status})" for r in failed)
        )
    scored = [
        (r, w)
        for r, w in kept
        # a retrieval score is in the row's aux figures (LongMemEval unjudged: nothing else)
        if any(is_compared(r.kinds.get(k), r.record) for k in (*w.kinds, *w.aux))
    ]
    if not scored:
        raise ReportError(
            "the runs have no answer, judge or retrieval score to compare "
            "(are these logs of memevals tasks?): " + "; ".join(r.path for r, _ in kept)
        )
    return scored, failed


def build_report(
    paths: Sequence[str],
    *,
    title: str = "memevals report",
    baseline: str | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    view: str | None = None,
) -> Report:
    """Read the runs and compute everything the page shows.

    Args:
        paths: Inspect logs, lm-eval samples files, or folders of either.
        title: the page title.
        baseline: the run (path, file name or label) every other run is compared with;
            None: every pair differing in exactly one declared factor.
        prices: model -> (dollars per million input tokens, per million output tokens).
        resamples: bootstrap resamples of the paired differences.
        seed: seed of the resampling.
        view: the folder of an Inspect View bundle, relative to the page, to link samples into.

    Returns:
        The report.
    """
    scored, failed = _scored_runs(paths)
    rows = [w for _, w in scored]
    disambiguate(rows)
    runs = [r for r, _ in scored]
    comparisons, notes = _comparisons(runs, baseline, resamples, seed)
    notes += [left_out_note(r) for r in failed]
    return Report(
        title=title,
        runs=runs,
        rows=rows,
        comparisons=comparisons,
        prices=dict(prices or {}),
        details=[_details(r) for r in runs],
        notes=notes,
        view=view,
    )


# ---------------------------------------------------------------------------------------------

"""Judge agreement: per-category agreement and Cohen's kappa between two LLM-judge runs.

    python -m memevals.tools.judge_agreement LOG_A LOG_B      # same samples, judged by two graders
    python -m memevals.tools.judge_agreement LOG              # one log that holds two judge scores

A judge score is any score written by `llm_judge` (a value with a "judge" key and the judge's
label in its metadata). With several judge scores in a log, pick them with --scorer-a /
--scorer-b. Samples are paired by (sample id, epoch); a pair where either judge left the sample
unscored is left out of the statistics and counted in the "unscored" column.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, read_eval_log

from memevals.core.agreement import Agreement, agreement_by_group
from memevals.tools.command_line import prog_name

__all__ = ["JudgeLabel", "collect_labels", "judge_score_names", "main", "report"]


@dataclass(frozen=True)
class JudgeLabel:
    """One judge's verdict on one sample; label None means unscored."""

    category: str
    label: str | None
    score: float | None
    grader: str | None


def _is_judge_score(value: Any, metadata: Any) -> bool:
    return isinstance(value, dict) and "judge" in value and isinstance(metadata, dict)


def judge_score_names(log: EvalLog) -> list[str]:
    """Names of the llm_judge scores present in a log's samples, in order of first appearance."""
    names: list[str] = []
    for sample in log.samples or []:
        for name, score in (sample.scores or {}).items():
            if name not in names and _is_judge_score(score.value, score.metadata):
                names.append(name)
    return names


def _key(sample: EvalSample) -> tuple[str, int]:
    return (str(sample.id), sample.epoch)


def collect_labels(log: EvalLog, scorer: str) -> dict[tuple[str, int], JudgeLabel]:
    """(sample id, epoch) -> the judge's label from score `scorer` of each sample."""
    out: dict[tuple[str, int], JudgeLabel] = {}
    for sample in log.samples or []:
        score = (sample.scores or {}).get(scorer)
        if score is None:
            continue
        if not _is_judge_score(score.value, score.metadata):
            raise ValueError(
                f"{log.location}: sample {sample.id}: score {scorer!r} is not an llm_judge score"
            )
        md = score.metadata or {}
        value = score.value["judge"] if isinstance(score.value, dict) else None
        unscored = (
            md.get("label") is None
            or not isinstance(value, int | float)
            or math.isnan(float(value))
        )
        category = str((sample.metadata or {}).get("category", md.get("category", "unknown")))
        out[_key(sample)] = JudgeLabel(
            category=category,
            label=None if unscored else str(md["label"]),
            score=None if unscored else float(value),  # type: ignore[arg-type]
            grader=md.get("grader"),
        )
    if not out:
        raise ValueError(f"{log.location}: no sample has a score named {scorer!r}")
    return out


@dataclass(frozen=True)
class Row:
    category: str
    n: int
    agree: float | None
    kappa: float | None
    mean_a: float | None
    mean_b: float | None
    unscored: int


def report(
    a: dict[tuple[str, int], JudgeLabel], b: dict[tuple[str, int], JudgeLabel]
) -> tuple[list[Row], dict[str, int]]:
    """Rows per category (sorted, then "all") and counts of unpaired samples."""
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("the two judge runs have no sample (id, epoch) in common")
    pairs: dict[str, list[tuple[str, float, str, float]]] = {}
    unscored: dict[str, int] = {}
    for key in shared:
        ja, jb = a[key], b[key]
        if ja.category != jb.category:
            raise ValueError(
                f"sample {key[0]} (epoch {key[1]}) has category {ja.category!r} in one log "
                f"and {jb.category!r} in the other"
            )
        pairs.setdefault(ja.category, [])
        unscored.setdefault(ja.category, 0)
        if ja.label is None or jb.label is None or ja.score is None or jb.score is None:
            unscored[ja.category] += 1
            continue
        pairs[ja.category].append((ja.label, ja.score, jb.label, jb.score))
    stats = agreement_by_group(dict(sorted(pairs.items())))
    unscored["all"] = sum(unscored.values())
    rows = [_row(cat, ag, unscored[cat]) for cat, ag in stats.items()]
    unpaired = {"only_a": len(set(a) - set(b)), "only_b": len(set(b) - set(a))}
    return rows, unpaired


def _row(category: str, ag: Agreement, unscored: int) -> Row:
    return Row(category, ag.n, ag.agree, ag.kappa, ag.score_a, ag.score_b, unscored)


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _grader(labels: dict[tuple[str, int], JudgeLabel]) -> str:
    graders = sorted({j.grader for j in labels.values() if j.grader})
    return ", ".join(graders) or "unknown"


def _pick(names: list[str], wanted: str | None, location: str, which: str) -> str:
    if wanted is not None:
        if wanted not in names:
            raise ValueError(f"{location}: no judge score {wanted!r}; judge scores: {names}")
        return wanted
    if len(names) != 1:
        raise ValueError(
            f"{location}: {len(names)} judge scores {names}; choose one with --scorer-{which}"
        )
    return names[0]


def _read_log(path: str) -> EvalLog:
    """The Inspect log at `path`; ValueError in one line naming it when it is none."""
    try:
        return read_eval_log(path)
    except FileNotFoundError:
        raise
    except Exception as exc:  # Inspect's reader raises what its format parser raises
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise ValueError(f"{path}: not an Inspect log ({reason[:200]})") from exc


def _logs_and_scores(args: argparse.Namespace) -> tuple[EvalLog, EvalLog, str, str]:
    """The two logs and the judge score compared in each (one log: its two judge scores)."""
    log_a = _read_log(args.log_a)
    names_a = judge_score_names(log_a)
    if args.log_b is None:
        if args.scorer_a is None and args.scorer_b is None and len(names_a) != 2:
            raise ValueError(
                f"{args.log_a}: holds {len(names_a)} judge scores {names_a}; with one log, "
                "it needs exactly two (or name them with --scorer-a/--scorer-b)"
            )
        score_a = args.scorer_a or names_a[0]
        score_b = args.scorer_b or names_a[1]
        log_b, names_b = log_a, names_a
    else:
        log_b = _read_log(args.log_b)
        names_b = judge_score_names(log_b)
        score_a = _pick(names_a, args.scorer_a, args.log_a, "a")
        score_b = _pick(names_b, args.scorer_b, args.log_b, "b")
    if score_a not in names_a or score_b not in names_b:
        raise ValueError(f"judge scores available: A {names_a}, B {names_b}")
    return log_a, log_b, score_a, score_b


def _print_table(judge_a: str, judge_b: str, rows: list[Row], unpaired: dict[str, int]) -> None:
    """Print the two judges and one aligned row per category, then any unpaired counts."""
    print(f"judge A: {judge_a}")
    print(f"judge B: {judge_b}")
    width = max(len("category"), *(len(r.category) for r in rows))
    print(
        f"{'category':<{width}}  {'n':>5}  {'agree':>6}  {'kappa':>6}  "
        f"{'mean_A':>6}  {'mean_B':>6}  {'unscored':>8}"
    )
    for r in rows:
        print(
            f"{r.category:<{width}}  {r.n:>5}  {_fmt(r.agree):>6}  {_fmt(r.kappa):>6}  "
            f"{_fmt(r.mean_a):>6}  {_fmt(r.mean_b):>6}  {r.unscored:>8}"
        )
    if unpaired["only_a"] or unpaired["only_b"]:
        print(
            f"not paired: {unpaired['only_a']} sample(s) only in A, {unpaired['only_b']} only in B"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog_name(sys.argv[0], "memevals.tools.judge_agreement"),
        description="Per-category agreement and Cohen's kappa between two LLM-judge runs.",
    )
    parser.add_argument("log_a", help="Inspect log judged by judge A")
    parser.add_argument("log_b", nargs="?", help="log judged by judge B (omit: both in LOG_A)")
    parser.add_argument("--scorer-a", help="name of judge A's score (needed if ambiguous)")
    parser.add_argument("--scorer-b", help="name of judge B's score (needed if ambiguous)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)

    try:
        log_a, log_b, score_a, score_b = _logs_and_scores(args)
        labels_a = collect_labels(log_a, score_a)
        labels_b = collect_labels(log_b, score_b)
        rows, unpaired = report(labels_a, labels_b)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    judge_a = f"{args.log_a} [{score_a}] grader {_grader(labels_a)}"
    judge_b = f"{args.log_b or args.log_a} [{score_b}] grader {_grader(labels_b)}"
    if args.json:
        print(
            json.dumps(
                {
                    "judge_a": judge_a,
                    "judge_b": judge_b,
                    "rows": [asdict(r) for r in rows],
                    "unpaired": unpaired,
                },
                indent=2,
            )
        )
        return 0
    _print_table(judge_a, judge_b, rows, unpaired)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Two LLM judges' labels on the same samples, and their agreement by category.

A judge score is any score written by `llm_judge` (a value with a "judge" key and the judge's
label in its metadata). Samples are paired by (sample id, epoch); a pair where either judge left
the sample unscored is left out of the statistics and counted in the "unscored" column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, read_eval_log

from memevals.core.agreement import Agreement, agreement_by_group

__all__ = [
    "AgreementReport",
    "AgreementRow",
    "JudgeLabel",
    "agreement_rows",
    "collect_labels",
    "compared_scores",
    "graders_of",
    "judge_score_names",
    "read_judged_log",
]


@dataclass(frozen=True)
class JudgeLabel:
    """One judge's verdict on one sample; label None means unscored."""

    category: str
    label: str | None
    score: float | None
    grader: str | None


#: One judge's labels by (sample id, epoch).
Labels = dict[tuple[str, int], JudgeLabel]


def _is_judge_score(value: Any, metadata: Any) -> bool:
    return isinstance(value, dict) and "judge" in value and isinstance(metadata, dict)


def judge_score_names(log: EvalLog) -> list[str]:
    """Names of the llm_judge scores present in a log's samples, in order of first appearance.

    Args:
        log: an Inspect log.

    Returns:
        The score names.
    """
    names: list[str] = []
    for sample in log.samples or []:
        for name, score in (sample.scores or {}).items():
            if name not in names and _is_judge_score(score.value, score.metadata):
                names.append(name)
    return names


def _key(sample: EvalSample) -> tuple[str, int]:
    return (str(sample.id), sample.epoch)


def collect_labels(log: EvalLog, scorer: str) -> Labels:
    """(sample id, epoch) -> the judge's label from score `scorer` of each sample.

    Args:
        log: an Inspect log.
        scorer: the judge score's name.

    Returns:
        The labels.
    """
    out: Labels = {}
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
class AgreementRow:
    """The two judges on one category ("all": every category)."""

    category: str
    n: int
    agree: float | None
    kappa: float | None
    mean_a: float | None
    mean_b: float | None
    unscored: int


@dataclass(frozen=True)
class AgreementReport:
    """Two judges compared: each described (log, score, grader), their rows by category, and
    the samples only one of them judged ({"only_a": n, "only_b": n})."""

    judge_a: str
    judge_b: str
    rows: list[AgreementRow]
    unpaired: dict[str, int]


def agreement_rows(a: Labels, b: Labels) -> tuple[list[AgreementRow], dict[str, int]]:
    """Rows per category (sorted, then "all") and counts of unpaired samples.

    Args:
        a: judge A's labels.
        b: judge B's labels.

    Returns:
        The rows, and {"only_a": n, "only_b": n}.
    """
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


def _row(category: str, ag: Agreement, unscored: int) -> AgreementRow:
    return AgreementRow(category, ag.n, ag.agree, ag.kappa, ag.score_a, ag.score_b, unscored)


def graders_of(labels: Labels) -> str:
    """The graders named in a judge's labels.

    Args:
        labels: one judge's labels.

    Returns:
        Their names, sorted and comma-separated ("unknown" when none is named).
    """
    graders = sorted({j.grader for j in labels.values() if j.grader})
    return ", ".join(graders) or "unknown"


def read_judged_log(path: str) -> EvalLog:
    """The Inspect log at `path`; ValueError in one line naming it when it is none.

    Args:
        path: the log's file.

    Returns:
        The log.
    """
    if Path(path).is_dir():
        raise ValueError(f"{path}: a folder; name one Inspect log file (.eval or .json) in it")
    try:
        return read_eval_log(path)
    except FileNotFoundError:
        raise
    except Exception as exc:  # Inspect's reader raises what its format parser raises
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise ValueError(f"{path}: not an Inspect log ({reason[:200]})") from exc


def _no_judge(log: EvalLog, location: str) -> ValueError:
    """The error for a log that holds no judge score: a failed run, or one never judged."""
    if log.status != "success":
        return ValueError(
            f"{location}: the run did not finish (status {log.status}) and holds no judge "
            f"score; rerun it (inspect eval-retry {location})"
        )
    official = (log.eval.metadata or {}).get("protocol") == "official"
    scorer = "memevals/official_judge" if official else "memevals/llm_judge"
    return ValueError(
        f"{location}: holds no judge score; judge it first (inspect score {location} --scorer "
        f"{scorer} --model-role grader=..., docs/judges.md)"
    )


def _pick(log: EvalLog, names: list[str], wanted: str | None, location: str, which: str) -> str:
    if not names:
        raise _no_judge(log, location)
    if wanted is not None:
        if wanted not in names:
            raise ValueError(f"{location}: no judge score {wanted!r}; judge scores: {names}")
        return wanted
    if len(names) != 1:
        raise ValueError(
            f"{location}: {len(names)} judge scores {names}; choose one with --scorer-{which}"
        )
    return names[0]


def compared_scores(
    path_a: str, path_b: str | None, scorer_a: str | None, scorer_b: str | None
) -> tuple[EvalLog, EvalLog, str, str]:
    """The two logs and the judge score compared in each (one log: its two judge scores).

    Args:
        path_a: judge A's log.
        path_b: judge B's log (None: both judges in A's).
        scorer_a: judge A's score name (None: the only one, or the first of one log's two).
        scorer_b: judge B's score name (None: the same way).

    Returns:
        Log A, log B, score A, score B.
    """
    log_a = read_judged_log(path_a)
    names_a = judge_score_names(log_a)
    if path_b is None:
        if not names_a:
            raise _no_judge(log_a, path_a)
        if scorer_a is None and scorer_b is None and len(names_a) != 2:
            raise ValueError(
                f"{path_a}: holds {len(names_a)} judge scores {names_a}; with one log, "
                "it needs exactly two (or name them with --scorer-a/--scorer-b)"
            )
        # with one log, a judge not named is the first of the others
        score_a = scorer_a or next((n for n in names_a if n != scorer_b), names_a[0])
        score_b = scorer_b or next((n for n in names_a if n != score_a), score_a)
        log_b, names_b = log_a, names_a
    else:
        log_b = read_judged_log(path_b)
        names_b = judge_score_names(log_b)
        score_a = _pick(log_a, names_a, scorer_a, path_a, "a")
        score_b = _pick(log_b, names_b, scorer_b, path_b, "b")
    if score_a == score_b and (path_b is None or Path(path_a).resolve() == Path(path_b).resolve()):
        # one judge against itself agrees by construction: 1.000, which would mean nothing
        raise ValueError(
            f"{path_a}: judge A and judge B are the same score ({score_a!r} of {names_a}); "
            "name two different ones with --scorer-a/--scorer-b, or give a second log"
        )
    if score_a not in names_a or score_b not in names_b:
        raise ValueError(f"judge scores available: A {names_a}, B {names_b}")
    return log_a, log_b, score_a, score_b

"""BEAM scoring rules (upstream's src/evaluation, README.md#scoring), framework-free.

- Rubric: each rubric item is judged by the grader as 1, 0.5 or 0; the question's score is the
  mean over its items. Under the official protocol the grader's reply is read as upstream
  reads it (`official_reply_score`) and, for every ability except event ordering, the item
  score is truncated to an integer (upstream adds `int(score)`), so a 0.5 counts as 0.
- Event ordering: the answer's lines are aligned to the rubric items (first unused equivalent
  item wins, `align`), then `beam_event_order` gives precision, recall, F1 of the matched
  items, Kendall's tau_b between the two orders over their union (absent items tied last),
  `tau_norm = (tau_b + 1) / 2` and `final_score = tau_norm * F1`.
- Report: per conversation and ability the mean of the questions' reported scores (event
  ordering reports `tau_norm`, every other ability its rubric score), per ability the mean over
  conversations, overall the mean of the ability means. The report's figures are computed
  here from the scored samples (`overall_figure`, `ability_figures`, `event_ordering_figures`);
  a framework only hands them over (memevals.core.scored.ScoredSample).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from scipy.stats import kendalltau

from memevals.benchmarks.beam.data import ABILITIES
from memevals.core.criteria_judge import json_object_reply
from memevals.core.scored import ScoredSample

__all__ = [
    "EVENT_ORDERING",
    "BeamRow",
    "BeamSummary",
    "EventOrderScore",
    "ability_figures",
    "align",
    "beam_event_order",
    "event_ordering_figures",
    "memevals_reply_score",
    "official_item_score",
    "official_reply_score",
    "overall_figure",
    "question_score",
    "summarize",
]

EVENT_ORDERING = "event_ordering"
#: The item scores a grader may give.
ITEM_SCORES: tuple[float, ...] = (1.0, 0.5, 0.0)


# ---------------------------------------------------------------------------------------------
# Event ordering


@dataclass(frozen=True)
class EventOrderScore:
    """Upstream's event-ordering figures for one answer."""

    precision: float
    recall: float
    f1: float
    tau_norm: float
    final_score: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def beam_event_order(
    reference_items: Sequence[str], response_items: Sequence[str]
) -> EventOrderScore:
    """Upstream's event-ordering score of items already aligned to the reference.

    A response item equal to a reference item is a match. Precision is the share of response
    items (duplicates counted) that are reference items, recall the share of reference items
    found; Kendall's tau_b (scipy, variant b) compares the ranks of the union of both lists,
    each list ranking its items 1, 2, ... (a repeated item takes its last position) and every
    item it lacks tied after them; `tau_norm = (tau_b + 1) / 2`, `final_score = tau_norm * f1`.

    Where tau_b is undefined, as upstream computes it, `tau_norm` and `final_score` are NaN:
    when the union holds a single item (one reference item, answered by that item alone).

    Args:
        reference_items: the rubric's items, in the reference order.
        response_items: the answer's items, in its order, aligned to the reference.

    Returns:
        precision, recall, f1, tau_norm and final_score.
    """
    reference = list(reference_items)
    system = list(response_items)
    tp = len(set(reference) & set(system))
    fp = len([x for x in system if x not in reference])
    fn = len([x for x in reference if x not in system])
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    union = list(dict.fromkeys(reference + system))
    tie_rank = len(union) + 1

    def ranks(seq: Sequence[str]) -> list[int]:
        position = {item: i + 1 for i, item in enumerate(seq)}
        return [position.get(u, tie_rank) for u in union]

    if len(union) < 2:
        tau_b = math.nan  # scipy's value for fewer than two items, without its warning
    else:
        tau_b = float(kendalltau(ranks(reference), ranks(system), variant="b").statistic)
    tau_norm = (tau_b + 1) / 2
    return EventOrderScore(float(precision), float(recall), float(f1), tau_norm, tau_norm * f1)


#: (reference item, response item) -> whether the grader says they are the same event.
Equivalence = Callable[[str, str], Awaitable[bool]]


async def align(reference: Sequence[str], response: Sequence[str], same: Equivalence) -> list[str]:
    """Upstream's alignment: each response item, in order, becomes the first reference item
    not yet used that the grader calls the same event, or stays itself.

    Args:
        reference: the rubric items.
        response: the answer's items.
        same: the grader's equivalence call (asked in upstream's order, one at a time, since
            each answer decides which items remain).

    Returns:
        The response items, aligned.
    """
    used: set[int] = set()
    out: list[str] = []
    for item in response:
        matched = None
        for index, ref in enumerate(reference):
            if index in used:
                continue
            if await same(ref, item):
                matched = index
                break
        if matched is None:
            out.append(item)
        else:
            out.append(reference[matched])
            used.add(matched)
    return out


def official_lines(response: str) -> list[str]:
    """The answer's items as upstream splits them: every line, blank ones included."""
    return response.split("\n")


def memevals_lines(response: str) -> list[str]:
    """The answer's items under the memevals protocol: non-blank lines, stripped."""
    return [line.strip() for line in response.split("\n") if line.strip()]


# ---------------------------------------------------------------------------------------------
# Reading the grader


_FENCED = re.compile(r"```(?:json)?\s*(\[.*\]|\{.*\})\s*```", re.DOTALL)
_FIRST_JSON = re.compile(r"(\{.*?\}|\[.*?\])", re.DOTALL)


def _upstream_json(reply: str) -> Any:
    """The JSON in a grader reply as upstream finds it (None where upstream falls back to
    repairing the text, which memevals does not reproduce: the item is then unscored)."""
    text = reply.strip()
    if text.startswith("```"):
        m = _FENCED.search(text)
        if m:
            text = m.group(1).strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    m = _FIRST_JSON.search(text)
    if m is None:
        return None
    try:
        return json.loads(m.group(1))
    except json.JSONDecodeError:
        return None


def official_reply_score(reply: str) -> Any:
    """The `score` field of a grader reply read as upstream reads it; None when unreadable.

    Args:
        reply: the grader's reply.

    Returns:
        The raw `score` value (a number or a string), or None.
    """
    parsed = _upstream_json(reply)
    if not isinstance(parsed, dict) or "score" not in parsed:
        return None
    return parsed["score"]


def official_item_score(score: Any, ability: str) -> float | None:
    """An item's score under upstream's rule: `float(score)` for event ordering, `int(score)`
    for every other ability (so 0.5 becomes 0); None where upstream's conversion fails.

    Args:
        score: the raw `score` of the grader's reply.
        ability: the question's ability.

    Returns:
        The item score, or None.
    """
    if score is None or isinstance(score, list | dict):
        return None
    try:
        return float(score) if ability == EVENT_ORDERING else float(int(score))
    except (TypeError, ValueError, OverflowError):
        return None


def memevals_reply_score(reply: str) -> float | None:
    """A memevals-protocol grader reply: exactly one JSON object (the strict reading of
    memevals.core.criteria_judge) whose `score` is 1, 0.5 or 0; None for anything else (the
    grader is asked again, then the item is unscored).

    Args:
        reply: the grader's reply.

    Returns:
        The item score, or None.
    """
    parsed = json_object_reply(reply)
    if parsed is None:
        return None
    score = parsed.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float):
        return None
    return float(score) if float(score) in ITEM_SCORES else None


def question_score(item_scores: Sequence[float | None]) -> float | None:
    """A question's rubric score: the mean of its item scores (None if any item is unscored).

    Args:
        item_scores: one score per rubric item.

    Returns:
        The mean, or None.
    """
    if not item_scores or any(s is None for s in item_scores):
        return None
    return sum(s for s in item_scores if s is not None) / len(item_scores)


# ---------------------------------------------------------------------------------------------
# The report


@dataclass(frozen=True)
class BeamRow:
    """One judged question: its conversation, ability and reported score (None: unscored)."""

    conversation: str
    ability: str
    score: float | None


@dataclass(frozen=True)
class BeamSummary:
    """Upstream's report: per-ability means over conversations and their mean."""

    overall: float | None
    per_ability: dict[str, float] = field(default_factory=dict)
    n_scored: int = 0
    n_unscored: int = 0


def summarize(rows: Iterable[BeamRow]) -> BeamSummary:
    """Per ability, the mean over conversations of each conversation's mean; overall, the mean
    of the ability means. A conversation counts for the abilities it has scored questions of
    (upstream's report assumes every conversation has all ten).

    Args:
        rows: the judged questions.

    Returns:
        The summary (abilities in BEAM's order, then any others).
    """
    cells: dict[str, dict[str, list[float]]] = {}
    scored = unscored = 0
    for row in rows:
        if row.score is None or math.isnan(row.score):
            unscored += 1
            continue
        scored += 1
        cells.setdefault(row.ability, {}).setdefault(row.conversation, []).append(row.score)
    per_ability: dict[str, float] = {}
    for ability in sorted(cells, key=lambda a: (ABILITIES.index(a) if a in ABILITIES else 99, a)):
        means = [sum(v) / len(v) for v in cells[ability].values()]
        per_ability[ability] = sum(means) / len(means)
    overall = sum(per_ability.values()) / len(per_ability) if per_ability else None
    return BeamSummary(overall, per_ability, scored, unscored)


def report_rows(scored: Iterable[ScoredSample]) -> list[BeamRow]:
    """The report's rows of scored samples (ValueError naming a sample that lacks its
    conversation or ability)."""
    rows = []
    for s in scored:
        if "conversation" not in s.metadata or "category" not in s.metadata:
            raise ValueError(
                f"sample {s.sample_id}: BEAM metrics need metadata 'conversation' and 'category'"
            )
        rows.append(BeamRow(str(s.metadata["conversation"]), str(s.metadata["category"]), s.value))
    return rows


def overall_figure(scored: Sequence[ScoredSample]) -> float:
    """Upstream's overall figure: the mean of the ability means (NaN when nothing is scored).

    Args:
        scored: the scored samples.

    Returns:
        The figure.
    """
    value = summarize(report_rows(scored)).overall
    return math.nan if value is None else value


def ability_figures(scored: Sequence[ScoredSample]) -> dict[str, float]:
    """Per ability, the mean over conversations of each conversation's mean (bare ability
    names; event ordering reports tau_norm, as upstream's report does).

    Args:
        scored: the scored samples.

    Returns:
        Ability -> figure.
    """
    return dict(summarize(report_rows(scored)).per_ability)


def event_ordering_figures(scored: Sequence[ScoredSample]) -> dict[str, float]:
    """Event ordering's other figures, means over its scored questions: `event_ordering_f1`,
    `event_ordering_final_score` (tau_norm × F1) and `event_ordering_rubric` (its rubric
    score, which upstream computes but does not report), from each score's `event_order`
    metadata. Nothing without such questions.

    Args:
        scored: the scored samples.

    Returns:
        Figure name -> value.
    """
    found = [
        s.score_metadata["event_order"]
        for s in scored
        if s.score_metadata.get("event_order") and s.value is not None
    ]
    if not found:
        return {}
    n = len(found)
    return {
        "event_ordering_f1": sum(float(f["f1"]) for f in found) / n,
        "event_ordering_final_score": sum(float(f["final_score"]) for f in found) / n,
        "event_ordering_rubric": sum(float(f["rubric_score"]) for f in found) / n,
    }

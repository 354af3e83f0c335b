"""LoCoMo-Plus's judge criteria (README.md#scoring); LoCoMo's questions keep LoCoMo's.

A cognitive sample has no reference answer: the judge decides whether the reply takes the
earlier cue into account. memevals.core.criteria_judge holds the judge's machinery.
"""

from __future__ import annotations

from memevals.benchmarks.locomo.scoring import criterion_for_locomo
from memevals.core.criteria_judge import (
    RIGHT_WRONG,
    CriterionSpec,
    criterion,
    criterion_under,
    register_criteria,
)

__all__ = [
    "COGNITIVE_CRITERION",
    "JUDGE_MAX_TOKENS",
    "LOCOMO_PLUS_CRITERIA",
    "criterion_for_locomo_plus",
]

#: memevals' judge's token limit per verdict (the official judge's is upstream's, in each
#: sample's request).
JUDGE_MAX_TOKENS = 256

_COGNITIVE_RULE = """\
Earlier in a long conversation a speaker revealed something about themselves, shown below as \
the earlier cue: a cause, a physical or emotional state, a goal, or a value. Much later a new \
message arrived, and the candidate reply responds to it. There is no reference answer: decide \
whether the reply is consistent with the cue, i.e. whether it takes that remembered information \
into account.
- "correct": the reply draws on the cue, openly or implicitly (for example it adapts a \
suggestion to the earlier constraint, asks about the earlier situation, or refers to it), and \
does not contradict it.
- "wrong": the reply shows no connection to the cue (a generic reply that would fit anyone), \
or it contradicts the cue."""

COGNITIVE_CRITERION = criterion(
    "cognitive",
    RIGHT_WRONG,
    _COGNITIVE_RULE,
    ("evidence",),
    ("evidence", "question"),
    evidence="Earlier cue",
    question="New message that the candidate reply responds to",
)
#: The criteria LoCoMo-Plus adds to LoCoMo's.
LOCOMO_PLUS_CRITERIA: tuple[CriterionSpec, ...] = (COGNITIVE_CRITERION,)
register_criteria(*LOCOMO_PLUS_CRITERIA)

#: LoCoMo-Plus's own category names, where they differ from LoCoMo's.
_ALIASES = {"common_sense": "open_domain"}


def criterion_for_locomo_plus(category_name: str, criteria: str = "default") -> str:
    """Judge criterion of a LoCoMo-Plus category (memevals' or LoCoMo-Plus's spelling).

    Args:
        category_name: "cognitive", a LoCoMo category, or LoCoMo-Plus's name of one
            (common-sense for open_domain), hyphens and any case allowed.
        criteria: a named set of criteria (see criterion_for_locomo); cognitive samples keep
            theirs under every set (they have no reference).

    Returns:
        The criterion's name.
    """
    key = category_name.strip().lower().replace("-", "_")
    if key == COGNITIVE_CRITERION.name:
        return criterion_under(COGNITIVE_CRITERION.name, criteria)
    return criterion_for_locomo(_ALIASES.get(key, key), criteria)

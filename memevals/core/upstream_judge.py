"""Upstream judges for the official protocols (framework-free): a rendered prompt and a label rule.

An official protocol judges with upstream's own prompt, limits and label rule instead of the
memevals criteria (memevals.core.criteria_judge). The benchmark renders upstream's prompt for
each sample when its samples are built, split around the reply it grades (`split_around`),
together with what upstream's call function does to a prompt before sending it (a prefix, a
strip), and stores
it in the sample's metadata under OFFICIAL_JUDGE_KEY (`OfficialJudge.as_metadata()`); the
frameworks' scorers only insert the reply, send `OfficialJudge.prompt` as one user message and
apply the named label rule (LABEL_RULES), so they know no benchmark. A benchmark whose upstream
reads its grader differently adds its rule to LABEL_RULES.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = [
    "LABEL_RULES",
    "OFFICIAL_JUDGE_KEY",
    "OfficialJudge",
    "OfficialLabel",
    "split_around",
    "yes_in_reply",
]

#: Sample-metadata key of an official judge request (`OfficialJudge.as_metadata()`).
OFFICIAL_JUDGE_KEY = "official_judge"

_WORDS = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class OfficialLabel:
    """A label rule's reading of one grader reply: its label, the label's score, and whether
    the reply was a clear verdict (reported beside the accuracy; it never changes the label)."""

    label: str
    score: float
    clear: bool


def yes_in_reply(reply: str) -> OfficialLabel:
    """The label "yes" when the lower-cased reply contains "yes" anywhere, else "no".

    "yes" inside another word counts too ("eyes"), as upstream's substring test has it. The
    reply is clear when its first word is yes or no, the other never appears as a word, and
    the substring rule agrees with that first word ("Yes." and "no" are clear; "eyes", "The
    answer is yes" and "No, but yes" are not).

    Args:
        reply: the grader's reply.

    Returns:
        The label, its score (1 or 0) and whether the reply was clear.
    """
    text = reply.strip().lower()
    yes = "yes" in text
    words = _WORDS.findall(text)
    verdicts = {w for w in words if w in ("yes", "no")}
    clear = bool(words) and words[0] in ("yes", "no") and len(verdicts) == 1
    clear = clear and yes == (words[0] == "yes")
    return OfficialLabel("yes" if yes else "no", 1.0 if yes else 0.0, clear)


#: Label rules of upstream judges, by name (an official protocol names its rule).
LABEL_RULES: dict[str, Callable[[str], OfficialLabel]] = {"yes_in_reply": yes_in_reply}

#: Stands for the reply while a prompt is split around it (private-use characters, which no
#: question or answer holds).
_REPLY_MARKER = "\ue000memevals-reply\ue001"


def split_around(render: Callable[[str], str]) -> tuple[str, str]:
    """The text before and after the reply in the prompt `render(reply)` builds.

    `str.format` never reads the values it inserts, so `before + reply + after` equals
    `render(reply)` for every reply once the prompt is split around a marker.

    Args:
        render: builds the prompt around a reply.

    Returns:
        (before, after).
    """
    parts = render(_REPLY_MARKER).split(_REPLY_MARKER)
    if len(parts) != 2:
        raise ValueError(f"the judge prompt holds the reply {len(parts) - 1} times, not once")
    return parts[0], parts[1]


@dataclass(frozen=True)
class OfficialJudge:
    """One sample's upstream judge request: the prompt around the reply, the grader's token
    limit and temperature, the label rule (a LABEL_RULES name), whether the reply is stripped
    first (as upstream stores its replies), and the wrapper of upstream's model call.

    The wrapper is what upstream's call function does to a prompt before it leaves as one user
    message: `strip_prompt` strips the filled prompt, then `prefix` goes before it (a prompt
    that is empty once stripped sends the prefix stripped, as a call that prepends a prefix to
    stripped text does). The defaults send the filled prompt as it is.
    """

    before: str
    after: str
    rule: str
    max_tokens: int
    temperature: float = 0.0
    strip_reply: bool = True
    prefix: str = ""
    strip_prompt: bool = False

    def __post_init__(self) -> None:
        if self.rule not in LABEL_RULES:
            raise ValueError(f"unknown label rule {self.rule!r}; known: {', '.join(LABEL_RULES)}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")

    def reply_text(self, reply: str) -> str:
        """The reply as upstream's judge reads it."""
        return reply.strip() if self.strip_reply else reply

    def filled(self, reply: str) -> str:
        """The judge template filled with a model reply (before the call's wrapper)."""
        return f"{self.before}{self.reply_text(reply)}{self.after}"

    def prompt(self, reply: str) -> str:
        """What leaves for the grader as its one user message: the filled template through
        the call's wrapper (strip, then prefix)."""
        text = self.filled(reply)
        if not self.strip_prompt:
            return self.prefix + text
        text = text.strip()
        return self.prefix + text if text else self.prefix.strip()

    def label(self, grader_reply: str) -> OfficialLabel:
        """The rule's label of the grader's reply."""
        return LABEL_RULES[self.rule](grader_reply)

    def as_metadata(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_metadata(cls, value: Any) -> OfficialJudge:
        """Read back `as_metadata()`; a missing or unknown key is an error naming it."""
        if not isinstance(value, Mapping):
            raise ValueError(f"{OFFICIAL_JUDGE_KEY} must be a mapping, got {type(value).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - names)
        missing = sorted(n for n in ("before", "after", "rule", "max_tokens") if n not in value)
        if unknown or missing:
            raise ValueError(
                f"{OFFICIAL_JUDGE_KEY}: unknown key(s) {unknown}, missing key(s) {missing}"
            )
        return cls(**dict(value))

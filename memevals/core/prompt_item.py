"""Framework-free prompt construction shared by the Inspect and lm-eval tasks.

Both frameworks render exactly the same text from the same `PromptItem`s, so a score difference
between them can only come from the model, never from the prompt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PromptItem", "parse_category_list"]


@dataclass(frozen=True)
class PromptItem:
    """One evaluation sample as plain text: context (system), question (user), gold and metadata.

    `messages` is a chat replayed before the question, as (role, content) pairs with role
    "user" or "assistant" (a long-context input): the model gets the system message, these
    messages, then the user message. Empty for single-turn samples (`as_text` ignores it).
    """

    id: str
    system: str
    user: str
    target: str
    metadata: dict[str, Any] = field(default_factory=dict)
    messages: tuple[tuple[str, str], ...] = ()

    def as_text(self) -> str:
        """System and user text joined, for single-message chat templates and plain LMs."""
        return f"{self.system}\n\n{self.user}" if self.system else self.user


def parse_category_list(
    categories: Iterable[str] | str | None,
    allowed: Sequence[str],
    *,
    numbers: Mapping[int, str],
    benchmark: str,
) -> list[str]:
    """Category names from a `-T categories=` value ("temporal,multi_hop", file numbers such as
    "2", or None = all), in the order given, each once; an unknown name is an error."""
    if categories is None:
        return list(allowed)
    if isinstance(categories, str):
        categories = categories.split(",")
    out: list[str] = []
    for raw in categories:
        c = str(raw).strip().lower().replace("-", "_")
        if not c:
            continue
        if c.isdigit() and int(c) in numbers:
            c = numbers[int(c)]
        if c not in allowed:
            raise ValueError(
                f"unknown {benchmark} category {raw!r}; choose from {', '.join(allowed)}"
            )
        if c not in out:
            out.append(c)
    if not out:
        raise ValueError("categories is empty; choose from " + ", ".join(allowed))
    return out

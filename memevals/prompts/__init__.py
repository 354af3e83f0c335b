"""Framework-free prompt construction shared by the Inspect and lm-eval tasks.

Both frameworks render exactly the same text from the same `PromptItem`s, so a score difference
between them can only come from the model, never from the prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PromptItem:
    """One evaluation sample as plain text: context (system), question (user), gold and metadata."""

    id: str
    system: str
    user: str
    target: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def as_text(self) -> str:
        """System and user text joined, for single-message chat templates and plain LMs."""
        return f"{self.system}\n\n{self.user}" if self.system else self.user

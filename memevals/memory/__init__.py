"""Memory strategies: how a model is given its conversation history (framework-free).

`locomo_context(mode, ...)` validates the options up front (before any model call) and returns
a function (conversation, question) -> context used by both the Inspect and lm-eval tasks.
"""

from __future__ import annotations

from memevals.prompts.locomo import ContextFn, full_context, no_context

CONTEXT_MODES: tuple[str, ...] = ("full", "none")


def locomo_context(context: str = "full") -> ContextFn:
    """The LoCoMo context function for `context` (validated; raises ValueError naming it)."""
    if context == "full":
        return full_context
    if context == "none":
        return no_context
    raise ValueError(
        f"context={context!r} is not supported; allowed values: {', '.join(CONTEXT_MODES)}"
    )

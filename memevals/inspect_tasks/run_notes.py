"""Warnings a run says once, when the sample they concern runs: a benchmark's notes about some
of its samples (memevals.core.build.SampleNote) and a prompt longer than a local model's
window. The task's setup step (`Task(setup=)`), so Inspect runs it before every sample whatever
solver a run uses, and `--limit` / `--sample-id` decide which samples reach it."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai.model import ChatMessage, Model, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from memevals.core.build import SampleNote

__all__ = ["model_window", "run_notes", "window_warning"]

logger = logging.getLogger(__name__)


def model_window(model: Model) -> int | None:
    """The context window of a local Hugging Face model (Inspect's `hf` provider holds the
    loaded transformers model): its config's `max_position_embeddings`.

    Args:
        model: the run's model.

    Returns:
        The window in tokens, or None where the provider does not say (any remote API).
    """
    loaded = getattr(model.api, "model", None)
    window = getattr(getattr(loaded, "config", None), "max_position_embeddings", None)
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        return window
    return None


def _prompt_tokens(model: Model, messages: Sequence[ChatMessage], md: Mapping[str, Any]) -> int:
    """The prompt's size by the model's own tokenizer (the `hf` provider's), else the count the
    benchmark stored in the sample's metadata (0 when there is none)."""
    tokenizer = getattr(model.api, "tokenizer", None)
    encode = getattr(tokenizer, "encode", None)
    if callable(encode):
        # the messages' text without the chat template's few tokens: a lower bound
        return len(encode("\n".join(m.text for m in messages)))
    return int(md.get("prompt_tokens", 0))


def window_warning(model: str, tokens: int, window: int) -> str:
    """The one-line warning of a prompt longer than the model's window (logged from the first
    such sample, which Inspect names).

    Args:
        model: the model's name.
        tokens: its prompt's size.
        window: the model's window.

    Returns:
        The warning.
    """
    return (
        f"{model}: this prompt has about {tokens:,} tokens, more than the "
        f"model's window of {window:,} (max_position_embeddings), so it reads positions it was "
        "not trained on, slowly and unreliably; shorten the context where the task allows it "
        f"(-T context=rag, or -T context=truncated with max_context_tokens below {window:,})"
    )


@solver
def run_notes(notes: Sequence[SampleNote] = ()) -> Solver:
    """Before each sample: each note whose samples include this one is said, once per run; and
    once per run, a prompt longer than a local model's window (`model_window`) is named.

    Args:
        notes: the build's notes.

    Returns:
        The setup solver (it changes nothing in the sample).
    """
    pending = list(notes)
    window_done = False  # warned, or the model has no known window: nothing more to check

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        nonlocal window_done
        sample_id = str(state.sample_id)
        for note in [n for n in pending if sample_id in n.samples]:
            pending.remove(note)
            # Inspect names the sample a record is logged from (`sample=<id>`)
            logger.warning(note.message)
        if not window_done:
            model = get_model()
            window = model_window(model)
            tokens = 0 if window is None else _prompt_tokens(model, state.messages, state.metadata)
            if window is None or tokens > window:
                window_done = True
            if window is not None and tokens > window:
                logger.warning(window_warning(model.name, tokens, window))
        return state

    return solve

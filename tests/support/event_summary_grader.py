"""A scripted grader of the event summary's fact prompts (reads our prompts the way a model
would), shared by the Inspect and lm-eval tests (imported by name)."""

from __future__ import annotations

import json
import re
from typing import Any

from inspect_ai.model import ChatMessage, ModelOutput, get_model

__all__ = ["grader_reply", "scripted_grader"]


def quoted(prompt: str, name: str) -> str:
    """The text of the prompt's `name` block (there is exactly one closing line for it)."""
    m = re.search(rf"<<<{name} ([0-9A-F]{{12}})\n", prompt)
    assert m is not None, f"no {name} block"
    rest = prompt[m.end() :]
    close = f"\nEND {m.group(1)}>>>"
    assert rest.count(close) == 1
    return rest.split(close)[0]


def fact_reply(prompt: str) -> str:
    """Decomposition: one fact per line. Support: the fact's text after "<date>: " must occur
    in the source."""
    if "<<<TEXT" in prompt:
        return json.dumps({"facts": quoted(prompt, "TEXT").splitlines()})
    source = quoted(prompt, "SOURCE")
    facts = [ln.split(". ", 1)[1] for ln in quoted(prompt, "FACTS").splitlines()]
    verdicts = [
        {"id": i, "label": "supported" if f.split(": ", 1)[-1] in source else "not_supported"}
        for i, f in enumerate(facts, 1)
    ]
    return json.dumps({"verdicts": verdicts})


def grader_reply(prompt: str) -> str:
    """`fact_reply`, except that a prompt about Melanie gets an unreadable reply (-> unscored)."""
    if "life of Melanie" in prompt or "in Melanie's life" in prompt:
        return "I cannot comply with JSON today."
    return fact_reply(prompt)


def scripted_grader() -> Any:
    def reply(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        return ModelOutput.from_content("mockllm/model", grader_reply(messages[0].text))

    return get_model("mockllm/model", custom_outputs=reply)



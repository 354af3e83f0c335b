"""A deterministic, rule-based stand-in for an LLM judge, usable in-process and from the real CLI.

It reads our judge prompt the way a model would, extracts the quoted candidate and the reference,
and answers with a verdict JSON by a fixed rule:

* ``scripted/strict``: "correct"/"yes" when the normalised candidate equals the reference;
* ``scripted/lenient``: when the reference's words all occur in the candidate;
* adversarial / abstention items: when the candidate says the information is not there.

Every verdict's reason quotes the candidate (JSON-escaped) so the parser is exercised on hostile
text. Usage from the command line (the real Inspect CLI, with this provider registered):

    python tests/support/scripted_judge.py score LOG --scorer memevals/llm_judge \
        --model-role grader=scripted/strict
"""

from __future__ import annotations

import json
import re

from inspect_ai.model import ChatMessage, GenerateConfig
from scripted_api import Reply, run_inspect, scripted_provider

_OPEN = re.compile(r"<<<CANDIDATE ([0-9A-F]{12})\n")
_LABELS = re.compile(r"The label must be one of: (.*)\.")


def quoted_candidate(prompt: str) -> str:
    m = _OPEN.search(prompt)
    if m is None:
        raise AssertionError("judge prompt has no candidate marker")
    rest = prompt[m.end() :]
    close = f"\nCANDIDATE {m.group(1)}>>>"
    if rest.count(close) != 1:
        raise AssertionError("candidate closing marker is not unique")
    return rest.split(close)[0]


def section(prompt: str, heading: str) -> str | None:
    """Text under `heading:` up to the next blank line (None when absent)."""
    marker = f"\n{heading}:\n"
    if marker not in prompt:
        return None
    return prompt.split(marker, 1)[1].split("\n\n", 1)[0]


def judge_labels(prompt: str) -> list[str]:
    """The labels the judge prompt allows, best first."""
    m = _LABELS.search(prompt)
    if m is None:
        raise AssertionError("judge prompt lists no labels")
    return re.findall(r'"(\w+)"', m.group(1))


def norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def scripted_verdict(prompt: str, mode: str) -> str:
    labels = judge_labels(prompt)
    good, bad = labels[0], labels[-1]
    cand = quoted_candidate(prompt)
    reference = section(prompt, "Reference answer (ground truth)")
    if reference is None:  # adversarial / abstention: credit a refusal
        ok = any(p in cand.lower() for p in ("not mentioned", "no information", "never said"))
    elif mode == "strict":
        ok = norm(cand) == norm(reference)
    else:
        ok = bool(norm(reference)) and set(norm(reference).split()) <= set(norm(cand).split())
    label = good if ok else bad
    return json.dumps({"label": label, "reason": f"{mode} rule on reply {cand!r}"})


def judge_reply(mode: str) -> Reply:
    """The reply rule of `scripted/<mode>`: it checks that a judge call is deterministic and
    short, then gives the verdict."""

    def reply(messages: list[ChatMessage], config: GenerateConfig) -> str:
        assert config.temperature == 0.0, config.temperature
        assert config.max_tokens is not None and config.max_tokens <= 512
        return scripted_verdict(messages[0].text, mode)

    return reply


scripted_provider("scripted", {mode: judge_reply(mode) for mode in ("strict", "lenient")})


if __name__ == "__main__":
    run_inspect()

"""A rule-based stand-in for BEAM's grader, usable in-process and from the real Inspect CLI.

It reads the grader prompts the way a model would: an official rubric prompt is split around
its fields with upstream's template (extracted at run time, never pasted), a memevals one at its
headings and answer markers; an equivalence call at its two items. Then it answers by a fixed
rule on words:

* rubric item: 1.0 when every content word of the item occurs in the answer, 0.5 when at least
  half do, else 0.0 (official replies alternate between a bare and a fenced JSON object);
* equivalence: yes when the two items are equal after normalising case and punctuation.

It also checks what each call sends besides its messages: temperature 0, and the token limit
of the call's protocol (none under official, as upstream sends none; memevals' limits under
memevals), so a run through the CLI fails on a call that sends another.

From the command line (the provider is `beamgrader/rule`):

    python tests/support/beam_grader.py eval beam --model mockllm/model \
        --model-role grader=beamgrader/rule ...
"""

from __future__ import annotations

import json
import re

from inspect_ai.model import ChatMessage, GenerateConfig
from scripted_api import run_inspect, scripted_provider
from scripted_judge import norm

from memevals.benchmarks.beam.official import official_texts
from memevals.benchmarks.beam.prompts import EQUIVALENCE_SYSTEM
from memevals.benchmarks.beam.samples import decoding
from memevals.core.protocol import resolve


def words(text: str) -> list[str]:
    return [w for w in re.sub(r"[^\w\s]", " ", text.lower()).split() if len(w) > 3]


def item_score(item: str, answer: str) -> float:
    wanted = words(item)
    have = set(words(answer))
    if not wanted:
        return 0.0
    share = sum(w in have for w in wanted) / len(wanted)
    return 1.0 if share == 1.0 else 0.5 if share >= 0.5 else 0.0


def split_official(prompt: str) -> tuple[str, str]:
    """(rubric item, answer) of an official rubric prompt, found with upstream's template."""
    template = official_texts().judge
    head, rest = template.split("<rubric_item>")
    middle, tail = rest.split("<llm_response>")
    assert prompt.startswith(head) and prompt.endswith(tail), "not an official rubric prompt"
    body = prompt[len(head) : len(prompt) - len(tail)]
    item, _, answer = body.partition(middle)
    return item, answer


def split_memevals(prompt: str) -> tuple[str, str]:
    """(rubric item, answer) of a memevals rubric prompt."""
    item = prompt.split("\nRubric item:\n", 1)[1].split("\n\n", 1)[0]
    m = re.search(r"<<<ANSWER ([0-9A-F]{12})\n(.*)\nANSWER \1>>>", prompt, re.DOTALL)
    assert m is not None, "no answer markers"
    return item, m.group(2)


def split_equivalence(system: str, user: str) -> tuple[str, str, bool]:
    """(reference item, answer item, official?) of an equivalence call."""
    texts = official_texts()
    if system == texts.equivalence_system:
        template = texts.equivalence_user
        first, rest = template.split("{first_paragraph}")
        middle, last = rest.split("{second_paragraph}")
        assert user.startswith(first) and user.endswith(last)
        body = user[len(first) : len(user) - len(last)]
        a, _, b = body.partition(middle)
        return a, b, True
    assert system == EQUIVALENCE_SYSTEM, "unknown equivalence system message"
    lines = user.split("\n")
    return lines[0].removeprefix("First: "), lines[1].removeprefix("Second: "), False


def protocol_of(messages: list[ChatMessage]) -> str:
    """The protocol a grader call was built under (official: upstream's texts)."""
    if len(messages) == 2 and messages[0].role == "system":
        return "official" if messages[0].text == official_texts().equivalence_system else "memevals"
    return "memevals" if "<<<ANSWER " in messages[0].text else "official"


def expected_limit(messages: list[ChatMessage]) -> int | None:
    """The token limit a grader call must send: its protocol's for its kind of call."""
    sent = decoding(resolve(protocol_of(messages)))
    if len(messages) == 2 and messages[0].role == "system":
        return sent.equivalence_max_tokens
    return sent.judge_max_tokens


def grade(messages: list[ChatMessage]) -> str:
    """The grader's reply to one call."""
    if len(messages) == 2 and messages[0].role == "system":
        a, b, official = split_equivalence(messages[0].text, messages[1].text)
        same = norm(a) == norm(b)
        return ("YES" if same else "NO") if official else ("yes" if same else "no")
    prompt = messages[0].text
    if "<<<ANSWER " in prompt:
        item, answer = split_memevals(prompt)
        return json.dumps({"score": item_score(item, answer), "reason": "word rule"})
    item, answer = split_official(prompt)
    reply = json.dumps({"score": item_score(item, answer), "reason": "word rule"})
    # upstream reads a fenced object too: half the replies come fenced
    return f"```json\n{reply}\n```" if len(item) % 2 else reply


def rule_reply(messages: list[ChatMessage], config: GenerateConfig) -> str:
    """The reply rule of `beamgrader/rule`: it checks what the call sends, then grades."""
    assert config.temperature == 0.0, config.temperature
    assert config.max_tokens == expected_limit(messages), (config.max_tokens, messages[0].text)
    return grade(messages)


scripted_provider("beamgrader", {"rule": rule_reply})


if __name__ == "__main__":
    run_inspect()

"""A deterministic stand-in for the model under test on LoCoMo: it answers from what it is shown.

`scripted_reader/evidence` finds the LoCoMo question its prompt asks (the data under
MEMEVALS_DATA_DIR) and answers by what the prompt holds of the question's evidence turns:

* every evidence turn's text is in the prompt: the gold answer (F1 1);
* some of them: the first half of the gold's words (a partial F1);
* none, or a question without a gold (adversarial): "I don't know.".

So a run's scores follow its context, as a real reader's do: `context=none` gets nothing right,
retrieval gets the questions whose evidence it found, the whole conversation all of them. Each
reply reports its tokens (words), so cost charts have usage to plot. Usage from the command line
(the real Inspect CLI with this provider and `scripted/` judges registered):

    python tests/support/scripted_reader.py eval memevals/locomo \
        --model scripted_reader/evidence -T context=rag
"""

from __future__ import annotations

import os
from functools import lru_cache

from inspect_ai.model import ChatMessage, GenerateConfig
from scripted_api import run_inspect, scripted_provider

from memevals.benchmarks.locomo.data import load_locomo

UNKNOWN = "I don't know."


@lru_cache(maxsize=1)
def _questions() -> list[tuple[str, str | None, tuple[str, ...]]]:
    """(question, gold or None, evidence turn texts) of every LoCoMo question, longest question
    first (a question that contains another is matched first)."""
    out = []
    for conv in load_locomo(os.environ.get("MEMEVALS_DATA_DIR")):
        for qa in conv.qa:
            turns = [conv.turn(i) for i in qa.evidence_ids]
            texts = tuple(t.text.strip() for t in turns if t is not None)
            gold = None if qa.answer is None else str(qa.answer)
            out.append((qa.question, gold, texts))
    return sorted(out, key=lambda q: -len(q[0]))


#: The question ends the prompt (both protocols); only its end is searched for it.
TAIL = 2000


def scripted_reply(prompt: str) -> str:
    """The reply to one prompt, by the rule in the module docstring."""
    tail = prompt[-TAIL:]
    for question, gold, evidence in _questions():
        if question not in tail:
            continue
        shown = sum(text in prompt for text in evidence)
        if gold is None or not evidence or shown == 0:
            return UNKNOWN
        if shown == len(evidence):
            return gold
        words = gold.split()
        return " ".join(words[: max(1, len(words) // 2)])
    return UNKNOWN


def evidence_reply(messages: list[ChatMessage], config: GenerateConfig) -> str:
    """The reply of `scripted_reader/evidence` to one call: its messages read as one prompt."""
    return scripted_reply("\n".join(m.text for m in messages))


scripted_provider("scripted_reader", {"evidence": evidence_reply}, usage=True)


if __name__ == "__main__":
    import scripted_judge  # noqa: F401  (registers the scripted/ judges for judged runs)

    run_inspect()

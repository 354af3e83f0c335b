"""LoCoMo-Plus's official protocol (`protocol=official`): the model input its evaluation
framework builds from the unified samples, and its judge.

Upstream is xjtuleeyf/Locomo-Plus @ 059f4e3d: `data/unified_input.py` builds each sample's
`input_prompt`, and `evaluation_framework/task_eval/utils.py` (`_build_model_input`) wraps it
for the model; `evaluate_qa.py` sends that as one user message at temperature 0.3 with up to
1,024 tokens; `llm_as_judge.py` judges with `prompt.py`'s templates. Their texts are third-party
material and never stand in memevals: each is a locator into the pinned file, taken out by
parsing it with `ast` and checked against the sha256 recorded here (memevals.core.upstream).
What memevals writes itself is upstream's *logic*, as read from those files:

- the wrapper: upstream's start sentence with the names it is given, which are its defaults
  "A" and "B" (the evaluation framework never passes the speakers), then the instruction of the
  category (one for the five LoCoMo categories, one for cognitive samples), then the stripped
  `input_prompt`;
- a LoCoMo question's `input_prompt`: its conversation as `DATE:` / `CONVERSATION:` blocks of
  `<speaker> said, "<text>"` lines (the text stripped; a turn with a `blip_caption` ends
  ` and shared <caption>.`), a blank line after each session, right-stripped, then a blank line
  and `Question: <question>`;
- a cognitive sample's `input_prompt`: the stitched dialogue (memevals.benchmarks.locomo_plus.
  stitch reproduces `build_conv.build_context`), one `<speaker> said, "<text>"` line per turn,
  the trigger last; no dates, no captions, no question marker;
- the judge: the template of the sample's category filled with the reference (none for
  adversarial and cognitive samples), the stripped reply and the evidence (the evidence turns as
  `<speaker>：<text>` lines; a cognitive sample's cue), sent as `llm_as_judge.py` sends it:
  `call_model` with its default backend `call_llm` and no category, so `_prepend_conv_prefix`
  puts the start sentence named "A" and "B" before the filled prompt, stripped (one user
  message, temperature 0, 512 tokens); its reply read and scored by `llm_as_judge.py`'s rule:
  correct 1, partial 0.5, anything else 0. The temporal, adversarial and cognitive templates
  offer only correct and wrong; the score map is upstream's for every category. The judge's
  code is memevals.benchmarks.locomo_plus.official_judge (LoCoMo's `judge=true` grades with it
  too).

Only `context=full` is upstream's input; the other context modes, `disclose_task` and `gap_fix`
are memevals' variations and run under `protocol=memevals`.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, fields

from memevals.benchmarks.locomo.data import QA, Conversation
from memevals.benchmarks.locomo_plus.official_judge import (
    PLUS_UTILS,
    JudgeTexts,
    judge_request,
    load_judge_texts,
    locomo_judge,
)
from memevals.benchmarks.locomo_plus.stitch import StitchedInstance
from memevals.core.upstream import Template, pinned_text
from memevals.core.upstream_judge import OfficialJudge

__all__ = [
    "COGNITIVE_CATEGORY",
    "UTILS",
    "PlusTexts",
    "cognitive_input",
    "cognitive_judge",
    "conversation_text",
    "load_plus_texts",
    "locomo_input",
    "model_input",
    "question_judge",
]

#: LoCoMo-Plus's `utils.py` (its model call and the wrapper's texts).
UTILS = PLUS_UTILS

#: LoCoMo-Plus's name of the sixth category (its judge template's key).
COGNITIVE_CATEGORY = "Cognitive"
#: The names upstream's wrapper puts into its start sentence (its parameters' defaults).
WRAPPER_NAMES = ("A", "B")

#: Every text of the wrapper, by the name PlusTexts gives it.
TEMPLATES: dict[str, Template] = {
    "start": Template(
        UTILS,
        "CONV_START_PROMPT",
        "bfb101603e38a36cfecfb7e989ae51d537907ad7ac0b89020e2b7c01046d3cb7",
    ),
    "instruction_qa": Template(
        UTILS,
        "INSTRUCTION_QA",
        "d41c673c20bc623a577e67067d29136265611de30f2548af498a7692efcf3f16",
    ),
    "instruction_cognitive": Template(
        UTILS,
        "INSTRUCTION_COGNITIVE",
        "b9f2dd0d22ec2bf45fad034c90d94f61cb9f4776999220e50dc811ebc8f7d9d3",
    ),
}


@dataclass(frozen=True)
class PlusTexts:
    """The wrapper's texts, extracted and digest-verified, and the judge's."""

    start: str
    instruction_qa: str
    instruction_cognitive: str
    judge: JudgeTexts

    def digests(self) -> dict[str, str]:
        """Template name -> its sha256, for the logs (the judge's under `judge_*`)."""
        out = {name: t.sha256 for name, t in TEMPLATES.items()}
        return out | self.judge.digests()


def _load(name: str, data_dir: str | None) -> str:
    return pinned_text(TEMPLATES[name], data_dir, f"LoCoMo-Plus official template {name!r}")


@functools.lru_cache(maxsize=8)
def _load_plus_texts(data_dir: str | None) -> PlusTexts:
    names = [f.name for f in fields(PlusTexts) if f.name != "judge"]
    return PlusTexts(
        **{name: _load(name, data_dir) for name in names}, judge=load_judge_texts(data_dir)
    )


def load_plus_texts(data_dir: str | os.PathLike[str] | None = None) -> PlusTexts:
    """Every upstream text of LoCoMo-Plus's protocol, digest-verified (cached per data dir).

    Args:
        data_dir: the task's data dir (used when it holds the upstream copies).

    Returns:
        The texts.
    """
    return _load_plus_texts(None if data_dir is None else str(data_dir))


# ---------------------------------------------------------------------------------------------
# The model input


def model_input(texts: PlusTexts, cognitive: bool, input_prompt: str) -> str:
    """Upstream's `_build_model_input`: start sentence (named "A" and "B"), the category's
    instruction, the stripped input prompt."""
    instruction = texts.instruction_cognitive if cognitive else texts.instruction_qa
    return texts.start.format(*WRAPPER_NAMES) + instruction + input_prompt.strip()


def conversation_text(conv: Conversation) -> str:
    """A LoCoMo conversation as the unified input writes it (`_build_conversation_context`)."""
    parts: list[str] = []
    for session in conv.sessions:
        parts.append(f"DATE: {session.date_time}\nCONVERSATION:\n")
        for turn in session.turns:
            text = turn.text.strip()
            if turn.blip_caption is not None:
                parts.append(f'{turn.speaker} said, "{text}" and shared {turn.blip_caption}.\n')
            else:
                parts.append(f'{turn.speaker} said, "{text}"\n')
        parts.append("\n")
    return "".join(parts)


def locomo_input(conv: Conversation, qa: QA, text: str | None = None) -> str:
    """A LoCoMo question's `input_prompt`: the conversation (`text`, its `conversation_text`
    when given), right-stripped, then the question."""
    body = conversation_text(conv) if text is None else text
    return body.rstrip() + "\n\nQuestion: " + qa.question


def cognitive_input(st: StitchedInstance) -> str:
    """A cognitive sample's `input_prompt`: the stitched dialogue, one line per turn."""
    return "\n".join(f'{t.speaker} said, "{t.text}"' for t in st.dialogue)


# ---------------------------------------------------------------------------------------------
# The judge


def question_judge(texts: PlusTexts, conv: Conversation, qa: QA) -> OfficialJudge:
    """The judge request of a LoCoMo question (its category's template, reference, evidence)."""
    return locomo_judge(texts.judge, conv, qa)


def cognitive_judge(texts: PlusTexts, evidence: str) -> OfficialJudge:
    """The judge request of a cognitive sample: the cue as evidence, no reference."""
    return judge_request(texts.judge, COGNITIVE_CATEGORY, evidence, "")

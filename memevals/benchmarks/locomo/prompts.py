"""LoCoMo QA prompts: per-category answer instructions, the two-option adversarial question,
mapping a chosen letter back to its option, judge inputs, and one PromptItem per question.

What the model sees of the conversation (and how it is rendered) is the memory strategy's
business (`memevals.benchmarks.locomo.memory`); this module puts its context beside the
question. `build_items` is `protocol=memevals` (all wording ours); `build_official_items` is
`protocol=official`, upstream's prompt and layout (`memevals.benchmarks.locomo.official`).
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from memevals.benchmarks.locomo import official
from memevals.benchmarks.locomo.data import CATEGORY_IDS, CATEGORY_NAMES, QA, Conversation
from memevals.benchmarks.locomo.memory import ContextFn, LocomoMemory, full_context, turn_line
from memevals.benchmarks.locomo.official import ConversationWindow, OfficialTexts
from memevals.benchmarks.locomo.scoring import criterion_for_locomo, locomo_f1
from memevals.benchmarks.locomo_plus.official_judge import locomo_judge
from memevals.core.prompt_item import PromptItem, parse_category_list
from memevals.core.protocol import BEFORE_OPTION, MEMEVALS, OFFICIAL, Protocol, resolve
from memevals.core.upstream_judge import OFFICIAL_JUDGE_KEY, OfficialJudge

__all__ = [
    "ADVERSARIAL_MODES",
    "ANSWER_INSTRUCTION",
    "CHOICE_INSTRUCTION",
    "NOT_MENTIONED",
    "TEMPORAL_INSTRUCTION",
    "answer_f1",
    "build_items",
    "build_official_items",
    "check_adversarial",
    "choice_options",
    "gold_text",
    "judge_inputs",
    "official_judge",
    "parse_categories",
    "prediction_for_scoring",
    "question_text",
    "resolve_choice",
    "sample_id",
]

logger = logging.getLogger(__name__)

#: The refusal option of the two-option adversarial question.
NOT_MENTIONED = "Not mentioned in the conversation"

ANSWER_INSTRUCTION = (
    "Reply with a short phrase only. Where possible, reuse the exact words of the conversation."
)
TEMPORAL_INSTRUCTION = (
    "Reply with a short phrase only. Work out the time from the session dates in the "
    "conversation and give a date or period."
)
CHOICE_INSTRUCTION = "Pick the option that fits the conversation and reply with its letter only."

ADVERSARIAL_MODES = ("choice", "open")


def check_adversarial(adversarial: str) -> None:
    if adversarial not in ADVERSARIAL_MODES:
        raise ValueError(
            f"adversarial={adversarial!r} is not one of {', '.join(ADVERSARIAL_MODES)}"
        )


def choice_options(sample_id: str, adversarial_answer: str | None, seed: int) -> list[str]:
    """The two options in a seeded order: the same sample id and seed give the same order."""
    distractor = (adversarial_answer or "").strip()
    if not distractor:
        raise ValueError(
            f"{sample_id}: an adversarial question needs an adversarial_answer for the "
            "two-option form; use adversarial='open' to ask it as a plain question"
        )
    options = [NOT_MENTIONED, distractor]
    if random.Random(f"{seed}:{sample_id}").random() < 0.5:
        options.reverse()
    return options


_LETTER = re.compile(r"^\W*\(?\s*([ab])\s*\)?(?:$|[\s.:,;)\]!])", re.IGNORECASE)


def resolve_choice(reply: str, options: Sequence[str]) -> str:
    """Map a reply that starts with a letter (a / (b) / "B." ...) to that option's text."""
    m = _LETTER.match(reply.strip())
    if m:
        return options[ord(m.group(1).lower()) - ord("a")]
    return reply


def question_text(qa: QA, *, adversarial: str, options: Sequence[str] | None) -> str:
    if qa.category == CATEGORY_IDS["adversarial"] and adversarial == "choice" and options:
        lettered = "\n".join(f"({chr(ord('a') + i)}) {opt}" for i, opt in enumerate(options))
        return f"Question: {qa.question}\n{lettered}\n\n{CHOICE_INSTRUCTION}"
    instruction = (
        TEMPORAL_INSTRUCTION if qa.category == CATEGORY_IDS["temporal"] else ANSWER_INSTRUCTION
    )
    return f"Question: {qa.question}\n\n{instruction}"


def sample_id(conv: Conversation, qa: QA) -> str:
    return f"{conv.sample_id}-q{qa.index}"


def judge_inputs(conv: Conversation, qa: QA) -> dict[str, object]:
    """The LLM judge's inputs for one question (``metadata["judge"]``, see scorers.judge).

    Factual and temporal questions show the evidence turns; temporal ones also list the
    session dates compactly, so the judge can resolve relative dates. Adversarial questions
    show no reference (their gold is a refusal). Letter replies are mapped to option text.
    """
    criterion = criterion_for_locomo(CATEGORY_NAMES[qa.category])
    judge: dict[str, object] = {
        "criterion": criterion,
        "question": qa.question,
        "prediction_map": "locomo",
    }
    if criterion == "adversarial":
        return judge
    judge["reference"] = str(qa.answer)
    lines = []
    for dia_id in qa.evidence_ids:
        turn = conv.turn(dia_id)
        lines.append(f"[{dia_id}] " + (turn_line(turn) if turn else "(no such turn)"))
    lines += [f"[{bad}] (unreadable evidence id)" for bad in qa.malformed_evidence]
    judge["evidence"] = lines
    if criterion == "temporal":
        judge["session_dates"] = [f"session {s.index}: {s.date_time}" for s in conv.sessions]
    return judge


def gold_text(qa: QA) -> str:
    if qa.category == CATEGORY_IDS["adversarial"]:
        return NOT_MENTIONED
    return str(qa.answer)


def _question_metadata(
    conv: Conversation,
    qa: QA,
    options: Sequence[str] | None,
    retrieved_ids: tuple[str, ...] | None,
    context_mode: str,
    protocol: Protocol,
) -> dict[str, object]:
    return {
        "benchmark": "locomo",
        "conversation_id": conv.sample_id,
        "qa_index": qa.index,
        "question": qa.question,
        "category": CATEGORY_NAMES[qa.category],
        "category_id": qa.category,
        "answer": qa.answer,
        "adversarial_answer": qa.adversarial_answer,
        "evidence": list(qa.evidence),
        "evidence_ids": list(qa.evidence_ids),
        "choices": list(options) if options is not None else None,
        "judge": judge_inputs(conv, qa),
        "context": context_mode,
        "retrieved_ids": list(retrieved_ids) if retrieved_ids is not None else None,
        "protocol": protocol.name,
    }


def build_items(
    conversations: Iterable[Conversation],
    *,
    categories: Iterable[str] | None = None,
    context: ContextFn = full_context,
    context_mode: str = "full",
    adversarial: str = "choice",
    seed: int = 0,
) -> list[PromptItem]:
    """One PromptItem per question (protocol=memevals), ordered by conversation then question
    index."""
    items: list[PromptItem] = []
    for conv, qa, sid, choice in _asked(conversations, categories, adversarial):
        options = choice_options(sid, qa.adversarial_answer, seed) if choice else None
        ctx = context(conv, qa)
        items.append(
            PromptItem(
                id=sid,
                system=ctx.text,
                user=question_text(qa, adversarial=adversarial, options=options),
                target=gold_text(qa),
                metadata=_question_metadata(
                    conv, qa, options, ctx.retrieved_ids, context_mode, MEMEVALS
                ),
            )
        )
    return items


def _asked(
    conversations: Iterable[Conversation], categories: Iterable[str] | None, adversarial: str
) -> Iterator[tuple[Conversation, QA, str, bool]]:
    """Each question of the wanted categories, by conversation then question index, with its
    sample id and whether it is asked as a two-option choice (both protocols ask the same)."""
    check_adversarial(adversarial)
    wanted = set(parse_categories(categories))
    for conv in conversations:
        for qa in conv.qa:
            if CATEGORY_NAMES[qa.category] in wanted:
                choice = qa.category == CATEGORY_IDS["adversarial"] and adversarial == "choice"
                yield conv, qa, sample_id(conv, qa), choice


def official_judge(conv: Conversation, qa: QA, texts: OfficialTexts) -> OfficialJudge:
    """LoCoMo-Plus's judge request for a LoCoMo question: its template for the question's
    category, filled with the reference and evidence around the prediction it grades."""
    return locomo_judge(texts.judge, conv, qa)


def build_official_items(
    conversations: Iterable[Conversation],
    *,
    memory: LocomoMemory,
    texts: OfficialTexts,
    categories: Iterable[str] | None = None,
    adversarial: str = "choice",
    seed: int = 0,
) -> list[PromptItem]:
    """One PromptItem per question under protocol=official: upstream's context (`system`) and
    instruction (`user`), which `as_text()` joins with a blank line as upstream joins its
    `query`. Ordered by conversation then question index."""
    windows: dict[tuple[str, int], ConversationWindow] = {}
    items: list[PromptItem] = []
    empty: list[str] = []  # the conversation of each question whose window holds no turn
    for conv, qa, sid, choice in _asked(conversations, categories, adversarial):
        refusal_first = official.option_order(sid, seed)
        options = official.two_options(qa, refusal_first, texts) if choice else None
        asked = official.question_text(qa, options, texts)
        ctx = official.official_context(memory, conv, qa, asked, windows, texts)
        if ctx.empty:
            empty.append(conv.sample_id)
        metadata = _question_metadata(
            conv, qa, options, ctx.retrieved_ids, memory.context, OFFICIAL
        )
        metadata[OFFICIAL_JUDGE_KEY] = official_judge(conv, qa, texts).as_metadata()
        items.append(
            PromptItem(
                id=sid,
                system=ctx.text,
                user=official.question_block(qa, options, texts),
                target=gold_text(qa),
                metadata=metadata,
            )
        )
    if empty:
        logger.warning(official.empty_window_warning(memory, empty, len(items)))
    return items


def parse_categories(categories: Iterable[str] | str | None) -> list[str]:
    """Accept names ("temporal,multi_hop"), file numbers ("2") or None (all)."""
    return parse_category_list(
        categories, list(CATEGORY_IDS), numbers=CATEGORY_NAMES, benchmark="LoCoMo"
    )


def prediction_for_scoring(reply: str, metadata: Mapping[str, object]) -> str:
    """The text the official rule scores. protocol=memevals: a letter reply to a two-option
    question becomes its option. protocol=official: upstream's `get_cat_5_answer` for a
    two-option question, and the stripped reply otherwise (as upstream stores predictions)."""
    options = metadata.get("choices")
    # a sample logged before the option has none: it was built with memevals' prompts
    if resolve(metadata.get("protocol", BEFORE_OPTION.name)).official:
        if isinstance(options, list) and options:
            return official.choice_prediction(reply, [str(o) for o in options])
        return reply.strip()
    if isinstance(options, list) and options:
        return resolve_choice(reply, [str(o) for o in options])
    return reply


def answer_f1(reply: str, metadata: Mapping[str, Any]) -> tuple[float, str]:
    """The official F1 of a reply to a LoCoMo question, as the official pipeline scores it.

    Args:
        reply: the model's reply.
        metadata: the sample's metadata.

    Returns:
        (the F1, the prediction it scored: `prediction_for_scoring`).
    """
    prediction = prediction_for_scoring(reply, metadata)
    return locomo_f1(prediction, metadata["answer"], int(metadata["category_id"])), prediction

"""LoCoMo-Plus prompts: the unified six-category input and the task-disclosing variant.

Unified (default): every sample gets the same instruction and nothing says which memory skill is
tested. A LoCoMo question follows its conversation; a cognitive trigger arrives as the next line
of the stitched dialogue, rendered like every other line
(benchmarks/locomo_plus/README.md#protocol: the official
cognitive input has no dates, captions or question marker). `disclose_task=True` gives each
category its own instruction instead: LoCoMo's short-answer / date-hint / two-option forms and an
explicit memory-aware instruction for cognitive samples, so the disclosure bias can be measured.

The history itself, and how it is rendered, come from the memory strategies
(`memevals.benchmarks.locomo.memory`, `memevals.benchmarks.locomo_plus.memory`).

Judge inputs (`metadata["judge"]`): LoCoMo questions keep the ones `locomo.prompts` builds (the
same as the `locomo` task, so both tasks judge a question alike); a cognitive sample's evidence
is the speaker-mapped cue, one `<speaker>：<text>` line per turn (§2.5). All wording is ours.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memevals.benchmarks.locomo.data import CATEGORY_NAMES, Conversation
from memevals.benchmarks.locomo.memory import ContextFn, LocomoContext, full_context
from memevals.benchmarks.locomo.prompts import build_items
from memevals.benchmarks.locomo_plus import official
from memevals.benchmarks.locomo_plus.memory import CognitiveContextFn, cognitive_full, dialogue_line
from memevals.benchmarks.locomo_plus.scoring import criterion_for_locomo_plus
from memevals.benchmarks.locomo_plus.stitch import StitchedInstance
from memevals.core.prompt_item import PromptItem, parse_category_list
from memevals.core.protocol import MEMEVALS, OFFICIAL
from memevals.core.upstream_judge import OFFICIAL_JUDGE_KEY

__all__ = [
    "CATEGORIES",
    "COGNITIVE",
    "UNIFIED_INSTRUCTION",
    "build_official_plus_items",
    "build_plus_items",
    "cognitive_instruction",
    "cognitive_item",
    "cue_evidence",
    "format_locomo_time",
    "is_cognitive",
    "is_question",
    "parse_plus_categories",
]

COGNITIVE = "cognitive"
#: The six categories, in the order the tasks report them.
CATEGORIES: tuple[str, ...] = (*CATEGORY_NAMES.values(), COGNITIVE)


def is_cognitive(metadata: Mapping[str, Any]) -> bool:
    """Whether a sample, by its metadata, is a cognitive one (no reference reply)."""
    return metadata.get("category") == COGNITIVE


def is_question(metadata: Mapping[str, Any]) -> bool:
    """Whether a sample, by its metadata, is one of LoCoMo's questions (gold and evidence)."""
    return not is_cognitive(metadata)


#: The one instruction of the unified input: the same words for every category.
UNIFIED_INSTRUCTION = (
    "Reply to the last message above. Draw on the conversation wherever it is relevant."
)


def cognitive_instruction(speaker_a: str, speaker_b: str) -> str:
    """The disclosed instruction for cognitive samples; names neither the relation nor the cue."""
    return (
        "This conversation tests long-term memory. Continue it: reply to "
        f"{speaker_a}'s last message as {speaker_b} would, and let your reply show that you "
        "remember what was said earlier that bears on it."
    )


# --------------------------------------------------------------------------- judge inputs


def format_locomo_time(when: datetime) -> str:
    """A time in LoCoMo's own style, e.g. "1:56 pm on 8 May, 2023"."""
    hour = when.hour % 12 or 12
    half = "am" if when.hour < 12 else "pm"
    return f"{hour}:{when.minute:02d} {half} on {when.day} {when:%B}, {when.year}"


def cue_evidence(st: StitchedInstance) -> str:
    """The judge's evidence for a cognitive sample: the cue, one `<speaker>：<text>` line each."""
    return "\n".join(f"{t.speaker}：{t.text}" for t in st.cue_turns if t.text)


# --------------------------------------------------------------------------- items


def parse_plus_categories(categories: Iterable[str] | str | None) -> list[str]:
    """Names of the six categories (LoCoMo file numbers 1-5 accepted too); None = all six."""
    return parse_category_list(
        categories, list(CATEGORIES), numbers=CATEGORY_NAMES, benchmark="LoCoMo-Plus"
    )


def _locomo_items(
    conversations: Sequence[Conversation],
    categories: list[str],
    *,
    context: ContextFn,
    context_mode: str,
    disclose_task: bool,
    adversarial: str,
    seed: int,
) -> list[PromptItem]:
    wanted = [c for c in categories if c != COGNITIVE]
    if not wanted:
        return []
    base = build_items(
        conversations,
        categories=wanted,
        context=context,
        context_mode=context_mode,
        adversarial=adversarial if disclose_task else "open",
        seed=seed,
    )
    out: list[PromptItem] = []
    for item in base:
        md = dict(item.metadata)
        # unified: the question as it is, followed by the one shared instruction
        user = (
            item.user if disclose_task else f"Question: {md['question']}\n\n{UNIFIED_INSTRUCTION}"
        )
        md.update(
            benchmark="locomo_plus",
            source="locomo",
            relation_type=None,
            disclose_task=disclose_task,
        )
        out.append(dataclasses.replace(item, user=user, metadata=md))
    return out


def _instance_fields(st: StitchedInstance, gap_fix: bool, evidence: str) -> dict[str, Any]:
    """A cognitive sample's metadata about its instance and its stitching (in the log's order)."""
    inst = st.instance
    return {
        "instance_index": inst.index,
        "category": COGNITIVE,
        "relation_type": inst.relation_type,
        "host": st.host.sample_id,
        "host_index": st.host_index,
        "time_gap": inst.time_gap,
        "gap_days": st.gap_days,
        "gap_parsed": st.gap_parsed,
        "gap_fix": gap_fix,
        "cue_session_idx": st.cue_session_idx,
        "cue_position": st.cue_position,
        "sessions_before_cue": st.sessions_before_cue,
        "sessions_between": st.sessions_between,
        "dialogue_turns": len(st.dialogue),
        "cue_time": st.cue_time.isoformat(),
        "query_time": st.query_time.isoformat(),
        "cue": evidence,
        "trigger": "\n".join(t.text for t in st.trigger_turns),
        "cue_model": inst.model_name,
        "similarity": inst.similarity,
    }


def cognitive_item(
    st: StitchedInstance,
    *,
    context: CognitiveContextFn = cognitive_full,
    context_mode: str = "full",
    disclose_task: bool = False,
    gap_fix: bool = False,
) -> PromptItem:
    """One cognitive sample: history as context, the trigger line(s) as the user message."""
    inst = st.instance
    ctx = context(st)
    trigger = "\n".join(dialogue_line(t) for t in st.trigger_turns)
    instruction = (
        cognitive_instruction(st.host.speaker_a, st.host.speaker_b)
        if disclose_task
        else UNIFIED_INSTRUCTION
    )
    evidence = cue_evidence(st)
    metadata: dict[str, Any] = {
        "benchmark": "locomo_plus",
        "source": "locomo_plus",
        **_instance_fields(st, gap_fix, evidence),
        "context": context_mode,
        "shown_turns": list(ctx.shown_turns) if ctx.shown_turns is not None else None,
        "retrieved_ids": list(ctx.retrieved_ids) if ctx.retrieved_ids is not None else None,
        "disclose_task": disclose_task,
        "protocol": MEMEVALS.name,
        "judge": {
            "criterion": criterion_for_locomo_plus(COGNITIVE),
            # As in the official judge, the grader sees only the cue and the reply: showing the
            # trigger would let it reward a reply that merely answers the trigger well.
            "question": None,
            "reference": None,  # LoCoMo-Plus has no reference reply
            "evidence": evidence,
            "question_date": format_locomo_time(st.query_time),
            "session_dates": [s.date_time for s in st.host.sessions],
        },
    }
    return PromptItem(
        id=inst.sample_id,
        system=ctx.text,
        user=f"{trigger}\n\n{instruction}",
        target="",
        metadata=metadata,
    )


def build_plus_items(
    conversations: Sequence[Conversation],
    stitched: Sequence[StitchedInstance],
    *,
    categories: Iterable[str] | str | None = None,
    context: ContextFn = full_context,
    cognitive: CognitiveContextFn = cognitive_full,
    context_mode: str = "full",
    disclose_task: bool = False,
    adversarial: str = "choice",
    seed: int = 0,
    gap_fix: bool = False,
) -> list[PromptItem]:
    """The LoCoMo-Plus samples: LoCoMo questions (conversation order), then `plus-<i>` in file
    order. `adversarial` and `seed` only matter with `disclose_task` (the two-option form)."""
    wanted = parse_plus_categories(categories)
    items = _locomo_items(
        conversations,
        wanted,
        context=context,
        context_mode=context_mode,
        disclose_task=disclose_task,
        adversarial=adversarial,
        seed=seed,
    )
    if COGNITIVE in wanted:
        items.extend(
            cognitive_item(
                st,
                context=cognitive,
                context_mode=context_mode,
                disclose_task=disclose_task,
                gap_fix=gap_fix,
            )
            for st in stitched
        )
    return items


# --------------------------------------------------------------------------- protocol=official


def _official_locomo_items(
    conversations: Sequence[Conversation], categories: list[str], texts: official.PlusTexts
) -> list[PromptItem]:
    """The LoCoMo questions under protocol=official: upstream's model input, split after the
    conversation (`system`, shared by a conversation's questions) so that `as_text()` joins it
    back with the question."""
    wanted = [c for c in categories if c != COGNITIVE]
    if not wanted:
        return []
    by_id = {c.sample_id: c for c in conversations}
    wrapper = official.model_input(texts, False, "")
    # one text per conversation, shared by its questions (and by the prompt-size cache)
    bodies = {c.sample_id: official.conversation_text(c) for c in conversations}
    heads = {sid: wrapper + body.rstrip() for sid, body in bodies.items()}

    def head(conv: Conversation, qa: Any) -> LocomoContext:
        return LocomoContext(text=heads[conv.sample_id])

    out: list[PromptItem] = []
    for item in build_items(conversations, categories=wanted, context=head, adversarial="open"):
        md = dict(item.metadata)
        conv = by_id[str(md["conversation_id"])]
        qa = conv.qa[int(md["qa_index"])]
        asked = official.locomo_input(conv, qa, bodies[conv.sample_id])
        whole = official.model_input(texts, False, asked)
        if not whole.startswith(item.system + "\n\n"):
            raise AssertionError(f"{item.id}: the official input does not start with its context")
        md.update(
            benchmark="locomo_plus",
            source="locomo",
            relation_type=None,
            disclose_task=False,
            protocol=OFFICIAL.name,
        )
        md[OFFICIAL_JUDGE_KEY] = official.question_judge(texts, conv, qa).as_metadata()
        user = whole[len(item.system) + 2 :]
        out.append(dataclasses.replace(item, user=user, metadata=md))
    return out


def build_official_plus_items(
    conversations: Sequence[Conversation],
    stitched: Sequence[StitchedInstance],
    texts: official.PlusTexts,
    *,
    categories: Iterable[str] | str | None = None,
) -> list[PromptItem]:
    """The LoCoMo-Plus samples under protocol=official (upstream's unified input, whole
    conversation), in file order: LoCoMo questions, then `plus-<i>`."""
    wanted = parse_plus_categories(categories)
    items = _official_locomo_items(conversations, wanted, texts)
    if COGNITIVE in wanted:
        for st in stitched:
            item = cognitive_item(st)
            md = {**item.metadata, "protocol": OFFICIAL.name}
            md[OFFICIAL_JUDGE_KEY] = official.cognitive_judge(texts, cue_evidence(st)).as_metadata()
            whole = official.model_input(texts, True, official.cognitive_input(st))
            items.append(dataclasses.replace(item, system="", user=whole, metadata=md))
    return items

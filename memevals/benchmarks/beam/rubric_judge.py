"""BEAM's rubric judge, framework-free: each rubric item of a question judged by the grader,
event ordering's alignment, the question's reported score and its explanation.

The grader is a callable (`Ask`: messages as `(role, content)` pairs and the call's settings in,
the reply out), so the Inspect scorer (memevals.inspect_tasks.beam, the grader role) and any
other caller judge alike. Under the official protocol upstream's prompts and reading (an item's
0.5 counts as 0 outside event ordering, memevals.benchmarks.beam.scoring); under memevals our
prompt with the question, strict JSON, asked again after an unreadable reply. Each call's
temperature and token limit are the sample's protocol's (memevals.benchmarks.beam.samples
.decoding).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memevals.benchmarks.beam.official import OfficialTexts, equivalent, official_texts
from memevals.benchmarks.beam.prompts import (
    EQUIVALENCE_SYSTEM,
    equivalence_user,
    judge_prompt,
    judge_repair,
    memevals_equivalent,
)
from memevals.benchmarks.beam.samples import Decoding, decoding
from memevals.benchmarks.beam.scoring import (
    EVENT_ORDERING,
    EventOrderScore,
    align,
    beam_event_order,
    memevals_lines,
    memevals_reply_score,
    official_item_score,
    official_lines,
    official_reply_score,
    question_score,
)
from memevals.core.build import Generation
from memevals.core.protocol import BEFORE_OPTION, OFFICIAL, resolve

__all__ = ["Ask", "Judgement", "check_posthoc", "explain", "judge_question"]

#: One grader call: its messages (`(role, content)`, roles system/user/assistant) and the
#: call's settings -> the grader's reply.
Ask = Callable[[Sequence[tuple[str, str]], Generation], Awaitable[str]]
#: One judged rubric item: its score (None: unreadable) and the grader's replies.
_Item = tuple[float | None, list[str]]


@dataclass(frozen=True)
class Judgement:
    """A question's verdict: the score's values, its explanation and its metadata."""

    #: `beam` (the reported score, NaN when unscored) and `unscored` (1 or 0)
    value: dict[str, float]
    explanation: str
    metadata: dict[str, Any]


async def _official_item(
    ask: Ask, texts: OfficialTexts, ability: str, item: str, reply: str, sent: Generation
) -> _Item:
    """One rubric item under upstream's rule: one call, read as upstream reads it."""
    answer = await ask([("user", texts.judge_prompt(item, reply))], sent)
    return official_item_score(official_reply_score(answer), ability), [answer]


async def _memevals_item(
    ask: Ask, question: str, item: str, reply: str, sent: Generation, retries: int
) -> _Item:
    """One rubric item under the memevals judge: strict JSON, asked again when unreadable."""
    messages = [("user", judge_prompt(question, item, reply))]
    answers: list[str] = []
    for _ in range(1 + retries):
        answer = await ask(messages, sent)
        answers.append(answer)
        value = memevals_reply_score(answer)
        if value is not None:
            return value, answers
        messages = [*messages, ("assistant", answer), ("user", judge_repair())]
    return None, answers


async def _event_order(
    ask: Ask, texts: OfficialTexts | None, rubric: list[str], reply: str, sent: Decoding
) -> tuple[EventOrderScore, int]:
    """Upstream's alignment then `beam_event_order`; returns the score and the calls made."""
    settings = Generation(max_tokens=sent.equivalence_max_tokens, temperature=sent.temperature)
    calls = 0

    async def same(reference_item: str, response_item: str) -> bool:
        nonlocal calls
        calls += 1
        if texts is not None:
            system, user = texts.equivalence_messages(reference_item, response_item)
            return equivalent(await ask([("system", system), ("user", user)], settings))
        messages = [
            ("system", EQUIVALENCE_SYSTEM),
            ("user", equivalence_user(reference_item, response_item)),
        ]
        return memevals_equivalent(await ask(messages, settings))

    lines = official_lines(reply) if texts is not None else memevals_lines(reply)
    if not lines:  # memevals: an answer without items finds nothing, in no order
        return EventOrderScore(0.0, 0.0, 0.0, 0.0, 0.0), 0
    aligned = await align(rubric, lines, same)
    return beam_event_order(rubric, aligned), calls


async def _items(
    ask: Ask,
    md: Mapping[str, Any],
    reply: str,
    texts: OfficialTexts | None,
    sent: Decoding,
    retries: int,
) -> list[_Item]:
    """Every rubric item of the question judged, concurrently."""
    rubric = [str(r) for r in md["rubric"]]
    settings = Generation(max_tokens=sent.judge_max_tokens, temperature=sent.temperature)
    if texts is not None:
        ability = str(md["category"])
        return list(
            await asyncio.gather(
                *(_official_item(ask, texts, ability, r, reply, settings) for r in rubric)
            )
        )
    question = str(md["question"])
    return list(
        await asyncio.gather(
            *(_memevals_item(ask, question, r, reply, settings, retries) for r in rubric)
        )
    )


async def judge_question(
    md: Mapping[str, Any],
    reply: str,
    ask: Ask,
    *,
    max_tokens: int | None = None,
    retries: int = 1,
    data_dir: str | None = None,
) -> Judgement:
    """A question's reply judged item by item against its rubric: the question's score is the
    mean over its items; event ordering's reported score is upstream's tau_norm after aligning
    the reply's lines to the rubric. A question with an unreadable item is unscored.

    Args:
        md: the sample's metadata (`protocol`, `category`, `rubric`, `question`).
        reply: the answer judged.
        ask: the grader.
        max_tokens: the grader's token limit per rubric item (None: the protocol's).
        retries: memevals protocol: how often to ask again after an unreadable reply.
        data_dir: where upstream's copies are (default MEMEVALS_DATA_DIR, else the cache).

    Returns:
        The Judgement.
    """
    protocol = resolve(md["protocol"])
    ability = str(md["category"])
    rubric = [str(r) for r in md["rubric"]]
    texts = official_texts(data_dir) if protocol.official else None
    sent = decoding(protocol, judge_max_tokens=max_tokens)
    judged = await _items(ask, md, reply, texts, sent, retries)
    items = [value for value, _ in judged]
    rubric_score = question_score(items)
    metadata: dict[str, Any] = {
        "protocol": protocol.name,
        "item_scores": items,
        "grader_replies": [answers for _, answers in judged],
        "rubric_score": rubric_score,
    }
    reported = rubric_score
    if ability == EVENT_ORDERING and rubric_score is not None:
        order, calls = await _event_order(ask, texts, rubric, reply, sent)
        metadata["event_order"] = {**order.as_dict(), "rubric_score": rubric_score}
        metadata["equivalence_calls"] = calls
        reported = order.tau_norm
    unscored = reported is None or math.isnan(reported)
    return Judgement(
        value={"beam": math.nan if reported is None else reported, "unscored": int(unscored)},
        explanation=explain(rubric, items, ability, reported),
        metadata=metadata,
    )


def explain(
    rubric: Sequence[str], items: Sequence[float | None], ability: str, reported: float | None
) -> str:
    """The verdict as text: the reported score, then each rubric item with its score.

    Args:
        rubric: the rubric items.
        items: their scores (None: unreadable).
        ability: the question's ability.
        reported: the question's reported score.

    Returns:
        The explanation.
    """
    lines = [f"{'?' if v is None else v:>4} {r}" for r, v in zip(rubric, items, strict=True)]
    head = "tau_norm" if ability == EVENT_ORDERING else "rubric score"
    return f"{head}: {reported}\n" + "\n".join(lines)


def check_posthoc(
    metadata: Sequence[Mapping[str, Any]], max_tokens: int | None, judge_runs: int
) -> None:
    """Refuse what BEAM's judge cannot do to logged samples: judging a reply more than once
    (upstream judges each rubric item once), or a token limit for samples built under the
    official protocol (whose grader sends none).

    Args:
        metadata: the logged samples' metadata.
        max_tokens: the grader's token limit per rubric item asked for.
        judge_runs: how many times each reply would be judged.
    """
    if judge_runs != 1:
        raise ValueError(
            f"judge_runs={judge_runs}: BEAM judges each rubric item once, as upstream does"
        )
    # a log written before the option was built under BEFORE_OPTION's texts
    protocols = {resolve(md.get("protocol", BEFORE_OPTION.name)) for md in metadata}
    if max_tokens is not None and OFFICIAL in protocols:
        raise ValueError(
            f"judge max_tokens {max_tokens}: these samples were built under "
            f"protocol={OFFICIAL}, whose grader sends no token limit (as upstream's does); "
            "leave the limit out"
        )

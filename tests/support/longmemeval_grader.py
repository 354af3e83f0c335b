"""A table-driven stand-in grader for the LongMemEval fixture, in-process and for the real CLI.

The verdict depends only on which fixture question the judge prompt is about: questions in
`YES` get "yes", one question can be made unreadable (to test unscored items), all others get
"no". That makes every aggregate hand-computable (see EXPECTED).

From the command line it is the real Inspect CLI with this grader registered as `lmetable/...`:

    python tests/support/longmemeval_grader.py eval memevals/longmemeval -T variant=oracle \
        -T data_dir=tests/fixtures -T verify_checksum=false \
        --model mockllm/model --model-role grader=lmetable/fixture
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig
from scripted_api import Reply, mockllm_outputs, run_inspect, scripted_provider

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"

#: fixture question_id -> question text (the judge prompt quotes the question)
QUESTIONS: dict[str, str] = {
    "fx01a2b3": "What degree did I graduate with?",
    "fx02c4d5": "How long is my daily commute to work?",
    "fx03e6f7_abs": "What is the name of my hamster?",
    "fx04a8b9": "In our chat about Lisbon, which pastry shop did you recommend in Belém?",
    "fx05c1d2": "How many cans of black beans did the vegan chili recipe you gave me call for?",
    "fx06e3f4": "Can you suggest some activities for this weekend?",
    "fx07a5b6": "Any ideas for what I could cook for dinner tonight?",
    "fx08c7d8": "How many different musical instruments have I mentioned that I'm learning?",
    "fx09e9f0": "How much did I spend in total on the bike and the helmet?",
    "fx10a1b2_abs": "How much did I spend in total on the bike and the kayak?",
    "fx11c3d4": "How many days passed between my dentist appointment and my sister's wedding?",
    "fx12e5f6": "Which did I do first, start the pottery class or adopt the dog?",
    "fx13a7b8_abs": "How many weeks ago did I start learning Japanese?",
    "fx14c9d0": "Where do I currently work?",
    "fx15e1f2": "What is my current personal best for the 5K?",
    "fx16a3b4_abs": "What is my current personal best for the marathon?",
}

YES = frozenset(
    {
        "fx01a2b3",
        "fx03e6f7_abs",
        "fx04a8b9",
        "fx06e3f4",
        "fx08c7d8",
        "fx10a1b2_abs",
        "fx11c3d4",
        "fx14c9d0",
        "fx15e1f2",
        "fx16a3b4_abs",
    }
)

# Hand-computed aggregates for the 16 fixture questions under YES
# (benchmarks/longmemeval/README.md#scoring):
#   single_session_user 2/3 (fx01 yes, fx02 no, fx03_abs yes), single_session_assistant 1/2,
#   single_session_preference 1/2, multi_session 2/3, temporal_reasoning 1/3 (only fx11),
#   knowledge_update 3/3; overall 10/16; task-averaged (4+3+3+4+2+6)/36 = 22/36;
#   abstention 3/4 (fx13_abs is "no").
EXPECTED: dict[str, float] = {
    "overall_accuracy": 10 / 16,
    "task_averaged_accuracy": 22 / 36,
    "abstention_accuracy": 3 / 4,
    "single_session_user": 2 / 3,
    "single_session_assistant": 1 / 2,
    "single_session_preference": 1 / 2,
    "multi_session": 2 / 3,
    "temporal_reasoning": 1 / 3,
    "knowledge_update": 1.0,
}


def question_id_in(prompt: str) -> str:
    """The fixture question a judge prompt is about (exactly one must match)."""
    hits = [qid for qid, q in QUESTIONS.items() if f"\n{q}\n" in prompt]
    if len(hits) != 1:
        raise AssertionError(f"judge prompt matches {hits} fixture questions")
    return hits[0]


def table_verdict(prompt: str, unreadable: frozenset[str] = frozenset()) -> str:
    qid = question_id_in(prompt)
    if qid in unreadable:
        return "I think it is probably fine."
    label = "yes" if qid in YES else "no"
    return json.dumps({"label": label, "reason": f"table verdict for {qid}"})


def table_reply(unreadable: frozenset[str] = frozenset()) -> Reply:
    """The reply rule: the table's verdict on the question the judge prompt is about."""

    def reply(messages: list[ChatMessage], config: GenerateConfig) -> str:
        return table_verdict(messages[0].text, unreadable)

    return reply


def mock_grader(unreadable: frozenset[str] = frozenset()) -> Any:
    """A mockllm custom_outputs callable answering judge prompts from the table."""
    return mockllm_outputs(table_reply(unreadable))


scripted_provider("lmetable", table_reply())


if __name__ == "__main__":
    run_inspect()

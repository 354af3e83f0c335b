"""lm-eval replies under protocol=official judged post hoc by upstream's judge.

lm-eval writes its samples as its CLI does (its EvaluationTracker); `memevals.tools.judge`
replays them with a scripted grader (Inspect's grader role). The grader must get upstream's
judge prompt for each question and upstream's label rule must score it, as in the Inspect task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import upstream_longmemeval as up

pytest.importorskip("lm_eval")

from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, get_model
from lm_eval_support import write_lm_eval_samples

from memevals.core.upstream_judge import yes_in_reply
from memevals.results.posthoc_judging import judge_samples

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
OPTIONS: dict[str, Any] = {"data_dir": str(FIXTURES), "verify_checksum": False}
TASK = "longmemeval_oracle_knowledge_update"


def test_lm_eval_replies_get_upstreams_judge(tmp_path: Path) -> None:
    entries = up.load_entries(FIXTURES / "longmemeval" / "longmemeval_oracle.json")
    prompts = {
        up.reader_prompt(e, retriever_type="orig-session"): qid
        for qid, e in entries.items()
        if e["question_type"] == "knowledge-update"
    }
    replies = {
        p: f"  I believe the answer is {entries[q]['answer']}.\n" for p, q in prompts.items()
    }
    # lm-eval answers only the prompts upstream's reader builds (TableLM refuses any other)
    run_dir = write_lm_eval_samples(
        [TASK], replies, {**OPTIONS, "protocol": "official"}, tmp_path / "out", None
    )

    verdicts = ["Yes.", "eyes", "No"]
    seen: list[tuple[str, GenerateConfig]] = []

    def grade(
        messages: list[ChatMessage], tools: Any, tool_choice: Any, config: GenerateConfig
    ) -> ModelOutput:
        [message] = messages
        seen.append((message.text, config))
        return ModelOutput.from_content("mockllm/model", verdicts[(len(seen) - 1) % 3])

    grader = get_model("mockllm/model", custom_outputs=grade, memoize=False)
    [run] = judge_samples([run_dir], grader, cache=False, log_dir=str(tmp_path / "logs"))
    assert len(seen) == len(prompts) == 3
    expected = sorted(up.judge_prompt(entries[q], replies[p].strip()) for p, q in prompts.items())
    assert sorted(text for text, _ in seen) == expected
    assert all((c.max_tokens, c.temperature) == (10, 0.0) for _, c in seen)
    assert run.log.samples is not None
    labels = []
    for sample in run.log.samples:
        score = sample.scores["longmemeval_judge"]
        reply = score.metadata["judge_replies"][0]
        assert score.value["judge"] == (1.0 if up.label(reply) else 0.0)
        assert score.value["unclear"] == (0 if yes_in_reply(reply).clear else 1)
        labels.append(up.label(reply))
    assert sorted(labels) == [False, True, True]  # "eyes" is yes, as upstream reads it

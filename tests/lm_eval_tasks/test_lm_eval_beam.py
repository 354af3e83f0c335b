"""BEAM through lm-eval: the generated YAML, the same messages as Inspect (roles and contents,
through lm-eval's own chat-template path), and the same scores once lm-eval's replies are judged
by `memevals.tools.judge` with the same rule-based grader."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from lm_eval_support import write_lm_eval_samples

pytest.importorskip("lm_eval")

from beam_grader import grade
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ChatMessage, ModelOutput, get_model
from lm_eval.api.model import LM

from memevals.benchmarks.beam.record import RECORD
from memevals.benchmarks.beam.samples import MEMEVALS_MAX_TOKENS
from memevals.inspect_tasks.beam import beam
from memevals.lm_eval_tasks.generate import ROOT, record_files
from memevals.results.posthoc_judging import judge_samples

TASKS = ("knowledge_update", "event_ordering", "summarization")


def test_checked_in_yaml_is_generated_from_the_record() -> None:
    files = record_files(RECORD)
    assert len(files) == 12  # the base, ten subtasks and the group
    for rel, text in files.items():
        assert (ROOT / rel).read_text(encoding="utf-8") == text, rel


def reply_for(messages: Sequence[dict[str, str]]) -> str:
    """A deterministic reply from the question alone: its longest words, one per line (so event
    ordering gets several lines and rubric items partial matches)."""
    words = sorted(set(messages[-1]["content"].split()), key=lambda w: (-len(w), w))
    return "\n".join(words[:4])


class ChatTableLM(LM):  # type: ignore[misc]
    """An lm-eval chat model: its chat template is the messages as JSON, so every prompt it
    gets is exactly the messages lm-eval built; it replies by `reply_for`."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, str] = {}
        self.gen_kwargs: list[dict[str, Any]] = []

    @property
    def tokenizer_name(self) -> str:
        return "json-messages"

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        return json.dumps(chat_history, ensure_ascii=False)

    def generate_until(self, requests: Sequence[Any], disable_tqdm: bool = False) -> list[str]:
        out = []
        for req in requests:
            prompt = req.args[0]
            self.gen_kwargs.append(dict(req.args[1]))
            self.seen[prompt] = reply_for(json.loads(prompt))
            out.append(self.seen[prompt])
        return out

    def loglikelihood(self, requests: Sequence[Any], disable_tqdm: bool = False) -> list[Any]:
        raise NotImplementedError

    def loglikelihood_rolling(
        self, requests: Sequence[Any], disable_tqdm: bool = False
    ) -> list[Any]:
        raise NotImplementedError


def run_lm_eval(out: Path) -> tuple[Path, ChatTableLM]:
    lm = ChatTableLM()
    # conversations 1 and 2 (limit 4): two clusters
    tasks = [f"beam_{t}" for t in TASKS]
    run_dir = write_lm_eval_samples(tasks, {}, {}, out, 4, model=lm, apply_chat_template=True)
    return run_dir, lm


def grader() -> Any:
    return get_model(
        "mockllm/model",
        custom_outputs=lambda messages, *_: ModelOutput.from_content("g", grade(messages)),
        memoize=False,
    )


def run_inspect(lm_prompts: dict[str, str], ids: list[str], log_dir: Path) -> EvalLog:
    def reply(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        key = json.dumps(
            [{"role": m.role, "content": m.text} for m in messages], ensure_ascii=False
        )
        if key not in lm_prompts:
            raise AssertionError("Inspect sent messages lm-eval never sent")
        return ModelOutput.from_content("mockllm/model", lm_prompts[key])

    [log] = inspect_eval(
        beam(categories=",".join(TASKS)),
        model=get_model("mockllm/model", custom_outputs=reply, memoize=False),
        model_roles={"grader": grader()},
        sample_id=ids,
        display="none",
        log_dir=str(log_dir),
    )
    assert log.status == "success", log.error
    return log


def beam_metrics(log: EvalLog) -> dict[str, float]:
    assert log.results is not None
    # the judge's one result (issue 38): overall, stderr, the abilities, then unscored
    return {
        row: round(float(m.value), 12)
        for s in log.results.scores
        if s.name == "beam_judge"
        for row, m in s.metrics.items()
    }


def test_inspect_and_lm_eval_send_the_same_messages_and_score_the_same(tmp_path: Path) -> None:
    run_dir, lm = run_lm_eval(tmp_path / "lm")
    assert len(lm.seen) == 12
    # lm-eval always sends a limit: 2048 (the memevals protocol's) even under official, where
    # upstream and the Inspect task send none (README, docs/judges.md)
    assert {(k["max_gen_toks"], k["temperature"]) for k in lm.gen_kwargs} == {
        (MEMEVALS_MAX_TOKENS, 0.0)
    }
    assert MEMEVALS_MAX_TOKENS == 2048
    ids = []
    for task in TASKS:
        [path] = run_dir.glob(f"samples_beam_{task}_*.jsonl")
        ids += [json.loads(line)["doc"]["id"] for line in path.read_text().splitlines() if line]
    assert ids == [f"beam-100K-{c}-{t}-{i}" for t in TASKS for c in (1, 2) for i in range(2)]
    inspect_log = run_inspect(lm.seen, ids, tmp_path / "inspect")
    [judged] = judge_samples(
        [run_dir], grader(), log_dir=str(tmp_path / "logs"), output_dir=tmp_path / "judge"
    )
    want = beam_metrics(inspect_log)
    assert want and want == beam_metrics(judged.log), (want, beam_metrics(judged.log))
    assert set(want) >= {"overall", "stderr", "knowledge_update", "event_ordering"}
    assert all(v == v for v in want.values())  # no NaN: two conversations

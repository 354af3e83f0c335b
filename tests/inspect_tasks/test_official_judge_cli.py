"""What the grader receives under protocol=official, through the real `inspect eval` CLI.

LoCoMo-Plus's cognitive samples and LoCoMo's adversarial questions with `judge=true` run with
mockllm as the model under test and as the grader (`--model-role grader=mockllm/model`). Inspect
logs every call the grader gets (a model event with role `grader`); each must be one user
message whose text is what LoCoMo-Plus's `llm_as_judge.py` sends through its `call_llm`
(`_prepend_conv_prefix` of the filled template), at temperature 0 with 512 tokens, restated from
the pinned copies in tests/support/upstream_locomo.py.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import upstream_locomo as up
from cli_support import run_inspect_cli
from inspect_ai.event import ModelEvent
from inspect_ai.log import read_eval_log, resolve_sample_attachments

LIMIT = 3


def _grader_calls(tmp_path: Path, task: str, *options: str) -> dict[str, list[Any]]:
    """Sample id -> (its reply, the grader's model events), from the CLI's log."""
    logs = tmp_path / task
    args = ["eval", f"memevals/{task}", "--model", "mockllm/model"]
    args += ["--model-role", "grader=mockllm/model", "--limit", str(LIMIT)]
    for option in options:
        args += ["-T", option]
    args += ["--log-dir", str(logs), "--log-format", "json", "--display", "none"]
    proc = run_inspect_cli(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [path] = logs.glob("*.json")
    log = read_eval_log(str(path))
    assert log.status == "success", log.error
    assert log.eval.metadata is not None and log.eval.metadata["protocol"] == "official"
    assert log.samples is not None and len(log.samples) == LIMIT
    out: dict[str, list[Any]] = {}
    for logged in log.samples:
        sample = resolve_sample_attachments(logged)
        events = [e for e in sample.events if isinstance(e, ModelEvent) and e.role == "grader"]
        out[str(sample.id)] = [sample.output.completion, events]
    return out


def _check(calls: list[ModelEvent], want: str) -> None:
    [call] = calls  # judged once
    assert [(m.role, m.text) for m in call.input] == [("user", want)]
    assert (call.config.temperature, call.config.max_tokens) == (0.0, 512)


def test_locomo_plus_grader_gets_upstreams_one_user_message(data_dir: Path, tmp_path: Path) -> None:
    unified = up.unified_samples(data_dir)
    got = _grader_calls(tmp_path, "locomo_plus_cognitive")
    assert set(got) == {f"plus-{n}" for n in range(LIMIT)}
    for sid, (reply, calls) in got.items():
        sample = unified[1986 + int(sid.removeprefix("plus-"))]
        # upstream's prediction: the stripped reply, "(empty)" for an empty one
        pred = reply.strip() or "(empty)"
        want = up.judge_message(data_dir, "Cognitive", sample["evidence"], pred, None)
        assert want.startswith("Below is a conversation between two people: A and B.")
        _check(calls, want)


def test_locomo_judge_grader_gets_upstreams_one_user_message(
    data_dir: Path, tmp_path: Path
) -> None:
    got = _grader_calls(tmp_path, "locomo_adversarial", "judge=true")
    texts = up.locomo_texts(data_dir)
    categories = up.plus_texts(data_dir)["categories"]
    questions = {
        f"{s['sample_id']}-q{j}": (s, qa)
        for s in up.raw(data_dir, "locomo/locomo10.json")
        for j, qa in enumerate(s["qa"])
    }
    for sid, (reply, calls) in got.items():
        sample, qa = questions[sid]
        assert qa["category"] == 5
        refusal_first = random.Random(f"0:{sid}").random() < 0.5
        _, key = up.question_entry(qa, texts, refusal_first)
        assert key is not None
        # upstream's LoCoMo prediction: `get_cat_5_answer` of the reply, stripped
        pred = up.cat_5_answer(reply, key).strip()
        evidence = up.evidence_text(sample["conversation"], qa["evidence"])
        want = up.judge_message(data_dir, categories[5], evidence, pred, qa.get("answer"))
        _check(calls, want)

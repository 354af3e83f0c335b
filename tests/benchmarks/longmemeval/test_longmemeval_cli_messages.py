"""The same messages through both real CLIs, for each protocol.

`inspect eval` (mockllm) and `lm_eval` (the dummy model) run LongMemEval's oracle fixture with
the same options; the model call Inspect logs must be one user message whose text is, for every
question, the prompt lm-eval logs, and lm-eval's chat rendering of that document must be the
same single user message. Under `official` the text is also upstream's message (built from the
shared copies by upstream_longmemeval.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import upstream_longmemeval as up
from cli_support import run_inspect_cli
from inspect_ai.event import ModelEvent
from inspect_ai.log import read_eval_log, resolve_sample_attachments

pytest.importorskip("lm_eval")

from lm_eval_support import run_lm_eval_cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
OPTIONS: dict[str, Any] = {"data_dir": str(FIXTURES), "verify_checksum": False}
LIMIT = 2  # per lm-eval subtask: 12 questions of the six types


def _inspect_messages(tmp_path: Path, protocol: str) -> dict[str, list[tuple[str, str]]]:
    logs = tmp_path / "inspect"
    proc = run_inspect_cli(
        [
            "eval",
            "memevals/longmemeval_oracle",
            "-T",
            f"data_dir={FIXTURES}",
            "-T",
            "verify_checksum=false",
            "-T",
            f"protocol={protocol}",
            "--model",
            "mockllm/model",
            "--model-role",
            "grader=mockllm/model",
            "--log-dir",
            str(logs),
            "--log-format",
            "json",
            "--display",
            "plain",
        ],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [path] = logs.glob("*.json")
    log = read_eval_log(str(path))
    assert log.status == "success"
    assert log.eval.metadata is not None and log.eval.metadata["protocol"] == protocol
    out: dict[str, list[tuple[str, str]]] = {}
    assert log.samples is not None
    for logged in log.samples:
        sample = resolve_sample_attachments(logged)
        assert sample.metadata["protocol"] == protocol
        calls = [e for e in sample.events if isinstance(e, ModelEvent) and e.role is None]
        [answer] = calls  # one call to the model under test: the answer
        out[str(sample.id)] = [(m.role, m.text) for m in answer.input]
        if protocol == "official":
            assert (answer.config.temperature, answer.config.max_tokens) == (0.0, 500)
    return out


def _lm_eval_prompts(tmp_path: Path, protocol: str) -> dict[str, str]:
    run_dir = run_lm_eval_cli(
        [
            "--model",
            "dummy",
            "--tasks",
            "longmemeval_oracle",
            "--metadata",
            json.dumps({**OPTIONS, "protocol": protocol}),
            "--limit",
            str(LIMIT),
        ],
        tmp_path,
    )
    prompts: dict[str, str] = {}
    for path in run_dir.glob("samples_longmemeval_oracle_*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            assert json.loads(record["doc"]["metadata"])["protocol"] == protocol
            prompts[record["doc"]["id"]] = record["arguments"]["gen_args_0"]["arg_0"]
    return prompts


def _lm_eval_chat(protocol: str) -> dict[str, list[dict[str, str]]]:
    """lm-eval's own chat rendering of each document (what a chat model would be sent)."""
    from lm_eval.tasks import TaskManager, get_task_dict

    from memevals.lm_eval_tasks import include_path

    manager = TaskManager(
        include_path=include_path(),
        include_defaults=False,
        metadata={**OPTIONS, "protocol": protocol},
    )
    [task] = get_task_dict(["longmemeval_oracle_knowledge_update"], manager).values()
    out = {}
    for doc in task.test_docs():
        rendered = task.fewshot_context(
            doc, num_fewshot=0, apply_chat_template=True, chat_template=lambda m, **_: json.dumps(m)
        )
        out[doc["id"]] = json.loads(rendered)
    return out


@pytest.mark.parametrize("protocol", ["official", "memevals"])
def test_inspect_and_lm_eval_hand_the_model_the_same_messages(
    protocol: str, tmp_path: Path
) -> None:
    inspect_messages = _inspect_messages(tmp_path, protocol)
    lm_eval_prompts = _lm_eval_prompts(tmp_path, protocol)
    assert len(lm_eval_prompts) == 6 * LIMIT
    assert set(lm_eval_prompts) <= set(inspect_messages)
    for qid, prompt in lm_eval_prompts.items():
        assert inspect_messages[qid] == [("user", prompt)], qid
    if protocol == "official":
        # a chat model gets the document as one user message (lm-eval's own chat rendering;
        # the same for both protocols, the document being one text either way)
        for qid, messages in _lm_eval_chat(protocol).items():
            assert [(m["role"], m["content"]) for m in messages] == inspect_messages[qid], qid
        entries = up.load_entries(FIXTURES / "longmemeval" / "longmemeval_oracle.json")
        for qid, prompt in lm_eval_prompts.items():
            assert prompt == up.reader_prompt(entries[qid], retriever_type="orig-session")

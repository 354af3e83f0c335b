"""Both CLIs hand the model the same roles and contents, under each protocol.

The real `inspect eval` (mockllm) and the real `lm_eval` (its OpenAI-compatible chat model
against a loopback server, with its chat template applied) run LoCoMo's adversarial questions
(the two-option form) and LoCoMo-Plus's cognitive samples with `--limit 2`. Inspect's log
records the messages of every sample; the loopback server records every request lm-eval makes.
Under both protocols each sample is one user message, byte-identical in the two frameworks, and
the decoding limits agree; under official the text is upstream's (the first sample of each task
is checked against the reference in upstream_locomo.py).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
import upstream_locomo as up
from cli_support import run_inspect_cli, run_python
from inspect_ai.log import read_eval_log
from loopback_openai import LoopbackOpenAI, plain

from memevals.lm_eval_tasks import include_path

pytest.importorskip("lm_eval")

TASKS = ("locomo_adversarial", "locomo_plus_cognitive")
LIMIT = 2


def _inspect_messages(log_dir: Path) -> dict[str, dict[str, Any]]:
    """Per task: sample id -> (roles and contents sent, the task's generate config)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(log_dir.glob("*.eval")):
        log = read_eval_log(str(path))
        assert log.status == "success", log.error
        task = log.eval.task.split("/")[-1]
        config = log.plan.config
        out[task] = {
            str(s.id): (
                [(m.role, m.text) for m in s.messages if m.role != "assistant"],
                (config.max_tokens, config.temperature),
            )
            for s in log.samples or []
        }
    return out


def _lm_eval_requests(server: LoopbackOpenAI, run_dir: Path) -> dict[str, dict[str, Any]]:
    """Per task: document id -> (roles and contents of its request, its decoding limits)."""
    by_content: dict[str, dict[str, Any]] = {}
    for body in server.requests:
        by_content[json.dumps(body["messages"])] = body
    out: dict[str, dict[str, Any]] = {}
    for task in TASKS:
        [path] = run_dir.glob(f"samples_{task}_*.jsonl")
        rows = [json.loads(line) for line in path.read_text().splitlines() if line]
        out[task] = {}
        for row in rows:
            user = row["doc"]["user"]
            system = row["doc"]["system"]
            messages = [{"role": "user", "content": user}]
            assert system == "", "a document with a system text would be joined by lm-eval"
            body = by_content[json.dumps(messages)]
            out[task][row["doc"]["id"]] = (
                [(m["role"], m["content"]) for m in body["messages"]],
                (body["max_tokens"], body["temperature"]),
            )
    return out


def _run_lm_eval(server: LoopbackOpenAI, protocol: str, cwd: Path) -> Path:
    """The real `lm_eval` command line (in this process) against the loopback server; returns
    its run folder."""
    out = cwd / "lm_eval_out"
    cmd = [
        sys.executable,
        "-m",
        "lm_eval",
        "--model",
        "local-chat-completions",
        "--model_args",
        f"base_url={server.url}/chat/completions,model=loopback,tokenizer_backend=None,"
        "max_retries=1",
        "--apply_chat_template",
        "--tasks",
        ",".join(TASKS),
        "--limit",
        str(LIMIT),
        "--metadata",
        json.dumps({"protocol": protocol}),
        "--include_path",
        include_path(),
        "--output_path",
        str(out),
        "--log_samples",
    ]
    proc = run_python(cmd, cwd=cwd, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


@pytest.mark.parametrize("protocol", ["official", "memevals"])
def test_inspect_and_lm_eval_send_the_same_messages(
    protocol: str, data_dir: Path, tmp_path: Path
) -> None:
    log_dir = tmp_path / "logs"
    with LoopbackOpenAI(plain("(a)")) as server:
        # each CLI builds its own samples
        proc = run_inspect_cli(
            [
                "eval",
                *(f"memevals/{t}" for t in TASKS),
                "--model",
                "mockllm/model",
                "--limit",
                str(LIMIT),
                "-T",
                f"protocol={protocol}",
                "--log-dir",
                str(log_dir),
                "--display",
                "none",
            ],
            cwd=tmp_path,
        )
        run_dir = _run_lm_eval(server, protocol, tmp_path)
        lm_eval_sent = _lm_eval_requests(server, run_dir)
    assert proc.returncode == 0, proc.stderr[-4000:]
    inspect_sent = _inspect_messages(log_dir)

    assert set(inspect_sent) == set(lm_eval_sent) == set(TASKS)
    for task in TASKS:
        assert len(inspect_sent[task]) == LIMIT
        messages = {sid: sent for sid, (sent, _) in inspect_sent[task].items()}
        assert messages == {sid: sent for sid, (sent, _) in lm_eval_sent[task].items()}, task
        assert all([role for role, _ in sent] == ["user"] for sent in messages.values())
        # the same answer length (the temperature too, except where protocol=memevals leaves
        # Inspect's to the run: lm-eval's LoCoMo YAML decodes greedily)
        limits = {sid: limit for sid, (_, limit) in inspect_sent[task].items()}
        lm_limits = {sid: limit for sid, (_, limit) in lm_eval_sent[task].items()}
        if protocol == "official" or task == "locomo_plus_cognitive":
            assert limits == lm_limits, task
        else:
            assert {sid: t for sid, (t, _) in limits.items()} == {
                sid: t for sid, (t, _) in lm_limits.items()
            }

    if protocol != "official":
        return
    # upstream's decoding: LoCoMo 32 tokens at temperature 0, LoCoMo-Plus 1,024 at 0.3
    assert {limits for _, limits in inspect_sent["locomo_adversarial"].values()} == {(32, 0.0)}
    assert {limits for _, limits in inspect_sent["locomo_plus_cognitive"].values()} == {(1024, 0.3)}
    # and upstream's text
    locomo = up.raw(data_dir, "locomo/locomo10.json")[0]
    first_adversarial = next(j for j, qa in enumerate(locomo["qa"]) if qa["category"] == 5)
    sid = f"conv-26-q{first_adversarial}"
    walk = up.Walk(up.upstream_conversation(locomo), lambda t: len(t.encode()))
    want = up.full_query(
        locomo,
        locomo["qa"][first_adversarial],
        up.locomo_texts(data_dir),
        random.Random(f"0:{sid}").random() < 0.5,
        walk,
        128_000,
    )
    assert inspect_sent["locomo_adversarial"][sid][0] == [("user", want)]
    cognitive = up.unified_samples(data_dir)[1986]
    assert inspect_sent["locomo_plus_cognitive"]["plus-0"][0] == [
        ("user", up.model_input(data_dir, cognitive))
    ]

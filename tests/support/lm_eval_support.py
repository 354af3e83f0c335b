"""Helpers shared by the lm-eval tests (imported by name: keep this module name unique).

The cross-framework tests feed lm-eval and Inspect the same replies from one table keyed by the
exact prompt text. Both sides refuse a prompt that is not in the table, so a run that finishes
also shows that the two frameworks sent the same text.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cli_support import run_python
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ChatMessage, GenerateConfig, Model, ModelOutput, get_model
from lm_eval import simple_evaluate
from lm_eval.api.model import LM
from lm_eval.loggers import EvaluationTracker
from lm_eval.tasks import TaskManager

from memevals.core.prompt_item import PromptItem
from memevals.lm_eval_tasks import include_path


class TableLM(LM):  # type: ignore[misc]
    """An lm-eval model replying from `replies` (prompt text -> reply). Every prompt it gets is
    kept in `prompts`; one missing from the table fails the run."""

    def __init__(self, replies: dict[str, str] | None = None) -> None:
        super().__init__()
        self.replies = replies or {}
        self.prompts: list[str] = []

    def generate_until(self, requests: Sequence[Any], disable_tqdm: bool = False) -> list[str]:
        out = []
        for req in requests:
            prompt = req.args[0]
            self.prompts.append(prompt)
            if prompt not in self.replies:
                raise AssertionError(f"lm-eval sent a prompt Inspect never sees: {prompt[-300:]!r}")
            out.append(self.replies[prompt])
        return out

    def loglikelihood(self, requests: Sequence[Any], disable_tqdm: bool = False) -> list[Any]:
        raise NotImplementedError

    def loglikelihood_rolling(
        self, requests: Sequence[Any], disable_tqdm: bool = False
    ) -> list[Any]:
        raise NotImplementedError


def inspect_prompt(messages: Sequence[ChatMessage]) -> str:
    """An Inspect sample's messages as one text, joined the way PromptItem.as_text() joins the
    lm-eval prompt (system, blank line, user)."""
    system = "".join(m.text for m in messages if m.role == "system")
    user = "".join(m.text for m in messages if m.role == "user")
    return PromptItem(id="", system=system, user=user, target="").as_text()


def mock_from_table(replies: dict[str, str]) -> Callable[..., ModelOutput]:
    """mockllm `custom_outputs` replying from the same table as TableLM."""

    def reply(
        messages: list[ChatMessage], tools: Any, tool_choice: Any, config: GenerateConfig
    ) -> ModelOutput:
        prompt = inspect_prompt(messages)
        if prompt not in replies:
            raise AssertionError(f"Inspect sent a prompt lm-eval never sees: {prompt[-300:]!r}")
        return ModelOutput.from_content(model="mockllm/model", content=replies[prompt])

    return reply


def table_model(replies: dict[str, str]) -> Model:
    """An Inspect model (mockllm, never memoized) answering from the table."""
    return get_model("mockllm/model", custom_outputs=mock_from_table(replies))


def run_inspect(
    task: Task,
    replies: dict[str, str],
    log_dir: Path,
    ids: list[str] | None = None,
    roles: dict[str, Model] | None = None,
) -> EvalLog:
    """Evaluate `task` in-process with the table model (all samples unless `ids` is given);
    the run must succeed."""
    [log] = inspect_eval(
        task,
        model=table_model(replies),
        model_roles=roles,
        sample_id=ids,
        display="none",
        log_dir=str(log_dir),
    )
    assert log.status == "success", log.error
    return log


def run_lm_eval_cli(args: list[str], cwd: Path, timeout: float = 600) -> Path:
    """The real lm-eval command line (in this process: cli_support.run_python), with our tasks
    and --log_samples, writing under `cwd`/out; returns the run's output folder."""
    out = cwd / "out"
    cmd = [
        sys.executable,
        "-m",
        "lm_eval",
        *args,
        "--include_path",
        include_path(),
        "--output_path",
        str(out),
        "--log_samples",
    ]
    proc = run_python(cmd, cwd=cwd, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def samples_of(run_dir: Path, task: str) -> list[dict[str, Any]]:
    """The records of the one samples_<task>_*.jsonl file lm-eval wrote in `run_dir`."""
    [path] = run_dir.glob(f"samples_{task}_*.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def write_lm_eval_samples(
    tasks: list[str],
    answers: dict[str, str],
    metadata: dict[str, Any],
    out: Path,
    limit: int | None,
    *,
    model: LM | None = None,
    apply_chat_template: bool = False,
) -> Path:
    """Run lm-eval in-process and save samples exactly as its CLI does; returns the folder.
    The model answers from `answers` unless another `model` is given."""
    tracker = EvaluationTracker(output_path=str(out))
    results = simple_evaluate(
        model=model if model is not None else TableLM(answers),
        tasks=tasks,
        task_manager=TaskManager(
            include_path=include_path(), include_defaults=False, metadata=metadata
        ),
        limit=limit,
        apply_chat_template=apply_chat_template,
        log_samples=True,
        bootstrap_iters=0,
        evaluation_tracker=tracker,
    )
    assert results is not None
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for task in results["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return run_dir

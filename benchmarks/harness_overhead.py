"""Harness overhead: what memevals adds on top of Inspect itself, measured with no model cost.

Runs, in one process and one after the other on `mockllm` (instant replies):
  1. a trivial Inspect task with the same number of samples as LoCoMo (1,986 one-line
     questions, `generate()`, `match()`), and
  2. the full `locomo` task: all 1,986 questions with the whole conversation (≈22K tokens) as
     the system message, scored by the official F1 and the prompt-token scorer.
and prints the wall time of each `eval()` (the task is built before the clock starts; its build
time is printed separately), the ratio (goal ≤ 1.5×) and the size of each log file.

mockllm counts every prompt's tokens itself with tiktoken, which would download its vocabulary.
The tests replace that with a word count (tests/inspect_offline.py); here it is replaced by
len(text) // 4, because splitting 186 M characters into words is a cost of the mock alone (an
API provider returns its usage; nothing is counted on our side) and would otherwise be ~4 % of
the LoCoMo run. A short warm-up run comes first so that neither timed run pays for imports.

    MEMEVALS_DATA_DIR=../shared/data python benchmarks/harness_overhead.py
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalLog
from inspect_ai.model._providers.mockllm import MockLLM
from inspect_ai.scorer import match
from inspect_ai.solver import generate

from memevals.inspect_tasks.locomo import locomo


async def _cheap_count(self: MockLLM, text: str) -> int:
    return max(1, len(text) // 4)


def trivial_task(n: int) -> Task:
    samples = [
        Sample(id=f"t{i}", input=f"What is {i} plus one?", target=str(i + 1)) for i in range(n)
    ]
    return Task(dataset=MemoryDataset(samples, name="trivial"), solver=generate(), scorer=match())


def timed_eval(task: Task, log_dir: str) -> tuple[float, EvalLog]:
    t0 = time.perf_counter()
    [log] = eval(task, model="mockllm/model", log_dir=log_dir, display="none")
    elapsed = time.perf_counter() - t0
    if log.status != "success":
        raise RuntimeError(f"{task.name}: run failed: {log.error}")
    return elapsed, log


def main() -> None:
    MockLLM.count_text_tokens = _cheap_count  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="memevals-overhead-") as tmp:
        timed_eval(trivial_task(20), os.path.join(tmp, "warmup"))

        t0 = time.perf_counter()
        task = locomo(context="full")
        build = time.perf_counter() - t0
        n = len(task.dataset)

        t_trivial, log_trivial = timed_eval(trivial_task(n), os.path.join(tmp, "trivial"))
        t_locomo, log_locomo = timed_eval(task, os.path.join(tmp, "locomo"))

        size_trivial = os.path.getsize(log_trivial.location)
        size_locomo = os.path.getsize(log_locomo.location)
        prompt_chars = sum(
            sum(len(m.text) for m in s.input) if isinstance(s.input, list) else len(s.input)
            for s in task.dataset
        )

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print(f"samples: {n} each (LoCoMo full context: {prompt_chars / 1e6:.1f} M prompt characters)")
    print(f"locomo task build (load, render, count tokens): {build:.1f} s (not in the ratio)")
    print(f"trivial task eval on mockllm: {t_trivial:.1f} s ({1e3 * t_trivial / n:.1f} ms/sample)")
    per = 1e3 * t_locomo / n
    print(f"locomo full-context eval on mockllm: {t_locomo:.1f} s ({per:.1f} ms/sample)")
    print(f"wall-time ratio locomo / trivial: {t_locomo / t_trivial:.2f}x (goal <= 1.5x)")
    print(
        f"log size: trivial {size_trivial / 1e6:.2f} MB, locomo {size_locomo / 1e6:.2f} MB "
        f"({size_locomo / n / 1e3:.1f} KB/sample)"
    )


if __name__ == "__main__":
    main()

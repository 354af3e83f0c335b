"""Harness overhead: what memevals adds on top of Inspect itself, measured with no model cost.

Runs, in one process and one after the other on `mockllm` (instant replies):
  1. a trivial Inspect task with the same number of samples as LoCoMo (1,986 one-line
     questions, `generate()`, `match()`), and
  2. the full `locomo` task: all 1,986 questions with the whole conversation (≈22K tokens) as
     the system message, scored by the official F1 (which also records the prompt size).
and prints the wall time and CPU time of each `eval()` (the task is built before the clock
starts; its build time is printed separately), their ratios (goal ≤ 1.5×) and the size of each
log file. `--repeat N` (default 5) runs N rounds and reports the median ratio, because single
runs on a 2-core machine vary by ~10 %. On a shared machine the CPU-time ratio is the
steadier figure. `--split` adds LoCoMo with context=none (same scorers, one-line prompts),
separating what memevals' scorers cost from what Inspect spends on 22K-token prompts (recording
each sample's input in the log).

mockllm counts every prompt's tokens itself with tiktoken, which would download its vocabulary.
The tests replace that with a word count (tests/support/inspect_offline.py); here it is replaced by
len(text) // 4, because splitting 186 M characters into words is a cost of the mock alone (an
API provider returns its usage; nothing is counted on our side) and would otherwise be ~4 % of
the LoCoMo run. A short warm-up run comes first so that neither timed run pays for imports.

    MEMEVALS_DATA_DIR=../shared/data python perf/harness_overhead.py
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
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


@dataclass
class Run:
    label: str
    wall: float
    cpu: float
    log_bytes: int


def timed_eval(label: str, task: Task, log_dir: str) -> Run:
    """Wall time and this process's CPU time (all threads) of one eval()."""
    w0, c0 = time.perf_counter(), time.process_time()
    [log] = eval(task, model="mockllm/model", log_dir=log_dir, display="none")
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    if log.status != "success":
        raise RuntimeError(f"{label}: run failed: {log.error}")
    return Run(label, wall, cpu, os.path.getsize(log.location))


def main() -> None:
    parser = argparse.ArgumentParser(description="memevals harness overhead on mockllm")
    parser.add_argument(
        "--split",
        action="store_true",
        help="also run LoCoMo with context=none (same scorers, one-line prompts) to separate "
        "the cost of memevals' scorers from the cost of large prompts",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="rounds of (trivial, locomo[, none]) runs; the ratios are per round, and their "
        "median is the reported figure (single runs vary by ~10 %% on a 2-core machine)",
    )
    ns = parser.parse_args()
    if ns.repeat < 1:
        parser.error("--repeat must be at least 1")
    MockLLM.count_text_tokens = _cheap_count  # type: ignore[method-assign,assignment]
    rounds: list[list[Run]] = []
    with tempfile.TemporaryDirectory(prefix="memevals-overhead-") as tmp:
        timed_eval("warm-up", trivial_task(20), os.path.join(tmp, "warmup"))

        t0 = time.perf_counter()
        task = locomo(context="full")
        build = time.perf_counter() - t0
        n = len(task.dataset)
        prompt_chars = sum(
            sum(len(m.text) for m in s.input) if isinstance(s.input, list) else len(s.input)
            for s in task.dataset
        )
        for k in range(ns.repeat):
            runs = [timed_eval("trivial task", trivial_task(n), os.path.join(tmp, f"t{k}"))]
            runs.append(timed_eval("locomo full context", task, os.path.join(tmp, f"f{k}")))
            if ns.split:
                none = locomo(context="none")
                runs.append(timed_eval("locomo context=none", none, os.path.join(tmp, f"n{k}")))
            rounds.append(runs)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print(f"samples: {n} each (LoCoMo full context: {prompt_chars / 1e6:.1f} M prompt characters)")
    print(f"locomo task build (load, render, count tokens): {build:.1f} s (not in the ratios)")
    heads = ("wall s", "cpu s", "wall x", "cpu x", "log MB")
    print(f"{'round / run':<26}" + "".join(f"{h:>9}" for h in heads) + f"{'KB/sample':>11}")
    for i, runs in enumerate(rounds, start=1):
        base = runs[0]
        for r in runs:
            print(
                f"{i} {r.label:<24}{r.wall:>9.1f}{r.cpu:>9.1f}{r.wall / base.wall:>9.2f}"
                f"{r.cpu / base.cpu:>9.2f}{r.log_bytes / 1e6:>9.2f}{r.log_bytes / n / 1e3:>11.1f}"
            )
    walls = [runs[1].wall / runs[0].wall for runs in rounds]
    cpus = [runs[1].cpu / runs[0].cpu for runs in rounds]
    print(
        f"ratio locomo full / trivial, median of {len(rounds)} round(s): "
        f"wall {statistics.median(walls):.2f}x (rounds: {', '.join(f'{w:.2f}' for w in walls)}), "
        f"cpu {statistics.median(cpus):.2f}x (goal <= 1.5x)"
    )
    if ns.split:
        nones = [runs[2].wall / runs[0].wall for runs in rounds]
        print(f"ratio locomo context=none / trivial, median: wall {statistics.median(nones):.2f}x")


if __name__ == "__main__":
    main()

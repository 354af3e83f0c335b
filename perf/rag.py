"""RAG cost on LoCoMo: index build time per conversation, retrieval latency per question, and the
prompt size of top-k retrieval as a fraction of the full-context prompt.

    python perf/rag.py                       # BM25 + embeddings, all 10 conversations
    python perf/rag.py --retrievers bm25     # no sentence-transformers needed
    python perf/rag.py --conversations 3 --json out.json

Latency is measured per question with one `rank` call (one query encoding for embeddings),
i.e. without the batching the task uses; the prompt sizes are those of the samples the
`locomo` task sends (context + question, the task's token counter; BM25 retrieval).
Goal: RAG top-5 input tokens <= 5 % of the full-context tokens.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.memory import UNIT_BUILDERS, locomo_memory
from memevals.benchmarks.locomo.prompts import build_items
from memevals.benchmarks.locomo.samples import annotate_items
from memevals.core.memory_options import MemoryOptions
from memevals.core.retrievers import (
    DEFAULT_EMBEDDING_MODEL,
    make_retriever,
    resolve_embedding_model,
)
from memevals.core.tokens import get_token_counter


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def retrieval_timings(
    retriever: str, unit: str, convs: list[Any], embedding_model: str | None
) -> dict[str, Any]:
    start = time.perf_counter()
    engine = make_retriever(retriever, embedding_model if retriever == "embedding" else None)
    load_s = time.perf_counter() - start
    builds: list[float] = []
    latencies: list[float] = []
    for conv in convs:
        units = UNIT_BUILDERS[unit](conv)
        t0 = time.perf_counter()
        index = engine.index(units)
        builds.append(time.perf_counter() - t0)
        for qa in conv.qa:
            t1 = time.perf_counter()
            index.rank(qa.question)
            latencies.append(time.perf_counter() - t1)
    return {
        "retriever": retriever,
        "unit": unit,
        "conversations": len(convs),
        "questions": len(latencies),
        "setup_ms": _ms(load_s),
        "index_build_ms_per_conversation_mean": _ms(statistics.mean(builds)),
        "index_build_ms_per_conversation_max": _ms(max(builds)),
        "latency_ms_per_question_mean": _ms(statistics.mean(latencies)),
        "latency_ms_per_question_p50": _ms(statistics.median(latencies)),
        "latency_ms_per_question_p95": _ms(_pct(latencies, 0.95)),
    }


def prompt_tokens(convs: list[Any], **options: Any) -> tuple[int, int]:
    """(total prompt tokens, samples) of the task's samples under `options`."""
    memory = locomo_memory(MemoryOptions(**options))
    items, summary = annotate_items(build_items(convs, context=memory), convs, memory)
    return summary["prompt_tokens_total"], len(items)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--conversations", type=int, default=10)
    ap.add_argument("--retrievers", default="bm25,embedding")
    ap.add_argument("--embedding-model", default=DEFAULT_EMBEDDING_MODEL)
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--torch-threads",
        type=int,
        default=None,
        help="torch intra-op threads for the embedding model (1 avoids oversubscription on a "
        "shared machine; default: torch's own choice)",
    )
    args = ap.parse_args(argv)
    if args.torch_threads is not None and "embedding" in args.retrievers:
        import torch

        torch.set_num_threads(args.torch_threads)
    # The 4 unresolvable evidence ids are reported by the task; not needed in this report.
    logging.getLogger("memevals.benchmarks.locomo.samples").setLevel(logging.ERROR)

    convs = load_locomo(args.data_dir)[: args.conversations]
    counter = get_token_counter()
    report: dict[str, Any] = {
        "conversations": [c.sample_id for c in convs],
        "token_counter": counter.name,
        "python": sys.version.split()[0],
        "torch_threads": args.torch_threads,
    }

    print(f"LoCoMo, {len(convs)} conversation(s); token counter {counter.name}")
    timings = []
    for retriever in [r.strip() for r in args.retrievers.split(",") if r.strip()]:
        units = ("dialog", "observation", "summary") if retriever == "bm25" else ("dialog",)
        for unit in units:
            t = retrieval_timings(retriever, unit, convs, args.embedding_model)
            timings.append(t)
            print(
                f"  {retriever:9s} {unit:11s} index build "
                f"{t['index_build_ms_per_conversation_mean']:9.1f} ms/conv "
                f"(max {t['index_build_ms_per_conversation_max']:.1f}); latency "
                f"{t['latency_ms_per_question_mean']:7.2f} ms/question "
                f"(p50 {t['latency_ms_per_question_p50']:.2f}, "
                f"p95 {t['latency_ms_per_question_p95']:.2f}); setup {t['setup_ms']:.0f} ms"
            )
    report["timings"] = timings
    if "embedding" in args.retrievers:
        report["embedding_model"] = resolve_embedding_model(args.embedding_model)

    full_total, n = prompt_tokens(convs, context="full")
    sizes: dict[str, Any] = {"full": {"prompt_tokens_total": full_total, "samples": n}}
    print(
        f"  full context: {full_total} prompt tokens over {n} questions ({full_total / n:.0f} each)"
    )
    for unit in ("dialog", "observation", "summary"):
        total, _ = prompt_tokens(convs, context="rag", retrieval_unit=unit, top_k=args.top_k)
        ratio = total / full_total
        sizes[f"rag_{unit}_top{args.top_k}"] = {
            "prompt_tokens_total": total,
            "fraction_of_full": round(ratio, 5),
        }
        verdict = "ok" if ratio <= 0.05 else "over the 5 % goal"
        print(
            f"  rag {unit:11s} top-{args.top_k}: {total / n:6.0f} tokens/question = "
            f"{100 * ratio:.2f} % of full context ({verdict})"
        )
    oracle_total, _ = prompt_tokens(convs, context="oracle")
    sizes["oracle"] = {
        "prompt_tokens_total": oracle_total,
        "fraction_of_full": round(oracle_total / full_total, 5),
    }
    oracle_pct = 100 * oracle_total / full_total
    print(f"  oracle: {oracle_total / n:.0f} tokens/question = {oracle_pct:.2f} %")
    report["prompt_sizes"] = sizes
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The embedding retriever's vector cache on LoCoMo: `samples.build` of `context=rag
retriever=embedding` (every conversation's turns and every question encoded by
all-MiniLM-L6-v2) into an empty cache folder, then again over the cache it filled; the two
builds' prompts must be identical.

    MEMEVALS_DATA_DIR=../shared/data python perf/embedding_cache.py [--torch-threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def _build_seconds() -> tuple[float, list[str]]:
    from memevals.benchmarks.locomo.samples import LocomoOptions, build
    from memevals.core.memory_options import MemoryOptions

    options = LocomoOptions(memory=MemoryOptions(context="rag", retriever="embedding"))
    start = time.perf_counter()
    items = build(options).items
    return time.perf_counter() - start, [i.as_text() for i in items]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-threads", type=int, default=None)
    args = parser.parse_args(argv)
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["MEMEVALS_CACHE_DIR"] = cache
        from memevals.core.retrievers import load_embedding_model

        load_embedding_model("all-MiniLM-L6-v2")  # loaded before both timings
        cold, first = _build_seconds()
        warm, second = _build_seconds()
        files = sum(len(f) for _, _, f in os.walk(os.path.join(cache, "embeddings")))
    if first != second:
        print("the builds' prompts differ", file=sys.stderr)
        return 1
    print(f"samples: {len(first)}; vector files: {files}")
    print(f"empty cache: {cold:.1f} s; over the cache: {warm:.1f} s; ratio {cold / warm:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

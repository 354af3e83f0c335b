"""Streaming-load benchmark for LongMemEval M: peak memory and throughput on a ~2.7 GB file.

Generates a same-schema file (perf/gen_longmemeval.py, in a child process so its memory is
not counted) in a temporary folder, then streams it through the real adapter
(`memevals.benchmarks.longmemeval.data.iter_instances`: ijson parse, full validation, dataclasses),
optionally rendering each instance's full JSON-format history prompt as the task would, and
keeping nothing. Reports peak RSS of this process (goal: at most 1 GB) and instances/s.

`--task truncated|rag|oracle` instead builds the real Inspect task `longmemeval_m` with that
context on the file (stream, render, cut or retrieve, count every prompt's tokens, and keep all
500 samples, as `inspect eval` does before the first model call), the realistic ways to run M.

    python perf/longmemeval_stream.py [--instances 500] [--render | --task CONTEXT]
        [--file PATH] [--keep] [--max-rss-mb 1024]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from memevals.benchmarks.longmemeval.data import iter_instances  # noqa: E402
from memevals.benchmarks.longmemeval.memory import history_text, session_blocks  # noqa: E402


def peak_rss_mb() -> float:
    # Linux reports ru_maxrss in KiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", type=int, default=500)
    ap.add_argument("--file", type=Path, help="stream this file instead of generating one")
    ap.add_argument("--render", action="store_true", help="also render each full prompt")
    ap.add_argument(
        "--task",
        choices=["truncated", "rag", "oracle"],
        help="build the Inspect task longmemeval_m with this context instead",
    )
    ap.add_argument("--keep", action="store_true", help="keep the generated file")
    ap.add_argument("--max-rss-mb", type=float, default=1024.0)
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    tmp: Path | None = None
    gen_s = 0.0
    if args.file is None:
        tmp = Path(tempfile.mkdtemp(prefix="lme_stream_"))
        path = tmp / "longmemeval" / "longmemeval_m_cleaned.json"
        path.parent.mkdir()
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_longmemeval.py"),
                str(path),
                "--instances",
                str(args.instances),
            ],
            check=True,
        )
        gen_s = time.perf_counter() - t0
    else:
        path = args.file
    size = path.stat().st_size

    task_report: dict[str, object] = {}
    try:
        baseline = current_rss_mb()
        t0 = time.perf_counter()
        n = sessions = turns = 0
        prompt_chars = 0
        largest = 0
        if args.task:
            from memevals.inspect_tasks.longmemeval import longmemeval

            if path.name != "longmemeval_m_cleaned.json" or path.parent.name != "longmemeval":
                ap.error("--task needs the file at <folder>/longmemeval/longmemeval_m_cleaned.json")
            task = longmemeval(variant="m", context=args.task, data_dir=str(path.parent.parent))
            samples = list(task.dataset)
            tokens = [int(s.metadata["prompt_tokens"]) for s in samples]  # type: ignore[index]
            chars = [
                sum(len(m.text) for m in s.input) if isinstance(s.input, list) else len(s.input)
                for s in samples
            ]
            task_report = {
                "task_context": args.task,
                "task_settings": {
                    k: v
                    for k, v in (task.metadata or {}).items()
                    if k in ("max_context_tokens", "token_counter", "top_k", "retrieval_unit")
                },
                "samples_held": len(samples),
                "prompt_tokens_mean": round(sum(tokens) / len(tokens)),
                "prompt_tokens_max": max(tokens),
                "prompt_chars_held": sum(chars),
            }
            n = len(samples)
        else:
            for inst in iter_instances(path):
                n += 1
                sessions += len(inst.sessions)
                turns += sum(len(s.turns) for s in inst.sessions)
                if args.render:
                    text = history_text(session_blocks(inst.sessions, "json"))
                    prompt_chars += len(text)
                    largest = max(largest, len(text))
                    del text
                del inst
        parse_s = time.perf_counter() - t0
    finally:
        if tmp is not None and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    peak = peak_rss_mb()
    report = {
        "file_bytes": size,
        "instances": n,
        "sessions": sessions,
        "turns": turns,
        "generate_s": round(gen_s, 1),
        "stream_s": round(parse_s, 1),
        "instances_per_s": round(n / parse_s, 2),
        "mb_per_s": round(size / 2**20 / parse_s, 1),
        "rss_before_stream_mb": round(baseline, 1),
        "peak_rss_mb": round(peak, 1),
        "rendered": args.render,
        "rendered_chars_mean": round(prompt_chars / n) if args.render and n else None,
        "rendered_chars_max": largest if args.render else None,
        "total_s": round(time.perf_counter() - t_start, 1),
        "cpus": os.cpu_count(),
        **task_report,
    }
    print(json.dumps(report, indent=2))
    ok = peak <= args.max_rss_mb
    print(
        f"peak RSS {peak:.0f} MB ({'within' if ok else 'OVER'} the {args.max_rss_mb:.0f} MB "
        f"goal); {n} instances in {parse_s:.1f} s = {n / parse_s:.2f} instances/s "
        f"({size / 2**20 / parse_s:.0f} MB/s)",
        file=sys.stderr,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Sample builds: what the per-process memos save, measured in one run.

For each task, builds it once with every memo emptied (the first build of a process: data
parsed, every line tokenized, every conversation rendered and BM25-tokenized) and then again
(what every later build in the same process costs: the test suite, `memevals-estimate`, lm-eval
building several tasks), and prints the CPU seconds of both and their ratio. Then, in fresh
interpreters, what importing `memevals.core.retrievers` costs now (nltk waits for the first
BM25 stem) against the import plus the stemmer (what the import cost when nltk came eagerly).

    MEMEVALS_DATA_DIR=../shared/data python perf/build_speed.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"


def _clear_memos() -> None:
    from memevals.benchmarks.locomo import data as locomo_data
    from memevals.benchmarks.locomo.memory import render_conversation
    from memevals.benchmarks.locomo_plus import data as plus_data
    from memevals.benchmarks.locomo_plus.stitch import _host_blocks
    from memevals.core import retrievers, tokens

    # a fresh parse also drops the conversations' cached turn lookups
    locomo_data._load_cached.cache_clear()
    plus_data._load_cached.cache_clear()
    for memo in (render_conversation, _host_blocks):
        memo.cache_clear()
    retrievers._bm25_tokens.cache_clear()
    retrievers._bm25_counts.cache_clear()
    tokens._count_memo.cache_clear()
    tokens.get_token_counter.cache_clear()


def _cases() -> list[tuple[str, Callable[[], Any]]]:
    from memevals.inspect_tasks.beam import beam
    from memevals.inspect_tasks.locomo import locomo
    from memevals.inspect_tasks.locomo_dialogue import locomo_dialogue
    from memevals.inspect_tasks.locomo_event_summary import locomo_event_summary
    from memevals.inspect_tasks.locomo_plus import locomo_plus
    from memevals.inspect_tasks.longmemeval import longmemeval

    return [
        ("locomo (full)", lambda: locomo()),
        ("locomo context=rag", lambda: locomo(context="rag", protocol="memevals")),
        ("locomo_plus (full)", lambda: locomo_plus()),
        ("locomo_plus context=rag", lambda: locomo_plus(context="rag", protocol="memevals")),
        (
            "longmemeval s (fixture)",
            lambda: longmemeval(variant="s", data_dir=str(FIXTURES), verify_checksum=False),
        ),
        ("beam 100K", lambda: beam(size="100K")),
        ("locomo_dialogue", lambda: locomo_dialogue(bertscore=False)),
        ("locomo_event_summary", lambda: locomo_event_summary()),
    ]


def _cpu(build: Callable[[], Any]) -> float:
    c0 = time.process_time()
    build()
    return time.process_time() - c0


def _import_cpu(code: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", f"import time; {code}; print(time.process_time())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.split()[-1])


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cases = _cases()
    cases[0][1]()  # warm-up: imports and the upstream copies, paid by neither column
    print(f"{'task':28} {'first build s':>14} {'later build s':>14} {'ratio':>7}")
    for label, build in cases:
        _clear_memos()
        first = _cpu(build)
        later = _cpu(build)
        print(f"{label:28} {first:14.2f} {later:14.2f} {first / max(later, 1e-9):6.1f}x")
    now = _import_cpu("import memevals.core.retrievers")
    eager = _import_cpu("import memevals.core.retrievers as r; r._stemmer()")
    print(
        f"\nimport memevals.core.retrievers (fresh interpreter, CPU s): {now:.2f} now, "
        f"{eager:.2f} with nltk's stemmer (the former eager import), ratio {eager / now:.1f}x"
    )


if __name__ == "__main__":
    main()

"""Memory systems on the real LoCoMo: what ingestion and retrieval cost, and that the disk cache
makes a second run ingest nothing.

For each system (bm25, embedding, observations, mem0, graphiti, langmem) the script builds
the LoCoMo samples framework-free (`memevals.benchmarks.locomo.samples.build` with
`memory=<system>`) and gives every question its context with `subject.fill(item, model)`, as
the Inspect solver and the lm-eval documents do, in a fresh MEMEVALS_CACHE_DIR per system.
Then it does it again over the same cache (a new run, as a rerun would be) and prints one
table:

- build s / conv: the ingestion seconds of each conversation (the harness's record), median
  and total, and `open s / conv`: the rest of the first question's wall time (opening the store:
  for bm25 and embedding this is where the index is built, every run; it is not part of the
  ingestion record nor of the retrieval latency);
- retrieval latency p50 / p95 / p99 per question (`latency_percentiles`, the harness's timing
  of `retrieve`);
- ingestions per question (`ingest_totals`: each conversation counted once) and memory-model
  calls per question (observations: the scripted model; mem0 and graphiti: their own LLM calls
  to the loopback server), and per turn ingested, with the tokens of those calls per turn;
- mean items returned per question (a system may return fewer than k);
- the second pass: its ingestions (0 when the cache works) and its latency p50.

The memory model of `observations` is scripted: a deterministic function that answers each
session prompt with one fact per turn citing that turn (the format `parse_facts` reads), so
the figures are the system's own cost, not a provider's. mem0's LLM is the loopback
OpenAI-compatible server of tests/support/loopback_openai.py (one fact per message); its embedder is
the real local all-MiniLM-L6-v2 (about 0.1 s per `add` of one turn), so mem0 runs on one
conversation by default (conv-26: 419 turns, 199 questions; mem0's default of one turn per
`add`); `--mem0-conversations all` takes about 10 minutes more. graphiti's LLM is the same
server answering graphiti's structured-output calls (tests/support/loopback_graphiti.py: one fact
per
speaker of an episode), over Kuzu and the same embedder, on conv-26 with graphiti's default
of one turn per episode (`--graphiti-turns-per-episode`, `--graphiti-conversations`). bm25,
embedding and observations run on all ten conversations (1,986 questions);
`--embedding-conversations` narrows embedding. langmem's LLM is the same server answering
LangMem's memory-manager tool calls (tests/support/loopback_langmem.py: one memory per speaker of a
call), on conv-26 with langmem's default of one manager call per session
(`--langmem-turns-per-call`, `--langmem-conversations`). Each system's scope is printed
with it. torch gets one thread (`--torch-threads`): on a shared 2-core machine its default of
one per core oversubscribes the CPU (docs/performance.md). About 4 minutes in all on an idle
2-core machine without graphiti; graphiti's 419 episodes took 3.2 of the 12 minutes of a run on a
2-core machine at load average 11 (docs/memory_systems.md).

    MEMEVALS_DATA_DIR=../shared/data python perf/memory_systems.py
    python perf/memory_systems.py --systems bm25,observations --json out.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.samples import LocomoOptions, build
from memevals.core.memory_harness import INGEST_KEY, ITEMS_KEY, LATENCY_KEY, latency_percentiles
from memevals.core.memory_options import MemoryOptions
from memevals.core.memory_system import ModelReply, TextModel
from memevals.core.prompt_item import PromptItem

TESTS = Path(__file__).resolve().parents[1] / "tests" / "support"
SYSTEMS = ("bm25", "embedding", "observations", "mem0", "graphiti", "langmem")

#: A turn line of the observations prompt: `[D1:3] Caroline: text` (a LoCoMo dia id; a turn's
#: text may run over several lines, and a later line may itself start with a bracket).
_TURN = re.compile(r"^\[(?P<id>D\d+:\d+)\] (?P<speaker>[^:]+): (?P<text>.*)$")
_DATE = re.compile(r"^Session \S+, held on (?P<date>.*)\.$", re.M)


class ScriptedNotes:
    """A deterministic memory model for `observations`: one fact per turn, citing it."""

    model_name = "scripted/one-fact-per-turn"

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, system: str, user: str) -> ModelReply:
        self.calls += 1
        found = _DATE.search(user)
        date = found["date"] if found else "an unknown date"
        facts: list[dict[str, Any]] = []
        for line in user.splitlines():
            m = _TURN.match(line)
            if m:
                fact = f"On {date}, {m['speaker']} said: {m['text']}"
                facts.append({"fact": fact, "turns": [m["id"]]})
            elif facts and line.strip():
                facts[-1]["fact"] += " " + line.strip()
        text = json.dumps(facts)
        return ModelReply(text, len(user.split()), len(text.split()))


@dataclass
class Pass:
    """One pass over the questions: per-question latencies, wall time, records."""

    latencies: list[float]
    items: list[int]  # items shown per question
    first_wall: dict[str, float]  # conversation -> wall time of its first fill
    records: dict[str, dict[str, Any]]  # conversation -> its ingestion record
    ingestions: int
    cache_hits: int
    wall: float


@contextmanager
def cache_folder(path: Path) -> Iterator[None]:
    """MEMEVALS_CACHE_DIR pointed at `path` while the block runs."""
    old = os.environ.get("MEMEVALS_CACHE_DIR")
    os.environ["MEMEVALS_CACHE_DIR"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MEMEVALS_CACHE_DIR", None)
        else:
            os.environ["MEMEVALS_CACHE_DIR"] = old


def one_pass(
    memory: str, args: dict[str, Any], conversations: set[str] | None, model: TextModel | None
) -> tuple[Pass, int]:
    """Build the samples (a new MemoryRun over the current cache) and fill every question."""
    built = build(LocomoOptions(memory=MemoryOptions(memory=memory, memory_args=args or None)))
    assert built.subject is not None
    items: list[PromptItem] = [
        i
        for i in built.items
        if conversations is None or str(i.metadata["conversation_id"]) in conversations
    ]
    if not items:
        raise SystemExit(f"{memory}: no LoCoMo question comes from {sorted(conversations or ())}")
    latencies: list[float] = []
    shown: list[int] = []
    first_wall: dict[str, float] = {}
    records: dict[str, dict[str, Any]] = {}
    start = time.perf_counter()
    for item in items:
        conv = str(item.metadata["conversation_id"])
        t0 = time.perf_counter()
        filled = built.subject.fill(item, model)
        first_wall.setdefault(conv, time.perf_counter() - t0)
        latencies.append(float(filled.metadata[LATENCY_KEY]))
        shown.append(int(filled.metadata[ITEMS_KEY]))
        records.setdefault(conv, filled.metadata[INGEST_KEY])
    wall = time.perf_counter() - start
    run = built.subject.run
    ingested = Pass(latencies, shown, first_wall, records, run.ingestions, run.cache_hits, wall)
    return ingested, len(items)


def measure(
    memory: str,
    args: dict[str, Any],
    conversations: set[str] | None,
    model_factory: Callable[[], TextModel | None],
    note: str,
) -> dict[str, Any]:
    """Both passes of one system in a fresh cache folder."""
    with (
        tempfile.TemporaryDirectory(prefix=f"memevals-bench-{memory}-") as tmp,
        cache_folder(Path(tmp)),
    ):
        model = model_factory()
        first, questions = one_pass(memory, args, conversations, model)
        second, _ = one_pass(memory, args, conversations, model)
    builds = [float(r["seconds"]) for r in first.records.values() if not r["cached"]]
    opens = [first.first_wall[c] - float(first.records[c]["seconds"]) for c in first.first_wall]
    built = [r for r in first.records.values() if not r["cached"]]
    model_calls = sum(int(r["model_calls"]) for r in built)
    llm_calls = sum(int(r["llm_calls"] or 0) for r in built)
    # the memory model's tokens (observations) or the system's own LLM's (mem0, graphiti)
    tokens_in = sum(
        int(r["input_tokens"]) + int(r["extra"].get("llm_input_tokens", 0)) for r in built
    )
    tokens_out = sum(
        int(r["output_tokens"]) + int(r["extra"].get("llm_output_tokens", 0)) for r in built
    )
    turns = {c.sample_id: sum(len(s.turns) for s in c.sessions) for c in load_locomo()}
    return {
        "system": memory,
        "note": note,
        "conversations": len(first.records),
        "questions": questions,
        "build_s_median": statistics.median(builds) if builds else float("nan"),
        "build_s_total": sum(builds),
        "open_s_median": statistics.median(opens),
        **latency_percentiles(first.latencies),
        "ingestions": first.ingestions,
        "cache_hits": first.cache_hits,
        # the memory model (observations) or the system's own LLM (mem0): whichever it calls
        "model_calls": model_calls or llm_calls,
        "turns": sum(turns[c] for c in first.records),
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "mean_items": statistics.mean(first.items),
        "pass1_wall_s": first.wall,
        "pass2_ingestions": second.ingestions,
        "pass2_cache_hits": second.cache_hits,
        "pass2_latency_p50_s": latency_percentiles(second.latencies)["latency_p50_s"],
        "pass2_open_s_median": statistics.median(second.first_wall.values()),
        "pass2_wall_s": second.wall,
    }


def _ms(seconds: float) -> str:
    return f"{1000 * seconds:.2f}"


def table(results: list[dict[str, Any]]) -> str:
    head = (
        "| system | convs | build s / conv (median; total) | open s / conv | "
        "latency p50 / p95 / p99 ms | mean items | ingestions / questions | "
        "model calls / question | model calls / turn | tokens / turn (in; out) | "
        "2nd pass: ingestions, cache hits, p50 ms | wall s (1st; 2nd) |"
    )
    lines = [head, "|" + "---|" * 12]
    for r in results:
        q, t = r["questions"], r["turns"]
        lines.append(
            f"| {r['system']}{r['note']} | {r['conversations']} | "
            f"{r['build_s_median']:.3f}; {r['build_s_total']:.2f} | {r['open_s_median']:.3f} | "
            f"{_ms(r['latency_p50_s'])} / {_ms(r['latency_p95_s'])} / "
            f"{_ms(r['latency_p99_s'])} | {r['mean_items']:.2f} | {r['ingestions']} / {q:,} | "
            f"{r['model_calls'] / q:.2f} ({r['model_calls']:,}) | {r['model_calls'] / t:.2f} | "
            f"{r['tokens_in'] / t:,.0f}; {r['tokens_out'] / t:,.0f} | "
            f"{r['pass2_ingestions']}, {r['pass2_cache_hits']}, "
            f"{_ms(r['pass2_latency_p50_s'])} | {r['pass1_wall_s']:.1f}; "
            f"{r['pass2_wall_s']:.1f} |"
        )
    return "\n".join(lines)


def _subset(option: str) -> set[str] | None:
    return None if option == "all" else {c.strip() for c in option.split(",") if c.strip()}


def main() -> None:
    parser = argparse.ArgumentParser(description="memory systems on LoCoMo: cost and caching")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated")
    parser.add_argument(
        "--embedding-conversations",
        default="all",
        help="comma-separated conversation ids for embedding (default: all)",
    )
    parser.add_argument(
        "--mem0-conversations",
        default="conv-26",
        help="comma-separated conversation ids for mem0 ('all' = every one; slow)",
    )
    parser.add_argument("--mem0-turns-per-add", type=int, default=1)
    parser.add_argument(
        "--graphiti-conversations",
        default="conv-26",
        help="comma-separated conversation ids for graphiti ('all' = every one; slow)",
    )
    parser.add_argument("--graphiti-turns-per-episode", type=int, default=1)
    parser.add_argument(
        "--langmem-conversations",
        default="conv-26",
        help="comma-separated conversation ids for langmem ('all' = every one)",
    )
    parser.add_argument(
        "--langmem-turns-per-call", type=int, default=0, help="0: one manager call per session"
    )
    parser.add_argument(
        "--torch-threads", type=int, default=1, help="torch intra-op threads (0: torch's choice)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    ns = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at DEBUG
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # the 4 evidence ids no turn matches are reported by the task; not part of this report
    logging.getLogger("memevals.benchmarks.locomo.samples").setLevel(logging.ERROR)
    logging.getLogger("mem0").setLevel(logging.ERROR)  # spaCy is optional and kept off
    logging.getLogger("graphiti_core").setLevel(logging.ERROR)
    wanted = [s.strip() for s in ns.systems.split(",") if s.strip()]
    unknown = sorted(set(wanted) - set(SYSTEMS))
    if unknown:
        parser.error(f"unknown systems {', '.join(unknown)}; choose from {', '.join(SYSTEMS)}")
    if ns.torch_threads and {"embedding", "mem0", "graphiti", "langmem"} & set(wanted):
        import torch

        torch.set_num_threads(ns.torch_threads)
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs",
        file=sys.stderr,
    )
    results = []
    start = time.perf_counter()
    for name in wanted:
        t0 = time.perf_counter()
        if name == "mem0":
            sys.path.insert(0, str(TESTS))
            from loopback_openai import LoopbackOpenAI, mem0_facts

            convs = _subset(ns.mem0_conversations)
            server = LoopbackOpenAI(mem0_facts)
            with server:
                args = {"llm_base_url": server.url, "turns_per_add": ns.mem0_turns_per_add}
                note = f" (turns_per_add={ns.mem0_turns_per_add}; {ns.mem0_conversations})"
                result = measure(name, args, convs, lambda: None, note)
            result["loopback_requests"] = server.count
        elif name == "graphiti":
            sys.path.insert(0, str(TESTS))
            from loopback_graphiti import graphiti_facts
            from loopback_openai import LoopbackOpenAI

            convs = _subset(ns.graphiti_conversations)
            server = LoopbackOpenAI(graphiti_facts)
            with server:
                per = ns.graphiti_turns_per_episode
                args = {"llm_base_url": server.url, "turns_per_episode": per}
                note = f" (turns_per_episode={per}; {ns.graphiti_conversations})"
                result = measure(name, args, convs, lambda: None, note)
            result["loopback_requests"] = server.count
        elif name == "langmem":
            sys.path.insert(0, str(TESTS))
            from loopback_langmem import LangMemScript, LoopbackTools

            convs = _subset(ns.langmem_conversations)
            tools = LoopbackTools(LangMemScript())
            with tools:
                per_call = ns.langmem_turns_per_call or None
                args = {"llm_base_url": tools.url, "turns_per_call": per_call}
                note = f" (turns_per_call={per_call or 'session'}; {ns.langmem_conversations})"
                result = measure(name, args, convs, lambda: None, note)
            result["loopback_requests"] = tools.count
        elif name == "embedding":
            note = "" if ns.embedding_conversations == "all" else f" ({ns.embedding_conversations})"
            subset = _subset(ns.embedding_conversations)
            result = measure(name, {}, subset, lambda: None, note)
        else:
            factory: Callable[[], TextModel | None] = (
                ScriptedNotes if name == "observations" else lambda: None
            )
            result = measure(name, {}, None, factory, "")
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        results.append(result)
    print(table(results))
    print(f"total: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    if ns.json:
        ns.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

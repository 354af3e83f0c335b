"""Streaming benchmark for BEAM 10M: peak memory of building and running a 10M-shaped dataset.

Writes a synthetic data dir shaped like upstream's 10M conversations (in a child process, so
its memory is not counted): each conversation a `chat_trunecated.json` holding a list of plans,
each a one-key mapping to its batches of user/assistant turns (default 2 conversations of 21,000
messages of about 1,900 characters, about 10M cl100k tokens each) and a probing-question file
with the ten abilities. Then, each in a fresh child process, through the real code
(`memevals.benchmarks.beam.samples.build` with `verify_checksum=False`):

- `memory`: building `beam -T size=10M -T memory=bm25` (what `inspect eval` does before the
  first model call); the goal is a peak RSS under 1 GB;
- `ingest`: that build, then the memory system's context for the first question of every
  conversation (each conversation's history streamed from its file and ingested by bm25 once);
- `full`: building the official long-context samples (`context=full`, upstream's pruning for a
  1,000,000-token window), which streams every chat and keeps only the tail that fits.

    python perf/beam_stream.py [--conversations 2] [--messages 21000] [--chars 1900]
        [--phases memory,ingest,full] [--keep] [--max-rss-mb 1024]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

ABILITIES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
PLANS = 10
BATCHES_PER_PLAN = 10


def peak_rss_mb() -> float:
    # Linux reports ru_maxrss in KiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _text(rng: random.Random, vocabulary: list[str], chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(vocabulary)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


def generate(root: Path, conversations: int, messages: int, chars: int, seed: int) -> None:
    """Write the synthetic 10M-shaped conversations under `root/beam/chats/10M/`."""
    rng = random.Random(seed)
    vocabulary = [
        "".join(rng.choice("abcdefghijklmnoprstuvwy") for _ in range(rng.randint(2, 9)))
        for _ in range(5000)
    ]
    turns_per_batch = max(1, messages // 2 // (PLANS * BATCHES_PER_PLAN))
    for n in range(1, conversations + 1):
        folder = root / "beam" / "chats" / "10M" / str(n)
        (folder / "probing_questions").mkdir(parents=True)
        with (folder / "chat_trunecated.json").open("w", encoding="utf-8") as fh:
            fh.write("[")
            for p in range(PLANS):
                fh.write(("," if p else "") + "{" + json.dumps(f"plan-{p}") + ": [")
                for b in range(BATCHES_PER_PLAN):
                    turns = [
                        [
                            {
                                "role": "user",
                                "id": 2 * t,
                                "content": _text(rng, vocabulary, chars // 2),
                            },
                            {
                                "role": "assistant",
                                "id": 2 * t + 1,
                                "content": _text(rng, vocabulary, chars * 3 // 2),
                            },
                        ]
                        for t in range(turns_per_batch)
                    ]
                    batch = {"batch_number": b + 1, "turns": turns}
                    fh.write(("," if b else "") + json.dumps(batch))
                fh.write("]}")
            fh.write("]")
        questions = {
            a: [
                {
                    "question": f"What did I say about {rng.choice(vocabulary)} in plan {i}?",
                    "rubric": [f"mentions {rng.choice(vocabulary)}"],
                    "answer": "x",
                }
                for i in range(2)
            ]
            for a in ABILITIES
        }
        (folder / "probing_questions" / "probing_questions.json").write_text(
            json.dumps(questions), encoding="utf-8"
        )


def phase(name: str, data: Path) -> dict[str, object]:
    """One measured phase in this (fresh) process."""
    from memevals.benchmarks.beam.samples import BeamOptions, build
    from memevals.core.memory_options import MemoryOptions

    t0 = time.perf_counter()
    if name == "full":
        built = build(BeamOptions(size="10M", data_dir=str(data), verify_checksum=False))
        first = built.items[0].metadata
        extra: dict[str, object] = {
            "history_tokens": first["history_tokens"],
            "kept_tokens": first["history_shown_tokens"],
            "kept_messages": first["history_messages"],
            "messages": first["history_total_messages"],
        }
    else:
        memory = MemoryOptions(memory="bm25", memory_cache=False)
        built = build(
            BeamOptions(size="10M", memory=memory, data_dir=str(data), verify_checksum=False)
        )
        extra = {}
        if name == "ingest":
            assert built.subject is not None
            seen: set[str] = set()
            for item in built.items:
                if item.metadata["conversation"] not in seen:
                    seen.add(str(item.metadata["conversation"]))
                    built.subject.fill(item, None)
            extra = {"ingestions": built.subject.run.ingestions}
    return {
        "phase": name,
        "samples": len(built.items),
        "seconds": round(time.perf_counter() - t0, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        **extra,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conversations", type=int, default=2)
    ap.add_argument("--messages", type=int, default=21_000)
    ap.add_argument("--chars", type=int, default=1_900, help="mean characters per message")
    ap.add_argument("--phases", default="memory,ingest,full")
    ap.add_argument("--keep", action="store_true", help="keep the generated data dir")
    ap.add_argument("--max-rss-mb", type=float, default=1024.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--generate", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.generate is not None:
        generate(args.generate, args.conversations, args.messages, args.chars, args.seed)
        return 0
    if args.phase is not None:
        print(json.dumps(phase(args.phase, args.data)))
        return 0

    tmp = Path(tempfile.mkdtemp(prefix="beam_stream_"))
    try:
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--generate",
                str(tmp),
                "--conversations",
                str(args.conversations),
                "--messages",
                str(args.messages),
                "--chars",
                str(args.chars),
                "--seed",
                str(args.seed),
            ],
            check=True,
        )
        chats = sorted(tmp.rglob("chat_trunecated.json"))
        mb = sum(p.stat().st_size for p in chats) / 2**20
        print(
            f"generated {len(chats)} 10M-shaped conversations ({mb:.0f} MB of chat JSON) in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        worst = 0.0
        for name in args.phases.split(","):
            out = (
                subprocess.run(
                    [sys.executable, __file__, "--phase", name, "--data", str(tmp)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            result = json.loads(out)
            print(json.dumps(result))
            if name == "memory":
                worst = float(result["peak_rss_mb"])
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    ok = worst <= args.max_rss_mb
    print(
        f"building beam -T size=10M -T memory=bm25: peak RSS {worst:.0f} MB "
        f"({'within' if ok else 'OVER'} {args.max_rss_mb:.0f} MB)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

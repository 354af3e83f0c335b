"""Write a large synthetic file with the LongMemEval schema (for the streaming benchmark).

The text is filler built from a fixed word list; only the structure matters: 500 instances of
the six question types (every 16th an `_abs` id), ~500 time-sorted sessions each, evidence
turns flagged `has_answer`, answer session ids containing `answer`. The defaults give about
2.7 GB, the size of the real M file.

    python perf/gen_longmemeval.py OUT.json [--instances 500] [--sessions 500]
        [--turn-bytes 940] [--turns 11] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
FMT = "%Y/%m/%d (%a) %H:%M"
_WORD_LIST = (
    "the a my you we it to of and in on for with about this that last next week month "
    "trip plan dinner recipe garden bike run book movie song train office meeting project "
    "sister brother friend dog cat doctor class lesson budget price store city park beach "
    "morning evening weekend coffee tea photo camera hike kitchen recommend think maybe "
    "really great idea question answer help thanks sure could would should yesterday today"
)
WORDS = tuple(_WORD_LIST.split())


def _pool(rng: random.Random, n: int, mean_bytes: int) -> list[str]:
    """Pre-built paragraphs: picking from a pool keeps generation I/O-bound, not CPU-bound."""
    out = []
    for _ in range(n):
        target = max(20, int(rng.gauss(mean_bytes, mean_bytes / 3)))
        words: list[str] = []
        size = 0
        while size < target:
            w = rng.choice(WORDS)
            words.append(w)
            size += len(w) + 1
        out.append(" ".join(words).capitalize() + ".")
    return out


def make_instance(
    rng: random.Random, pool: list[str], index: int, n_sessions: int, n_turns: int
) -> dict[str, Any]:
    qtype = TYPES[index % len(TYPES)]
    qid = f"gen{index:05d}" + ("_abs" if index % 16 == 15 else "")
    qdate = datetime(2023, 1, 1) + timedelta(days=200 + index % 300, hours=index % 24)
    n_evidence = 1 if qtype.startswith("single") else 2
    evidence_at = set(rng.sample(range(n_sessions), n_evidence))
    minutes = sorted(rng.sample(range(1, 200 * 24 * 60), n_sessions), reverse=True)
    ids: list[str] = []
    dates: list[str] = []
    sessions: list[list[dict[str, Any]]] = []
    answer_ids: list[str] = []
    for k in range(n_sessions):
        evidence = k in evidence_at
        sid = f"answer_{index:05d}_{len(answer_ids) + 1}" if evidence else f"filler_{index}_{k}"
        if evidence:
            answer_ids.append(sid)
        n = max(2, n_turns + rng.randint(-3, 3))
        flagged = rng.randrange(n) if evidence else -1
        turns: list[dict[str, Any]] = []
        for t in range(n):
            turn: dict[str, Any] = {
                "role": "user" if t % 2 == 0 else "assistant",
                "content": pool[rng.randrange(len(pool))],
            }
            if evidence:
                turn["has_answer"] = t == flagged
            turns.append(turn)
        ids.append(sid)
        dates.append((qdate - timedelta(minutes=minutes[k])).strftime(FMT))
        sessions.append(turns)
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": f"Synthetic question {index} about {rng.choice(WORDS)}?",
        "answer": "The information provided is not enough." if qid.endswith("_abs") else "x",
        "question_date": qdate.strftime(FMT),
        "haystack_session_ids": ids,
        "haystack_dates": dates,
        "haystack_sessions": sessions,
        "answer_session_ids": answer_ids,
    }


def generate(
    out: Path,
    *,
    instances: int = 500,
    sessions: int = 500,
    turns: int = 11,
    turn_bytes: int = 940,
    seed: int = 0,
) -> int:
    """Write the file one instance at a time (bounded memory); returns its size in bytes."""
    rng = random.Random(seed)
    pool = _pool(rng, 4096, turn_bytes)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        fh.write("[")
        for i in range(instances):
            if i:
                fh.write(", ")
            fh.write(json.dumps(make_instance(rng, pool, i, sessions, turns)))
        fh.write("]")
    return out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--instances", type=int, default=500)
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--turns", type=int, default=11, help="mean turns per session")
    ap.add_argument("--turn-bytes", type=int, default=940, help="mean characters per turn")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    size = generate(
        args.out,
        instances=args.instances,
        sessions=args.sessions,
        turns=args.turns,
        turn_bytes=args.turn_bytes,
        seed=args.seed,
    )
    print(
        f"wrote {args.out} ({size / 1e9:.3f} GB, {args.instances} instances) "
        f"in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

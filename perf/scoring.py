"""Scoring speed and parity: memevals.locomo_f1 vs a plain implementation of the same rules.

Scores every LoCoMo question against 15 prediction variants (≈30K cases) with both, in the same
run, and prints the time of each, the ratio and whether every score matched (to 1e-9). Five
rounds, each timing both (ours from empty caches); the median ratio is the figure, because one
0.3 s run on a 2-core machine varies by ~10 %.
    MEMEVALS_DATA_DIR=../shared/data python perf/scoring.py
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from reference_locomo import prediction_variants, ref_score

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.scoring import _STEMS, _token_counts
from memevals.scorers import locomo_f1

#: Each round times both implementations once; ours starts with empty caches every round.
ROUNDS = 5


def main() -> None:
    cases: list[tuple[str, object, int]] = []
    for conv in load_locomo():
        context = [t.text for t in conv.turns]
        for qa in conv.qa:
            gold = str(qa.answer) if qa.answer is not None else str(qa.adversarial_answer)
            for pred in prediction_variants(qa.question, gold, context, seed=qa.index):
                cases.append((pred, qa.answer, qa.category))

    rounds = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        ref = [ref_score(p, a, c) for p, a, c in cases]
        t_ref = time.perf_counter() - t0

        _STEMS.clear()
        _token_counts.cache_clear()  # start cold: the caches fill during the timed run
        t0 = time.perf_counter()
        ours = [locomo_f1(p, a, c) for p, a, c in cases]  # type: ignore[arg-type]
        t_ours = time.perf_counter() - t0
        rounds.append((t_ref, t_ours))

    mismatches = sum(1 for x, y in zip(ours, ref, strict=True) if abs(x - y) > 1e-9)
    print(f"machine: {platform.machine()}, python {sys.version.split()[0]}")
    print(f"cases: {len(cases)} (1,986 questions x 15 prediction variants)")
    for i, (t_ref, t_ours) in enumerate(rounds, start=1):
        print(
            f"round {i}: plain {t_ref:.3f} s ({1e6 * t_ref / len(cases):.1f} us/case), "
            f"memevals {t_ours:.3f} s ({1e6 * t_ours / len(cases):.1f} us/case), "
            f"{t_ref / t_ours:.1f}x"
        )
    ratios = [r / o for r, o in rounds]
    print(
        f"speed-up, median of {len(rounds)} rounds: {statistics.median(ratios):.1f}x "
        f"(min {min(ratios):.1f}x, max {max(ratios):.1f}x; goal >= 20x)"
    )
    print(f"all scores identical (1e-9): {mismatches == 0} ({mismatches} mismatches)")
    print(f"mean score: {sum(ours) / len(ours):.6f}")


if __name__ == "__main__":
    main()

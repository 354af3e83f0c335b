"""Speed of the paired comparison: two full LoCoMo-Plus runs (2,387 samples each).

The two runs are synthesised, not answered by a model: the real LoCoMo-Plus samples (ids,
metadata, targets) with seeded scores that look like real ones (a conversation effect on each
run's accuracy, judge labels 1 / 0.5 / 0 and F1 in [0, 1] for the LoCoMo questions, 0 / 1 for
the cognitive ones), written as Inspect logs with `write_eval_log`. The timed part is
`memevals.tools.diff.compare_runs` on every category of both scores (F1 and judge) with
10,000 cluster-bootstrap resamples; the goal is under 2 s. Printed beside it: the time to read
the two logs alone, and the ratio.

    MEMEVALS_DATA_DIR=../shared/data python perf/paired_compare.py
"""

from __future__ import annotations

import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, EvalSample, write_eval_log
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.scorer import Score

from memevals.inspect_tasks.locomo_plus import locomo_plus
from memevals.tools.diff import compare_runs, load_runs

RESAMPLES = 10_000
ROUNDS = 3
GOAL_SECONDS = 2.0


def synthetic_log(template: EvalLog, samples: list[EvalSample], model: str) -> EvalLog:
    """`template` (a real one-sample run's header) holding `samples` under another model."""
    log = template.model_copy(deep=True)
    log.eval.model = model
    log.samples = samples
    # readers list a log's samples from its header
    log.eval.dataset.samples = len(samples)
    log.eval.dataset.sample_ids = [s.id for s in samples]
    if log.results is not None:
        log.results.total_samples = log.results.completed_samples = len(samples)
    return log


def scored_samples(task_samples: list[Sample], skill: float, seed: int) -> list[EvalSample]:
    """The task's samples with seeded scores: the chance of a right answer is `skill` plus a
    per-conversation effect (questions about one conversation succeed or fail together)."""
    rng = np.random.default_rng(seed)
    out: list[EvalSample] = []
    effects: dict[str, float] = {}
    for s in task_samples:
        md = dict(s.metadata or {})
        conv = str(md.get("cluster") or md.get("conversation_id") or s.id)
        effect = effects.setdefault(conv, float(rng.normal(0.0, 0.08)))
        p = min(max(skill + effect, 0.02), 0.98)
        right = bool(rng.random() < p)
        cognitive = md.get("category") == "cognitive"
        if cognitive:
            judge = float(right)
        else:
            judge = 1.0 if right else float(rng.choice([0.0, 0.5], p=[0.8, 0.2]))
        reply = str(s.target) if right else "I do not remember that."
        scores = {
            "locomo_plus_judge": Score(
                value={"judge": judge, "unscored": 0},
                answer=reply,
                metadata={
                    "grader": "openai/gpt-4o-mini",
                    "criterion": "x",
                    "category": md.get("category"),
                },
            )
        }
        if not cognitive:
            f1 = float(np.clip(rng.beta(4, 2) if right else rng.beta(1, 6), 0.0, 1.0))
            scores["locomo_plus_f1"] = Score(value=f1, answer=reply)
        out.append(
            EvalSample(
                id=s.id if s.id is not None else len(out),
                epoch=1,
                input=s.input,
                target=s.target,
                metadata=md,
                output=ModelOutput.from_content(model="synthetic", content=reply),
                scores=scores,
            )
        )
    return out


def main() -> None:
    # our judge's verdict scores (protocol=memevals) are what the synthetic log carries
    task = locomo_plus(context="none", protocol="memevals")
    dataset = list(task.dataset)
    with tempfile.TemporaryDirectory() as tmp:
        [template] = inspect_eval(
            task,
            model=get_model("mockllm/model"),
            limit=1,
            display="none",
            log_dir=tmp,
        )
        paths = []
        for name, skill, seed in (("provider-a", 0.55, 1), ("provider-b", 0.60, 2)):
            log = synthetic_log(template, scored_samples(dataset, skill, seed), f"synthetic/{name}")
            path = str(Path(tmp) / f"{name}.eval")
            write_eval_log(log, path)
            paths.append(path)

        reads, compares = [], []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            a, b = load_runs(paths)
            reads.append(time.perf_counter() - start)
            start = time.perf_counter()
            comparison = compare_runs(a, b, resamples=RESAMPLES, seed=0)
            compares.append(time.perf_counter() - start)

    rows = sum(len(t.rows) for t in comparison.tables)
    read_s, compare_s = statistics.median(reads), statistics.median(compares)
    print(f"machine: {platform.processor() or platform.machine()}, Python {sys.version.split()[0]}")
    print(f"runs: 2 x {len(a.samples)} samples; scores {[t.score for t in comparison.tables]}")
    print(f"table rows (overall + categories, all scores): {rows}; resamples {RESAMPLES:,}")
    print(f"read the two logs: {read_s:.3f} s (median of {ROUNDS})")
    print(f"paired comparison: {compare_s:.3f} s (median of {ROUNDS}; goal < {GOAL_SECONDS} s)")
    print(f"comparison / reading: {compare_s / read_s:.2f}x")
    for t in comparison.tables:
        r = t.rows[0].result
        print(
            f"  {t.score}: n={r.n}, clusters={r.clusters}, B-A={r.difference:+.4f} "
            f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}], p={r.p_value:.3g} ({r.test}), MDE={r.mde:.4f}"
        )
    if compare_s >= GOAL_SECONDS:
        sys.exit(f"paired comparison took {compare_s:.2f} s, over the {GOAL_SECONDS} s goal")


if __name__ == "__main__":
    main()

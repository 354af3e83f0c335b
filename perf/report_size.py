"""Size and render time of memevals-report's page for ten full LoCoMo runs.

The ten runs are synthesised, not answered by a model: the real LoCoMo samples (all 1,986:
ids, metadata, targets) with seeded scores that look like real ones (a conversation effect on
each run's accuracy, F1 in [0, 1], judge labels 0 / 1 with the grader recorded, token usage per
run) and, as a memory system's run logs them, ten retrieved results per sample (`memory_results`:
turns of the sample's conversation, the evidence among them when the answer is right), written
as Inspect logs with `write_eval_log`. The page is built by the real command
(`--baseline` the first run: nine paired comparisons), then opened from file:// in Debian's
headless chromium (Playwright): the render time is from navigation until the question browser
has drawn its rows. Goals: page under 10 MB, render under 3 s.

    MEMEVALS_DATA_DIR=../shared/data python perf/report_size.py [--runs 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, EvalSample, write_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.model._providers.mockllm import MockLLM
from inspect_ai.scorer import Score

from memevals.benchmarks.locomo.data import Turn, load_locomo
from memevals.benchmarks.locomo.memory import turn_line
from memevals.core.memory_harness import RESULTS_KEY, RESULTS_LOGGED, logged_results
from memevals.core.memory_system import MemoryItem
from memevals.inspect_tasks.locomo import locomo
from memevals.tools.report import main as report_main

GOAL_MB = 10.0
GOAL_RENDER_S = 3.0
CHROMIUM = "/usr/bin/chromium"


def synthetic_log(template: EvalLog, samples: list[EvalSample], model: str, tokens: int) -> EvalLog:
    """`template` (a real one-sample run's header) holding `samples` under another model."""
    log = template.model_copy(deep=True)
    log.eval.model = model
    log.status = "success"
    log.samples = samples
    log.eval.dataset.samples = len(samples)
    log.eval.dataset.sample_ids = [s.id for s in samples]
    if log.results is not None:
        log.results.total_samples = log.results.completed_samples = len(samples)
    log.stats.model_usage = {
        model: ModelUsage(input_tokens=tokens, output_tokens=len(samples) * 12)
    }
    return log


def memory_results(
    turns: list[Turn], evidence: list[str], right: bool, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Ten results as the memory harness logs them: turns of the conversation (the evidence
    first when the answer is right), each its line with its id."""
    by_id = {t.dia_id: t for t in turns}
    chosen = [by_id[e] for e in evidence if e in by_id] if right else []
    picks = rng.choice(len(turns), size=RESULTS_LOGGED, replace=False)
    chosen += [turns[int(i)] for i in picks]
    items = [MemoryItem(turn_line(t), (t.dia_id,), score=1.0) for t in chosen[:RESULTS_LOGGED]]
    return logged_results(items)


def scored_samples(
    task_samples: list[Sample], skill: float, seed: int, turns: dict[str, list[Turn]]
) -> list[EvalSample]:
    """The samples with seeded F1 and judge scores (a per-conversation effect on the chance of
    a right answer: questions about one conversation succeed or fail together) and ten memory
    results each."""
    rng = np.random.default_rng(seed)
    effects: dict[str, float] = {}
    out: list[EvalSample] = []
    for s in task_samples:
        md = dict(s.metadata or {})
        conv = str(md.get("cluster") or s.id)
        effect = effects.setdefault(conv, float(rng.normal(0.0, 0.08)))
        far = float(md.get("sessions_after_evidence") or 0) / 30
        right = bool(rng.random() < min(max(skill + effect - 0.2 * far, 0.02), 0.98))
        reply = str(s.target) if right else "I do not remember that."
        f1 = float(np.clip(rng.beta(4, 2) if right else rng.beta(1, 6), 0.0, 1.0))
        label = "correct" if right else "wrong"
        md[RESULTS_KEY] = memory_results(
            turns[str(md["conversation_id"])], list(md.get("evidence_ids") or []), right, rng
        )
        scores = {
            "locomo_f1_scorer": Score(value=f1, answer=reply),
            "llm_judge": Score(
                value={"judge": float(right), "unscored": 0},
                answer=reply,
                metadata={"grader": "openai/gpt-4o-mini", "label": label},
            ),
        }
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


async def _word_count(self: MockLLM, text: str) -> int:
    """mockllm's token count without tiktoken's vocabulary download (the machine is offline)."""
    return max(1, len(text.split()))


def render_seconds(page_path: Path) -> tuple[float, int]:
    """Seconds from navigation until the question browser has drawn, and its row count."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        start = time.perf_counter()
        page.goto(page_path.as_uri(), wait_until="load")
        page.wait_for_selector("#q-count:not(:empty)")
        seconds = time.perf_counter() - start
        rows = page.locator("#questions-table tbody tr").count()
        browser.close()
    if errors:
        sys.exit(f"the page raised: {errors}")
    return seconds, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="write the logs and the page here")
    ns = parser.parse_args()
    MockLLM.count_text_tokens = _word_count  # type: ignore[method-assign,assignment]
    # the judge's scores are synthesised below: the template run needs no grader
    task = locomo(context="none", protocol="memevals")
    dataset = list(task.dataset)
    turns = {c.sample_id: list(c.turns) for c in load_locomo()}
    with tempfile.TemporaryDirectory() as tmp:
        root = ns.keep or Path(tmp)
        logs = root / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        [template] = inspect_eval(
            task, model=get_model("mockllm/model"), limit=1, display="none", log_dir=tmp
        )
        if template.status != "success" or template.results is None:
            sys.exit(f"the template run failed: {template.error}")
        for i in range(ns.runs):
            samples = scored_samples(dataset, 0.45 + 0.03 * i, seed=i, turns=turns)
            tokens = int(len(samples) * 20_000 * (1 + i % 3))
            log = synthetic_log(template, samples, f"synthetic/provider-{i}", tokens)
            write_eval_log(log, str(logs / f"provider-{i}.eval"))
        page = root / "report.html"
        start = time.perf_counter()
        code = report_main(
            [str(logs), "-o", str(page), "--baseline", "provider-0.eval",
             "--price", "synthetic/provider-0=0.15,0.60"]
        )  # fmt: skip
        build = time.perf_counter() - start
        if code != 0:
            sys.exit(f"memevals-report exited with {code}")
        size_mb = page.stat().st_size / 1e6
        render, rows = render_seconds(page)
    print(f"machine: {platform.processor() or platform.machine()}, Python {sys.version.split()[0]}")
    print(
        f"runs: {ns.runs} x {len(dataset)} LoCoMo samples (F1 and judge, {RESULTS_LOGGED} memory "
        "results each), baseline provider-0"
    )
    print(f"build (read, compare, draw, write): {build:.1f} s")
    print(f"page size: {size_mb:.2f} MB (goal < {GOAL_MB} MB)")
    print(f"render in headless chromium: {render:.2f} s (goal < {GOAL_RENDER_S} s); {rows} rows")
    if size_mb >= GOAL_MB or render >= GOAL_RENDER_S:
        sys.exit("over a goal")


if __name__ == "__main__":
    main()

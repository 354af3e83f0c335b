"""What memevals-compare, memevals-diff, memevals-report and memevals-estimate print is right, on
real runs through their console scripts (issue 40 items 1, 3, 4 and 7's tool bullets):

- an event-summary run scored by its FactScore grader: ROUGE, always scored, counts no unscored
  sample (only the FactScore figures the grader left without a value do), and the run names its
  grader;
- an option given at its default is no difference: `-T context=rag` against `-T context=rag -T
  top_k=5` (compare's labels, diff's factors) and an lm-eval run whose `--metadata` leaves
  `top_k` out against an Inspect run that sets it to 5 (diff's refusal rule);
- on runs of two conversations no interval leaves [0, 1] ([-1, 1] for a difference): each tool
  says `too few clusters (2)` instead, and on six conversations the interval is stated, clipped
  to [0, 1];
- estimate's small costs, its usage line and its did-you-mean; compare's charts only where asked.

The event summary runs through the real `inspect eval` (mockllm); the LoCoMo runs are the scripted
reader's (tests/support/scripted_reader.py: right when its prompt holds the question's evidence)
on conftest's shared task builds; each run is made once per pytest run (shared_runs).
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_python
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model
from shared_runs import SharedRuns

from memevals.core import statistics
from memevals.results.runs import load_runs
from memevals.tools.estimate import dollars

BIN = Path(sys.executable).parent
READER = "scripted_reader/evidence"
#: three questions of each of two conversations (the scripted reader's F1 varies with them)
TWO_CONVERSATIONS = [f"conv-26-q{n}" for n in (0, 3, 4)] + [f"conv-30-q{n}" for n in (0, 4, 5)]
#: two questions of each of six conversations, the fewest clusters an interval is stated for;
#: the reader's retrieval finds the evidence of conv-26-q0 only, so the mean is low (1/12) and
#: the t interval reaches below 0
SIX_CONVERSATIONS = [
    f"{conv}-q{n}"
    for conv, ns in (("conv-26", (0, 3)), ("conv-30", (2, 3)), ("conv-44", (0, 2)),
                     ("conv-47", (1, 2)), ("conv-49", (1, 2)), ("conv-50", (1, 3)))
    for n in ns
]  # fmt: skip
#: test_diff_factors' lm-eval run (shared): LoCoMo with retrieval, `top_k` not given
LM_EVAL_RAG = [
    "--model", "dummy", "--tasks", "locomo_temporal,locomo_open_domain", "--limit", "4",
    "--metadata", json.dumps({"context": "rag"}),
]  # fmt: skip
#: `[low, high]` as the tools print an interval
INTERVAL = re.compile(r"\[([-+]?\d+\.\d+), ([-+]?\d+\.\d+)\]")


def _tool(name: str, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A memevals console script (`memevals-compare`, ...), run in this process."""
    return run_python([str(BIN / name), *map(str, args)], cwd=cwd, timeout=600)


def _mockllm(shared_runs: SharedRuns, data_dir: Path, args: list[str]) -> Path:
    """The log folder of one shared `inspect eval` run (the real CLI, mockllm)."""
    env = {"MEMEVALS_DATA_DIR": str(data_dir)}
    run = shared_runs.inspect([*args, "--log-dir", "logs", "--display", "none"], env)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.folder / "logs"


def _locomo(
    shared_runs: SharedRuns, task: Callable[..., Task], ids: list[str], **options: Any
) -> Path:
    """The log folder of the scripted reader's run of memevals/locomo with `options` on `ids`
    (the task built once per worker: conftest's locomo_task), made once per pytest run."""

    def produce(folder: Path) -> None:
        import scripted_reader  # noqa: F401  (registers the scripted_reader/ provider)

        [log] = inspect_eval(
            task(**options),
            model=get_model(READER),
            sample_id=ids,
            log_dir=str(folder / "logs"),
            display="none",
        )
        assert log.status == "success", log.error

    return shared_runs.folder({"honest-figures": [ids, options]}, produce) / "logs"


def _intervals(text: str) -> list[tuple[float, float]]:
    return [(float(a), float(b)) for a, b in INTERVAL.findall(text)]


# ------------------------------------------------------------------------------ item 1


def test_rouge_counts_no_unscored_sample_and_the_grader_is_named(
    data_dir: Path, shared_runs: SharedRuns, tmp_path: Path
) -> None:
    """mockllm summarises and grades: ROUGE is scored on both samples, FactScore on none (the
    grader's replies are no facts). Compare, its CSV and the report say exactly that."""
    args = ["eval", "memevals/locomo_event_summary", "--model", "mockllm/model", "--limit", "2"]
    logs = _mockllm(shared_runs, data_dir, args)
    proc = _tool("memevals-compare", logs, "--csv", tmp_path / "c.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    tables = {
        title: block
        for title, block in re.findall(r"#### (\w+)\n\n(.*?)(?=\n\n|\Z)", proc.stdout, re.S)
    }
    for rouge in ("rouge1", "rouge2", "rougeL"):
        assert "| scored    | 2 " in tables[rouge], tables[rouge]
        assert "unscored" not in tables[rouge]
    for fact in ("fact_precision", "fact_recall", "fact_f1"):
        assert re.search(r"\| scored +\| 0 ", tables[fact]) and re.search(
            r"\| unscored +\| 2 ", tables[fact]
        ), tables[fact]
    # no grader role: the model under test graded its own summary
    assert "| 1   | mockllm/model | self (mockllm/model) |" in proc.stdout
    header, row = (tmp_path / "c.csv").read_text(encoding="utf-8").splitlines()
    record = dict(zip(header.split(","), row.split(","), strict=True))
    assert record["judge_model"] == "self (mockllm/model)"
    assert record["fact_f1_unscored"] == "2" and "rouge1_unscored" not in record

    page = tmp_path / "report.html"
    proc = _tool("memevals-report", logs, "-o", page, "--resamples", "50", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = page.read_text(encoding="utf-8")
    warned = re.findall(r"2 sample\(s\) left unscored by (\w+)", text)
    assert sorted(warned) == ["fact_f1", "fact_precision", "fact_recall"]
    assert "<td>self (mockllm/model)</td>" in text


# ------------------------------------------------------------------------------ item 3


def test_an_option_at_its_default_is_no_difference(
    locomo_task: Callable[..., Task],
    shared_runs: SharedRuns,
    shared_lm_eval: Callable[[list[str]], Path],
    tmp_path: Path,
) -> None:
    """`top_k` defaults to 5 (LoCoMo's record): given as 5 or not given, it is one setting."""
    lm_eval = shared_lm_eval(LM_EVAL_RAG)
    [lm_run] = load_runs([str(lm_eval)])
    ids = sorted(lm_run.samples)
    given = _locomo(shared_runs, locomo_task, ids, context="rag", top_k=5)
    default = _locomo(shared_runs, locomo_task, ids, context="rag")

    # compare --wide: two identical runs are told apart by their files, not by top_k
    proc = _tool("memevals-compare", given, default, "--wide", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "top_k=" not in proc.stdout
    assert proc.stdout.count("rag(dialog, k=5, bm25) [run ") == 2

    # diff: the two Inspect runs differ in nothing; identical results
    proc = _tool("memevals-diff", default, given, "--resamples", "50", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "top_k" not in proc.stdout and "| overall | 8 |" in proc.stdout
    assert "+0.000 |" in proc.stdout

    # lm-eval without top_k against Inspect with top_k=5: only the model differs (one factor);
    # before, "top_k: A=5, B=None" made it two factors and the diff was refused
    proc = _tool("memevals-diff", given, lm_eval, "--resamples", "50", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "## A: model=scripted_reader/evidence  vs  B: model=dummy" in proc.stdout
    assert "The runs differ in one declared factor, the model" in proc.stdout
    assert "top_k" not in proc.stdout + proc.stderr
    # the report pairs them as memevals-diff does: the model's comparison
    page = tmp_path / "report.html"
    proc = _tool("memevals-report", given, lm_eval, "-o", page, "--resamples", "50", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = page.read_text(encoding="utf-8")
    assert "locomo: A = model=scripted_reader/evidence vs B = model=dummy" in text
    assert "<small>(factor: model; protocol official)</small>" in text


# ------------------------------------------------------------------------------ item 4


def test_two_conversations_get_no_interval_outside_the_unit_range(
    locomo_task: Callable[..., Task], shared_runs: SharedRuns, tmp_path: Path
) -> None:
    """Retrieval against no context on six questions of two conversations: the t interval of
    1 degree of freedom would reach far outside [0, 1]; every tool says too few clusters."""
    rag = _locomo(shared_runs, locomo_task, TWO_CONVERSATIONS, context="rag")
    none = _locomo(shared_runs, locomo_task, TWO_CONVERSATIONS, context="none")
    [run] = load_runs([str(rag)])
    f1 = [s.scores["f1"] for s in run.samples.values()]
    clusters = [s.cluster for s in run.samples.values()]
    raw = statistics.clustered_ci(f1, clusters)  # what the tables printed before
    assert raw.lower < 0.0 < 1.0 < raw.upper, raw

    proc = _tool("memevals-compare", rag, none, "--csv", tmp_path / "c.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"\| 95% CI +\| too few clusters \(2\) +\| too few clusters \(2\) +\|",
                     proc.stdout), proc.stdout  # fmt: skip
    assert "a 95 % interval needs at least 6" in " ".join(proc.stdout.split())
    assert _intervals(proc.stdout) == []
    with (tmp_path / "c.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 and all(r["f1_ci_lower"] == r["f1_ci_upper"] == "" for r in rows)
    assert all(r["f1"] != "" and r["f1_stderr_clustered"] != "" for r in rows)

    out = tmp_path / "d.json"
    proc = _tool("memevals-diff", none, rag, "--json", out, "--resamples", "200", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"\| overall \| 6 \| 2 \| 0\.000 \| \d\.\d{3} \| \+\d\.\d{3} \| "
                     r"too few clusters \(2\) \| 0\.500 \|", proc.stdout), proc.stdout  # fmt: skip
    assert _intervals(proc.stdout) == []
    [comparison] = json.loads(out.read_text(encoding="utf-8"))
    for row in comparison["scores"]["f1"]["rows"]:
        assert row["too_few_clusters"] and row["ci_low"] is None and row["mde"] is None

    page = tmp_path / "report.html"
    proc = _tool("memevals-report", rag, none, "-o", page, "--resamples", "200", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = page.read_text(encoding="utf-8")
    assert "too few clusters (2)" in text and _intervals(text) == []
    bounds = [float(v) for v in re.findall(r"data-(?:low|high)=['\"]([^'\"]+)['\"]", text)]
    assert bounds == []


def test_six_conversations_get_an_interval_clipped_to_the_unit_range(
    locomo_task: Callable[..., Task], shared_runs: SharedRuns, tmp_path: Path
) -> None:
    """From six clusters on the interval is stated, and never outside [0, 1]."""
    rag = _locomo(shared_runs, locomo_task, SIX_CONVERSATIONS, context="rag")
    [run] = load_runs([str(rag)])
    f1 = [s.scores["f1"] for s in run.samples.values()]
    clusters = [s.cluster for s in run.samples.values()]
    assert sorted(f1) == [0.0] * 11 + [1.0]
    raw = statistics.clustered_ci(f1, clusters)
    assert raw.lower < 0.0 < raw.upper < 1.0, raw  # mean 1/12 ± t(5) x 1/12
    proc = _tool("memevals-compare", rag, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    shown = _intervals(proc.stdout)
    [(low, high)] = shown  # clipped below at 0, the upper bound as computed
    assert low == 0.0 and high == pytest.approx(raw.upper, abs=5e-4), proc.stdout
    assert "too few clusters" not in proc.stdout


# ------------------------------------------------------------------------------ item 7


def test_estimate_shows_small_costs_names_its_command_and_suggests_names(
    data_dir: Path, tmp_path: Path
) -> None:
    args = ["memevals/locomo_adversarial", "-T", "context=none", "--limit", "4"]
    args += ["--token-counter", "approx", "--price-in", "0.15", "--price-out", "0.6"]
    args += ["--cache-min-tokens", "1", "--cache-block", "1"]
    proc = _tool("memevals-estimate", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    without = re.search(r"without caching: (\$\S+)", proc.stdout)
    saves = re.search(r"saves (\S+) %", proc.stdout)
    assert without is not None and saves is not None, proc.stdout
    assert re.fullmatch(r"\$0\.000\d\d", without.group(1)), without.group(1)  # not $0.00
    assert float(saves.group(1)) > 0.0
    assert dollars(0.0031) == "$0.0031" and dollars(0.0) == "$0.00" and dollars(12.345) == "$12.35"

    proc = _tool("memevals-estimate", "locomo-plus", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: memevals-estimate ")
    assert "unknown task 'locomo-plus' (did you mean 'locomo_plus'?)" in proc.stderr
    proc = run_python([sys.executable, "-m", "memevals.tools.estimate", "locomo_pluss"])
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: python -m memevals.tools.estimate ")
    assert "(did you mean 'locomo_plus'?)" in proc.stderr


def test_compare_draws_charts_only_where_asked(
    locomo_task: Callable[..., Task], shared_runs: SharedRuns, tmp_path: Path
) -> None:
    rag = _locomo(shared_runs, locomo_task, TWO_CONVERSATIONS, context="rag")
    here = tmp_path / "cwd"
    here.mkdir()
    proc = _tool("memevals-compare", rag, cwd=here)
    assert proc.returncode == 0, proc.stderr
    assert list(here.iterdir()) == [] and "chart" not in proc.stderr
    proc = _tool("memevals-compare", rag, "--png-dir", tmp_path / "charts", cwd=here)
    assert proc.returncode == 0, proc.stderr
    assert list(here.iterdir()) == []
    assert [p.name for p in (tmp_path / "charts").iterdir()] == ["locomo.png"]
    assert f"chart: {tmp_path / 'charts' / 'locomo.png'}" in proc.stderr

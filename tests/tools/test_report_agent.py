"""memevals-report and memevals-compare on the agent mode (issue 37), beside full context, RAG
and a memory system under test.

Four real runs of `inspect eval memevals/locomo` (the real CLI) with the scripted tool-calling
model of tests/support/scripted_agent.py on two questions of each of two conversations:
`-T context=full`, `-T context=rag`, `-T memory=bm25` and `-T context=agent` (its write pass
stores one `/memories` file per session). The report, made by the real command, is opened from
file:// in Debian's headless chromium: four leaderboard rows, the agent's named by its mode; the
write pass in "Cost and speed" equal to the figures computed here from the log (each history
once, though both its questions log its record) and to the task's own `agent_write` metrics; a
question of the agent run shows its stored files with their lengths. A rerun on the same cache
(it writes nothing) costs no write pass in memevals-compare's agent columns.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import SUPPORT, TESTS, run_python
from inspect_ai.log import EvalLog, read_eval_log
from offline_page import open_offline
from scratch import SCRATCH
from shared_runs import SharedRuns

from memevals.core.agent_memory import AGENT_KEY
from memevals.core.memory_harness import RESULT_CHARS
from memevals.results.paired import factors_of, find_mismatches
from memevals.results.reading.labels import with_settings
from memevals.results.reading.model import Run
from memevals.results.runs import context_label, record_of

CHROMIUM = os.environ.get("MEMEVALS_CHROMIUM", "/usr/bin/chromium")
#: Two questions of each of two conversations: each history's write pass is logged twice.
SAMPLES = "conv-26-q0,conv-26-q1,conv-30-q0,conv-30-q1"
MODEL = "scripted_agent/tools"
#: folder -> the context arguments of its run (every run: memevals/locomo, MODEL, SAMPLES).
RUNS: dict[str, list[str]] = {
    "full": ["-T", "context=full"],
    "rag": ["-T", "context=rag"],
    "bm25": ["-T", "memory=bm25"],
    "agent": ["-T", "context=agent"],
    # the same write passes again, read from the cache the agent run filled
    "agent_again": ["-T", "context=agent"],
}
#: The write-pass figures of the page's table (`agent_figures` keys) and the record fields
#: they total over the passes this run made.
#: The agent run's screenshots (docs/img has them, refreshed with MEMEVALS_DOC_IMAGES=1).
ARTIFACTS = SCRATCH / "report-agent"
DOC_IMAGES = ("leaderboard", "question")
WRITE_FIELDS = {
    "write_model_calls": "model_calls",
    "write_input_tokens": "input_tokens",
    "write_output_tokens": "output_tokens",
}


def _tool(module: str, *args: str | Path, cwd: Path) -> Any:
    cmd = [sys.executable, "-m", f"memevals.tools.{module}", *map(str, args)]
    return run_python(cmd, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def built(data_dir: Path, shared_runs: SharedRuns) -> dict[str, Any]:
    """The runs, the report of the first four and memevals-compare's CSV of all five, by the
    real commands; made once per pytest run (before the browser starts: Playwright's loop
    refuses an in-process Inspect run beside it)."""

    def produce(root: Path) -> None:
        env = {"MEMEVALS_DATA_DIR": str(data_dir), "MEMEVALS_CACHE_DIR": str(root / "cache")}
        for name, extra in RUNS.items():
            cmd = [sys.executable, str(SUPPORT / "scripted_agent.py"), "eval", "memevals/locomo"]
            cmd += ["--model", MODEL, "--sample-id", SAMPLES, "-T", "protocol=memevals", *extra]
            cmd += ["--log-dir", str(root / name), "--display", "none"]
            proc = run_python(cmd, cwd=root, env=env)
            assert proc.returncode == 0, proc.stderr[-3000:]
        four = [root / n for n in ("full", "rag", "bm25", "agent")]
        proc = _tool("report", *four, "-o", root / "report.html", "--resamples", "200", cwd=root)
        assert proc.returncode == 0, proc.stderr[-3000:]
        proc = _tool("compare", *four, root / "agent_again", "--csv", root / "c.csv", cwd=root)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (root / "compare.md").write_text(proc.stdout, encoding="utf-8")

    root = shared_runs.folder({"report-agent": [MODEL, SAMPLES, RUNS, str(data_dir)]}, produce)
    with (root / "c.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return {"root": root, "csv": rows, "md": (root / "compare.md").read_text(encoding="utf-8")}


def _log(root: Path, name: str) -> tuple[str, EvalLog]:
    [path] = (root / name).glob("*.eval")
    return path.name, read_eval_log(str(path))


def _expected(log: EvalLog) -> dict[str, Any]:
    """The write-pass figures computed here from the log: one record per history (its cache
    key), those the run made (not read from the cache) totalled."""
    records = [s.metadata[AGENT_KEY]["write"] for s in log.samples or []]
    by_history = {r["history_id"]: r for r in records}
    assert len(records) == 2 * len(by_history) == 4  # each history's record logged twice
    assert len({r["key"] for r in records}) == len(by_history)
    made = [r for r in by_history.values() if not r["cached"]]
    out: dict[str, Any] = {k: sum(r[f] for r in made) for k, f in WRITE_FIELDS.items()}
    out["write_seconds"] = round(sum(r["seconds"] for r in made), 3)
    out["write_passes"], out["histories"] = len(made), len(by_history)
    out["memory_files"] = sum(r["memory_files"] for r in by_history.values())
    return out


def _metric(log: EvalLog, name: str) -> float:
    """A metric the task's `agent_write` scorer logged (its own count of each pass once)."""
    assert log.results is not None
    [value] = [
        m.value
        for s in log.results.scores
        for key, m in s.metrics.items()
        if key.rsplit("/", 1)[-1] == name
    ]
    return float(value)


@pytest.fixture(scope="module")
def page(built: dict[str, Any]) -> Iterator[tuple[Any, list[str], list[str]]]:
    """The report opened from file:// in headless chromium (only file: requests allowed)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup.sh (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        tab = browser.new_page(viewport={"width": 1300, "height": 900})
        errors, requests = open_offline(tab, built["root"] / "report.html")
        yield tab, errors, requests
        browser.close()


def test_four_subjects_and_the_write_pass_cost(
    built: dict[str, Any], page: tuple[Any, list[str], list[str]]
) -> None:
    tab, errors, requests = page
    assert errors == [] and requests == [(built["root"] / "report.html").as_uri()]
    contexts = tab.locator("#leaderboard-table tbody tr").evaluate_all(
        "trs => trs.map(tr => tr.cells[1].textContent)"
    )
    assert sorted(contexts) == [
        "agent(files)",
        "full",
        "memory(bm25, k=5)",
        "rag(dialog, k=5, bm25)",
    ]
    table = tab.locator("#cost table.agent-write")
    headers = table.locator("th").evaluate_all("ths => ths.map(th => th.textContent)")
    [cells] = table.locator("tbody tr").evaluate_all(
        "trs => trs.map(tr => Array.from(tr.cells).map(td => td.textContent))"
    )
    shown = dict(zip(headers, cells, strict=True))
    name, log = _log(built["root"], "agent")
    expected = _expected(log)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab.locator("section#leaderboard").screenshot(path=str(ARTIFACTS / "leaderboard.png"))
    assert shown["run"] == f"{MODEL} | protocol memevals | agent(files)"
    assert shown["mode"] == "files"
    assert expected["write_passes"] == expected["histories"] == 2
    for key, value in expected.items():
        assert shown[key] == (f"{value:.4f}" if key == "write_seconds" else str(value)), key
    for key in (*WRITE_FIELDS, "write_passes", "write_seconds"):
        assert _metric(log, key) == pytest.approx(expected[key], abs=1e-3), key
    # the model's usage (the input-tokens chart) includes the write passes
    assert log.stats.model_usage[MODEL].input_tokens > expected["write_input_tokens"] > 0
    # memevals-compare's CSV has the same figures
    [row] = [r for r in built["csv"] if r["log"].endswith(name)]
    assert row["context"].startswith("agent(files) [run ") and row["agent_mode"] == "files"
    for key, value in expected.items():
        assert float(row[f"agent_{key}"]) == pytest.approx(value), key


def test_a_rerun_from_the_cache_costs_no_write_pass(built: dict[str, Any]) -> None:
    _, log = _log(built["root"], "agent_again")
    name, _ = _log(built["root"], "agent")
    [again] = [r for r in built["csv"] if r["log"].endswith(_log(built["root"], "agent_again")[0])]
    [first] = [r for r in built["csv"] if r["log"].endswith(name)]
    assert all(s.metadata[AGENT_KEY]["write"]["cached"] for s in log.samples or [])
    assert again["agent_histories"] == again["agent_write_cached"] == "2"
    for key in ("write_passes", "write_model_calls", "write_input_tokens", "write_output_tokens"):
        assert again[f"agent_{key}"] == "0", key
    # what the passes kept is the same memory
    assert again["agent_memory_files"] == first["agent_memory_files"] != "0"
    # the two agent runs share their context: told apart by their logs, as two bm25 runs are
    assert "agent(files) [run 1:" in built["md"] and "agent(files) [run 2:" in built["md"]
    # runs of other modes have no agent figures
    others = [r for r in built["csv"] if not r["context"].startswith("agent")]
    assert len(others) == 3 and all(r["agent_histories"] == "" for r in others)


def test_the_question_view_shows_the_stored_files(
    built: dict[str, Any], page: tuple[Any, list[str], list[str]]
) -> None:
    tab, _, _ = page
    _, log = _log(built["root"], "agent")
    sample = (log.samples or [])[0]
    files = sample.metadata[AGENT_KEY]["memory"]
    stored = json.loads(
        (Path(sample.metadata[AGENT_KEY]["store"]) / "memories.json").read_text("utf-8")
    )
    assert [f["path"] for f in files] == sorted(stored) and len(files) > 1
    tab.locator(f"#questions-table tbody tr[data-id='{sample.id}']").first.click()
    lists = tab.locator("#q-detail ol.files")
    assert lists.count() == 1  # only the agent run stored files
    shown = lists.first.locator("li").evaluate_all(
        "lis => lis.map(li => [li.querySelector('.file-path').textContent,"
        " li.querySelector('.file-chars').textContent, li.querySelector('.mem-text').textContent])"
    )
    assert len(shown) == len(files)
    for (path, chars, text), (name, whole) in zip(shown, sorted(stored.items()), strict=True):
        assert path == name
        assert text == whole[:RESULT_CHARS]
        cut = ", cut" if len(whole) > RESULT_CHARS else ""
        assert chars == f" ({len(whole)} characters{cut})"
    # a count is shown whole, a 0-1 score to three decimals
    cells = tab.locator("#q-detail table tr").evaluate_all(
        "trs => trs.map(tr => [tr.cells[0].textContent, tr.cells[2].textContent])"
    )
    [scores] = [text for run, text in cells if run.endswith("agent(files)")]
    tokens = sample.scores["prompt_tokens"].value if sample.scores else None
    assert isinstance(tokens, int | float) and tokens > 1 and float(tokens).is_integer()
    assert f"prompt_tokens={int(tokens)} " in f"{scores} " and "f1=0.000" in scores
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab.locator("#q-detail").screenshot(path=str(ARTIFACTS / "question.png"))


def test_docs_show_the_agent_run(built: dict[str, Any]) -> None:
    """docs/img holds the agent run's leaderboard and an opened question (the screenshots the
    tests above write; refreshed with MEMEVALS_DOC_IMAGES=1)."""
    docs = TESTS.parent / "docs" / "img"
    if os.environ.get("MEMEVALS_DOC_IMAGES") == "1":
        from PIL import Image

        for name in DOC_IMAGES:
            # a 64-colour palette keeps the committed images small
            with Image.open(ARTIFACTS / f"{name}.png") as image:
                # the top of an opened question: its runs and the first stored files
                top = image.crop((0, 0, image.width, min(image.height, 1400)))
                small = top.convert("RGB").quantize(colors=64)
                small.save(docs / f"report-agent-{name}.png", optimize=True)
    for name in DOC_IMAGES:
        assert (docs / f"report-agent-{name}.png").stat().st_size > 1000, name


def _run(metadata: dict[str, Any]) -> Run:
    """A run of the agent mode as the reader makes it from a log (no samples)."""
    run = Run(
        label="m (x.eval)",
        path="x.eval",
        framework="inspect",
        benchmark="locomo",
        samples={},
        settings={},
        used_context={"context": "agent"},
        model="m",
        record=record_of("locomo", "locomo"),
        used={"context": "agent"},
        task_metadata={"agent": metadata},
    )
    return with_settings(run)


@pytest.mark.parametrize(
    ("settings", "label"),
    [
        ({"agent_memory": "files", "agent_steps": 8}, "agent(files)"),
        ({"agent_memory": "mcp", "agent_mcp": "node server.js"}, "agent(mcp)"),
        (
            {"agent_memory": "compaction", "agent_compaction": "summary", "agent_window": 6000},
            "agent(compaction, summary, window=6000)",
        ),
        (
            {"agent_memory": "files+compaction", "agent_compaction": "auto", "agent_window": 800},
            "agent(files+compaction, auto, window=800)",
        ),
    ],
)
def test_an_agent_run_is_named_by_its_mode(settings: dict[str, Any], label: str) -> None:
    assert context_label(_run(settings)) == label


def test_two_agent_modes_are_one_factor_named_by_their_modes() -> None:
    files = _run({"agent_memory": "files", "agent_steps": 8})
    summary = _run(
        {
            "agent_memory": "compaction",
            "agent_steps": 8,
            "agent_compaction": "summary",
            "agent_window": 6000,
        }
    )
    assert files.label == "m + agent files (x.eval)"
    differences = find_mismatches(files, summary, [])
    assert {m.factor for m in differences} == {"context"}
    assert "agent_memory: A='files', B='compaction'" in [m.detail for m in differences]
    [factor] = factors_of(files, summary, differences)
    assert (factor.a, factor.b) == (
        "context=agent(files)",
        "context=agent(compaction, summary, window=6000)",
    )
    # the same mode with other rounds: named by the setting that differs
    more = _run({"agent_memory": "files", "agent_steps": 12})
    [factor] = factors_of(files, more, find_mismatches(files, more, []))
    assert (factor.a, factor.b) == ("agent_steps=8", "agent_steps=12")

"""What memevals-compare and memevals-diff show on real logs of every benchmark: the default
Markdown fits 120 columns, an undefined figure is left out (`-`), never `nan`; an all-unscored
judge run shows its unscored count and nothing else; charts name each run's protocol and say
when a panel has nothing to draw; runs of different benchmarks are never compared.

The logs are small real Inspect runs (mockllm answers): LoCoMo over one conversation (every
clustered figure undefined), LoCoMo judged by a grader that never writes a verdict (every
sample unscored, protocol=memevals), LoCoMo-Plus, LongMemEval's fixture (several clusters) and
BEAM under its official protocol with a grader whose replies are never a verdict.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_python
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from memevals.inspect_tasks.beam import beam
from memevals.inspect_tasks.locomo import locomo
from memevals.inspect_tasks.locomo_plus import locomo_plus
from memevals.inspect_tasks.longmemeval import longmemeval
from memevals.tools.compare import (
    MAX_WIDTH,
    NO_SCORED,
    Row,
    chart_figure,
    load_rows,
    main,
    markdown_tables,
    table_records,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

#: run name -> (task factory, grader, --limit)
RUNS: dict[str, tuple[Any, str, int | None]] = {
    # twelve questions of conv-26: one cluster, so no clustered error or interval
    "locomo": (
        lambda: locomo(context="none", judge=True, protocol="memevals"),
        "scripted/strict",
        12,
    ),
    # mockllm's default reply is no JSON verdict: every sample unscored
    "locomo_unscored": (
        lambda: locomo(context="none", judge=True, protocol="memevals"),
        "mockllm/model",
        6,
    ),
    "locomo_plus": (
        lambda: locomo_plus(context="none", protocol="memevals"),
        "scripted/lenient",
        8,
    ),
    "longmemeval": (
        lambda: longmemeval(
            variant="oracle", data_dir=str(FIXTURES), verify_checksum=False, protocol="memevals"
        ),
        "scripted/strict",
        None,
    ),
    # the official BEAM grader's reply must hold a score; mockllm's never does
    "beam_unscored": (
        lambda: beam(categories="event_ordering,knowledge_update"),
        "mockllm/model",
        4,
    ),
}


@pytest.fixture(scope="module")
def logs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import scripted_judge  # noqa: F401  (registers the scripted/ judge provider)

    root = tmp_path_factory.mktemp("compare-tables")
    for name, (task, grader, limit) in RUNS.items():
        [log] = inspect_eval(
            task(),
            model=get_model("mockllm/model"),
            model_roles={"grader": get_model(grader)},
            limit=limit,
            log_dir=str(root / name),
            display="none",
        )
        assert log.status == "success", log.error
    return root


def _rows(logs: Path, *names: str) -> list[Row]:
    return load_rows([str(logs / n) for n in names or RUNS])


def _table(text: str, first_cell: str) -> dict[str, list[str]]:
    """The table whose header starts with `first_cell`: {first cell: the other cells}."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"| {first_cell} "))
    out = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0]] = cells[1:]
    return out


def test_default_tables_fit_120_columns_and_show_no_nan(
    logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_csv = tmp_path / "compare.csv"
    assert main([str(logs), "--csv", str(out_csv), "--no-png"]) == 0
    text = capsys.readouterr().out
    assert [ln[4:] for ln in text.splitlines() if ln.startswith("### ")] == [
        "beam", "locomo", "locomo_plus", "longmemeval"
    ]  # fmt: skip
    widths = [len(line) for line in text.splitlines()]
    assert max(widths) <= MAX_WIDTH == 120
    assert "nan" not in text.lower()

    # LoCoMo-Plus's judge is its headline: its first table, as its record orders the scores
    plus_part = text[text.index("### locomo_plus") : text.index("### longmemeval")]
    families = [ln[5:] for ln in plus_part.splitlines() if ln.startswith("#### ")]
    assert families[:2] == ["judge", "F1"], families

    locomo_part = text[text.index("### locomo\n") : text.index("### locomo_plus")]
    runs = _table(locomo_part, "run")
    assert runs["run"] == ["model", "judge model", "protocol", "context", "task", "n"]
    assert runs["1"] == ["mockllm/model", "mockllm/model", "memevals", "none", "locomo", "6"]
    assert runs["2"] == ["mockllm/model", "scripted/strict", "memevals", "none", "locomo", "12"]
    # one conversation: the mean without an error, too few clusters for an interval (the rule
    # under the tables)
    rows = {r.judge: r for r in _rows(logs, "locomo", "locomo_unscored")}
    f1_mean = rows["scripted/strict"].kinds["f1"].overall
    assert f1_mean is not None
    f1 = _table(locomo_part, "F1")
    assert f1["F1"] == ["run 1", "run 2"]
    assert f1["scored"] == ["6", "12"]
    assert f1["mean ± se"][1] == f"{f1_mean:.3f}"
    assert f1["95% CI"] == ["too few clusters (1)", "too few clusters (1)"]
    assert "a 95 % interval needs at least 6" in " ".join(locomo_part.split())
    assert (
        f1["multi_hop"][1] == f"{rows['scripted/strict'].kinds['f1'].categories['multi_hop']:.3f}"
    )
    # the all-unscored judge run: nothing but its count, every sample unscored
    judge = _table(locomo_part, "judge")
    assert judge["scored"] == ["0", "12"]
    assert judge["mean ± se"][0] == judge["95% Wilson"][0] == judge["temporal"][0] == "-"
    assert judge["unscored"] == ["6", "0"]

    # several clusters (LongMemEval): the mean carries its clustered error, the interval shown
    lme_row = _rows(logs, "longmemeval")[0]
    summary = lme_row.kinds["judge"].clustered[""]
    lme = _table(text[text.index("### longmemeval") :], "judge")
    assert lme["mean ± se"] == [f"{summary.mean:.3f} ± {summary.stderr_clustered:.3f}"]
    assert lme["95% Wilson"] == [f"[{summary.interval.lower:.3f}, {summary.interval.upper:.3f}]"]
    assert lme["scored"] == [str(summary.n)] == ["16"]

    # BEAM, every sample unscored: its count, no figure
    beam_part = text[text.index("### beam") : text.index("### locomo\n")]
    beam_table = _table(beam_part, "beam")
    assert beam_table["scored"] == ["0"] and beam_table["unscored"] == ["4"]
    assert beam_table["mean ± se"] == beam_table["95% Wilson"] == ["-"]

    # the CSV keeps every figure; an undefined one is an empty cell, never "nan"
    raw = out_csv.read_text(encoding="utf-8")
    assert "nan" not in raw.lower()
    with out_csv.open(encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    by = {(r["benchmark"], r["judge_model"]): r for r in table}
    one_cluster = by["locomo", "scripted/strict"]
    assert float(one_cluster["f1"]) == pytest.approx(f1_mean)
    assert one_cluster["f1_stderr_clustered"] == one_cluster["f1_ci_lower"] == ""
    assert one_cluster["f1_multi_hop_ci_upper"] == ""
    unscored = by["locomo", "mockllm/model"]
    assert (unscored["judge"], unscored["judge_stderr"], unscored["judge_unscored"]) == (
        "",
        "",
        "6",
    )
    assert float(by["longmemeval", "scripted/strict"]["judge_stderr_clustered"]) == pytest.approx(
        summary.stderr_clustered
    )
    # the records behind the CSV hold None, not NaN
    records = table_records(_rows(logs))
    assert [r["benchmark"] for r in records] == [r["benchmark"] for r in table]
    assert all(v is None or v == v for r in records for v in r.values())


def test_wide_table_is_an_option_and_shows_no_nan(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(logs), "--no-png", "--wide"]) == 0
    text = capsys.readouterr().out
    assert "nan" not in text.lower()
    locomo_part = text[text.index("### locomo\n") : text.index("### locomo_plus")]
    header = next(ln for ln in locomo_part.splitlines() if ln.startswith("| model | judge model"))
    assert "| F1 | F1 stderr | F1 stderr_clustered | F1 95% CI | F1 multi_hop" in header
    assert max(len(line) for line in text.splitlines()) > MAX_WIDTH  # why it is not the default
    line = next(ln for ln in locomo_part.splitlines() if "| scripted/strict | memevals |" in ln)
    cells = [c.strip() for c in line.strip("|").split("|")]
    # F1's clustered stderr is undefined, its interval not stated (one conversation)
    assert cells[8:10] == ["-", "too few clusters (1)"]
    assert "±" not in line  # no clustered error to show beside any mean


def test_many_runs_and_long_labels_still_fit(logs: Path) -> None:
    """Fourteen runs with long model names: the score tables split into several of at most 120
    columns, and the run key, too wide as a table, becomes a wrapped list."""
    [row] = _rows(logs, "locomo")
    rows = [
        replace(row, model=f"openrouter/some-provider/a-very-long-model-name-{i:02d}-instruct")
        for i in range(14)
    ]
    text = markdown_tables(rows)
    assert max(len(line) for line in text.splitlines()) <= MAX_WIDTH
    assert "nan" not in text.lower()
    assert sum(1 for ln in text.splitlines() if ln.startswith("| F1 ")) >= 2
    runs = [f"run {i}" for i in range(1, 15)]
    shown = [c for ln in text.splitlines() if ln.startswith("| F1 ") for c in ln.split(" | ")]
    assert [c.strip(" |") for c in shown if c.strip(" |").startswith("run ")] == runs
    assert "1. model openrouter/some-provider/a-very-long-model-name-00-instruct;" in text
    assert "| run | model" not in text


def test_charts_name_the_protocol_and_say_when_nothing_was_scored(logs: Path) -> None:
    import matplotlib.pyplot as plt

    rows = _rows(logs)
    fig = chart_figure(rows, "locomo")
    [legend] = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == [
        "run 1: mockllm/model | judge mockllm/model | protocol memevals | none",
        "run 2: mockllm/model | judge scripted/strict | protocol memevals | none",
    ]
    f1_ax, judge_ax = fig.axes
    assert [t.get_text() for t in f1_ax.texts] == []
    assert [t.get_text() for t in judge_ax.texts] == [f"{NO_SCORED}: run 1 (6 unscored)"]
    plt.close(fig)

    fig = chart_figure(rows, "beam")
    [ax] = fig.axes
    assert [t.get_text() for t in ax.texts] == ["no scored samples: run 1 (4 unscored)"]
    [legend] = fig.legends
    assert "protocol official" in legend.get_texts()[0].get_text()
    plt.close(fig)

    # LongMemEval's long category names: the legend lies clear of every x label
    fig = chart_figure(rows, "longmemeval")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    legend_box = fig.legends[0].get_window_extent(renderer)
    ticks = [t for ax in fig.axes for t in ax.get_xticklabels() if t.get_text()]
    assert {t.get_text() for t in ticks} >= {"single_session_preference", "knowledge_update"}
    assert not [t.get_text() for t in ticks if t.get_window_extent(renderer).overlaps(legend_box)]
    plt.close(fig)


def _diff(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_python([sys.executable, "-m", "memevals.tools.diff", *map(str, args)], timeout=300)


def test_diff_never_compares_runs_of_different_benchmarks(logs: Path) -> None:
    for extra in ([], ["--allow-mismatch"]):
        proc = _diff(logs / "locomo", logs / "beam_unscored", *extra)
        assert proc.returncode == 1, proc.stderr
        assert proc.stdout == ""  # no "Benchmark locomo" table comparing nothing
        [line] = proc.stderr.splitlines()
        assert line.startswith("memevals-diff: runs of different benchmarks are never compared:")
        assert " is locomo, B = " in line and line.split(", B = ")[1].split(" (")[0].endswith(
            " is beam"
        )
        assert "refusing" not in line and "context" not in line.split(" (")[0]


def test_diff_of_an_all_unscored_judge_run_shows_no_nan(logs: Path, tmp_path: Path) -> None:
    """The judged run against the one whose grader never gave a verdict (another judge, so
    --allow-mismatch): F1 is compared, judge has no pair, every sample counted unscored."""
    out_json, out_csv = tmp_path / "diff.json", tmp_path / "diff.csv"
    proc = _diff(
        logs / "locomo", logs / "locomo_unscored", "--allow-mismatch",
        "--json", out_json, "--csv", out_csv, "--resamples", "200",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # as numbers: a log's file name holds random letters ("...575infegsey.eval")
    assert not re.search(r"\b(nan|[+-]?inf)\b", proc.stdout, re.IGNORECASE), proc.stdout
    assert "No question has this score in both runs (0 errored, 6 unscored in either run)." in (
        proc.stdout
    )
    overall = next(ln for ln in proc.stdout.splitlines() if ln.startswith("| overall |"))
    cells = [c.strip() for c in overall.strip("|").split("|")]
    assert cells[1:3] == ["6", "1"] and cells[10] == "-"  # one cluster: no detectable difference
    for path in (out_json, out_csv):
        assert not re.search(r"\bnan\b", path.read_text(encoding="utf-8"), re.IGNORECASE)
    [comparison] = json.loads(out_json.read_text(encoding="utf-8"))
    assert comparison["scores"]["judge"] == {
        "errored_excluded": 0,
        "unscored_excluded": 6,
        "rows": [],
    }
    assert comparison["scores"]["f1"]["rows"][0]["mde"] is None

"""Mistakes a new user makes with the memevals-* tools get one line naming the fix, and no tool
states a figure or a reason that is not so (found by working through docs/compare.md,
paired.md, report.md, cost.md and judges.md command by command):

- memevals-judge-agreement: one judge named with --scorer-a on a log that holds one judge (an
  IndexError before), one judge against itself (agreement 1.000 by construction before), a
  folder, a log nobody judged, a failed run;
- memevals-diff: a failed run is left out as memevals-compare leaves it out (before, its errored
  samples were paired and the comparison refused for "1 only in B");
- memevals-estimate: a negative --limit (which counted all but the last sample) or price is
  refused before the task is built; a memory system's run says that its retrieved context is not
  counted;
- memevals-report: a run whose samples log an analysis axis but have no scored value is said to
  be unscored, not to "not log" the axis;
- memevals-compare: a JSON file that is no Inspect log is named in one line.

The runs are mockllm's on conftest's shared LoCoMo build (two questions, no context), and the
faulty model's (tests/support/faulty_model.py) for a run that failed; each is made once per
pytest run (shared_runs).
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_support import run_inspect_cli, run_python
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.model import get_model
from shared_runs import SharedRuns

from memevals.results.judge_labels import judge_score_names

BIN = Path(sys.executable).parent
IDS = ["conv-26-q0", "conv-26-q1"]
#: test_diff_factors' and test_honest_figures' lm-eval run (shared): LoCoMo with retrieval
LM_EVAL_RAG = [
    "--model", "dummy", "--tasks", "locomo_temporal,locomo_open_domain", "--limit", "4",
    "--metadata", json.dumps({"context": "rag"}),
]  # fmt: skip


def _tool(name: str, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A memevals console script, run in this process."""
    return run_python([str(BIN / name), *map(str, args)], cwd=cwd, timeout=600)


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The error line of a failed command (after argparse's usage lines, if any)."""
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr.strip().splitlines()[-1]


def _run(
    shared_runs: SharedRuns, task: Callable[..., Task], name: str, model: str, **options: object
) -> Path:
    """The one log of a run of memevals/locomo (no context) on IDS, made once per pytest run."""

    def produce(folder: Path) -> None:
        import faulty_model  # noqa: F401  (registers the faulty/ provider)

        args = {"fault_rate": 1.0, "faults": "fatal"} if model.startswith("faulty/") else {}
        inspect_eval(
            task(context="none", protocol="memevals", **options),
            model=get_model(model, **args),
            model_roles={"grader": get_model("mockllm/model")},
            sample_id=IDS,
            log_dir=str(folder / "logs"),
            display="none",
        )

    folder = shared_runs.folder({"new-user-mistakes": [name, model, options]}, produce)
    [log] = (folder / "logs").iterdir()
    return log


@pytest.fixture
def runs(locomo_task: Callable[..., Task], shared_runs: SharedRuns) -> dict[str, Path]:
    return {
        "plain": _run(shared_runs, locomo_task, "plain", "mockllm/model"),
        "judged": _run(shared_runs, locomo_task, "judged", "mockllm/model", judge=True),
        "failed": _run(shared_runs, locomo_task, "failed", "faulty/answerer"),
    }


def test_judge_agreement_mistakes_get_one_line(runs: dict[str, Path], tmp_path: Path) -> None:
    judged = runs["judged"]
    [name] = judge_score_names(read_eval_log(str(judged)))
    cases = {
        # one judge named: the other is not there (an IndexError traceback before)
        (str(judged), "--scorer-a", name): f"judge A and judge B are the same score ('{name}'",
        (str(judged), "--scorer-b", name): f"judge A and judge B are the same score ('{name}'",
        # the same judge twice: agreement 1.000 by construction before
        (str(judged), str(judged)): f"judge A and judge B are the same score ('{name}'",
        (str(judged.parent),): "a folder; name one Inspect log file (.eval or .json) in it",
        (str(runs["plain"]), str(judged)): "holds no judge score; judge it first (inspect score "
        f"{runs['plain']} --scorer memevals/llm_judge --model-role grader=...",
        (str(runs["failed"]), str(judged)): "the run did not finish (status error) and holds no "
        f"judge score; rerun it (inspect eval-retry {runs['failed']})",
    }
    for args, message in cases.items():
        proc = _tool("memevals-judge-agreement", *args, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stdout == "", (args, proc.stdout)
        assert _one_line(proc) == proc.stderr.strip(), proc.stderr
        assert message in proc.stderr, (args, proc.stderr)


def test_diff_leaves_a_failed_run_out(runs: dict[str, Path], tmp_path: Path) -> None:
    failed = runs["failed"]
    assert read_eval_log(str(failed), header_only=True).status == "error"
    left_out = f"memevals-diff: {failed}: no results (status error); left out"

    proc = _tool("memevals-diff", failed, runs["plain"], cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert left_out in proc.stderr.splitlines()
    assert _one_line(proc) == (
        "memevals-diff: error: need at least two runs with results to compare, found 1 in "
        f"['{failed}', '{runs['plain']}']"
    )

    # the other two are compared: F1 on both questions, nothing said about sample sets
    proc = _tool(
        "memevals-diff", failed, runs["plain"], runs["judged"], "--resamples", "20", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [left_out]
    assert "| overall | 2 | 1 |" in proc.stdout and "sample set" not in proc.stdout


def test_estimate_refuses_negative_values_before_building_the_task(tmp_path: Path) -> None:
    for option, value in (("--limit", "-1"), ("--price-in", "-1"), ("--cached-price-ratio", "-2")):
        # a task that does not exist: refused first, so the values were checked before it
        proc = _tool("memevals-estimate", "no_such_task", option, value, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stdout == ""
        shown = value if option == "--limit" else str(float(value))
        message = f"memevals-estimate: error: {option} {shown}: must not be negative"
        assert _one_line(proc) == message


def test_estimate_says_a_memory_systems_context_is_not_counted(
    data_dir: Path, tmp_path: Path
) -> None:
    env = {"MEMEVALS_DATA_DIR": str(data_dir)}
    args = ["locomo", "-T", "memory=bm25", "-T", "top_k=3", "--limit", "2"]
    proc = run_python([str(BIN / "memevals-estimate"), *args], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (
        "note: memory=bm25: the context the memory system gives each question (top_k=3 items) "
        "is retrieved at run time and not included, nor are the calls a system makes while "
        "ingesting the histories"
    ) in proc.stdout
    plain = run_python(
        [str(BIN / "memevals-estimate"), "locomo", "-T", "context=none", "--limit", "2"],
        cwd=tmp_path,
        env=env,
    )
    assert plain.returncode == 0 and "memory" not in plain.stdout


def test_report_says_unscored_not_unlogged(runs: dict[str, Path], tmp_path: Path) -> None:
    """The judged run's grader (mockllm) never wrote a verdict: every judge value is unscored.
    With its F1 taken out of the log, the judge is the run's first score, the one the report
    breaks down by the record's analysis axes; its samples log the axes' fields, so the report
    says no sample has a value (before: that its samples "do not log" them)."""
    log = read_eval_log(str(runs["judged"]))
    for sample in log.samples or []:
        sample.scores = {
            name: score
            for name, score in (sample.scores or {}).items()
            if not isinstance(score.value, int | float)
        }
    judge_only = tmp_path / "judge_only.eval"
    write_eval_log(log, str(judge_only))
    page = tmp_path / "r.html"
    proc = _tool("memevals-report", judge_only, "-o", page, "--resamples", "20", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = page.read_text(encoding="utf-8")
    assert "2 sample(s) left unscored by judge" in text
    assert "its samples do not log" not in text
    said = re.findall(r"locomo, ([^:<]+): no chart for [^<]*\(judge\): no sample has a value of "
                      r"the score \(every one errored or was left unscored\)", text)  # fmt: skip
    assert said and len(said) == len(set(said)), text


def test_compare_names_a_json_that_is_no_log_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}", encoding="utf-8")
    for tool in ("memevals-compare", "memevals-diff"):
        proc = _tool(tool, "x.json", "x.json", cwd=tmp_path)
        assert proc.returncode == 2
        line = _one_line(proc)
        assert line.startswith(f"{tool}: error: x.json: not a readable Inspect log (1 validation")
    proc = _tool("memevals-report", "x.json", "-o", tmp_path / "r.html", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "r.html").exists()


def test_an_output_path_that_cannot_be_written_is_one_line_before_any_work(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """A folder given for a file (`--csv report/`) or a file for a folder: one line, exit 2,
    nothing printed or written (before: a traceback after the tables were printed)."""
    folder, a_file = tmp_path / "out", tmp_path / "note.txt"
    folder.mkdir()
    a_file.write_text("x", encoding="utf-8")
    plain, judged = str(runs["plain"]), str(runs["judged"])
    cases = {
        ("memevals-compare", plain, "--csv", str(folder)): f"memevals-compare: error: --csv "
        f"{folder}: a folder; name the file to write (e.g. {folder / 'compare.csv'})",
        ("memevals-compare", plain, "--png-dir", str(a_file)): "memevals-compare: error: "
        f"--png-dir {a_file}: a file; name the folder to write into",
        ("memevals-compare", plain, "--csv", str(a_file / "c.csv")): "memevals-compare: error: "
        f"--csv {a_file / 'c.csv'}: {a_file} is a file, not a folder",
        ("memevals-diff", plain, judged, "--json", str(folder)): "memevals-diff: error: --json "
        f"{folder}: a folder; name the file to write (e.g. {folder / 'paired.json'})",
        ("memevals-diff", plain, judged, "--png", str(folder)): "memevals-diff: error: --png "
        f"{folder}: a folder; name the file to write (e.g. {folder / 'paired.png'})",
        ("memevals-report", plain, "-o", str(folder)): f"memevals-report: -o {folder}: a "
        f"folder; name the file to write (e.g. {folder / 'report.html'})",
    }
    for (tool, *args), message in cases.items():
        proc = _tool(tool, *args, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stdout == "", (args, proc.stdout)
        assert _one_line(proc) == message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["note.txt", "out"]
    assert list(folder.iterdir()) == []

    # a chart path without a suffix: matplotlib writes a .png, and diff names that file
    proc = _tool("memevals-diff", plain, judged, "--png", "paired", "--resamples", "20", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[-1] == "chart: paired.png"
    assert [p.name for p in folder.iterdir()] == ["paired.png"]


def test_estimate_of_the_dialogue_task_loads_no_scorer_model(
    data_dir: Path, tmp_path: Path
) -> None:
    """The prompts do not depend on BERTScore: offline, the estimate counts them without
    loading its model (before: refused, roberta-large needs a download)."""
    env = {"MEMEVALS_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    out = {}
    for extra in ([], ["-T", "bertscore=false"]):
        args = ["locomo_dialogue", *extra, "--limit", "2"]
        proc = run_python([str(BIN / "memevals-estimate"), *args], cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        out[bool(extra)] = proc.stdout.splitlines()
    assert out[False][0] == "task: locomo_dialogue"
    assert out[False][1:] == out[True][1:] and "input tokens: " in out[False][3]


def test_report_says_a_price_names_none_of_the_models(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """`--price` for a model no run used (a misspelt name) draws no dollar chart and says why
    (before: nothing was said; only a missing --price was)."""
    page = tmp_path / "r.html"
    said = {}
    for price in (
        [],
        ["--price", "openai/gpt-4o-mini=0.15,0.60"],
        ["--price", "mockllm/model=1,2"],
    ):
        proc = _tool(
            "memevals-report", runs["plain"], "-o", page, "--resamples", "20", *price, cwd=tmp_path
        )
        assert proc.returncode == 0, proc.stderr
        text = page.read_text(encoding="utf-8")
        said[tuple(price)] = re.findall(r"locomo: no dollar chart: ([^<]*)</p>", text)
        drawn = "locomo: F1 vs dollars (log scale)" in text
        assert drawn == (price[-1:] == ["mockllm/model=1,2"]), price
    assert list(said.values()) == [
        ["no --price MODEL=IN,OUT given."],
        ["--price names none of its models (mockllm/model); it was given for openai/gpt-4o-mini."],
        [],
    ]


def test_memevals_judge_prints_counts_whole(
    shared_lm_eval: Callable[[list[str]], Path], tmp_path: Path
) -> None:
    """mockllm's reply is no verdict: every sample is `unclear`. The table and its JSON give
    the counts whole (`unclear 8`, before `unclear 8.0000`) and the scores to four decimals."""
    run_dir = shared_lm_eval(LM_EVAL_RAG)
    args = [run_dir, "--grader", "mockllm/model", "--log-dir", tmp_path / "logs"]
    proc = _tool("memevals-judge", *args, "--output-dir", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    [judged] = re.findall(r"^locomo: (\d+) samples judged", proc.stdout, re.M)
    table = {tuple(ln.split()[:2]): ln.split()[2] for ln in lines[2:] if len(ln.split()) == 3}
    assert table["locomo_official_judge", "unclear"] == judged == "8"
    assert table["locomo_official_judge", "unscored"] == "0"
    assert table["locomo_official_judge", "mean"] == "0.0000"
    summary = json.loads((tmp_path / "out" / "judge_locomo.json").read_text(encoding="utf-8"))
    values = {m["metric"]: m["value"] for m in summary["metrics"]}
    assert values["unclear"] == 8 and isinstance(values["unclear"], int)

    # the replay's log is read as the lm-eval run it judged: its model and context, not
    # Inspect's "none/none" model and the record's default context (full)
    proc = _tool("memevals-compare", run_dir, tmp_path / "logs", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    keys = [ln for ln in proc.stdout.splitlines() if re.match(r"\| [12] ", ln)]
    assert [[c.strip() for c in ln.split("|")[2:7]] for ln in keys] == [
        ["dummy", "-", "official", "rag(dialog, k=5, bm25)", "lm-eval: locomo"],
        ["dummy", "mockllm/model", "official", "rag(dialog, k=5, bm25)", "locomo_judge"],
    ], proc.stdout


def test_n_counts_a_sample_of_several_epochs_once(
    locomo_task: Callable[..., Task], shared_runs: SharedRuns, tmp_path: Path
) -> None:
    """Two questions, two epochs: compare's `n` and the CSV's `samples` are 2, as `scored`
    (before: 4, Inspect's count of sample-epochs)."""

    def produce(folder: Path) -> None:
        inspect_eval(
            locomo_task(context="none", protocol="memevals"),
            model=get_model("mockllm/model"),
            sample_id=IDS,
            epochs=2,
            log_dir=str(folder / "logs"),
            display="none",
        )

    logs = shared_runs.folder({"new-user-mistakes": "epochs"}, produce) / "logs"
    assert read_eval_log(str(next(logs.iterdir())), header_only=True).results.completed_samples == 4
    proc = _tool("memevals-compare", logs, "--csv", tmp_path / "c.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (
        "| 1   | mockllm/model | -           | memevals | none    | locomo | 2   |" in proc.stdout
    )
    assert re.search(r"\| scored +\| 2 +\|", proc.stdout)
    header, row = (tmp_path / "c.csv").read_text(encoding="utf-8").splitlines()
    assert dict(zip(header.split(","), row.split(","), strict=True))["samples"] == "2"


def test_estimate_counts_each_judge_run(data_dir: Path, tmp_path: Path) -> None:
    """`-T judge_runs=3` judges each sample three times: 6 grader calls for 2 samples (before:
    2, with a note saying each sample is judged N times)."""
    env = {"MEMEVALS_DATA_DIR": str(data_dir)}
    args = ["locomo", "-T", "context=none", "-T", "judge=true", "-T", "protocol=memevals"]
    lines = {}
    for runs in ("1", "3"):
        run_args = [*args, "-T", f"judge_runs={runs}", "--limit", "2"]
        proc = run_python([str(BIN / "memevals-estimate"), *run_args], cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        [lines[runs]] = [ln for ln in proc.stdout.splitlines() if ln.startswith("grader calls")]
    assert lines["1"].startswith("grader calls (llm_judge): 2 = 1.00 per sample (min 1, max 1)")
    assert lines["3"].startswith("grader calls (llm_judge): 6 = 3.00 per sample (min 3, max 3)")


def test_a_judge_appended_later_is_named_in_the_judge_model(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """docs/judges.md's re-judging: `inspect score --action append` with another grader. The
    run's judge model names both graders (before: only the run's grader role, mockllm/model)."""
    rejudged = tmp_path / "rejudged.eval"
    args = ["score", str(runs["judged"]), "--scorer", "memevals/llm_judge", "--model-role"]
    args += ["grader=mockllm/other", "--action", "append", "--output-file", str(rejudged)]
    proc = run_inspect_cli(args, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _tool("memevals-compare", rejudged, "--csv", tmp_path / "c.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "| 1   | mockllm/model | mockllm/model, mockllm/other | memevals |" in proc.stdout
    assert "#### judge1" in proc.stdout
    with (tmp_path / "c.csv").open(encoding="utf-8") as fh:
        [record] = list(csv.DictReader(fh))
    assert record["judge_model"] == "mockllm/model, mockllm/other"
    # the original run, one grader: unchanged
    proc = _tool("memevals-compare", runs["judged"], cwd=tmp_path)
    assert "| 1   | mockllm/model | mockllm/model | memevals |" in proc.stdout


def test_a_reader_that_stops_early_ends_the_output_not_the_command(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """`memevals-compare ... --csv c.csv | head`: the pipe is closed before the tables are
    printed (a real process: only a process has a pipe to break); the CSV is still written and
    no traceback is printed (before: BrokenPipeError, and no CSV)."""
    cmd = [str(BIN / "memevals-compare"), str(runs["plain"]), "--csv", str(tmp_path / "c.csv")]
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before anything is printed
    stderr = proc.stderr.read()
    assert proc.wait(timeout=300) == 0, stderr
    assert "Traceback" not in stderr and stderr.splitlines()[-1] == f"CSV: {tmp_path / 'c.csv'}"
    assert (tmp_path / "c.csv").read_text(encoding="utf-8").startswith("benchmark,model,")


def test_report_warns_of_a_view_bundle_that_is_not_there(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """`--view` misspelt or not yet bundled: the page is written, and one line says its
    question links open nothing yet (before: nothing was said)."""
    page = tmp_path / "site" / "index.html"
    args = [runs["plain"], "-o", page, "--resamples", "20", "--view", "veiw"]
    proc = _tool("memevals-report", *args, cwd=tmp_path)
    assert proc.returncode == 0 and page.is_file(), proc.stderr
    bundle = tmp_path / "site" / "veiw"
    assert proc.stderr.splitlines()[0] == (
        f"memevals-report: --view veiw: no Inspect View bundle at {bundle} (no index.html); the "
        f"question links open once it is there (inspect view bundle --output-dir {bundle})"
    )
    (bundle).mkdir()
    (bundle / "index.html").write_text("<html></html>", encoding="utf-8")
    proc = _tool("memevals-report", *args, cwd=tmp_path)
    assert proc.returncode == 0 and "--view" not in proc.stderr, proc.stderr


def test_diff_refuses_a_run_named_twice(runs: dict[str, Path], tmp_path: Path) -> None:
    """A log given twice (itself, or its folder and itself): B − A would be 0 by construction,
    with p = 1; one line instead (before: a table comparing the run with itself)."""
    plain = runs["plain"]
    for args in ((plain, plain), (plain.parent, plain)):
        proc = _tool("memevals-diff", *args, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stdout == ""
        assert _one_line(proc).endswith(": named twice; compare two different runs")

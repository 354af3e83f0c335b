"""What memevals-compare and memevals-diff print, pinned byte for byte (issue 39 item 1): the
tools are split into a library, renderers and commands, and the split must change no output.

The runs are the suite's shared ones (made once per pytest run): two lm-eval runs of the dummy
model (`context=none` and `context=rag`, test_diff's and test_honest_figures') and an Inspect
run of the event summary (mockllm, test_honest_figures'). Each is copied under fixed names into
the test's folder and the tools run from there on relative paths, so no temporary path or
timestamped file name reaches the output; what still varies per run (lm-eval's dates and
timings, Inspect's run times) is replaced by fixed placeholders (`_normalised`).

The stored outputs live in tests/fixtures/pinned_outputs/. To regenerate them after a change
that is meant to alter an output, set MEMEVALS_PIN_UPDATE=1 and read the diff before committing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_support import run_python
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model
from shared_runs import SharedRuns

BIN = Path(sys.executable).parent
PINNED = Path(__file__).resolve().parents[1] / "fixtures" / "pinned_outputs"
UPDATE = os.environ.get("MEMEVALS_PIN_UPDATE") == "1"

#: the lm-eval runs test_diff and test_honest_figures share (dummy model, two LoCoMo tasks)
LM_EVAL = {
    name: [
        "--model", "dummy", "--tasks", "locomo_temporal,locomo_open_domain", "--limit", "4",
        "--metadata", json.dumps({"context": name}),
    ]
    for name in ("none", "rag")
}  # fmt: skip
#: test_honest_figures' event-summary run (the real `inspect eval`, mockllm)
SUMMARY = ["eval", "memevals/locomo_event_summary", "--model", "mockllm/model", "--limit", "2"]

#: test_honest_figures' scripted-reader runs of LoCoMo (F1 varies with the questions): three
#: questions of each of two conversations, with and without retrieval
TWO_CONVERSATIONS = [f"conv-26-q{n}" for n in (0, 3, 4)] + [f"conv-30-q{n}" for n in (0, 4, 5)]

#: (pattern, placeholder): what differs between two runs of the same command
VARYING = [
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}[-:]\d{2}[-:]\d{2}(\.\d+)?([+-]\d{2}[-:]?\d{2}|Z)?"), "T"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?"), "T"),
]


@pytest.fixture
def runs(
    shared_runs: SharedRuns,
    shared_lm_eval: Callable[[list[str]], Path],
    locomo_task: Callable[..., Task],
    data_dir: Path,
    tmp_path: Path,
) -> Path:
    """A folder holding `none/`, `rag/` (lm-eval), `summary/`, `reader_none/` and `reader_rag/`
    (Inspect), under fixed names."""
    root = tmp_path
    for name, args in LM_EVAL.items():
        shutil.copytree(shared_lm_eval(args), root / name)
    env = {"MEMEVALS_DATA_DIR": str(data_dir)}
    run = shared_runs.inspect([*SUMMARY, "--log-dir", "logs", "--display", "none"], env)
    assert run.returncode == 0, run.stderr[-3000:]
    [log] = run.logs()
    (root / "summary").mkdir()
    shutil.copy(log, root / "summary" / "summary.eval")
    for context in ("none", "rag"):
        [log] = _reader_run(shared_runs, locomo_task, context).glob("*.eval")
        (root / f"reader_{context}").mkdir()
        shutil.copy(log, root / f"reader_{context}" / "run.eval")
    return root


def _reader_run(shared_runs: SharedRuns, task: Callable[..., Task], context: str) -> Path:
    """test_honest_figures' shared run of the scripted reader (same key, so made once)."""

    def produce(folder: Path) -> None:
        import scripted_reader  # noqa: F401  (registers the scripted_reader/ provider)

        [log] = inspect_eval(
            task(context=context),
            model=get_model("scripted_reader/evidence"),
            sample_id=TWO_CONVERSATIONS,
            log_dir=str(folder / "logs"),
            display="none",
        )
        assert log.status == "success", log.error

    key = {"honest-figures": [TWO_CONVERSATIONS, {"context": context}]}
    return shared_runs.folder(key, produce) / "logs"


def _normalised(text: str, root: Path) -> str:
    text = text.replace(str(root), "<runs>")
    for pattern, placeholder in VARYING:
        text = pattern.sub(placeholder, text)
    return text


def _tool(runs: Path, name: str, *args: str) -> str:
    proc = run_python([str(BIN / name), *args], cwd=runs, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _pinned(name: str, text: str, root: Path) -> None:
    path = PINNED / name
    text = _normalised(text, root)
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} missing: run with MEMEVALS_PIN_UPDATE=1 to store it"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from {path}"


def test_compare_markdown_wide_and_csv_are_unchanged(runs: Path) -> None:
    folders = ("none", "rag", "summary", "reader_none", "reader_rag")
    _pinned("compare.md", _tool(runs, "memevals-compare", *folders), runs)
    _pinned("compare_wide.md", _tool(runs, "memevals-compare", *folders, "--wide"), runs)
    _tool(runs, "memevals-compare", *folders, "--csv", "table.csv")
    _pinned("compare.csv", (runs / "table.csv").read_text(encoding="utf-8"), runs)


@pytest.mark.parametrize("pair", [("none", "rag"), ("reader_none", "reader_rag")])
def test_diff_text_json_and_csvs_are_unchanged(runs: Path, pair: tuple[str, str]) -> None:
    stem = "lm_eval" if pair[0] == "none" else "inspect"
    text = _tool(runs, "memevals-diff", *pair, "--resamples", "200")
    _pinned(f"diff_{stem}.md", text, runs)
    files = ("diff.json", "diff.csv", "flips.csv")
    options = ("--json", files[0], "--csv", files[1], "--flips", files[2])
    _tool(runs, "memevals-diff", *pair, "--resamples", "200", *options)
    for name in files:
        _pinned(f"{stem}_{name}", (runs / name).read_text(encoding="utf-8"), runs)

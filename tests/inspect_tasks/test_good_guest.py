"""memevals leaves other tasks alone (issue 38, point 1): a foreign task (not memevals', written
into tmp_path), run through the real `inspect eval`, logs the same results and draws the same
screen with memevals installed as without it.

The task has two samples and three scorers: one that leaves every sample unscored (Inspect logs
`accuracy: nan`), a dict-valued one and a grouped one. It runs twice:
- in a process of its own where memevals' `inspect_ai` entry point is hidden (the driver filters
  `importlib.metadata`'s entry points before Inspect starts), so memevals is never imported
  there (the driver checks it at exit);
- in this process, after every memevals task module and scorer is imported (memevals replaces
  no Inspect function: test_count_display checks it).
Both runs' logged results are equal, and so are their screens (the progress line and the
closing summary), but for the log's file name and the elapsed time.
"""

from __future__ import annotations

import importlib
import math
import re
import sys
from pathlib import Path

from cli_support import SUPPORT, run_python
from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

#: memevals' task modules and scorers (each imports the metrics).
TASK_MODULES = (
    "beam",
    "judge_check",
    "judge_scorer",
    "locomo",
    "locomo_dialogue",
    "locomo_event_summary",
    "locomo_plus",
    "longmemeval",
    "official_scorer",
    "context_scorers",
    "agent_task",
    "memory_under_test",
)

FOREIGN = '''
import math

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Target, accuracy, grouped, mean, scorer, stderr
from inspect_ai.solver import TaskState


@scorer(metrics=[accuracy(), stderr()])
def never_scored():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=math.nan)

    return score


@scorer(metrics={"hit": [mean(), stderr()], "miss": [mean()]})
def dict_valued():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value={"hit": 1.0, "miss": 0.0})

    return score


@scorer(metrics=[grouped(mean(), "kind"), stderr()])
def by_kind():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=1.0 if state.metadata["kind"] == "a" else 0.0)

    return score


@task
def foreign():
    samples = [
        Sample(input="q1", target="a", metadata={"kind": "a"}),
        Sample(input="q2", target="b", metadata={"kind": "b"}),
    ]
    return Task(dataset=samples, scorer=[never_scored(), dict_valued(), by_kind()])
'''

#: Inspect's CLI with memevals' entry point hidden; at exit, whether memevals was imported.
WITHOUT_MEMEVALS = """
import atexit
import importlib.metadata as metadata
import sys
from pathlib import Path

entry_points = metadata.entry_points


def without_memevals(**params):
    found = entry_points(**params)
    if params.get("group") != "inspect_ai":
        return found
    return metadata.EntryPoints(ep for ep in found if not ep.value.startswith("memevals"))


metadata.entry_points = without_memevals


REPORT = Path(sys.argv.pop())


@atexit.register
def report():
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "memevals")
    REPORT.write_text(repr(loaded), encoding="utf-8")


sys.path.insert(0, {support!r})
import inspect_offline

inspect_offline.main()
"""


def _eval(cwd: Path, name: str, process: bool) -> tuple[EvalLog, str]:
    """`inspect eval foreign.py` (plain display, 100 columns): its log and its screen."""
    args = ["eval", "foreign.py", "--model", "mockllm/model", "--display", "plain"]
    args += ["--log-dir", str(cwd / name)]
    env = {"COLUMNS": "100"}
    if process:
        driver = cwd / "without_memevals.py"
        driver.write_text(WITHOUT_MEMEVALS.format(support=str(SUPPORT)), encoding="utf-8")
        cmd = [sys.executable, str(driver), *args, str(cwd / "loaded.txt")]
    else:
        cmd = [sys.executable, str(SUPPORT / "inspect_offline.py"), *args]
    res = run_python(cmd, cwd=cwd, env=env, timeout=600, process=process)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    [info] = list_eval_logs(str(cwd / name))
    screen = re.sub(r"\S*\.eval\b", "LOG", res.stdout)
    screen = re.sub(r"(total time: +)[\d:]+", r"\1T", screen)
    # Inspect counts its model retries per process: an in-process run after others shows theirs
    screen = re.sub(r"(retries: +)\d+", r"\1N", screen)
    return read_eval_log(info), "\n".join(line.rstrip() for line in screen.splitlines())


def _memevals_loaded() -> None:
    """Every memevals task module and scorer imported, in this process."""
    for name in TASK_MODULES:
        importlib.import_module(f"memevals.inspect_tasks.{name}")


def test_a_foreign_task_sees_nothing_of_memevals(tmp_path: Path) -> None:
    (tmp_path / "foreign.py").write_text(FOREIGN, encoding="utf-8")
    without, screen_without = _eval(tmp_path, "logs_a", process=True)
    assert (tmp_path / "loaded.txt").read_text(encoding="utf-8") == "[]"
    _memevals_loaded()
    with_memevals, screen_with = _eval(tmp_path, "logs_b", process=False)

    assert without.results is not None and with_memevals.results is not None
    # the dumps' text: NaN equals itself there
    assert repr(with_memevals.results.model_dump()) == repr(without.results.model_dump())
    assert screen_with == screen_without

    # and what both show is Inspect's own: NaN for the unscored scorer, the dict's and the
    # groups' rows by Inspect's names
    scores = {s.name: s for s in without.results.scores}
    assert list(scores) == ["never_scored", "hit", "miss", "by_kind"]
    never = scores["never_scored"]
    assert list(never.metrics) == ["accuracy", "stderr"]
    assert all(math.isnan(m.value) for m in never.metrics.values())
    assert never.unscored_samples == 2
    assert {k: m.value for k, m in scores["hit"].metrics.items()} == {"mean": 1.0, "stderr": 0.0}
    assert {k: m.value for k, m in scores["by_kind"].metrics.items()} == {
        "a": 1.0,
        "b": 0.0,
        "all": 0.5,
        "stderr": 0.5,
    }
    assert re.search(r"\baccuracy +nan\b", screen_with), screen_with
    assert re.search(r"\baccuracy: +n/a\b", screen_with), screen_with  # the progress line

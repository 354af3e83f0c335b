"""Acceptance (issue 22): a new benchmark is one folder plus one thin Inspect module, with zero
edits of shared files.

A temporary copy of the package gets the toy benchmark of tests/fixtures/toy_benchmark (a folder
with its record, data, scoring, samples, README and eval.yaml, and memevals/inspect_tasks/toy.py)
and nothing else; the lm-eval generator is run in the copy. Then, through the real command lines
with the copy first on the path, the toy is found by name in `inspect eval`, in lm-eval's include
path, in `memevals-compare` (its categories in its order, its own context defaults), in
`memevals-diff` and in the post-hoc judge. Every file of the original package is still byte for
byte the same in the copy, and the test prints how many files the toy touches.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
TOY = TESTS / "fixtures" / "toy_benchmark"
BIN = Path(sys.executable).parent

#: A model under test that answers "What is the <key>?" from a `- key: value` line of its
#: context, and "unknown" otherwise (so the context setting changes its score).
LOOKUP_MODEL = """
import re

from scripted_api import run_inspect, scripted_provider


def lookup(messages, config):
    system = "".join(m.text for m in messages if m.role == "system")
    user = "".join(m.text for m in messages if m.role == "user")
    facts = dict(re.findall(r"^- (\\w+): (.+)$", system, re.M))
    asked = re.search(r"What is the (\\w+)\\?", user)
    return facts.get(asked.group(1), "unknown") if asked else "unknown"


scripted_provider("lookup", lookup)

if __name__ == "__main__":
    run_inspect()
"""


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


#: The lm-eval generator, run in the copy before anything else.
GENERATE = ["-m", "memevals.lm_eval_tasks", "generate"]

#: The package's files as copied, before the toy was added (copy -> snapshot).
SNAPSHOTS: dict[Path, dict[str, bytes]] = {}


def make_copy(root: Path) -> Path:
    """A copy of the package under `root` with the toy benchmark added (the lm-eval generator
    is run in it by the first command of `toy_runs`: GENERATE)."""
    shutil.copytree(
        REPO / "memevals", root / "memevals", ignore=shutil.ignore_patterns("__pycache__")
    )
    SNAPSHOTS[root] = _files(root / "memevals")
    shutil.copytree(TOY / "memevals", root / "memevals", dirs_exist_ok=True)
    (root / "lookup_model.py").write_text(textwrap.dedent(LOOKUP_MODEL), encoding="utf-8")
    return root


def env(root: Path) -> dict[str, str]:
    """The copy first on the path (before the installed checkout), the test helpers after."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(TESTS / "support")])}


#: Runs each command line of a JSON list in this one process (tests/support/in_process.py: the
#: entry point as a new interpreter would run it, output captured) and writes their exit status
#: and output as JSON: the copy's commands share one interpreter start instead of one each.
DRIVER = """
import json, sys

import in_process

results = []
for cmd in json.loads(open(sys.argv[1], encoding="utf-8").read()):
    done = in_process.run(cmd, timeout=600)
    results.append({"cmd": cmd, "rc": done.returncode, "out": done.stdout, "err": done.stderr})
    if done.returncode:
        break
with open(sys.argv[2], "w", encoding="utf-8") as fh:
    json.dump(results, fh)
"""


def run(*commands: list[str], root: Path) -> list[str]:
    """Run the command lines (a list after the interpreter or a console script's path) one
    after another in one new interpreter with the copy first on the path: a process of their
    own, since only a fresh one imports the copy's package rather than the checkout's.

    Returns:
        Each command's stdout.
    """
    cmds = [
        list(c) if c and Path(c[0]).parent == BIN else [sys.executable, *c] for c in commands
    ]
    (root / "driver.py").write_text(DRIVER, encoding="utf-8")
    (root / "commands.json").write_text(json.dumps(cmds), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(root / "driver.py"), "commands.json", "results.json"],
        cwd=root, env=env(root), capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((root / "results.json").read_text(encoding="utf-8"))
    for done in results:
        assert done["rc"] == 0, f"{done['cmd']}:\n{done['out'][-3000:]}\n{done['err'][-3000:]}"
    assert len(results) == len(cmds)
    return [str(done["out"]) for done in results]


#: Gives the one log of `<logs>/full` and of `<logs>/none` the name `run.eval`.
RENAME_LOGS = """
import sys
from pathlib import Path

for context in ("full", "none"):
    [log] = (Path(sys.argv[1]) / context).glob("*.eval")
    log.rename(log.with_name("run.eval"))
"""

#: The post-hoc judge's command line with the scripted grader registered first; its first
#: argument is lm-eval's output folder, whose one run folder it judges.
JUDGE = """
import sys
from pathlib import Path

import scripted_judge  # noqa: F401  (registers scripted/strict)
from memevals.tools.judge import main

[run_dir] = [p for p in Path(sys.argv[1]).iterdir() if p.is_dir()]
sys.exit(main([str(run_dir), *sys.argv[2:]]))
"""


@dataclass(frozen=True)
class ToyRuns:
    """The copy with the toy, after every command line of the tests below has run in it."""

    copy: Path
    #: memevals-compare's table, memevals-diff's output, and what `-m memevals.lm_eval_tasks`
    #: printed
    table: str
    diff_out: str
    include_printed: str

    @property
    def logs(self) -> Path:
        return self.copy / "logs"

    @property
    def diff_json(self) -> Path:
        return self.copy / "diff.json"

    @property
    def include(self) -> Path:
        return self.copy / "memevals" / "lm_eval_tasks"

    @property
    def lm_eval_out(self) -> Path:
        return self.copy / "lm-eval"

    @property
    def judged(self) -> Path:
        return self.copy / "judged"


@pytest.fixture(scope="module")
def toy_runs(tmp_path_factory: pytest.TempPathFactory) -> ToyRuns:
    """One copy and one interpreter for the whole toy (its start and the generator were most of
    each test's time when every test made its own): the generator first, then the real Inspect
    CLI (tests/support/inspect_offline.py, the lookup provider registered first) at three
    context settings, memevals-compare and memevals-diff, then the include path, lm-eval and
    the post-hoc judge. The commands write only outside the copy's package folder, so the
    zero-shared-edits check reads the package after all of them."""
    copy = make_copy(tmp_path_factory.mktemp("toy"))
    logs = copy / "logs"
    (copy / "rename_logs.py").write_text(RENAME_LOGS, encoding="utf-8")
    (copy / "judge.py").write_text(JUDGE, encoding="utf-8")
    full, none = logs / "full" / "run.eval", logs / "none" / "run.eval"
    include = copy / "memevals" / "lm_eval_tasks"
    out = run(
        GENERATE,
        *(
            [str(copy / "lookup_model.py"), "eval", "toy", "--model", "lookup/facts",
             "-T", f"context={context}", "--log-dir", str(logs / context), "--display", "none"]
            for context in ("full", "none", "rag")
        ),
        [str(BIN / "memevals-compare"), "--no-png", "--wide", str(logs)],
        [str(copy / "rename_logs.py"), str(logs)],  # full's and none's log: a name known here
        [str(BIN / "memevals-diff"), str(full), str(none), "--json", str(copy / "diff.json")],
        ["-m", "memevals.lm_eval_tasks"],
        ["-m", "lm_eval", "--model", "dummy", "--tasks", "toy", "--include_path", str(include),
         "--output_path", str(copy / "lm-eval"), "--log_samples"],
        [str(copy / "judge.py"), str(copy / "lm-eval"), "--grader", "scripted/strict",
         "--output-dir", str(copy / "judged")],
        root=copy,
    )  # fmt: skip
    return ToyRuns(copy=copy, table=out[4], diff_out=out[6], include_printed=out[7])


def test_the_toy_touches_one_folder_and_one_module(toy_runs: ToyRuns) -> None:
    """Zero shared edits: every file of the package is unchanged in the copy (after the
    generator and every command of the toy's runs); the toy adds its folder and its thin module
    by hand, and the generator adds its lm-eval YAML."""
    copy = toy_runs.copy
    original, now = SNAPSHOTS[copy], _files(copy / "memevals")
    changed = sorted(p for p in original if now.get(p) != original[p])
    assert changed == []
    by_hand = sorted(_files(TOY / "memevals"))
    generated = sorted(p for p in now if p not in original and p not in by_hand)
    assert sorted(p for p in now if p not in original) == sorted([*by_hand, *generated])
    assert all(p.startswith("benchmarks/toy/") for p in by_hand if p != "inspect_tasks/toy.py")
    assert generated == [
        "lm_eval_tasks/toy/_toy_base.yaml",
        "lm_eval_tasks/toy/toy.yaml",
        "lm_eval_tasks/toy/toy_arithmetic.yaml",
        "lm_eval_tasks/toy/toy_recall.yaml",
    ]
    print(
        f"\na new benchmark touches {len(by_hand)} files written by hand "
        f"({len(by_hand) - 1} in its folder + 1 thin Inspect module), {len(generated)} generated "
        f"lm-eval files, and 0 shared files"
    )


def test_inspect_eval_compare_and_diff_find_the_toy(toy_runs: ToyRuns) -> None:
    logs, table, out = toy_runs.logs, toy_runs.table, toy_runs.diff_out
    # found by name: the bare task name resolved to the toy's thin module
    means = {}
    for context in ("full", "none", "rag"):
        [path] = (logs / context).glob("*.eval")
        log = read_eval_log(str(path))
        assert log.status == "success" and log.eval.task.rsplit("/", 1)[-1] == "toy"
        assert log.eval.task_version == "0.1"  # the toy's eval.yaml version, through its record
        assert log.results is not None
        means[context] = log.results.scores[0].metrics["mean"].value
    # the lookup model answers the seven recall questions from the facts, never the sums
    assert means == pytest.approx({"full": 7 / 10, "none": 0.0, "rag": 7 / 10})

    section = table[table.index("### toy") :]
    header = next(line for line in section.splitlines() if line.startswith("| model"))
    # its declared score, and its categories in its declared order (recall before arithmetic,
    # not by name)
    assert (
        header.index("| exact |") < header.index("exact recall") < header.index("exact arithmetic")
    )
    rows = {line.split(" | ")[3]: line for line in section.splitlines() if "lookup/facts" in line}
    # its own context defaults: the rag run is labelled with the toy's unit, k and retriever
    assert sorted(rows) == ["full", "none", "rag(fact, k=2, overlap)"]
    assert "| 10 | 0.700 |" in rows["rag(fact, k=2, overlap)"]

    assert "A: context=full  vs  B: context=none" in out  # one declared factor: no refusal
    [comparison] = json.loads(toy_runs.diff_json.read_text(encoding="utf-8"))
    assert comparison["benchmark"] == "toy" and comparison["factor"] == "context"
    by_category = {r["category"]: r for r in comparison["scores"]["exact"]["rows"]}
    assert list(by_category) == ["overall", "recall", "arithmetic"]
    assert [(r["n"], r["clusters"], r["difference"]) for r in by_category.values()] == [
        (10, 4, pytest.approx(-0.7)),
        (7, 4, -1.0),
        (3, 3, 0.0),
    ]


def test_lm_eval_and_the_posthoc_judge_find_the_toy(toy_runs: ToyRuns) -> None:
    out, judged = toy_runs.lm_eval_out, toy_runs.judged
    assert Path(toy_runs.include_printed.strip()) == toy_runs.include
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    [results_file] = run_dir.glob("results_*.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))["results"]
    # the dummy model always replies "lol": right only for c1's greeting (a recall question)
    assert results["toy_recall"]["exact,none"] == pytest.approx(1 / 7)
    assert results["toy_arithmetic"]["exact,none"] == 0.0
    assert results["toy"]["exact,none"] == pytest.approx(1 / 10)  # weighted by size

    summary = json.loads((judged / "judge_toy.json").read_text(encoding="utf-8"))
    assert summary["benchmark"] == "toy" and summary["samples"] == 10
    values = {(m["scorer"], m["metric"]): m["value"] for m in summary["metrics"]}
    assert values[("toy_exact", "mean")] == pytest.approx(1 / 10)
    # the scripted grader credits a reply equal to the reference: the same one question
    assert values[("llm_judge", "mean")] == pytest.approx(1 / 10)
    rows = [json.loads(x) for x in (judged / "judge_toy.jsonl").read_text().splitlines()]
    assert {r["id"] for r in rows if r["label"] == "correct"} == {"c1-q1"}
    assert {r["criterion"] for r in rows} == {"toy_exact"}  # the toy's own criterion


# --- every real benchmark stays within what the toy needs (issue 30, item 7) -------------------

#: A thin Inspect module's most lines (the toy's is 66; a benchmark that takes the agent mode
#: adds its five typed `agent_*` knobs and the mode's wiring, about 15 lines).
THIN_MODULE_LINES = 115
#: Files every benchmark folder has, as the toy's has them.
REQUIRED = frozenset({"README.md", "__init__.py", "eval.yaml", "record.py", "samples.py"})
#: A per-category task written by hand (declared_tasks makes them from the record).
HAND_WRITTEN_TASK = "fixed_param_task("
DECLARED = re.compile(r"^__all_tasks__ = (?:tasks\.)?declared_tasks\(\w+\)$", re.MULTILINE)
#: Benchmarks whose thin module is not done yet (issue 30): the check fails for them, and must
#: start passing (strict xfail) the moment one is, so its entry is removed here then.
NOT_YET_THIN: dict[str, str] = {}


def _kinds(names: list[str]) -> set[str]:
    return {Path(n).suffix for n in names}


def _option_tables(source: str) -> list[str]:
    """Module-level dicts named `*_OPTIONS` (an option table beside the options class)."""
    found: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        is_dict = isinstance(value, ast.Dict | ast.DictComp) or (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "dict"
        )
        if is_dict:
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            found += [n for n in names if n.endswith("_OPTIONS")]
    return found


def beyond_the_toy(package: Path, name: str, toy: Path = TOY / "memevals") -> list[str]:
    """What a benchmark's hand-written files have that the toy's do not need: a kind of file in
    its folder the toy has not (or a hand-written YAML or Markdown file besides eval.yaml and
    README.md), a missing record, samples, README or eval.yaml, a second Inspect module of
    its own, a per-category task written by hand or `__all_tasks__` not from
    `declared_tasks`, an Inspect module over `THIN_MODULE_LINES` lines, an option table in its
    lm-eval glue.

    Args:
        package: the `memevals` package folder.
        name: the benchmark (its folder, Inspect module and lm-eval folder are named so).
        toy: the toy's `memevals` folder.

    Returns:
        The problems, one line each.
    """
    problems: list[str] = []
    folder = sorted(p.name for p in (package / "benchmarks" / name).iterdir() if p.is_file())
    toy_folder = sorted(p.name for p in (toy / "benchmarks" / "toy").iterdir() if p.is_file())
    extra_kinds = _kinds(folder) - _kinds(toy_folder)
    if extra_kinds:
        problems.append(f"benchmarks/{name}: kinds of files the toy has not: {sorted(extra_kinds)}")
    texts = [n for n in folder if Path(n).suffix in (".md", ".yaml") and n not in REQUIRED]
    if texts:
        problems.append(f"benchmarks/{name}: hand-written text files besides the toy's: {texts}")
    if missing := sorted(REQUIRED - set(folder)):
        problems.append(f"benchmarks/{name}: no {', '.join(missing)}")
    # a longer benchmark name with this one as its prefix (locomo_plus for locomo) is not its
    longer = [p.name for p in (package / "benchmarks").glob(f"{name}_*") if p.is_dir()]
    own = sorted(
        p.name
        for p in (package / "inspect_tasks").glob(f"{name}_*.py")
        if not any(p.stem == o or p.stem.startswith(f"{o}_") for o in longer)
    )
    if own:
        problems.append(f"inspect_tasks: modules of {name} besides {name}.py: {own}")
    module = package / "inspect_tasks" / f"{name}.py"
    source = module.read_text("utf-8")
    if HAND_WRITTEN_TASK in source:
        problems.append(f"inspect_tasks/{name}.py: a per-category task written by hand")
    if not DECLARED.search(source):
        problems.append(f"inspect_tasks/{name}.py: __all_tasks__ is not declared_tasks(...)")
    if (lines := len(source.splitlines())) > THIN_MODULE_LINES:
        problems.append(f"inspect_tasks/{name}.py: {lines} lines (at most {THIN_MODULE_LINES})")
    for path in sorted((package / "lm_eval_tasks" / name).glob("*.py")):
        if tables := _option_tables(path.read_text("utf-8")):
            problems.append(f"lm_eval_tasks/{name}/{path.name}: option tables {tables}")
    return problems


def _real_benchmarks() -> list[Any]:
    from memevals.benchmarks import records

    return [
        pytest.param(
            name,
            marks=[pytest.mark.xfail(strict=True, reason=NOT_YET_THIN[name])]
            if name in NOT_YET_THIN
            else [],
        )
        for name in sorted(records())
    ]


@pytest.mark.parametrize("name", _real_benchmarks())
def test_every_real_benchmark_stays_within_what_the_toy_needs(name: str) -> None:
    """Each real benchmark's hand-written files are of the kinds the toy's are, its thin
    Inspect module writes no per-category task and is at most THIN_MODULE_LINES lines, and its
    lm-eval glue has no option table (issue 30: thin means thin)."""
    assert beyond_the_toy(REPO / "memevals", name) == []


def test_the_check_finds_what_the_toy_does_not_need(tmp_path: Path) -> None:
    """A made-up benchmark with one of each thing the toy does not need: every one is named."""
    package = tmp_path / "memevals"
    shutil.copytree(TOY / "memevals", package)
    folder = package / "benchmarks" / "fat"
    (package / "benchmarks" / "toy").rename(folder)
    (folder / "record.py").unlink()
    (folder / "prompts.txt").write_text("a prompt\n", encoding="utf-8")
    (folder / "tasks.yaml").write_text("tasks: []\n", encoding="utf-8")
    thin = (package / "inspect_tasks" / "toy.py").read_text("utf-8")
    (package / "inspect_tasks" / "toy.py").unlink()
    assert "__all_tasks__ = declared_tasks(toy)" in thin
    thin = thin.replace("declared_tasks(toy)", "['fat', 'fat_recall']")
    body = thin + "\nfat_recall = fixed_param_task(fat, 'fat_recall', {}, '')\n"
    (package / "inspect_tasks" / "fat.py").write_text(body + "#\n" * 60, encoding="utf-8")
    (package / "inspect_tasks" / "fat_images.py").write_text("", encoding="utf-8")
    (package / "benchmarks" / "fat_plus").mkdir()
    (package / "inspect_tasks" / "fat_plus.py").write_text("", encoding="utf-8")  # not fat's
    (package / "lm_eval_tasks" / "fat").mkdir(parents=True)
    (package / "lm_eval_tasks" / "fat" / "utils.py").write_text(
        "FAT_OPTIONS = {'seed': 0}\nNAMES_OPTIONS = ('seed',)\nMORE_OPTIONS: dict = dict(a=1)\n",
        encoding="utf-8",
    )
    lines = len(body.splitlines()) + 60
    assert beyond_the_toy(package, "fat") == [
        "benchmarks/fat: kinds of files the toy has not: ['.txt']",
        "benchmarks/fat: hand-written text files besides the toy's: ['tasks.yaml']",
        "benchmarks/fat: no record.py",
        "inspect_tasks: modules of fat besides fat.py: ['fat_images.py']",
        "inspect_tasks/fat.py: a per-category task written by hand",
        "inspect_tasks/fat.py: __all_tasks__ is not declared_tasks(...)",
        f"inspect_tasks/fat.py: {lines} lines (at most {THIN_MODULE_LINES})",
        "lm_eval_tasks/fat/utils.py: option tables ['FAT_OPTIONS', 'MORE_OPTIONS']",
    ]

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

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

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
import sys

from inspect_ai.model import ModelAPI, ModelOutput, modelapi


class Lookup(ModelAPI):
    def __init__(self, model_name, base_url=None, api_key=None, config=None, **model_args):
        super().__init__(model_name, base_url, api_key, [], config)

    async def generate(self, input, tools, tool_choice, config):
        system = "".join(m.text for m in input if m.role == "system")
        user = "".join(m.text for m in input if m.role == "user")
        facts = dict(re.findall(r"^- (\\w+): (.+)$", system, re.M))
        asked = re.search(r"What is the (\\w+)\\?", user)
        reply = facts.get(asked.group(1), "unknown") if asked else "unknown"
        return ModelOutput.from_content(model="lookup/facts", content=reply)


@modelapi(name="lookup")
def lookup():
    return Lookup


if __name__ == "__main__":
    from inspect_offline import main

    main()
"""


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


#: The package's files as copied, before the toy was added (test -> snapshot).
SNAPSHOTS: dict[Path, dict[str, bytes]] = {}


@pytest.fixture
def copy(tmp_path: Path) -> Iterator[Path]:
    """A copy of the package with the toy benchmark added, its lm-eval YAML generated."""
    shutil.copytree(
        REPO / "memevals", tmp_path / "memevals", ignore=shutil.ignore_patterns("__pycache__")
    )
    SNAPSHOTS[tmp_path] = _files(tmp_path / "memevals")
    shutil.copytree(TOY / "memevals", tmp_path / "memevals", dirs_exist_ok=True)
    run(["-m", "memevals.lm_eval_tasks", "generate"], tmp_path)
    (tmp_path / "lookup_model.py").write_text(textwrap.dedent(LOOKUP_MODEL), encoding="utf-8")
    yield tmp_path


def env(root: Path) -> dict[str, str]:
    """The copy first on the path (before the installed checkout), the test helpers after."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(TESTS / "support")])}


def run(args: list[str], root: Path, exe: str | Path = sys.executable) -> str:
    proc = subprocess.run(
        [str(exe), *args], cwd=root, env=env(root), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{args}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_the_toy_touches_one_folder_and_one_module(copy: Path) -> None:
    """Zero shared edits: every file of the package is unchanged in the copy; the toy adds its
    folder and its thin module by hand, and the generator adds its lm-eval YAML."""
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


def test_inspect_eval_compare_and_diff_find_the_toy(copy: Path) -> None:
    logs = copy / "logs"
    for context in ("full", "none", "rag"):
        # the real Inspect CLI (tests/support/inspect_offline.py), the lookup provider registered
        # first
        run(
            [str(copy / "lookup_model.py"), "eval", "toy", "--model", "lookup/facts",
             "-T", f"context={context}", "--log-dir", str(logs / context), "--display", "none"],
            copy,
        )  # fmt: skip
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

    table = run(["--no-png", "--wide", str(logs)], copy, BIN / "memevals-compare")
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

    full, none = (next((logs / c).glob("*.eval")) for c in ("full", "none"))
    diff_json = copy / "diff.json"
    out = run([str(full), str(none), "--json", str(diff_json)], copy, BIN / "memevals-diff")
    assert "A: context=full  vs  B: context=none" in out  # one declared factor: no refusal
    [comparison] = json.loads(diff_json.read_text(encoding="utf-8"))
    assert comparison["benchmark"] == "toy" and comparison["factor"] == "context"
    by_category = {r["category"]: r for r in comparison["scores"]["exact"]["rows"]}
    assert list(by_category) == ["overall", "recall", "arithmetic"]
    assert [(r["n"], r["clusters"], r["difference"]) for r in by_category.values()] == [
        (10, 4, pytest.approx(-0.7)),
        (7, 4, -1.0),
        (3, 3, 0.0),
    ]


def test_lm_eval_and_the_posthoc_judge_find_the_toy(copy: Path) -> None:
    include = run(["-m", "memevals.lm_eval_tasks"], copy).strip()
    assert Path(include) == copy / "memevals" / "lm_eval_tasks"
    out = copy / "lm-eval"
    run(
        ["-m", "lm_eval", "--model", "dummy", "--tasks", "toy", "--include_path", include,
         "--output_path", str(out), "--log_samples"],
        copy,
    )  # fmt: skip
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    [results_file] = run_dir.glob("results_*.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))["results"]
    # the dummy model always replies "lol": right only for c1's greeting (a recall question)
    assert results["toy_recall"]["exact,none"] == pytest.approx(1 / 7)
    assert results["toy_arithmetic"]["exact,none"] == 0.0
    assert results["toy"]["exact,none"] == pytest.approx(1 / 10)  # weighted by size

    judged = copy / "judged"
    script = (
        "import sys, scripted_judge; from memevals.tools.judge import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    run(
        ["-c", script, str(run_dir), "--grader", "scripted/strict", "--output-dir", str(judged)],
        copy,
    )
    summary = json.loads((judged / "judge_toy.json").read_text(encoding="utf-8"))
    assert summary["benchmark"] == "toy" and summary["samples"] == 10
    values = {(m["scorer"], m["metric"]): m["value"] for m in summary["metrics"]}
    assert values[("toy_exact", "mean")] == pytest.approx(1 / 10)
    # the scripted grader credits a reply equal to the reference: the same one question
    assert values[("judge", "mean")] == pytest.approx(1 / 10)
    rows = [json.loads(x) for x in (judged / "judge_toy.jsonl").read_text().splitlines()]
    assert {r["id"] for r in rows if r["label"] == "correct"} == {"c1-q1"}
    assert {r["criterion"] for r in rows} == {"toy_exact"}  # the toy's own criterion

"""memevals-diff (memevals.tools.diff): paired comparison of runs over the same questions.

Scripted providers answer LoCoMo questions right or wrong on exactly chosen questions, so the
flipped questions, the difference and its sign are known in advance; a difference concentrated
in one conversation must get a wider cluster-bootstrap interval than the same difference spread
over ten. Unfair comparisons (another context mode, other samples) are refused and named. The
command also runs on real `inspect eval` logs and real `lm_eval` samples files made through the
two command lines.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_python
from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from lm_eval_support import inspect_prompt, run_inspect

from memevals.benchmarks.locomo.prompts import prediction_for_scoring
from memevals.scorers import locomo_f1
from memevals.tools.diff import (
    FLIP_COLUMNS,
    Run,
    RunSample,
    compare_runs,
    find_mismatches,
    load_runs,
    main,
)

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
WRONG = "xyzzy plugh"
PER_CONVERSATION = 12


def _f1(sample: Sample, reply: str) -> float:
    md = sample.metadata or {}
    return locomo_f1(prediction_for_scoring(reply, md), md["answer"], int(md["category_id"]))


def _questions(task: Task) -> dict[str, list[Sample]]:
    """PER_CONVERSATION questions of each of the ten conversations whose gold answer scores
    F1 1 and WRONG scores 0 (so a reply is exactly right or wrong), unique prompt text."""
    samples = list(task.dataset)
    counts = Counter(inspect_prompt(s.input) for s in samples)  # type: ignore[arg-type]
    out: dict[str, list[Sample]] = {}
    for s in samples:
        md = s.metadata or {}
        if md["category"] == "adversarial" or counts[inspect_prompt(s.input)] != 1:  # type: ignore[arg-type]
            continue
        if _f1(s, str(s.target)) != 1.0 or _f1(s, WRONG) != 0.0:
            continue
        picked = out.setdefault(str(md["conversation_id"]), [])
        if len(picked) < PER_CONVERSATION:
            picked.append(s)
    assert len(out) == 10 and all(len(v) == PER_CONVERSATION for v in out.values())
    return out


def _table(samples: list[Sample], right: set[str]) -> dict[str, str]:
    """Prompt text -> reply: the gold answer for ids in `right`, WRONG for the others."""
    return {
        inspect_prompt(s.input): str(s.target) if s.id in right else WRONG  # type: ignore[arg-type]
        for s in samples
    }


@pytest.fixture(scope="module")
def scripted_runs(
    locomo_task: Callable[..., Task], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Three runs over 120 LoCoMo questions (12 in each of 10 conversations), context=none.

    A: right on questions 0-1 of every conversation.
    concentrated: A's answers plus questions 2-11 of the first conversation (+10, one cluster).
    spread: conversations 1-5 gain questions 2 and 3 (+2 each); conversations 6-10 gain
    question 2 and lose question 0 (0 each). Same total, +10, over ten clusters.
    """
    task = locomo_task(context="none")
    convs = _questions(task)
    names = sorted(convs)
    samples = [s for c in names for s in convs[c]]
    ids = [str(s.id) for s in samples]

    def q(conv: int, *idx: int) -> set[str]:
        return {str(convs[names[conv]][i].id) for i in idx}

    base = set().union(*(q(c, 0, 1) for c in range(10)))
    concentrated = base | q(0, *range(2, 12))
    spread_gain = set().union(*(q(c, 2, 3) for c in range(5)), *(q(c, 2) for c in range(5, 10)))
    spread_loss = set().union(*(q(c, 0) for c in range(5, 10)))
    spread = (base | spread_gain) - spread_loss
    root = tmp_path_factory.mktemp("paired")
    paths = {}
    for name, right in (("a", base), ("concentrated", concentrated), ("spread", spread)):
        log = run_inspect(task, _table(samples, right), root / name, ids)
        paths[name] = log.location
    return {
        "paths": paths,
        "ids": ids,
        "gains_concentrated": concentrated - base,
        "gains_spread": spread_gain,
        "losses_spread": spread_loss,
        "root": root,
        "samples": samples,
    }


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_flips_difference_and_clustered_interval(
    scripted_runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = scripted_runs["paths"]
    out = tmp_path / "report"
    code = main(
        [
            p["a"],
            p["concentrated"],
            p["spread"],
            "--flips",
            str(out / "flips.csv"),
            "--json",
            str(out / "paired.json"),
            "--csv",
            str(out / "paired.csv"),
            "--png",
            str(out / "diff.png"),
        ]
    )
    stdout = capsys.readouterr().out
    assert code == 0
    assert "### f1 (0/1)" in stdout and "Differences between the runs" not in stdout

    flips = _rows(out / "flips.csv")
    assert list(flips[0]) == list(FLIP_COLUMNS)
    by_run: dict[str, set[tuple[str, str]]] = {}
    for row in flips:
        assert row["score"] == "f1"
        run_file = row["run_b"].rsplit("(", 1)[-1].rstrip(")")
        by_run.setdefault(run_file, set()).add((row["id"], row["better"]))
        gold = row["gold"]
        winner = row["reply_b"] if row["better"] == "B" else row["reply_a"]
        loser = row["reply_a"] if row["better"] == "B" else row["reply_b"]
        assert winner == gold and loser == WRONG
        assert row["cluster"] == row["id"].rsplit("-q", 1)[0]  # the host conversation
    conc_name = Path(p["concentrated"]).name
    spread_name = Path(p["spread"]).name
    assert by_run[conc_name] == {(i, "B") for i in scripted_runs["gains_concentrated"]}
    assert by_run[spread_name] == {(i, "B") for i in scripted_runs["gains_spread"]} | {
        (i, "A") for i in scripted_runs["losses_spread"]
    }

    data = json.loads((out / "paired.json").read_text(encoding="utf-8"))
    overall = {Path(c["run_b"]["path"]).name: c["scores"]["f1"]["rows"][0] for c in data}
    conc, spread = overall[conc_name], overall[spread_name]
    for row in (conc, spread):
        assert row["category"] == "overall" and row["n"] == 120 and row["clusters"] == 10
        assert row["mean_a"] == 20 / 120
        assert row["mean_b"] == 30 / 120
        assert row["difference"] == pytest.approx(10 / 120, abs=1e-15) and row["difference"] > 0
        assert row["binary"] is True and row["test"] == "cluster_sign_flip"
        assert row["ci_low"] <= row["difference"] <= row["ci_high"]
    assert (conc["a_better"], conc["b_better"]) == (0, 10)
    assert (spread["a_better"], spread["b_better"]) == (5, 15)
    width_conc = conc["ci_high"] - conc["ci_low"]
    width_spread = spread["ci_high"] - spread["ci_low"]
    assert width_conc > 2 * width_spread > 0
    # one conversation carries it all: the interval reaches zero; spread over ten, it does not
    assert conc["ci_low"] == 0.0 and spread["ci_low"] > 0.0
    assert conc["mde"] > spread["mde"]
    # the sign-flip p-value over ten clusters: concentrated = 2 of 2^1 patterns -> 1.0
    assert conc["p_value"] == 1.0 and spread["p_value"] == pytest.approx(2 / 32)

    table = _rows(out / "paired.csv")
    assert {r["category"] for r in table} >= {"overall", "single_hop"}
    holm = [float(r["holm_p"]) for r in table if r["category"] != "overall"]
    raw = [float(r["p_value"]) for r in table if r["category"] != "overall"]
    assert all(h >= r for h, r in zip(holm, raw, strict=True))

    png = (out / "diff.png").read_bytes()
    assert png[:8] == PNG_SIGNATURE
    from PIL import Image

    with Image.open(out / "diff.png") as img:
        img.verify()
        assert img.size[0] > 300 and img.size[1] > 200


def test_other_context_mode_is_refused_and_named(
    scripted_runs: dict[str, Any],
    locomo_task: Callable[..., Task],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ids = scripted_runs["ids"][:12]
    oracle = locomo_task(context="oracle")
    samples = [s for s in oracle.dataset if s.id in set(ids)]
    log = run_inspect(oracle, _table(samples, set(ids[:3])), tmp_path / "oracle", ids)
    a = scripted_runs["paths"]["a"]
    # only what memevals-diff prints is read below (the build and run above may log warnings,
    # to either stream, depending on what this worker's earlier runs set up)
    capsys.readouterr()

    assert main([a, log.location]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "refusing to compare" in captured.err
    assert "context settings: context: A='none', B='oracle'" in captured.err
    assert "sample set: 108 only in A" in captured.err
    assert "--allow-mismatch" in captured.err

    assert main([a, log.location, "--allow-mismatch"]) == 0
    out = capsys.readouterr().out
    table, _, notes = out.partition("Differences between the runs (compared anyway")
    assert "| overall | 12 | 1 |" in table
    assert "- context settings: context: A='none', B='oracle'" in notes
    assert "- sample set: 108 only in A" in notes


def _sample(sid: str, value: float, *, errored: bool = False, conv: str = "c1") -> RunSample:
    return RunSample(sid, "single_hop", conv, {"f1": value}, "r", "g", errored=errored)


def _run(samples: list[RunSample], **settings: Any) -> Run:
    groups = {
        "context settings": {"context": "none", **settings},
        "gold variant": {},
        "prompt settings": {},
    }
    return Run("x", "x", "inspect", "locomo", {s.id: s for s in samples}, groups)


def test_errored_and_unscored_samples_are_excluded_and_counted() -> None:
    a = _run([_sample("1", 1.0), _sample("2", 0.0, errored=True), _sample("3", 0.5, conv="c2")])
    b = _run([_sample("1", 0.0), _sample("2", 1.0), _sample("3", math.nan, conv="c2")])
    c = compare_runs(a, b, resamples=100)
    [table] = c.tables
    assert (table.errored, table.unscored) == (1, 1)
    [row] = table.rows  # one category: no per-category rows
    assert row.result.n == 1 and row.result.difference == -1.0
    assert c.mismatches == ()
    other = _run([_sample("1", 0.0), _sample("4", 1.0)], top_k=5)
    named = [str(m) for m in find_mismatches(a, other, ["f1"])]
    assert named == [
        "sample set: 2 only in A (2, 3); 1 only in B (4)",
        "context settings: top_k: A=None, B=5",
    ]


def test_epochs_are_averaged_per_question(locomo_task: Callable[..., Task], tmp_path: Path) -> None:
    """Two epochs, the first question right in one of them: its F1 is 0.5, one question."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ChatMessage, ModelOutput, get_model

    task = locomo_task(context="none")
    samples = list(task.dataset)[:2]
    first_prompt = inspect_prompt(samples[0].input)  # type: ignore[arg-type]
    calls: Counter[str] = Counter()

    def reply(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        prompt = inspect_prompt(messages)
        calls[prompt] += 1
        right = prompt == first_prompt and calls[prompt] == 1
        content = str(samples[0].target) if right else WRONG
        return ModelOutput.from_content(model="mockllm/model", content=content)

    [log] = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=reply),
        sample_id=[str(s.id) for s in samples],
        epochs=2,
        display="none",
        log_dir=str(tmp_path),
    )
    assert log.status == "success"
    [run] = load_runs([log.location])
    assert sorted(run.samples) == sorted(str(s.id) for s in samples)
    assert run.samples[str(samples[0].id)].scores["f1"] == 0.5
    assert run.samples[str(samples[1].id)].scores["f1"] == 0.0


def _folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


# ---------------------------------------------------------------------------------------------
# The real command lines

_INSPECT_TABLE_PROVIDER = '''
"""The real Inspect CLI with a `table/model` provider: replies from $PAIRED_REPLIES (question
-> reply, for the prompt that asks it), the default mockllm reply otherwise."""
import json, os, sys
sys.path.insert(0, {tests!r})
from scripted_api import run_inspect, scripted_provider

with open(os.environ["PAIRED_REPLIES"], encoding="utf-8") as fh:
    REPLIES = json.load(fh)

def table(messages, config):
    text = "".join(m.text for m in messages)
    asked = [reply for question, reply in REPLIES.items() if question in text]
    return asked[0] if len(asked) == 1 else "Default output from mockllm/model"

scripted_provider("table", table)
run_inspect()
'''


def test_real_inspect_cli_logs(
    data_dir: Path, locomo_task: Callable[..., Task], tmp_path: Path
) -> None:
    """Two providers through the real `inspect eval` (mockllm, and a table provider that knows
    the gold answers), then `python -m memevals.tools.diff` on the two logs."""
    limit = 6
    first = list(locomo_task(context="none").dataset)[:limit]
    replies = {str(s.metadata["question"]): str(s.target) for s in first}  # type: ignore[index]
    (tmp_path / "replies.json").write_text(json.dumps(replies), encoding="utf-8")
    script = tmp_path / "table_provider.py"
    provider = _INSPECT_TABLE_PROVIDER.format(tests=str(TESTS / "support"))
    script.write_text(provider, encoding="utf-8")
    env = {"PAIRED_REPLIES": str(tmp_path / "replies.json")}
    for model, folder in (("mockllm/model", "a"), ("table/model", "b")):
        args = ["eval", "memevals/locomo", "-T", "context=none", "--model", model]
        args += ["--limit", str(limit), "--log-dir", str(tmp_path / folder), "--display", "none"]
        cmd = [sys.executable, str(script), *args]
        proc = run_python(cmd, cwd=tmp_path, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]

    flips = tmp_path / "flips.csv"
    proc = run_python(
        [
            sys.executable,
            "-m",
            "memevals.tools.diff",
            str(tmp_path / "a"),
            str(tmp_path / "b"),
            "--flips",
            str(flips),
            "--resamples",
            "2000",
        ],
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "mockllm/model" in proc.stdout and "table/model" in proc.stdout
    [log_a] = (tmp_path / "a").glob("*.eval")
    [log_b] = (tmp_path / "b").glob("*.eval")
    f1 = {}
    for name, path in (("a", log_a), ("b", log_b)):
        log = read_eval_log(str(path))
        f1[name] = {str(s.id): s.scores["locomo_f1_scorer"].value for s in log.samples or []}
    expected = {i for i in f1["a"] if f1["a"][i] != f1["b"][i]}
    assert expected and {r["id"] for r in _rows(flips)} == expected
    mean_a = sum(f1["a"].values()) / limit  # type: ignore[arg-type]
    mean_b = sum(f1["b"].values()) / limit  # type: ignore[arg-type]
    assert f"| overall | {limit} | 1 | {mean_a:.3f} | {mean_b:.3f} | {mean_b - mean_a:+.3f} |" in (
        proc.stdout
    )
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"]["memevals-diff"] == "memevals.tools.diff:main"


_LM_EVAL_TABLE_MODEL = '''
"""The real lm-eval CLI with a `table` model: the gold answer (doc target) for the ids in the
file named by model_args `ids`, "lol" (lm-eval's dummy reply) otherwise."""
import json
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

@register_model("table")
class TableLM(LM):
    def __init__(self, ids="", **kwargs):
        super().__init__()
        with open(ids, encoding="utf-8") as fh:
            self.ids = set(json.load(fh))

    @classmethod
    def create_from_arg_string(cls, arg_string, additional_config=None):
        args = dict(kv.split("=", 1) for kv in arg_string.split(",") if kv)
        return cls(**args)

    def generate_until(self, requests, disable_tqdm=False):
        return [r.doc["target"] if r.doc["id"] in self.ids else "lol" for r in requests]

    def loglikelihood(self, requests, disable_tqdm=False):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError

from lm_eval.__main__ import cli_evaluate
cli_evaluate()
'''


#: the dummy model's run, shared with test_diff_factors' lm-eval test (tests/tools/conftest.py)
LM_EVAL_NONE = [
    "--model", "dummy", "--tasks", "locomo_temporal,locomo_open_domain", "--limit", "4",
    "--metadata", json.dumps({"context": "none"}),
]  # fmt: skip


def test_real_lm_eval_cli_samples(
    data_dir: Path, tmp_path: Path, shared_lm_eval: Callable[[list[str]], Path]
) -> None:
    """Two runs through the real `lm_eval` command line (its dummy model, and a table model
    right on known questions), compared from their samples folders."""
    from memevals.lm_eval_tasks import include_path

    metadata = ["--metadata", json.dumps({"context": "none"})]
    a_dir = shared_lm_eval(LM_EVAL_NONE)
    right = ["conv-26-q0", "conv-26-q1"]
    (tmp_path / "ids.json").write_text(json.dumps(right), encoding="utf-8")
    script = tmp_path / "table_lm.py"
    script.write_text(_LM_EVAL_TABLE_MODEL, encoding="utf-8")
    proc = run_python(
        [
            sys.executable,
            str(script),
            "--model",
            "table",
            "--model_args",
            f"ids={tmp_path / 'ids.json'}",
            "--tasks",
            "locomo_temporal,locomo_open_domain",
            "--limit",
            "4",
            *metadata,
            "--include_path",
            include_path(),
            "--output_path",
            str(tmp_path / "b" / "out"),
            "--log_samples",
        ],
        cwd=_folder(tmp_path / "b"),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    [b_dir] = [p for p in (tmp_path / "b" / "out").iterdir() if p.is_dir()]

    flips = tmp_path / "flips.csv"
    proc = run_python(
        [
            sys.executable,
            "-m",
            "memevals.tools.diff",
            str(a_dir),
            str(b_dir),
            "--flips",
            str(flips),
            "--resamples",
            "2000",
        ],
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    rows = _rows(flips)
    assert {(r["id"], r["score"], r["better"]) for r in rows if r["score"] == "f1"} == {
        (i, "f1", "B") for i in right
    }
    assert all(r["reply_a"] == "lol" for r in rows)
    assert "| overall | 8 |" in proc.stdout and "### f1" in proc.stdout
    assert "dummy" in proc.stdout and "table ids=" in proc.stdout


def test_unreadable_inputs_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "missing.eval"), str(tmp_path / "other.eval")])
    assert exc.value.code == 2
    bad = tmp_path / "samples_locomo_temporal_2026-01-01T00-00-00.000000.jsonl"
    bad.write_text('{"doc": {"id": "x"}}\n', encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main([str(bad), str(bad)])
    assert exc.value.code == 2


def test_memevals_compare_paired_is_the_paired_tool(
    scripted_runs: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """`memevals-compare --paired A B` prints exactly what `memevals-diff A B` prints."""
    from memevals.tools.compare import main as compare_main

    paths = scripted_runs["paths"]
    assert main([paths["a"], paths["spread"]]) == 0
    direct = capsys.readouterr().out
    assert compare_main(["--paired", paths["a"], paths["spread"]]) == 0
    assert capsys.readouterr().out == direct
    assert "| overall |" in direct

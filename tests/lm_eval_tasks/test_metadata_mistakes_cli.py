"""What a new user's `--metadata` mistakes give through the real `lm_eval` command (its console
script, in this process): an option a task's YAML fixes (`categories`, `variant`: Python's "got
multiple values for keyword argument" from lm-eval's call of the loader before) and a context
option given to the event summary (ignored before: the whole conversation ran) are refused in
one line naming the fix before any document is built; `--num_fewshot 2` (before: two other
questions, each with its whole conversation, put silently before the prompt) is refused before
any model call; an Inspect-only option (`max_tokens`, `judge`: dropped without a word before)
runs, with one warning line each saying why and what to use. And a run of a memory system
records it as the Inspect task does (name, version, arguments), so `memevals-diff` pairs it with
an Inspect run of the same system as a comparison of models (it refused before: "the runs differ
in more than one factor (model, memory system)").
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_support import run_python
from shared_runs import SharedRuns

from memevals.lm_eval_tasks import include_path

pytest.importorskip("lm_eval")

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def _lm_eval(
    task: str, metadata: dict[str, object], cwd: Path, *extra: str
) -> tuple[int, str, Path]:
    """`lm_eval --model dummy` on one document of `task`: (exit status, stderr, output dir)."""
    out = cwd / "out"
    res = run_python(
        [
            str(Path(sys.executable).parent / "lm_eval"),
            *("--model", "dummy", "--tasks", task, "--limit", "1"),
            *("--include_path", include_path(), "--metadata", json.dumps(metadata)),
            *("--output_path", str(out), *extra),
        ],
        cwd=cwd,
        env={**OFFLINE, "MEMEVALS_CACHE_DIR": str(cwd / "cache")},
        timeout=600,
    )
    return res.returncode, res.stderr, out


def _refusal(task: str, metadata: dict[str, object], cwd: Path, *extra: str) -> str:
    """The last line of a run that must stop before any result (lm-eval's own traceback)."""
    code, err, out = _lm_eval(task, metadata, cwd, *extra)
    assert code == 1, err[-3000:]
    assert not out.exists()
    last = err.strip().splitlines()[-1]
    assert err.count(last.split(": ", 1)[1]) == 1, err[-3000:]  # said once
    return last


@pytest.mark.parametrize(
    ("task", "metadata", "fixed", "meant"),
    [
        (
            "locomo_single_hop",
            {"categories": "temporal"},
            "categories='single_hop'",
            "locomo_temporal",
        ),
        # refused before LongMemEval's files are read (the shared data has none)
        (
            "longmemeval_s_abstention",
            {"variant": "oracle"},
            "variant='s'",
            "longmemeval_oracle_abstention",
        ),
    ],
)
def test_a_key_the_task_fixes_is_one_line_naming_the_task(
    task: str, metadata: dict[str, object], fixed: str, meant: str, tmp_path: Path
) -> None:
    [(key, value)] = metadata.items()
    last = _refusal(task, metadata, tmp_path)
    assert last == (
        f"memevals.lm_eval_tasks.option_checks.OptionError: {task}: --metadata "
        f"{key}={value!r}: each lm-eval task fixes it (this one {fixed}); "
        f"choose the tasks with --tasks instead, e.g. --tasks {meant}"
    )


def test_few_shot_examples_are_refused(data_dir: Path, tmp_path: Path) -> None:
    last = _refusal("locomo_single_hop", {}, tmp_path, "--num_fewshot", "2")
    assert last == (
        "memevals.lm_eval_tasks.option_checks.OptionError: locomo_single_hop: --num_fewshot 2: "
        "the memevals tasks take no few-shot examples (each would be another question with its "
        "whole conversation, drawn from the test documents); run without --num_fewshot"
    )


def test_event_summary_refuses_a_context_option(data_dir: Path, tmp_path: Path) -> None:
    last = _refusal("locomo_event_summary", {"context": "rag", "top_k": 5}, tmp_path)
    assert last == (
        "memevals.lm_eval_tasks.option_checks.OptionError: locomo_event_summary: "
        "context='rag', top_k=5: the event summary reads the whole conversation at once, so it "
        "takes no context or memory-system option; run it without them (an lm_eval call of its "
        "own when other tasks need them)"
    )


def test_inspect_only_options_run_with_one_warning_each(data_dir: Path, tmp_path: Path) -> None:
    code, err, out = _lm_eval(
        "locomo_single_hop", {"max_tokens": 100, "judge": "official"}, tmp_path
    )
    assert code == 0, err[-3000:]
    assert out.is_dir()
    warned = [line for line in err.splitlines() if "is ignored:" in line]
    assert warned == [
        "locomo[single_hop]: --metadata key 'max_tokens' is ignored: lm-eval's answer length is "
        "the YAML's generation_kwargs: set it with --gen_kwargs max_gen_toks=N",
        "locomo[single_hop]: --metadata key 'judge' is ignored: not an lm-eval option: lm-eval "
        "runs are judged afterwards (python -m memevals.tools.judge)",
    ]


def test_a_memory_run_pairs_with_the_inspect_run_of_the_same_system(
    shared_runs: SharedRuns, data_dir: Path, tmp_path: Path
) -> None:
    inspect_run = shared_runs.inspect(
        [
            *("eval", "memevals/locomo_temporal", "--model", "mockllm/model", "--limit", "1"),
            *("-T", "memory=bm25", "--log-dir", "logs", "--display", "none"),
        ],
        env={**OFFLINE, "MEMEVALS_CACHE_DIR": "{run}/cache"},
    )
    assert inspect_run.returncode == 0, inspect_run.stderr[-3000:]
    [log] = inspect_run.logs()
    code, err, out = _lm_eval("locomo_temporal", {"memory": "bm25"}, tmp_path, "--log_samples")
    assert code == 0, err[-3000:]
    [samples] = out.glob("*/samples_locomo_temporal_*.jsonl")
    doc = json.loads(samples.read_text(encoding="utf-8").splitlines()[0])["doc"]
    metadata = doc["metadata"] if isinstance(doc["metadata"], dict) else json.loads(doc["metadata"])
    assert {k: metadata[k] for k in ("memory", "memory_version", "memory_args")} == {
        "memory": "bm25",
        "memory_version": "2",
        "memory_args": {"unit": "auto"},
    }
    diff = run_python(
        [str(Path(sys.executable).parent / "memevals-diff"), str(log), str(samples)],
        cwd=tmp_path,
        env=OFFLINE,
    )
    assert diff.returncode == 0, (diff.stdout + diff.stderr)[-3000:]
    assert (
        "The runs differ in one declared factor, the model (model: A='mockllm/model', "
        "B='dummy'); everything else is the same."
    ) in diff.stdout, diff.stdout[-3000:]

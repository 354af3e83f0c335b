"""Acceptance (issue 28): a memory system that returns nothing for a third of the LoCoMo
questions runs to completion through the real `inspect eval` and `lm_eval` command lines, with
those samples scored (not errors) and logged as empty retrievals (`memory_items` and
`memory_returned` 0, in the sample's metadata); a question the system raises on is still an
error of that sample (Inspect; lm-eval stops the run, see test_locomo_empty_memory.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_support import run_inspect_cli
from inspect_ai.log import read_eval_log
from lm_eval_support import run_lm_eval_cli, samples_of
from scripted_memory import register_sparse_system

from memevals.benchmarks.locomo.samples import LocomoOptions, build
from memevals.core.memory_harness import empty_retrievals
from memevals.core.memory_options import MemoryOptions
from memevals.core.prompt_item import PromptItem

LIMIT = 9


def _first_samples() -> list[PromptItem]:
    """The first single-hop samples both frameworks run, as context=none builds them."""
    items = build(LocomoOptions(categories="single_hop", memory=MemoryOptions(context="none")))
    out = items.items[:LIMIT]
    # each question asked once, so the script is exact
    assert len({i.metadata["question"] for i in out}) == LIMIT
    return out


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment that makes the CLIs find `scripted_sparse`, with a cache of this test."""
    env = {
        "PYTHONPATH": register_sparse_system(tmp_path / "registry"),
        "MEMEVALS_CACHE_DIR": str(tmp_path / "cache"),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # the CLIs run in this process: the registry is found on sys.path, not through PYTHONPATH
    for entry in env["PYTHONPATH"].split(os.pathsep):
        monkeypatch.syspath_prepend(entry)
    return env


def test_empty_retrievals_are_scored_in_both_clis(scripted: dict[str, str], tmp_path: Path) -> None:
    none = _first_samples()
    ids = [i.id for i in none]
    empty_ids = set(ids[::3])  # a third of the questions
    failing_id = ids[4]
    questions = {i.id: str(i.metadata["question"]) for i in none}
    no_context = {i.id: i.user for i in none}
    args = tmp_path / "args.json"
    args.write_text(
        json.dumps(
            {
                "empty_on": sorted(questions[s] for s in empty_ids),
                "fail_on": [questions[failing_id]],
            }
        )
    )

    # Inspect: default protocol (official), the failing question too
    done = run_inspect_cli(
        [
            "eval",
            "memevals/locomo",
            "--model",
            "mockllm/model",
            "-T",
            "categories=single_hop",
            "-T",
            "memory=scripted_sparse",
            "-T",
            f"memory_args={args}",
            "--limit",
            str(LIMIT),
            "--no-fail-on-error",
            "--display",
            "none",
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        cwd=tmp_path,
        env=scripted,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success"
    assert log.samples is not None
    assert [str(s.id) for s in log.samples] == ids
    for sample in log.samples:
        sid = str(sample.id)
        if sid == failing_id:
            assert sample.error is not None and not sample.scores
            assert (
                f"scripted_sparse: retrieval for {questions[sid]!r} in conv-26 failed: "
                "TimeoutError: scripted backend timed out on"
            ) in sample.error.message
            continue
        assert sample.error is None, sid
        assert sample.scores is not None
        f1 = sample.scores["locomo_f1_scorer"].value
        assert isinstance(f1, float) and f1 == f1  # scored, not NaN
        memory = sample.scores["memory_system"].metadata
        assert memory is not None
        md = sample.metadata
        want = 0 if sid in empty_ids else 5
        assert (md["memory_items"], md["memory_returned"]) == (want, want), sid
        assert (memory["memory_items"], memory["memory_returned"]) == (want, want), sid
        [user] = [m.text for m in sample.messages if m.role == "user"]
        if sid in empty_ids:
            # exactly the context=none message: the question alone
            assert md["retrieved_ids"] == [] and md["memory_context_tokens"] == 0
            assert user == no_context[sid]
        else:
            assert len(md["retrieved_ids"]) == 5
            assert user != no_context[sid] and user.endswith(no_context[sid])
    inspect_records = [s.metadata for s in log.samples if s.error is None]
    assert empty_retrievals(inspect_records) == 3

    # lm-eval: same samples, same empty ones, every one scored
    run_dir = run_lm_eval_cli(
        [
            "--model",
            "dummy",
            "--tasks",
            "locomo_single_hop",
            "--limit",
            str(LIMIT),
            "--metadata",
            json.dumps(
                {
                    "memory": "scripted_sparse",
                    "memory_args": {"empty_on": sorted(questions[s] for s in empty_ids)},
                }
            ),
        ],
        tmp_path,
    )
    logged = samples_of(run_dir, "locomo_single_hop")
    assert [s["doc"]["id"] for s in logged] == ids
    records = []
    for s in logged:
        md = json.loads(s["doc"]["metadata"])
        records.append(md)
        want = 0 if s["doc"]["id"] in empty_ids else 5
        assert (md["memory_items"], md["memory_returned"]) == (want, want)
        assert isinstance(s["f1"], float)
        by_inspect = next(x for x in log.samples if str(x.id) == s["doc"]["id"])
        if s["doc"]["id"] != failing_id:
            # the same document text as the Inspect sample's one user message
            [user] = [m.text for m in by_inspect.messages if m.role == "user"]
            assert (s["doc"]["system"], s["doc"]["user"]) == ("", user)
    assert empty_retrievals(records) == 3

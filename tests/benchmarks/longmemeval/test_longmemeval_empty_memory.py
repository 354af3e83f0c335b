"""An empty memory result is a result (LongMemEval): a system that returns no items for a
question leaves that sample exactly as context=none renders it (protocol=official: upstream's
no-retrieval prompt, step by step or not, either history format; protocol=memevals: the
question alone), with `memory_items` and `memory_returned` 0 and nothing shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scripted_memory import register_sparse_system

from memevals.benchmarks.longmemeval.memory import HISTORY_INTRO
from memevals.benchmarks.longmemeval.samples import LongMemEvalOptions, build
from memevals.core.memory_harness import empty_retrievals
from memevals.core.memory_options import MemoryOptions

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture(autouse=True)
def _sparse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    register_sparse_system(tmp_path / "registry")
    monkeypatch.syspath_prepend(str(tmp_path / "registry"))


def _build(memory: MemoryOptions, **options: Any) -> Any:
    return build(
        LongMemEvalOptions(
            variant="s", memory=memory, data_dir=str(FIXTURES), verify_checksum=False, **options
        )
    )


@pytest.mark.parametrize(
    "options",
    [
        {"protocol": "official"},
        {"protocol": "official", "step_by_step": True},
        {"protocol": "official", "history_format": "text"},
        {"protocol": "memevals"},
    ],
)
def test_empty_retrieval_renders_as_context_none(options: dict[str, Any]) -> None:
    none = {i.id: i for i in _build(MemoryOptions(context="none"), **options).items}
    questions = [str(i.metadata["question"]) for i in none.values()]
    empty_on = questions[::2]
    memory = MemoryOptions(
        memory="scripted_sparse", memory_args={"empty_on": empty_on}, memory_cache=False
    )
    built = _build(memory, **options)
    assert built.subject is not None
    filled = [built.subject.fill(i) for i in built.items]
    assert len(filled) == 16
    for got in filled:
        want, md = none[got.id], got.metadata
        if md["question"] in empty_on:
            assert (got.system, got.user) == ("", want.user)
            assert (md["memory_items"], md["memory_returned"], md["memory_cut"]) == (0, 0, 0)
            assert (md["n_sessions_shown"], md["session_ids_shown"]) == (0, [])
            assert md["retrieved_ids"] == []
        else:
            # not vacuous: the items are shown, so the message is not the no-context one
            assert got.user != want.user
            assert md["n_sessions_shown"] > 0 and md["memory_items"] == 5
            if options["protocol"] == "memevals":
                assert got.user.startswith(HISTORY_INTRO)
    assert empty_retrievals([f.metadata for f in filled]) == 8

"""An empty memory result is a result (BEAM): a system that returns no items for a question
leaves that sample exactly as context=none renders it (protocol=official: the long-context
question message, not the RAG prompt with an empty context; protocol=memevals: the question
alone, no memory introduction), with `memory_items` and `memory_returned` 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_memory import register_sparse_system

from memevals.benchmarks.beam.prompts import MEMORY_INTRO
from memevals.benchmarks.beam.samples import BeamOptions, build
from memevals.core.memory_harness import MemorySubject, empty_retrievals
from memevals.core.memory_options import MemoryOptions
from memevals.core.prompt_item import PromptItem

CONVERSATION = "100K-1"


@pytest.fixture(autouse=True)
def _sparse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    register_sparse_system(tmp_path / "registry")
    monkeypatch.syspath_prepend(str(tmp_path / "registry"))


@pytest.mark.parametrize("protocol", ["official", "memevals"])
def test_empty_retrieval_renders_as_context_none(protocol: str) -> None:
    def first_conversation(memory: MemoryOptions) -> tuple[list[PromptItem], MemorySubject | None]:
        built = build(BeamOptions(memory=memory, protocol=protocol))
        items = [i for i in built.items if i.metadata["conversation"] == CONVERSATION]
        return items, built.subject

    none_items, _ = first_conversation(MemoryOptions(context="none"))
    none = {i.id: i for i in none_items}
    questions = [str(i.metadata["question"]) for i in none_items]
    empty_on = [q for q in questions if questions.count(q) == 1][::3]
    items, subject = first_conversation(
        MemoryOptions(
            memory="scripted_sparse", memory_args={"empty_on": empty_on}, memory_cache=False
        )
    )
    assert subject is not None
    filled = [subject.fill(i) for i in items]
    assert len(filled) == 20 and len(empty_on) >= 6
    for got in filled:
        want, md = none[got.id], got.metadata
        if md["question"] in empty_on:
            assert (got.system, got.user, got.messages) == ("", want.user, ())
            assert want.system == "" and want.messages == ()
            assert (md["memory_items"], md["memory_returned"], md["memory_cut"]) == (0, 0, 0)
            assert md["retrieved_ids"] == []
        else:
            # not vacuous: items shown (official: in upstream's RAG prompt; memevals: under
            # the memory introduction)
            assert md["memory_items"] > 0
            if protocol == "official":
                assert got.system == "" and got.user != want.user
                assert md["question"] in got.user
            else:
                assert got.system.startswith(MEMORY_INTRO) and got.user == want.user
    assert empty_retrievals([f.metadata for f in filled]) == len(empty_on)

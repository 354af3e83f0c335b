"""An empty memory result is a result (LoCoMo-Plus, protocol=memevals, the protocol that takes
memory systems): a system that returns no items for a LoCoMo question or a cognitive trigger
leaves that sample exactly as context=none renders it, with `memory_items` and
`memory_returned` 0 and, for a cognitive sample, cue recall 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_memory import register_sparse_system

from memevals.benchmarks.locomo_plus.samples import LocomoPlusOptions, build
from memevals.core.memory_harness import empty_retrievals
from memevals.core.memory_options import MemoryOptions
from memevals.core.prompt_item import PromptItem

COGNITIVE = "cognitive"


@pytest.fixture(autouse=True)
def _sparse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    register_sparse_system(tmp_path / "registry")
    monkeypatch.syspath_prepend(str(tmp_path / "registry"))


def _chosen(items: list[PromptItem]) -> list[PromptItem]:
    """The first 12 LoCoMo questions and the first 12 cognitive samples."""
    locomo = [i for i in items if i.metadata["category"] != COGNITIVE][:12]
    cognitive = [i for i in items if i.metadata["category"] == COGNITIVE][:12]
    return locomo + cognitive


def test_empty_retrieval_renders_as_context_none() -> None:
    none = {
        i.id: i
        for i in build(
            LocomoPlusOptions(memory=MemoryOptions(context="none"), protocol="memevals")
        ).items
    }
    probe = build(
        LocomoPlusOptions(
            memory=MemoryOptions(memory="scripted_sparse", memory_cache=False),
            protocol="memevals",
        )
    )
    assert probe.subject is not None
    chosen = _chosen(probe.items)
    asked = [probe.subject.queries[i.id].text for i in chosen]
    empty_on = [q for q in asked if asked.count(q) == 1][::2]
    built = build(
        LocomoPlusOptions(
            memory=MemoryOptions(
                memory="scripted_sparse", memory_args={"empty_on": empty_on}, memory_cache=False
            ),
            protocol="memevals",
        )
    )
    assert built.subject is not None
    subject = built.subject
    filled = [subject.fill(i) for i in _chosen(built.items)]
    kinds = {"locomo": 0, COGNITIVE: 0}
    for got in filled:
        want, md = none[got.id], got.metadata
        cognitive = md["category"] == COGNITIVE
        if subject.queries[got.id].text in empty_on:
            kinds[COGNITIVE if cognitive else "locomo"] += 1
            assert (got.system, got.user) == ("", want.user)
            assert want.system == ""
            assert (md["memory_items"], md["memory_returned"], md["memory_cut"]) == (0, 0, 0)
            assert md["retrieved_ids"] == []
            if cognitive:
                assert (md["cue_recall"], md["shown_turns"]) == (0.0, [])
        else:
            # not vacuous: the items are shown before the question
            assert got.user != want.user and got.user.endswith(want.user)
            assert md["memory_items"] == 5
    assert kinds == {"locomo": 6, COGNITIVE: 6}
    assert empty_retrievals([f.metadata for f in filled]) == 12

"""An empty memory result is a result (LoCoMo): a system that returns no items for a question
leaves that sample exactly as context=none renders it, under both protocols, with
`memory_items` and `memory_returned` 0; a system that raises still fails the sample."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scripted_memory import register_sparse_system

from memevals.benchmarks.locomo.samples import LocomoOptions, build
from memevals.core.memory_harness import empty_retrievals
from memevals.core.memory_options import MemoryOptions
from memevals.core.memory_system import MemorySystemError
from memevals.core.prompt_item import PromptItem
from memevals.lm_eval_tasks.memory_contexts import with_memory

CONV = "conv-26"


@pytest.fixture(autouse=True)
def _sparse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    register_sparse_system(tmp_path / "registry")
    monkeypatch.syspath_prepend(str(tmp_path / "registry"))


def _items(protocol: str, **memory: Any) -> list[PromptItem]:
    options = LocomoOptions(
        categories="single_hop", memory=MemoryOptions(**memory), protocol=protocol
    )
    return [i for i in build(options).items if i.metadata["conversation_id"] == CONV]


def _every_other(items: list[PromptItem]) -> list[str]:
    """Every other question of `items`, among those asked once (so the script is exact)."""
    texts = [str(i.metadata["question"]) for i in items]
    once = [t for t in texts if texts.count(t) == 1]
    return once[::2]


@pytest.mark.parametrize("protocol", ["official", "memevals"])
def test_empty_retrieval_renders_as_context_none(protocol: str) -> None:
    none = {i.id: i for i in _items(protocol, context="none")}
    empty_on = _every_other(list(none.values()))
    args = {"empty_on": empty_on}
    built = build(
        LocomoOptions(
            categories="single_hop",
            memory=MemoryOptions(memory="scripted_sparse", memory_args=args, memory_cache=False),
            protocol=protocol,
        )
    )
    assert built.subject is not None
    items = [i for i in built.items if i.metadata["conversation_id"] == CONV]
    filled = [built.subject.fill(i) for i in items]
    empty = [f for f in filled if f.metadata["question"] in empty_on]
    assert len(empty) == len(empty_on) >= 10
    for got in filled:
        want = none[got.id]
        md = got.metadata
        if md["question"] in empty_on:
            # exactly the no-context sample: no system text, the question alone
            assert (got.system, got.user) == ("", want.user)
            assert want.system == ""
            assert (md["memory_items"], md["memory_returned"], md["memory_cut"]) == (0, 0, 0)
            assert md["retrieved_ids"] == []
            assert md["memory_context_tokens"] == 0
            assert md["prompt_tokens"] == want.metadata["prompt_tokens"]
        else:
            # not vacuous: a retrieval with items shows them before the question
            assert got.user != want.user and got.user.endswith(want.user)
            assert (md["memory_items"], md["memory_returned"]) == (5, 5)
            assert len(md["retrieved_ids"]) == 5
    assert empty_retrievals([f.metadata for f in filled]) == len(empty_on)


def test_lm_eval_documents_keep_empty_retrievals_and_a_raising_system_stops_the_run() -> None:
    """lm-eval builds its documents through the same harness: an empty retrieval is a document
    with memory_items 0; a raising system stops the build naming the task and the sample."""
    items = _items("memevals", context="none")[:6]
    empty_on, fail_on = [str(items[1].metadata["question"])], [str(items[4].metadata["question"])]
    built = build(
        LocomoOptions(
            categories="single_hop",
            memory=MemoryOptions(
                memory="scripted_sparse", memory_args={"empty_on": empty_on}, memory_cache=False
            ),
            protocol="memevals",
        )
    )
    assert built.subject is not None
    ours = [i for i in built.items if i.id in {x.id for x in items}]
    docs = with_memory("locomo_single_hop", ours, built.subject)
    assert [d.metadata["memory_items"] for d in docs] == [5, 0, 5, 5, 5, 5]
    assert [d.metadata["memory_returned"] for d in docs] == [5, 0, 5, 5, 5, 5]
    assert docs[1].user == items[1].user
    failing = build(
        LocomoOptions(
            categories="single_hop",
            memory=MemoryOptions(
                memory="scripted_sparse", memory_args={"fail_on": fail_on}, memory_cache=False
            ),
            protocol="memevals",
        )
    )
    assert failing.subject is not None
    bad = [i for i in failing.items if i.id in {x.id for x in items}]
    with pytest.raises(MemorySystemError) as raised:
        with_memory("locomo_single_hop", bad, failing.subject)
    assert str(raised.value) == (
        f"locomo_single_hop: sample {items[4].id}: scripted_sparse: retrieval for "
        f"{fail_on[0]!r} in {CONV} failed: TimeoutError: scripted backend timed out on "
        f"{fail_on[0]!r}"
    )


def test_a_system_answering_by_itself_is_scored_after_an_empty_retrieval(tmp_path: Path) -> None:
    """memory_answers: the retrieval came back empty and is logged so; the system's own answer
    is still the sample's output and is scored."""
    from inspect_ai import eval as inspect_eval

    from memevals.inspect_tasks.locomo import locomo

    items = _items("official", context="none")[:3]
    empty_on = [str(items[0].metadata["question"])]
    task = locomo(
        categories="single_hop",
        memory="scripted_sparse",
        memory_args={"empty_on": empty_on},
        memory_answers=True,
        memory_cache=False,
    )
    [log] = inspect_eval(
        task, model="mockllm/model", limit=3, display="none", log_dir=str(tmp_path)
    )
    assert log.status == "success" and log.samples is not None
    assert [str(s.id) for s in log.samples] == [i.id for i in items]
    first, *rest = log.samples
    assert first.output.completion == "I found nothing about that."
    assert (first.metadata["memory_items"], first.metadata["memory_returned"]) == (0, 0)
    assert first.scores is not None
    assert first.scores["locomo_f1_scorer"].answer == "I found nothing about that."
    for sample in rest:
        assert sample.metadata["memory_items"] == 5
        assert sample.output.model == "memory/scripted_sparse"

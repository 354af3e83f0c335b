"""LongMemEval's one assembly (`samples.build`): what it returns, the prompt size both frameworks
report, and the lm-eval side reading a variant's file once for all its category subtasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memevals.benchmarks.longmemeval import samples
from memevals.benchmarks.longmemeval.memory import history_text
from memevals.benchmarks.longmemeval.samples import LongMemEvalOptions, build, of_categories
from memevals.core.memory_options import MemoryOptions
from memevals.core.tokens import get_token_counter

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FX: dict[str, Any] = {"data_dir": str(FIXTURES), "verify_checksum": False}


def options(**kwargs: Any) -> LongMemEvalOptions:
    return LongMemEvalOptions(**{**FX, "variant": "oracle", **kwargs})


@pytest.mark.parametrize(
    "memory",
    [
        MemoryOptions("full"),
        MemoryOptions("none"),
        MemoryOptions("rag", retrieval_unit="turn", top_k=2),
        MemoryOptions("truncated", max_context_tokens=300, token_counter="approx"),
    ],
    ids=lambda m: m.context,
)
def test_every_item_carries_its_prompt_size(memory: MemoryOptions) -> None:
    built = build(options(memory=memory))
    counter = get_token_counter(memory.token_counter)
    assert built.items and built.note_blocks == {}
    for item in built.items:
        md = item.metadata
        assert md["token_counter"] == counter.name
        # system and user counted apart (as chat APIs count), the same figure in both frameworks
        assert md["prompt_tokens"] == counter(item.system) + counter(item.user)


def test_the_log_says_which_data_and_settings_built_the_items() -> None:
    built = build(options(categories="multi_session,abstention"))
    log = built.metadata
    assert log["variant"] == "oracle" and log["data_file"] == "longmemeval_oracle.json"
    assert log["categories"] == ["multi_session", "abstention"]
    assert len(log["data_sha256"]) == 64 and log["data_sha256_pinned"] is None
    assert log["checksum_verified"] is False
    assert (log["context"], log["history_format"], log["chain_of_note"]) == ("full", "json", False)
    # file order, each question once, even when it belongs to both categories
    ids = [item.id for item in built.items]
    assert len(ids) == len(set(ids))
    assert all(
        i.metadata["category"] == "multi_session" or i.metadata["abstention"] for i in built.items
    )


def test_chain_of_note_gets_each_questions_sessions_outside_the_prompt() -> None:
    built = build(options(chain_of_note=True))
    assert set(built.note_blocks) == {item.id for item in built.items}
    for item in built.items:
        assert item.system == "" and "prompt_tokens" not in item.metadata
        blocks = built.note_blocks[item.id]
        assert [b.session_id for b in blocks] == item.metadata["session_ids_shown"]
    # protocol=memevals: the notes are taken on the sessions the plain prompt shows, whose one
    # user message is the history, a blank line, then the question (the chain-of-note item's)
    ours = build(options(chain_of_note=True, protocol="memevals"))
    plain = {i.id: i for i in build(options(protocol="memevals")).items}
    for item in ours.items:
        blocks = ours.note_blocks[item.id]
        assert plain[item.id].user == f"{history_text(blocks)}\n\n{item.user}"


def test_of_categories_keeps_the_build_order() -> None:
    items = build(options()).items
    picked = of_categories(items, ["abstention", "temporal_reasoning"])
    assert picked == [
        i
        for i in items
        if i.metadata["category"] == "temporal_reasoning" or i.metadata["abstention"]
    ]


def test_bad_options_fail_before_the_file_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_reading(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the file was read")

    monkeypatch.setattr(samples, "iter_longmemeval", no_reading)
    for bad, match in [
        (options(variant="xl"), "variant='xl'"),
        (options(categories="single_hop"), "unknown LongMemEval category"),
        (options(history_format="yaml"), "history_format='yaml'"),
        (options(memory=MemoryOptions("full", top_k=3)), "top_k applies only to context=rag"),
        (options(context_window=8000), "context_window applies only to context=truncated"),
        (
            options(memory=MemoryOptions("truncated"), chain_of_note=True),
            "no single history to truncate",
        ),
    ]:
        with pytest.raises(ValueError, match=match):
            build(bad)


def test_lm_eval_reads_a_variant_once_for_all_its_subtasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("datasets")
    from memevals.lm_eval_tasks.longmemeval import utils

    utils._BUILT.clear()
    reads: list[str] = []
    real = samples.iter_longmemeval

    def counting(variant: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(variant)
        return real(variant, *args, **kwargs)

    monkeypatch.setattr(samples, "iter_longmemeval", counting)
    docs = {
        c: utils.longmemeval_docs("oracle", c, **FX)["test"]
        for c in ("multi_session", "abstention", "knowledge_update")
    }
    assert reads == ["oracle"]
    utils.longmemeval_docs("oracle", "multi_session", **FX, context="none")
    assert reads == ["oracle", "oracle"]  # other options: built anew
    everything = build(options())
    for category, rows in docs.items():
        assert rows["id"] == [i.id for i in of_categories(everything.items, [category])]
    utils._BUILT.clear()

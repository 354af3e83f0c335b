"""`locomo_dialogue` end to end: the seeded held-out turns, each context mode without leakage,
bad input, scripted replies scored exactly on mockllm (BLEU/ROUGE-L/BERTScore and corpus BLEU),
images with fallback to captions, the real CLI and the real SmolLM2."""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import ChatMessage, ContentImage, ContentText, ModelOutput, get_model
from inspect_results import merged_scores
from logged_figures import figures

import memevals.inspect_tasks.images as images_glue
from memevals.benchmarks.locomo import memory as memory
from memevals.benchmarks.locomo.data import load_locomo, load_locomo_file
from memevals.benchmarks.locomo.memory import LocomoMemory, locomo_memory, render_sessions
from memevals.benchmarks.locomo_dialogue.memory import (
    DialogueTurn,
    dialogue_context,
    eligible_turns,
    history_sessions,
    select_turns,
)
from memevals.benchmarks.locomo_dialogue.samples import DialogueOptions, build
from memevals.benchmarks.locomo_dialogue.scoring import (
    MINILM_LAYER,
    bertscore,
    bleu,
    bleu_stats,
    clean_reply,
    corpus_bleu,
    get_bertscorer,
    rouge_l,
)
from memevals.core.files import DataError
from memevals.core.memory_options import MemoryOptions
from memevals.core.retrievers import packaged_minilm_path
from memevals.core.tokens import get_token_counter
from memevals.inspect_tasks.images import ImageUnavailable, fetch_image
from memevals.inspect_tasks.locomo_dialogue import locomo_dialogue

MINILM = str(packaged_minilm_path())
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


# ----------------------------------------------------------------------------------------------
# Held-out turns


def test_selection_rule_is_seeded_eligible_and_pinned(data_dir: Path) -> None:
    conv = load_locomo()[0]
    turns = conv.turns
    pool = eligible_turns(conv)
    # every turn but the first of each session (speakers always alternate in LoCoMo)
    assert len(pool) == len(turns) - len(conv.sessions) == 400
    chosen = select_turns(conv, 20, 0)
    positions = [d.position for d in chosen]
    assert positions == sorted(random.Random("locomo-dialogue:0:conv-26").sample(pool, 20))
    ids = [d.turn.dia_id for d in chosen]
    assert ids[:8] == ["D1:7", "D3:6", "D3:10", "D5:8", "D8:6", "D8:7", "D8:10", "D8:37"]
    for d in chosen:
        prev = turns[d.position - 1]
        assert prev.session == d.turn.session and prev.speaker != d.speaker
    assert [d.turn.dia_id for d in select_turns(conv, 20, 0)] == ids  # reproducible
    assert [d.turn.dia_id for d in select_turns(conv, 20, 1)] != ids  # the seed matters
    assert len(select_turns(conv, 0, 0)) == 400  # 0 = every eligible turn
    assert len(select_turns(conv, 1000, 0)) == 400
    task = locomo_dialogue(bertscore=False)
    samples = list(task.dataset)
    assert len(samples) == 200 and samples[0].id == "conv-26-D1:7"
    assert (
        samples[0].target
        == "The support group has made me feel accepted and given me courage to embrace myself."
    )


def test_turn_without_text_is_a_clear_error(data_dir: Path, tmp_path: Path) -> None:
    conv = load_locomo()[0]
    s1 = conv.sessions[0]
    blank = dataclasses.replace(s1.turns[1], text="  ")
    broken = dataclasses.replace(
        conv, sessions=(dataclasses.replace(s1, turns=(s1.turns[0], blank, *s1.turns[2:])),)
    )
    with pytest.raises(ValueError, match=r"conversation conv-26: turn D1:2 has an empty 'text'"):
        select_turns(broken, 0, 0)
    # a turn with no text field at all is rejected when the file is read
    raw = json.loads((data_dir / "locomo" / "locomo10.json").read_text())[:1]
    del raw[0]["conversation"]["session_1"][3]["text"]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(DataError) as err:
        load_locomo_file(path)
    assert "conv-26 session_1[3]" in str(err.value) and "text" in str(err.value)


# ----------------------------------------------------------------------------------------------
# Context modes


def _strategy(context: str, **options: Any) -> LocomoMemory:
    """The LoCoMo strategy the dialogue context modes are handed."""
    return locomo_memory(MemoryOptions(context=context, **options))


def _target(dia_id: str) -> DialogueTurn:
    conv = load_locomo()[0]
    position = next(i for i, t in enumerate(conv.turns) if t.dia_id == dia_id)
    return DialogueTurn(conv, position)


def test_full_and_session_contexts_stop_before_the_held_out_turn(data_dir: Path) -> None:
    target = _target("D8:37")
    full = dialogue_context(target, "full", _strategy("full"))
    text = full.text
    prev = target.conv.turns[target.position - 1]
    assert text.endswith(f'{prev.speaker} said, "{prev.text.strip()}"')
    assert target.turn.text.strip() not in text
    # identical to the QA prompt's rendering of the same turns (captions inline)
    assert text.split("\n\n", 1)[1] == render_sessions(history_sessions(target))
    assert full.turns_shown == target.position
    session = dialogue_context(target, "session", _strategy("full"))
    assert "CONVERSATION (session 7)" not in session.text
    assert session.text.count("CONVERSATION (session 8)") == 1
    assert session.turns_shown == 36


def test_truncated_context_fits_the_budget(data_dir: Path) -> None:
    target = _target("D8:37")
    strategy = _strategy("truncated", max_context_tokens=500)
    ctx = dialogue_context(target, "truncated", strategy)
    counter = get_token_counter()
    assert counter(ctx.text) <= 500
    full = dialogue_context(target, "full", _strategy("full")).text
    assert full.endswith(ctx.text.split("\n\n", 1)[1].split("\n", 2)[2])  # a suffix of the history
    # one more turn would not fit
    bigger = _strategy("truncated", max_context_tokens=counter(ctx.text) + 1)
    assert dialogue_context(target, "truncated", bigger).turns_shown == ctx.turns_shown


def test_rag_retrieves_only_from_earlier_sessions(data_dir: Path) -> None:
    target = _target("D8:37")
    strategy = _strategy("rag", retrieval_unit="observation", top_k=5)
    ctx = dialogue_context(target, "rag", strategy)
    assert ctx.retrieved_ids is not None and len(ctx.retrieved_ids) >= 5
    assert all(int(i[1:].split(":")[0]) < 8 for i in ctx.retrieved_ids)
    text = ctx.text
    assert text.startswith("Below are excerpts")
    assert "The conversation now continues:" in text
    assert "CONVERSATION (session 8)" in text and "CONVERSATION (session 7)" not in text
    # summaries too; a first-session turn has nothing earlier to retrieve
    summary = _strategy("rag", retrieval_unit="summary", top_k=2)
    assert dialogue_context(target, "rag", summary).retrieved_ids in {
        (a, b) for a in [f"S{n}" for n in range(1, 8)] for b in [f"S{n}" for n in range(1, 8)]
    }
    first = dialogue_context(_target("D1:7"), "rag", strategy)
    assert first.retrieved_ids == () and first.text.startswith("Below is a conversation")


def test_rag_ranks_a_conversations_queries_in_one_batch(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """samples.build ranks all held-out turns of a conversation with one `rank_many` call (one
    encoder batch for the embedding retriever), and the items equal those built one target at a
    time (each ranked by `rank`)."""
    convs = load_locomo()[:2]
    one_by_one = []
    strategy = _strategy("rag", retrieval_unit="observation", top_k=4)
    for conv in convs:
        for target in select_turns(conv, 6, 0):
            one_by_one.append(dialogue_context(target, "rag", strategy))

    batched = _strategy("rag", retrieval_unit="observation", top_k=4)
    assert batched.index_cache is not None
    units = memory.UNIT_BUILDERS["observation"](convs[0])
    index_type = type(batched.index_cache.retriever.index(units))
    batches: list[int] = []
    real_rank_many = index_type.rank_many

    def counting_rank_many(self: Any, queries: Any) -> list[list[int]]:
        batches.append(len(queries))
        return real_rank_many(self, queries)  # type: ignore[no-any-return]

    monkeypatch.setattr(index_type, "rank_many", counting_rank_many)
    options = DialogueOptions(
        conversations=",".join(c.sample_id for c in convs),
        turns_per_conversation=6,
        memory=MemoryOptions(context="rag", retrieval_unit="observation", top_k=4),
    )
    items = build(options).items
    assert batches == [6, 6]
    assert [
        (i.parts, i.system, i.metadata["retrieved_ids"], i.metadata["turns_shown"]) for i in items
    ] == [(tuple(c.parts), c.text, list(c.retrieved_ids or ()), c.turns_shown) for c in one_by_one]
    # retrieval did pick turns (a first-session turn has nothing earlier to retrieve)
    assert sum(1 for ctx in one_by_one if ctx.retrieved_ids) >= 8


def test_bad_options_fail_before_any_model_call(data_dir: Path) -> None:
    with pytest.raises(ValueError, match="context='windowed' is not supported"):
        locomo_dialogue(context="windowed", bertscore=False)
    with pytest.raises(ValueError, match="retrieval_unit applies only to context=rag"):
        locomo_dialogue(retrieval_unit="observation", bertscore=False)
    with pytest.raises(ValueError, match="max_context_tokens applies only to context=truncated"):
        locomo_dialogue(context="session", max_context_tokens=100, bertscore=False)
    with pytest.raises(ValueError, match="apply only with bertscore=true"):
        locomo_dialogue(bertscore=False, bertscore_layers=6)
    # a local folder names its layer (bert-score knows none for a path); the message names the
    # bundled model, whose layer memevals knows
    with pytest.raises(ValueError, match="set bertscore_layers") as err:
        locomo_dialogue(bertscore_model=MINILM)
    assert str(err.value).endswith("or use bertscore_model=all-MiniLM-L6-v2 (layer 6 by default)")
    with pytest.raises(ValueError, match="turns_per_conversation must be >= 0"):
        locomo_dialogue(turns_per_conversation=-1, bertscore=False)


# ----------------------------------------------------------------------------------------------
# End to end on mockllm


# the embedder on one torch thread (a busy 2-core machine: docs/performance.md)
def test_scripted_replies_are_scored_exactly(data_dir: Path, tmp_path: Path) -> None:
    task = locomo_dialogue(
        conversations="conv-26,conv-30",
        turns_per_conversation=3,
        context="session",
        bertscore_model=MINILM,
        bertscore_layers=6,
    )
    samples = {s.id: s for s in task.dataset}
    targets = {str(s.target): s for s in samples.values()}
    replies: dict[str, str] = {}

    def model(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        # echo the right answer with a name label for every other sample, else small talk
        instruction = messages[-1].text
        speaker = instruction.split(".")[0].removeprefix("You are ")
        [sample] = [
            s
            for s in samples.values()
            if [m.text for m in s.input] == [m.text for m in messages]  # type: ignore[union-attr]
        ]
        if len(replies) % 2 == 0:
            reply = f"{speaker}: {sample.target}"
        else:
            reply = "Wow, that's so cool! Tell me more about it."
        replies[str(sample.id)] = reply
        return ModelOutput.from_content("mockllm/model", reply)

    [log] = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=model),
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success" and log.samples is not None and len(log.samples) == 6
    scorer = get_bertscorer(MINILM, 6)
    stats = []
    for sample in log.samples:
        md = sample.metadata
        pred = clean_reply(replies[str(sample.id)], md["speaker"], md["other_speaker"])
        ref = str(sample.target)
        assert ref in targets
        v = merged_scores(sample)
        assert v["bleu1"] == bleu(pred, ref, 1) and v["bleu2"] == bleu(pred, ref, 2)
        assert v["rougeL"] == rouge_l(pred, ref)
        assert v["bertscore_f1"] == bertscore([pred], [ref], scorer)[0].f1
        if pred == ref:
            assert v["bleu1"] == pytest.approx(1.0) and v["rougeL"] == 1.0
            assert v["bertscore_f1"] == pytest.approx(1.0, abs=1e-5)
        stats.append(bleu_stats(pred, ref, 2))
    # one result per scorer; every overlap row prefixed by its key (peer figures), intervals
    # only under -T uncertainty=full
    assert log.results is not None
    results = {s.name: list(s.metrics) for s in log.results.scores}
    assert results == {
        "dialogue_overlap": [
            *(f"bleu{n}{row}" for n in (1, 2) for row in ("", "_stderr", "_corpus")),
            "rougeL",
            "rougeL_stderr",
        ],
        "dialogue_bertscore": ["mean", "stderr", "ci_lower", "ci_upper"],
    }
    assert all(s.scored_samples == 6 for s in log.results.scores)
    metrics = figures(log)
    assert metrics[("bleu2", "corpus")] == pytest.approx(corpus_bleu(stats, 2))
    assert metrics[("bleu1", "corpus")] == pytest.approx(corpus_bleu(stats, 1))
    keys = ("bleu1", "rougeL", "bertscore_f1")
    means = {k: sum(merged_scores(s)[k] for s in log.samples) / 6 for k in keys}
    for key in keys:
        assert metrics[(key, "mean")] == pytest.approx(means[key])
    assert log.eval.metadata is not None
    assert log.eval.metadata["memory"]["context"] == "session"


def test_images_are_sent_or_fall_back_to_captions(
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    good = "data:image/png;base64," + base64.b64encode(PNG).decode()
    fetched: list[str] = []

    def fake_fetch(url: str, timeout: float, max_bytes: int) -> str:
        fetched.append(url)
        if "redd.it" in url:  # say the reddit images are still there, everything else is gone
            return good
        raise ImageUnavailable("HTTPError: 404")

    monkeypatch.setattr(images_glue, "fetch_image", fake_fetch)
    task = locomo_dialogue(
        conversations="conv-26",
        turns_per_conversation=4,
        images=True,
        max_images=2,
        bertscore=False,
    )
    samples = list(task.dataset)
    # the stored input holds captions only (Inspect would try to download raw image URLs)
    for sample in samples:
        assert isinstance(sample.input, list)
        parts = sample.input[-1].content
        assert not any(isinstance(p, ContentImage) for p in parts)
        for info in sample.metadata["images"]:  # type: ignore[index]
            assert parts[info["part"]].text == f" {info['caption']}."  # type: ignore[index,union-attr]
            assert parts[info["part"] - 1].text.endswith("and shared this image:")  # type: ignore[index,union-attr]
    seen: list[list[Any]] = []

    def model(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        seen.append(list(messages[-1].content))  # type: ignore[arg-type]
        return ModelOutput.from_content("mockllm/model", "Nice!")

    with caplog.at_level(logging.WARNING):
        [log] = inspect_eval(
            task,
            model=get_model("mockllm/model", custom_outputs=model),
            display="none",
            log_dir=str(tmp_path / "logs"),
        )
    assert log.status == "success" and log.samples is not None
    expected_images = [i for s in samples for i in s.metadata["images"]]  # type: ignore[index]
    assert 0 < len(expected_images) <= 2 * len(samples)
    assert len(set(fetched)) == len(fetched)  # each URL fetched once per run
    sent = sum(1 for c in seen for p in c if isinstance(p, ContentImage))
    assert sent == sum("redd.it" in i["url"] for i in expected_images)
    for content in seen:
        for p in content:
            if isinstance(p, ContentImage):
                assert p.image == good  # inlined, never the raw URL
    captions = [i["caption"] for i in expected_images if "redd.it" not in i["url"]]
    texts = "".join(p.text for c in seen for p in c if isinstance(p, ContentText))
    for caption in captions:
        assert f"and shared this image: {caption}." in texts
    assert log.results is not None
    [images] = [s for s in log.results.scores if s.name == "dialogue_images"]
    assert list(images.metrics) == ["images_sent", "image_fallbacks"]
    metrics = figures(log)
    assert metrics[("image_fallbacks", "count")] == len(captions)
    assert metrics[("images_sent", "count")] == sent
    assert any("could not be fetched" in r.message for r in caplog.records)


def test_fetch_image(tmp_path: Path) -> None:
    png = tmp_path / "photo.png"
    png.write_bytes(PNG)
    uri = fetch_image(png.as_uri())
    assert uri == "data:image/png;base64," + base64.b64encode(PNG).decode()
    text = tmp_path / "page.html"
    text.write_text("<html>gone</html>")
    with pytest.raises(ImageUnavailable, match="not an image"):
        fetch_image(text.as_uri())
    with pytest.raises(ImageUnavailable, match="larger than"):
        fetch_image(png.as_uri(), max_bytes=10)
    with pytest.raises(ImageUnavailable):
        fetch_image("http://127.0.0.1:9/photo.jpg", timeout=2)  # nothing listens there
    with pytest.raises(ImageUnavailable):
        fetch_image((tmp_path / "missing.jpg").as_uri())


# the embedder on one torch thread (a busy 2-core machine: docs/performance.md)
def test_real_cli_dialogue(inspect_cli: Any, tmp_path: Path) -> None:
    res = inspect_cli(
        "eval",
        "locomo_dialogue",
        "--model",
        "mockllm/model",
        "-T",
        "conversations=conv-26",
        "-T",
        "turns_per_conversation=3",
        "-T",
        "context=rag",
        # the offline model the error of a failed download names, without bertscore_layers:
        # memevals knows its layer (issue 40)
        "-T",
        "bertscore_model=all-MiniLM-L6-v2",
        "--log-dir",
        "logs",
        "--display",
        "none",
    )
    assert res.returncode == 0, res.stderr[-3000:]
    [path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and log.eval.task == "locomo_dialogue"
    assert log.samples is not None and len(log.samples) == 3
    for sample in log.samples:
        bert = sample.scores["dialogue_bertscore"].metadata  # type: ignore[index]
        assert bert is not None and (bert["model"], bert["num_layers"]) == (MINILM, MINILM_LAYER)
    assert log.eval.metadata is not None and log.eval.metadata["bertscore_layers"] == 6
    metrics = figures(log)
    for key in ("bleu1", "bleu2", "rougeL", "bertscore_f1"):
        assert 0.0 <= metrics[(key, "mean")] <= 1.0
    assert 0.0 <= metrics[("bleu2", "corpus")] <= 1.0
    assert log.eval.metadata is not None
    assert log.eval.metadata["memory"]["retrieval_unit"] == "observation"


# ----------------------------------------------------------------------------------------------
# The real SmolLM2


@pytest.mark.slow
# torch on one thread: on a busy 2-core machine (xdist's two workers) a second thread waits
# for a core the other holds (docs/performance.md)
def test_real_smollm2_continues_the_conversation(
    smollm2_dir: Path, data_dir: Path, tmp_path: Path
) -> None:
    [log] = inspect_eval(
        locomo_dialogue(
            conversations="conv-26",
            turns_per_conversation=2,
            context="truncated",
            max_context_tokens=200,
            max_tokens=16,
            bertscore_model=MINILM,
            bertscore_layers=6,
        ),
        model=get_model("hf/local", model_path=str(smollm2_dir), device="cpu", do_sample=False),
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success" and log.samples is not None and len(log.samples) == 2
    for sample in log.samples:
        assert sample.output.completion.strip()
        v = merged_scores(sample)
        for key in ("bleu1", "bleu2", "rougeL", "bertscore_f1"):
            assert 0.0 <= v[key] <= 1.0
    bert = [merged_scores(s)["bertscore_f1"] for s in log.samples]
    assert figures(log)[("bertscore_f1", "mean")] == pytest.approx(sum(bert) / 2)

"""LoCoMo-Plus with a memory system under test (`-T memory=<name>`): `memory=bm25` is context=rag
sample for sample, LoCoMo questions reuse the `locomo` task's stores, a stitched history is a
history of its own (own id, digest and key over both data files), the cognitive renderer, the
Inspect CLI with the memory metrics, and lm-eval documents with the same contexts."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log

from memevals.benchmarks.locomo import samples as locomo_samples
from memevals.benchmarks.locomo.data import LOCOMO_FILE
from memevals.benchmarks.locomo.memory import locomo_history
from memevals.benchmarks.locomo_plus import samples
from memevals.benchmarks.locomo_plus.data import LOCOMO_PLUS_FILE
from memevals.benchmarks.locomo_plus.memory import (
    CUE_SESSION,
    cognitive_memory_context,
    dialogue_line,
    history,
    render_history,
    stitched_data_sha256,
    stitched_history,
    trigger_query,
    turn_id,
)
from memevals.benchmarks.locomo_plus.stitch import StitchedInstance
from memevals.core.build import Build
from memevals.core.memory_harness import MemoryRun
from memevals.core.memory_options import MemoryOptions
from memevals.core.memory_system import MemoryItem, load_memory_system
from memevals.core.prompt_item import PromptItem

BM25 = MemoryOptions(memory="bm25")
RAG = MemoryOptions(context="rag")
#: what both modes record per sample and must agree on
LOCOMO_FIELDS = ("retrieved_ids", "prompt_tokens", "turn_level")
COGNITIVE_FIELDS = (*LOCOMO_FIELDS, "cue_recall", "shown_turns")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A disk cache of this module's own, so ingestions can be counted."""
    root = tmp_path_factory.mktemp("memory-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMEVALS_CACHE_DIR", str(root))
        yield root


@pytest.fixture(scope="module")
def rag(data_dir: Path) -> Build:
    return samples.build(samples.LocomoPlusOptions(protocol="memevals", memory=RAG))


@pytest.fixture(scope="module")
def bm25(cache: Path, data_dir: Path) -> tuple[Build, list[PromptItem]]:
    built = samples.build(samples.LocomoPlusOptions(protocol="memevals", memory=BM25))
    assert built.subject is not None
    return built, [built.subject.fill(i) for i in built.items]


@pytest.fixture(scope="module")
def plus_items(data_dir: Path) -> dict[str, StitchedInstance]:
    from memevals.benchmarks.locomo.data import load_locomo
    from memevals.benchmarks.locomo_plus.data import load_locomo_plus
    from memevals.benchmarks.locomo_plus.stitch import stitch_all

    stitched = stitch_all(load_locomo_plus(), load_locomo())
    return {st.instance.sample_id: st for st in stitched}


def test_memory_bm25_is_context_rag_for_every_sample(
    rag: Build, bm25: tuple[Build, list[PromptItem]]
) -> None:
    built, filled = bm25
    assert [i.id for i in filled] == [i.id for i in rag.items]  # same samples, same order
    assert len(filled) == 2387
    by_id = {i.id: i for i in rag.items}
    for item in filled:
        want = by_id[item.id]
        cognitive = item.metadata["category"] == "cognitive"
        assert item.system == want.system, item.id
        for key in COGNITIVE_FIELDS if cognitive else LOCOMO_FIELDS:
            assert item.metadata[key] == want.metadata[key], (item.id, key)
        assert item.user == want.user
    cognitive_recall = [i.metadata["cue_recall"] for i in filled if i.id.startswith("plus-")]
    assert len(cognitive_recall) == 401 and sum(cognitive_recall) == 11.0
    assert rag.metadata["memory"]["cognitive_cue_recall_mean"] == round(11.0 / 401, 4) == 0.0274
    # one ingestion per host conversation and per stitched history, none read twice
    assert built.subject is not None
    assert (built.subject.run.ingestions, built.subject.run.cache_hits) == (411, 0)
    log = built.metadata["memory"]
    assert log["memory"] == "bm25" and log["top_k"] == 5
    assert log["context"] == "memory"


def test_top_k_is_k_for_both_kinds(cache: Path, data_dir: Path) -> None:
    built = samples.build(
        samples.LocomoPlusOptions(
            protocol="memevals",
            categories="temporal,cognitive",
            memory=MemoryOptions(memory="bm25", top_k=3),
        )
    )
    assert built.subject is not None
    assert {q.k for q in built.subject.queries.values()} == {3}
    first = {i.metadata["category"]: i for i in reversed(built.items)}
    for item in first.values():
        assert len(built.subject.fill(item).metadata["retrieved_ids"]) == 3


def test_locomo_questions_ask_the_locomo_tasks_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    monkeypatch.setenv("MEMEVALS_CACHE_DIR", str(tmp_path))
    locomo = locomo_samples.build(
        locomo_samples.LocomoOptions(protocol="memevals", categories="temporal", memory=BM25)
    )
    assert locomo.subject is not None
    conv26 = [i for i in locomo.items if i.metadata["conversation_id"] == "conv-26"]
    for item in conv26:
        locomo.subject.fill(item)
    assert locomo.subject.run.ingestions == 1

    plus = samples.build(
        samples.LocomoPlusOptions(protocol="memevals", categories="temporal,cognitive", memory=BM25)
    )
    subject = plus.subject
    assert subject is not None
    questions = [i for i in plus.items if i.metadata.get("conversation_id") == "conv-26"]
    assert [i.id for i in questions] == [i.id for i in conv26]
    for item in questions:
        filled = subject.fill(item)
        assert filled.metadata["memory_ingest"]["cached"] is True
    assert (subject.run.ingestions, subject.run.cache_hits) == (0, 1)
    assert subject.histories["conv-26"] == locomo_history(
        next(c for c in _conversations() if c.sample_id == "conv-26")
    )
    assert len(list((tmp_path / "memory" / "bm25").iterdir())) == 1

    # a cognitive sample of the same host is a history, key and store of its own
    cognitive = next(i for i in plus.items if i.id == "plus-50")
    filled = subject.fill(cognitive)
    assert filled.metadata["memory_ingest"]["history_id"] == "conv-26+plus-50"
    assert filled.metadata["memory_ingest"]["cached"] is False
    assert (subject.run.ingestions, subject.run.cache_hits) == (1, 1)
    host_key = subject.run.key(subject.histories["conv-26"])
    plus_key = subject.run.key(subject.histories["conv-26+plus-50"])
    assert host_key != plus_key
    assert host_key == locomo.subject.run.key(locomo.subject.histories["conv-26"])
    assert sorted(p.name for p in (tmp_path / "memory" / "bm25").iterdir()) == sorted(
        [host_key, plus_key]
    )


def _conversations() -> list[Any]:
    from memevals.benchmarks.locomo.data import load_locomo

    return load_locomo()


def test_stitched_history_is_a_history_of_its_own(
    plus_items: dict[str, StitchedInstance], data_dir: Path
) -> None:
    st = plus_items["plus-50"]
    hist = stitched_history(st)
    host = locomo_history(st.host)
    assert hist.history_id == "conv-26+plus-50" and host.history_id == "conv-26"
    assert hist.digest() != host.digest()
    turns = [t for s in hist.sessions for t in s.turns]
    assert len(turns) == len(history(st)) == len(st.dialogue) - len(st.trigger_turns)
    assert [t.turn_id for t in turns] == [turn_id(st, i) for i in range(len(turns))]
    assert [t.search_text for t in turns] == [dialogue_line(t) for t in history(st)]
    cue = [s for s in hist.sessions if s.session_id == CUE_SESSION]
    assert len(cue) == 1
    assert [t.turn_id for t in cue[0].turns] == [
        f"cue:{n}" for n in range(1, len(st.cue_turns) + 1)
    ]
    # host sessions keep their ids and all their turns, in order; no dates (see stitched_history)
    host_ids = [s.session_id for s in hist.sessions if s.session_id != CUE_SESSION]
    assert host_ids == [f"S{s.index}" for s in st.host.sessions]
    assert {s.date for s in hist.sessions} == {""}
    assert sum(1 for t in turns if not t.turn_id.startswith("cue:")) == len(st.host.turns)
    query = trigger_query(st, 5)
    assert query.text == " ".join(t.text for t in st.trigger_turns)
    assert (query.k, query.history_id, query.date) == (5, "conv-26+plus-50", None)


def test_stitched_key_covers_both_data_files(
    plus_items: dict[str, StitchedInstance], tmp_path: Path
) -> None:
    combined = stitched_data_sha256(LOCOMO_FILE.sha256, LOCOMO_PLUS_FILE.sha256)
    assert (
        combined
        == hashlib.sha256(f"{LOCOMO_FILE.sha256}+{LOCOMO_PLUS_FILE.sha256}".encode()).hexdigest()
    )
    assert combined not in (LOCOMO_FILE.sha256, LOCOMO_PLUS_FILE.sha256)
    system = load_memory_system("bm25")
    st = plus_items["plus-0"]
    hist, host = stitched_history(st), locomo_history(st.host)
    run = MemoryRun(
        system,
        data_sha256=LOCOMO_FILE.sha256,
        cache_root=tmp_path,
        history_data_sha256={hist.history_id: combined},
    )
    locomo_run = MemoryRun(system, data_sha256=LOCOMO_FILE.sha256, cache_root=tmp_path)
    both_run = MemoryRun(system, data_sha256=combined, cache_root=tmp_path)
    assert run.key(host) == locomo_run.key(host)
    assert run.key(hist) == both_run.key(hist) != locomo_run.key(hist)
    # another stitching of the same instance (gap_fix moves some cues) is another key
    assert run.key(hist) != run.key(stitched_history(plus_items["plus-1"]))


def test_cognitive_renderer_non_verbatim_and_session_items(
    plus_items: dict[str, StitchedInstance],
) -> None:
    st = plus_items["plus-0"]
    assert st.cue_position > 0  # the dialogue opens with a host turn
    first_host = turn_id(st, 0)
    items = [
        MemoryItem(text="A note citing nothing."),
        MemoryItem(text="The cue, as a note.", source_ids=(CUE_SESSION,)),
        MemoryItem(text="ignored: verbatim", source_ids=(first_host,), verbatim=True),
    ]
    ctx = cognitive_memory_context(st, items)
    cue = [f"cue:{n}" for n in range(1, len(st.cue_turns) + 1)]
    assert ctx.retrieved_ids == (*cue, first_host)
    assert ctx.shown_turns == (0,)
    # dialogue order: the host turn, the note at the cue's place, the uncited note last
    lines = [dialogue_line(history(st)[0]), "The cue, as a note.", "A note citing nothing."]
    preamble = render_history(st, [])[: -len("\n\n")]
    assert ctx.text == preamble + "\n\n" + "\n".join(lines)
    assert cognitive_memory_context(st, []).text == ""


def test_bad_memory_options_fail_before_any_file_is_read(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="'bm52' is not a registered memory system"):
        samples.build(
            samples.LocomoPlusOptions(
                protocol="memevals", data_dir=empty, memory=MemoryOptions(memory="bm52")
            )
        )
    with pytest.raises(ValueError, match="retrieval_unit"):
        samples.build(
            samples.LocomoPlusOptions(
                protocol="memevals",
                data_dir=empty,
                memory=MemoryOptions(memory="bm25", retrieval_unit="dialog"),
            )
        )


def test_inspect_cli_records_the_memory_metrics(
    inspect_cli: Any, tmp_path: Path, rag: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMEVALS_CACHE_DIR", str(tmp_path / "cache"))
    logs = tmp_path / "logs"
    proc = inspect_cli(
        "eval",
        "memevals/locomo_plus",
        "--model",
        "mockllm/model",
        "-T",
        "memory=bm25",
        "-T",
        "protocol=memevals",
        "-T",
        "memory_args=unit=turn",
        "-T",
        "top_k=5",
        "--sample-id",
        "conv-26-q0,plus-50",
        "--log-dir",
        str(logs),
        "--display",
        "none",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    [path] = list(logs.glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.status == "success", log.error
    assert log.eval.metadata is not None
    memory_log = log.eval.metadata["memory"]
    assert (memory_log["memory"], memory_log["memory_args"], memory_log["top_k"]) == (
        "bm25",
        {"unit": "turn"},
        5,
    )
    assert log.results is not None
    metrics = {
        (s.name.split("/")[-1], m.name.split("/")[-1]): m.value
        for s in log.results.scores
        for m in s.metrics.values()
    }
    assert metrics[("memory_system", "ingestions")] == 2.0  # conv-26 and conv-26+plus-50
    assert metrics[("memory_system", "cache_hits")] == 0.0
    assert metrics[("memory_system", "mean_items")] == 5.0
    assert metrics[("memory_system", "items_cut")] == 0.0
    assert metrics[("memory_system", "latency_p50_s")] > 0.0
    assert ("memory_system", "latency_p99_s") in metrics
    assert metrics[("cue_recall", "mean")] == 0.5  # plus-50: one of its two cue turns
    assert ("locomo_plus_evidence_recall", "mean") in metrics
    assert log.samples is not None
    by_id = {str(s.id): s for s in log.samples}
    assert set(by_id) == {"conv-26-q0", "plus-50"}
    cognitive = by_id["plus-50"]
    assert cognitive.scores is not None
    assert cognitive.scores["cue_recall"].value == 0.5
    assert cognitive.metadata["retrieved_ids"] == ["cue:1", "D1:4", "D10:18", "D19:2", "D5:16"]
    assert "locomo_plus_evidence_recall" not in cognitive.scores  # left unscored
    question = by_id["conv-26-q0"]
    assert question.scores is not None
    assert "cue_recall" not in question.scores
    # the context the model read and the ids scored are those of context=rag
    by_rag = {i.id: i for i in rag.items}
    recall_md = question.scores["locomo_plus_evidence_recall"].metadata
    memory_md = question.scores["memory_system"].metadata
    assert recall_md is not None and memory_md is not None
    assert recall_md["retrieved_ids"] == by_rag["conv-26-q0"].metadata["retrieved_ids"]
    assert memory_md["memory_ingest"]["history_id"] == "conv-26"
    for sid, sample in by_id.items():
        # one user message: the rag context, then the question
        assert [(m.role, m.text) for m in sample.messages if m.role != "assistant"] == [
            ("user", by_rag[sid].user)
        ]


def test_lm_eval_documents_carry_the_rag_contexts(cache: Path, rag: Build, data_dir: Path) -> None:
    pytest.importorskip("lm_eval")
    from memevals.lm_eval_tasks.locomo_plus.utils import locomo_plus_docs, locomo_plus_results

    # the cognitive documents are checked the same way on the lm-eval run's own build of them
    # (test_lm_eval_run_with_memory_metadata): 401 stitched histories, built once
    docs = locomo_plus_docs("open_domain", memory="bm25", protocol="memevals")["test"]
    _carry_the_rag_contexts(docs, rag, "open_domain")
    row = locomo_plus_results(docs[0], ["a reply"])
    assert "evidence_recall" in row and "turn_recall" in row


def _carry_the_rag_contexts(docs: list[dict[str, Any]], rag: Build, category: str) -> None:
    """Every document of `category`, each with its context=rag message and retrieved ids."""
    by_id = {i.id: i for i in rag.items}
    assert len(docs) == sum(1 for i in rag.items if i.metadata["category"] == category)
    for doc in docs:
        want = by_id[doc["id"]]
        assert (doc["system"], doc["user"]) == ("", want.user), doc["id"]
        md = json.loads(doc["metadata"])
        assert md["retrieved_ids"] == want.metadata["retrieved_ids"]
        assert md["memory_latency_s"] >= 0.0


def test_lm_eval_run_with_memory_metadata(cache: Path, rag: Build) -> None:
    """The YAML task path: `--metadata '{"memory": "bm25"}'` through lm-eval's own TaskManager,
    every document of the task carries its rag context, the contexts sent are the rag contexts
    and `cue_recall` aggregates."""
    pytest.importorskip("lm_eval")
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    from memevals.lm_eval_tasks import include_path
    from memevals.lm_eval_tasks.locomo_plus.utils import locomo_plus_results

    class Fixed(LM):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.prompts: list[str] = []

        def generate_until(self, requests: Any, disable_tqdm: bool = False) -> list[str]:
            self.prompts += [r.args[0] for r in requests]
            return ["I remember."] * len(requests)

        def loglikelihood(self, requests: Any, disable_tqdm: bool = False) -> list[Any]:
            raise NotImplementedError

        def loglikelihood_rolling(self, requests: Any, disable_tqdm: bool = False) -> list[Any]:
            raise NotImplementedError

    lm = Fixed()
    manager = TaskManager(
        include_path=include_path(), metadata={"memory": "bm25", "protocol": "memevals"}
    )
    # the task as lm-eval loads it by name, kept to read all its documents after the run
    task = manager.load(["locomo_plus_cognitive"])["tasks"]["locomo_plus_cognitive"]
    results = simple_evaluate(
        model=lm,
        tasks=[task],
        task_manager=manager,
        limit=3,
        log_samples=True,
        bootstrap_iters=0,
    )
    assert results is not None
    # the first three cognitive samples of context=rag (the module's build of every category)
    first = [i for i in rag.items if i.metadata["category"] == "cognitive"][:3]
    by_rag = {i.id: i for i in first}
    logged = results["samples"]["locomo_plus_cognitive"]
    assert [s["doc"]["id"] for s in logged] == ["plus-0", "plus-1", "plus-2"]
    for s in logged:
        assert s["doc"]["user"] == by_rag[s["doc"]["id"]].user
    assert [by_rag[i].user for i in by_rag] == lm.prompts
    row = results["results"]["locomo_plus_cognitive"]
    want = sum(i.metadata["cue_recall"] for i in by_rag.values()) / 3
    assert row["cue_recall,none"] == pytest.approx(want)
    # every document of the task (all 401, not only the three run) carries its rag context
    docs = list(task.test_docs())
    _carry_the_rag_contexts(docs, rag, "cognitive")
    row = locomo_plus_results(docs[0], ["a reply"])
    assert row["cue_recall"] == by_rag[docs[0]["id"]].metadata["cue_recall"]

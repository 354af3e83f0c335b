"""Audited gold (locomo-audit): counts, ceilings, matching errors, and both frameworks' samples
and F1 under `gold=audited` against direct computation from the audit records."""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path

import pytest
from lm_eval_support import run_inspect

from memevals.benchmarks.locomo import samples as locomo_samples
from memevals.benchmarks.locomo.audit import (
    AUDIT_FILE,
    AuditRecord,
    apply_gold,
    ceilings,
    load_audit,
    load_audit_file,
    match_audit,
)
from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.scoring import locomo_f1
from memevals.benchmarks.locomo_plus import samples as plus_samples
from memevals.core.files import DataError
from memevals.core.memory_options import MemoryOptions
from memevals.inspect_tasks.locomo import locomo, locomo_temporal
from memevals.inspect_tasks.locomo_plus import locomo_plus
from memevals.lm_eval_tasks.documents import doc_item
from memevals.lm_eval_tasks.locomo.utils import locomo_docs, locomo_results
from memevals.lm_eval_tasks.locomo_plus.utils import locomo_plus_docs
from memevals.lm_eval_tasks.option_checks import OptionError

NONE = MemoryOptions("none")


def _by_question_id(records: tuple[AuditRecord, ...]) -> dict[str, AuditRecord]:
    return {r.question_id: r for r in records}


def test_counts_and_ceilings_reproduced_exactly(data_dir: Path) -> None:
    conversations = load_locomo()
    records = load_audit()
    assert len(records) == 156
    matched = match_audit(conversations, records)
    assert len(matched) == 156
    assert matched[("conv-26", 1)].question_id == "locomo_0_qa1"
    assert sum(r.correct_answer != r.golden_answer for r in records) == 120
    assert sum(r.correct_evidence != r.cited_evidence for r in records) == 97
    gold = apply_gold(conversations, "audited")
    assert gold.log["audit_answers_changed"] == 120
    assert gold.log["audit_evidence_changed"] == 97
    got = ceilings(conversations, records)
    exact = {
        "multi_hop": 1 - Fraction(28, 282),
        "temporal": 1 - Fraction(26, 321),
        "open_domain": 1 - Fraction(9, 96),
        "single_hop": 1 - Fraction(36, 841),
        "overall": 1 - Fraction(99, 1540),
    }
    assert got == pytest.approx({k: float(v) for k, v in exact.items()}, abs=1e-12)
    percent = {k: round(100 * v, 2) for k, v in got.items()}
    assert percent == {
        "multi_hop": 90.07,
        "temporal": 91.90,
        "open_domain": 90.62,
        "single_hop": 95.72,
        "overall": 93.57,
    }


def _edited_copy(dest: Path, field: str, value: str) -> Path:
    """The pinned errors.json with record 3's `field` set to `value`, written to `dest`."""
    raw = json.loads(
        (Path(os.environ["MEMEVALS_DATA_DIR"]) / AUDIT_FILE.relpath).read_text("utf-8")
    )
    raw[3][field] = value
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(raw), encoding="utf-8")
    return dest


@pytest.mark.parametrize(
    ("field", "value"),
    [("question", "When did Melanie paint a sunset?"), ("golden_answer", "1999")],
)
def test_a_mismatching_record_names_file_record_and_item(
    tmp_path: Path, data_dir: Path, field: str, value: str
) -> None:
    path = _edited_copy(tmp_path / "errors.json", field, value)
    records = load_audit_file(path)
    qid = records[3].question_id
    with pytest.raises(DataError) as err:
        match_audit(load_locomo(), records)
    message = str(err.value)
    assert str(path) in message and f"record {qid}" in message and f"field '{field}'" in message
    assert repr(value) in message and "LoCoMo conv-" in message


def test_an_edited_file_in_the_data_dir_fails_its_checksum(tmp_path: Path, data_dir: Path) -> None:
    _edited_copy(tmp_path / AUDIT_FILE.relpath, "question", "x")
    with pytest.raises(DataError, match="sha256"):
        load_audit(tmp_path)


def test_gold_option_is_checked_before_loading(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="gold='fixed' is not one of original, audited"):
        locomo_samples.build(
            locomo_samples.LocomoOptions(protocol="memevals", data_dir=tmp_path, gold="fixed")
        )
    with pytest.raises(ValueError, match="gold='fixed'"):
        plus_samples.build(
            plus_samples.LocomoPlusOptions(protocol="memevals", data_dir=tmp_path, gold="fixed")
        )
    with pytest.raises(OptionError, match="gold='fixed'"):
        locomo_docs("temporal", gold="fixed")


def test_audited_samples_take_the_corrections_and_record_both(data_dir: Path) -> None:
    built_o = locomo_samples.build(locomo_samples.LocomoOptions(protocol="memevals", memory=NONE))
    built_a = locomo_samples.build(
        locomo_samples.LocomoOptions(protocol="memevals", memory=NONE, gold="audited")
    )
    original, log_o = built_o.items, built_o.metadata["memory"]
    audited, log_a = built_a.items, built_a.metadata["memory"]
    assert log_o["gold"]["gold_ceilings"] == log_a["gold"]["gold_ceilings"]
    assert log_o["gold"]["gold"] == "original" and log_a["gold"]["gold"] == "audited"
    records = _by_question_id(load_audit())
    conv_index = {c.sample_id: i for i, c in enumerate(load_locomo())}
    changed_answers = changed_evidence = 0
    for o, a in zip(original, audited, strict=True):
        assert o.id == a.id and o.system == a.system and o.user == a.user
        md = o.metadata
        rec = records.get(f"locomo_{conv_index[md['conversation_id']]}_qa{md['qa_index']}")
        assert "gold_original" not in md and "audit_error_type" not in md
        if rec is None:
            assert a == o
            continue
        assert a.target == rec.correct_answer == a.metadata["answer"]
        assert a.metadata["evidence"] == list(rec.correct_evidence)
        assert a.metadata["judge"]["reference"] == rec.correct_answer
        assert a.metadata["audit_error_type"] == rec.error_type
        if rec.correct_answer != rec.golden_answer:
            changed_answers += 1
            assert a.metadata["gold_original"] == md["answer"]
            assert a.metadata["gold_audited"] == rec.correct_answer
        else:
            assert "gold_original" not in a.metadata
        if rec.correct_evidence != rec.cited_evidence:
            changed_evidence += 1
            assert a.metadata["evidence_original"] == md["evidence"]
            assert a.metadata["evidence_audited"] == list(rec.correct_evidence)
    assert (changed_answers, changed_evidence) == (120, 97)


def test_locomo_plus_follows_gold_and_leaves_cognitive_samples(data_dir: Path) -> None:
    def build(gold: str) -> dict[str, object]:
        items = plus_samples.build(
            plus_samples.LocomoPlusOptions(
                protocol="memevals", categories="temporal,cognitive", memory=NONE, gold=gold
            )
        ).items
        return {i.id: i for i in items}

    original, audited = build("original"), build("audited")
    assert original.keys() == audited.keys()
    cognitive = [k for k in original if k.startswith("plus-")]
    assert len(cognitive) == 401
    assert all(original[k] == audited[k] for k in cognitive)
    changed = [k for k in original if original[k] != audited[k]]
    n_temporal = sum(1 for r in load_audit() if r.category == 2)
    assert len(changed) == n_temporal  # every audited temporal question records its change
    assert audited["conv-26-q1"].metadata["evidence"] == ["D1:14"]  # type: ignore[attr-defined]


def _scripted(
    ids: list[str], gold: str
) -> tuple[list[str], dict[str, str], dict[str, AuditRecord]]:
    """A few audited conv-26 questions whose answer changes; the reply is the original gold."""
    records = _by_question_id(load_audit())
    conv = load_locomo()[0]
    replies: dict[str, str] = {}
    chosen: dict[str, AuditRecord] = {}
    items = locomo_samples.build(
        locomo_samples.LocomoOptions(protocol="memevals", memory=NONE, gold=gold)
    ).items
    by_id = {i.id: i for i in items}
    for sid in ids:
        j = int(sid.rsplit("-q", 1)[1])
        chosen[sid] = records[f"locomo_0_qa{j}"]
        replies[by_id[sid].as_text()] = str(conv.qa[j].answer)
    return ids, replies, chosen


def _audited_ids() -> list[str]:
    recs = [r for r in load_audit() if r.conversation_index == 0]
    picked = [r for r in recs if r.correct_answer != r.golden_answer][:4]
    picked += [r for r in recs if r.correct_answer == r.golden_answer][:1]
    return [f"conv-26-q{r.qa_index}" for r in picked]


@pytest.mark.parametrize("gold", ["original", "audited"])
def test_inspect_f1_equals_direct_computation(gold: str, tmp_path: Path, data_dir: Path) -> None:
    ids, replies, chosen = _scripted(_audited_ids(), gold)
    task = locomo(context="none", gold=gold, protocol="memevals")  # the prompts _scripted built
    assert task.metadata is not None
    assert task.metadata["gold"] == gold
    assert task.metadata["gold_ceilings"]["temporal"] == pytest.approx(0.919, abs=1e-4)
    log = run_inspect(task, replies, tmp_path, ids=ids)
    assert log.samples is not None and len(log.samples) == len(ids)
    conv = load_locomo()[0]
    for sample in log.samples:
        rec = chosen[str(sample.id)]
        reply = str(conv.qa[rec.qa_index].answer)
        gold_answer = rec.correct_answer if gold == "audited" else conv.qa[rec.qa_index].answer
        expected = locomo_f1(reply, gold_answer, rec.category)
        assert sample.scores is not None
        assert float(sample.scores["locomo_f1_scorer"].value) == expected  # type: ignore[arg-type]
    values = [float(s.scores["locomo_f1_scorer"].value) for s in log.samples]  # type: ignore[arg-type, index]
    if gold == "original":
        assert values == [1.0] * len(ids)
    else:
        assert min(values) < 1.0  # the original gold is no longer the answer


def test_lm_eval_documents_equal_inspect_samples_when_audited(data_dir: Path) -> None:
    docs = locomo_docs("temporal", context="none", gold="audited")["test"]
    samples = list(locomo_temporal(context="none", gold="audited").dataset)
    assert len(docs) == len(samples) == 321
    records = _by_question_id(load_audit())
    changed = 0
    for doc, sample in zip(docs, samples, strict=True):
        item = doc_item(doc)
        assert item.id == sample.id and item.target == sample.target
        assert item.metadata == sample.metadata
        if "gold_audited" in item.metadata:
            changed += 1
            rec = records[item.metadata["audit_question_id"]]
            reply = str(item.metadata["gold_original"])
            scores = locomo_results(doc, [reply])
            assert scores["f1"] == locomo_f1(reply, rec.correct_answer, 2)
    assert changed == sum(
        1 for r in records.values() if r.category == 2 and r.correct_answer != r.golden_answer
    )
    plus = locomo_plus_docs("temporal", context="none", gold="audited", protocol="memevals")["test"]
    inspect_plus = list(
        locomo_plus(
            categories="temporal", context="none", gold="audited", protocol="memevals"
        ).dataset
    )
    assert [doc_item(d).metadata for d in plus] == [s.metadata for s in inspect_plus]


def test_a_data_folder_without_the_audit_still_runs_the_official_protocol(
    tmp_path: Path, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """gold=original needs no audit: without the file the run goes on, warns, and logs why it
    has no ceilings; gold=audited cannot, and says which file is missing."""
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "locomo10.json").symlink_to(data_dir / "locomo" / "locomo10.json")
    with caplog.at_level("WARNING"):
        task = locomo(categories="temporal", context="none", data_dir=str(tmp_path))
    assert len(task.dataset) == 321
    assert task.metadata is not None and task.metadata["gold_ceilings"] is None
    assert "gold ceilings are unavailable" in caplog.text
    assert "errors.json" in caplog.text
    with pytest.raises(DataError, match=r"errors\.json"):
        locomo(categories="temporal", context="none", data_dir=str(tmp_path), gold="audited")

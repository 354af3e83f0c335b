"""LongMemEval adapter: schema, variants, file location, streaming, and bad input."""

from __future__ import annotations

import io
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memevals.benchmarks.longmemeval.data import (
    FILES,
    REVISION,
    Instance,
    data_file,
    iter_instances,
    iter_longmemeval,
    load_longmemeval,
    load_longmemeval_file,
    locate,
)
from memevals.core.files import DataError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LME = FIXTURES / "longmemeval"


def raw(name: str = "longmemeval_s_cleaned.json") -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((LME / name).read_text(encoding="utf-8"))
    return data


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def no_data_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("MEMEVALS_DATA_DIR", raising=False)
    monkeypatch.setenv("MEMEVALS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


# -- fixture content and schema ------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["oracle", "s", "m"])
def test_fixture_variants_share_questions(variant: str) -> None:
    insts = load_longmemeval(variant, FIXTURES, verify_checksum=False)
    assert len(insts) == 16
    types = Counter(i.category for i in insts)
    assert types == {
        "single_session_user": 3,
        "single_session_assistant": 2,
        "single_session_preference": 2,
        "multi_session": 3,
        "temporal_reasoning": 3,
        "knowledge_update": 3,
    }
    assert sorted(i.question_id for i in insts if i.is_abstention) == [
        "fx03e6f7_abs",
        "fx10a1b2_abs",
        "fx13a7b8_abs",
        "fx16a3b4_abs",
    ]
    for inst in insts:
        # every answer session is in the haystack, and its id says so
        assert inst.missing_answer_session_ids == ()
        assert all("answer" in s for s in inst.answer_session_ids)
        assert len(inst.sessions) == len(inst.haystack_dates) == len(inst.haystack_session_ids)


def test_haystack_sizes_per_variant() -> None:
    sizes = {
        v: {
            i.question_id: len(i.sessions)
            for i in load_longmemeval(v, FIXTURES, verify_checksum=False)
        }
        for v in ("oracle", "s", "m")
    }
    assert sizes["oracle"]["fx08c7d8"] == 2
    assert sizes["s"]["fx08c7d8"] == 2 + 4
    assert sizes["m"]["fx08c7d8"] == 2 + 11


def test_oracle_is_unsorted_s_is_sorted() -> None:
    oracle = {i.question_id: i for i in load_longmemeval("oracle", FIXTURES, verify_checksum=False)}
    s = {i.question_id: i for i in load_longmemeval("s", FIXTURES, verify_checksum=False)}
    ku = oracle["fx14c9d0"]
    # the file keeps the later session first ...
    assert [x.session_id for x in ku.sessions] == ["answer_9b4c1e88_2", "answer_9b4c1e88_1"]
    # ... sessions_by_date puts them in time order
    assert [x.session_id for x in ku.sessions_by_date()] == [
        "answer_9b4c1e88_1",
        "answer_9b4c1e88_2",
    ]
    for inst in s.values():
        whens = [x.when for x in inst.sessions]
        assert whens == sorted(whens)
        assert all(w < inst.question_when for w in whens)


def test_fields_are_typed() -> None:
    insts = {i.question_id: i for i in load_longmemeval("s", FIXTURES, verify_checksum=False)}
    inst = insts["fx01a2b3"]
    assert isinstance(inst, Instance)
    assert inst.question_type == "single-session-user"
    assert inst.category == "single_session_user"
    assert inst.question_date == "2023/05/30 (Tue) 23:40"
    assert (inst.question_when.year, inst.question_when.hour, inst.question_when.minute) == (
        2023,
        23,
        40,
    )
    (ans,) = inst.answer_sessions()
    assert ans.session_id == "answer_4f1c2a07_1"
    assert ans.date == "2023/05/20 (Sat) 02:21"
    evidence = [t for t in ans.turns if t.has_answer]
    assert len(evidence) == 1 and evidence[0].role == "user"
    assert evidence[0].position == 3
    assert ans.turn_id(evidence[0]) == "answer_4f1c2a07_1_3"
    assert ans.has_user_evidence
    # an integer answer is kept as the file has it, with a text form for prompts and judges
    chili = insts["fx05c1d2"]
    assert chili.answer == 2 and chili.answer_text == "2"
    # a single-session-assistant answer session has its evidence on the assistant side only
    (lisbon,) = insts["fx04a8b9"].answer_sessions()
    assert not lisbon.has_user_evidence
    assert [t.role for t in lisbon.turns if t.has_answer] == ["assistant"]
    assert "Pastéis" in insts["fx04a8b9"].answer_text  # UTF-8 text survives


# -- locating files ------------------------------------------------------------------------------


def test_file_table_pins_revision() -> None:
    assert REVISION == "98d7416c24c778c2fee6e6f3006e7a073259d48f"
    for variant, spec in FILES.items():
        assert spec.url == (
            "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/resolve/"
            f"{REVISION}/{spec.filename}"
        ), variant
    assert FILES["s"].sha256 == "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442"
    assert FILES["s"].size == 277_383_467
    assert FILES["oracle"].sha256 is None and FILES["m"].sha256 is None
    with pytest.raises(ValueError, match="variant='xl' is not one of oracle, s, m"):
        data_file("xl")


def test_s_fixture_fails_the_pinned_checksum() -> None:
    with pytest.raises(DataError, match=r"sha256 is .* expected d6f21ea9") as err:
        locate("s", FIXTURES)
    assert "longmemeval_s_cleaned.json" in str(err.value)
    # verify_checksum=False accepts a same-schema copy under the data dir
    assert locate("s", FIXTURES, verify_checksum=False) == FIXTURES / "longmemeval" / (
        "longmemeval_s_cleaned.json"
    )


def test_env_var_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEVALS_DATA_DIR", str(FIXTURES))
    assert locate("m") == LME / "longmemeval_m_cleaned.json"
    assert len(list(iter_longmemeval("oracle"))) == 16


def test_missing_override_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found under the data dir") as err:
        locate("m", tmp_path)
    assert err.value.file == str(tmp_path / "longmemeval" / "longmemeval_m_cleaned.json")


class _Served(io.BytesIO):
    def __enter__(self) -> _Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def test_download_failure_names_the_url(no_data_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memevals.core import files as _files

    def fail(url: str, timeout: float) -> _Served:
        raise OSError("network unreachable")

    monkeypatch.setattr(_files.urllib.request, "urlopen", fail)
    with pytest.raises(DataError, match=f"could not download .*{REVISION}/longmemeval_oracle"):
        locate("oracle")


def test_download_with_implausible_size_never_reaches_the_cache(
    no_data_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real download path with only the network faked: a file of an implausible size is
    rejected before it is renamed into the cache, and no partial file is left behind."""
    from memevals.core import files as _files

    cache = no_data_env / "cache" / "longmemeval"
    small = (LME / "longmemeval_oracle.json").read_bytes()  # far too small for the real oracle
    seen: list[str] = []

    def urlopen(url: str, timeout: float) -> _Served:
        seen.append(url)
        assert not (cache / "longmemeval_oracle.json").exists()  # nothing there mid-download
        return _Served(small)

    monkeypatch.setattr(_files.urllib.request, "urlopen", urlopen)
    with pytest.raises(DataError, match="outside the plausible"):
        locate("oracle")
    assert seen == [FILES["oracle"].url]
    assert sorted(p.name for p in cache.iterdir()) == []  # no cache entry, no .part file

    # a bad file already in the cache (e.g. copied there by hand) is replaced by a new download
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "longmemeval_oracle.json").write_bytes(small)
    with pytest.raises(DataError, match="outside the plausible"):
        locate("oracle")
    assert seen == [FILES["oracle"].url] * 2
    assert sorted(p.name for p in cache.iterdir()) == []


# -- streaming -----------------------------------------------------------------------------------


def test_streaming_yields_before_reading_everything(tmp_path: Path) -> None:
    """The first instance arrives before the parser meets an error further on."""
    data = raw()
    text = json.dumps(data)
    cut = text.index('{"question_id": "fx05c1d2"')
    path = tmp_path / "broken.json"
    path.write_text(text[:cut] + '{"question_id": "fx05c1d2", "question_type": }]')
    stream = iter_instances(path, buf_size=256)
    first = next(stream)
    assert first.question_id == "fx01a2b3"
    got = [first.question_id]
    with pytest.raises(DataError) as err:
        for inst in stream:
            got.append(inst.question_id)
    assert got == ["fx01a2b3", "fx02c4d5", "fx03e6f7_abs", "fx04a8b9"]
    offset = len((text[:cut] + '{"question_id": "fx05c1d2", "question_type": ').encode())
    assert f"invalid JSON at byte {offset}" in str(err.value)
    assert "after question_id 'fx04a8b9'" in str(err.value)


def test_digest_of_streamed_bytes() -> None:
    import hashlib

    path = LME / "longmemeval_m_cleaned.json"
    out: list[str] = []
    assert len(list(iter_instances(path, digest_out=out))) == 16
    assert out == [hashlib.sha256(path.read_bytes()).hexdigest()]
    with pytest.raises(DataError, match=r"sha256 is .* expected 00"):
        list(iter_instances(path, expected_sha256="00" * 32))


# -- bad input -----------------------------------------------------------------------------------


def test_truncated_file_reports_end_offset(tmp_path: Path) -> None:
    text = (LME / "longmemeval_oracle.json").read_bytes()
    path = tmp_path / "longmemeval_oracle.json"
    path.write_bytes(text[: len(text) // 2])
    with pytest.raises(DataError) as err:
        load_longmemeval_file(path)
    msg = str(err.value)
    assert f"file {path}" in msg
    assert f"invalid JSON at byte {len(text) // 2} (end of file)" in msg
    assert "truncated" in msg


@pytest.mark.parametrize("buf_size", [64, 1000, 1 << 16])
def test_syntax_error_reports_exact_byte_offset(tmp_path: Path, buf_size: int) -> None:
    text = (LME / "longmemeval_s_cleaned.json").read_text(encoding="utf-8")
    at = text.index('"question_type"', text.index("fx09e9f0"))
    broken = text[:at] + "@" + text[at:]
    path = tmp_path / "x.json"
    path.write_text(broken, encoding="utf-8")
    with pytest.raises(DataError) as err:
        list(iter_instances(path, buf_size=buf_size))
    byte_at = len(broken[:at].encode("utf-8"))  # the fixture has non-ASCII text before it
    assert f"invalid JSON at byte {byte_at}," in str(err.value)
    assert "after question_id 'fx08c7d8'" in str(err.value)


def _expect_field_error(
    tmp_path: Path, mutate: Any, qid: str, field: str, match: str, index: int = 7
) -> None:
    data = raw()
    mutate(data[index])
    path = write(tmp_path / "longmemeval_s_cleaned.json", data)
    with pytest.raises(DataError, match=match) as err:
        load_longmemeval_file(path)
    assert err.value.file == str(path)
    assert err.value.record == qid
    assert err.value.field == field
    assert f"record {qid}" in str(err.value) and f"field '{field}'" in str(err.value)


@pytest.mark.parametrize(
    ("field", "match"),
    [
        ("question", "missing"),
        ("question_type", "missing"),
        ("question_date", "missing"),
        ("answer", "missing"),
        ("haystack_session_ids", "missing"),
        ("haystack_dates", "missing"),
        ("haystack_sessions", "missing"),
        ("answer_session_ids", "missing"),
    ],
)
def test_missing_field(tmp_path: Path, field: str, match: str) -> None:
    _expect_field_error(tmp_path, lambda d: d.pop(field), "fx08c7d8", field, match)


def test_missing_question_id_names_the_position(tmp_path: Path) -> None:
    _expect_field_error(
        tmp_path, lambda d: d.pop("question_id"), "instance[7]", "question_id", "missing"
    )


@pytest.mark.parametrize(
    ("mutate", "field", "match"),
    [
        (lambda d: d.update(question_type="multi-hop"), "question_type", "unknown type"),
        (lambda d: d.update(answer=True), "answer", "got bool"),
        (lambda d: d.update(answer=None), "answer", "got NoneType"),
        (lambda d: d.update(question_date="30 May 2023"), "question_date", "cannot parse"),
        (
            lambda d: d["haystack_dates"].__setitem__(1, "2023/02/30 (Mon) 10:00"),
            "haystack_dates[1]",
            "not a real date",
        ),
        (lambda d: d["haystack_dates"].pop(), "haystack_sessions", "must align"),
        (
            lambda d: d["haystack_session_ids"].__setitem__(0, 7),
            "haystack_session_ids[0]",
            "expected a string",
        ),
        (
            lambda d: d["haystack_sessions"][2][0].update(role="system"),
            "haystack_sessions[2][0].role",
            "'system' is not one of user, assistant",
        ),
        (
            lambda d: d["haystack_sessions"][2][1].pop("content"),
            "haystack_sessions[2][1].content",
            "missing",
        ),
        (
            lambda d: d["haystack_sessions"][2][0].update(has_answer="yes"),
            "haystack_sessions[2][0].has_answer",
            "expected true/false",
        ),
        (
            lambda d: d["haystack_sessions"].__setitem__(3, {"role": "user"}),
            "haystack_sessions[3]",
            "expected a list of turns",
        ),
        (
            lambda d: d["answer_session_ids"].append(None),
            "answer_session_ids[2]",
            "expected a string",
        ),
    ],
)
def test_bad_field(tmp_path: Path, mutate: Any, field: str, match: str) -> None:
    _expect_field_error(tmp_path, mutate, "fx08c7d8", field, match)


def test_duplicate_question_id(tmp_path: Path) -> None:
    data = raw()
    data[3]["question_id"] = data[1]["question_id"]
    path = write(tmp_path / "d.json", data)
    with pytest.raises(DataError, match="duplicate question_id") as err:
        load_longmemeval_file(path)
    assert err.value.record == "fx02c4d5"


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"question_id": "x"}', r"expected a JSON array .* got '\{'"),
        ("", "got 'an empty file'"),
        ("[]", "no instances"),
        ("[1, 2]", "expected a JSON object, got int"),
    ],
)
def test_bad_top_level(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(DataError, match=match):
        load_longmemeval_file(path)


def test_unreadable_path(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot open"):
        load_longmemeval_file(tmp_path / "nope.json")


_ORACLE = (LME / "longmemeval_oracle.json").read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pos=st.integers(min_value=0, max_value=len(_ORACLE) - 1),
    junk=st.sampled_from([b"", b"}", b"]", b",", b'"', b"\\", b"\xff", b"null", b"{}"]),
    cut=st.booleans(),
)
def test_any_corruption_is_parsed_or_a_data_error(pos: int, junk: bytes, cut: bool) -> None:
    """Byte-level damage either still parses or raises DataError, never anything else."""
    import tempfile

    corrupt = _ORACLE[:pos] + junk + (b"" if cut else _ORACLE[pos:])
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.json"
        path.write_bytes(corrupt)
        try:
            insts = load_longmemeval_file(path)
        except DataError as exc:
            assert str(path) in str(exc)
        else:
            assert len(insts) >= 1
    assert os.path.exists(LME / "longmemeval_oracle.json")

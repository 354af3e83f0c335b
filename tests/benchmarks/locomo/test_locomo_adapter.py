"""LoCoMo adapter: verified counts, data traps, strict errors, pinned-file resolution."""

from __future__ import annotations

import copy
import hashlib
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memevals.benchmarks.locomo.data import (
    CATEGORY_NAMES,
    LOCOMO_FILE,
    load_locomo,
    load_locomo_file,
    split_evidence,
)
from memevals.core import files as _files
from memevals.core.files import DataError, PinnedFile, resolve

# sample -> (sessions, turns, qa, c1, c2, c3, c4, c5)   benchmarks/locomo/README.md#data
COUNTS = {
    "conv-26": (19, 419, 199, 32, 37, 13, 70, 47),
    "conv-30": (19, 369, 105, 11, 26, 0, 44, 24),
    "conv-41": (32, 663, 193, 31, 27, 8, 86, 41),
    "conv-42": (29, 629, 260, 37, 40, 11, 111, 61),
    "conv-43": (29, 680, 242, 31, 26, 14, 107, 64),
    "conv-44": (28, 675, 158, 30, 24, 7, 62, 35),
    "conv-47": (31, 689, 190, 20, 34, 13, 83, 40),
    "conv-48": (30, 681, 239, 21, 42, 10, 118, 48),
    "conv-49": (25, 509, 196, 37, 33, 13, 73, 40),
    "conv-50": (30, 568, 204, 32, 32, 7, 87, 46),
}


def test_counts_match_the_release(data_dir: Path) -> None:
    convs = load_locomo()
    assert [c.sample_id for c in convs] == list(COUNTS)
    for conv in convs:
        cats = Counter(q.category for q in conv.qa)
        got = (len(conv.sessions), len(conv.turns), len(conv.qa), *(cats[i] for i in range(1, 6)))
        assert got == COUNTS[conv.sample_id], conv.sample_id
    assert sum(len(c.observations) for c in convs) == 2541
    assert sum(len(c.session_summaries) for c in convs) == 272
    assert sum(len(c.events) for c in convs) == 669
    turns = [t for c in convs for t in c.turns]
    assert sum(1 for t in turns if t.img_url) == 910
    assert sum(1 for t in turns if t.blip_caption) == 1226


def test_traps(data_dir: Path) -> None:
    convs = {c.sample_id: c for c in load_locomo()}
    qa = [q for c in convs.values() for q in c.qa]
    # category 5: no gold, except two conv-26 items answered "No"
    c5 = [q for q in qa if q.category == 5]
    assert sum(1 for q in c5 if q.answer is None) == 444
    assert sorted(str(q.answer) for q in c5 if q.answer is not None) == ["No", "No"]
    assert all(q.adversarial_answer for q in c5)
    # integer answers are kept as ints
    ints = [q.answer for q in qa if isinstance(q.answer, int)]
    assert sorted(ints) == [2, 3, 2022, 2022, 2022, 2022]
    # conv-26 has 35 date keys but 19 sessions: sessions come from session_<n> keys
    assert len(convs["conv-26"].sessions) == 19
    # malformed evidence: normalised where possible, raw kept, nothing raises
    raw = {e for q in qa for e in q.evidence}
    assert {"D8:6; D9:17", "D", "D:11:26", "D30:05"} <= raw
    by_raw = {q.evidence: q for q in qa}
    assert by_raw[("D8:6; D9:17",)].evidence_ids == ("D8:6", "D9:17")
    q30 = next(q for q in qa if "D30:05" in q.evidence)
    assert "D30:5" in q30.evidence_ids
    assert sum(1 for q in qa if not q.evidence) == 4
    # observations with list / comma-joined dia ids are flattened
    obs_ids = [o.dia_ids for c in convs.values() for o in c.observations]
    assert all(isinstance(i, str) and "," not in i for ids in obs_ids for i in ids)
    # ids in evidence that name no turn are detectable
    unresolved = [
        e for c in convs.values() for q in c.qa for e in q.evidence_ids if c.turn(e) is None
    ]
    assert sorted(unresolved) == ["D10:19", "D4:36"]


def test_category_mapping_is_the_verified_one() -> None:
    assert CATEGORY_NAMES == {
        1: "multi_hop",
        2: "temporal",
        3: "open_domain",
        4: "single_hop",
        5: "adversarial",
    }


def test_split_evidence() -> None:
    assert split_evidence(["D9:1 D4:4 D4:6", "D:11:26", "D", "D30:05"]) == (
        ("D9:1", "D4:4", "D4:6", "D30:5"),
        ("D:11:26", "D"),
    )


# --- malformed files -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def raw_locomo(data_dir: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((data_dir / LOCOMO_FILE.relpath).read_text())
    return data[:2]


def _write(tmp_path: Path, data: Any) -> Path:
    p = tmp_path / "locomo10.json"
    p.write_text(json.dumps(data))
    return p


def _mutate(raw: list[dict[str, Any]], fn: Any) -> list[dict[str, Any]]:
    data = copy.deepcopy(raw)
    fn(data)
    return data


@pytest.mark.parametrize(
    ("mutation", "record", "field"),
    [
        (lambda d: d[1]["qa"][3].pop("question"), "conv-30 qa[3]", "question"),
        (lambda d: d[0]["qa"][7].__setitem__("category", 9), "conv-26 qa[7]", "category"),
        (lambda d: d[0]["qa"][0].__setitem__("category", "2"), "conv-26 qa[0]", "category"),
        (lambda d: d[0]["qa"][0].pop("answer"), "conv-26 qa[0]", "answer"),
        (lambda d: d[0]["qa"][2].__setitem__("evidence", "D1:3"), "conv-26 qa[2]", "evidence"),
        (lambda d: d[1]["conversation"].pop("speaker_b"), "conv-30", "speaker_b"),
        (
            lambda d: d[0]["conversation"]["session_2"][4].__setitem__("text", 5),
            "conv-26 session_2[4]",
            "text",
        ),
        (
            lambda d: d[0]["conversation"].__setitem__("session_3_date_time", "yesterday"),
            "conv-26",
            "session_3_date_time",
        ),
        (lambda d: d[1].__setitem__("sample_id", "conv-26"), "conversation[1]", "sample_id"),
    ],
)
def test_malformed_records_name_file_record_field(
    tmp_path: Path, raw_locomo: list[dict[str, Any]], mutation: Any, record: str, field: str
) -> None:
    path = _write(tmp_path, _mutate(raw_locomo, mutation))
    with pytest.raises(DataError) as err:
        load_locomo_file(path)
    assert err.value.file == str(path)
    assert err.value.record == record
    assert err.value.field == field
    assert str(path) in str(err.value) and field in str(err.value)


def test_truncated_json_is_reported(tmp_path: Path, data_dir: Path) -> None:
    p = tmp_path / "locomo10.json"
    p.write_bytes((data_dir / LOCOMO_FILE.relpath).read_bytes()[:5000])
    with pytest.raises(DataError, match=r"invalid JSON at line \d+"):
        load_locomo_file(p)


# --- pinned file resolution ------------------------------------------------------------------


def test_override_dir_checksum_mismatch_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "locomo10.json").write_text("[]")
    monkeypatch.setenv("MEMEVALS_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"expected 79fa87e9.*Replace it with the pinned file"):
        load_locomo()


def test_override_dir_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found under the data dir"):
        load_locomo(data_dir=tmp_path)


def test_data_dir_parameter_wins_over_env(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMEVALS_DATA_DIR", str(tmp_path))  # empty folder
    assert len(load_locomo(data_dir=data_dir)) == 10


class _FakeResponse(io.BytesIO):
    def __enter__(self) -> _FakeResponse:
        return self

    def __exit__(self, *a: object) -> None:
        self.close()


def test_cache_download_verify_and_repair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = b'{"ok": true}'
    pinned = PinnedFile("x/file.json", "https://example.invalid/file.json", "0" * 64)
    good = PinnedFile(pinned.relpath, pinned.url, hashlib.sha256(payload).hexdigest())
    monkeypatch.delenv("MEMEVALS_DATA_DIR", raising=False)
    monkeypatch.setenv("MEMEVALS_CACHE_DIR", str(tmp_path))
    calls: list[str] = []

    def fake_urlopen(url: str, timeout: float) -> _FakeResponse:
        calls.append(url)
        return _FakeResponse(payload)

    monkeypatch.setattr(_files.urllib.request, "urlopen", fake_urlopen)
    # a download that does not match the pinned digest is removed and reported
    with pytest.raises(DataError, match="does not match the pinned"):
        resolve(pinned)
    assert not (tmp_path / "x" / "file.json").exists()
    # a matching download is cached and reused without a second fetch
    assert resolve(good).read_bytes() == payload
    assert resolve(good).read_bytes() == payload
    assert len(calls) == 2
    # a corrupted cache entry is fetched again, never used
    (tmp_path / "x" / "file.json").write_bytes(b"corrupt")
    assert resolve(good).read_bytes() == payload
    assert len(calls) == 3
    assert not list((tmp_path / "x").glob("*.part"))


def test_download_refuses_plain_http(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMEVALS_DATA_DIR", raising=False)
    monkeypatch.setenv("MEMEVALS_CACHE_DIR", str(tmp_path))
    with pytest.raises(DataError, match="non-HTTPS"):
        resolve(PinnedFile("a.json", "http://example.invalid/a.json", "0" * 64))


def test_offline_download_failure_explains_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMEVALS_DATA_DIR", raising=False)
    monkeypatch.setenv("MEMEVALS_CACHE_DIR", str(tmp_path))

    def offline(url: str, timeout: float) -> None:
        raise OSError("Name or service not known")

    monkeypatch.setattr(_files.urllib.request, "urlopen", offline)
    with pytest.raises(DataError, match="MEMEVALS_DATA_DIR"):
        resolve(LOCOMO_FILE)

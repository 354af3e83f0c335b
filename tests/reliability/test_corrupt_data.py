"""Corrupt data for all three adapters, and a cache that is stale, read-only or full.

Every bad input must give one DataError that names the file, the record and the field (or, for a
bad cache entry, a clean re-download), and nothing may be partially loaded: a loader returns
everything or raises. Cache writes go to a temporary file that is flushed, verified and then
renamed, so no reader ever sees a partial or unverified file. Downloads are faked at
``urllib.request.urlopen``: everything above it (resolve, download, verification) is the real
code.
"""

from __future__ import annotations

import copy
import errno
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reliability_figures import count, fuzz

from memevals.benchmarks.locomo.data import LOCOMO_FILE, load_locomo, load_locomo_file
from memevals.benchmarks.locomo_plus.data import (
    LOCOMO_PLUS_FILE,
    load_locomo_plus,
    load_locomo_plus_file,
)
from memevals.benchmarks.longmemeval.data import (
    FILES,
    load_longmemeval,
    load_longmemeval_file,
    locate,
)
from memevals.core import files as _files
from memevals.core.files import DataError, PinnedFile, resolve

REPO = Path(__file__).resolve().parents[2]
LME_DIR = REPO / "tests" / "fixtures"
LME_ORACLE = LME_DIR / "longmemeval" / "longmemeval_oracle.json"
DATA = Path(os.environ["MEMEVALS_DATA_DIR"])

Mutation = Callable[[Any], Any]


def _raw(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def locomo_raw() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = _raw(DATA / LOCOMO_FILE.relpath)
    return data[:2]


@pytest.fixture(scope="module")
def plus_raw() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = _raw(DATA / LOCOMO_PLUS_FILE.relpath)
    return data[:12]


def _small_locomo() -> bytes:
    """One conversation cut to two sessions and a few questions: small enough to fuzz."""
    conv = copy.deepcopy(_raw(DATA / LOCOMO_FILE.relpath)[0])
    c = conv["conversation"]
    keep = {"session_1", "session_2", "session_1_date_time", "session_2_date_time"}
    for key in [k for k in c if k.startswith("session_") and k not in keep]:
        del c[key]
    c["session_1"] = c["session_1"][:4]
    c["session_2"] = c["session_2"][:3]
    conv["qa"] = conv["qa"][:6]
    for key in ("observation", "session_summary", "event_summary"):
        conv.pop(key, None)
    return json.dumps([conv], ensure_ascii=False).encode("utf-8")


SMALL = {
    "locomo": _small_locomo(),
    "locomo_plus": json.dumps(_raw(DATA / LOCOMO_PLUS_FILE.relpath)[:3]).encode("utf-8"),
    "longmemeval": LME_ORACLE.read_bytes(),
}
LOADERS: dict[str, Callable[[Path], list[Any]]] = {
    "locomo": load_locomo_file,
    "locomo_plus": load_locomo_plus_file,
    "longmemeval": load_longmemeval_file,
}
RECORDS = {"locomo": 1, "locomo_plus": 3, "longmemeval": 16}


def _write(tmp_path: Path, data: Any, name: str = "data.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def _expect(load: Callable[[Path], Any], path: Path, record: str | None, field: str | None) -> str:
    with pytest.raises(DataError) as err:
        load(path)
    exc = err.value
    count("corrupt data and cache faults injected")
    assert exc.file == str(path)
    assert exc.record == record
    assert exc.field == field
    message = str(exc)
    assert message.startswith(f"file {path}")
    if record:
        assert f"record {record}" in message
    if field:
        assert f"field '{field}'" in message
    return message


# -- byte-level damage --------------------------------------------------------------------------


@pytest.mark.parametrize("adapter", sorted(SMALL))
@fuzz(40)
@given(data=st.data())
def test_truncation_anywhere_is_one_clear_error(adapter: str, data: st.DataObject) -> None:
    """A JSON array cut short can never parse; the error names the file and says it is cut."""
    count("generated cases")
    raw = SMALL[adapter]
    cut = data.draw(st.integers(0, len(raw.rstrip()) - 1))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "cut.json"
        path.write_bytes(raw[:cut])
        with pytest.raises(DataError) as err:
            LOADERS[adapter](path)
    count("corrupt data and cache faults injected")
    assert err.value.file == str(path)
    assert "invalid JSON" in str(err.value) or "expected a JSON array" in str(err.value)


@pytest.mark.parametrize("adapter", sorted(SMALL))
@fuzz(60)
@given(data=st.data())
def test_any_damage_is_parsed_whole_or_one_data_error(adapter: str, data: st.DataObject) -> None:
    """Overwritten, inserted or deleted bytes: the file still parses completely (the damage hit
    a string) or gives a DataError; never another exception, never a partial list."""
    count("generated cases")
    raw = SMALL[adapter]
    pos = data.draw(st.integers(0, len(raw) - 1))
    junk = data.draw(
        st.sampled_from([b"}", b"]", b"{", b"[", b",", b'"', b"\\", b"\xff\xfe", b"null"])
        | st.binary(min_size=1, max_size=4)
    )
    how = data.draw(st.sampled_from(["insert", "overwrite", "delete"]))
    if how == "insert":
        damaged = raw[:pos] + junk + raw[pos:]
    elif how == "overwrite":
        damaged = raw[:pos] + junk + raw[pos + len(junk) :]
    else:
        damaged = raw[:pos] + raw[pos + data.draw(st.integers(1, 8)) :]
    path = _tmp_bytes(damaged)
    try:
        loaded = LOADERS[adapter](path)
    except DataError as exc:
        count("corrupt data and cache faults injected")
        assert exc.file == str(path)
    else:
        assert len(loaded) == RECORDS[adapter]
    finally:
        path.unlink()


def _tmp_bytes(content: bytes) -> Path:
    fd, name = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "wb") as fh:
        fh.write(content)
    return Path(name)


@pytest.mark.parametrize("adapter", ["locomo", "locomo_plus"])
def test_deep_nesting_is_a_data_error(tmp_path: Path, adapter: str) -> None:
    path = tmp_path / "deep.json"
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(DataError, match="nested too deeply"):
        LOADERS[adapter](path)
    count("corrupt data and cache faults injected")


@pytest.mark.parametrize("adapter", sorted(SMALL))
@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "invalid JSON|expected a JSON array"),
        (b"{}", "expected a (list|JSON array)"),
        (b'"text"', "expected a (list|JSON array)"),
        (b"\xff\xfe[]", "not UTF-8|invalid JSON|expected a JSON array"),
    ],
)
def test_wrong_top_level(tmp_path: Path, adapter: str, content: bytes, match: str) -> None:
    path = tmp_path / "top.json"
    path.write_bytes(content)
    with pytest.raises(DataError, match=match) as err:
        LOADERS[adapter](path)
    count("corrupt data and cache faults injected")
    assert err.value.file == str(path)


# -- schema damage: every error names file, record and field -----------------------------------


def _set(path: str, value: Any) -> Mutation:
    """Mutation setting (or, with value=..., deleting) a nested key: 'a.0.b'."""

    def apply(data: Any) -> Any:
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        key: Any = int(last) if isinstance(node, list) else last
        if value is ...:
            del node[key]
        else:
            node[key] = value
        return data

    return apply


LOCOMO_CASES: list[tuple[str, Mutation, str | None, str | None]] = [
    ("record not an object", _set("1", 7), "conversation[1]", None),
    ("missing sample_id", _set("0.sample_id", ...), "conversation[0]", "sample_id"),
    ("duplicate sample_id", _set("1.sample_id", "conv-26"), "conversation[1]", "sample_id"),
    ("sample_id with a NUL", _set("1.sample_id", "conv\x0030"), "conversation[1]", "sample_id"),
    ("sample_id with a newline", _set("1.sample_id", "conv\n30"), "conversation[1]",
     "sample_id"),
    ("unknown category", _set("0.qa.4.category", 6), "conv-26 qa[4]", "category"),
    ("category as text", _set("0.qa.4.category", "2"), "conv-26 qa[4]", "category"),
    ("category as bool", _set("0.qa.4.category", True), "conv-26 qa[4]", "category"),
    ("answer as list", _set("1.qa.0.answer", ["x"]), "conv-30 qa[0]", "answer"),
    ("missing gold", _set("1.qa.0.answer", ...), "conv-30 qa[0]", "answer"),
    ("missing question", _set("0.qa.9.question", ...), "conv-26 qa[9]", "question"),
    ("evidence as text", _set("0.qa.1.evidence", "D1:3"), "conv-26 qa[1]", "evidence"),
    ("evidence with a number", _set("0.qa.1.evidence", [3]), "conv-26 qa[1]", "evidence"),
    ("qa as object", _set("0.qa", {}), "conv-26", "qa"),
    ("missing speaker", _set("0.conversation.speaker_a", ...), "conv-26", "speaker_a"),
    ("turn text as number", _set("1.conversation.session_3.2.text", 5), "conv-30 session_3[2]",
     "text"),
    ("turn missing dia_id", _set("0.conversation.session_1.0.dia_id", ...),
     "conv-26 session_1[0]", "dia_id"),
    ("bad session date", _set("0.conversation.session_2_date_time", "soon"), "conv-26",
     "session_2_date_time"),
    ("session as text", _set("0.conversation.session_4", "hello"), "conv-26", "session_4"),
    ("empty session", _set("0.conversation.session_4", []), "conv-26", "session_4"),
    ("observation entry", _set("0.observation.session_1_observation", []),
     "conv-26 observation", "session_1_observation"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutation", "record", "field"),
    [case[1:] for case in LOCOMO_CASES],
    ids=[case[0] for case in LOCOMO_CASES],
)
def test_locomo_schema_errors(
    tmp_path: Path,
    locomo_raw: list[dict[str, Any]],
    mutation: Mutation,
    record: str | None,
    field: str | None,
) -> None:
    path = _write(tmp_path, mutation(copy.deepcopy(locomo_raw)))
    _expect(load_locomo_file, path, record, field)


PLUS_CASES: list[tuple[str, Mutation, str | None, str | None]] = [
    ("record not an object", _set("3", "cue"), "instance 3", None),
    ("unknown relation", _set("2.relation_type", "causality"), "instance 2", "relation_type"),
    ("missing relation", _set("2.relation_type", ...), "instance 2", "relation_type"),
    ("cue as number", _set("5.cue_dialogue", 12), "instance 5", "cue_dialogue"),
    ("cue without speakers", _set("5.cue_dialogue", "I love my dog."), "instance 5",
     "cue_dialogue"),
    ("speaker without text", _set("5.cue_dialogue", "A: hi\nB:   "), "instance 5",
     "cue_dialogue"),
    ("empty trigger", _set("7.trigger_query", " "), "instance 7", "trigger_query"),
    ("missing time gap", _set("1.time_gap", ...), "instance 1", "time_gap"),
    ("similarity as text", _set("0.final_similarity_score", "0.8"), "instance 0",
     "final_similarity_score"),
    ("similarity as bool", _set("0.final_similarity_score", False), "instance 0",
     "final_similarity_score"),
    ("model name as list", _set("11.model_name", ["gpt"]), "instance 11", "model_name"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutation", "record", "field"),
    [case[1:] for case in PLUS_CASES],
    ids=[case[0] for case in PLUS_CASES],
)
def test_locomo_plus_schema_errors(
    tmp_path: Path,
    plus_raw: list[dict[str, Any]],
    mutation: Mutation,
    record: str | None,
    field: str | None,
) -> None:
    path = _write(tmp_path, mutation(copy.deepcopy(plus_raw)))
    _expect(load_locomo_plus_file, path, record, field)


def test_locomo_plus_ids_come_from_position(tmp_path: Path, plus_raw: list[dict[str, Any]]) -> None:
    """LoCoMo-Plus has no id field: a duplicated record gets its own positional id, so two
    samples can never share one (and a host is picked by position, as upstream)."""
    path = _write(tmp_path, [plus_raw[0], plus_raw[0], *plus_raw[1:]])
    ids = [inst.sample_id for inst in load_locomo_plus_file(path)]
    assert ids[:2] == ["plus-0", "plus-1"] and len(set(ids)) == len(ids)


LME_CASES: list[tuple[str, Mutation, str | None, str | None]] = [
    ("record not an object", _set("4", [1]), "instance[4]", None),
    ("missing question_id", _set("4.question_id", ...), "instance[4]", "question_id"),
    ("empty question_id", _set("4.question_id", ""), "instance[4]", "question_id"),
    # Inspect names logged samples after their ids: one with a NUL byte vanished from the log
    ("question_id with a NUL", _set("4.question_id", "fx\x00y"), "instance[4]", "question_id"),
    ("question_id with a tab", _set("4.question_id", "fx\ty"), "instance[4]", "question_id"),
    ("duplicate question_id", _set("5.question_id", "fx01a2b3"), "fx01a2b3", "question_id"),
    ("unknown type", _set("2.question_type", "multi-hop"), "fx03e6f7_abs", "question_type"),
    ("answer as list", _set("6.answer", ["a"]), "fx07a5b6", "answer"),
    ("answer as bool", _set("6.answer", True), "fx07a5b6", "answer"),
    ("bad question date", _set("7.question_date", "2023-05-20"), "fx08c7d8", "question_date"),
    ("impossible date", _set("7.question_date", "2023/02/30 (Thu) 10:00"), "fx08c7d8",
     "question_date"),
    ("misaligned dates", _set("8.haystack_dates", []), "fx09e9f0", "haystack_sessions"),
    ("session id as number", _set("8.haystack_session_ids.0", 3), "fx09e9f0",
     "haystack_session_ids[0]"),
    ("turn role", _set("9.haystack_sessions.0.1.role", "system"), "fx10a1b2_abs",
     "haystack_sessions[0][1].role"),
    ("turn content", _set("9.haystack_sessions.0.0.content", None), "fx10a1b2_abs",
     "haystack_sessions[0][0].content"),
    ("has_answer as text", _set("9.haystack_sessions.0.0.has_answer", "yes"), "fx10a1b2_abs",
     "haystack_sessions[0][0].has_answer"),
    ("missing question", _set("15.question", ...), "fx16a3b4_abs", "question"),
    ("answer sessions", _set("15.answer_session_ids", "s1"), "fx16a3b4_abs",
     "answer_session_ids"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutation", "record", "field"),
    [case[1:] for case in LME_CASES],
    ids=[case[0] for case in LME_CASES],
)
def test_longmemeval_schema_errors(
    tmp_path: Path, mutation: Mutation, record: str | None, field: str | None
) -> None:
    path = _write(tmp_path, mutation(_raw(LME_ORACLE)))
    _expect(load_longmemeval_file, path, record, field)


def test_a_bad_last_instance_loads_nothing(tmp_path: Path) -> None:
    """LongMemEval streams, but neither the loader nor the Inspect task keeps a partial list:
    a broken 16th instance leaves nothing behind."""
    from memevals.inspect_tasks.longmemeval import longmemeval

    data = _raw(LME_ORACLE)
    data[-1]["question_type"] = "unknown"
    (tmp_path / "longmemeval").mkdir()
    path = _write(tmp_path / "longmemeval", data, "longmemeval_oracle.json")
    with pytest.raises(DataError, match="fx16a3b4_abs"):
        load_longmemeval_file(path)
    with pytest.raises(DataError, match="fx16a3b4_abs"):
        load_longmemeval("oracle", tmp_path)
    with pytest.raises(DataError, match="fx16a3b4_abs"):
        longmemeval(variant="oracle", data_dir=str(tmp_path))
    count("corrupt data and cache faults injected", 3)


# -- the download cache -------------------------------------------------------------------------


class FakeServer:
    """Stands in for urllib.request.urlopen: serves fixed bytes per URL in small blocks, records
    each request, and runs `on_block` between blocks (to look at the cache mid-download)."""

    def __init__(self, files: dict[str, bytes], block: int = 64 * 1024) -> None:
        self.files = dict(files)
        self.block = block
        self.requests: list[str] = []
        self.on_block: Callable[[], None] | None = None
        self.fail_after: int | None = None  # blocks served before the connection drops

    def __call__(self, url: str, timeout: float) -> Any:
        assert url.startswith("https://"), url
        self.requests.append(url)
        if url not in self.files:
            raise OSError(f"404 for {url}")
        return _Response(self, self.files[url])


class _Response:
    def __init__(self, server: FakeServer, payload: bytes) -> None:
        self.server = server
        self.stream = io.BytesIO(payload)
        self.served = 0

    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stream.close()

    def read(self, size: int = -1) -> bytes:
        if self.server.fail_after is not None and self.served >= self.server.fail_after:
            raise ConnectionResetError(errno.ECONNRESET, "connection reset by peer")
        if self.served and self.server.on_block is not None:
            self.server.on_block()
        self.served += 1
        return self.stream.read(min(size, self.server.block) if size > 0 else self.server.block)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, FakeServer]]:
    """An empty cache, no data dir, and a fake network serving the real pinned files."""
    root = tmp_path / "cache"
    monkeypatch.delenv("MEMEVALS_DATA_DIR", raising=False)
    monkeypatch.setenv("MEMEVALS_CACHE_DIR", str(root))
    server = FakeServer(
        {
            LOCOMO_FILE.url: (DATA / LOCOMO_FILE.relpath).read_bytes(),
            LOCOMO_PLUS_FILE.url: (DATA / LOCOMO_PLUS_FILE.relpath).read_bytes(),
            FILES["oracle"].url: LME_ORACLE.read_bytes(),
        }
    )
    monkeypatch.setattr(_files.urllib.request, "urlopen", server)
    yield root, server


def _leftovers(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.part"))


def test_download_is_verified_cached_and_reused(cache: tuple[Path, FakeServer]) -> None:
    root, server = cache
    assert len(load_locomo()) == 10
    assert len(load_locomo_plus()) == 401
    assert server.requests == [LOCOMO_FILE.url, LOCOMO_PLUS_FILE.url]
    assert len(load_locomo()) == 10 and len(load_locomo_plus()) == 401
    assert len(server.requests) == 2  # second use: no network
    assert _files.sha256_of(root / LOCOMO_FILE.relpath) == LOCOMO_FILE.sha256
    assert _leftovers(root) == []


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "other file"])
def test_a_corrupt_cache_entry_is_replaced_by_a_clean_download(
    cache: tuple[Path, FakeServer], damage: str
) -> None:
    root, server = cache
    path = resolve(LOCOMO_FILE)
    good = path.read_bytes()
    bad = {
        "flip": good[:1000] + bytes([good[1000] ^ 1]) + good[1001:],
        "truncate": good[: len(good) // 2],
        "empty": b"",
        "other file": (DATA / LOCOMO_PLUS_FILE.relpath).read_bytes(),
    }[damage]
    path.write_bytes(bad)
    count("corrupt data and cache faults injected")
    assert resolve(LOCOMO_FILE) == path
    assert path.read_bytes() == good
    assert server.requests == [LOCOMO_FILE.url] * 2
    assert len(load_locomo()) == 10
    assert _leftovers(root) == []


def test_a_download_that_fails_verification_never_reaches_the_cache(
    cache: tuple[Path, FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, server = cache
    server.files[LOCOMO_FILE.url] = b"<html>captive portal</html>"
    renames: list[tuple[str, str]] = []
    real_replace = os.replace

    def watch(src: Any, dst: Any) -> None:
        renames.append((str(src), str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(_files.os, "replace", watch)
    with pytest.raises(DataError, match="does not match the pinned") as err:
        load_locomo()
    count("corrupt data and cache faults injected")
    assert err.value.file == str(root / LOCOMO_FILE.relpath)
    assert renames == []  # the bad bytes were never moved into place, not even for a moment
    assert not (root / LOCOMO_FILE.relpath).exists()
    assert _leftovers(root) == []


def test_the_cache_never_shows_a_partial_file(cache: tuple[Path, FakeServer]) -> None:
    """While a download streams, the cache path holds the old file (or nothing), never a
    prefix of the new one."""
    root, server = cache
    path = root / LOCOMO_FILE.relpath
    seen: list[bytes | None] = []
    server.on_block = lambda: seen.append(path.read_bytes() if path.exists() else None)
    resolve(LOCOMO_FILE)
    assert len(seen) > 10 and set(seen) == {None}
    # again over a corrupt entry: mid-download the corrupt entry is still what is there
    path.write_bytes(b"stale")
    seen.clear()
    resolve(LOCOMO_FILE)
    assert len(seen) > 10 and set(seen) == {b"stale"}
    assert _files.sha256_of(path) == LOCOMO_FILE.sha256


def test_a_dropped_connection_leaves_nothing(cache: tuple[Path, FakeServer]) -> None:
    root, server = cache
    server.fail_after = 5
    with pytest.raises(DataError, match=r"could not download .*connection reset") as err:
        load_locomo()
    count("corrupt data and cache faults injected")
    assert err.value.file == str(root / LOCOMO_FILE.relpath)
    assert "MEMEVALS_DATA_DIR" in str(err.value)
    assert not (root / LOCOMO_FILE.relpath).exists()
    assert _leftovers(root) == []
    server.fail_after = None
    assert len(load_locomo()) == 10  # the next try starts clean


def test_an_interrupted_download_leaves_nothing(cache: tuple[Path, FakeServer]) -> None:
    root, server = cache

    def interrupt() -> None:
        raise KeyboardInterrupt

    server.on_block = interrupt
    with pytest.raises(KeyboardInterrupt):
        load_locomo()
    assert list(root.rglob("*.json*")) == []


def _read_only(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Make `folder` unwritable: chmod where that binds, else (as root) fail the way a
    read-only mount does."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(_files.tempfile, "mkstemp", refuse)


def test_a_read_only_cache(cache: tuple[Path, FakeServer], monkeypatch: pytest.MonkeyPatch) -> None:
    """A good entry is still read from a read-only cache; a corrupt one cannot be replaced:
    one clear error that says what to do, and the corrupt bytes are never used."""
    root, server = cache
    resolve(LOCOMO_FILE)
    resolve(LOCOMO_PLUS_FILE)
    (root / LOCOMO_PLUS_FILE.relpath).write_bytes(b"[]")
    try:
        _read_only(monkeypatch, root / "locomo")
        _read_only(monkeypatch, root / "locomo_plus")
        assert len(load_locomo()) == 10
        with pytest.raises(DataError, match="cannot write the cache") as err:
            load_locomo_plus()
        count("corrupt data and cache faults injected")
        assert err.value.file == str(root / LOCOMO_PLUS_FILE.relpath)
        assert "MEMEVALS_CACHE_DIR" in str(err.value) and "MEMEVALS_DATA_DIR" in str(err.value)
        assert len(server.requests) == 2  # nothing fetched that could not be stored
    finally:
        (root / "locomo").chmod(0o755)
        (root / "locomo_plus").chmod(0o755)


def test_a_read_only_cache_with_nothing_cached(
    cache: tuple[Path, FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = cache
    _read_only(monkeypatch, root / "locomo")
    try:
        with pytest.raises(DataError, match="cannot write the cache") as err:
            load_locomo()
        count("corrupt data and cache faults injected")
        assert err.value.file == str(root / LOCOMO_FILE.relpath)
    finally:
        (root / "locomo").chmod(0o755)


@pytest.mark.parametrize("when", ["write", "fsync", "rename"])
def test_a_full_disk(
    cache: tuple[Path, FakeServer], monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """ENOSPC while writing, flushing or renaming: one clear error naming the cache file, no
    temporary file left, no partial entry, and the previous entry (if any) untouched."""
    root, _ = cache
    path = root / LOCOMO_FILE.relpath
    path.parent.mkdir(parents=True)
    path.write_bytes(b"previous, corrupt entry")
    full = OSError(errno.ENOSPC, "No space left on device")
    if when == "write":
        written: list[int] = []
        real_write = _files._write_all

        def write_until_full(fd: int, data: bytes) -> None:
            if sum(written) > 1_000_000:
                raise full
            written.append(len(data))
            real_write(fd, data)

        monkeypatch.setattr(_files, "_write_all", write_until_full)
    elif when == "fsync":

        def fsync(fd: int) -> None:
            raise full

        monkeypatch.setattr(_files.os, "fsync", fsync)
    else:

        def replace(src: Any, dst: Any) -> None:
            raise full

        monkeypatch.setattr(_files.os, "replace", replace)
    with pytest.raises(DataError, match=r"cannot write the cache \(No space left on device") as err:
        load_locomo()
    count("corrupt data and cache faults injected")
    assert err.value.file == str(path)
    assert path.read_bytes() == b"previous, corrupt entry"
    assert _leftovers(root) == []


def test_longmemeval_downloads_are_checked_before_use(
    cache: tuple[Path, FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Oracle has no published digest: a download of implausible size is removed; S has one:
    wrong bytes never reach the cache."""
    root, server = cache
    with pytest.raises(DataError, match="outside the plausible"):
        locate("oracle")
    assert not (root / FILES["oracle"].relpath).exists()
    server.files[FILES["s"].url] = LME_ORACLE.read_bytes()
    with pytest.raises(DataError, match="does not match the pinned"):
        locate("s")
    assert not (root / FILES["s"].relpath).exists()
    assert _leftovers(root) == []
    count("corrupt data and cache faults injected", 2)


def test_hand_made_pin_with_a_digest_of_other_bytes(cache: tuple[Path, FakeServer]) -> None:
    root, server = cache
    payload = b"[1, 2, 3]"
    server.files["https://example.org/x.json"] = payload
    pin = PinnedFile("x/x.json", "https://example.org/x.json", hashlib.sha256(b"other").hexdigest())
    with pytest.raises(DataError, match="does not match the pinned"):
        resolve(pin)
    good = PinnedFile(pin.relpath, pin.url, hashlib.sha256(payload).hexdigest())
    assert resolve(good).read_bytes() == payload
    assert _leftovers(root) == []

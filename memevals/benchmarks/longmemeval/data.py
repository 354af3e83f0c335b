"""LongMemEval (Wu et al., ICLR 2025): the oracle / S / M files as frozen dataclasses, streamed.

All three files are a JSON array of question instances. The M file is about 2.7 GB, so every
variant is read with `ijson`, one instance at a time, and each instance is validated and turned
into dataclasses before the next is read: memory stays bounded by one instance plus what the
caller keeps. A parse error is reported with the byte offset where the parser stopped.

Only `longmemeval_s_cleaned.json` has a published sha256 (benchmarks/longmemeval/README.md#data).
The oracle and M
files have no known digest: they are checked for size (downloads) and structure (every
instance, every field), and the digest actually read is computed while streaming and exposed,
so a log can say which bytes produced it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

import ijson

from memevals.core.files import (
    DataError,
    PinnedFile,
    cache_dir,
    cached_download,
    data_dir_file,
    override_dir,
    resolve,
)
from memevals.core.validation import Reader

__all__ = [
    "CATEGORIES",
    "FILES",
    "HF_REPO",
    "QUESTION_TYPES",
    "REVISION",
    "ROLES",
    "URL_PATTERN",
    "VARIANTS",
    "Instance",
    "LongMemEvalFile",
    "Session",
    "Turn",
    "data_file",
    "iter_instances",
    "iter_longmemeval",
    "load_longmemeval",
    "load_longmemeval_file",
    "locate",
    "parse_instance",
]

HF_REPO = "xiaowu0162/longmemeval-cleaned"
#: The revision third parties pin (benchmarks/longmemeval/README.md#data); every download uses it.
REVISION = "98d7416c24c778c2fee6e6f3006e7a073259d48f"
URL_PATTERN = "https://huggingface.co/datasets/{repo}/resolve/{revision}/{file}"

VARIANTS: tuple[str, ...] = ("oracle", "s", "m")

#: question_type as written in the file -> category name used in memevals (snake case).
QUESTION_TYPES: dict[str, str] = {
    "single-session-user": "single_session_user",
    "single-session-assistant": "single_session_assistant",
    "single-session-preference": "single_session_preference",
    "multi-session": "multi_session",
    "temporal-reasoning": "temporal_reasoning",
    "knowledge-update": "knowledge_update",
}
#: The six per-type categories in the paper's table order, then the abstention slice.
CATEGORIES: tuple[str, ...] = (*QUESTION_TYPES.values(), "abstention")

_DATE = re.compile(r"(\d{4})/(\d{2})/(\d{2}) \((Mon|Tue|Wed|Thu|Fri|Sat|Sun)\) (\d{2}):(\d{2})")
ROLES = ("user", "assistant")


@dataclass(frozen=True)
class LongMemEvalFile:
    """One released file: where it lives under the data dir, its URL, and what we know of it."""

    variant: str
    filename: str
    sha256: str | None  # None: no published digest (oracle, M)
    size: int | None  # exact size when known
    size_range: tuple[int, int] | None = None  # plausible size for a file with no digest

    @property
    def relpath(self) -> str:
        return f"longmemeval/{self.filename}"

    @property
    def url(self) -> str:
        return URL_PATTERN.format(repo=HF_REPO, revision=REVISION, file=self.filename)


FILES: dict[str, LongMemEvalFile] = {
    # ≈15.4 MB [unverified]: accept a wide band, the per-instance check does the real work
    "oracle": LongMemEvalFile(
        "oracle", "longmemeval_oracle.json", None, None, (5_000_000, 60_000_000)
    ),
    "s": LongMemEvalFile(
        "s",
        "longmemeval_s_cleaned.json",
        "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442",
        277_383_467,
    ),
    # ≈2.75 GB [unverified]
    "m": LongMemEvalFile(
        "m", "longmemeval_m_cleaned.json", None, None, (1_500_000_000, 4_500_000_000)
    ),
}


@dataclass(frozen=True)
class Turn:
    role: str  # "user" | "assistant"
    content: str
    position: int  # 1-based among all turns of its session (the official turn-id suffix)
    has_answer: bool = False  # evidence turn; never shown to the model


@dataclass(frozen=True)
class Session:
    session_id: str
    date: str  # as written, e.g. "2023/05/20 (Sat) 02:21"
    when: datetime
    turns: tuple[Turn, ...]
    index: int  # position in the file's haystack (0-based)

    def turn_id(self, turn: Turn) -> str:
        """Official turn id `<session_id>_<t>`, t counting all turns from 1."""
        return f"{self.session_id}_{turn.position}"

    @property
    def has_user_evidence(self) -> bool:
        return any(t.has_answer and t.role == "user" for t in self.turns)


@dataclass(frozen=True)
class Instance:
    """One question with its haystack. `sessions` keeps the file's order (unsorted in oracle)."""

    question_id: str
    question_type: str  # as in the file, e.g. "temporal-reasoning"
    question: str
    answer: str | int | float  # a rubric (preference) or an explanation (`_abs`) for some types
    question_date: str
    question_when: datetime
    haystack_session_ids: tuple[str, ...]
    haystack_dates: tuple[str, ...]
    sessions: tuple[Session, ...]
    answer_session_ids: tuple[str, ...]

    @property
    def category(self) -> str:
        """The question type in snake case (`_abs` items keep their type)."""
        return QUESTION_TYPES[self.question_type]

    @property
    def is_abstention(self) -> bool:
        # the official judge picks the abstention prompt for any id containing "_abs"
        return "_abs" in self.question_id

    @property
    def answer_text(self) -> str:
        return self.answer if isinstance(self.answer, str) else str(self.answer)

    def sessions_by_date(self) -> tuple[Session, ...]:
        """Chronological; sessions with the same date keep their file order (stable sort)."""
        return tuple(sorted(self.sessions, key=lambda s: s.when))

    def answer_sessions(self) -> tuple[Session, ...]:
        wanted = set(self.answer_session_ids)
        return tuple(s for s in self.sessions if s.session_id in wanted)

    @property
    def missing_answer_session_ids(self) -> tuple[str, ...]:
        present = {s.session_id for s in self.sessions}
        return tuple(i for i in self.answer_session_ids if i not in present)


# ---------------------------------------------------------------------------------------------
# Locating the files


def data_file(variant: str) -> LongMemEvalFile:
    if variant not in FILES:
        raise ValueError(f"variant={variant!r} is not one of {', '.join(VARIANTS)}")
    return FILES[variant]


def _size_problem(path: Path, spec: LongMemEvalFile) -> str | None:
    """Why `path` cannot be `spec`'s file judging by its size, or None."""
    size = path.stat().st_size
    if spec.size is not None and size != spec.size:
        return (
            f"size is {size} bytes, expected {spec.size} (revision {REVISION}); the file is "
            "truncated or from another release. Restore the pinned file."
        )
    if spec.size_range is not None and not spec.size_range[0] <= size <= spec.size_range[1]:
        lo, hi = spec.size_range
        return (
            f"size is {size} bytes, outside the plausible {lo}-{hi} for {spec.filename} at "
            f"revision {REVISION}; the download is truncated or not the dataset file."
        )
    return None


#: The option that reads a same-schema copy of the S file unverified, for the checksum error.
UNVERIFIED_FIX = (
    "pass -T verify_checksum=false (lm-eval: --metadata '{\"verify_checksum\": false}') to "
    "read a same-schema copy unverified"
)


def locate(
    variant: str = "s",
    data_dir: str | os.PathLike[str] | None = None,
    *,
    verify_checksum: bool = True,
) -> Path:
    """A local path for `variant`'s file: `<data_dir or MEMEVALS_DATA_DIR>/longmemeval/<file>`,
    else the per-user cache, downloading the pinned revision once.

    The S file is verified by sha256 (via `resolve`) unless `verify_checksum` is false, which
    only applies to a data-dir file (a same-schema copy such as the test fixture). Oracle and M
    have no published digest: a data-dir file is used as given (its structure is checked while
    it is read), a download must have a plausible size.
    """
    spec = data_file(variant)
    override = override_dir(data_dir)
    if spec.sha256 is not None and (verify_checksum or override is None):
        return resolve(
            PinnedFile(spec.relpath, spec.url, spec.sha256, spec.size),
            data_dir,
            also=UNVERIFIED_FIX if override is not None else "",
        )
    if override is not None:
        return data_dir_file(override, spec.relpath, spec.url)  # structure checked when read
    path = cache_dir() / spec.relpath
    if path.is_file():
        if _size_problem(path, spec) is None:
            return path
        path.unlink(missing_ok=True)  # a bad cache entry (older release, torn copy): fetch again
    # the size is checked before the file is renamed into the cache: a rejected download never
    # appears at the cache path
    return cached_download(
        spec.url, spec.relpath, timeout=300.0, verify=lambda tmp: _size_problem(tmp, spec)
    )


# ---------------------------------------------------------------------------------------------
# Streaming parse


class _TrackingReader:
    """File wrapper that counts and hashes the bytes ijson reads and remembers the last block,
    so a parse error can be placed at a byte offset."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self.consumed = 0
        self.block_start = 0
        self.block = b""
        self.digest = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self._fh.read(n)
        if data:
            self.block_start = self.consumed
            self.block = data
            self.consumed += len(data)
            self.digest.update(data)
        return data


_CARET = "(right here) ------^"
_WORDISH = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+-")


def _error_text(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else ""
    return arg.decode("latin-1") if isinstance(arg, bytes) else str(arg)


def _locate_in_block(message: str, block: bytes) -> int | None:
    """yajl's verbose error shows the 30 bytes either side of where it stopped, with a caret;
    find the unique position in the block that renders to that context line."""
    lines = message.split("\n")
    try:
        at = next(i for i, line in enumerate(lines) if line.strip() == _CARET)
    except StopIteration:
        return None
    if at == 0:
        return None
    context = lines[at - 1]
    caret_col = lines[at].index("^")
    text = block.decode("latin-1").replace("\n", " ").replace("\r", " ")
    hits = []
    for off in range(len(block) + 1):
        start = max(0, off - 30)
        pad = 40 - off if off < 30 else 10
        rendered = " " * pad + text[start : off + 30]
        if rendered == context and pad + (off - start) == caret_col:
            hits.append(off)
            if len(hits) > 1:
                return None
    return hits[0] if hits else None


def _token_start(block: bytes, end: int) -> int:
    """yajl stops just after the offending token; step back to where that token starts."""
    if end <= 0:
        return 0
    last = block[end - 1]
    if last == ord('"'):  # a string: find its unescaped opening quote
        i = end - 2
        while i >= 0:
            if block[i] == ord('"'):
                j = i - 1
                while j >= 0 and block[j] == ord("\\"):
                    j -= 1
                if (i - 1 - j) % 2 == 0:
                    return i
            i -= 1
        return end - 1
    if last in _WORDISH:  # a number or literal
        i = end - 1
        while i > 0 and block[i - 1] in _WORDISH:
            i -= 1
        return i
    return end - 1


def _parse_error(
    path: Path, exc: Exception, reader: _TrackingReader, last_id: str | None
) -> DataError:
    message = _error_text(exc)
    first = message.strip().split("\n")[0]
    after = f"after question_id {last_id!r}" if last_id is not None else "before the first instance"
    if "premature EOF" in message or reader.consumed == 0:
        where = f"at byte {reader.consumed} (end of file)"
        hint = "The file is truncated; restore the pinned file."
    else:
        off = _locate_in_block(message, reader.block)
        end = reader.block_start + len(reader.block)
        where = (
            f"at byte {reader.block_start + _token_start(reader.block, off)}"
            if off is not None
            else f"between bytes {reader.block_start} and {end}"
        )
        hint = "The file is corrupt; restore the pinned file."
    # the record is unknown (the broken instance was never read); name the last good one
    return DataError(f"invalid JSON {where}, {after}: {first}. {hint}", file=path)


def _first_byte(fh: BinaryIO) -> bytes:
    while True:
        ch = fh.read(1)
        if not ch or not ch.isspace():
            return ch


def _open_array(p: Path) -> BinaryIO:
    """The file open at its start, once its first character says it holds a JSON array."""
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise DataError(f"cannot open ({exc})", file=p) from exc
    first = _first_byte(fh)
    if first != b"[":
        fh.close()
        raise DataError(
            "expected a JSON array of instances (first character '['), got "
            f"{first.decode('latin-1') or 'an empty file'!r}",
            file=p,
        )
    fh.seek(0)
    return fh


def _check_digest(
    p: Path, digest: str, expected_sha256: str | None, digest_out: list[str] | None
) -> None:
    """The bytes read are the pinned ones (when pinned); their digest goes to `digest_out`."""
    if expected_sha256 is not None and digest != expected_sha256:
        raise DataError(
            f"sha256 is {digest}, expected {expected_sha256} (revision {REVISION}). "
            "Restore the pinned file.",
            file=p,
        )
    if digest_out is not None:
        digest_out.append(digest)


def iter_instances(
    path: str | os.PathLike[str],
    *,
    expected_sha256: str | None = None,
    digest_out: list[str] | None = None,
    buf_size: int = 1 << 16,
) -> Iterator[Instance]:
    """Stream a LongMemEval JSON file one validated instance at a time.

    Raises DataError (file, question_id, field) on bad data, with the byte offset for a JSON
    syntax error. The sha256 of the bytes read is checked against `expected_sha256` at the end,
    and appended to `digest_out` when given.
    """
    p = Path(path)
    seen: set[str] = set()
    last_id: str | None = None
    count = 0
    with _open_array(p) as fh:
        reader = _TrackingReader(fh)
        items = ijson.items(reader, "item", use_float=True, buf_size=buf_size)
        while True:
            try:
                obj = next(items)
            except StopIteration:
                break
            except ijson.JSONError as exc:
                raise _parse_error(p, exc, reader, last_id) from exc
            inst = parse_instance(obj, p, count)
            if inst.question_id in seen:
                raise DataError(
                    "duplicate question_id", file=p, record=inst.question_id, field="question_id"
                )
            seen.add(inst.question_id)
            last_id = inst.question_id
            count += 1
            yield inst
        # hash whatever the parser did not need to read (only whitespace may follow the array)
        while rest := reader.read(1 << 20):
            if rest.strip():
                raise DataError(
                    f"unexpected data after the closing ']' near byte {reader.block_start}",
                    file=p,
                )
    if count == 0:
        raise DataError("the file holds no instances (empty array)", file=p)
    _check_digest(p, reader.digest.hexdigest(), expected_sha256, digest_out)


def _date(r: Reader, field: str, value: Any) -> datetime:
    if not isinstance(value, str):
        raise r.error(field, f"expected a date string, got {type(value).__name__}")
    m = _DATE.fullmatch(value.strip())
    if not m:
        raise r.error(field, f"cannot parse {value!r} as 'YYYY/MM/DD (Day) HH:MM'")
    year, month, day, _wd, hour, minute = m.groups()
    try:
        return datetime(int(year), int(month), int(day), int(hour), int(minute))
    except ValueError as exc:
        raise r.error(field, f"{value!r} is not a real date/time ({exc})") from exc


def _str_list(r: Reader, field: str) -> tuple[str, ...]:
    values = r.list_(field)
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise r.error(f"{field}[{i}]", f"expected a string, got {type(v).__name__}")
    return tuple(values)


def _turn(r: Reader, field: str, obj: Any, position: int) -> Turn:
    if not isinstance(obj, dict):
        raise r.error(field, f"expected a turn object, got {type(obj).__name__}")
    role = obj.get("role")
    if role not in ROLES:
        what = "missing" if "role" not in obj else f"{role!r} is not one of {', '.join(ROLES)}"
        raise r.error(f"{field}.role", what)
    content = obj.get("content")
    if not isinstance(content, str):
        what = "missing" if "content" not in obj else f"expected a string, got {type(content)}"
        raise r.error(f"{field}.content", what)
    has_answer = obj.get("has_answer", False)
    if not isinstance(has_answer, bool):
        raise r.error(f"{field}.has_answer", f"expected true/false, got {has_answer!r}")
    return Turn(role=role, content=content, position=position, has_answer=has_answer)


def parse_instance(obj: Any, file: Path, index: int) -> Instance:
    """Validate one decoded instance; errors name the file, question_id and field."""
    qid = obj.get("question_id") if isinstance(obj, dict) else None
    record = qid if isinstance(qid, str) and qid and qid.isprintable() else f"instance[{index}]"
    r = Reader(file, record, obj)
    question_id = r.id_("question_id")
    question_type = r.str_("question_type")
    if question_type not in QUESTION_TYPES:
        raise r.error(
            "question_type",
            f"unknown type {question_type!r}; expected one of {', '.join(QUESTION_TYPES)}",
        )
    answer = r.get("answer", (str, int, float))
    question_date = r.str_("question_date")
    question_when = _date(r, "question_date", question_date)
    ids = _str_list(r, "haystack_session_ids")
    dates = _str_list(r, "haystack_dates")
    raw_sessions = r.list_("haystack_sessions")
    if not (len(ids) == len(dates) == len(raw_sessions)):
        raise r.error(
            "haystack_sessions",
            f"{len(raw_sessions)} sessions but {len(ids)} haystack_session_ids and "
            f"{len(dates)} haystack_dates; the three lists must align",
        )
    sessions = []
    for i, (sid, date, turns_raw) in enumerate(zip(ids, dates, raw_sessions, strict=True)):
        field = f"haystack_sessions[{i}]"
        if not isinstance(turns_raw, list):
            raise r.error(field, f"expected a list of turns, got {type(turns_raw).__name__}")
        turns = tuple(_turn(r, f"{field}[{j}]", t, j + 1) for j, t in enumerate(turns_raw))
        when = _date(r, f"haystack_dates[{i}]", date)
        sessions.append(Session(session_id=sid, date=date, when=when, turns=turns, index=i))
    return Instance(
        question_id=question_id,
        question_type=question_type,
        question=r.str_("question"),
        answer=answer,
        question_date=question_date,
        question_when=question_when,
        haystack_session_ids=ids,
        haystack_dates=dates,
        sessions=tuple(sessions),
        answer_session_ids=_str_list(r, "answer_session_ids"),
    )


# ---------------------------------------------------------------------------------------------
# Public loaders


def iter_longmemeval(
    variant: str = "s",
    data_dir: str | os.PathLike[str] | None = None,
    *,
    verify_checksum: bool = True,
    digest_out: list[str] | None = None,
) -> Iterator[Instance]:
    """Stream the instances of a variant (oracle, s, m); memory stays bounded for M.

    `digest_out` receives the sha256 of the bytes read once the stream is exhausted.
    """
    path = locate(variant, data_dir, verify_checksum=verify_checksum)
    # `locate` already verified the S digest; nothing to re-check while streaming
    return iter_instances(path, digest_out=digest_out)


def load_longmemeval(
    variant: str = "s",
    data_dir: str | os.PathLike[str] | None = None,
    *,
    verify_checksum: bool = True,
) -> list[Instance]:
    """All instances of a variant in a list (fine for oracle and S; M needs several GB)."""
    return list(iter_longmemeval(variant, data_dir, verify_checksum=verify_checksum))


def load_longmemeval_file(path: str | os.PathLike[str]) -> list[Instance]:
    """Parse any same-schema file (fixtures, corrected copies) without a checksum."""
    return list(iter_instances(path))

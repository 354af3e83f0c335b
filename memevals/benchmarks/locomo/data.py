"""LoCoMo (Maharana et al., ACL 2024): the 10 released conversations as frozen dataclasses.

The file's category numbers do not follow the paper's order; `CATEGORY_NAMES` is the one place
that maps them (file 1 = multi-hop, 2 = temporal, 3 = open-domain, 4 = single-hop,
5 = adversarial; see benchmarks/locomo/README.md#categories).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from memevals.core.files import DataError, PinnedFile, resolve, sha256_of
from memevals.core.validation import Reader, load_json

__all__ = [
    "CATEGORY_IDS",
    "CATEGORY_NAMES",
    "LOCOMO_FILE",
    "PAPER_ORDER",
    "QA",
    "SESSION_DATE_FORMAT",
    "Conversation",
    "Event",
    "Observation",
    "Session",
    "Turn",
    "load_conversations",
    "load_locomo",
    "load_locomo_file",
    "parse_locomo",
    "select_conversations",
    "split_evidence",
]

LOCOMO_FILE = PinnedFile(
    relpath="locomo/locomo10.json",
    url="https://raw.githubusercontent.com/snap-research/LoCoMo/"
    "3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376/data/locomo10.json",
    sha256="79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
    size=2_805_274,
)

#: File category number -> name used everywhere in memevals (paper names, snake case).
CATEGORY_NAMES: dict[int, str] = {
    1: "multi_hop",
    2: "temporal",
    3: "open_domain",
    4: "single_hop",
    5: "adversarial",
}
CATEGORY_IDS: dict[str, int] = {name: num for num, name in CATEGORY_NAMES.items()}
#: The paper's table order (single-hop, multi-hop, temporal, open-domain, adversarial).
PAPER_ORDER: tuple[str, ...] = ("single_hop", "multi_hop", "temporal", "open_domain", "adversarial")

SESSION_DATE_FORMAT = "%I:%M %p on %d %B, %Y"
_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):0*(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;\s]+")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    img_url: tuple[str, ...] = ()
    blip_caption: str | None = None
    query: str | None = None
    re_download: bool = False


@dataclass(frozen=True)
class Session:
    index: int
    date_time: str  # as written in the file, e.g. "1:56 pm on 8 May, 2023"
    when: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class QA:
    index: int  # position in the conversation's qa list (stable sample ids)
    question: str
    answer: str | int | None  # int for 6 items; None for most adversarial items
    category: int  # file category number
    evidence: tuple[str, ...]  # raw strings, exactly as in the file (official recall uses these)
    evidence_ids: tuple[str, ...]  # well-formed ids, split and normalised ("D30:05" -> "D30:5")
    malformed_evidence: tuple[str, ...]  # pieces that are not dia ids ("D", "D:11:26")
    adversarial_answer: str | None = None

    @property
    def category_name(self) -> str:
        return CATEGORY_NAMES[self.category]


@dataclass(frozen=True)
class Observation:
    session: int
    speaker: str
    text: str
    dia_ids: tuple[str, ...]  # flattened: comma-joined strings and lists split, order kept


@dataclass(frozen=True)
class Event:
    session: int
    speaker: str
    text: str
    date: str


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    qa: tuple[QA, ...]
    observations: tuple[Observation, ...] = ()
    session_summaries: tuple[tuple[int, str], ...] = ()
    events: tuple[Event, ...] = ()
    _turn_index: dict[str, Turn] = field(default_factory=dict, compare=False, repr=False)

    def turn(self, dia_id: str) -> Turn | None:
        return self._turn_index.get(dia_id)

    @cached_property
    def turns(self) -> tuple[Turn, ...]:
        # Cached on the (frozen, immutable) conversation: prompts, metrics and annotations ask
        # for it per question.
        return tuple(t for s in self.sessions for t in s.turns)

    @cached_property
    def turn_positions(self) -> Mapping[str, int]:
        """dia id -> position in `turns` (of its last turn when an id repeats); read-only."""
        return MappingProxyType({t.dia_id: i for i, t in enumerate(self.turns)})

    @cached_property
    def first_turn_places(self) -> Mapping[str, tuple[int, int]]:
        """dia id -> (position in `turns`, position in `sessions`) of its first turn; read-only."""
        out: dict[str, tuple[int, int]] = {}
        at = 0
        for s, session in enumerate(self.sessions):
            for t in session.turns:
                out.setdefault(t.dia_id, (at, s))
                at += 1
        return MappingProxyType(out)

    def other_speaker(self, speaker: str) -> str:
        """The speaker `speaker` talks to (prompts name both sides)."""
        return self.speaker_b if speaker == self.speaker_a else self.speaker_a


def split_evidence(raw: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split raw evidence strings into (normalised dia ids, malformed pieces); never raises."""
    good: list[str] = []
    bad: list[str] = []
    for item in raw:
        for piece in _EVIDENCE_SPLIT.split(item):
            if not piece:
                continue
            m = _DIA_ID.fullmatch(piece)
            if m:
                good.append(f"D{int(m.group(1))}:{int(m.group(2))}")
            else:
                bad.append(piece)
    return tuple(good), tuple(bad)


def _parse_turn(file: Path, record: str, obj: Any, session: int) -> Turn:
    r = Reader(file, record, obj)
    img = r.get("img_url", list, optional=True) or []
    if not all(isinstance(u, str) for u in img):
        raise r.error("img_url", "expected a list of strings")
    caption = r.get("blip_caption", str, optional=True)
    query = r.get("query", str, optional=True)
    redl = r.get("re-download", bool, optional=True)
    return Turn(
        dia_id=r.str_("dia_id"),
        speaker=r.str_("speaker"),
        text=r.str_("text"),
        session=session,
        img_url=tuple(img),
        blip_caption=caption,
        query=query,
        re_download=bool(redl),
    )


def _parse_sessions(file: Path, sid: str, conv: Reader) -> tuple[Session, ...]:
    # Iterate over session_<n> keys, not date keys: conv-26 has 35 date keys but 19 sessions.
    numbers = sorted(int(m.group(1)) for k in conv.obj if (m := _SESSION_KEY.fullmatch(k)))
    if not numbers:
        raise conv.error("session_1", "no sessions")
    if numbers != list(range(1, len(numbers) + 1)):
        raise conv.error(f"session_{numbers[0]}", f"session numbers are not contiguous: {numbers}")
    sessions = []
    for n in numbers:
        turns_raw = conv.list_(f"session_{n}")
        if not turns_raw:
            raise conv.error(f"session_{n}", "session has no turns")
        stamp = conv.str_(f"session_{n}_date_time")
        try:
            when = datetime.strptime(stamp.strip(), SESSION_DATE_FORMAT)
        except ValueError as exc:
            raise conv.error(
                f"session_{n}_date_time", f"cannot parse {stamp!r} as '{SESSION_DATE_FORMAT}'"
            ) from exc
        turns = tuple(
            _parse_turn(file, f"{sid} session_{n}[{j}]", t, n) for j, t in enumerate(turns_raw)
        )
        sessions.append(Session(index=n, date_time=stamp, when=when, turns=turns))
    return tuple(sessions)


def _parse_qa(file: Path, sid: str, index: int, obj: Any) -> QA:
    r = Reader(file, f"{sid} qa[{index}]", obj)
    category = r.get("category", int)
    if category not in CATEGORY_NAMES:
        raise r.error("category", f"unknown category {category}; expected 1-5")
    answer = r.get("answer", (str, int), optional=True)
    if answer is None and category != 5:
        raise r.error("answer", f"missing (category {category} needs a gold answer)")
    adversarial = r.get("adversarial_answer", str, optional=True)
    evidence = r.list_("evidence")
    if not all(isinstance(e, str) for e in evidence):
        raise r.error("evidence", "expected a list of strings")
    ids, bad = split_evidence(evidence)
    return QA(
        index=index,
        question=r.str_("question"),
        answer=answer,
        category=category,
        evidence=tuple(evidence),
        evidence_ids=ids,
        malformed_evidence=bad,
        adversarial_answer=adversarial,
    )


def _flatten_ids(value: Any) -> tuple[str, ...] | None:
    parts = value if isinstance(value, list) else [value]
    out: list[str] = []
    for p in parts:
        if not isinstance(p, str):
            return None
        out.extend(x.strip() for x in p.split(","))
    return tuple(out)


def _parse_observations(file: Path, sid: str, r: Reader) -> tuple[Observation, ...]:
    if not r.has("observation"):
        return ()
    out: list[Observation] = []
    for key, per_speaker in r.dict_("observation").items():
        m = re.fullmatch(r"session_(\d+)_observation", key)
        sub = Reader(file, f"{sid} observation", {key: per_speaker})
        if not m:
            raise sub.error(key, "unexpected key (want session_<n>_observation)")
        by_speaker = sub.dict_(key)
        for speaker, facts in by_speaker.items():
            if not isinstance(facts, list):
                raise sub.error(f"{key}.{speaker}", "expected a list of [fact, dia_id]")
            for j, fact in enumerate(facts):
                ids = (
                    _flatten_ids(fact[1])
                    if isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)
                    else None
                )
                if ids is None:
                    raise sub.error(f"{key}.{speaker}[{j}]", "expected [fact text, dia_id(s)]")
                out.append(Observation(int(m.group(1)), speaker, fact[0], ids))
    return tuple(out)


def _parse_summaries(file: Path, sid: str, r: Reader) -> tuple[tuple[int, str], ...]:
    if not r.has("session_summary"):
        return ()
    sub = Reader(file, f"{sid} session_summary", r.dict_("session_summary"))
    out = []
    for key in sub.obj:
        m = re.fullmatch(r"session_(\d+)_summary", key)
        if not m:
            raise sub.error(key, "unexpected key (want session_<n>_summary)")
        out.append((int(m.group(1)), sub.str_(key)))
    return tuple(sorted(out))


def _parse_events(file: Path, sid: str, r: Reader) -> tuple[Event, ...]:
    if not r.has("event_summary"):
        return ()
    sub = Reader(file, f"{sid} event_summary", r.dict_("event_summary"))
    out: list[Event] = []
    for key in sub.obj:
        m = re.fullmatch(r"events_session_(\d+)", key)
        if not m:
            raise sub.error(key, "unexpected key (want events_session_<n>)")
        ev = Reader(file, f"{sid} event_summary.{key}", sub.obj[key])
        date = ev.str_("date")
        for speaker, items in ev.obj.items():
            if speaker == "date":
                continue
            if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
                raise ev.error(speaker, "expected a list of event strings")
            out.extend(Event(int(m.group(1)), speaker, text, date) for text in items)
    return tuple(sorted(out, key=lambda e: e.session))


def parse_locomo(raw: Any, file: Path) -> list[Conversation]:
    """Validate and convert the decoded JSON; any schema violation raises DataError."""
    if not isinstance(raw, list):
        raise DataError(f"expected a list of conversations, got {type(raw).__name__}", file=file)
    convs: list[Conversation] = []
    seen: set[str] = set()
    for i, obj in enumerate(raw):
        top = Reader(file, f"conversation[{i}]", obj)
        sid = top.id_("sample_id")
        if sid in seen:
            raise top.error("sample_id", f"duplicate sample_id {sid!r}")
        seen.add(sid)
        top = Reader(file, sid, obj)
        conv = Reader(file, sid, top.dict_("conversation"))
        sessions = _parse_sessions(file, sid, conv)
        qa = tuple(_parse_qa(file, sid, j, q) for j, q in enumerate(top.list_("qa")))
        index: dict[str, Turn] = {}
        for s in sessions:
            for t in s.turns:
                index.setdefault(t.dia_id, t)
        convs.append(
            Conversation(
                sample_id=sid,
                speaker_a=conv.str_("speaker_a"),
                speaker_b=conv.str_("speaker_b"),
                sessions=sessions,
                qa=qa,
                observations=_parse_observations(file, sid, top),
                session_summaries=_parse_summaries(file, sid, top),
                events=_parse_events(file, sid, top),
                _turn_index=index,
            )
        )
    return convs


@lru_cache(maxsize=4)
def _load_cached(path: str, digest: str) -> tuple[Conversation, ...]:
    p = Path(path)
    return tuple(parse_locomo(load_json(p), p))


def load_locomo(data_dir: str | os.PathLike[str] | None = None) -> list[Conversation]:
    """The 10 LoCoMo conversations, verified against the pinned sha256."""
    path = resolve(LOCOMO_FILE, data_dir)
    return list(_load_cached(str(path), sha256_of(path)))


def load_locomo_file(path: str | os.PathLike[str]) -> list[Conversation]:
    """Parse a LoCoMo-schema file without checksum (fixtures, corrected copies)."""
    p = Path(path)
    return parse_locomo(load_json(p), p)


def select_conversations(
    conversations: Sequence[Conversation], wanted: str | None
) -> list[Conversation]:
    """The conversations named in `wanted` (comma-separated sample ids; None = all)."""
    if wanted is None:
        return list(conversations)
    names = [w.strip() for w in wanted.split(",") if w.strip()]
    by_id = {c.sample_id: c for c in conversations}
    unknown = [n for n in names if n not in by_id]
    if unknown or not names:
        raise ValueError(
            f"conversations={wanted!r}: unknown conversation id(s) {unknown}; choose from "
            + ", ".join(by_id)
        )
    return [by_id[n] for n in dict.fromkeys(names)]


def load_conversations(
    data_dir: str | os.PathLike[str] | None, wanted: str | None
) -> list[Conversation]:
    """The LoCoMo conversations named in `wanted` (None = all), read from `data_dir`."""
    return select_conversations(load_locomo(data_dir), wanted)

"""LoCoMo-Plus (Li et al., 2026): the released file of 401 cue–trigger pairs, parsed and
validated.

Each instance holds an implicit *cue* (one or two lines said by A and B) and a *trigger* said
weeks or months later. The file ships the pairs only: `stitch` places each one inside a host
LoCoMo conversation. Only ``A:``/``B:`` lines count; a literal backslash-n inside a cue stays
inside one A line (31 gpt-5-nano cues), as upstream.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from memevals.core.files import DataError, PinnedFile, resolve, sha256_of
from memevals.core.validation import Reader, load_json

__all__ = [
    "LOCOMO_PLUS_FILE",
    "RELATION_TYPES",
    "CueLine",
    "PlusInstance",
    "load_locomo_plus",
    "load_locomo_plus_file",
    "parse_dialogue_lines",
    "parse_locomo_plus",
]

LOCOMO_PLUS_FILE = PinnedFile(
    relpath="locomo_plus/locomo_plus.json",
    url="https://raw.githubusercontent.com/xjtuleeyf/Locomo-Plus/"
    "059f4e3d38f7f1f96765e8e2cb7de3097551bffb/data/locomo_plus.json",
    sha256="af2fc6e5e0e88735e28d8dd1ef474b718861a73beb21779809e3b9e1a4fe3d23",
    size=305_737,
)

RELATION_TYPES: tuple[str, ...] = ("causal", "state", "goal", "value")


@dataclass(frozen=True)
class CueLine:
    """One parsed `A:`/`B:` line of a cue or trigger, before speakers are mapped."""

    role: str  # "A" or "B"
    text: str  # stripped


def parse_dialogue_lines(text: str) -> tuple[CueLine, ...]:
    """Split on real newlines, strip each line, keep the ones starting `A:` or `B:`."""
    out: list[CueLine] = []
    for raw in text.split("\n"):
        line = raw.strip()
        if line.startswith("A:") or line.startswith("B:"):
            out.append(CueLine(role=line[0], text=line[2:].strip()))
    return tuple(out)


@dataclass(frozen=True)
class PlusInstance:
    """One LoCoMo-Plus record, validated."""

    index: int  # 0-based position in the file; decides the host and the sample id
    relation_type: str
    cue_dialogue: str
    trigger_query: str
    time_gap: str
    model_name: str
    similarity: float  # final_similarity_score
    cue_lines: tuple[CueLine, ...]
    trigger_lines: tuple[CueLine, ...]

    @property
    def sample_id(self) -> str:
        return f"plus-{self.index}"


def _parse_instance(file: Path, index: int, obj: Any) -> PlusInstance:
    r = Reader(file, f"instance {index}", obj)
    relation = r.str_("relation_type")
    if relation not in RELATION_TYPES:
        raise r.error(
            "relation_type",
            f"unknown relation type {relation!r}; expected one of {', '.join(RELATION_TYPES)}",
        )
    lines: dict[str, tuple[CueLine, ...]] = {}
    for name in ("cue_dialogue", "trigger_query"):
        text = r.str_(name)
        if not text.strip():
            raise r.error(name, "is empty")
        parsed = parse_dialogue_lines(text)
        if not parsed:
            raise r.error(name, f"has no line starting 'A:' or 'B:' ({text[:60]!r})")
        empty = [j for j, line in enumerate(parsed) if not line.text]
        if empty:
            raise r.error(name, f"line {empty[0] + 1} has a speaker but no text")
        lines[name] = parsed
    time_gap = r.str_("time_gap")
    if not time_gap.strip():
        raise r.error("time_gap", "is empty")
    similarity = r.get("final_similarity_score", (int, float))
    return PlusInstance(
        index=index,
        relation_type=relation,
        cue_dialogue=r.obj["cue_dialogue"],
        trigger_query=r.obj["trigger_query"],
        time_gap=time_gap,
        model_name=r.str_("model_name"),
        similarity=float(similarity),
        cue_lines=lines["cue_dialogue"],
        trigger_lines=lines["trigger_query"],
    )


def parse_locomo_plus(raw: Any, file: Path) -> list[PlusInstance]:
    """Validate the decoded JSON; any schema violation raises DataError naming the instance."""
    if not isinstance(raw, list):
        raise DataError(f"expected a list of instances, got {type(raw).__name__}", file=file)
    if not raw:
        raise DataError("the file holds no instances", file=file)
    return [_parse_instance(file, i, obj) for i, obj in enumerate(raw)]


@lru_cache(maxsize=4)
def _load_cached(path: str, digest: str) -> tuple[PlusInstance, ...]:
    p = Path(path)
    return tuple(parse_locomo_plus(load_json(p), p))


def load_locomo_plus(data_dir: str | os.PathLike[str] | None = None) -> list[PlusInstance]:
    """The 401 LoCoMo-Plus instances, verified against the pinned sha256."""
    path = resolve(LOCOMO_PLUS_FILE, data_dir)
    return list(_load_cached(str(path), sha256_of(path)))


def load_locomo_plus_file(path: str | os.PathLike[str]) -> list[PlusInstance]:
    """Parse a LoCoMo-Plus-schema file without checksum (fixtures, corrected copies)."""
    p = Path(path)
    return parse_locomo_plus(load_json(p), p)

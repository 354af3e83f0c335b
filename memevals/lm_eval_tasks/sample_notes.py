"""A build's warnings about some documents only (`SampleNote`), said on lm-eval when the first
document they concern is scored: lm-eval builds every document of a task before `--limit`
keeps some, so a warning said at the build would speak of questions the run never asks."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from memevals.core.build import SampleNote

__all__ = ["keep", "say"]

logger = logging.getLogger(__name__)

#: document id -> the messages of the notes that concern it, not said yet
_WAITING: dict[str, list[str]] = {}
#: the messages said in this process (each once, however many tasks share it)
_SAID: set[str] = set()


def keep(notes: Iterable[SampleNote]) -> None:
    """Hold a build's notes until a document they concern is scored.

    Args:
        notes: the build's notes (`Build.notes`).
    """
    for note in notes:
        for doc_id in note.samples:
            waiting = _WAITING.setdefault(doc_id, [])
            if note.message not in waiting:
                waiting.append(note.message)


def say(doc_id: str) -> None:
    """Say, once each, the notes that concern the document being scored.

    Args:
        doc_id: the document's id (its sample id).
    """
    for message in _WAITING.pop(doc_id, ()):
        if message not in _SAID:
            _SAID.add(message)
            logger.warning(message)

"""Typed accessors that turn schema violations into one DataError naming file, record, field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from memevals.core.files import DataError

__all__ = ["Reader", "json_lines", "json_object", "load_json"]

T = TypeVar("T")


def load_json(path: Path) -> Any:
    try:
        with path.open("rb") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"invalid JSON at line {exc.lineno}, column {exc.colno} (byte {exc.pos}): {exc.msg}. "
            "The file is truncated or corrupt; restore the pinned file.",
            file=path,
        ) from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text ({exc})", file=path) from exc
    except RecursionError as exc:
        raise DataError("JSON nested too deeply to be a benchmark file", file=path) from exc
    except OSError as exc:
        raise DataError(f"cannot read ({exc})", file=path) from exc


def json_lines(
    path: Path, error: type[Exception] = ValueError
) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(`file:line`, line number, record) for each non-blank line of a JSON-lines file (lm-eval's
    samples files). A line that is not one JSON object raises `error` naming file and line."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error(
                    f"{where}: not UTF-8 text, so not a JSON-lines file ({exc.reason})"
                ) from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{where}: not a JSON line ({exc})") from exc
            if not isinstance(record, dict):
                raise error(f"{where}: expected a JSON object per line")
            yield where, number, record


def json_object(
    raw: Any, where: str, field: str, error: type[Exception] = ValueError
) -> dict[str, Any]:
    """A field of a JSON line that holds a JSON object, as itself or as JSON text (lm-eval's
    `doc.metadata`).

    Args:
        raw: the field's value.
        where: the record's `file:line`, for the message.
        field: the field's dotted name, for the message.
        error: the exception raised when the value is no JSON object.

    Returns:
        The object.
    """
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        raise error(f"{where}: field '{field}' is not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise error(f"{where}: field '{field}' is not a JSON object")
    return value


class Reader:
    """Field access for one record with error context."""

    def __init__(self, file: Path, record: str, obj: Any) -> None:
        self.file = file
        self.record = record
        if not isinstance(obj, dict):
            raise DataError(
                f"expected a JSON object, got {type(obj).__name__}", file=file, record=record
            )
        self.obj: dict[str, Any] = obj

    def error(self, field: str, message: str) -> DataError:
        return DataError(message, file=self.file, record=self.record, field=field)

    def has(self, field: str) -> bool:
        return field in self.obj

    def get(self, field: str, kind: type[T] | tuple[type, ...], *, optional: bool = False) -> Any:
        if field not in self.obj:
            if optional:
                return None
            raise self.error(field, "missing")
        value = self.obj[field]
        if optional and value is None:
            return None
        # bool is an int subclass; never accept it where a number or string is expected
        if isinstance(value, bool) and bool not in _as_tuple(kind):
            raise self.error(field, f"expected {_names(kind)}, got bool")
        if not isinstance(value, kind):
            raise self.error(field, f"expected {_names(kind)}, got {type(value).__name__}")
        return value

    def str_(self, field: str) -> str:
        value: str = self.get(field, str)
        return value

    def id_(self, field: str) -> str:
        """A sample id: a non-empty string of printable characters. Inspect names each logged
        sample after its id, and an id with a NUL byte silently vanishes from the log."""
        value = self.str_(field)
        if not value:
            raise self.error(field, "empty")
        if not value.isprintable():
            raise self.error(field, f"{value!r} contains a control character")
        return value

    def list_(self, field: str) -> list[Any]:
        value: list[Any] = self.get(field, list)
        return value

    def dict_(self, field: str) -> dict[str, Any]:
        value: dict[str, Any] = self.get(field, dict)
        return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _names(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in _as_tuple(kind))

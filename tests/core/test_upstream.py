"""memevals.core.upstream on a synthetic upstream file: locators, f-strings, digests, errors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from memevals.core.upstream import (
    Template,
    UpstreamError,
    UpstreamFile,
    extract_template,
    template_digest,
    upstream_source,
)

SOURCE = """
GREETING = "hello " "there"
TABLE = {"a": "first {x}", "b": "second"}

def build(name, n):
    joined = "left " + "right"
    shown = f"{name!r} has {n:>3} {{items}}"
    if n:
        shown = "again"
    def inner():
        shown = "inner"
    return shown

class Holder:
    def method(self):
        text = "in a method"
"""


@pytest.fixture
def pinned(tmp_path: Path) -> tuple[UpstreamFile, Path]:
    path = tmp_path / "upstream" / "proj" / "src" / "mod.py"
    path.parent.mkdir(parents=True)
    path.write_text(SOURCE, encoding="utf-8")
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()
    return UpstreamFile("someone/proj", "0" * 40, "src/mod.py", digest), tmp_path


def _text(file: UpstreamFile, data_dir: Path, locator: str, expected: str) -> str:
    return extract_template(Template(file, locator, template_digest(expected)), data_dir)


@pytest.mark.parametrize(
    ("locator", "expected"),
    [
        ("GREETING", "hello there"),
        ("TABLE[a]", "first {x}"),
        ("TABLE[b]", "second"),
        ("build.joined", "left right"),
        ("build.shown", "{name!r} has {n:>3} {{items}}"),
        ("build.shown#1", "again"),
        ("build.inner.shown", "inner"),
        ("Holder.method.text", "in a method"),
    ],
)
def test_locators_find_the_string(
    pinned: tuple[UpstreamFile, Path], locator: str, expected: str
) -> None:
    file, data_dir = pinned
    assert _text(file, data_dir, locator, expected) == expected


def test_an_fstring_becomes_a_format_template_that_rebuilds_it(
    pinned: tuple[UpstreamFile, Path],
) -> None:
    file, data_dir = pinned
    text = _text(file, data_dir, "build.shown", "{name!r} has {n:>3} {{items}}")
    name, n = "Ann", 7
    assert text.format_map({"name": name, "n": n}) == f"{name!r} has {n:>3} {{items}}"


def test_nested_scopes_stay_apart(pinned: tuple[UpstreamFile, Path]) -> None:
    file, data_dir = pinned
    # build's own `shown` has two assignments; the inner function's is not a third
    with pytest.raises(UpstreamError, match=r"not found \(2 match\(es\)\)"):
        _text(file, data_dir, "build.shown#2", "inner")


def test_a_changed_template_digest_names_both(pinned: tuple[UpstreamFile, Path]) -> None:
    file, data_dir = pinned
    wrong = "f" * 64
    with pytest.raises(UpstreamError) as err:
        extract_template(Template(file, "GREETING", wrong), data_dir)
    message = str(err.value)
    assert "'GREETING'" in message and wrong in message
    assert template_digest("hello there") in message and "upstream/proj/src/mod.py" in message


def test_a_corrupted_copy_is_refused_with_both_digests(pinned: tuple[UpstreamFile, Path]) -> None:
    file, data_dir = pinned
    copy = data_dir / file.relpath
    data = bytearray(copy.read_bytes())
    data[5] ^= 1
    copy.write_bytes(bytes(data))
    with pytest.raises(UpstreamError) as err:
        upstream_source(file, data_dir)
    message = str(err.value)
    assert file.sha256 in message and hashlib.sha256(bytes(data)).hexdigest() in message
    assert str(copy) in message


def test_a_missing_copy_says_where_it_was_looked_for(tmp_path: Path) -> None:
    file = UpstreamFile("someone/proj", "0" * 40, "src/absent.py", "0" * 64)
    with pytest.raises(UpstreamError, match=r"upstream/proj/src/absent\.py"):
        upstream_source(file, tmp_path)


def test_a_non_string_is_refused(tmp_path: Path) -> None:
    source = "VALUE = 3\n"
    path = tmp_path / "upstream" / "proj" / "v.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    file = UpstreamFile(
        "someone/proj", "0" * 40, "v.py", hashlib.sha256(source.encode()).hexdigest()
    )
    with pytest.raises(UpstreamError, match="is a Constant, not a string"):
        extract_template(Template(file, "VALUE", "0" * 64), tmp_path)

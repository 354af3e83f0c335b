"""Upstream source files and the templates taken from them, for the official protocols.

An official protocol needs upstream's exact prompts, and upstream's text is third-party
material: it is never copied into memevals. Each upstream file is pinned like a data file
(repository, commit, path, sha256) and read from `<data dir>/upstream/<repo name>/<path>` or
downloaded once into the cache. A template is found in the file by parsing it with `ast`
(upstream code is never executed) and checked against the sha256 memevals recorded for it, so
a changed file or a locator that lands on other text is an error, never a silent paraphrase.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from memevals.core.files import DataError, PinnedFile, resolve

__all__ = [
    "InlineText",
    "Template",
    "UpstreamError",
    "UpstreamFile",
    "extract_template",
    "inline_text",
    "pinned_text",
    "template_digest",
    "upstream_module",
    "upstream_source",
    "verified",
]

_RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
_LOCATOR = re.compile(r"^(?P<path>[A-Za-z_][\w.]*)(?:\[(?P<key>[^\]]+)\])?(?:#(?P<nth>\d+))?$")


class UpstreamError(DataError):
    """An upstream file or template that cannot be used: wrong digest, or no such template."""


@dataclass(frozen=True)
class UpstreamFile:
    """One upstream source file, pinned by repository, commit, path and sha256."""

    repo: str  # GitHub "owner/name"
    commit: str
    path: str
    sha256: str

    @property
    def relpath(self) -> str:
        """Where the copy lives under a data dir (and in the cache)."""
        return f"upstream/{self.repo.split('/')[-1]}/{self.path}"

    @property
    def pinned(self) -> PinnedFile:
        """The file as a pinned data file (data dir, else a verified download)."""
        url = _RAW_URL.format(repo=self.repo, commit=self.commit, path=self.path)
        return PinnedFile(relpath=self.relpath, url=url, sha256=self.sha256)

    def __str__(self) -> str:
        return f"{self.repo}@{self.commit[:8]}:{self.path}"


@dataclass(frozen=True)
class Template:
    """A string in an upstream file, found by `locator` and pinned by its own sha256.

    Locators: `NAME` (a module-level assignment), `func.NAME` (an assignment inside a function
    or method; nested scopes joined by dots), either followed by `[key]` (an entry of a dict
    literal with string keys) and optionally `#n` (the n-th match, from 0, in source order).
    """

    file: UpstreamFile
    locator: str
    sha256: str

    def __str__(self) -> str:
        return f"{self.locator} in {self.file}"


def template_digest(text: str) -> str:
    """The sha256 recorded for a template.

    Args:
        text: the extracted template.

    Returns:
        The hex sha256 of its UTF-8 bytes.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def upstream_source(file: UpstreamFile, data_dir: str | os.PathLike[str] | None = None) -> str:
    """The text of a pinned upstream file, its sha256 verified.

    Args:
        file: the pinned file.
        data_dir: a data dir holding `upstream/` (default MEMEVALS_DATA_DIR, else the cache).

    Returns:
        The file's text.
    """
    try:
        path = resolve(file.pinned, data_dir)
    except UpstreamError:
        raise
    except DataError as exc:
        raise UpstreamError(f"upstream file {file}: {exc}") from exc
    return _read(str(path), file.sha256)


@functools.lru_cache(maxsize=32)
def _read(path: str, sha256: str) -> str:
    # keyed on the digest too, so a file replaced under the same path is read again
    return Path(path).read_text(encoding="utf-8")


def upstream_module(
    file: UpstreamFile, data_dir: str | os.PathLike[str] | None = None
) -> ast.Module:
    """The parsed upstream file (never executed).

    Args:
        file: the pinned file.
        data_dir: as for `upstream_source`.

    Returns:
        Its `ast.Module`.
    """
    return ast.parse(upstream_source(file, data_dir), filename=file.path)


def extract_template(template: Template, data_dir: str | os.PathLike[str] | None = None) -> str:
    """The text of an upstream template, its digest verified.

    A string constant is returned as it is (`ast` has already joined implicit concatenation;
    `"a" + "b"` is joined too). An f-string is returned as a `str.format` template: each
    replacement field becomes `{<its expression's source>}` with its conversion and format spec,
    and literal braces are doubled, so `format_map` with upstream's names rebuilds upstream's
    string.

    Args:
        template: the template to extract.
        data_dir: as for `upstream_source`.

    Returns:
        The template's text.
    """
    node = _locate(upstream_module(template.file, data_dir), template)
    return verified(_text_of(node, template), template)


def verified(text: str, pinned: Template | InlineText) -> str:
    """`text`, once its digest is the one pinned for the template it was extracted as (a
    benchmark that locates a text its own way checks it here too).

    Args:
        text: the extracted text.
        pinned: the Template or InlineText it was extracted as.

    Returns:
        The text.

    Raises:
        UpstreamError: naming the locator, both digests and the file.
    """
    actual = template_digest(text)
    if actual != pinned.sha256:
        raise UpstreamError(
            f"template {pinned.locator!r} extracted with sha256 {actual}, expected "
            f"{pinned.sha256}: the upstream file or the locator changed",
            file=pinned.file.relpath,
        )
    return text


def _locate(module: ast.Module, template: Template) -> ast.expr:
    match = _LOCATOR.match(template.locator)
    if match is None:
        raise UpstreamError(f"bad template locator {template.locator!r}", file=template.file.path)
    *scopes, name = match["path"].split(".")
    found = [value for value in _assigned(module, scopes, name)]
    if match["key"] is not None:
        found = [v for v in (_dict_entry(d, match["key"]) for d in found) if v is not None]
    nth = int(match["nth"] or 0)
    if nth >= len(found):
        raise UpstreamError(
            f"template {template.locator!r} not found ({len(found)} match(es)) in {template.file}",
            file=template.file.relpath,
        )
    return found[nth]


def _assigned(module: ast.Module, scopes: list[str], name: str) -> list[ast.expr]:
    """Values assigned to `name` in the scope reached through `scopes`, in source order."""
    body: list[ast.stmt] = module.body
    for scope in scopes:
        inner = [
            n
            for n in body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and n.name == scope
        ]
        if not inner:
            return []
        body = inner[0].body
    out: list[ast.expr] = []
    for node in _scope_nodes(body):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            out.append(value)
    return out


def _scope_nodes(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of one scope in source order: into `if`/`for`/`with`/`try` blocks, not into
    nested functions or classes (their names are another scope's)."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return out


def _dict_entry(node: ast.expr, key: str) -> ast.expr | None:
    if not isinstance(node, ast.Dict):
        return None
    for k, v in zip(node.keys, node.values, strict=True):
        if isinstance(k, ast.Constant) and k.value == key:
            return v
    return None


def _text_of(node: ast.expr, template: Template) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_fstring_part(part) for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text_of(node.left, template) + _text_of(node.right, template)
    raise UpstreamError(
        f"template {template.locator!r} is a {type(node).__name__}, not a string",
        file=template.file.relpath,
    )


def _fstring_part(part: ast.expr) -> str:
    if isinstance(part, ast.Constant) and isinstance(part.value, str):
        return part.value.replace("{", "{{").replace("}", "}}")
    assert isinstance(part, ast.FormattedValue)
    field = ast.unparse(part.value)
    if part.conversion != -1:
        field += "!" + chr(part.conversion)
    if part.format_spec is not None:
        assert isinstance(part.format_spec, ast.JoinedStr)
        field += ":" + "".join(_fstring_part(p) for p in part.format_spec.values)
    return "{" + field + "}"


@dataclass(frozen=True)
class InlineText:
    """A string written inline in an upstream function: the `nth` (from 0) string constant in
    the body of function `scope`, in source order (docstring included), pinned by its sha256.

    `Template` locates assigned strings; a few of upstream's texts are operands of an
    expression (`qa['question'] + "..."`) or arguments, and are found this way.
    """

    file: UpstreamFile
    scope: str
    nth: int
    sha256: str

    @property
    def locator(self) -> str:
        return f"{self.scope}:str#{self.nth}"

    def __str__(self) -> str:
        return f"{self.locator} in {self.file}"


def inline_text(text: InlineText, data_dir: str | os.PathLike[str] | None = None) -> str:
    """The text of an `InlineText`, its digest verified.

    Args:
        text: the locator.
        data_dir: as for `upstream_source`.

    Returns:
        The string.
    """
    module = upstream_module(text.file, data_dir)
    scopes = [
        n
        for n in module.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == text.scope
    ]
    found = sorted(
        (
            n
            for scope in scopes[:1]
            for n in ast.walk(scope)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        ),
        key=lambda n: (n.lineno, n.col_offset),
    )
    if text.nth >= len(found):
        raise UpstreamError(
            f"template {text.locator!r} not found ({len(found)} string(s)) in {text.file}",
            file=text.file.relpath,
        )
    value = found[text.nth].value
    assert isinstance(value, str)
    return verified(value, text)


def pinned_text(
    pinned: Template | InlineText, data_dir: str | os.PathLike[str] | None, what: str
) -> str:
    """An upstream text (a `Template` or an `InlineText`), its digest verified, read from
    `data_dir` when that holds the file's copy, else from MEMEVALS_DATA_DIR or the cache.

    Args:
        pinned: the text's locator.
        data_dir: the task's data dir, if any.
        what: the text as an error names it first (e.g. "LoCoMo official template 'start'").

    Returns:
        The text.
    """
    held = data_dir is not None and (Path(data_dir) / pinned.file.relpath).is_file()
    where = data_dir if held else None
    try:
        if isinstance(pinned, InlineText):
            return inline_text(pinned, where)
        return extract_template(pinned, where)
    except UpstreamError as exc:
        raise UpstreamError(
            f"{what} ({pinned.locator} in {pinned.file}, sha256 {pinned.sha256}): {exc}"
        ) from exc

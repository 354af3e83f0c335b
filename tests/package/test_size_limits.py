"""Size limits of the project (docs/contributing.md#size-limits): the README within 300 lines, no
function of memevals/ over 60 lines, no module of memevals/ over 700.

The modules over the limit today are named in OVER_LIMIT with their length today: a listed module
may shrink, never grow, and once it is within the limit its entry must go (so the list only
shrinks). A function is counted from its `def` line to its last line (decorators not counted),
nested functions and methods included.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "memevals"
README_MAX = 300
FUNCTION_MAX = 60
MODULE_MAX = 700

#: module (relative to the checkout) -> its length today, the most it may have until it is split
OVER_LIMIT: dict[str, int] = {}
#: "module:function" -> its length today (none: every function is within the limit)
FUNCTIONS_OVER_LIMIT: dict[str, int] = {}


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def function_lengths(path: Path) -> dict[str, int]:
    """Each function of `path` (methods and nested functions too, as `Outer.inner`) -> its
    length in lines, from its `def` line to its last line.

    Args:
        path: a Python file.

    Returns:
        Qualified name -> lines.
    """
    out: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    assert child.end_lineno is not None
                    out[name] = child.end_lineno - child.lineno + 1
                name += "."
            walk(child, name)

    walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), "")
    return out


def test_readme_is_within_its_limit() -> None:
    n = _lines(REPO / "README.md")
    assert n <= README_MAX, f"README.md has {n} lines (limit {README_MAX}): move detail to docs/"


def test_no_function_is_over_the_limit() -> None:
    over = {
        f"{_rel(path)}:{name}": n
        for path in _modules()
        for name, n in function_lengths(path).items()
        if n > FUNCTION_MAX
    }
    grown = {k: n for k, n in over.items() if n > FUNCTIONS_OVER_LIMIT.get(k, FUNCTION_MAX)}
    assert not grown, f"functions over {FUNCTION_MAX} lines (split them): {grown}"
    fixed = sorted(set(FUNCTIONS_OVER_LIMIT) - set(over))
    assert not fixed, f"within the limit now: remove from FUNCTIONS_OVER_LIMIT: {fixed}"


def test_no_module_is_over_the_limit() -> None:
    over = {_rel(p): n for p in _modules() if (n := _lines(p)) > MODULE_MAX}
    grown = {k: n for k, n in over.items() if n > OVER_LIMIT.get(k, MODULE_MAX)}
    assert not grown, (
        f"modules over {MODULE_MAX} lines (split them; a listed one may not grow): "
        + ", ".join(
            f"{k}: {n} (most allowed {OVER_LIMIT.get(k, MODULE_MAX)})" for k, n in grown.items()
        )
    )
    fixed = sorted(set(OVER_LIMIT) - set(over))
    assert not fixed, f"within the limit now: remove from OVER_LIMIT: {fixed}"


def test_function_lengths_count_def_to_last_line(tmp_path: Path) -> None:
    """The counter the limit uses: decorators left out, methods and nested functions named."""
    body = "\n".join(f"    x{i} = {i}" for i in range(3))
    source = (
        "import functools\n\n"
        "@functools.cache\n"
        f"def outer():\n{body}\n"
        "    def inner():\n        return 1\n"
        "    return inner\n\n"
        "class C:\n    async def method(self):\n        pass\n"
    )
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    assert function_lengths(path) == {"outer": 7, "outer.inner": 2, "C.method": 2}

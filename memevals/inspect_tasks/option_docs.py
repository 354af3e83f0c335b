"""The shared-options table of each benchmark README, rendered from memevals.core.options.

Each README's Parameters section holds its benchmark's own options in a hand-written table and
the shared options (`context`, `top_k`, `memory`, `judge_runs`, ...) in a generated one between
two marker comments. `python -m memevals.inspect_tasks.option_docs` rewrites the generated
tables from the declarations and the task signatures (with the benchmark's defaults and
values); `--check` only says which README is out of date. The README of a task module
`memevals.inspect_tasks.<b>` is `memevals/benchmarks/<b>/README.md`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from memevals.core.options import format_default
from memevals.inspect_tasks.tasks import option_docs

__all__ = ["BEGIN", "END", "main", "readme_of", "replace_block", "shared_options_block"]

BEGIN = (
    "<!-- shared options: generated from memevals/core/options.py by "
    "`python -m memevals.inspect_tasks.option_docs`; edit the declarations, not this table -->"
)
END = "<!-- end of shared options -->"

_PACKAGE = Path(__file__).resolve().parents[1]


def readme_of(module: ModuleType) -> Path:
    """The README documenting a task module's options.

    Args:
        module: a module `memevals.inspect_tasks.<b>`.

    Returns:
        memevals/benchmarks/<b>/README.md.
    """
    return _PACKAGE / "benchmarks" / module.__name__.rsplit(".", 1)[-1] / "README.md"


def _cell(default: Any) -> str:
    text = format_default(default)
    return text if default is None else f"`{text}`"


def shared_options_block(fn: Callable[..., Any]) -> str:
    """The generated table of the shared options a task takes (markers included).

    Args:
        fn: a registered memevals task.

    Returns:
        The block, or "" when the task takes no shared option.
    """
    rows = [
        f"| `{option.name}` | {_cell(default)} | {text} |"
        for option, default, text in option_docs(fn)
    ]
    if not rows:
        return ""
    return "\n".join([BEGIN, "| parameter | default | meaning |", "|---|---|---|", *rows, END])


def replace_block(readme: str, block: str) -> str:
    """`readme` with its generated block replaced by `block`.

    Args:
        readme: the README text.
        block: the new block (markers included).

    Returns:
        The new text; ValueError when the README has no block to replace.
    """
    start = readme.find(BEGIN)
    end = readme.find(END, start)
    if start < 0 or end < 0:
        raise ValueError("no generated shared-options table (its marker comments) to replace")
    return readme[:start] + block + readme[end + len(END) :]


def _task_modules() -> list[ModuleType]:
    from memevals.inspect_tasks import registry

    return list(registry.TASK_MODULES)


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite (or with --check, check) every README's generated shared-options table.

    Args:
        argv: command-line arguments (default: sys.argv[1:]).

    Returns:
        The exit status: 1 when --check finds a README out of date.
    """
    parser = argparse.ArgumentParser(prog="python -m memevals.inspect_tasks.option_docs")
    parser.add_argument("--check", action="store_true", help="only report stale READMEs")
    args = parser.parse_args(argv)
    stale, broken = [], []
    for module in _task_modules():
        block = shared_options_block(getattr(module, module.__all_tasks__[0]))
        path = readme_of(module)
        if not block:
            continue
        try:
            text = path.read_text(encoding="utf-8")
            new = replace_block(text, block)
        except (OSError, ValueError) as exc:
            broken.append(f"{path}: {exc}")
            continue
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for path in stale:
        print(f"{'out of date' if args.check else 'rewrote'}: {path}", file=sys.stderr)
    for line in broken:
        print(f"error: {line}; its Parameters section needs the lines {BEGIN!r} and {END!r}",
              file=sys.stderr)
    return 1 if broken or (stale and args.check) else 0


if __name__ == "__main__":
    raise SystemExit(main())

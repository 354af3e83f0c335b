"""What the commands share on their command lines (not a command: it has no `main`): `-T` and
`-M` values read as `inspect eval` reads them, and the name the usage line shows."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memevals.inspect_tasks.inspect_internals import InspectInternalsError, parse_cli_args

__all__ = ["output_problem", "parse_task_args", "print_out", "prog_name"]


def parse_task_args(pairs: Sequence[str]) -> dict[str, Any]:
    """Read `name=value` pairs exactly as `inspect eval -T` (and `-M`) reads them.

    Args:
        pairs: e.g. ["context=full", "top_k=5"].

    Returns:
        The values by name (YAML values; a comma makes a list), e.g. {"context": "full",
        "top_k": 5}.
    """
    for pair in pairs:
        name, sep, _ = pair.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"-T {pair!r}: expected name=value")
    try:
        return parse_cli_args(pairs)
    except InspectInternalsError as exc:  # pragma: no cover - depends on Inspect internals
        raise ValueError(f"cannot read -T values the way `inspect eval` does: {exc}") from exc


def prog_name(argv0: str, module: str) -> str:
    """The command as it was run: a console script by its name (`memevals-estimate`), else
    `python -m <module>`.

    Args:
        argv0: `sys.argv[0]`.
        module: the module run with `-m`.

    Returns:
        The name the usage line shows.
    """
    name = Path(argv0).name
    if not name or name.endswith(".py") or name in ("-c", "-m"):
        return f"python -m {module}"
    return name


def output_problem(
    option: str, path: Path | None, example: str = "", *, folder: bool = False
) -> str | None:
    """Why an output path cannot be written, in one line, checked before any run is read (the
    writers create missing folders above it; an existing folder where a file is asked for, or
    a file where a folder is, would end in a traceback after the work).

    Args:
        option: the option as the user typed it (`--csv`).
        path: its value (None: not given).
        example: a file name to suggest inside a folder given for a file (`compare.csv`).
        folder: the option names a folder to write into (`--png-dir`), not a file.

    Returns:
        The message, or None when the path can be written.
    """
    if path is None:
        return None
    if folder:
        if path.exists() and not path.is_dir():
            return f"{option} {path}: a file; name the folder to write into"
    elif path.is_dir():
        return f"{option} {path}: a folder; name the file to write (e.g. {path / example})"
    above = next((p for p in path.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        return f"{option} {path}: {above} is a file, not a folder"
    return None


def print_out(text: str) -> None:
    """Print the command's output; a reader that stops early (`| head`) ends the output, not
    the command: the files asked for are still written, and no traceback is printed.

    Args:
        text: what goes to stdout.
    """
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # whatever is printed later, and Python's flush at exit, goes nowhere
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)

"""What the commands share on their command lines (not a command: it has no `main`): `-T` and
`-M` values read as `inspect eval` reads them, and the name the usage line shows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memevals.inspect_tasks.inspect_internals import InspectInternalsError, parse_cli_args

__all__ = ["parse_task_args", "prog_name"]


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

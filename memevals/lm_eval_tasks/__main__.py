"""`python -m memevals.lm_eval_tasks` prints the lm-eval include path (for shell substitution);
`python -m memevals.lm_eval_tasks generate [--check]` writes every benchmark's YAML from its
record (memevals.lm_eval_tasks.generate)."""

from __future__ import annotations

import sys

from memevals.lm_eval_tasks import include_path

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Print the include path, or run the generator.

    Args:
        argv: the command-line arguments.

    Returns:
        The exit status.
    """
    if argv and argv[0] == "generate":
        from memevals.lm_eval_tasks import generate

        return generate.main(argv[1:])
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv:
        print(f"unknown command {argv[0]!r}; use `generate [--check]` or nothing", file=sys.stderr)
        return 2
    print(include_path())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

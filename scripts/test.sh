#!/usr/bin/env bash
# The test suite, offline: LoCoMo / LoCoMo-Plus from MEMEVALS_DATA_DIR (default ../shared/data),
# LongMemEval from tests/fixtures, SmolLM2 and MiniLM from their wheels (scripts/setup.sh --dev).
#
# The tests write nothing into the checkout: each writes into its own temporary folder, and what
# outlives a run (pytest's cache, the converted model, screenshots) goes to the system's
# temporary folder. Checked here: a run that leaves the checkout changed (a file created,
# changed or removed, ignored ones included) fails, naming the files.
set -euo pipefail
cd "$(dirname "$0")/.."
export MEMEVALS_DATA_DIR="${MEMEVALS_DATA_DIR:-$(cd .. && pwd)/shared/data}"
# No __pycache__ in the checkout: its own modules are compiled at import (well under a second
# per process); the installed packages' bytecode, written by pip, is read as usual.
export PYTHONDONTWRITEBYTECODE=1
scratch="${TMPDIR:-/tmp}/memevals-tests-$(id -u)"

# The checkout's state: every path `git status` shows (ignored and untracked files one by one),
# .venv and node_modules left out (set-up writes them, the tests only read them).
checkout_state() {
  git status --porcelain --ignored --untracked-files=all -- . ':(exclude).venv' ':(exclude)node_modules'
}
check=0
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  check=1
  mkdir -p "$scratch"
  stamp="$(mktemp "$scratch/test-start.XXXXXX")"
  before="$(checkout_state)"
fi

# --dist loadfile: each test file runs on one worker, so a file's module and shared fixtures
# (a set of real runs several tests read) are made once and no worker waits for the other's;
# xdist hands out the files with the most tests first.
status=0
.venv/bin/python -m pytest -q -n 2 --dist loadfile --durations=20 \
  -o cache_dir="$scratch/pytest-cache" "$@" || status=$?

if [ "$check" = 1 ]; then
  after="$(checkout_state)"
  # what git shows now and did not before, and any file written during the run (a file that
  # was already there and was overwritten keeps its git status line)
  new="$(comm -13 <(sort <<<"$before") <(sort <<<"$after"))"
  written="$(find . \( -path ./.git -o -path ./.venv -o -path ./node_modules \) -prune -o \
    -type f -newer "$stamp" -print)"
  rm -f "$stamp"
  if [ -n "$new$written" ]; then
    echo "test.sh: the tests wrote into the checkout (they must write into temporary folders):" >&2
    printf '%s\n' "$new" "$written" | sed '/^$/d' | sort -u >&2
    [ "$status" != 0 ] || status=1
  fi
fi
exit "$status"

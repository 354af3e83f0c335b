#!/usr/bin/env bash
# The test suite, offline: LoCoMo / LoCoMo-Plus from MEMEVALS_DATA_DIR (default ../shared/data),
# LongMemEval from tests/fixtures, SmolLM2 and MiniLM from their wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
export MEMEVALS_DATA_DIR="${MEMEVALS_DATA_DIR:-$(cd .. && pwd)/shared/data}"
# --dist loadfile: each test file runs on one worker, so a file's module and shared fixtures
# (a set of real runs several tests read) are made once and no worker waits for the other's;
# xdist hands out the files with the most tests first.
exec .venv/bin/python -m pytest -q -n 2 --dist loadfile --durations=20 "$@"

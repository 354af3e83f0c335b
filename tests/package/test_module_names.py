"""Names that tell the room (docs/contributing.md#layout): outside the benchmark folders no module
name is used twice, nor one that a benchmark folder uses; no `common.py` grab-bag; a star
re-export only in the public API (memevals.scorers); every shared test helper in tests/support/.

A benchmark folder is `memevals/benchmarks/<b>/` or `memevals/lm_eval_tasks/<b>/`: its parts
(`data`, `samples`, `memory`, `prompts`, `scoring`, `record`, `official`, lm-eval's `utils`)
repeat from folder to folder by design.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "memevals"
TESTS = REPO / "tests"

#: Where a star import may stand: the public plain-function API re-exports its parts.
PUBLIC_API = "memevals/scorers"


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py"))


def _in_benchmark_folder(path: Path) -> bool:
    parts = path.relative_to(PACKAGE).parts
    return len(parts) == 3 and parts[0] in ("benchmarks", "lm_eval_tasks")


def name_problems(modules: list[Path]) -> list[str]:
    """The shared modules whose name another shared module or a benchmark folder also uses, and
    every `common.py`.

    Args:
        modules: the package's modules.

    Returns:
        One line per problem, naming the module.
    """
    shared: dict[str, list[str]] = defaultdict(list)
    folder_names: dict[str, list[str]] = defaultdict(list)
    for path in modules:
        (folder_names if _in_benchmark_folder(path) else shared)[path.stem].append(_rel(path))
    problems = []
    for stem, paths in sorted(shared.items()):
        if len(paths) > 1:
            problems += [
                f"{p}: module name {stem!r} also at {sorted(set(paths) - {p})}" for p in paths
            ]
        if stem in folder_names:
            problems += [
                f"{p}: named like the benchmark folders' {folder_names[stem]}" for p in paths
            ]
    problems += [f"{_rel(p)}: a common.py says no job" for p in modules if p.name == "common.py"]
    return problems


def test_no_shared_module_name_is_used_twice() -> None:
    assert name_problems(_modules()) == []


def test_a_star_re_export_only_in_the_public_api() -> None:
    star = []
    for path in _modules():
        if _rel(path).startswith(PUBLIC_API):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        star += [
            f"{_rel(path)}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
        ]
    assert star == []


def test_every_shared_test_helper_is_in_tests_support() -> None:
    """A module of tests/ that is neither a test file nor a folder's conftest is a helper: it
    belongs in tests/support/ (tests/fixtures/ holds data, including the toy benchmark package
    and the script that writes a fixture)."""
    outside = [
        _rel(p)
        for p in sorted(TESTS.rglob("*.py"))
        if not p.name.startswith("test_")
        and p.name not in ("conftest.py", "__init__.py")
        and p.parent.relative_to(TESTS).parts[:1] not in (("support",), ("fixtures",))
    ]
    assert outside == []


def test_the_check_names_each_kind_of_clash() -> None:
    """The check on a made-up package: a shared name twice, a shared module named like a
    benchmark folder's file, a common.py; the names the benchmark folders repeat are fine."""
    files = [
        "core/runs.py",
        "tools/runs.py",
        "core/official.py",
        "benchmarks/a/official.py",
        "benchmarks/a/data.py",
        "benchmarks/b/data.py",
        "lm_eval_tasks/a/utils.py",
        "lm_eval_tasks/b/utils.py",
        "lm_eval_tasks/common.py",
    ]
    modules = [PACKAGE / f for f in files]
    assert name_problems(modules) == [
        "memevals/core/official.py: named like the benchmark folders' "
        "['memevals/benchmarks/a/official.py']",
        "memevals/core/runs.py: module name 'runs' also at ['memevals/tools/runs.py']",
        "memevals/tools/runs.py: module name 'runs' also at ['memevals/core/runs.py']",
        "memevals/lm_eval_tasks/common.py: a common.py says no job",
    ]

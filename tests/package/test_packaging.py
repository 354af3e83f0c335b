"""pyproject.toml: the console scripts and entry points resolve, and every data file under
memevals/ (task YAMLs, each benchmark's README.md and eval.yaml) is declared as package data."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project's tests run on 3.11+
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _resolve(target: str) -> object:
    module, _, attr = target.partition(":")
    obj: object = importlib.import_module(module)
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj


def test_spdx_licence() -> None:
    assert PYPROJECT["project"]["license"] == "MIT"


@pytest.mark.parametrize("script", sorted(PYPROJECT["project"]["scripts"]))
def test_console_scripts_resolve(script: str) -> None:
    target = PYPROJECT["project"]["scripts"][script]
    assert callable(_resolve(target)), target
    # each tool is also runnable as `python -m <module>`
    module = target.partition(":")[0]
    assert "__main__" in (REPO / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")


def test_inspect_entry_point_resolves() -> None:
    (target,) = PYPROJECT["project"]["entry-points"]["inspect_ai"].values()
    assert _resolve(target).__name__ == "memevals.inspect_tasks.registry"  # type: ignore[attr-defined]


def test_every_data_file_is_package_data() -> None:
    declared = PYPROJECT["tool"]["setuptools"]["package-data"]
    missing = []
    for path in sorted((REPO / "memevals").rglob("*")):
        if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(REPO)
        covered = False
        for package, globs in declared.items():
            base = REPO / package.replace(".", "/")
            if base in path.parents:
                inside = path.relative_to(base)
                covered = covered or any(inside.match(g) or _deep_match(inside, g) for g in globs)
        if not covered:
            missing.append(rel.as_posix())
    assert not missing, f"not declared in [tool.setuptools.package-data]: {missing}"


def _deep_match(path: Path, glob: str) -> bool:
    """`**/*.yaml` also matches a file at any depth (setuptools' recursive glob)."""
    return glob.startswith("**/") and path.match(glob[3:])

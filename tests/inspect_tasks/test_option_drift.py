"""Options are written once (issue 22, point 4): every task option against its declaration,
its benchmark README's Parameters tables and the lm-eval `--metadata` keys.

The shared options (memevals/core/options.py) must have the declared type and default in every
task signature, their docstring entries and README rows are the rendered declarations, and
every option a task takes is in its README and in the matching lm-eval task's keys (or is
named below as Inspect-only, with the reason). The checks are functions returning the problems,
so a toy task that gains an undocumented option shows they fail.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from inspect_ai import Task

from memevals.core.memory_options import MemoryOptions
from memevals.core.options import OPTIONS, Option, declared, render_help
from memevals.inspect_tasks import registry
from memevals.inspect_tasks.option_docs import BEGIN, readme_of, shared_options_block
from memevals.inspect_tasks.tasks import memevals_task, option_docs, task_options
from memevals.lm_eval_tasks import option_checks as lm_common


def renamed(task: str) -> Mapping[str, str]:
    """Inspect options an lm-eval task takes under another name (its `ALIASES`, from
    core.options.LM_EVAL_ALIASES): option -> lm-eval key."""
    try:
        utils = importlib.import_module(f"memevals.lm_eval_tasks.{task}.utils")
    except ModuleNotFoundError:
        return {}
    aliases: Mapping[str, str] = getattr(utils, "ALIASES", {})
    return {name: key for key, name in aliases.items()}


def inspect_only(task: str) -> Mapping[str, str]:
    """A benchmark's own Inspect options with no lm-eval key, and why, as its lm-eval module
    declares them (shared options say so in core.options); none for a task without one."""
    try:
        utils = importlib.import_module(f"memevals.lm_eval_tasks.{task}.utils")
    except ModuleNotFoundError:
        return {}
    declared_here: Mapping[str, str] = getattr(utils, "INSPECT_ONLY", {})
    return declared_here


# lm-eval keys with no Inspect option of that name, and why.
LM_EVAL_ONLY = {
    "longmemeval": {"answer_tokens": "the answer length the truncation budget reserves"},
}
# Inspect tasks with no lm-eval counterpart.
NO_LM_EVAL = {"judge_check": "grades fixed answers with the model under test"}


def _base_tasks() -> list[tuple[ModuleType, Callable[..., Task]]]:
    return [(m, getattr(m, m.__all_tasks__[0])) for m in registry.TASK_MODULES]


def _all_tasks() -> list[tuple[str, Callable[..., Task]]]:
    return [(n, getattr(m, n)) for m in registry.TASK_MODULES for n in m.__all_tasks__]


# --------------------------------------------------------------------------- the checks


def signature_problems(fn: Callable[..., Any]) -> list[str]:
    """A shared option whose annotation, default or docstring entry is not the declared one."""
    problems = []
    params = inspect.signature(fn).parameters
    for option, _, text in option_docs(fn):
        p = params[option.name]
        if str(p.annotation) != option.type:
            problems.append(f"{option.name}: annotated {p.annotation}, declared {option.type}")
        if p.default != option.default and not option.per_benchmark:
            problems.append(f"{option.name}: default {p.default!r}, declared {option.default!r}")
        entry = _doc_entry(fn.__doc__ or "", option.name)
        if fn.__doc__ and "Args:" in fn.__doc__ and entry != text:
            problems.append(f"{option.name}: docstring says {entry!r}, declared {text!r}")
    return problems


def _doc_entry(doc: str, name: str) -> str | None:
    match = re.search(rf"^    {name}: (.*(?:\n        .*)*)", doc, re.MULTILINE)
    return None if match is None else " ".join(match.group(1).split())


def _parameters_section(readme: str) -> str:
    match = re.search(r"^## Parameters\n(.*?)(?=^## )", readme, re.MULTILINE | re.DOTALL)
    return "" if match is None else match.group(1)


def readme_options(readme: str) -> set[str]:
    """The option names in the first cell of a table row of the Parameters section."""
    names: set[str] = set()
    for line in _parameters_section(readme).splitlines():
        if line.startswith("|"):
            names |= set(re.findall(r"`(\w+)`", line.split("|")[1]))
    return names


def readme_problems(fn: Callable[..., Any], readme: str) -> list[str]:
    """An option missing from the README's Parameters tables, or a stale generated table."""
    documented = readme_options(readme)
    problems = [f"{n}: not in the README's Parameters tables" for n in task_options(fn)
                if n not in documented]  # fmt: skip
    block = shared_options_block(fn)
    if block and block not in readme:
        problems.append(
            "the generated shared-options table is stale: run "
            "`python -m memevals.inspect_tasks.option_docs`"
        )
    return problems


def lm_eval_problems(task: str, options: Iterable[str], keys: set[str]) -> list[str]:
    """An Inspect option lm-eval lacks (or takes although it should not), or an lm-eval key
    the Inspect task lacks."""
    problems = []
    renamed_here = renamed(task)
    only = inspect_only(task)
    expected = set()
    for name in options:
        option = declared(name)
        key = renamed_here.get(name, name) if option is None else option.lm_eval
        if key is None or name in only:
            probe = key or name
            if probe in keys:
                problems.append(f"{name}: declared Inspect-only, but lm-eval takes {probe!r}")
                expected.add(probe)  # reported once
            continue
        expected.add(key)
        if key not in keys:
            problems.append(f"{name}: lm-eval --metadata has no key {key!r}")
    for key in sorted(keys - expected - set(LM_EVAL_ONLY.get(task, {}))):
        problems.append(f"lm-eval key {key!r}: the Inspect task has no such option")
    return problems


def lm_eval_keys(module: ModuleType) -> set[str]:
    """The `--metadata` keys an lm-eval task's loader accepts, as it hands them to
    `option_checks.checked_options` or `option_checks.metadata_options` (captured there; the
    loader stops before reading any data)."""
    short = module.__name__.rsplit(".", 1)[-1]
    utils = __import__(f"memevals.lm_eval_tasks.{short}.utils", fromlist=["utils"])
    loader = next(
        getattr(utils, n) for n in dir(utils) if n.endswith("_docs") and callable(getattr(utils, n))
    )
    captured: set[str] = set()

    class Captured(Exception):
        pass

    def capture(task: str, given: Mapping[str, Any], known: Iterable[str], *_: Any) -> None:
        captured.update(known)
        raise Captured

    def capture_options(cls: type[Any], task: str, given: Any, **kwargs: Any) -> None:
        captured.update(lm_common.metadata_keys(cls, **kwargs))
        raise Captured

    params = inspect.signature(loader).parameters.values()
    positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    # the YAML's arguments: a category, or a variant and a category
    yaml_args = {0: [], 1: ["single_hop"], 2: ["s", "single_session_user"]}[len(positional)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lm_common, "checked_options", capture)
        mp.setattr(lm_common, "metadata_options", capture_options)
        with pytest.raises(Captured):
            loader(*yaml_args)
    return captured


# --------------------------------------------------------------------------- the tests


def test_memory_options_fields_are_declared_with_their_defaults() -> None:
    for f in fields(MemoryOptions):
        option = OPTIONS.get(f.name)
        assert option is not None, f"MemoryOptions.{f.name} is not declared in core/options.py"
        assert f.default == option.default, f.name
        assert option.lm_eval == f.name  # lm-eval reads them with MemoryOptions.from_mapping


def test_protocol_is_declared() -> None:
    protocol = OPTIONS["protocol"]
    assert (protocol.type, protocol.default, protocol.values) == (
        "str",
        "official",
        ("official", "memevals"),
    )
    assert render_help(protocol).endswith("default official.")


@pytest.mark.parametrize(("name", "fn"), _all_tasks(), ids=[n for n, _ in _all_tasks()])
def test_task_signature_matches_the_declarations(name: str, fn: Callable[..., Task]) -> None:
    assert signature_problems(fn) == []


@pytest.mark.parametrize(
    ("module", "fn"), _base_tasks(), ids=[m.__name__.rsplit(".", 1)[-1] for m, _ in _base_tasks()]
)
def test_readme_documents_every_option(module: ModuleType, fn: Callable[..., Task]) -> None:
    readme = readme_of(module).read_text(encoding="utf-8")
    assert readme_problems(fn, readme) == []
    assert readme.count(BEGIN) == (1 if shared_options_block(fn) else 0)


@pytest.mark.parametrize(
    ("module", "fn"), _base_tasks(), ids=[m.__name__.rsplit(".", 1)[-1] for m, _ in _base_tasks()]
)
def test_lm_eval_metadata_matches_the_task(module: ModuleType, fn: Callable[..., Task]) -> None:
    short = module.__name__.rsplit(".", 1)[-1]
    if short in NO_LM_EVAL:
        assert not (Path(lm_common.__file__).parent / short).exists()
        return
    keys = lm_eval_keys(module)
    assert lm_eval_problems(short, task_options(fn), keys) == []


def test_locomo_takes_token_counter_like_lm_eval(tmp_path: Path) -> None:
    """Today's drift, fixed: the Inspect task takes the counter lm-eval and MemoryOptions take."""
    from memevals.inspect_tasks.locomo import locomo

    built = locomo(categories="temporal", context="truncated", token_counter="approx")
    assert built.metadata is not None
    assert built.metadata["memory"]["token_counter"] == "approx"


# --------------------------------------------------------------------------- the checks fail


@memevals_task(name="drift_toy", option_values={"context": ("full", "none")})
def drift_toy(context: str = "full", top_k: int | None = None, frobnicate: int = 0) -> Task:
    """A test-only task.

    Args:
        frobnicate: a knob of this toy.
    """
    return Task()


@memevals_task(name="drift_toy_bad")
def drift_toy_bad(top_k: int = 3, judge_runs: str = "1") -> Task:
    """A test-only task whose shared options have other types and defaults."""
    return Task()


def test_the_checks_fail_on_drift() -> None:
    readme = (
        "## Parameters\n\n| parameter | default |\n|---|---|\n| `context` | `full` |\n\n## Data\n"
    )
    problems = readme_problems(drift_toy, readme)
    assert "frobnicate: not in the README's Parameters tables" in problems
    assert "top_k: not in the README's Parameters tables" in problems
    assert any("stale" in p for p in problems)
    fixed = readme.replace("## Data", shared_options_block(drift_toy) + "\n\n## Data")
    fixed = fixed.replace("| `context` | `full` |\n", "| `frobnicate` | `0` |\n", 1)
    assert readme_problems(drift_toy, fixed) == []
    # lm-eval lacking an option, taking an Inspect-only one, or having one Inspect lacks
    assert lm_eval_problems("toy", ["context", "frobnicate"], {"context"}) == [
        "frobnicate: lm-eval --metadata has no key 'frobnicate'"
    ]
    assert lm_eval_problems("toy", ["judge_runs"], {"judge_runs"}) == [
        "judge_runs: declared Inspect-only, but lm-eval takes 'judge_runs'"
    ]
    assert lm_eval_problems("toy", ["context"], {"context", "token_counter"}) == [
        "lm-eval key 'token_counter': the Inspect task has no such option"
    ]
    assert signature_problems(drift_toy) == []
    assert signature_problems(drift_toy_bad) == [
        "top_k: annotated int, declared int | None",
        "top_k: default 3, declared None",
        "judge_runs: annotated str, declared int",
        "judge_runs: default '1', declared 1",
    ]


def test_the_docstring_entries_are_rendered_and_cannot_be_written_twice() -> None:
    doc = drift_toy.__doc__ or ""
    assert doc.splitlines()[2:] == [
        "Args:",
        "    context: how the history is given to the model: full or none (default full; the "
        "README's",
        "        context modes say what each shows).",
        "    top_k: context=rag: units retrieved per sample; with memory, the items the system "
        "gives",
        "        (default –).",
        "    frobnicate: a knob of this toy.",
    ]
    with pytest.raises(TypeError, match=r"documents the shared option 'top_k'.*core/options\.py"):

        @memevals_task(name="drift_toy_twice")
        def twice(top_k: int | None = None) -> Task:
            """Toy.

            Args:
                top_k: my own words.
            """
            return Task()


def test_every_declaration_renders() -> None:
    for option in OPTIONS.values():
        text = render_help(option, values=option.values or ("a", "b"))
        assert "{" not in text and text.endswith("."), option.name
        assert isinstance(option, Option)

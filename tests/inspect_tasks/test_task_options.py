"""A misspelt `-T` option is an error naming the closest real option, before anything runs.

Inspect itself only logs `param 'contxt' not used by task` and runs with the defaults; the
`memevals_task` decorator (memevals/inspect_tasks/common.py) and `fixed_param_task` refuse it.
Checked on test-only tasks, on every registered memevals task, and through the real CLI under
both the bare and the namespaced task names.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import read_eval_log
from inspect_ai.util import registry_info

from memevals.inspect_tasks import registry
from memevals.inspect_tasks.tasks import (
    TaskOptionError,
    fixed_param_task,
    memevals_task,
    task_options,
)

BUILT: list[dict[str, Any]] = []


def _toy_task(size: int, label: str) -> Task:
    BUILT.append({"size": size, "label": label})
    samples = [Sample(id=f"s{i}", input=f"say {label}", target=label) for i in range(size)]
    return Task(dataset=MemoryDataset(samples, name="toy"), scorer=[])


@memevals_task
def toy_options(size: int = 2, label: str = "x") -> Task:
    """A test-only task with two options."""
    return _toy_task(size, label)


@task
def toy_options_plain(size: int = 2, label: str = "x") -> Task:
    """The same task under Inspect's own @task, to compare what Inspect records."""
    return _toy_task(size, label)


toy_options_small = fixed_param_task(toy_options, "toy_options_small", {"size": 1}, "One sample.")

#: toy_options without its static signature, to pass what type checkers would refuse.
untyped_toy: Any = toy_options


def test_unknown_option_names_the_closest_and_lists_the_options() -> None:
    BUILT.clear()
    with pytest.raises(TaskOptionError) as exc:
        untyped_toy(sise=3)
    assert str(exc.value) == (
        "toy_options: no option 'sise' (did you mean 'size'?). Options: label, size"
    )
    with pytest.raises(TaskOptionError, match=r"^toy_options: no option 'zzz'\. Options: label"):
        untyped_toy(zzz=1)
    with pytest.raises(TaskOptionError) as exc:
        untyped_toy(sise=3, lable="y")
    assert "no option 'sise' (did you mean 'size'?); no option 'lable' (did you mean 'label'?)" in (
        str(exc.value)
    )
    assert BUILT == []  # refused before the task function ran
    # what Python raises for an unknown keyword, and what the tools report as a usage error
    assert isinstance(exc.value, TypeError) and isinstance(exc.value, ValueError)


def test_known_options_build_the_task_with_the_typed_signature() -> None:
    BUILT.clear()
    built = toy_options(size=3, label="y")
    assert isinstance(built, Task) and len(built.dataset) == 3
    assert BUILT == [{"size": 3, "label": "y"}]
    params = inspect.signature(toy_options).parameters
    assert [(p.name, p.default) for p in params.values()][:2] == [("size", 2), ("label", "x")]
    assert str(params["size"].annotation) == "int"
    # the catch-all that makes Inspect hand over every -T argument
    assert [p.kind for p in params.values()][-1] is inspect.Parameter.VAR_KEYWORD
    assert task_options(toy_options) == ["size", "label"]
    # Inspect's registry lists the real options only (the bare aliases copy this list)
    assert registry_info(toy_options).metadata["params"] == ["size", "label"]
    assert toy_options.__doc__ == "A test-only task with two options."


def test_an_argument_inspect_may_always_pass_is_not_refused() -> None:
    BUILT.clear()
    untyped_toy(model="mockllm/model", size=1)
    assert BUILT == [{"size": 1, "label": "x"}]


def test_a_task_with_its_own_catch_all_cannot_be_checked() -> None:
    def loose(**kwargs: Any) -> Task:
        return Task()

    with pytest.raises(TypeError, match=r"loose_options: a task with a \*\* parameter"):
        memevals_task(name="loose_options")(loose)


def test_fixed_param_task_refuses_its_fixed_option_and_misspellings() -> None:
    BUILT.clear()
    assert task_options(toy_options_small) == ["label"]
    assert registry_info(toy_options_small).metadata["params"] == ["label"]
    with pytest.raises(TaskOptionError) as exc:
        toy_options_small(size=2)
    assert str(exc.value) == (
        "toy_options_small: option 'size' is fixed to 1 by this task. Options: label"
    )
    with pytest.raises(TaskOptionError, match=r"no option 'lable' \(did you mean 'label'\?\)"):
        toy_options_small(lable="y")
    assert BUILT == []
    toy_options_small(label="y")
    assert BUILT == [{"size": 1, "label": "y"}]


def test_inspect_eval_refuses_before_anything_runs(tmp_path: Path) -> None:
    BUILT.clear()
    with pytest.raises(TaskOptionError, match="did you mean 'size'"):
        inspect_eval(
            "toy_options",
            model="mockllm/model",
            task_args={"sise": 1},
            log_dir=str(tmp_path),
            display="none",
        )
    assert BUILT == []
    assert list(tmp_path.iterdir()) == []


def test_inspect_records_the_same_task_args_as_for_a_plain_task(tmp_path: Path) -> None:
    recorded = {}
    for name in ("toy_options", "toy_options_plain"):
        [log] = inspect_eval(
            name,
            model="mockllm/model",
            task_args={"size": 1},
            log_dir=str(tmp_path / name),
            display="none",
        )
        assert log.status == "success"
        header = read_eval_log(log.location, header_only=True)
        recorded[name] = (header.eval.task_args, header.eval.task_args_passed)
    assert recorded["toy_options"] == recorded["toy_options_plain"]
    assert recorded["toy_options"] == ({"size": 1, "label": "x"}, {"size": 1})


def _memevals_tasks() -> list[tuple[str, Any]]:
    return [
        (name, getattr(mod, name)) for mod in registry.TASK_MODULES for name in mod.__all_tasks__
    ]


_TASKS = _memevals_tasks()


@pytest.mark.parametrize(("name", "fn"), _TASKS, ids=[name for name, _ in _TASKS])
def test_every_memevals_task_refuses_an_unknown_option(name: str, fn: Any) -> None:
    """Every task is built through memevals_task or fixed_param_task (no data is loaded: the
    check comes first)."""
    # a name close to no option (difflib finds 'agent_compaction' in 'no_such_option')
    with pytest.raises(TaskOptionError, match=rf"^{name}: no option 'xyzzy'\. Options: "):
        fn(xyzzy=1)
    assert registry_info(fn).metadata["params"] == task_options(fn)


# --- the real CLI ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["locomo", "memevals/locomo", "locomo_single_hop", "memevals/locomo_single_hop"]
)
def test_cli_refuses_a_misspelt_option(inspect_cli: Any, tmp_path: Path, name: str) -> None:
    res = inspect_cli(
        "eval",
        name,
        "-T",
        "contxt=rag",
        "--model",
        "mockllm/model",
        "--limit",
        "1",
        "--log-dir",
        "logs",
        "--display",
        "none",
    )
    assert res.returncode != 0
    bare = name.removeprefix("memevals/")
    # the message alone, no traceback (tests/inspect_tasks/test_cli_user_errors.py)
    assert f"Error: {bare}: no option 'contxt' (did you mean 'context'?)." in res.stderr
    assert "Traceback" not in res.stderr
    assert "not used by task" not in res.stderr + res.stdout
    assert not (tmp_path / "logs").exists()  # nothing ran


def test_cli_typed_options_still_reach_the_task(inspect_cli: Any, tmp_path: Path) -> None:
    res = inspect_cli(
        "eval",
        "locomo_single_hop",
        "-T",
        "context=none",
        "-T",
        "max_tokens=8",
        "-T",
        "seed=3",
        "--model",
        "mockllm/model",
        "--limit",
        "1",
        "--log-dir",
        "logs",
        "--display",
        "none",
    )
    assert res.returncode == 0, res.stderr[-3000:]
    [path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path), header_only=True)
    assert log.eval.task == "locomo_single_hop"  # the bare alias, recorded as asked for
    assert log.eval.task_args_passed == {"context": "none", "max_tokens": 8, "seed": 3}
    assert log.eval.task_args["max_tokens"] == 8 and log.eval.task_args["seed"] == 3
    assert "categories" not in log.eval.task_args  # fixed by the task, not an option
    assert log.plan.config.max_tokens == 8

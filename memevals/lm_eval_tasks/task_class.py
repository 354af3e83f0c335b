"""The lm-eval task class every generated memevals task names (its base YAML's `class:`).

lm-eval builds a task's documents with `custom_dataset(**metadata, **dataset_kwargs)`, and
`--metadata` is merged into `metadata`. A `--metadata` key that is also one of the task's own
`dataset_kwargs` (`categories`, LongMemEval's `variant`, which each generated task fixes) would
make that call fail with Python's "got multiple values for keyword argument" before any memevals
code runs. This class checks for such a key first, and refuses it in one line naming the way to
choose what the key chose: the task names in `--tasks`. Everything else is lm-eval's own
ConfigurableTask.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lm_eval.api.task import ConfigurableTask

from memevals.lm_eval_tasks.option_checks import OptionError

__all__ = ["MemevalsTask", "fixed_by_task"]


def fixed_by_task(task: str, metadata: Mapping[str, Any], fixed: Mapping[str, Any]) -> None:
    """Refuse a `--metadata` key the task's YAML already sets.

    Args:
        task: the task's name, first in the message.
        metadata: lm-eval's metadata (the YAML's, the model arguments and `--metadata`).
        fixed: the task's `dataset_kwargs`.

    Raises:
        OptionError: a key is in both.
    """
    clash = [k for k in fixed if k in metadata]
    if not clash:
        return
    given = ", ".join(f"{k}={metadata[k]!r}" for k in clash)
    own = ", ".join(f"{k}={fixed[k]!r}" for k in clash)
    raise OptionError(
        f"{task}: --metadata {given}: each lm-eval task fixes it (this one {own}); choose the "
        f"tasks with --tasks instead{_example(task, metadata, fixed, clash)}"
    )


def _example(
    task: str, metadata: Mapping[str, Any], fixed: Mapping[str, Any], clash: list[str]
) -> str:
    """The task the user meant, where one value names it (`locomo_single_hop` given
    `categories=temporal`: `locomo_temporal`)."""
    name = task
    for key in clash:
        value, own = metadata[key], str(fixed[key])
        if not isinstance(value, str) or "," in value or f"_{own}" not in name:
            return " (the group runs them all)"
        name = name.replace(f"_{own}", f"_{value.strip().replace('-', '_')}", 1)
    return f", e.g. --tasks {name}"


class MemevalsTask(ConfigurableTask):  # type: ignore[misc]
    """lm-eval's ConfigurableTask, refusing a `--metadata` key its YAML fixes (`fixed_by_task`)
    before the documents are built."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        # `class` is how lm-eval found this class, not a setting of the task
        cfg = {k: v for k, v in (config or {}).items() if k != "class"}
        super().__init__(config=cfg, **kwargs)

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Check the metadata against the task's `dataset_kwargs`, then lm-eval's download.

        Args:
            dataset_kwargs: the task's `dataset_kwargs` (its YAML's).
            **kwargs: lm-eval's other download arguments.
        """
        fixed_by_task(str(self.config.task), self.config.metadata or {}, dataset_kwargs or {})
        super().download(dataset_kwargs, **kwargs)

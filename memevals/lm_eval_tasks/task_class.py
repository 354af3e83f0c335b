"""The lm-eval task class every generated memevals task names (its base YAML's `class:`).

lm-eval builds a task's documents with `custom_dataset(**metadata, **dataset_kwargs)`, and
`--metadata` is merged into `metadata`. A `--metadata` key that is also one of the task's own
`dataset_kwargs` (`categories`, LongMemEval's `variant`, which each generated task fixes) would
make that call fail with Python's "got multiple values for keyword argument" before any memevals
code runs. This class checks for such a key first, and refuses it in one line naming the way to
choose what the key chose: the task names in `--tasks`. It also refuses few-shot examples
(`--num_fewshot N`): lm-eval would draw them from the test documents, each another question
with its whole conversation before the prompt, which is then no longer the Inspect prompt (nor
what `prompt_tokens` counts). Everything else is lm-eval's own ConfigurableTask.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lm_eval.api.task import ConfigurableTask

from memevals.lm_eval_tasks.option_checks import OptionError

__all__ = ["MemevalsTask", "fixed_by_task", "no_fewshot"]


def no_fewshot(task: str, num_fewshot: int) -> None:
    """Refuse few-shot examples (see the module doc).

    Args:
        task: the task's name, first in the message.
        num_fewshot: lm-eval's `--num_fewshot` for the task.

    Raises:
        OptionError: it is not 0.
    """
    if num_fewshot:
        raise OptionError(
            f"{task}: --num_fewshot {num_fewshot}: the memevals tasks take no few-shot examples "
            "(each would be another question with its whole conversation, drawn from the test "
            "documents); run without --num_fewshot"
        )


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

    def fewshot_context(
        self,
        doc: dict[str, Any],
        num_fewshot: int,
        system_instruction: str | None = None,
        apply_chat_template: bool = False,
        fewshot_as_multiturn: bool = False,
        chat_template: Callable[..., str] | None = None,
        gen_prefix: str | None = None,
    ) -> Any:
        """lm-eval's prompt of `doc`, with no few-shot examples (`no_fewshot`)."""
        no_fewshot(str(self.config.task), num_fewshot)
        return super().fewshot_context(
            doc,
            num_fewshot,
            system_instruction=system_instruction,
            apply_chat_template=apply_chat_template,
            fewshot_as_multiturn=fewshot_as_multiturn,
            chat_template=chat_template,
            gen_prefix=gen_prefix,
        )

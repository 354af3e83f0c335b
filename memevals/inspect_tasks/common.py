"""The Inspect glue every benchmark's thin module uses, in one import: its samples and task
(memevals.inspect_tasks.dataset), task registration (tasks), the shared options' docstring
entries) and the metrics (metrics)."""

from __future__ import annotations

from memevals.inspect_tasks.dataset import task_from_build, to_dataset, to_sample
from memevals.inspect_tasks.metrics import (
    SCORE_RANGE,
    UNCERTAINTY_KEY,
    category_uncertainty,
    ci_clustered,
    ci_lower,
    ci_upper,
    count,
    full_uncertainty,
    mark_uncertainty,
    stderr_clustered,
    stderr_naive,
    total,
    uncertainty_metrics,
    uncertainty_note,
)
from memevals.inspect_tasks.tasks import (
    USER_ERRORS,
    OptionDocs,
    TaskOptionError,
    check_task_options,
    declared_tasks,
    fixed_param_task,
    memevals_task,
    option_docs,
    task_options,
    user_error,
    with_option_docs,
    with_record_version,
)

__all__ = [
    "SCORE_RANGE",
    "UNCERTAINTY_KEY",
    "USER_ERRORS",
    "OptionDocs",
    "TaskOptionError",
    "category_uncertainty",
    "check_task_options",
    "ci_clustered",
    "ci_lower",
    "ci_upper",
    "count",
    "declared_tasks",
    "fixed_param_task",
    "full_uncertainty",
    "mark_uncertainty",
    "memevals_task",
    "option_docs",
    "stderr_clustered",
    "stderr_naive",
    "task_from_build",
    "task_options",
    "to_dataset",
    "to_sample",
    "total",
    "uncertainty_metrics",
    "uncertainty_note",
    "user_error",
    "with_option_docs",
    "with_record_version",
]

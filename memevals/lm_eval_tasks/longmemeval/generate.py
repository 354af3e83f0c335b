"""Write the LongMemEval lm-eval YAML: one group per variant, one subtask per variant × category.

    python -m memevals.lm_eval_tasks.longmemeval.generate

The 24 files differ only in the variant and category, so they are generated from the lists in
memevals.benchmarks.longmemeval.data (a new category or variant is one edit there); what they
share is in the hand-written `_longmemeval_base.yaml`. tests/test_longmemeval_yaml.py
checks the checked-in files equal this output. Needs no lm-eval.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memevals.benchmarks.longmemeval.data import CATEGORIES, QUESTION_TYPES, VARIANTS

HERE = Path(__file__).resolve().parent

GROUP = """\
# LongMemEval, variant {variant}: one subtask per question type (each with its _abs questions), so
# every question runs once. longmemeval_{variant}_abstention (the _abs questions of every type) is a
# separate task, outside the group, because its questions are also in their type's subtask.
group: longmemeval_{variant}
task:
{tasks}aggregate_metric_list:
  - metric: prompt_tokens
    aggregation: mean
    weight_by_size: true
metadata:
  version: 1.0
"""

SUBTASK = """\
include: _longmemeval_base.yaml
task: longmemeval_{variant}_{category}
dataset_kwargs:
  variant: {variant}
  categories: {category}
"""


def files() -> dict[str, str]:
    """File name -> content, for every generated file."""
    out: dict[str, str] = {}
    for variant in VARIANTS:
        # the group holds the per-type subtasks only: abstention questions are in them already
        tasks = "".join(f"  - longmemeval_{variant}_{c}\n" for c in QUESTION_TYPES.values())
        out[f"longmemeval_{variant}.yaml"] = GROUP.format(variant=variant, tasks=tasks)
        for category in CATEGORIES:
            out[f"longmemeval_{variant}_{category}.yaml"] = SUBTASK.format(
                variant=variant, category=category
            )
    return out


def main(folder: Path = HERE) -> None:
    for name, text in files().items():
        (folder / name).write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {len(files())} files to {folder}", file=sys.stderr)


if __name__ == "__main__":
    main()

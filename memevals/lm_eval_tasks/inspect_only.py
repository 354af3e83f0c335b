"""The options of an Inspect task that its lm-eval task does not take, declared once.

A shared option says so in its declaration (`core.options.OPTIONS`, `lm_eval=None` with the
reason); a benchmark's own options say so in its lm-eval module, as `INSPECT_ONLY` (option ->
why). `not_taken` joins the two into the fields `option_checks.metadata_options` drops, and the
option-drift test reads the same declarations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from memevals.core.options import OPTIONS
from memevals.lm_eval_tasks.option_checks import metadata_keys

__all__ = ["GENERATION", "GRADER", "YAML_TASK", "not_taken"]

#: Why an option is the Inspect task's only: each lm-eval task is one category or variant.
YAML_TASK = (
    "each lm-eval task is one category (or variant), fixed by its YAML: choose them with --tasks"
)
#: ... lm-eval's answer length is set by the YAML.
GENERATION = (
    "lm-eval's answer length is the YAML's generation_kwargs: set it with "
    "--gen_kwargs max_gen_toks=N"
)
#: ... a grader's option: it runs after lm-eval.
GRADER = "the grader runs after lm-eval (python -m memevals.tools.judge)"


def not_taken(cls: type, own: Mapping[str, str]) -> dict[str, str]:
    """The options an lm-eval task does not take, each with why: the benchmark's own
    Inspect-only ones that are fields of its options class (or memory knobs), then the fields a
    shared declaration keeps out of lm-eval.

    Args:
        cls: the benchmark's options dataclass.
        own: its own Inspect-only options, each with why.

    Returns:
        Option name -> why lm-eval does not take it.
    """
    names = metadata_keys(cls)
    shared = {
        f.name: OPTIONS[f.name].lm_eval_note
        for f in dataclasses.fields(cls)
        if f.name in OPTIONS and OPTIONS[f.name].lm_eval is None and f.name not in own
    }
    return {**{n: why for n, why in own.items() if n in names}, **shared}

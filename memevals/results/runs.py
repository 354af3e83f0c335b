"""One reader of runs for `memevals-compare` and `memevals-diff`.

A run is one Inspect log (`.eval` / `.json`), or what one `lm_eval --log_samples` call wrote for
one benchmark: its `samples_<task>_<date>.jsonl` files (one per subtask, the same date) with the
`results_<date>.json` beside them. A folder stands for every run under it: its Inspect logs
(oldest first), then its lm-eval runs (by folder and date).

Every sample is read by one set of rules, whichever framework wrote it and whichever tool asks:

* **Scores** come from the benchmark's record (`memevals.benchmarks.records()`): a scorer the
  record declares is named by its label (a dict-valued scorer by its keys) and has the declared
  kind; an lm-eval metric is matched to the declared label of that name. A value the record does
  not declare is kept with kind None (a diagnostic). A run whose benchmark has no record keeps
  every numeric value, named as logged. A key of a scorer's value that flags a sample (that its
  score is unscored, that the judge's reply was unclear) is counted, never a score: a key the
  task aggregates only by a count, or one of FLAGS. NaN is an unscored value.
* **Category**: the sample metadata under the record's `category_key` ("-" when absent).
* **Cluster**: `metadata["cluster"]`; for logs written before that key, the record's
  `legacy_cluster_key`; else the sample itself (a sample sharing nothing is its own cluster).
* **Groups** beyond the category: the record's `subgroups`.
* **Epochs** of one sample are averaged per score (an errored epoch is left out); the sample is
  errored only when every epoch is.
* **Protocol**: the run's `protocol` option (task argument, task metadata, lm-eval
  `--metadata`), else the one its samples record; a run that records none predates the option,
  when every run used memevals' own prompts: `memevals.core.protocol.BEFORE_OPTION`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from inspect_ai.log import list_eval_logs

from memevals.results.reading.inspect_reader import read_inspect_log, read_inspect_run
from memevals.results.reading.labels import (
    agent_mode,
    agent_settings,
    context_label,
    effective,
    effective_options,
    memory_settings,
    option_default,
    system_label,
)
from memevals.results.reading.lm_eval_reader import (
    SAMPLES_FILE,
    date_of,
    read_lm_eval_run,
    read_lm_eval_runs,
)
from memevals.results.reading.model import Run, RunError, RunSample
from memevals.results.reading.records import (
    FLAGS,
    MEMORY_KINDS,
    NO_CATEGORY,
    PROTOCOL_OPTION,
    SCORE_KINDS_COMPARED,
    cluster_of,
    is_compared,
    plain,
    record_of,
    score_order,
)

__all__ = [
    "FLAGS",
    "MEMORY_KINDS",
    "NO_CATEGORY",
    "PROTOCOL_OPTION",
    "SAMPLES_FILE",
    "SCORE_KINDS_COMPARED",
    "Run",
    "RunError",
    "RunSample",
    "agent_mode",
    "agent_settings",
    "cluster_of",
    "context_label",
    "effective",
    "effective_options",
    "is_compared",
    "left_out_note",
    "load_runs",
    "memory_settings",
    "option_default",
    "plain",
    "read_inspect_log",
    "read_inspect_run",
    "read_lm_eval_run",
    "read_lm_eval_runs",
    "record_of",
    "score_order",
    "system_label",
]


# ---------------------------------------------------------------------------------------------
# Discovery


def _lm_eval_groups(folder: Path) -> list[list[Path]]:
    groups: dict[tuple[Path, str], list[Path]] = {}
    for path in sorted(folder.rglob("samples_*.jsonl")):
        if path.is_file():
            groups.setdefault((path.parent, date_of(path)), []).append(path)
    return [groups[k] for k in sorted(groups)]


def _sources(paths: Iterable[str]) -> Iterator[str | list[Path]]:
    """Each run source under `paths`, in order: an Inspect log path or one lm-eval call's files."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            logs = [info.name for info in list_eval_logs(str(path), descending=False)]
            groups = _lm_eval_groups(path)
            if not logs and not groups:
                raise RunError(
                    f"{raw}: no Inspect logs (.eval or .json) and no lm-eval samples_*.jsonl "
                    "files in this folder"
                )
            yield from (log.removeprefix("file://") for log in logs)
            yield from groups
        elif path.is_file():
            yield [path] if path.suffix == ".jsonl" else str(path)
        else:
            raise RunError(f"{raw}: no such log file or folder")


def load_runs(paths: Iterable[str]) -> list[Run]:
    """The runs under `paths` (files or folders), in order (a folder's logs oldest first).

    Args:
        paths: Inspect logs, lm-eval samples files, or folders of either.

    Returns:
        The runs.
    """
    runs: list[Run] = []
    for source in _sources(paths):
        if isinstance(source, str):
            runs.append(read_inspect_run(source))
        else:
            runs += read_lm_eval_runs(source)
    return runs


def left_out_note(run: Run) -> str:
    """What the tools say of a run they leave out: a failed or cancelled run has no results.

    Args:
        run: a run without results.

    Returns:
        The note, naming the run and its status.
    """
    return f"{run.path}: no results (status {run.status}); left out"

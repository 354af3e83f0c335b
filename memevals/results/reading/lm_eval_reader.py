"""Reading what one `lm_eval --log_samples` call wrote for one benchmark into a Run."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memevals.core.options import LM_EVAL_ALIASES, LM_EVAL_OWN_KEYS
from memevals.core.validation import json_lines, json_object
from memevals.results.reading.labels import subject_of, with_settings
from memevals.results.reading.model import Run, RunError, RunSample
from memevals.results.reading.records import (
    MEMORY_KINDS,
    category_of,
    cluster_of,
    groups_of,
    protocol_of,
    record_of,
)
from memevals.results.reading.scores import ScoreReader, criterion_of, gold_text

#: The name of a samples file lm-eval writes: `samples_<task>_<date>.jsonl` (one per subtask of a
#: call, all of one date); the one rule memevals reads such files by.
SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")


# ---------------------------------------------------------------------------------------------
# lm-eval


def _lm_eval_doc(
    record: Mapping[str, Any], where: str
) -> tuple[str, dict[str, Any], Mapping[str, Any]]:
    """(sample id, document metadata, document) of one samples record."""
    doc = record.get("doc")
    if not isinstance(doc, dict) or "id" not in doc:
        raise RunError(
            f"{where}: field 'doc.id' is missing; is this a memevals task's samples file?"
        )
    md = json_object(doc.get("metadata", {}), where, "doc.metadata", RunError)
    return str(doc["id"]), md, doc


def _lm_eval_reply(record: Mapping[str, Any]) -> str:
    filtered = record.get("filtered_resps")
    while isinstance(filtered, list) and len(filtered) == 1:
        filtered = filtered[0]
    return filtered if isinstance(filtered, str) else json.dumps(filtered)


def _model_args(config: Mapping[str, Any]) -> dict[str, Any]:
    args = config.get("model_args") or {}
    if isinstance(args, str):
        args = dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
    return dict(args) if isinstance(args, Mapping) else {}


def _lm_eval_config(results: Path | None) -> tuple[str, dict[str, Any]]:
    """(model, options) from an lm-eval results file: the model as `<model>[/<pretrained>]`
    with its other arguments; ("lm-eval", {}) when the file is absent."""
    if results is None or not results.is_file():
        return "lm-eval", {}
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RunError(f"{results}: not a readable lm-eval results file ({exc})") from exc
    config = data.get("config") or {}
    args = _model_args(config)
    model = str(config.get("model") or "lm-eval")
    if args.get("pretrained"):
        model = f"{model}/{args['pretrained']}"
    model = " ".join([model, *(f"{k}={v}" for k, v in args.items() if k != "pretrained")])
    options: dict[str, Any] = {}
    for task_config in (data.get("configs") or {}).values():
        kwargs = task_config.get("dataset_kwargs") or {}
        given = {**kwargs, **(task_config.get("metadata") or {})}
        for key, value in given.items():
            if key in LM_EVAL_OWN_KEYS or key in args or key == "categories":
                continue
            options[LM_EVAL_ALIASES.get(key, key)] = value
    return model, options


def _results_beside(samples_file: Path) -> Path | None:
    """The results file lm-eval wrote with a samples file (same call, same date)."""
    if not SAMPLES_FILE.match(samples_file.name):
        return None
    return samples_file.with_name(f"results_{date_of(samples_file)}.json")


def lm_eval_options(samples_file: Path) -> dict[str, Any]:
    """The options (`--metadata`, as the run reader reads them) of the lm-eval call that wrote a
    samples file, from the results file beside it; none without one.

    Args:
        samples_file: an lm-eval `samples_*.jsonl` file.

    Returns:
        Option name -> value.
    """
    return _lm_eval_config(_results_beside(samples_file))[1]


def date_of(path: Path) -> str:
    m = SAMPLES_FILE.match(path.name)
    return m.group("date") if m else path.name


def _task_of(path: Path) -> str:
    m = SAMPLES_FILE.match(path.name)
    return m.group("task") if m else path.stem.removeprefix("samples_")


def read_lm_eval_runs(files: Sequence[Path]) -> list[Run]:
    """The samples files of one lm-eval call (one date) as runs, one per benchmark.

    A document that two subtasks logged (a group's overlapping subtasks) counts once.

    Args:
        files: the samples files.

    Returns:
        The runs, by benchmark.
    """
    parts: dict[tuple[str, str], list[_Doc]] = {}
    for path in files:
        task = _task_of(path)
        for where, _, record in json_lines(path, RunError):
            sid, md, doc = _lm_eval_doc(record, where)
            found = record_of(str(md.get("benchmark") or ""), task)
            # without a record, tasks that share a benchmark name tell themselves apart by
            # their own `task` metadata
            bench = str(md.get("benchmark") or task)
            key = (found.name, "") if found else (bench, str(md.get("task") or ""))
            parts.setdefault(key, []).append(_Doc(path, sid, record, md, doc))
    return [_lm_eval_run(files, entries) for _, entries in sorted(parts.items())]


def read_lm_eval_run(files: Sequence[Path]) -> Run:
    """The samples files of one lm-eval call as one run (the first benchmark, if several).

    Args:
        files: the samples files.

    Returns:
        The run.
    """
    return read_lm_eval_runs(files)[0]


@dataclass(frozen=True)
class _Doc:
    """One line of an lm-eval samples file."""

    path: Path
    sid: str
    record: Mapping[str, Any]
    metadata: Mapping[str, Any]
    doc: Mapping[str, Any]


def _lm_eval_run(files: Sequence[Path], entries: list[_Doc]) -> Run:
    first = entries[0]
    first_md = first.metadata
    tasks = sorted({_task_of(e.path) for e in entries})
    record = record_of(str(first_md.get("benchmark") or ""), tasks[0])
    benchmark = record.name if record else str(first_md.get("benchmark") or tasks[0])
    reader = ScoreReader(record)
    samples: dict[str, RunSample] = {}
    metadata: dict[str, Mapping[str, Any]] = {}
    for e in entries:
        if e.sid in samples:
            continue  # the same document logged by another subtask of this call
        scores = reader.lm_eval_scores(e.record, f"{e.path} (doc {e.sid})")
        samples[e.sid] = RunSample(
            id=e.sid,
            category=category_of(e.metadata, record, e.doc.get("category")),
            cluster=cluster_of(e.metadata, e.sid, record),
            scores={k: v for k, v in scores.items() if reader.kinds.get(k) not in MEMORY_KINDS},
            reply=_lm_eval_reply(e.record),
            gold=gold_text(e.record.get("target", e.doc.get("target", ""))),
            criterion=criterion_of(e.metadata),
            groups=groups_of(e.metadata, record),
        )
        metadata[e.sid] = e.metadata
    model, options = _lm_eval_config(_results_beside(first.path))
    where = str(files[0].parent if len(files) > 1 else files[0])
    run = Run(
        label=f"{model}{subject_of(options)} ({files[0].parent.name})",
        path=where,
        framework="lm-eval",
        benchmark=benchmark,
        samples=samples,
        settings={},
        model=model,
        protocol=protocol_of(options, {}, metadata.values()),
        task=tasks[0] if len(tasks) == 1 else benchmark,
        record=record,
        kinds=dict(reader.kinds),
        options=options,
        used=dict(first_md),
        epoch_metadata=tuple(metadata.values()),
    )
    return with_settings(run)

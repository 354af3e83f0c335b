"""The replies an `lm_eval --log_samples` run logged, read for judging post hoc.

A `samples_<task>_<date>.jsonl` file holds each document (with the memevals metadata, including
the judge inputs) and the model's reply. Each logged sample is judged under one benchmark record:
the record declaring the file's lm-eval task name, else the record the documents' `benchmark`
metadata names; the metadata the record's judge reads is checked up front, so a foreign file
fails on its line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memevals.benchmarks import record_for_task, records
from memevals.core.benchmark import Benchmark
from memevals.core.validation import json_lines, json_object
from memevals.results.reading.lm_eval_reader import SAMPLES_FILE

__all__ = [
    "LmEvalSample",
    "SamplesError",
    "lm_eval_model",
    "read_samples",
    "record_of",
    "samples_by_benchmark",
    "samples_files",
    "unique_questions",
]


class SamplesError(ValueError):
    """An lm-eval samples file that this command cannot use (names file, line and field)."""


@dataclass(frozen=True)
class LmEvalSample:
    """One logged lm-eval document and its reply."""

    file: Path
    line: int
    task: str
    id: str
    user: str
    target: str
    reply: str
    metadata: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def samples_files(paths: Iterable[str | Path]) -> list[Path]:
    """The samples files named, and those under named folders (searched recursively).

    Args:
        paths: files and folders.

    Returns:
        The files, each once, in the order named.
    """
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("samples_*.jsonl") if p.is_file())
            if not found:
                raise SamplesError(
                    f"{path}: no samples_*.jsonl files (run lm_eval with --log_samples)"
                )
            out.extend(found)
        elif path.suffix == ".eval" and path.is_file():  # an Inspect log: inspect score reads it
            raise SamplesError(
                f"{path}: an Inspect log, not lm-eval samples; re-judge it with "
                f"inspect score {path} --scorer memevals/llm_judge "
                "(or memevals/official_judge for a protocol=official run)"
            )
        elif path.name.startswith("results_") and path.suffix == ".json" and path.is_file():
            raise SamplesError(
                f"{path}: lm-eval's results file, which holds no replies; pass the "
                f"samples_*.jsonl files beside it (run with --log_samples) or their folder "
                f"{path.parent}"
            )
        elif path.is_file():
            out.append(path)
        else:
            raise SamplesError(f"{path}: no such file or folder")
    return list(dict.fromkeys(out))


def _task_name(path: Path) -> str:
    m = SAMPLES_FILE.match(path.name)
    return m.group("task") if m else path.stem


def _field(record: dict[str, Any], where: str, *keys: str) -> Any:
    value: Any = record
    trail = []
    for key in keys:
        trail.append(key)
        if not isinstance(value, dict) or key not in value:
            raise SamplesError(
                f"{where}: field {'.'.join(trail)!r} is missing; is this an lm-eval "
                "--log_samples file of a memevals task?"
            )
        value = value[key]
    return value


def _reply(record: dict[str, Any], where: str) -> str:
    filtered = _field(record, where, "filtered_resps")
    if isinstance(filtered, list) and len(filtered) == 1:
        reply = filtered[0]
        if isinstance(reply, list) and len(reply) == 1:  # unsanitised logs keep the nesting
            reply = reply[0]
        if isinstance(reply, str):
            return reply
    raise SamplesError(
        f"{where}: field 'filtered_resps' should hold one generated reply, got {filtered!r}"
    )


def read_samples(path: Path) -> Iterator[LmEvalSample]:
    """The records of one samples file (errors name the file, line and field).

    Args:
        path: a `samples_<task>_<date>.jsonl` file.

    Returns:
        Its logged samples, in file order.
    """
    for where, n, record in json_lines(path, SamplesError):
        raw_md = _field(record, where, "doc", "metadata")
        metadata = json_object(raw_md, where, "doc.metadata", SamplesError)
        if "benchmark" not in metadata:
            raise SamplesError(
                f"{where}: field 'doc.metadata.benchmark' is missing; is this a memevals task?"
            )
        yield LmEvalSample(
            file=path,
            line=n,
            task=_task_name(path),
            id=str(_field(record, where, "doc", "id")),
            user=str(_field(record, where, "doc", "user")),
            target=str(record.get("target", _field(record, where, "doc", "target"))),
            reply=_reply(record, where),
            metadata=metadata,
        )


def lm_eval_model(files: Sequence[Path]) -> str | None:
    """The model lm-eval ran ("hf pretrained=...") from the results file written with the
    samples, when there is one.

    Args:
        files: samples files.

    Returns:
        The model and its arguments, or None.
    """
    for path in files:
        m = SAMPLES_FILE.match(path.name)
        if not m:
            continue
        results = path.with_name(f"results_{m.group('date')}.json")
        try:
            config = json.loads(results.read_text(encoding="utf-8")).get("config") or {}
        except (OSError, json.JSONDecodeError, AttributeError):
            continue
        if config.get("model"):
            args = config.get("model_args") or {}
            if isinstance(args, dict):
                args = ",".join(f"{k}={v}" for k, v in args.items())
            return f"{config['model']} {args}".strip()
    return None


def record_of(sample: LmEvalSample) -> Benchmark:
    """The record a logged sample is judged under.

    The record declaring the file's lm-eval task name; for a file renamed since, the record
    its documents' `benchmark` metadata names, unless they also name a `task` of it (one of
    several tasks of that benchmark's data, which only the task name tells apart).

    Args:
        sample: a logged sample.

    Returns:
        Its record.
    """
    record = record_for_task(sample.task)
    if record is not None:
        return record
    named = records().get(str(sample.metadata["benchmark"]))
    if named is None or "task" in sample.metadata:
        raise SamplesError(
            f"{sample.where}: neither the file's task {sample.task!r} nor the documents' "
            f"benchmark {sample.metadata['benchmark']!r} (task "
            f"{sample.metadata.get('task')!r}) is a memevals benchmark with lm-eval tasks; "
            "judge the file lm-eval wrote under its own name"
        )
    return named


def _checked_inputs(record: Benchmark, sample: LmEvalSample) -> None:
    """The metadata the record's judge reads is there (a foreign file fails on its line)."""
    if record.judge is None:
        judged = ", ".join(n for n, r in records().items() if r.judge is not None)
        raise SamplesError(
            f"{sample.where}: benchmark {record.name!r} has no judge; judged benchmarks: {judged}"
        )
    for key in record.judge.inputs:
        if key not in sample.metadata:
            raise SamplesError(
                f"{sample.where}: field 'doc.metadata.{key}' is missing; the {record.name} "
                "judge needs it (memevals tasks write it)"
            )


def samples_by_benchmark(files: Sequence[Path]) -> dict[str, list[LmEvalSample]]:
    """The logged samples of the files, by the record they are judged under (checked).

    Args:
        files: samples files.

    Returns:
        Benchmark name -> its samples, in the order read.
    """
    by_benchmark: dict[str, list[LmEvalSample]] = {}
    for path in files:
        for s in read_samples(path):
            record = record_of(s)
            _checked_inputs(record, s)
            by_benchmark.setdefault(record.name, []).append(s)
    if not by_benchmark:
        raise SamplesError(f"no samples in {', '.join(str(f) for f in files)}")
    return by_benchmark


def unique_questions(benchmark: str, samples: Sequence[LmEvalSample]) -> list[LmEvalSample]:
    """One sample per question: a question logged twice (e.g. LongMemEval's abstention task
    beside its type's task) is judged once if the replies agree, else it is an error.

    Args:
        benchmark: the benchmark's name, for the message.
        samples: its logged samples.

    Returns:
        The first sample of each question id.
    """
    seen: dict[str, LmEvalSample] = {}
    for s in samples:
        first = seen.get(s.id)
        if first is None:
            seen[s.id] = s
        elif first.reply != s.reply:
            raise SamplesError(
                f"{s.where}: {benchmark} question {s.id!r} was also logged at {first.where} "
                "with a different reply; judge those files in separate runs"
            )
    return list(seen.values())

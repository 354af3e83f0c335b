"""Judge lm-evaluation-harness replies post hoc with the memevals LLM judge.

    lm_eval --model ... --tasks locomo --include_path "$(python -m memevals.lm_eval_tasks)" \\
        --output_path out --log_samples
    python -m memevals.tools.judge out/ --grader openai/gpt-4o-mini

The `samples_<task>_<date>.jsonl` files that `--log_samples` writes hold each document
(with the memevals metadata, including the judge inputs) and the model's reply. This command
replays those replies in an Inspect evaluation whose scorers are the ones the Inspect task
uses when it judges, so the grader prompt, the verdict parsing, the unscored rule and the
aggregate table are the same code. The grader is any Inspect model (`provider/model`); calls
run concurrently (`--max-connections`) and are cached by Inspect (`--no-cache` to turn that
off).

Which benchmark a file belongs to comes from its benchmark record (memevals.benchmarks): the
record declaring the file's lm-eval task name, else the record the documents' `benchmark`
metadata names. The record lists the metadata its judge reads (checked up front), and its thin
Inspect module's `posthoc_scorers(metadata, max_tokens, judge_runs)` gives the scorers; a
benchmark whose module has none has no post-hoc judge. Outputs: the Inspect log
(`--log-dir`), and per benchmark `judge_<benchmark>.jsonl` (one verdict per sample) and
`judge_<benchmark>.json` (the aggregate table) in `--output-dir` (default: the folder of the
first samples file). The conversation context is not replayed: the judge never sees it, and
leaving it out keeps the log small.

Repeated judging: `--judge-runs N` (or `-S judge_runs=N`, as `inspect score` spells it) judges
each reply N times with distinct seeds and reports the judges' agreement beside the mean score
(docs/judges.md#repeated-judging), where the benchmark's scorers support it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalLog
from inspect_ai.model import (
    CachePolicy,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from memevals.benchmarks import record_for_task, records
from memevals.core.benchmark import Benchmark
from memevals.core.validation import json_lines, json_object
from memevals.results.runs import SAMPLES_FILE
from memevals.tools.command_line import parse_task_args, prog_name

__all__ = [
    "POSTHOC_SCORERS",
    "JudgeRun",
    "LmEvalSample",
    "SamplesError",
    "judge_samples",
    "main",
    "read_samples",
    "record_of",
]

#: The function of a thin Inspect module that gives its post-hoc scorers:
#: (the samples' metadata, judge max_tokens or None, judge_runs) -> the Inspect scorers.
POSTHOC_SCORERS = "posthoc_scorers"


class SamplesError(ValueError):
    """An lm-eval samples file that this command cannot use (names file, line and field)."""


class JudgingError(RuntimeError):
    """The grader could not be built or the judging run failed (one line: the cause, the log)."""


def _one_line(text: str, limit: int = 400) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# Reading lm-eval's --log_samples output


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
    """The samples files named, and those under named folders (searched recursively)."""
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
    """The records of one samples file (errors name the file, line and field)."""
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


def _lm_eval_model(files: Sequence[Path]) -> str | None:
    """The model lm-eval ran ("hf pretrained=...") from the results file written with the
    samples, when there is one."""
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


# ---------------------------------------------------------------------------------------------
# The benchmark's record and the same scorers as its Inspect tasks


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


def posthoc_scorers(
    record: Benchmark, samples: Sequence[LmEvalSample], max_tokens: int | None, judge_runs: int
) -> list[Scorer]:
    """The scorers the benchmark's Inspect tasks judge with, from its thin Inspect module.

    Args:
        record: the benchmark's record.
        samples: its logged samples.
        max_tokens: the judge's token limit (None: each scorer's own default).
        judge_runs: how many times each reply is judged.

    Returns:
        The scorers.
    """
    where = samples[0].where
    factory = None
    if record.inspect_module is not None:
        module = importlib.import_module(record.inspect_module)
        factory = getattr(module, POSTHOC_SCORERS, None)
    if not callable(factory):
        raise SamplesError(
            f"{where}: benchmark {record.name!r} has no post-hoc judge (its Inspect module "
            f"{record.inspect_module} defines no {POSTHOC_SCORERS})"
        )
    try:
        scorers = factory([s.metadata for s in samples], max_tokens, judge_runs)
    except ValueError as exc:
        raise SamplesError(f"{where}: {record.name}: {exc}") from exc
    return list(scorers)


@solver
def replay_reply(model_name: str) -> Solver:
    """Give each sample the reply lm-eval logged, instead of calling a model."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        reply = str(state.metadata["lm_eval_reply"])
        state.output = ModelOutput.from_content(model=model_name, content=reply)
        state.messages.append(state.output.message)
        return state

    return solve


def _dataset(benchmark: str, samples: Sequence[LmEvalSample]) -> MemoryDataset:
    """One Inspect sample per question; a question logged twice (e.g. LongMemEval's abstention
    task beside its type's task) is judged once if the replies agree, else it is an error."""
    seen: dict[str, LmEvalSample] = {}
    out: list[Sample] = []
    for s in samples:
        first = seen.get(s.id)
        if first is not None:
            if first.reply != s.reply:
                raise SamplesError(
                    f"{s.where}: {benchmark} question {s.id!r} was also logged at {first.where} "
                    "with a different reply; judge those files in separate runs"
                )
            continue
        seen[s.id] = s
        metadata = {
            **s.metadata,
            "lm_eval_task": s.task,
            "lm_eval_reply": s.reply,
            "lm_eval_source": s.where,
        }
        out.append(
            Sample(
                id=s.id,
                input=[ChatMessageUser(content=s.user)],
                target=s.target,
                metadata=metadata,
            )
        )
    return MemoryDataset(out, name=f"{benchmark}_judge", shuffled=False)


# ---------------------------------------------------------------------------------------------
# Running and reporting


@dataclass
class JudgeRun:
    """The judged samples of one benchmark."""

    benchmark: str
    log: EvalLog
    table: list[tuple[str, str, float]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)


def aggregate_table(log: EvalLog) -> list[tuple[str, str, float]]:
    """(scorer, metric, value) rows, as the Inspect log reports them."""
    rows: list[tuple[str, str, float]] = []
    if log.results is None:
        return rows
    for score in log.results.scores:
        for name, m in score.metrics.items():
            rows.append((score.name, name, float(m.value)))
    return rows


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_number(v) for k, v in value.items()}
    return value


def verdict_rows(log: EvalLog) -> list[dict[str, Any]]:
    """One row per sample: the reply, what each scorer gave, and the judge's verdict."""
    rows: list[dict[str, Any]] = []
    for sample in log.samples or []:
        md = sample.metadata
        row: dict[str, Any] = {
            "id": sample.id,
            "lm_eval_task": md.get("lm_eval_task"),
            "category": md.get("category"),
            "reply": md.get("lm_eval_reply"),
        }
        for name, score in (sample.scores or {}).items():
            row[name] = _json_number(score.value)
            smd = score.metadata or {}
            if "criterion" in smd:  # the judge's own record
                row.update(
                    prediction=score.answer,
                    criterion=smd.get("criterion"),
                    label=smd.get("label"),
                    grader=smd.get("grader"),
                    explanation=score.explanation,
                )
        if sample.error is not None:
            row["error"] = sample.error.message
        rows.append(row)
    return rows


def _by_benchmark(files: Sequence[Path]) -> dict[str, list[LmEvalSample]]:
    """The logged samples of the files, by the record they are judged under (checked)."""
    by_benchmark: dict[str, list[LmEvalSample]] = {}
    for path in files:
        for s in read_samples(path):
            record = record_of(s)
            _checked_inputs(record, s)
            by_benchmark.setdefault(record.name, []).append(s)
    if not by_benchmark:
        raise SamplesError(f"no samples in {', '.join(str(f) for f in files)}")
    return by_benchmark


def _grader_model(
    grader: str | Model, grader_args: dict[str, Any] | None, max_connections: int, cache: bool
) -> Model:
    config = GenerateConfig(
        max_connections=max_connections,
        cache=CachePolicy(expiry=None) if cache else None,
    )
    if not isinstance(grader, Model):
        try:
            return get_model(grader, config=config, **(grader_args or {}))
        except Exception as exc:  # an unknown provider, a missing package or key: Inspect's words
            why = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            raise JudgingError(f"--grader {grader}: {_one_line(str(why))}") from exc
    if cache:
        grader.config = grader.config.merge(config)
    return grader


def _write_outputs(run: JudgeRun, out_dir: Path, summary: dict[str, Any]) -> None:
    """`judge_<benchmark>.jsonl` (one verdict per sample) and `.json` (the table)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / f"judge_{run.benchmark}.jsonl").open("w", encoding="utf-8") as fh:
        for row in run.verdicts:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = {
        **summary,
        "samples": len(run.verdicts),
        "inspect_log": run.log.location,
        "metrics": [{"scorer": s, "metric": m, "value": _json_number(v)} for s, m, v in run.table],
    }
    (out_dir / f"judge_{run.benchmark}.json").write_text(
        json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def _judging_failed(benchmark: str, grader: Model, log: EvalLog) -> JudgingError:
    reason = _one_line(log.error.message) if log.error is not None else log.status
    where = f"(log: {log.location})"
    return JudgingError(f"{benchmark}: judging with {grader} failed: {reason} {where}")


def judge_samples(
    paths: Sequence[str | Path],
    grader: str | Model,
    *,
    grader_args: dict[str, Any] | None = None,
    max_connections: int = 10,
    cache: bool = True,
    judge_max_tokens: int | None = None,
    log_dir: str | None = None,
    output_dir: str | Path | None = None,
    display: str = "none",
    judge_runs: int = 1,
) -> list[JudgeRun]:
    """Judge the replies in lm-eval samples files; one Inspect evaluation per benchmark."""
    if max_connections < 1:
        raise ValueError(f"max_connections must be at least 1, got {max_connections}")
    if isinstance(judge_runs, bool) or not isinstance(judge_runs, int) or judge_runs < 1:
        raise ValueError(f"judge_runs must be an integer of at least 1, got {judge_runs!r}")
    files = samples_files(paths)
    by_benchmark = _by_benchmark(files)
    grader_model = _grader_model(grader, grader_args, max_connections, cache)
    model_name = _lm_eval_model(files) or "lm-eval"
    out_dir = Path(output_dir) if output_dir is not None else files[0].parent

    runs: list[JudgeRun] = []
    for benchmark, samples in by_benchmark.items():
        task = Task(
            dataset=_dataset(benchmark, samples),
            solver=replay_reply(model_name),
            scorer=posthoc_scorers(records()[benchmark], samples, judge_max_tokens, judge_runs),
            name=f"{benchmark}_judge",
            metadata={
                "benchmark": benchmark,
                "lm_eval_model": model_name,
                "lm_eval_files": sorted({str(s.file) for s in samples}),
                "lm_eval_tasks": sorted({s.task for s in samples}),
            },
        )
        [log] = inspect_eval(
            task,
            model="none",
            model_roles={"grader": grader_model},
            log_dir=log_dir,
            max_samples=max_connections,
            display=display,  # type: ignore[arg-type]
        )
        if log.status != "success":
            raise _judging_failed(benchmark, grader_model, log)
        run = JudgeRun(benchmark, log, aggregate_table(log), verdict_rows(log))
        summary = {
            "benchmark": benchmark,
            "grader": str(grader_model),
            **({"judge_runs": judge_runs} if judge_runs != 1 else {}),
            "lm_eval_model": model_name,
        }
        _write_outputs(run, out_dir, summary)
        runs.append(run)
    return runs


def format_table(run: JudgeRun) -> str:
    width = max([len(s) for s, _, _ in run.table] + [6])
    mwidth = max([len(m) for _, m, _ in run.table] + [6])
    lines = [
        f"{run.benchmark}: {len(run.verdicts)} samples judged; log {run.log.location}",
        f"{'scorer':<{width}}  {'metric':<{mwidth}}  value",
    ]
    lines += [f"{s:<{width}}  {m:<{mwidth}}  {v:.4f}" for s, m, v in run.table]
    return "\n".join(lines)


def _model_arg(text: str) -> str:
    """Check the shape of one `-M key=value`; values are read later, all together, as
    `inspect eval -M` reads them (YAML; a comma makes a list)."""
    key, sep, _ = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return text


def grader_args(pairs: Sequence[str]) -> dict[str, Any]:
    """`-M` pairs as model arguments, read exactly as `inspect eval -M` reads them."""
    return parse_task_args(pairs)


def _scorer_arg(text: str) -> int:
    """`-S judge_runs=N`, the one scorer option this command takes in `inspect score` form."""
    key, sep, value = text.partition("=")
    if key.strip() != "judge_runs" or not sep:
        raise argparse.ArgumentTypeError(
            f"-S takes judge_runs=N (other judge options have their own flags), got {text!r}"
        )
    return _judge_runs(value)


def _judge_runs(text: str) -> int:
    try:
        runs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"judge_runs must be an integer, got {text!r}") from None
    if runs < 1:
        raise argparse.ArgumentTypeError(f"judge_runs must be at least 1, got {runs}")
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog_name(sys.argv[0], "memevals.tools.judge"),
        description="Judge lm-eval --log_samples replies with the memevals LLM judge.",
    )
    parser.add_argument("paths", nargs="+", help="samples_*.jsonl files or folders holding them")
    parser.add_argument("--grader", required=True, help="Inspect model, e.g. openai/gpt-4o-mini")
    parser.add_argument(
        "-M", "--grader-arg", action="append", type=_model_arg, default=[],
        help="grader model argument key=value (repeatable)",
    )  # fmt: skip
    parser.add_argument("--max-connections", type=int, default=10)
    parser.add_argument("--no-cache", action="store_true", help="do not cache grader calls")
    parser.add_argument(
        "--judge-max-tokens", type=int, default=None,
        help="grader token limit per reply (default: the Inspect task's)",
    )  # fmt: skip
    parser.add_argument(
        "--judge-runs", type=_judge_runs, default=None,
        help="judge each reply N times (distinct seeds) and report the agreement (default 1)",
    )  # fmt: skip
    parser.add_argument(
        "-S", "--scorer-arg", type=_scorer_arg, action="append", default=[], metavar="judge_runs=N",
        help="the same as --judge-runs N, in inspect score's spelling",
    )  # fmt: skip
    parser.add_argument("--log-dir", default=None, help="Inspect log folder")
    parser.add_argument("--output-dir", default=None, help="where judge_<benchmark>.* go")
    parser.add_argument("--display", default="none", help="Inspect display (none, plain, ...)")
    args = parser.parse_args(argv)
    given = {r for r in [args.judge_runs, *args.scorer_arg] if r is not None}
    if len(given) > 1:
        parser.error(f"judge_runs given twice with different values: {sorted(given)}")
    try:
        runs = judge_samples(
            args.paths,
            args.grader,
            grader_args=grader_args(args.grader_arg),
            max_connections=args.max_connections,
            cache=not args.no_cache,
            judge_max_tokens=args.judge_max_tokens,
            log_dir=args.log_dir,
            output_dir=args.output_dir,
            display=args.display,
            judge_runs=given.pop() if given else 1,
        )
    except SamplesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except JudgingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for run in runs:
        print(format_table(run))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

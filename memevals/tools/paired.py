"""Paired comparison of runs over the same questions: is run B really better than run A?

    memevals-diff RUN_A RUN_B [RUN_C ...] [--csv OUT] [--json OUT] [--flips OUT] [--png OUT]
    memevals-compare --paired RUN_A RUN_B ...          # the same command

A run is an Inspect log (`.eval` / `.json`; a folder stands for every log in it, in time order)
or an lm-eval `--log_samples` run (a `samples_<task>_<date>.jsonl` file, or a folder: every
run found under it, one per timestamp, all subtask files of one timestamp together). The first
run is the baseline; each later run is compared with it.

Samples are paired by id. Several epochs of one question are averaged first. For every score
the two runs share (F1, judge, retrieval metrics ...), overall and per category, the table gives
both means, the difference B - A with its cluster-bootstrap interval, a paired test (exact
McNemar for independent 0/1 scores, a cluster sign-flip test otherwise), the Holm-adjusted p
across the categories, the minimum detectable difference and the questions that flipped. The
statistics are memevals.core.paired_statistics; clusters are the conversations a question comes
from (sample metadata `cluster`, else `conversation_id`, else the question itself).

A comparison is only fair when both runs asked the same questions of the same data under the
same settings and were judged by the same judge with the same criteria. A memory system under
test (`-T memory=<name>`, with its arguments) is, like the model, what is compared: two runs
with different systems are fair, but a different k (`top_k`) or context mode is not. Every
difference is named and the command stops (exit status 1) unless `--allow-mismatch` is given;
then each difference is printed under the table. A sample that errored or was left unscored in
either run is left out of that score's pair and counted, never treated as wrong.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalSample, list_eval_logs, read_eval_log

from memevals.core.memory_options import MemoryOptions
from memevals.core.paired_statistics import PairedResult, holm_adjust, paired_comparison
from memevals.core.validation import json_lines
from memevals.tools.compare import CATEGORY_ORDER, F1_SCORERS

__all__ = [
    "Comparison",
    "Mismatch",
    "Run",
    "RunSample",
    "ScoreTable",
    "compare_runs",
    "find_mismatches",
    "flipped_rows",
    "load_runs",
    "main",
    "markdown",
    "plot_differences",
    "read_inspect_run",
    "read_lm_eval_run",
    "write_csv",
    "write_flips",
    "write_json",
]

PROG = "memevals-diff"
OVERALL = "overall"

#: Per-sample values that are not scores of the answer (prompt size, bookkeeping).
#: `memory_system`'s value is the retrieval latency, a measurement, not a score to compare
NOT_SCORES = frozenset({"prompt_tokens", "selected_k", "unscored", "memory_system"})

#: Settings that change which answer counts as right (the gold), with their defaults. lm-eval
#: records only the options given on its command line, so a missing one is its default.
GOLD_SETTINGS: Mapping[str, Any] = {"adversarial": "choice", "gap_fix": False, "variant": None}
#: Settings that change what the model is asked besides its history, with their defaults.
PROMPT_SETTINGS: Mapping[str, Any] = {
    "disclose_task": False,
    "seed": 0,
    "history_format": "json",
    "chain_of_note": False,
}
#: lm-eval option names that are another name of an Inspect task parameter.
LM_EVAL_ALIASES: Mapping[str, str] = {"choice_seed": "seed"}
#: Keys of the memory settings a task logs that are outcomes, not settings.
_MEMORY_OUTCOME = re.compile(r".*_total$|^prompt_tokens")
#: Context settings that name the memory system under test (the subject, as the model is) or
#: only say whether its ingestions were cached: never a reason to refuse a comparison.
SUBJECT_SETTINGS = frozenset({"memory", "memory_args", "memory_cache"})

_SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")
_LM_EVAL_KEYS = frozenset({"version", "config_source", "_metadata"})


class RunError(ValueError):
    """A run this command cannot read (the message names the file, record and field)."""


# ---------------------------------------------------------------------------------------------
# Runs


@dataclass(frozen=True)
class RunSample:
    """One question of one run (epochs averaged): its scores (NaN = unscored), reply and gold."""

    id: str
    category: str
    cluster: str
    scores: Mapping[str, float]
    reply: str
    gold: str
    errored: bool = False
    criterion: str | None = None


@dataclass(frozen=True)
class Run:
    """One run of one task: what was asked, how, and the per-question scores."""

    label: str
    path: str
    framework: str  # "inspect" or "lm-eval"
    benchmark: str
    samples: Mapping[str, RunSample]
    #: setting group -> name -> value: "context settings", "gold variant", "prompt settings".
    settings: Mapping[str, Mapping[str, Any]]
    #: what the task logged it used (Inspect); compared instead of the options when both have it.
    used_context: Mapping[str, Any] | None = None
    data_checksums: Any = None  # None: not recorded (lm-eval)
    judges: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # score -> judge models

    @property
    def score_names(self) -> list[str]:
        names = {n for s in self.samples.values() for n in s.scores}
        return sorted(names, key=lambda n: (n not in ("f1", "judge"), n != "f1", n))


def _plain(value: Any) -> Any:
    """Option values as lm-eval's --metadata may spell them ("true", "5") made comparable."""
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "false"):
            return low == "true"
        if re.fullmatch(r"-?\d+", low):
            return int(low)
        if low in ("none", "null", ""):
            return None
    return value


def _settings(options: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The compared option groups from a run's options (missing = the default)."""
    memory = MemoryOptions()
    return {
        "context settings": {
            name: _plain(options.get(name, getattr(memory, name))) for name in MemoryOptions.names()
        },
        "gold variant": {k: _plain(options.get(k, d)) for k, d in GOLD_SETTINGS.items()},
        "prompt settings": {k: _plain(options.get(k, d)) for k, d in PROMPT_SETTINGS.items()},
    }


def _category(metadata: Mapping[str, Any], fallback: Any = None) -> str:
    value = metadata.get("category", fallback)
    return str(value) if value is not None else "-"


def _cluster(metadata: Mapping[str, Any], sample_id: str) -> str:
    """The cluster a question belongs to: metadata `cluster`, else its conversation, else itself
    (a question that shares nothing with the others is its own cluster)."""
    for key in ("cluster", "conversation_id"):
        value = metadata.get(key)
        if value is not None and value != "":
            return str(value)
    return sample_id


def _criterion(metadata: Mapping[str, Any]) -> str | None:
    judge = metadata.get("judge")
    if isinstance(judge, Mapping) and judge.get("criterion") is not None:
        return str(judge["criterion"])
    return None


def _gold(target: Any) -> str:
    if isinstance(target, list):
        return " | ".join(str(t) for t in target)
    return str(target)


def _score_name(scorer: str) -> str:
    name = scorer.rsplit("/", 1)[-1]
    return "f1" if name in F1_SCORERS else name


def _number(value: Any) -> float | None:
    """A numeric score value (bool included); None for text and other values."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return None


def _inspect_scores(sample: EvalSample) -> tuple[dict[str, float], dict[str, str]]:
    """Numeric scores of one Inspect sample (NaN = unscored) and the judge behind each."""
    values: dict[str, float] = {}
    graders: dict[str, str] = {}
    for scorer, score in (sample.scores or {}).items():
        base = _score_name(scorer)
        if base in NOT_SCORES:
            continue
        items = score.value.items() if isinstance(score.value, dict) else [(base, score.value)]
        md = score.metadata or {}
        for key, raw in items:
            if key in NOT_SCORES:
                continue
            number = _number(raw)
            if number is None:
                continue
            name = key if key not in values else f"{base}.{key}"
            values[name] = number
            if md.get("grader") is not None:
                fallback = " (the model under test)" if md.get("grader_fallback") else ""
                graders[name] = f"{md['grader']}{fallback}"
    return values, graders


def _average_epochs(epochs: list[RunSample]) -> RunSample:
    """One question of several epochs: each score averaged over the epochs that have it (an
    errored or unscored epoch is left out); errored only if every epoch errored."""
    first = epochs[0]
    if len(epochs) == 1:
        return first
    kept = [e for e in epochs if not e.errored]
    names = {n for e in kept for n in e.scores}
    scores: dict[str, float] = {}
    for name in names:
        finite = [
            e.scores[name] for e in kept if name in e.scores and math.isfinite(e.scores[name])
        ]
        scores[name] = math.fsum(finite) / len(finite) if finite else math.nan
    reply = kept[0].reply if kept else first.reply
    return RunSample(
        id=first.id,
        category=first.category,
        cluster=first.cluster,
        scores=scores,
        reply=reply,
        gold=first.gold,
        errored=not kept,
        criterion=first.criterion,
    )


def read_inspect_run(path: str) -> Run:
    """One Inspect log as a run: its settings from the header, its samples by id."""
    try:
        # One pass over the whole log: measured faster than streaming the samples or asking
        # for fields to be left out (both parse sample by sample), even with their events.
        header = read_eval_log(path)
    except Exception as exc:
        raise RunError(f"{path}: not a readable Inspect log ({exc})") from exc
    raw = header.samples or []
    metadata = header.eval.metadata or {}
    args = dict(header.eval.task_args or {})
    by_id: dict[str, list[RunSample]] = {}
    judges: dict[str, set[str]] = {}
    for sample in sorted(raw, key=lambda s: (str(s.id), s.epoch)):
        sid = str(sample.id)
        md = sample.metadata or {}
        scores, graders = _inspect_scores(sample)
        for name, grader in graders.items():
            judges.setdefault(name, set()).add(grader)
        by_id.setdefault(sid, []).append(
            RunSample(
                id=sid,
                category=_category(md),
                cluster=_cluster(md, sid),
                scores=scores,
                reply=sample.output.completion if sample.output else "",
                gold=_gold(sample.target),
                errored=sample.error is not None,
                criterion=_criterion(md),
            )
        )
    memory = metadata.get("memory")
    used = memory if isinstance(memory, Mapping) else metadata
    used_context = {
        k: v
        for k, v in used.items()
        if k in MemoryOptions.names() or k in ("retrieval_unit", "embedding_model")
    }
    used_context = {k: v for k, v in used_context.items() if not _MEMORY_OUTCOME.match(k)}
    task = header.eval.task.rsplit("/", 1)[-1]
    return Run(
        label=f"{header.eval.model}{_subject(used)} ({Path(path).name})",
        path=path,
        framework="inspect",
        benchmark=str(metadata.get("benchmark") or task),
        samples={sid: _average_epochs(epochs) for sid, epochs in by_id.items()},
        settings=_settings(args),
        used_context=used_context or None,
        data_checksums=metadata.get("data_sha256"),
        judges={k: tuple(sorted(v)) for k, v in judges.items()},
    )


def _lm_eval_reply(record: Mapping[str, Any]) -> str:
    filtered = record.get("filtered_resps")
    while isinstance(filtered, list) and len(filtered) == 1:
        filtered = filtered[0]
    return filtered if isinstance(filtered, str) else json.dumps(filtered)


def _lm_eval_record(record: Any, where: str) -> tuple[RunSample, str]:
    if not isinstance(record, dict):
        raise RunError(f"{where}: expected a JSON object per line")
    doc = record.get("doc")
    if not isinstance(doc, dict) or "id" not in doc:
        raise RunError(
            f"{where}: field 'doc.id' is missing; is this a memevals task's samples file?"
        )
    raw_md = doc.get("metadata", {})
    try:
        md = json.loads(raw_md) if isinstance(raw_md, str) else raw_md
    except json.JSONDecodeError as exc:
        raise RunError(f"{where}: field 'doc.metadata' is not JSON ({exc})") from exc
    if not isinstance(md, dict):
        raise RunError(f"{where}: field 'doc.metadata' is not a JSON object")
    sid = str(doc["id"])
    metrics = record.get("metrics")
    if not isinstance(metrics, list):
        raise RunError(f"{where}: field 'metrics' (the list of metric names) is missing")
    scores: dict[str, float] = {}
    for name in metrics:
        if name in NOT_SCORES:
            continue
        value = record.get(name)
        if value is None:  # the metric does not apply to this sample (e.g. no evidence turns)
            continue
        number = _number(value)
        if number is not None:
            scores[str(name)] = number
    sample = RunSample(
        id=sid,
        category=_category(md, doc.get("category")),
        cluster=_cluster(md, sid),
        scores=scores,
        reply=_lm_eval_reply(record),
        gold=_gold(record.get("target", doc.get("target", ""))),
        criterion=_criterion(md),
    )
    return sample, str(md.get("benchmark") or "")


def _lm_eval_config(results: Path) -> tuple[str, dict[str, Any]]:
    """(model label, options) from an lm-eval results file; ("lm-eval", {}) when it is absent."""
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "lm-eval", {}
    except (OSError, json.JSONDecodeError) as exc:
        raise RunError(f"{results}: not a readable lm-eval results file ({exc})") from exc
    config = data.get("config") or {}
    model_args = config.get("model_args") or {}
    if isinstance(model_args, str):
        model_args = dict(kv.split("=", 1) for kv in model_args.split(",") if "=" in kv)
    label = " ".join(
        [str(config.get("model") or "lm-eval"), *(f"{k}={v}" for k, v in model_args.items())]
    )
    options: dict[str, Any] = {}
    for task_config in (data.get("configs") or {}).values():
        given = {**(task_config.get("dataset_kwargs") or {}), **(task_config.get("metadata") or {})}
        for key, value in given.items():
            if key in _LM_EVAL_KEYS or key in model_args or key == "categories":
                continue
            options[LM_EVAL_ALIASES.get(key, key)] = value
    return label, options


def read_lm_eval_run(files: Sequence[Path]) -> Run:
    """The samples files of one lm-eval run (one timestamp) as a run."""
    by_id: dict[str, RunSample] = {}
    benchmark = ""
    for path in files:
        for where, _, record in json_lines(path, RunError):
            sample, bench = _lm_eval_record(record, where)
            if sample.id in by_id:
                raise RunError(f"{where}: sample id {sample.id!r} appears twice in this run")
            by_id[sample.id] = sample
            benchmark = benchmark or bench
    m = _SAMPLES_FILE.match(files[0].name)
    results = files[0].with_name(f"results_{m.group('date')}.json") if m else Path("/nonexistent")
    label, options = _lm_eval_config(results)
    where = str(files[0].parent if len(files) > 1 else files[0])
    return Run(
        label=f"{label}{_subject(options)} ({files[0].parent.name})",
        path=where,
        framework="lm-eval",
        benchmark=benchmark or (m.group("task") if m else "lm-eval"),
        samples=by_id,
        settings=_settings(options),
    )


def _subject(settings: Mapping[str, Any]) -> str:
    """` + memory <system> [version]` for a run whose context a memory system gave, else ""."""
    if not settings.get("memory"):
        return ""
    version = settings.get("memory_version")
    return f" + memory {settings['memory']}" + (f" {version}" if version else "")


def _lm_eval_groups(folder: Path) -> list[list[Path]]:
    groups: dict[tuple[Path, str], list[Path]] = {}
    for path in sorted(folder.rglob("samples_*.jsonl")):
        m = _SAMPLES_FILE.match(path.name)
        groups.setdefault((path.parent, m.group("date") if m else path.name), []).append(path)
    return [groups[k] for k in sorted(groups)]


def load_runs(paths: Iterable[str]) -> list[Run]:
    """The runs named by `paths`, in order (a folder expands to its runs, oldest first)."""
    runs: list[Run] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            logs = [info.name for info in list_eval_logs(str(path), descending=False)]
            groups = _lm_eval_groups(path)
            if not logs and not groups:
                raise RunError(
                    f"{raw}: no Inspect logs (.eval/.json) and no lm-eval samples_*.jsonl here"
                )
            runs += [read_inspect_run(log.removeprefix("file://")) for log in logs]
            runs += [read_lm_eval_run(group) for group in groups]
        elif path.is_file():
            if path.suffix == ".jsonl":
                runs.append(read_lm_eval_run([path]))
            else:
                runs.append(read_inspect_run(str(path)))
        else:
            raise RunError(f"{raw}: no such log file or folder")
    return runs


# ---------------------------------------------------------------------------------------------
# Fairness


@dataclass(frozen=True)
class Mismatch:
    """One way two runs differ that makes their comparison unfair."""

    setting: str
    detail: str

    def __str__(self) -> str:
        return f"{self.setting}: {self.detail}"


def _few(ids: Iterable[str], limit: int = 5) -> str:
    items = sorted(ids)
    shown = ", ".join(items[:limit])
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _dict_diff(group: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Mismatch]:
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if va != vb:
            out.append(Mismatch(group, f"{key}: A={va!r}, B={vb!r}"))
    return out


def find_mismatches(a: Run, b: Run, scores: Sequence[str]) -> list[Mismatch]:
    """Every difference between runs A and B that a fair comparison must not have."""
    out: list[Mismatch] = []
    if a.benchmark != b.benchmark:
        out.append(Mismatch("benchmark", f"A={a.benchmark!r}, B={b.benchmark!r}"))
    only_a, only_b = set(a.samples) - set(b.samples), set(b.samples) - set(a.samples)
    if only_a or only_b:
        parts = []
        if only_a:
            parts.append(f"{len(only_a)} only in A ({_few(only_a)})")
        if only_b:
            parts.append(f"{len(only_b)} only in B ({_few(only_b)})")
        out.append(Mismatch("sample set", "; ".join(parts)))
    recorded = a.data_checksums is not None and b.data_checksums is not None
    if recorded and a.data_checksums != b.data_checksums:
        out.append(Mismatch("data checksums", f"A={a.data_checksums!r}, B={b.data_checksums!r}"))
    for score in scores:
        ja, jb = a.judges.get(score), b.judges.get(score)
        if ja is not None and jb is not None and ja != jb:
            out.append(Mismatch(f"judge model ({score})", f"A={', '.join(ja)}; B={', '.join(jb)}"))
    shared = set(a.samples) & set(b.samples)
    criteria = [sid for sid in shared if a.samples[sid].criterion != b.samples[sid].criterion]
    if criteria:
        first = sorted(criteria)[0]
        out.append(
            Mismatch(
                "judge criteria",
                f"{len(criteria)} samples judged by another criterion (e.g. {first}: "
                f"A={a.samples[first].criterion!r}, B={b.samples[first].criterion!r})",
            )
        )
    if a.used_context is not None and b.used_context is not None:
        context_a, context_b = a.used_context, b.used_context
    else:
        context_a, context_b = a.settings["context settings"], b.settings["context settings"]
    out += _dict_diff(
        "context settings",
        {k: v for k, v in context_a.items() if k not in SUBJECT_SETTINGS},
        {k: v for k, v in context_b.items() if k not in SUBJECT_SETTINGS},
    )
    for group in ("gold variant", "prompt settings"):
        out += _dict_diff(group, a.settings[group], b.settings[group])
    return out


# ---------------------------------------------------------------------------------------------
# Comparison


@dataclass(frozen=True)
class TableRow:
    """One line of a score table: overall or one category."""

    category: str
    result: PairedResult
    holm_p: float | None  # None on the overall row (Holm runs across the categories)


@dataclass(frozen=True)
class ScoreTable:
    """One score of one comparison: its rows and the samples left out of the pair."""

    score: str
    rows: tuple[TableRow, ...]
    errored: int  # paired ids left out because a run errored on them
    unscored: int  # ... because a run left this score unscored
    pairs: tuple[tuple[RunSample, RunSample], ...]


@dataclass(frozen=True)
class Comparison:
    """Run A (the baseline) against run B."""

    a: Run
    b: Run
    tables: tuple[ScoreTable, ...]
    mismatches: tuple[Mismatch, ...]
    not_shared: tuple[str, ...]  # scores that only one run has


def _ordered(categories: Iterable[str]) -> list[str]:
    cats = set(categories)
    known = [c for c in CATEGORY_ORDER if c in cats]
    return known + sorted(cats - set(known))


def _score_table(
    a: Run, b: Run, score: str, ids: Sequence[str], resamples: int, seed: int
) -> ScoreTable:
    errored = unscored = 0
    pairs: list[tuple[RunSample, RunSample]] = []
    for sid in ids:
        sa, sb = a.samples[sid], b.samples[sid]
        if sa.errored or sb.errored:
            errored += 1
            continue
        if score not in sa.scores and score not in sb.scores:
            continue  # a score neither run gives this sample (F1 of a cognitive sample)
        va, vb = sa.scores.get(score, math.nan), sb.scores.get(score, math.nan)
        if not (math.isfinite(va) and math.isfinite(vb)):
            unscored += 1
            continue
        pairs.append((sa, sb))
    if not pairs:
        return ScoreTable(score, (), errored, unscored, ())
    binary = all(p.scores[score] in (0.0, 1.0) for pair in pairs for p in pair)

    def compare(sub: Sequence[tuple[RunSample, RunSample]]) -> PairedResult:
        return paired_comparison(
            [sa.scores[score] for sa, _ in sub],
            [sb.scores[score] for _, sb in sub],
            [sa.cluster for sa, _ in sub],
            binary=binary,
            resamples=resamples,
            seed=seed,
        )

    categories = _ordered({sa.category for sa, _ in pairs})
    per_category = [(c, compare([p for p in pairs if p[0].category == c])) for c in categories]
    adjusted = holm_adjust([r.p_value for _, r in per_category]) if len(categories) > 1 else None
    rows = [TableRow(OVERALL, compare(pairs), None)]
    if len(categories) > 1:
        assert adjusted is not None
        rows += [TableRow(c, r, p) for (c, r), p in zip(per_category, adjusted, strict=True)]
    return ScoreTable(score, tuple(rows), errored, unscored, tuple(pairs))


def compare_runs(a: Run, b: Run, *, resamples: int = 10_000, seed: int = 0) -> Comparison:
    """Pair B with A by sample id and compare every score they share."""
    names_a, names_b = a.score_names, b.score_names
    shared = [n for n in names_a if n in names_b]
    not_shared = tuple(sorted(set(names_a) ^ set(names_b)))
    ids = sorted(set(a.samples) & set(b.samples))
    tables = [_score_table(a, b, s, ids, resamples, seed) for s in shared]
    return Comparison(a, b, tuple(tables), tuple(find_mismatches(a, b, shared)), not_shared)


def flipped_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """Every paired question whose score differs between A and B, per score."""
    out: list[dict[str, Any]] = []
    for table in comparison.tables:
        for sa, sb in table.pairs:
            va, vb = sa.scores[table.score], sb.scores[table.score]
            if va == vb:
                continue
            out.append(
                {
                    "run_a": comparison.a.label,
                    "run_b": comparison.b.label,
                    "score": table.score,
                    "id": sa.id,
                    "category": sa.category,
                    "cluster": sa.cluster,
                    "score_a": va,
                    "score_b": vb,
                    "better": "A" if va > vb else "B",
                    "gold": sa.gold,
                    "reply_a": sa.reply,
                    "reply_b": sb.reply,
                }
            )
    return out


# ---------------------------------------------------------------------------------------------
# Output


def _f(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf"
    return f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2g}" if value < 0.001 else f"{value:.3f}"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


_HEADER = (
    "| category | n | clusters | mean A | mean B | B − A | 95 % CI | p | p (Holm) | test | MDE "
    "| A better | B better |"
)


def markdown(comparisons: Sequence[Comparison], allow_mismatch: bool = False) -> str:
    """One section per comparison, one table per score; mismatches listed under the tables."""
    out: list[str] = []
    for c in comparisons:
        out.append(f"## A: {_md(c.a.label)}  vs  B: {_md(c.b.label)}\n")
        out.append(f"Benchmark {_md(c.a.benchmark)}; A = {_md(c.a.path)}, B = {_md(c.b.path)}.\n")
        for t in c.tables:
            if not t.rows:
                out.append(
                    f"### {_md(t.score)}\n\nNo question has this score in both runs "
                    f"({t.errored} errored, {t.unscored} unscored in either run).\n"
                )
                continue
            kind = "0/1" if t.rows[0].result.binary else "continuous"
            out.append(f"### {_md(t.score)} ({kind})\n")
            out.append(_HEADER)
            out.append("|" + "---|" * 13)
            for row in t.rows:
                r = row.result
                out.append(
                    f"| {_md(row.category)} | {r.n} | {r.clusters} | {_f(r.mean_a)} | "
                    f"{_f(r.mean_b)} | {r.difference:+.3f} | [{r.ci_low:+.3f}, {r.ci_high:+.3f}] | "
                    f"{_p(r.p_value)} | {_p(row.holm_p)} | {r.test} | {_f(r.mde)} | "
                    f"{r.a_better} | {r.b_better} |"
                )
            out.append(
                f"\nLeft out of the pair: {t.errored} errored, {t.unscored} unscored in either "
                "run (never counted as wrong).\n"
            )
        if not c.tables:
            out.append("No score is shared by both runs on any paired sample.\n")
        if c.not_shared:
            out.append(f"Scores in only one run (not compared): {', '.join(c.not_shared)}.\n")
        if c.mismatches:
            title = "Differences between the runs (compared anyway, --allow-mismatch)"
            if not allow_mismatch:
                title = "Differences between the runs"
            out.append(f"**{title}:**\n")
            out += [f"- {_md(str(m))}" for m in c.mismatches]
            out.append("")
    return "\n".join(out)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _result_record(c: Comparison, t: ScoreTable, row: TableRow) -> dict[str, Any]:
    record: dict[str, Any] = {
        "run_a": c.a.label,
        "run_b": c.b.label,
        "benchmark": c.a.benchmark,
        "score": t.score,
        "category": row.category,
    }
    record |= {
        k: (_finite(v) if isinstance(v, float) else v) for k, v in asdict(row.result).items()
    }
    record["holm_p"] = row.holm_p
    record["errored_excluded"] = t.errored
    record["unscored_excluded"] = t.unscored
    return record


def write_csv(comparisons: Sequence[Comparison], path: Path) -> None:
    """One line per comparison, score and category (overall first)."""
    records = [_result_record(c, t, r) for c in comparisons for t in c.tables for r in t.rows]
    _write_records(records, path)


def _write_records(records: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        if not records:
            return
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)


def write_json(comparisons: Sequence[Comparison], path: Path) -> None:
    """The runs, the mismatches and every table row (non-finite figures as null)."""
    data = [
        {
            "run_a": {"label": c.a.label, "path": c.a.path, "framework": c.a.framework},
            "run_b": {"label": c.b.label, "path": c.b.path, "framework": c.b.framework},
            "benchmark": c.a.benchmark,
            "mismatches": [asdict(m) for m in c.mismatches],
            "not_shared": list(c.not_shared),
            "scores": {
                t.score: {
                    "errored_excluded": t.errored,
                    "unscored_excluded": t.unscored,
                    "rows": [_result_record(c, t, r) for r in t.rows],
                }
                for t in c.tables
            },
        }
        for c in comparisons
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")


#: The columns of the --flips CSV (a header is written even when nothing flipped).
FLIP_COLUMNS = (
    "run_a",
    "run_b",
    "score",
    "id",
    "category",
    "cluster",
    "score_a",
    "score_b",
    "better",
    "gold",
    "reply_a",
    "reply_b",
)


def write_flips(comparisons: Sequence[Comparison], path: Path) -> int:
    """The flipped questions of every comparison as CSV; returns how many rows."""
    records = [r for c in comparisons for r in flipped_rows(c)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(FLIP_COLUMNS))
        writer.writeheader()
        writer.writerows(records)
    return len(records)


def plot_differences(comparisons: Sequence[Comparison], path: Path) -> Path:
    """One figure: per score a panel of B − A per category with its interval, zero marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = list(dict.fromkeys(t.score for c in comparisons for t in c.tables if t.rows))
    if not scores:
        raise ValueError("nothing to plot: no shared score")
    fig, axes = plt.subplots(len(scores), 1, figsize=(9, 3.2 * len(scores)), squeeze=False)
    for ax, score in zip(axes[:, 0], scores, strict=True):
        tables = [(c, t) for c in comparisons for t in c.tables if t.score == score and t.rows]
        groups = list(dict.fromkeys(r.category for _, t in tables for r in t.rows))
        width = 0.6 / max(1, len(tables))
        for i, (c, t) in enumerate(tables):
            offset = (i - (len(tables) - 1) / 2) * width
            rows = {r.category: r.result for r in t.rows}
            xs = [g + offset for g, name in enumerate(groups) if name in rows]
            res = [rows[name] for name in groups if name in rows]
            ys = [r.difference for r in res]
            err = [[r.difference - r.ci_low for r in res], [r.ci_high - r.difference for r in res]]
            ax.errorbar(xs, ys, yerr=err, fmt="o", capsize=4, label=f"B = {c.b.label}")
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, rotation=20, ha="right")
        ax.set_ylabel(f"{score}: B − A")
        ax.set_title(f"{score}: difference with its 95 % cluster-bootstrap interval")
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8, title=f"A = {comparisons[0].a.label}", title_fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Paired comparison of runs over the same questions: run A (the first) "
        "against each later run, per score and category, with cluster-bootstrap intervals, "
        "paired tests and the questions that flipped.",
    )
    parser.add_argument("runs", nargs="+", help="Inspect logs or lm-eval samples files/folders")
    parser.add_argument("--csv", type=Path, help="write every table row to this CSV")
    parser.add_argument("--json", type=Path, help="write the comparison to this JSON file")
    parser.add_argument("--flips", type=Path, help="write the flipped questions to this CSV")
    parser.add_argument("--png", type=Path, help="draw the differences per category here")
    parser.add_argument(
        "--resamples", type=int, default=10_000, help="bootstrap resamples (default 10000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    parser.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="compare runs whose samples, data, judge or settings differ (each difference "
        "is printed under its table)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command; also reached as `memevals-compare --paired RUN_A RUN_B ...`."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.resamples < 1:
        parser.error(f"--resamples must be at least 1, got {ns.resamples}")
    try:
        runs = load_runs(ns.runs)
    except RunError as exc:
        parser.error(str(exc))
    if len(runs) < 2:
        parser.error(f"need at least two runs to compare, found {len(runs)} in {ns.runs}")
    comparisons = [
        compare_runs(runs[0], other, resamples=ns.resamples, seed=ns.seed) for other in runs[1:]
    ]
    unfair = [c for c in comparisons if c.mismatches]
    if unfair and not ns.allow_mismatch:
        for c in unfair:
            print(
                f"{PROG}: refusing to compare {c.a.label} with {c.b.label}: the runs differ",
                file=sys.stderr,
            )
            for m in c.mismatches:
                print(f"  - {m}", file=sys.stderr)
        print(f"{PROG}: pass --allow-mismatch to compare them anyway", file=sys.stderr)
        return 1
    print(markdown(comparisons, ns.allow_mismatch))
    if ns.csv:
        write_csv(comparisons, ns.csv)
        print(f"CSV: {ns.csv}", file=sys.stderr)
    if ns.json:
        write_json(comparisons, ns.json)
        print(f"JSON: {ns.json}", file=sys.stderr)
    if ns.flips:
        count = write_flips(comparisons, ns.flips)
        print(f"flipped questions: {ns.flips} ({count} rows)", file=sys.stderr)
    if ns.png:
        plot_differences(comparisons, ns.png)
        print(f"chart: {ns.png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

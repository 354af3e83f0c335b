"""The rows of a table of runs: one per run, every figure computed from its per-sample scores.

What memevals-compare and memevals-report tabulate (the rules are those of memevals-compare,
docs/compare.md):

Each Inspect log becomes one row, and so does each lm-eval run (the `samples_<task>_*.jsonl`
files one `lm_eval` call wrote for one benchmark); runs are read by `memevals.results.runs`, the
reader `memevals-diff` uses too. Rows are grouped into one table per benchmark, so scores of
two benchmarks never share a column, and every row names the judge that produced its judge
scores, the protocol and the context its model saw. When two runs of one table share that
key, the task arguments that tell them apart are added to the context label rather than
letting them look like the same run.

What a table shows comes from the benchmark's record (`memevals.core.benchmark`): its declared
answer and judge scores get a column each (mean, naive and clustered standard error, 95 %
interval, the mean per category in the record's order, and the record's subgroups and macro
average); its retrieval and prompt-size scores one mean each; its memory scorer's figures the
memory columns. Every figure is computed here from the per-sample scores (the log's own metric
names are never read, so renaming a metric changes nothing), with memevals.core.statistics:
the same arithmetic as the tasks' Inspect metrics. Nothing is rescored.

A judge run with repeated judging (`-T judge_runs=N`) gets, beside its judge column, N
(`judge runs`), the share of samples whose N verdicts agree (`judge agreement`) and Fleiss'
kappa (`judge kappa`); the per-category agreement is in the CSV.

A run whose context came from a memory system under test (`-T memory=<name>`) gets the
system's columns: its name and version, k, the retrieval latency percentiles, the items kept
and cut, the context size, and the ingestion totals (each history counted once), all computed
here from the per-sample memory record (memevals.core.memory_harness); other runs leave them
blank, and a table without such a run has none of them. A run of the agent mode
(`-T context=agent`, where the model under test keeps its own memory) is named by its mode in
the context column (`agent(files)`, `agent(compaction, summary, window=6000)`) and gets the
agent columns (memevals.results.agent): its write passes' calls, tokens and seconds, each
history's pass counted once (a pass read from the disk cache cost this run nothing), what they
kept, and the answer passes' tool calls; a table without such a run has none of them.

The default Markdown fits MAX_WIDTH (120) columns: per benchmark a run key (`run 1`, ...), then
one table per score and one for the context, a figure per line and a run per column (split over
several tables when the runs do not fit); `--wide` gives the one wide table per benchmark. A
figure that cannot be estimated (a clustered error of one cluster, a mean of no scored sample)
is UNDEFINED in the tables and an empty cell in the CSV, never nan. An interval of fewer than
`statistics.MIN_CLUSTERS` clusters (6) is not stated: its cell says `too few clusters (n)`, a
note under the tables gives the rule, and the CSV leaves it empty; an interval never leaves its
score's range (memevals.core.statistics).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog

from memevals.core import statistics
from memevals.core.agreement import agreement_figures, repeated_agreement
from memevals.core.benchmark import Benchmark
from memevals.results.agent import agent_figures
from memevals.results.memory_figures import memory_figures
from memevals.results.runs import (
    NO_CATEGORY,
    Run,
    RunSample,
    context_label,
    effective,
    effective_options,
    is_compared,
    load_runs,
    memory_settings,
    read_inspect_log,
    score_order,
)

#: Declared score kinds shown as one mean column each (not per category).
AUX_KINDS = frozenset({"retrieval", "tokens"})


NO_JUDGE = "-"


#: Repeated-judging figures shown in the Markdown table (the rest, per category, go to the CSV).
REPEATED_SHOWN = ("runs", "agreement", "kappa")


@dataclass
class KindScores:
    """The numbers of one score (F1, judge, ...) in one run, all computed from its samples.

    `clustered` holds the figures of each group: key "" for all samples, else a category or
    subgroup (statistics.Summary: n, clusters, mean, naive and clustered stderr, 95 % interval).
    """

    overall: float | None = None
    stderr: float | None = None
    categories: dict[str, float] = field(default_factory=dict)
    extras: dict[str, float] = field(default_factory=dict)
    clustered: dict[str, statistics.Summary] = field(default_factory=dict)
    #: repeated judging: runs, compared, incomplete, agreement, kappa, <category>_agreement, ...
    repeated: dict[str, float] = field(default_factory=dict)


@dataclass
class Row:
    """One run: who answered, who judged, under which protocol, what context, and its scores."""

    benchmark: str
    task: str
    model: str
    judge: str
    context: str
    samples: int
    status: str
    log: str
    kinds: dict[str, KindScores]
    aux: dict[str, float]
    usage: dict[str, int]
    task_args: dict[str, Any]
    framework: str = "inspect"
    #: per-category ceilings under the original gold (share of questions whose gold an audit
    #: does not mark wrong), as the task logged them; empty when it logged none
    ceilings: dict[str, float] = field(default_factory=dict)
    #: the memory system under test and its measurements (`memory_figures`); empty without one
    memory: dict[str, float | int | str] = field(default_factory=dict)
    protocol: str = ""
    record: Benchmark | None = None
    #: score name -> its declared kind (None: the run has no record)
    score_kinds: dict[str, str | None] = field(default_factory=dict)
    #: `context=agent`: its mode and write-pass figures (`agent_figures`); empty otherwise
    agent: dict[str, float | int | str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """Model, judge, protocol, context and (when not the benchmark's) task: what tells two
        rows apart, as the charts' legends and the notes under the tables name a run."""
        parts = [
            self.model,
            f"judge {self.judge}" if self.judge != NO_JUDGE else "",
            f"protocol {self.protocol}" if self.protocol else "",
            self.context,
        ]
        if self.task != self.benchmark:
            parts.append(self.task)
        return " | ".join(p for p in parts if p)


#: Per-sample values of one score: (sample id, groups, cluster, value). The groups are the
#: sample's category and its subgroups.
SampleValue = tuple[str, tuple[str, ...], str, float]


def _groups(sample: RunSample) -> tuple[str, ...]:
    category = () if sample.category == NO_CATEGORY else (sample.category,)
    return (*category, *sample.groups)


def _values(run: Run, name: str) -> list[SampleValue]:
    """The finite values of one score (epochs averaged), one per sample that has one."""
    out: list[SampleValue] = []
    for s in run.samples.values():
        value = s.scores.get(name)
        if value is not None and math.isfinite(value) and not s.errored:
            out.append((s.id, _groups(s), s.cluster, value))
    return out


def _reduced_values(run: Run, name: str) -> list[SampleValue]:
    out: list[SampleValue] = []
    for sid, value in sorted(run.reduced[name].items()):
        s = run.samples.get(sid)
        if s is not None:
            out.append((sid, _groups(s), s.cluster, value))
    return out


def _is_proportion(kind: str | None, name: str, values: Sequence[SampleValue]) -> bool:
    """A judge's accuracy is a proportion: its interval is the Wilson interval."""
    judged = kind == "judge" or (kind is None and name.split("@", 1)[0] == "judge")
    return judged and all(0.0 <= v[3] <= 1.0 for v in values)


def _kind_scores(run: Run, name: str, values: Sequence[SampleValue]) -> KindScores:
    """Every figure of one score from its sample values (see the module doc)."""
    ks = KindScores()
    subgroups = {g for s in run.samples.values() for g in s.groups}
    proportion = _is_proportion(run.kinds.get(name.split("@", 1)[0]), name, values)
    groups: dict[str, list[SampleValue]] = {"": list(values)}
    for v in values:
        for group in v[1]:
            groups.setdefault(group, []).append(v)
    for group, members in groups.items():
        if members:  # a score every sample left unscored has no figure, only its count
            ks.clustered[group] = statistics.summarize(
                [m[3] for m in members], [m[2] for m in members], proportion=proportion
            )
    if "" in ks.clustered:
        ks.overall, ks.stderr = ks.clustered[""].mean, ks.clustered[""].stderr
    for group, summary in ks.clustered.items():
        if group in subgroups:
            ks.extras[group] = summary.mean
        elif group:
            ks.categories[group] = summary.mean
    if run.record is not None and run.record.macro_average and ks.categories:
        means = list(ks.categories.values())
        ks.extras[run.record.macro_average] = sum(means) / len(means)
    # a flag its scorer logs (unscored, unclear) is counted beside the score
    for s in run.samples.values():
        for flag, n in s.flags.get(name, {}).items():
            ks.extras[flag] = ks.extras.get(flag, 0.0) + n
    ks.repeated = _repeated(run.repeated.get(name, ()))
    return ks


def _repeated(rows: Sequence[tuple[str, tuple[str | None, ...]]]) -> dict[str, float]:
    """The repeated-judging figures of one score (its N labels per sample-epoch), overall and
    per category: runs, compared, incomplete, agreement, kappa."""
    if not rows:
        return {}

    overall = repeated_agreement([list(labels) for _, labels in rows])
    out: dict[str, float] = {
        "runs": float(max(len(labels) for _, labels in rows)),
        "compared": float(overall.items),
        "incomplete": float(overall.incomplete),
        **agreement_figures("", [labels for _, labels in rows]),
    }
    for category in sorted({c for c, _ in rows if c != NO_CATEGORY}):
        out |= agreement_figures(f"{category}_", [labels for c, labels in rows if c == category])
    return out


def _judge_label(run: Run, kinds: Mapping[str, KindScores]) -> str:
    """Who judged the run's judged scores: its declared judge scores and any score whose
    scorer recorded a grader model (a FactScore grader beside ROUGE); NO_JUDGE for none."""
    judged = [
        n
        for n in kinds
        if run.kinds.get(n.split("@", 1)[0]) == "judge"
        or (run.record is None and n.split("@", 1)[0] == "judge")
        or run.judges.get(n.split("@", 1)[0])
    ]
    if not judged:
        return NO_JUDGE
    graders = sorted({g for n in judged for g in run.judges.get(n.split("@", 1)[0], ())})
    if run.grader_role is not None:
        first = [run.grader_role]
    elif run.framework == "inspect":  # no grader role: the model under test judged itself
        first = [f"self ({run.model})"]
    else:
        return ", ".join(graders) or "?"
    # a judge appended later (inspect score --action append) names its own grader
    named = run.grader_role.split(", ") if run.grader_role else [run.model]
    # a scorer may add words to the name it records ("<model> (the model under test)")
    others = [g for g in graders if not any(g == n or g.startswith(f"{n} (") for n in named)]
    return ", ".join([*first, *others])


def row_from_run(run: Run) -> Row | None:
    """A table row of one run; None when an Inspect run has no results (the caller says so).

    Args:
        run: the run (`memevals.results.runs`).

    Returns:
        The row, or None.
    """
    if not run.has_results:
        return None
    names = score_order(run.record, {n for s in run.samples.values() for n in s.scores}, run.kinds)
    kinds: dict[str, KindScores] = {}
    aux: dict[str, float] = {}
    for name in names:
        kind = run.kinds.get(name)
        values = _values(run, name)
        flagged = any(name in s.flags for s in run.samples.values())
        if not values and not (flagged and is_compared(kind, run.record)):
            continue
        if kind in AUX_KINDS:
            aux[name] = sum(v[3] for v in values) / len(values)
        elif is_compared(kind, run.record):
            kinds[name] = _kind_scores(run, name, values)
    for name in score_order(run.record, run.reduced, run.kinds):
        kinds[name] = _kind_scores(run, name, _reduced_values(run, name))
    ceilings = run.task_metadata.get("gold_ceilings") or {}
    categories = run.record.categories if run.record else ()
    return Row(
        benchmark=run.benchmark,
        task=run.task if run.framework == "inspect" else f"lm-eval: {run.task}",
        model=run.model,
        judge=_judge_label(run, kinds),
        context=context_label(run),
        samples=run.completed if run.completed is not None else len(run.samples),
        status=run.status,
        log=run.path,
        kinds=kinds,
        aux=aux,
        usage=dict(run.usage),
        task_args=effective_options(run),
        framework=run.framework,
        ceilings={
            str(k): float(v)
            for k, v in ceilings.items()
            if k in categories or (not categories and k != "overall")
        },
        memory=memory_figures(memory_settings(run), run.epoch_metadata),
        protocol=run.protocol,
        record=run.record,
        score_kinds=dict(run.kinds),
        agent=agent_figures(run),
    )


def row_from_log(log: EvalLog, path: str) -> Row | None:
    """A table row from an Inspect log already read.

    Args:
        log: the log.
        path: where it came from.

    Returns:
        The row, or None when the log has no results.
    """
    return row_from_run(read_inspect_log(log, path))


def load_rows(paths: Iterable[str], left_out: Callable[[Run], None] | None = None) -> list[Row]:
    """Rows for every Inspect log and every lm-eval run under `paths` (files or folders).

    Args:
        paths: log files, lm-eval samples files, or folders of either.
        left_out: called with each run that has no results (it gets no row).

    Returns:
        The rows, sorted by benchmark, task, model, judge and context.
    """
    rows: list[Row] = []
    for run in load_runs(paths):
        row = row_from_run(run)
        if row is not None:
            rows.append(row)
        elif left_out is not None:
            left_out(run)
    _disambiguate(rows)
    rows.sort(key=lambda r: (r.benchmark, r.task, r.model, r.judge, r.context, r.protocol))
    return rows


def disambiguate(rows: list[Row]) -> None:
    """Tell apart rows that share benchmark, model, judge, protocol, context and task (the
    rule of load_rows; memevals-report applies it to the runs it has read).

    Args:
        rows: the rows, relabelled in place.
    """
    _disambiguate(rows)


def _disambiguate(rows: list[Row]) -> None:
    """Rows that share (benchmark, model, judge, protocol, context, task) get the task
    arguments that differ between them appended to their context label (an option not given
    is its default: `top_k=5` and no `top_k` do not differ where 5 is the default)."""
    groups: dict[tuple[str, ...], list[Row]] = {}
    for r in rows:
        key = (r.benchmark, r.model, r.judge, r.protocol, r.context, r.task)
        groups.setdefault(key, []).append(r)
    for same in groups.values():
        if len(same) < 2:
            continue
        keys = sorted({k for r in same for k in r.task_args})

        def value(r: Row, key: str) -> Any:
            return r.task_args.get(key, effective(r.record, key, None))

        differing = [k for k in keys if len({repr(value(r, k)) for r in same}) > 1]
        for i, r in enumerate(same, 1):
            if differing:
                r.context += " [" + ", ".join(f"{k}={value(r, k)}" for k in differing) + "]"
            else:
                r.context += f" [run {i}: {Path(r.log).name}]"


def above_ceiling(row: Row) -> list[str]:
    """Per-category scores of a run on the original gold that exceed the audited-gold ceiling:
    no honest system reaches them, so such a score was earned from wrong gold (or a lenient
    judge). Runs on the audited gold have no ceiling below 100 %."""
    if str(row.task_args.get("gold", "original")) != "original":
        return []
    out = []
    for kind, ks in row.kinds.items():
        for category, value in ks.categories.items():
            ceiling = row.ceilings.get(category)
            if ceiling is not None and value > ceiling:
                out.append(f"{kind} {category} {value:.4f} > ceiling {ceiling:.4f}")
    return out

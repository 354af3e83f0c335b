"""Paired comparison of runs over the same questions: is run B really better than run A?

    memevals-diff RUN_A RUN_B [RUN_C ...] [--csv OUT] [--json OUT] [--flips OUT] [--png OUT]
    memevals-compare --paired RUN_A RUN_B ...          # the same command

A run is an Inspect log (`.eval` / `.json`; a folder stands for every log in it, in time order)
or an lm-eval `--log_samples` run (a `samples_<task>_<date>.jsonl` file, or a folder: every
run found under it, one per call and benchmark); `memevals.results.runs` reads both, by the same
rules `memevals-compare` uses. The first run is the baseline; each later run is compared with
it.

Samples are paired by id. Several epochs of one question are averaged first. For every score
the two runs share (the benchmark record's answer, judge and retrieval scores), overall and per
category, the table gives both means, the difference B - A with its cluster-bootstrap interval,
a paired test (exact McNemar for independent 0/1 scores, a cluster sign-flip test otherwise),
the Holm-adjusted p across the categories, the minimum detectable difference and the questions
that flipped. The statistics are memevals.core.paired_statistics; a sample's cluster is the
one rule of `memevals.results.runs`.

Runs of different benchmarks share no question and are never compared, with or without
`--allow-mismatch` (one line naming both, exit status 1). A comparison is only fair when both
runs asked the same questions of the same data and were judged by the same judge with the same
criteria. Two runs may differ in exactly one declared
factor: the model, the context settings, the memory system under test, or (with
`--allow-mismatch`) the protocol. Such a comparison is that factor's comparison, and its runs
are named by the factor's values (`context=none` vs `context=rag`). Any other difference, or a
second factor, is named and the command stops (exit status 1) unless `--allow-mismatch` is
given; then each difference is printed under the table. Runs of different protocols ask
different prompts and are judged by different judges, so their difference measures the
protocol: the command compares them only with `--allow-mismatch`, and says so. A sample that
errored or was left unscored in either run is left out of that score's pair and counted,
never treated as wrong. A figure that cannot be estimated is UNDEFINED in the tables, empty in
the CSV and null in the JSON, never nan or inf. With fewer clusters than
`memevals.core.statistics.MIN_CLUSTERS` (6) the interval and the minimum detectable difference
are not stated: the table says `too few clusters (n)` with the rule under it, the CSV and JSON
mark the row `too_few_clusters` (memevals.core.paired_statistics says why).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memevals.core.paired_statistics import PairedResult, holm_adjust, paired_comparison
from memevals.results.axes import ordered_categories
from memevals.results.runs import (
    Run,
    RunSample,
    agent_mode,
    agent_settings,
    memory_settings,
    record_of,
    system_label,
)

OVERALL = "overall"


#: The declared factors: what one comparison may vary, one at a time.
MODEL, CONTEXT, MEMORY_SYSTEM, PROTOCOL = "model", "context", "memory system", "protocol"


FACTORS = (MODEL, CONTEXT, MEMORY_SYSTEM, PROTOCOL)


#: Factors compared only with --allow-mismatch (the protocol changes prompts and judge).
EXPLICIT_FACTORS = frozenset({PROTOCOL})


#: Context settings that name the memory system under test (its own factor) or only say
#: whether its ingestions were cached (never a difference).
SUBJECT_SETTINGS = frozenset({"memory", "memory_args", "memory_cache", "memory_version"})


@dataclass(frozen=True)
class Mismatch:
    """One way two runs differ: part of a declared factor, or a reason the comparison is
    unfair."""

    setting: str
    detail: str
    #: the declared factor this difference belongs to (None: no factor, always unfair)
    factor: str | None = None

    def __str__(self) -> str:
        return f"{self.setting}: {self.detail}"


@dataclass(frozen=True)
class Factor:
    """The declared factor two runs differ in, and each run's name by its value."""

    name: str
    a: str
    b: str


def _few(ids: Iterable[str], limit: int = 5) -> str:
    items = sorted(ids)
    shown = ", ".join(items[:limit])
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _dict_diff(
    group: str, a: Mapping[str, Any], b: Mapping[str, Any], factor: str | None = None
) -> list[Mismatch]:
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if va != vb:
            out.append(Mismatch(group, f"{key}: A={va!r}, B={vb!r}", factor))
    return out


def _context(run: Run, other: Run) -> dict[str, Any]:
    """The compared context settings: what the task logged it used when both runs logged it,
    else the options given; the memory system's own settings left out."""
    both = run.used_context is not None and other.used_context is not None
    source = run.used_context if both and run.used_context is not None else None
    settings = source if source is not None else run.settings.get("context settings", {})
    return {k: v for k, v in settings.items() if k not in SUBJECT_SETTINGS}


def _system(run: Run) -> str | None:
    settings = memory_settings(run)
    return system_label(settings) if settings else None


def _samples_and_judges(a: Run, b: Run, scores: Sequence[str]) -> list[Mismatch]:
    """Differences of benchmark, samples, data and judge: never a factor."""
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
    return out


def find_mismatches(a: Run, b: Run, scores: Sequence[str]) -> list[Mismatch]:
    """Every difference between runs A and B: of their samples, data and judge (never fair),
    of a declared factor (`Mismatch.factor`), and of their other task options (never fair).

    Args:
        a: run A.
        b: run B.
        scores: the scores compared (their judges must be the same).

    Returns:
        The differences, in that order.
    """
    out = _samples_and_judges(a, b, scores)
    if a.model != b.model:
        out.append(Mismatch("model", f"A={a.model!r}, B={b.model!r}", MODEL))
    out += _dict_diff("context settings", _context(a, b), _context(b, a), CONTEXT)
    system_a, system_b = _system(a), _system(b)
    if system_a != system_b:
        if system_a is not None and system_b is not None:
            out.append(Mismatch("memory system", f"A={system_a!r}, B={system_b!r}", MEMORY_SYSTEM))
        else:  # one run's context came from a memory system, the other's did not
            detail = f"memory: A={system_a!r}, B={system_b!r}"
            out.append(Mismatch("context settings", detail, CONTEXT))
    if a.protocol != b.protocol:
        out.append(Mismatch("protocol", f"A={a.protocol!r}, B={b.protocol!r}", PROTOCOL))
    out += _dict_diff(
        "task options", a.settings.get("task options", {}), b.settings.get("task options", {})
    )
    return out


def _context_name(run: Run, other: Run, keys: Sequence[str]) -> str:
    """A run's name by its context settings: the mode when the modes differ (an agent run's
    with its agent mode, `context=agent(files)`), else the settings that differ."""
    system = _system(run)
    mode = str(run.setting("context") or "full")
    agent, other_agent = agent_settings(run), agent_settings(other)
    if agent and ("context" in keys or agent_mode(agent) != agent_mode(other_agent)):
        return f"context={mode}({agent_mode(agent)})"
    if "context" in keys or "memory" in keys:
        return f"context=memory({system})" if system else f"context={mode}"
    settings = _context(run, other)
    return ", ".join(f"{k}={settings.get(k)}" for k in keys)


def factors_of(a: Run, b: Run, differences: Sequence[Mismatch]) -> list[Factor]:
    """The declared factors the runs differ in, each with the runs' names by its value.

    Args:
        a: run A.
        b: run B.
        differences: `find_mismatches(a, b, ...)`.

    Returns:
        One Factor per differing factor, in FACTORS order.
    """
    out: list[Factor] = []
    for name in FACTORS:
        mine = [m for m in differences if m.factor == name]
        if not mine:
            continue
        if name == MODEL:
            out.append(Factor(name, f"model={a.model}", f"model={b.model}"))
        elif name == CONTEXT:
            keys = [m.detail.split(":", 1)[0] for m in mine]
            out.append(Factor(name, _context_name(a, b, keys), _context_name(b, a, keys)))
        elif name == MEMORY_SYSTEM:
            out.append(Factor(name, f"memory={_system(a)}", f"memory={_system(b)}"))
        else:
            out.append(Factor(name, f"protocol={a.protocol}", f"protocol={b.protocol}"))
    return out


def _blocking(differences: Sequence[Mismatch], factors: Sequence[Factor]) -> tuple[Mismatch, ...]:
    """The differences that make a comparison unfair: any outside a declared factor, every
    factor's when more than one differs, and an explicit factor's (the protocol)."""
    several = len(factors) > 1
    return tuple(
        m for m in differences if m.factor is None or several or m.factor in EXPLICIT_FACTORS
    )


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
    #: the differences that make the comparison unfair (refused without --allow-mismatch)
    mismatches: tuple[Mismatch, ...]
    not_shared: tuple[str, ...]  # scores that only one run has
    #: every difference, the declared factors' included
    differences: tuple[Mismatch, ...] = ()
    #: the declared factors the runs differ in
    factors: tuple[Factor, ...] = ()

    @property
    def factor(self) -> Factor | None:
        """The one declared factor this comparison varies (None: none, or several)."""
        return self.factors[0] if len(self.factors) == 1 else None

    @property
    def name_a(self) -> str:
        """Run A's name: by the factors' values, else its label."""
        return ", ".join(f.a for f in self.factors) or self.a.label

    @property
    def name_b(self) -> str:
        """Run B's name: by the factors' values, else its label."""
        return ", ".join(f.b for f in self.factors) or self.b.label


def _score_table(
    a: Run, b: Run, score: str, ids: Sequence[str], resamples: int, seed: int
) -> ScoreTable:
    record = a.record or record_of(a.benchmark, a.task)
    errored = unscored = 0
    pairs: list[tuple[RunSample, RunSample]] = []
    for sid in ids:
        sa, sb = a.samples[sid], b.samples[sid]
        if sa.errored or sb.errored:
            errored += 1
            continue
        if score not in sa.scores and score not in sb.scores:
            continue  # a score neither run gives this sample (one its scorer leaves out)
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

    categories = ordered_categories(record, {sa.category for sa, _ in pairs})
    per_category = [(c, compare([p for p in pairs if p[0].category == c])) for c in categories]
    adjusted = holm_adjust([r.p_value for _, r in per_category]) if len(categories) > 1 else None
    rows = [TableRow(OVERALL, compare(pairs), None)]
    if len(categories) > 1:
        assert adjusted is not None
        rows += [TableRow(c, r, p) for (c, r), p in zip(per_category, adjusted, strict=True)]
    return ScoreTable(score, tuple(rows), errored, unscored, tuple(pairs))


def compare_runs(a: Run, b: Run, *, resamples: int = 10_000, seed: int = 0) -> Comparison:
    """Pair B with A by sample id and compare every score they share.

    Args:
        a: the baseline run.
        b: the run compared with it.
        resamples: cluster-bootstrap resamples.
        seed: seed of the resampling.

    Returns:
        The comparison, with every difference between the runs and the factor it varies.

    Raises:
        BenchmarkMismatch: the runs are of different benchmarks.
    """
    check_same_benchmark(a, b)
    names_a, names_b = a.score_names, b.score_names
    shared = [n for n in names_a if n in names_b]
    not_shared = tuple(sorted(set(names_a) ^ set(names_b)))
    ids = sorted(set(a.samples) & set(b.samples))
    tables = [_score_table(a, b, s, ids, resamples, seed) for s in shared]
    differences = find_mismatches(a, b, shared)
    factors = factors_of(a, b, differences)
    return Comparison(
        a,
        b,
        tuple(tables),
        _blocking(differences, factors),
        not_shared,
        tuple(differences),
        tuple(factors),
    )


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
                    "run_a": comparison.name_a,
                    "run_b": comparison.name_b,
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


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def result_record(c: Comparison, t: ScoreTable, row: TableRow) -> dict[str, Any]:
    """One table row of a comparison as a record (the CSV's and the JSON's): the runs' names,
    benchmark, factor, protocols, the paired result's figures (None where not finite), Holm p and
    the samples left out.

    Args:
        c: the comparison.
        t: the score table.
        row: the row (overall or a category).

    Returns:
        The record.
    """
    record: dict[str, Any] = {
        "run_a": c.name_a,
        "run_b": c.name_b,
        "benchmark": c.a.benchmark,
        "factor": c.factor.name if c.factor else None,
        "protocol_a": c.a.protocol,
        "protocol_b": c.b.protocol,
        "score": t.score,
        "category": row.category,
    }
    record |= {
        k: (_finite(v) if isinstance(v, float) else v) for k, v in asdict(row.result).items()
    }
    record["too_few_clusters"] = row.result.too_few_clusters
    record["holm_p"] = row.holm_p
    record["errored_excluded"] = t.errored
    record["unscored_excluded"] = t.unscored
    return record


def comparison_records(comparisons: Sequence[Comparison]) -> list[dict[str, Any]]:
    """The numbers behind the CSV: one record per comparison, score and category (overall
    first): the runs' names, benchmark, factor, protocols, n, clusters, both means, the
    difference B - A, its interval, p, Holm p, test, MDE, flips and the samples left out. An
    undefined figure is None (never NaN).

    Args:
        comparisons: `compare_runs` results.

    Returns:
        The records, in table order.
    """
    return [result_record(c, t, r) for c in comparisons for t in c.tables for r in t.rows]


class BenchmarkMismatch(ValueError):
    """Runs of different benchmarks: they share no question, so nothing can be compared."""


def check_same_benchmark(a: Run, b: Run) -> None:
    """Refuse runs of different benchmarks (with or without --allow-mismatch).

    Args:
        a: run A.
        b: run B.

    Raises:
        BenchmarkMismatch: naming both benchmarks and both runs.
    """
    if a.benchmark != b.benchmark:
        raise BenchmarkMismatch(
            f"runs of different benchmarks are never compared: A = {a.path} is "
            f"{a.benchmark}, B = {b.path} is {b.benchmark} (compare runs of one benchmark; "
            "memevals-compare tabulates several benchmarks side by side)"
        )

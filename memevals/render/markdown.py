"""The Markdown tables of runs (memevals-compare): by default a run key and a table per score,
no line wider than MAX_WIDTH; `--wide` one table per benchmark."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

from memevals.core.benchmark import Benchmark
from memevals.results.agent import AGENT_COLUMNS
from memevals.results.columns import (
    MEMORY_COLUMNS,
    cell_value,
    is_wilson,
    ordered_repeated,
    score_layout,
    table_columns,
)
from memevals.results.formatting import (
    UNDEFINED,
    format_cell,
    is_undefined,
    score_title,
    shown_number,
    too_few_note,
    too_few_text,
)
from memevals.results.rows import NO_JUDGE, REPEATED_SHOWN, KindScores, Row, above_ceiling

#: The widest line of the default Markdown (a terminal's width); --wide has no limit.
MAX_WIDTH = 120


def _interval_text(row: Row, kind: str, group: str = "") -> str:
    """`[lower, upper]`; TOO_FEW when the clusters are too few for one, UNDEFINED when neither
    bound can be estimated otherwise, empty without a mean."""
    prefix = f"{kind}:{group}:" if group else f"{kind}:"
    summary = row.kinds[kind].clustered.get(group) if kind in row.kinds else None
    if summary is None:
        return ""
    if summary.too_few_clusters:
        return too_few_text(summary.clusters)
    lower = shown_number(cell_value(row, f"{prefix}ci_lower"))
    upper = shown_number(cell_value(row, f"{prefix}ci_upper"))
    return f"[{lower}, {upper}]" if lower and upper else UNDEFINED


def _any_too_few(sub: Sequence[Row]) -> bool:
    """Whether a shown interval (a score's overall one) is left out for want of clusters."""
    overall = [ks.clustered.get("") for r in sub for ks in r.kinds.values()]
    return any(s is not None and s.too_few_clusters for s in overall)


def _markdown_cell(row: Row, key: str) -> str:
    """The cell's text; a mean gets its clustered standard error (`0.512 ± 0.031`) when it can be
    estimated, the interval column shows `[lower, upper]`; a memory latency is shown in
    milliseconds; an undefined figure is UNDEFINED."""
    value = cell_value(row, key)
    if key.startswith("aux:") and row.score_kinds.get(key[4:]) == "tokens":
        return format_cell(value, f"tokens:{key}")
    if key.startswith("memory:latency_") and isinstance(value, float):
        return UNDEFINED if is_undefined(value) else f"{1000 * value:.3f}"
    text = format_cell(value, key)
    kind, _, rest = key.partition(":")
    if rest == "ci_lower":
        return _interval_text(row, kind)
    ks = row.kinds.get(kind)
    name = rest.removeprefix("extra:")
    if text and ks is not None and name and (rest in ks.categories or name in ks.clustered):
        se = shown_number(cell_value(row, f"{kind}:{name}:stderr_clustered"))
        if se:
            text += f" ± {se}"
    return text


def _wide_table(sub: Sequence[Row]) -> list[str]:
    """The one wide table of a benchmark: a row per run, a column per figure (--wide)."""
    cols = [c for c in table_columns(sub) if c.key != "benchmark" and c.markdown]
    out = ["| " + " | ".join(c.title for c in cols) + " |"]
    out.append("|" + "|".join("---" for _ in cols) + "|")
    for r in sub:
        cells: list[str] = []
        for c in cols:
            text = _markdown_cell(r, c.key)
            if c.key == "samples" and r.status != "success":
                text += f" ({r.status})"
            cells.append(text)
        out.append("| " + " | ".join(cells) + " |")
    return out


def _aligned(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table with its columns padded to one width (readable as plain text)."""
    widths = [max(len(row[i]) for row in (header, *body)) for i in range(len(header))]
    widths = [max(w, 3) for w in widths]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, body)]


def _run_key(sub: Sequence[Row], width: int) -> list[str]:
    """Which run is which: a table of the runs' labels, or a numbered list when the table would
    be wider than `width`."""
    memory = any(r.memory.get("system") for r in sub)
    titles = ["run", "model", "judge model", "protocol", "context", "task", "n"]
    titles += ["memory system"] if memory else []
    body = []
    for i, r in enumerate(sub, 1):
        n = str(r.samples) + ("" if r.status == "success" else f" ({r.status})")
        cells = [str(i), r.model, r.judge, r.protocol, r.context, r.task, n]
        cells += [str(r.memory.get("system", ""))] if memory else []
        body.append([c.replace("|", "\\|") for c in cells])
    table = _aligned(titles, body)
    if max(len(line) for line in table) <= width:
        return table
    out: list[str] = []
    for cells in body:
        text = "; ".join(f"{t} {c}" for t, c in zip(titles[1:], cells[1:], strict=True) if c)
        out += textwrap.wrap(f"{cells[0]}. {text}", width, subsequent_indent="   ")
    return out


def _chunks(label: Sequence[str], columns: Sequence[Sequence[str]], width: int) -> list[list[int]]:
    """The run columns of a transposed table, packed into tables no wider than `width`."""
    label_w = max(3, *(len(c) for c in label))
    groups: list[list[int]] = [[]]
    used = label_w + 4
    for i, col in enumerate(columns):
        w = max(3, *(len(c) for c in col)) + 3
        if groups[-1] and used + w > width:
            groups.append([])
            used = label_w + 4
        groups[-1].append(i)
        used += w
    return groups


def _transposed(
    title: str, figures: Sequence[tuple[str, Sequence[str]]], runs: Sequence[int], width: int
) -> list[str]:
    """One figure per line, one run per column (`run 1`, `run 2`, ...); split into several
    tables when the runs do not fit in `width`. `figures` holds (name, one cell per run)."""
    shown = [(name, cells) for name, cells in figures if any(cells)]
    if not shown:
        return []
    label = [title, *(name for name, _ in shown)]
    columns = [[f"run {n}", *(cells[i] for _, cells in shown)] for i, n in enumerate(runs)]
    out: list[str] = []
    for group in _chunks(label, columns, width):
        if out:
            out.append("")
        header = [title, *(columns[i][0] for i in group)]
        body = [[name, *(cells[i] for i in group)] for name, cells in shown]
        out += _aligned(header, body)
    return out


def _score_figures(sub: Sequence[Row], kind: str) -> list[tuple[str, list[str]]]:
    """The lines of one score's table: scored samples, mean ± clustered error, the interval,
    each category, the repeated-judging figures, then the subgroups, macro average and flags."""
    _, cats, extras = next(layout for layout in score_layout(sub) if layout[0] == kind)
    interval = "95% Wilson" if is_wilson(sub, kind) else "95% CI"

    def per_run(text: Callable[[Row, KindScores], str]) -> list[str]:
        return [text(r, r.kinds[kind]) if kind in r.kinds else "" for r in sub]

    def cells(key: str, undefined: str = "") -> list[str]:
        """The cells of one key; `undefined` where a run with this score has no figure."""
        return per_run(lambda r, ks: _markdown_cell(r, key) or undefined)

    def scored(r: Row, ks: KindScores) -> str:
        return str(ks.clustered[""].n) if "" in ks.clustered else "0"

    def mean(r: Row, ks: KindScores) -> str:
        summary = ks.clustered.get("")
        if summary is None or is_undefined(summary.mean):
            return UNDEFINED
        se = summary.stderr_clustered
        return f"{summary.mean:.3f}" + ("" if is_undefined(se) else f" ± {se:.3f}")

    figures = [("scored", per_run(scored)), ("mean ± se", per_run(mean))]
    figures.append((interval, per_run(lambda r, ks: _interval_text(r, kind) or UNDEFINED)))
    repeated = ordered_repeated(r.kinds[kind].repeated for r in sub if kind in r.kinds)
    for name in (n for n in repeated if n in REPEATED_SHOWN):
        figures.append((f"judge {name}", cells(f"{kind}:repeated:{name}")))
    figures += [(c, cells(f"{kind}:{c}", UNDEFINED)) for c in cats]
    figures += [(e, cells(f"{kind}:extra:{e}")) for e in extras]
    return figures


def _context_figures(sub: Sequence[Row]) -> list[tuple[str, list[str]]]:
    """The lines of the context table: the prompt-size and retrieval means, then the memory
    system's figures (its name is in the run key), then the agent mode's (its mode is in the
    context column)."""
    figures = [
        (name, [_markdown_cell(r, f"aux:{name}") for r in sub])
        for name in sorted({a for r in sub for a in r.aux})
    ]
    if any(r.memory for r in sub):
        figures += [
            (title, [_markdown_cell(r, f"memory:{name}") for r in sub])
            for name, title in MEMORY_COLUMNS
            if name != "system"
        ]
    if any(r.agent for r in sub):
        figures += [
            (title, [_markdown_cell(r, f"agent:{name}") for r in sub])
            for name, title in AGENT_COLUMNS
            if name != "mode"
        ]
    return figures


def _compact_tables(sub: Sequence[Row], width: int) -> list[str]:
    """The default view of a benchmark: the run key, then one table per score and one for the
    context, each a figure per line and a run per column."""
    out = _run_key(sub, width)
    runs = list(range(1, len(sub) + 1))
    for kind, _, _ in score_layout(sub):
        out += ["", f"#### {score_title(kind)}", ""]
        out += _transposed(score_title(kind), _score_figures(sub, kind), runs, width)
    context = _transposed("context", _context_figures(sub), runs, width)
    if context:
        out += ["", "#### context", "", *context]
    return out


def _wrapped(text: str, width: int | None) -> list[str]:
    """A note under a table, as one paragraph wrapped to `width` (None: one line)."""
    return [text] if width is None else textwrap.wrap(text, width, break_on_hyphens=False)


def markdown_tables(rows: Sequence[Row], *, wide: bool = False, width: int = MAX_WIDTH) -> str:
    """The Markdown of every benchmark: by default a run key and one table per score (and one
    for the context), a figure per line and a run per column, no line wider than `width`; with
    `wide`, one table per benchmark with a row per run and a column per figure.

    Means carry their clustered standard error (`0.512 ± 0.031`) when it can be estimated; an
    undefined figure is UNDEFINED; per-category intervals and naive errors are in the CSV (and
    the naive error in the wide table).

    Args:
        rows: the rows (`load_rows`).
        wide: one wide table per benchmark instead.
        width: the widest line of the default view.

    Returns:
        The Markdown text.
    """
    limit = None if wide else width
    out: list[str] = []
    for benchmark in sorted({r.benchmark for r in rows}):
        sub = [r for r in rows if r.benchmark == benchmark]
        out.append(f"### {benchmark}\n")
        out += _wide_table(sub) if wide else _compact_tables(sub, width)
        for i, r in enumerate(sub, 1):
            flagged = above_ceiling(r)
            if flagged:
                name = r.label if wide else f"run {i}"
                out.append("")
                out += _wrapped(
                    f"Above the audited-gold ceiling ({name}): {'; '.join(flagged)}. "
                    "The original gold is wrong on these shares of questions: see "
                    f"{_readme(r.record)}#audited-gold.",
                    limit,
                )
        if _any_too_few(sub):
            out += ["", *_wrapped(too_few_note(), limit)]
        judges = sorted({r.judge for r in sub if r.judge != NO_JUDGE})
        if len(judges) > 1:
            out.append("")
            out += _wrapped(
                f"Judge scores come from {len(judges)} different judges "
                f"({', '.join(judges)}): compare judge scores only between runs with the same "
                "judge.",
                limit,
            )
        out.append("")
    return "\n".join(out)


def _readme(record: Benchmark | None) -> str:
    """The benchmark's README, relative to the checkout when it lies in one."""
    if record is None:
        return "the benchmark's README.md"
    readme = record.folder / "README.md"
    root = Path(__file__).resolve().parents[2]
    return str(readme.relative_to(root)) if readme.is_relative_to(root) else str(readme)

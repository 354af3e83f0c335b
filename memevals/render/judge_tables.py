"""The text the judge commands print: the post-hoc judge's aggregate table (memevals-judge), and
two judges' agreement by category as a table or JSON (memevals-judge-agreement)."""

from __future__ import annotations

import json
from dataclasses import asdict

from memevals.results.judge_labels import AgreementReport
from memevals.results.posthoc_judging import JudgeRun

__all__ = ["agreement_json", "agreement_table", "judge_table"]


def judge_table(run: JudgeRun) -> str:
    """One benchmark's judged samples: the count, the log, then one aligned row per metric.

    Args:
        run: the judged samples of one benchmark.

    Returns:
        The lines, joined.
    """
    width = max([len(s) for s, _, _ in run.table] + [6])
    mwidth = max([len(m) for _, m, _ in run.table] + [6])
    lines = [
        f"{run.benchmark}: {len(run.verdicts)} samples judged; log {run.log.location}",
        f"{'scorer':<{width}}  {'metric':<{mwidth}}  value",
    ]
    # a count (an int) whole, a figure to four decimals
    lines += [
        f"{s:<{width}}  {m:<{mwidth}}  {v if isinstance(v, int) else f'{v:.4f}'}"
        for s, m, v in run.table
    ]
    return "\n".join(lines)


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def agreement_table(report: AgreementReport) -> str:
    """The two judges and one aligned row per category, then any unpaired counts.

    Args:
        report: the two judges compared.

    Returns:
        The lines, joined.
    """
    rows, unpaired = report.rows, report.unpaired
    lines = [f"judge A: {report.judge_a}", f"judge B: {report.judge_b}"]
    width = max(len("category"), *(len(r.category) for r in rows))
    lines.append(
        f"{'category':<{width}}  {'n':>5}  {'agree':>6}  {'kappa':>6}  "
        f"{'mean_A':>6}  {'mean_B':>6}  {'unscored':>8}"
    )
    for r in rows:
        lines.append(
            f"{r.category:<{width}}  {r.n:>5}  {_fmt(r.agree):>6}  {_fmt(r.kappa):>6}  "
            f"{_fmt(r.mean_a):>6}  {_fmt(r.mean_b):>6}  {r.unscored:>8}"
        )
    if unpaired["only_a"] or unpaired["only_b"]:
        lines.append(
            f"not paired: {unpaired['only_a']} sample(s) only in A, {unpaired['only_b']} only in B"
        )
    return "\n".join(lines)


def agreement_json(report: AgreementReport) -> str:
    """The same as JSON: judge_a, judge_b, rows (one object a category) and unpaired.

    Args:
        report: the two judges compared.

    Returns:
        The JSON text (indented).
    """
    return json.dumps(asdict(report), indent=2)

"""The Markdown of paired comparisons (memevals-diff): a section per comparison, a table per
score."""

from __future__ import annotations

from collections.abc import Sequence

from memevals.results.formatting import format_figure, format_p, paired_interval_text, too_few_note
from memevals.results.paired import EXPLICIT_FACTORS, Comparison, Mismatch


def _md(text: str) -> str:
    return text.replace("|", "\\|")


_HEADER = (
    "| category | n | clusters | mean A | mean B | B − A | 95 % CI | p | p (Holm) | test | MDE "
    "| A better | B better |"
)


def described(m: Mismatch) -> str:
    """A difference as listed under a table: its setting and detail, and the factor it belongs to.

    Args:
        m: the difference.

    Returns:
        The text.
    """
    return f"{m} (factor: {m.factor})" if m.factor else str(m)


def _protocols(c: Comparison) -> str:
    if c.a.protocol == c.b.protocol:
        return f"protocol {c.a.protocol}"
    return f"protocols A = {c.a.protocol}, B = {c.b.protocol}"


def _factor_note(c: Comparison) -> list[str]:
    """What the comparison varies, under its title."""
    factor = c.factor
    if factor is None or (c.mismatches and factor.name not in EXPLICIT_FACTORS):
        return []
    if factor.name in EXPLICIT_FACTORS:
        return [
            f"**The runs differ in their {factor.name}** ({factor.a} vs {factor.b}): their "
            "prompts and judge differ, so B − A measures the protocol, not the model. "
            "Compared because --allow-mismatch was given.\n"
        ]
    settings = "; ".join(str(m) for m in c.differences if m.factor == factor.name)
    return [
        f"The runs differ in one declared factor, the {factor.name} ({_md(settings)}); "
        "everything else is the same.\n"
    ]


def markdown(comparisons: Sequence[Comparison], allow_mismatch: bool = False) -> str:
    """One section per comparison, one table per score; differences listed under the tables.

    Args:
        comparisons: the comparisons.
        allow_mismatch: whether unfair ones are compared anyway (said under their tables).

    Returns:
        The Markdown text.
    """
    out: list[str] = []
    for c in comparisons:
        out.append(f"## A: {_md(c.name_a)}  vs  B: {_md(c.name_b)}\n")
        out.append(
            f"Benchmark {_md(c.a.benchmark)}, {_md(_protocols(c))}; A = {_md(c.a.path)}, "
            f"B = {_md(c.b.path)}.\n"
        )
        out += _factor_note(c)
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
                    f"| {_md(row.category)} | {r.n} | {r.clusters} | {format_figure(r.mean_a)} | "
                    f"{format_figure(r.mean_b)} | {format_figure(r.difference, sign='+')} | "
                    f"{paired_interval_text(r)} | "
                    f"{format_p(r.p_value)} | {format_p(row.holm_p)} | {r.test} | "
                    f"{format_figure(r.mde)} | "
                    f"{r.a_better} | {r.b_better} |"
                )
            out.append(
                f"\nLeft out of the pair: {t.errored} errored, {t.unscored} unscored in either "
                "run (never counted as wrong).\n"
            )
            if any(row.result.too_few_clusters for row in t.rows):
                out.append(too_few_note("95 % interval or minimum detectable difference") + "\n")
        if not c.tables:
            out.append("No score is shared by both runs on any paired sample.\n")
        if c.not_shared:
            out.append(f"Scores in only one run (not compared): {', '.join(c.not_shared)}.\n")
        if c.mismatches:
            title = "Differences between the runs (compared anyway, --allow-mismatch)"
            if not allow_mismatch:
                title = "Differences between the runs"
            out.append(f"**{title}:**\n")
            out += [f"- {_md(described(m))}" for m in c.differences]
            out.append("")
    return "\n".join(out)

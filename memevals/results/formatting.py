"""Every number of results as text, in one place: cells, intervals, p values, shares and
dollars. Renderers and commands show figures only through these."""

from __future__ import annotations

import math

from memevals.core import statistics
from memevals.core.paired_statistics import PairedResult
from memevals.results.runs import FLAGS

#: What a table shows for a figure that cannot be estimated (a clustered error or interval of
#: one cluster, a mean of no scored sample): the figure is left out, never shown as nan.
UNDEFINED = "-"


#: What an interval's cell says where the clusters are too few for one (docs/compare.md).
TOO_FEW = "too few clusters"


def is_undefined(value: object) -> bool:
    """A figure that cannot be estimated (NaN: one cluster, one sample, nothing recorded)."""
    return isinstance(value, float) and not math.isfinite(value)


def is_count(key: str) -> bool:
    """A cell that counts samples or judge runs (a flag's count, judge runs, compared, ...)."""
    counts = tuple(f":extra:{flag}" for flag in sorted(FLAGS))
    return key.endswith((*counts, ":repeated:runs", ":compared", ":incomplete"))


def format_cell(value: float | int | str | None, key: str) -> str:
    """A table cell's text: counts whole, figures to three decimals, UNDEFINED for NaN, empty
    when absent; `|` escaped for Markdown.

    Args:
        value: the cell's value.
        key: its cell key (tells counts from figures).

    Returns:
        The text.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value.replace("|", "\\|")
    if is_undefined(value):
        return UNDEFINED
    if isinstance(value, int) or key == "samples" or key.startswith("tokens:"):
        return f"{value:.0f}" if not isinstance(value, int) else str(value)
    if is_count(key):
        return f"{value:.0f}"
    return f"{value:.3f}"


def shown_number(value: float | int | str | None) -> str:
    """A number as shown; empty when absent or undefined."""
    if not isinstance(value, float | int) or is_undefined(value):
        return ""
    return format_cell(float(value), "")


def too_few_text(clusters: int) -> str:
    """An interval's cell where `clusters` are too few for one: `too few clusters (2)`.

    Args:
        clusters: the clusters the values come from.

    Returns:
        The text.
    """
    return f"{TOO_FEW} ({clusters})"


def too_few_note(what: str = "95 % interval") -> str:
    """The note under a table that has a TOO_FEW cell: the rule and where it is explained.

    Args:
        what: the figures left out.

    Returns:
        The note.
    """
    return (
        f"{TOO_FEW} (n): the values come from n clusters, and a {what} needs at least "
        f"{statistics.MIN_CLUSTERS}: with fewer, even an exact sign-flip test cannot reject "
        "anything at 5 %, so no interval is stated (docs/compare.md#too-few-clusters)."
    )


def score_title(kind: str) -> str:
    """A score's title in tables and charts (`F1` for f1, else its name).

    Args:
        kind: the score name.

    Returns:
        The title.
    """
    return "F1" if kind == "f1" else kind


def format_figure(value: float | None, digits: int = 3, sign: str = "") -> str:
    """A figure to `digits` decimals (`sign="+"` signs it); UNDEFINED when absent or not finite.

    Args:
        value: the figure.
        digits: decimals shown.
        sign: a format sign option ("" or "+").

    Returns:
        The text.
    """
    if value is None or not math.isfinite(value):
        return UNDEFINED
    return f"{value:{sign}.{digits}f}"


def paired_interval_text(result: PairedResult) -> str:
    """`[low, high]`; TOO_FEW where the clusters are too few for an interval."""
    if result.too_few_clusters:
        return too_few_text(result.clusters)
    low, high = result.ci_low, result.ci_high
    if not (math.isfinite(low) and math.isfinite(high)):
        return UNDEFINED
    return f"[{low:+.3f}, {high:+.3f}]"


def format_p(value: float | None) -> str:
    """A p value: three decimals, two significant digits below 0.001; UNDEFINED when absent.

    Args:
        value: the p value.

    Returns:
        The text.
    """
    if value is None or not math.isfinite(value):
        return UNDEFINED
    return f"{value:.2g}" if value < 0.001 else f"{value:.3f}"


def percent(x: float) -> str:
    """A share as a percentage: two decimals, or two significant digits for a share too small
    for them (`0.0042 %`), never `0.00 %` for a share that is not zero."""
    percent = 100 * x
    if percent == 0 or abs(percent) >= 0.01:
        return f"{percent:.2f} %"
    return f"{percent:.2g} %"


def dollars(amount: float) -> str:
    """A cost in dollars: cents, or for less than a dollar enough digits to show two significant
    ones (`$0.0031`, not `$0.00`).

    Args:
        amount: dollars.

    Returns:
        The text.
    """
    if amount == 0 or abs(amount) >= 1:
        return f"${amount:,.2f}"
    digits = max(2, 1 - math.floor(math.log10(abs(amount))))
    return f"${amount:.{digits}f}"

"""The report's renderer: the figures of `report_figures` and `report_samples` laid out by the
Jinja2 template `templates/report.html.j2` into one self-contained HTML page.

The template, its section templates, the styles (`report.css`) and the script (`report.js`,
sorting and the question browser: a small script of our own) are package data, read through
importlib.resources, so an editable and a wheel install find them alike. Autoescaping is on for
every value; the question browser's data goes through `tojson` (HTML-safe: `<`, `>`, `&` and
`'` escaped), so no reply, question or gold can end its script element. The page is written to
a temporary file beside the output and renamed, so a failure leaves no half page.
"""

from __future__ import annotations

import math
import os
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from memevals.core.memory_harness import RESULT_CHARS, RESULTS_LOGGED
from memevals.render.report_charts import draw
from memevals.results.formatting import score_title, too_few_note, too_few_text
from memevals.results.report_data import Report
from memevals.results.report_figures import benchmarks, cost, finite, leaderboard, paired
from memevals.results.report_samples import failures, questions

__all__ = ["SECTIONS", "render_html", "write_atomic"]

#: The sections, in page order: (anchor, title); each has a template `report-<anchor>.html.j2`.
SECTIONS = (
    ("leaderboard", "Leaderboard"),
    ("benchmarks", "Per benchmark"),
    ("paired", "Is B better than A?"),
    ("cost", "Cost and speed"),
    ("failures", "Where memory fails"),
    ("questions", "Every question"),
)
#: The package folder that holds the template, the styles and the script.
TEMPLATES = "templates"


def _resource(name: str) -> str:
    return resources.files("memevals.render").joinpath(TEMPLATES, name).read_text("utf-8")


def _num(value: float | int | None, digits: int = 3) -> str:
    """A figure as the page shows it: `–` for none, an integer as is, else `digits` decimals."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def _value_attr(value: float | int | None) -> str:
    """The exact figure for sorting and checking (repr: what Python's CSV writer writes)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return repr(float(value)) if isinstance(value, float) else str(value)


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return _num(value, 4)
    return "–" if value is None else str(value)


def _hue(value: float) -> str:
    """The hue of a grid cell's background: red 0 … green 1."""
    return f"{120 * max(0.0, min(1.0, value)):.0f}"


def _glyph_x(value: float) -> str:
    """Where a value sits on the leaderboard's small 0..1 interval glyph (110 px wide)."""
    return f"{5 + max(0.0, min(1.0, value)) * 100:.1f}"


@cache
def environment() -> jinja2.Environment:
    """The template environment: autoescaped, the page's filters and tests registered.

    Returns:
        The environment (one per process).
    """
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_resource),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    # the data keeps its keys' order (a run's scores are listed as the run has them)
    env.policies["json.dumps_kwargs"] = {"sort_keys": False, "ensure_ascii": False, "default": str}
    env.filters.update(
        num=_num,
        value_attr=_value_attr,
        shown=_shown,
        hue=_hue,
        glyph_x=_glyph_x,
        kind_title=score_title,
        too_few_text=too_few_text,
        too_few_note=too_few_note,
        # matplotlib's SVG: its text is escaped by matplotlib
        svg=lambda chart: Markup(draw(chart)),
    )
    env.tests["finite"] = finite
    return env


def render_html(report: Report) -> str:
    """The page.

    Args:
        report: what it shows.

    Returns:
        One self-contained HTML document.
    """
    template = environment().get_template("report.html.j2")
    return template.render(
        title=report.title,
        sections=SECTIONS,
        runs=[(r.label, r.framework, r.benchmark, r.protocol, r.path) for r in report.runs],
        leaderboard=leaderboard(report),
        benchmarks=benchmarks(report),
        paired=[paired(report, i, c) for i, c in enumerate(report.comparisons)],
        notes=report.notes,
        cost=cost(report),
        failures=failures(report),
        too_few_clustered=too_few_note("clustered 95 % interval"),
        questions=questions(report),
        results_logged=RESULTS_LOGGED,
        result_chars=RESULT_CHARS,
        # our own files, inlined as they are (an escaped quote would break the CSS)
        css=Markup(_resource("report.css")),
        js=Markup(_resource("report.js")),
    )


def write_atomic(text: str, path: Path) -> None:
    """Write `text` to `path` through a temporary file in the same folder, renamed at the end,
    so a failure never leaves a half-written page.

    Args:
        text: the content.
        path: the destination.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        # mkstemp's file is the owner's alone; a page is for others to read (a web server)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

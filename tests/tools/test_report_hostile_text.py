"""memevals-report shows hostile text as text: no reply, question, gold or title runs a script.

Two small real runs (memevals/locomo, context none, mockllm, two questions) whose logs are
rewritten with Inspect's own log API: every question, gold and reply holds a closing script
tag followed by a script, an image whose load error runs code, and a Jinja2 expression. The
second run scores every question right, so each one flips and the page's server-side flips
table carries the texts beside the question browser (built by our script). The page, made by
the real command, is opened in Debian's headless chromium: the texts show verbatim (`{{7*7}}`,
never `49`), no injected code runs (it would set a window flag and log to the console), and
nothing is requested.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, write_eval_log
from inspect_ai.model import ModelOutput, get_model
from offline_page import open_offline

from memevals.tools.report import main

CHROMIUM = os.environ.get("MEMEVALS_CHROMIUM", "/usr/bin/chromium")
#: What runs if the page lets the text in as markup: a flag and a console line.
PAYLOAD = "window.__pwned=1;console.error('pwned')"


def hostile(field: str) -> str:
    """A text that ends a script element and opens another, loads a broken image whose error
    handler runs code, and holds a template expression."""
    return (
        f"{field} </script><script>{PAYLOAD}</script> "
        f'<img src=x onerror="{PAYLOAD}"> {{{{7*7}}}} & \'quoted\' "double" <!-- end'
    )


def _rewritten(log: EvalLog, path: Path, reply: str, score: float | None) -> Path:
    """`log` written again with hostile question, gold and reply (`reply` names the run), and
    every answer score set to `score` (None: kept)."""
    copy = log.model_copy(deep=True)
    for sample in copy.samples or []:
        question = hostile(f"question {sample.id}")
        sample.input = question
        sample.metadata = {**(sample.metadata or {}), "question": question}
        sample.target = hostile(f"gold {sample.id}")
        sample.output = ModelOutput.from_content(copy.eval.model, hostile(f"{reply} {sample.id}"))
        for name, s in (sample.scores or {}).items():
            if score is not None and name != "prompt_tokens":
                s.value = score
    write_eval_log(copy, str(path))
    return path


@pytest.fixture(scope="module")
def page_file(locomo_task: Callable[..., Task], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of two rewritten runs (the second one the baseline is compared with), by the
    real command; made before the browser starts (Playwright's loop refuses Inspect beside it).
    """
    root = tmp_path_factory.mktemp("hostile")
    task = locomo_task(context="none")
    ids = [str(s.id) for s in list(task.dataset)[:2]]
    [log] = inspect_eval(
        task,
        model=get_model("mockllm/model"),
        sample_id=ids,
        log_dir=str(root / "run"),
        display="none",
    )
    assert log.status == "success", log.error
    a = _rewritten(log, root / "a.eval", "reply A", 0.0)
    b = _rewritten(log, root / "b.eval", "reply B", 1.0)
    out = root / "report.html"
    title = hostile("title")
    args = [str(a), str(b), "--baseline", str(a), "-o", str(out), "--resamples", "10"]
    assert main([*args, "--title", title]) == 0
    return out


@pytest.fixture(scope="module")
def opened(page_file: Path) -> Iterator[dict[str, Any]]:
    """The page in Debian's chromium from file://, with its console errors and requests."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup.sh (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        errors, requests = open_offline(page, page_file)
        yield {"page": page, "errors": errors, "requests": requests, "file": page_file}
        browser.close()


def test_hostile_text_shows_as_text_and_runs_nothing(opened: dict[str, Any]) -> None:
    page = opened["page"]
    title = hostile("title")
    assert page.title() == title
    assert page.locator("header h1").text_content() == title
    # the question browser: every question of both runs, drawn by our script from the data
    assert page.locator("#questions-table tbody tr").count() == 4
    shown = page.locator("#questions-table tbody tr").evaluate_all(
        "trs => trs.map(tr => tr.cells[2].textContent)"
    )
    assert all(q.startswith("question ") and q.endswith(hostile("")[1:]) for q in shown), shown
    row = page.locator("#questions-table tbody tr").first
    sid = row.get_attribute("data-id")
    row.click()
    detail = page.locator("#q-detail")
    assert detail.locator(".question").text_content() == hostile(f"question {sid}")
    assert detail.locator(".gold").text_content() == hostile(f"gold {sid}")
    replies = detail.locator("td.reply").evaluate_all("tds => tds.map(td => td.textContent)")
    assert sorted(replies) == [hostile(f"reply A {sid}"), hostile(f"reply B {sid}")]
    # the flips table: written by the template on the server side
    page.locator("#paired details summary").first.click()
    flips = page.locator("table.flips tbody tr").evaluate_all(
        "trs => trs.map(tr => Array.from(tr.cells).map(td => td.textContent))"
    )
    assert len(flips) == 2
    for cells in flips:
        sid = cells[1].split(" ")[1]
        assert cells[1:4] == [
            hostile(f"question {sid}"),
            hostile(f"gold {sid}"),
            hostile(f"reply A {sid}"),
        ]
        assert cells[5] == hostile(f"reply B {sid}")
    # nothing ran: no flag, no console line, no element the text would have made
    assert page.evaluate("window.__pwned") is None
    assert opened["errors"] == []
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 3  # the two data blocks and our script
    assert opened["requests"] == [opened["file"].as_uri()]
    # the template expression is shown, never evaluated
    assert "{{7*7}}" in page.locator("body").inner_text()
    assert not any("49" in cell for cells in flips for cell in cells[1:4])

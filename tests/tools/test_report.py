"""memevals-report, tested in a real browser.

Real runs, as a user makes them, kept small (`--sample-id`, `--limit`): `inspect eval
memevals/locomo` with `-T context=none` and `-T context=rag` (they differ in one declared
factor, the context),
`-T memory=bm25` (a memory system under test), a judged run (`-T judge=true`, the scripted
grader through the real CLI) and one `lm_eval` run. The Inspect runs' model is the scripted
reader (tests/support/scripted_reader.py), which answers right when its prompt holds the
question's evidence, so the runs' scores differ as their contexts do. The report is built by
the real command (`python -m memevals.tools.report`), then opened from file:// in Debian's
headless chromium, driven by Playwright: no console error, no request but the page itself, one
SVG mark per run and category in each chart, sorting and filtering work, a question opens with
its gold, replies and the memory system's results, a linked row shows below its table's sticky
header, and every number equals memevals-compare's CSV and memevals-diff's JSON. Screenshots of
each section go to the suite's scratch folder (tests/support/scratch.py: `report/`), never
into the checkout.

The browser is part of the test set-up (scripts/setup.sh installs it): a browser that cannot
start fails these tests, it does not skip them.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cli_support import SUPPORT, TESTS, run_python
from inspect_ai.log import read_eval_log, write_eval_log
from lm_eval_support import run_lm_eval_cli
from offline_page import open_offline
from scratch import SCRATCH
from shared_runs import SharedRuns

from memevals.benchmarks import records
from memevals.tools.report import SECTIONS, bucket, main

#: Two questions of each of six conversations (`--sample-id`): the clustered intervals and the
#: paired bootstrap have six clusters, the fewest an interval is stated for (fewer: "too few
#: clusters", docs/compare.md#too-few-clusters); all four categories are among them.
SAMPLES = [
    f"{conv}-q{n}"
    for conv, ns in (("conv-26", (0, 3)), ("conv-30", (0, 4)), ("conv-41", (0, 2)),
                     ("conv-42", (0, 1)), ("conv-43", (0, 2)), ("conv-44", (0, 2)))
    for n in ns
]  # fmt: skip
READER = "scripted_reader/evidence"
CHROMIUM = os.environ.get("MEMEVALS_CHROMIUM", "/usr/bin/chromium")
#: the screenshots of the sections (kept after the run: their folder is printed at set-up)
ARTIFACTS = SCRATCH / "report"
#: Inspect runs: folder -> extra arguments (every run: memevals/locomo, the reader, SAMPLES).
INSPECT_RUNS: dict[str, list[str]] = {
    "none": ["-T", "context=none"],
    "rag": ["-T", "context=rag", "-T", "top_k=10"],
    "bm25": ["-T", "memory=bm25"],
    # the whole conversation, judged by the scripted grader
    "judged": [
        "-T",
        "judge=true",
        "-T",
        "protocol=memevals",
        "--model-role",
        "grader=scripted/strict",
    ],
}
RESAMPLES = "300"
#: docs/img's screenshots: one per section, and a question opened (its memory results shown)
DOC_IMAGES = [*(anchor for anchor, _ in SECTIONS), "question-open"]


def _tool(module: str, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", f"memevals.tools.{module}", *map(str, args)]
    return run_python(cmd, cwd=cwd, timeout=600)


@pytest.fixture(scope="session")
def run_dirs(data_dir: Path, shared_runs: SharedRuns) -> dict[str, Path]:
    """The runs' folders, each made by the real CLI (Inspect's, with the scripted reader and
    judges registered); made once per pytest run, shared by every xdist worker."""

    def produce(root: Path) -> None:
        env = {
            "MEMEVALS_DATA_DIR": str(data_dir),
            "MEMEVALS_CACHE_DIR": str(root / "cache"),
        }
        base = ["eval", "memevals/locomo", "--model", READER, "--sample-id", ",".join(SAMPLES)]
        for name, extra in INSPECT_RUNS.items():
            cmd = [sys.executable, str(SUPPORT / "scripted_reader.py"), *base, *extra]
            cmd += ["--log-dir", str(root / name), "--display", "none"]
            proc = run_python(cmd, cwd=root, env=env, timeout=900)
            assert proc.returncode == 0, proc.stderr[-3000:]
        (root / "lm").mkdir()
        args = ["--model", "dummy", "--tasks", "locomo_temporal", "--limit", "4"]
        lm = run_lm_eval_cli(args, root / "lm")
        (root / "lm-eval.txt").write_text(str(lm.relative_to(root)), encoding="utf-8")

    key = {"report-runs": [READER, SAMPLES, INSPECT_RUNS, str(data_dir)]}
    root = shared_runs.folder(key, produce)
    out = {name: root / name for name in INSPECT_RUNS}
    out["lm-eval"] = root / (root / "lm-eval.txt").read_text(encoding="utf-8")
    return out


@pytest.fixture(scope="session")
def built(run_dirs: dict[str, Path], shared_runs: SharedRuns) -> dict[str, Any]:
    """The report by the real command, beside memevals-compare's CSV of the same runs (made
    once per pytest run; the tests only read them)."""
    folders = [run_dirs[n] for n in ("none", "rag", "bm25", "judged", "lm-eval")]

    def produce(root: Path) -> None:
        proc = _tool(
            "report", *folders, "-o", root / "report.html", "--resamples", RESAMPLES, "--price",
            f"{READER}=0.15,0.60", "--title", "memevals report (test runs)", cwd=root,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        proc = _tool("compare", *folders, "--csv", root / "compare.csv", "--no-png", cwd=root)
        assert proc.returncode == 0, proc.stderr[-3000:]

    root = shared_runs.folder({"report-page": [str(f) for f in folders], "r": RESAMPLES}, produce)
    with (root / "compare.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return {
        "page": root / "report.html",
        "csv": rows,
        "runs": run_dirs,
    }


# Module scope: Playwright's sync API keeps an event loop running in this thread while it is
# open, and in-process Inspect runs of later modules on the same worker refuse to start beside it.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium through Playwright; a browser that cannot start is a failure."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # the dev extra installs it
        pytest.fail(f"playwright is not installed (pip install -e '.[dev]'): {exc}")
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup.sh (apt-get install chromium)")
    with sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        except Exception as exc:
            pytest.fail(f"headless chromium did not start: {exc}")
        yield b
        b.close()


@pytest.fixture(scope="module")
def opened(browser: Any, built: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The page opened from file://, every request intercepted (only file: ones allowed)."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors, requests = open_offline(page, built["page"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot_sections(page, ARTIFACTS)
    print(f"report screenshots: {ARTIFACTS}")  # shown with a failing test's set-up output
    yield {**built, "file": built["page"], "page": page, "errors": errors, "requests": requests}
    page.close()


@contextmanager
def whole_page_in_view(page: Any) -> Iterator[None]:
    """The viewport as tall as the page while it is photographed: a section taller than the
    window would otherwise be taken scrolled, with a table's sticky header drawn over its rows.
    """
    size = page.viewport_size
    height = int(page.evaluate("document.documentElement.scrollHeight"))
    page.set_viewport_size({"width": size["width"], "height": max(height, size["height"])})
    try:
        yield
    finally:
        page.set_viewport_size(size)


def screenshot_sections(page: Any, folder: Path) -> list[Path]:
    """One PNG per section of an open report (`report-<section>.png`); docs/img has these.

    Args:
        page: the Playwright page.
        folder: where they go.

    Returns:
        The files.
    """
    out = []
    with whole_page_in_view(page):
        for anchor, _ in SECTIONS:
            path = folder / f"report-{anchor}.png"
            page.locator(f"section#{anchor}").screenshot(path=str(path))
            out.append(path)
    return out


def test_page_is_one_file_with_no_request_and_no_error(opened: dict[str, Any]) -> None:
    assert opened["errors"] == []
    assert opened["requests"] == [opened["file"].as_uri()]
    text = opened["file"].read_text(encoding="utf-8")
    # the SVG and XLink namespaces name their specifications; nothing fetches them
    text = text.replace('"http://www.w3.org/', '"')
    for reference in ("<link", "src=", "http://", "https://", "@import"):
        assert reference not in text, reference
    assert re.search(r"url\((?!#)", text) is None  # only the charts' own clip paths
    page = opened["page"]
    nav = page.locator("nav a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert nav == [f"#{a}" for a, _ in SECTIONS]
    for anchor, _ in SECTIONS:
        assert (ARTIFACTS / f"report-{anchor}.png").stat().st_size > 1000


def _csv_row(rows: list[dict[str, str]], log: str, benchmark: str) -> dict[str, str]:
    [row] = [r for r in rows if r["log"] == log and r["benchmark"] == benchmark]
    return row


def test_every_leaderboard_number_is_memevals_compare_s(opened: dict[str, Any]) -> None:
    page = opened["page"]
    cells = page.locator("#leaderboard-table td[data-log]").evaluate_all(
        "tds => tds.map(td => [td.dataset.log, td.dataset.benchmark, td.dataset.kind,"
        " td.dataset.value, td.dataset.low, td.dataset.high, td.querySelector('.v').textContent])"
    )
    # five runs: four with F1, one with F1 and the judge
    assert len(cells) == 6
    # the scripted reader answers from its context, so the runs differ: nothing right without
    # one, everything whose evidence it sees with the whole conversation
    f1 = {log: float(value) for log, _, kind, value, *_ in cells if kind == "f1"}
    logs = {name: _log_of(folder) for name, folder in opened["runs"].items() if name != "lm-eval"}
    assert f1[logs["none"]] == 0.0
    assert 0.0 < f1[logs["rag"]] < f1[logs["judged"]]
    assert 0.0 < f1[logs["bm25"]] < f1[logs["judged"]]
    for log, benchmark, kind, value, low, high, shown in cells:
        row = _csv_row(opened["csv"], log, benchmark)
        assert float(value) == float(row[kind])
        assert shown == f"{float(row[kind]):.3f}"
        for bound, column in ((low, f"{kind}_ci_lower"), (high, f"{kind}_ci_upper")):
            assert (bound or "") == ("" if row[column] in ("", "nan") else bound)
            if row[column] not in ("", "nan"):
                assert float(bound) == float(row[column])
    # protocol and judge on every row
    rows = page.locator("#leaderboard-table tbody tr").evaluate_all(
        "trs => trs.map(tr => [tr.cells[2].textContent, tr.cells[3].textContent])"
    )
    assert sorted(rows) == [["memevals", "scripted/strict"]] + [["official", "-"]] * 4
    assert page.locator("#leaderboard .warn").count() >= 1  # two protocols in one column


def test_sorting_a_leaderboard_column_reorders_its_rows(opened: dict[str, Any]) -> None:
    page = opened["page"]

    def contexts() -> list[str]:
        return list(
            page.locator("#leaderboard-table tbody tr").evaluate_all(
                "trs => trs.map(tr => tr.cells[1].textContent)"
            )
        )

    before = contexts()
    page.locator("#leaderboard-table th[data-sort='1']").click()
    ascending = contexts()
    assert ascending == sorted(before, key=lambda s: s.lower()) or ascending == sorted(before)
    assert ascending != before or before == sorted(before)
    page.locator("#leaderboard-table th[data-sort='1']").click()
    assert contexts() == ascending[::-1]


def _questions_by_run(runs: dict[str, Path]) -> list[tuple[str, str, str, str]]:
    """(question, gold, reply, id) of every sample of every run, read from the files."""
    out = []
    for name, folder in runs.items():
        if name == "lm-eval":
            [path] = folder.glob("samples_*.jsonl")
            for line in path.read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                md = json.loads(rec["doc"]["metadata"])
                reply = rec["filtered_resps"][0]
                out.append((md["question"], str(rec["target"]), str(reply), rec["doc"]["id"]))
            continue
        [log_path] = folder.glob("*.eval")
        log = read_eval_log(str(log_path))
        for s in log.samples or []:
            md = s.metadata or {}
            out.append((md["question"], str(s.target), s.output.completion, str(s.id)))
    return out


def test_typing_in_the_question_filter_leaves_the_matching_rows(opened: dict[str, Any]) -> None:
    page = opened["page"]
    everything = _questions_by_run(opened["runs"])
    assert page.locator("#questions-table tbody tr").count() == len(everything)
    term = "support group"
    expected = [q for q in everything if any(term in f.lower() for f in q)]
    assert 0 < len(expected) < len(everything)
    page.fill("#q-search", term)
    rows = page.locator("#questions-table tbody tr")
    assert rows.count() == len(expected)
    assert page.locator("#q-count").text_content() == f"{len(expected)} matching"
    shown = rows.evaluate_all("trs => trs.map(tr => tr.cells[2].textContent)")
    assert sorted(shown) == sorted(q[0] for q in expected)
    # opening it shows its gold and every run's reply
    sid = rows.first.get_attribute("data-id")
    rows.first.click()
    detail = page.locator("#q-detail")
    assert detail.is_visible()
    [(question, gold)] = {(q[0], q[1]) for q in everything if q[3] == sid}
    assert detail.locator(".gold").text_content() == gold
    assert detail.locator(".question").text_content() == question
    replies = detail.locator("td.reply").evaluate_all("tds => tds.map(td => td.textContent)")
    assert sorted(replies) == sorted(q[2] for q in everything if q[3] == sid)
    with whole_page_in_view(page):
        page.locator("#questions").screenshot(path=str(ARTIFACTS / "report-question-open.png"))
    page.fill("#q-search", "")
    assert page.locator("#questions-table tbody tr").count() == len(everything)


def test_an_opened_question_shows_the_memory_system_s_results(opened: dict[str, Any]) -> None:
    """The question view lists what the memory system returned: each logged item's text with
    the ids it cites, green where they are the question's evidence (as the bm25 log has it)."""
    page = opened["page"]
    assert "the first 10 results a sample logs, each cut to 500 characters" in (
        page.locator("#questions > p").first.text_content() or ""
    )
    samples = read_eval_log(_log_of(opened["runs"]["bm25"])).samples or []

    def hits(s: Any) -> bool:
        ev = set(s.metadata["evidence_ids"])
        return any(ev & set(r["ids"]) for r in s.metadata["memory_results"])

    sample = next(s for s in samples if hits(s))
    results, evidence = sample.metadata["memory_results"], sample.metadata["evidence_ids"]
    assert results and all(r["text"] for r in results)
    page.locator(f"#questions-table tbody tr[data-id='{sample.id}']").first.click()
    lists = page.locator("#q-detail ol.mem")
    assert lists.count() == 1  # only the memory run logs results
    items = lists.first.locator("li")
    assert items.count() == len(results)
    shown = items.evaluate_all(
        "lis => lis.map(li => [li.querySelector('.mem-text').textContent,"
        " Array.from(li.querySelectorAll('.id')).map(s => [s.textContent, s.className])])"
    )
    for (text, ids), result in zip(shown, results, strict=True):
        assert text == result["text"]
        assert ids == [[i, "hit id" if i in evidence else "miss id"] for i in result["ids"]]
    assert any(c == "hit id" for _, ids in shown for _, c in ids)


def test_a_linked_row_shows_below_its_table_s_sticky_header(opened: dict[str, Any]) -> None:
    """Each leaderboard mean links to its run's row in the benchmark's grid; followed, the row
    stops below its table's sticky header (scroll-margin), which would otherwise cover it."""
    page = opened["page"]
    links = page.locator("#leaderboard-table td[data-log] a")
    assert links.count() == 6
    viewport = page.viewport_size

    def follow(i: int) -> tuple[dict[str, float], dict[str, float]]:
        page.evaluate("location.hash = '#leaderboard'")
        href = links.nth(i).get_attribute("href")
        links.nth(i).click()
        assert page.evaluate("location.hash") == href
        row = page.locator(f"tr{href}")
        header = row.locator("xpath=ancestor::table[1]/thead//th").first
        box, head = row.bounding_box(), header.bounding_box()
        assert box is not None and head is not None
        return box, head

    for i in range(links.count()):
        box, head = follow(i)
        assert head["y"] >= -0.5  # in view: in its place, or stuck at the top
        assert box["y"] >= head["y"] + head["height"] - 0.5, (box, head)
        assert box["y"] + box["height"] <= viewport["height"]
    # without the margin the same link leaves its row under the header
    tag = page.add_style_tag(content="tr[id]{scroll-margin-top:0}")
    box, head = follow(0)
    tag.evaluate("t => t.remove()")
    assert box["y"] < head["y"] + head["height"] - 0.5


def _marks(page: Any, chart: str) -> int:
    return int(page.locator(f'div.chart[data-chart="{chart}"] g[id^="mark-"]').count())


def test_each_chart_has_one_mark_per_run_and_category(opened: dict[str, Any]) -> None:
    page = opened["page"]
    record = records()["locomo"]
    rows = [r for r in opened["csv"] if r["benchmark"] == "locomo"]
    for kind in ("f1", "judge"):
        expected = sum(
            1
            for r in rows
            for column in (kind, *(f"{kind}_{c}" for c in record.categories))
            if r.get(column) not in (None, "", "nan")
        )
        assert expected > 0
        assert _marks(page, f"bench-locomo-{kind}") == expected, kind
    # each forest plot: one mark per score and category of its comparison's table
    comparisons = page.locator("h3.comparison").count()
    assert comparisons == 3
    for ci in range(comparisons):
        assert _marks(page, f"paired-{ci}") == page.locator(f"tr.diff[data-c='{ci}']").count()
    # cost: one mark per run with token usage (the Inspect runs), dollars likewise; the memory
    # latency one per memory run
    inspect_rows = [r for r in rows if r.get("input_tokens")]
    assert _marks(page, "cost-locomo-tokens") == len(inspect_rows)
    assert _marks(page, "cost-locomo-dollars") == len(inspect_rows)
    assert _marks(page, "cost-locomo-latency-p50") == 1


def _log_of(folder: Path) -> str:
    [path] = folder.glob("*.eval")
    return str(path)


def test_the_paired_differences_are_memevals_diff_s(opened: dict[str, Any], tmp_path: Path) -> None:
    """The pairs shown are those memevals-diff compares without --allow-mismatch (one declared
    factor, the context: none, rag and the bm25 memory system's), each with diff's numbers."""
    page, runs = opened["page"], opened["runs"]
    shown = page.locator("h3.comparison").evaluate_all(
        "hs => hs.map(h => [h.dataset.a, h.dataset.b, h.textContent])"
    )
    logs = {name: _log_of(runs[name]) for name in ("none", "rag", "bm25", "judged")}
    assert [(a, b) for a, b, _ in shown] == [
        (logs["none"], logs["rag"]),
        (logs["none"], logs["bm25"]),
        (logs["rag"], logs["bm25"]),
    ]
    assert "A = context=none vs B = context=rag (factor: context" in shown[0][2]
    for ci, (a, b, _) in enumerate(shown):
        out = tmp_path / f"diff-{ci}.json"
        proc = _tool("diff", a, b, "--json", out, "--resamples", RESAMPLES, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        [comparison] = json.loads(out.read_text(encoding="utf-8"))
        expected = [row for sc in comparison["scores"].values() for row in sc["rows"]]
        got = page.locator(f"tr.diff[data-c='{ci}']").evaluate_all(
            "trs => trs.map(tr => Object.assign({}, tr.dataset))"
        )
        assert len(got) == len(expected) > 0
        for g, want in zip(got, expected, strict=True):
            assert (g["score"], g["category"]) == (want["score"], want["category"])
            for attr, key in (
                ("difference", "difference"),
                ("low", "ci_low"),
                ("high", "ci_high"),
                ("p", "p_value"),
                ("holm", "holm_p"),
                ("mde", "mde"),
            ):
                assert g[attr] == ("" if want[key] is None else g[attr]), (attr, want[key])
                if want[key] is not None:
                    assert float(g[attr]) == want[key], attr
    # a pair the page leaves out is one memevals-diff refuses (another protocol and judge)
    proc = _tool("diff", logs["none"], logs["judged"], "--resamples", "10", cwd=tmp_path)
    assert proc.returncode == 1 and "refusing to compare" in proc.stderr


def test_memory_build_cost_and_analysis_axes(opened: dict[str, Any]) -> None:
    page = opened["page"]
    [bm25] = [r for r in opened["csv"] if r.get("memory_system")]
    table = page.locator("table.memory tbody tr").evaluate_all(
        "trs => trs.map(tr => Array.from(tr.cells).map(td => td.textContent))"
    )
    assert len(table) == 1
    assert table[0][1] == bm25["memory_system"]
    assert table[0][6] == bm25["memory_ingestions"]
    # where memory fails: one mark per run and bucket of the record's axes, from the logs
    record = records()["locomo"]
    keys = [a.key for a in record.analysis_axes]
    assert keys == ["sessions_after_evidence", "turns_after_evidence", "tokens_after_evidence"]
    for axis in record.analysis_axes:
        expected = 0
        for name, folder in opened["runs"].items():
            if name == "lm-eval":
                [path] = folder.glob("samples_*.jsonl")
                mds = [
                    json.loads(json.loads(line)["doc"]["metadata"])
                    for line in path.read_text(encoding="utf-8").splitlines()
                ]
            else:
                [log_path] = folder.glob("*.eval")
                mds = [s.metadata or {} for s in read_eval_log(str(log_path)).samples or []]
            expected += len({bucket(axis, md.get(axis.key)) for md in mds} - {None})
        assert expected > 0
        assert _marks(page, f"axis-locomo-{axis.key}") == expected, axis.key


def test_bad_input_is_one_line_and_no_file(
    tmp_path: Path, run_dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out" / "report.html"
    empty = tmp_path / "empty"
    empty.mkdir()
    corrupt = tmp_path / "corrupt.eval"
    corrupt.write_bytes(b"PK\x03\x04 not a zip")
    other_tool = tmp_path / "samples_other_2026-01-01T00-00-00.000000.jsonl"
    other_tool.write_text(json.dumps({"doc_id": 0, "doc": {"q": "x"}, "metrics": []}) + "\n")
    not_a_log = tmp_path / "results.json"
    not_a_log.write_text('{"results": {"task": {"acc": 0.5}}}')
    [log_path] = run_dirs["none"].glob("*.eval")
    failed = read_eval_log(str(log_path))
    failed.status, failed.results = "error", None
    failed_path = tmp_path / "failed" / "failed.eval"
    failed_path.parent.mkdir()
    write_eval_log(failed, str(failed_path))
    cases = {
        (): "no runs given",
        (empty,): "no Inspect logs (.eval or .json) and no lm-eval samples_*.jsonl",
        (corrupt,): "not a readable Inspect log",
        (other_tool,): "field 'doc.id' is missing; is this a memevals task's samples file?",
        (not_a_log,): "not a readable Inspect log",
        (failed_path,): f"none of the 1 run(s) has results (a failed or cancelled run): "
        f"{failed_path} (status error)",
        (tmp_path / "missing.eval",): "no such log file or folder",
    }
    for args, message in cases.items():
        capsys.readouterr()
        code = main([*map(str, args), "-o", str(out), "--resamples", "10"])
        err = capsys.readouterr().err
        assert code == 2, args
        assert err.startswith("memevals-report: ") and err.count("\n") == 1, err
        assert message in err, (message, err)
        assert "Traceback" not in err
        assert not out.exists()
        assert not out.parent.exists() or list(out.parent.iterdir()) == []
    capsys.readouterr()
    assert main([str(log_path), "-o", str(out), "--price", "gpt=abc"]) == 2
    assert "--price 'gpt=abc': expected MODEL=IN,OUT" in capsys.readouterr().err


def test_docs_screenshots_come_from_this_code_path(opened: dict[str, Any]) -> None:
    """docs/img holds the screenshots this test writes (refreshed with MEMEVALS_DOC_IMAGES=1)."""
    docs = TESTS.parent / "docs" / "img"
    if os.environ.get("MEMEVALS_DOC_IMAGES") == "1":
        docs.mkdir(parents=True, exist_ok=True)
        from PIL import Image

        for name in DOC_IMAGES:
            # a 64-colour palette keeps the committed images small
            with Image.open(ARTIFACTS / f"report-{name}.png") as image:
                small = image.convert("RGB").quantize(colors=64)
                small.save(docs / f"report-{name}.png", optimize=True)
    for name in DOC_IMAGES:
        assert (docs / f"report-{name}.png").is_file(), name


def test_questions_link_into_an_inspect_view_bundle_beside_the_page(
    browser: Any, run_dirs: dict[str, Path], tmp_path: Path
) -> None:
    """With `view/index.html` beside the page (an `inspect view bundle`), each Inspect run of an
    opened question links to its sample there; without one, no link."""
    log = _log_of(run_dirs["none"])
    site = tmp_path / "site"
    (site / "view").mkdir(parents=True)
    (site / "view" / "index.html").write_text("<!DOCTYPE html><title>view</title>")
    for with_view, page_path in ((True, site / "report.html"), (False, tmp_path / "plain.html")):
        assert main([log, "-o", str(page_path), "--resamples", "10"]) == 0
        page = browser.new_page()
        page.goto(page_path.as_uri())
        row = page.locator("#questions-table tbody tr").first
        sid = row.get_attribute("data-id")
        row.click()
        links = page.locator("#q-detail a").evaluate_all("as => as.map(a => a.href)")
        page.close()
        if with_view:
            name = Path(log).name
            assert links == [
                f"{(site / 'view').as_uri()}/index.html#/logs/{name}/samples/sample/{sid}/1"
            ]
        else:
            assert links == []

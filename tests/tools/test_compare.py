"""memevals-compare on logs of two mock "providers" with different scripted answers: the table
values (checked against locomo_f1 and the scripted judge's rule), the judge and context labels,
separate tables per benchmark, the CSV, and PNG charts that open."""

from __future__ import annotations

import csv
import math
import statistics
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_python
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, get_model
from inspect_ai.tool import ToolChoice, ToolInfo
from scripted_judge import norm

from memevals.benchmarks.locomo.prompts import NOT_MENTIONED, prediction_for_scoring
from memevals.inspect_tasks.locomo import locomo
from memevals.inspect_tasks.longmemeval import longmemeval
from memevals.scorers import locomo_f1
from memevals.tools.compare import load_rows, main, markdown_tables

REPO = Path(__file__).resolve().parents[2]
CATS = ["single_hop", "multi_hop", "temporal", "open_domain", "adversarial"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

Answerer = Callable[[Sample], str]


def _pick(samples: list[Sample], per_category: int = 4) -> list[Sample]:
    """The first `per_category` samples of each category whose user text is unique."""
    seen: dict[str, int] = {}
    texts = [s.input[-1].text for s in samples]  # type: ignore[index]
    counts = Counter(texts)
    out = []
    for s, text in zip(samples, texts, strict=True):
        cat = s.metadata["category"]  # type: ignore[index]
        if seen.get(cat, 0) < per_category and counts[text] == 1:
            seen[cat] = seen.get(cat, 0) + 1
            out.append(s)
    assert sorted(seen.values()) == [per_category] * 5
    return out


def _letter_of(sample: Sample, option: str) -> str:
    choices = sample.metadata["choices"]  # type: ignore[index]
    return "ab"[choices.index(option)]


def provider_a(s: Sample) -> str:
    """Knows every answer; picks the refusal option on adversarial questions."""
    md = s.metadata or {}
    if md["category"] == "adversarial":
        return _letter_of(s, NOT_MENTIONED)
    return str(s.target)


def provider_b(s: Sample) -> str:
    """Knows single-hop answers, gives the first word on multi-hop, falls for the distractor."""
    md = s.metadata or {}
    if md["category"] == "single_hop":
        return str(s.target)
    if md["category"] == "multi_hop":
        return str(s.target).split()[0]
    if md["category"] == "adversarial":
        return _letter_of(s, md["adversarial_answer"])
    return "I don't know"


def _scripted(samples: list[Sample], answer: Answerer) -> Any:
    by_text = {s.input[-1].text: answer(s) for s in samples}  # type: ignore[index]

    def reply(
        messages: list[ChatMessage], tools: list[ToolInfo], tc: ToolChoice, cfg: GenerateConfig
    ) -> ModelOutput:
        return ModelOutput.from_content("mock", by_text[messages[-1].text])

    return reply


def _expected_f1(samples: list[Sample], answer: Answerer) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {c: [] for c in CATS}
    for s in samples:
        md = s.metadata or {}
        pred = prediction_for_scoring(answer(s), dict(md))
        out[md["category"]].append(locomo_f1(pred, md["answer"], int(md["category_id"])))
    return out


def _expected_judge(samples: list[Sample], answer: Answerer, mode: str) -> dict[str, list[float]]:
    """The scripted judge's rule (tests/support/scripted_judge.py), applied to the mapped
    prediction."""
    out: dict[str, list[float]] = {c: [] for c in CATS}
    for s in samples:
        md = s.metadata or {}
        cand = prediction_for_scoring(answer(s), dict(md))
        if md["category"] == "adversarial":
            ok = "not mentioned" in cand.lower()
        elif mode == "strict":
            ok = norm(cand) == norm(str(md["answer"]))
        else:
            ok = set(norm(str(md["answer"])).split()) <= set(norm(cand).split())
        out[md["category"]].append(1.0 if ok else 0.0)
    return out


def _stderr(values: list[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values))


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> tuple[Path, list[Sample]]:
    import scripted_judge  # noqa: F401  (registers the scripted/ judge provider)

    log_dir = tmp_path_factory.mktemp("compare-logs")
    chosen = _pick(list(locomo(context="none", protocol="memevals").dataset))
    ids = [str(s.id) for s in chosen]
    runs = [
        ("mockllm/provider-a", provider_a, "scripted/strict", 0),
        ("mockllm/provider-b", provider_b, "scripted/lenient", 0),
        ("mockllm/provider-a", provider_a, "scripted/strict", 1),  # same key, other seed
    ]
    for model, answer, grader, seed in runs:
        # the scripted graders read our own judge prompt (protocol=memevals)
        task = locomo(context="none", judge=True, seed=seed, protocol="memevals")
        # the seed changes the option order, so script from this task's own samples
        own = [s for s in task.dataset if s.id in ids]
        [log] = inspect_eval(
            task,
            model=get_model(model, custom_outputs=_scripted(own, answer)),
            model_roles={"grader": get_model(grader)},
            sample_id=ids,
            log_dir=str(log_dir),
            display="none",
        )
        assert log.status == "success", log.error
    fixtures = REPO / "tests" / "fixtures"
    [lme] = inspect_eval(
        longmemeval(
            variant="oracle", data_dir=str(fixtures), verify_checksum=False, protocol="memevals"
        ),
        model=get_model("mockllm/provider-a"),
        model_roles={"grader": get_model("scripted/strict")},
        log_dir=str(log_dir),
        display="none",
    )
    assert lme.status == "success", lme.error
    return log_dir, chosen


def test_table_values_labels_and_benchmarks(logs: tuple[Path, list[Sample]]) -> None:
    log_dir, chosen = logs
    rows = load_rows([str(log_dir)])
    assert sorted(r.benchmark for r in rows) == ["locomo"] * 3 + ["longmemeval"]
    loc = {(r.model, r.context): r for r in rows if r.benchmark == "locomo"}
    # the seed is one of the record's label options: a run with another one says so
    assert set(loc) == {
        ("mockllm/provider-a", "none"),
        ("mockllm/provider-a", "none +seed=1"),
        ("mockllm/provider-b", "none"),
    }
    a, b = loc["mockllm/provider-a", "none"], loc["mockllm/provider-b", "none"]
    assert (a.judge, b.judge) == ("scripted/strict", "scripted/lenient")
    assert a.samples == b.samples == 20

    for row, answer, mode in ((a, provider_a, "strict"), (b, provider_b, "lenient")):
        f1 = _expected_f1(chosen, answer)
        judge = _expected_judge(chosen, answer, mode)
        for kind, expected in (("f1", f1), ("judge", judge)):
            got = row.kinds[kind]
            flat = [v for c in CATS for v in expected[c]]
            assert got.overall == pytest.approx(statistics.fmean(flat), abs=1e-9)
            assert got.stderr == pytest.approx(_stderr(flat), abs=1e-9)
            assert set(got.categories) == set(CATS)
            for c in CATS:
                assert got.categories[c] == pytest.approx(statistics.fmean(expected[c]), abs=1e-9)
        assert row.kinds["judge"].extras["unscored"] == 0
        # clustered figures, computed from the samples: every chosen question is from one
        # conversation, so they cannot be estimated (NaN, never a made-up 0)
        assert {s.metadata["cluster"] for s in chosen} == {"conv-26"}  # type: ignore[index]
        summary = row.kinds["f1"].clustered[""]
        assert (summary.n, summary.clusters) == (20, 1)
        assert math.isnan(summary.stderr_clustered) and math.isnan(summary.interval.lower)
        assert summary.stderr == pytest.approx(_stderr([v for c in CATS for v in f1[c]]))

    # the prompt size: from the F1 scorer's metrics for LoCoMo, from LongMemEval's own scorer
    tokens = statistics.fmean(int(s.metadata["prompt_tokens"]) for s in chosen)  # type: ignore[index]
    assert a.aux["prompt_tokens"] == b.aux["prompt_tokens"] == pytest.approx(tokens)
    assert not [e for r in (a, b) for e in r.kinds["f1"].extras if "prompt" in e]
    [lme_row] = [r for r in rows if r.benchmark == "longmemeval"]
    assert lme_row.aux["prompt_tokens"] > 0

    # the scripted answers make the two providers clearly different
    assert a.kinds["f1"].categories["adversarial"] == 1.0
    assert b.kinds["f1"].categories["adversarial"] == 0.0
    multi = _expected_judge(chosen, provider_b, "lenient")["multi_hop"]
    assert b.kinds["judge"].overall == pytest.approx((4 + sum(multi)) / 20)
    assert b.kinds["judge"].categories == {
        "single_hop": 1.0,
        "multi_hop": pytest.approx(statistics.fmean(multi)),
        "temporal": 0.0,
        "open_domain": 0.0,
        "adversarial": 0.0,
    }

    md = markdown_tables(rows, wide=True)
    assert md.count("### ") == 2 and "### locomo\n" in md and "### longmemeval\n" in md
    locomo_part = md.split("### longmemeval")[0]
    header = next(line for line in locomo_part.splitlines() if line.startswith("| model"))
    # logs from before the protocol option show the documented default
    assert header.startswith(
        "| model | judge model | protocol | context | task | n | F1 | F1 stderr "
        "| F1 stderr_clustered | F1 95% CI | F1 single_hop"
    )
    assert "| judge stderr_clustered | judge 95% Wilson |" in header
    line_b = next(line for line in locomo_part.splitlines() if "provider-b" in line)
    cells = [c.strip() for c in line_b.strip("|").split("|")]
    assert cells[:6] == [
        "mockllm/provider-b", "scripted/lenient", "memevals", "none", "locomo", "20"
    ]  # fmt: skip
    assert cells[6] == f"{b.kinds['f1'].overall:.3f}"
    assert "2 different judges" in locomo_part
    # LongMemEval's judge numbers are not in the LoCoMo table, and vice versa
    lme_part = md.split("### longmemeval")[1]
    assert "single_session_user" in lme_part and "single_session_user" not in locomo_part
    assert "F1" not in lme_part


def test_cli_writes_csv_and_charts_that_open(
    logs: tuple[Path, list[Sample]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir, _ = logs
    out_csv = tmp_path / "report" / "compare.csv"
    assert main([str(log_dir), "--csv", str(out_csv), "--png-dir", str(tmp_path / "png")]) == 0
    printed = capsys.readouterr().out
    assert "### locomo" in printed and "### longmemeval" in printed

    with out_csv.open(encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 4
    by = {(r["model"], r["context"]): r for r in table}
    b = by["mockllm/provider-b", "none"]
    rows = {(r.model, r.context): r for r in load_rows([str(log_dir)])}
    expected = rows["mockllm/provider-b", "none"]
    assert b["benchmark"] == "locomo" and b["judge_model"] == "scripted/lenient"
    assert float(b["f1"]) == pytest.approx(expected.kinds["f1"].overall, abs=1e-12)
    assert float(b["judge"]) == pytest.approx(expected.kinds["judge"].overall, abs=1e-12)
    assert float(b["judge_single_hop"]) == 1.0
    assert float(b["f1_stderr"]) == pytest.approx(expected.kinds["f1"].stderr, abs=1e-12)
    lme = next(r for r in table if r["benchmark"] == "longmemeval")
    assert lme["f1"] == "" and lme["context"] == "full +variant=oracle"
    assert lme["judge_task_avg"] != "" and lme["protocol"] == "memevals"

    import matplotlib.image as mpimg
    from PIL import Image

    for name in ("locomo", "longmemeval"):
        png = tmp_path / "png" / f"{name}.png"
        assert png.read_bytes()[:8] == PNG_SIGNATURE
        pixels = mpimg.imread(str(png))
        assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 300
        with Image.open(png) as img:
            img.verify()
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == ["locomo.png", "longmemeval.png"]


def test_module_entry_point_and_errors(logs: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    log_dir, _ = logs
    proc = run_python(
        [sys.executable, "-m", "memevals.tools.compare", str(log_dir), "--no-png", "--wide"],
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    row = "| mockllm/provider-a | scripted/strict | memevals | none +seed=1 | locomo | 20 |"
    assert row in proc.stdout
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"]["memevals-compare"] == "memevals.tools.compare:main"
    assert any(dep.startswith("matplotlib") for dep in project["optional-dependencies"]["report"])
    missing = tmp_path / "nothing-here"
    with pytest.raises(SystemExit) as exc:
        main([str(missing)])
    assert exc.value.code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit):
        main([str(empty)])


def test_other_epoch_reducers_get_their_own_columns(
    logs: tuple[Path, list[Sample]], tmp_path: Path
) -> None:
    """Two epochs reduced by mean and max: the max is reported beside, never over, the mean."""
    from inspect_ai import Epochs

    _, chosen = logs
    calls: dict[str, int] = {}

    def alternate(
        messages: list[ChatMessage], tools: list[ToolInfo], tc: ToolChoice, cfg: GenerateConfig
    ) -> ModelOutput:
        # first epoch answers like provider A, second like "I don't know"
        text = messages[-1].text
        calls[text] = calls.get(text, 0) + 1
        sample = next(s for s in chosen if s.input[-1].text == text)  # type: ignore[index]
        reply = provider_a(sample) if calls[text] == 1 else "I don't know"
        return ModelOutput.from_content("mock", reply)

    ids = [str(s.id) for s in chosen if s.metadata["category"] == "single_hop"][:4]  # type: ignore[index]
    [log] = inspect_eval(
        locomo(context="none", protocol="memevals"),  # the prompts `chosen` holds
        model=get_model("mockllm/epochs", custom_outputs=alternate),
        sample_id=ids,
        epochs=Epochs(2, ["mean", "max"]),
        max_connections=1,
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    [row] = load_rows([str(tmp_path)])
    assert set(row.kinds) == {"f1", "f1@max"}
    assert row.kinds["f1"].overall == pytest.approx(0.5)  # per sample: mean of 1 and 0
    assert row.kinds["f1@max"].overall == pytest.approx(1.0)
    assert "f1@max" in markdown_tables([row])


def test_chart_names_from_log_metadata_never_escape_the_folder() -> None:
    from memevals.tools.compare import safe_file_stem

    assert safe_file_stem("../../etc/passwd") == "etc_passwd"
    assert safe_file_stem("memevals/locomo_plus") == "memevals_locomo_plus"
    assert safe_file_stem("locomo") == "locomo"
    assert safe_file_stem("..") == "benchmark"


def test_context_labels_come_from_the_settings_the_task_logged() -> None:
    """LongMemEval's rag unit defaults to session and its truncation budget to 126,500 tokens:
    the label must say what ran, not another benchmark's defaults (dialog, 4000); a label
    option at another value than the record's default is named."""
    from memevals.benchmarks import records
    from memevals.benchmarks.longmemeval.memory import longmemeval_memory
    from memevals.core.memory_options import MemoryOptions
    from memevals.results.runs import Run, context_label

    def label(benchmark: str, options: dict[str, Any], used: dict[str, Any]) -> str:
        run = Run("x", "x", "inspect", benchmark, {}, {}, record=records()[benchmark],
                  options=options, used=used)  # fmt: skip
        return context_label(run)

    truncated = longmemeval_memory(MemoryOptions("truncated"), context_window=8192)
    md = {"variant": "m", **truncated.settings()}
    got = label("longmemeval", {"context": "truncated", "context_window": 8192}, md)
    assert got == "truncated(6692) +variant=m"
    rag = {"variant": "s", **longmemeval_memory(MemoryOptions("rag")).settings()}
    assert label("longmemeval", {"context": "rag"}, rag) == "rag(session, k=5, bm25)"
    # LoCoMo logs its settings under "memory" (the reader takes them as what ran)
    used = {"context": "rag", "retrieval_unit": "summary", "top_k": 3, "retriever": "bm25"}
    assert label("locomo", {"context": "rag"}, used) == "rag(summary, k=3, bm25)"
    # nothing logged: the record's own defaults
    assert label("locomo", {"context": "rag"}, {}) == "rag(dialog, k=5, bm25)"
    options = {"context": "none", "gap_fix": True, "adversarial": "open", "seed": 0}
    assert label("locomo_plus", options, {}) == "none +gap-fix +adversarial=open"


def test_clustered_figures_from_inspect_logs_and_lm_eval_samples(
    data_dir: Path, tmp_path: Path
) -> None:
    """Questions from six conversations (the fewest an interval needs), in an Inspect log and in
    a real lm-eval samples file (its per-document F1 replaced by known values): the clustered
    error and the Wilson / t intervals (clipped to [0, 1]) in the table are
    memevals.core.statistics' values of the same samples."""
    import json

    from lm_eval_support import run_inspect, run_lm_eval_cli

    from memevals.core import statistics
    from memevals.tools.compare import write_csv

    task = locomo(categories="temporal", context="none", judge=True, protocol="memevals")
    by_conv: dict[str, list[Sample]] = {}
    for s in task.dataset:
        by_conv.setdefault(str(s.metadata["cluster"]), []).append(s)  # type: ignore[index]
    chosen = [s for conv in list(by_conv)[:6] for s in by_conv[conv][:2]]
    answers = {}
    for n, s in enumerate(chosen):
        text = "\n\n".join(m.text for m in s.input)  # type: ignore[union-attr]
        answers[text] = str(s.target) if n % 3 else "no idea"
    import scripted_judge  # noqa: F401

    log = run_inspect(
        task, answers, tmp_path / "inspect", [str(s.id) for s in chosen],
        roles={"grader": get_model("scripted/lenient")},
    )  # fmt: skip
    assert log.samples is not None
    f1 = [float(s.scores["locomo_f1_scorer"].value) for s in log.samples]  # type: ignore[index, arg-type]
    judged = [float(s.scores["llm_judge"].value["judge"]) for s in log.samples]  # type: ignore[index, call-overload]
    clusters = [str(s.metadata["cluster"]) for s in log.samples]
    [row] = load_rows([str(tmp_path / "inspect")])
    f1_summary = row.kinds["f1"].clustered["temporal"]
    assert f1_summary.clusters == 6 and not f1_summary.too_few_clusters
    assert f1_summary.stderr_clustered == pytest.approx(
        statistics.clustered_stderr(f1, clusters), abs=1e-12
    )
    t_interval = statistics.clustered_ci(f1, clusters)
    assert f1_summary.interval == statistics.Interval(
        max(t_interval.lower, 0.0), min(t_interval.upper, 1.0)
    )
    assert row.kinds["judge"].clustered[""].interval == statistics.wilson_interval(judged, clusters)
    md = markdown_tables([row], wide=True)
    se = row.kinds["f1"].clustered[""].stderr_clustered
    assert f"| {row.kinds['f1'].overall:.3f} | " in md and f" ± {se:.3f} |" in md

    # lm-eval: the real CLI's samples file for the same documents
    docs = [i for i, s in enumerate(task.dataset) if s in chosen]
    (tmp_path / "lm").mkdir()
    run_dir = run_lm_eval_cli(
        ["--model", "dummy", "--tasks", "locomo_temporal", "--metadata", '{"context": "none"}',
         "--samples", json.dumps({"locomo_temporal": docs})],
        tmp_path / "lm",
    )  # fmt: skip
    [path] = run_dir.glob("samples_locomo_temporal_*.jsonl")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [r["doc"]["id"] for r in records] == [str(s.id) for s in chosen]
    known = [0.25 * (n % 5) for n in range(len(records))]
    for record, value in zip(records, known, strict=True):
        record["f1"] = value
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    [lm_row] = load_rows([str(tmp_path / "lm")])
    assert (lm_row.framework, lm_row.task, lm_row.model) == (
        "lm-eval", "lm-eval: locomo_temporal", "dummy"
    )  # fmt: skip
    lm_clusters = [json.loads(r["doc"]["metadata"])["cluster"] for r in records]
    assert lm_clusters == clusters
    summary = lm_row.kinds["f1"].clustered[""]
    assert lm_row.kinds["f1"].overall == pytest.approx(sum(known) / len(known))
    assert summary.stderr_clustered == pytest.approx(
        statistics.clustered_stderr(known, lm_clusters), abs=1e-12
    )
    assert lm_row.kinds["f1"].categories == {"temporal": pytest.approx(sum(known) / len(known))}
    out = tmp_path / "both.csv"
    write_csv([row, lm_row], out)
    with out.open(encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    assert float(table[1]["f1_temporal_stderr_clustered"]) == pytest.approx(
        summary.stderr_clustered
    )
    assert float(table[0]["judge_ci_upper"]) == pytest.approx(
        statistics.wilson_interval(judged, clusters).upper
    )


def test_scores_above_the_audited_gold_ceiling_are_flagged(data_dir: Path, tmp_path: Path) -> None:
    """A run that answers every open-domain question with its (original) gold scores F1 1.0,
    above the 90.62 % the audit leaves reachable: compare names the score and the ceiling.
    The same answers on the audited gold are not flagged (no ceiling below 100 % there)."""
    for gold in ("original", "audited"):
        task = locomo(categories="open_domain", context="none", gold=gold)
        golds = {s.input[-1].text: str((s.metadata or {})["answer"]) for s in task.dataset}  # type: ignore[union-attr]

        def answer(
            messages: list[ChatMessage],
            tools: Any,
            choice: Any,
            config: GenerateConfig,
            golds: dict[str, str] = golds,
        ) -> ModelOutput:
            return ModelOutput.from_content("mockllm/model", golds[messages[-1].text])

        # ten questions whose gold scores F1 1.0 against itself
        ids = [
            str(s.id)
            for s in task.dataset
            if locomo_f1(golds[s.input[-1].text], (s.metadata or {})["answer"], 3) == 1.0  # type: ignore[union-attr]
        ][:10]
        [log] = inspect_eval(
            task,
            model=get_model("mockllm/model", custom_outputs=answer),
            sample_id=ids,
            display="none",
            log_dir=str(tmp_path / gold),
        )
        assert log.status == "success", log.error
        [row] = load_rows([log.location])
        assert row.ceilings["open_domain"] == pytest.approx(1 - 9 / 96, abs=1e-6)
        table = markdown_tables([row])
        if gold == "original":
            assert row.kinds["f1"].categories["open_domain"] == 1.0
            assert "Above the audited-gold ceiling" in table
            assert "f1 open_domain 1.0000 > ceiling 0.9062" in table
        else:
            assert "Above the audited-gold ceiling" not in table

"""memevals-compare and memevals-diff on runs of a memory system under test: real Inspect CLI
logs of `-T memory=bm25` (twice: built, then read from the disk cache), `-T memory=embedding`,
`-T memory=bm25 -T top_k=3` and `-T context=rag`. The memory columns must equal the figures
recomputed from the logs' samples; runs without a memory system get none of them."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_inspect_cli
from inspect_ai.log import EvalLog, read_eval_log
from shared_runs import SharedRuns

from memevals.core.memory_harness import ingest_totals, latency_percentiles
from memevals.tools.compare import Row, load_rows, markdown_tables, write_csv
from memevals.tools.diff import compare_runs, find_mismatches, load_runs

RUNS: Mapping[str, list[str]] = {
    "bm25": ["-T", "memory=bm25"],
    "bm25_again": ["-T", "memory=bm25"],  # same cache: no ingestion
    "embedding": ["-T", "memory=embedding"],
    "bm25_k3": ["-T", "memory=bm25", "-T", "top_k=3"],
    "rag": ["-T", "context=rag"],
}


@pytest.fixture(scope="module")
def logs(shared_runs: SharedRuns, data_dir: Path) -> dict[str, Path]:
    """One log folder per run, all sharing one fresh memory cache (in run order); made once per
    pytest run, whichever xdist worker asks first (tests/support/shared_runs.py)."""

    def produce(root: Path) -> None:
        env = {
            "MEMEVALS_DATA_DIR": str(data_dir),
            "MEMEVALS_CACHE_DIR": str(root / "cache"),
            "HF_HUB_OFFLINE": "1",
        }
        for name, args in RUNS.items():
            cmd = ["eval", "memevals/locomo", "--model", "mockllm/model", "--limit", "10", *args]
            proc = run_inspect_cli([*cmd, "--log-dir", str(root / name)], cwd=root, env=env)
            assert proc.returncode == 0, proc.stderr[-3000:]

    root = shared_runs.folder({"memory-compare": RUNS, "data": str(data_dir)}, produce)
    return {name: root / name for name in RUNS}


def _log(folder: Path) -> EvalLog:
    [path] = folder.glob("*.eval")
    return read_eval_log(str(path))


def _row(folder: Path) -> Row:
    [row] = load_rows([str(folder)])
    return row


def _expected(log: EvalLog) -> dict[str, Any]:
    """The memory figures computed here, straight from the log's samples."""
    mds = [s.metadata for s in log.samples or []]
    assert len(mds) == 10 and all("memory_latency_s" in md for md in mds)
    return {
        **latency_percentiles([md["memory_latency_s"] for md in mds]),
        "mean_items": sum(md["memory_items"] for md in mds) / 10,
        "empty_retrievals": sum(1 for md in mds if md["memory_items"] == 0),
        "items_cut": sum(md["memory_cut"] for md in mds),
        "mean_context_tokens": sum(md["memory_context_tokens"] for md in mds) / 10,
        **ingest_totals([md["memory_ingest"] for md in mds]),
    }


def test_memory_columns_equal_the_figures_of_the_samples(logs: dict[str, Path]) -> None:
    built, again = _log(logs["bm25"]), _log(logs["bm25_again"])
    row = _row(logs["bm25"])
    assert row.context == "memory(bm25, k=5)"
    # the memory scorer's value is a latency, not a score: no "memory_system" kind
    assert sorted(row.kinds) == ["f1"]
    assert row.memory == {"system": "bm25 2 (unit=auto)", "k": 5, **_expected(built)}
    # --limit 10: the ten questions all come from conv-26, ingested once, then reused
    counts = (row.memory["histories"], row.memory["ingestions"], row.memory["cache_hits"])
    assert counts == (1, 1, 0)
    assert (row.memory["mean_items"], row.memory["items_cut"]) == (5.0, 0)
    assert row.memory["build_model_calls"] == 0  # bm25 calls no model
    latencies = sorted(float(s.metadata["memory_latency_s"]) for s in built.samples or [])
    p50, p99 = float(row.memory["latency_p50_s"]), float(row.memory["latency_p99_s"])
    assert latencies[0] <= p50 <= p99 <= latencies[-1]
    rerun = _row(logs["bm25_again"])
    assert rerun.memory == {"system": "bm25 2 (unit=auto)", "k": 5, **_expected(again)}
    assert (rerun.memory["ingestions"], rerun.memory["cache_hits"]) == (0, 1)
    assert rerun.memory["build_seconds"] == 0
    assert _row(logs["bm25_k3"]).memory["k"] == 3
    assert _row(logs["bm25_k3"]).memory["mean_items"] == 3.0
    # the retrieval metric the table shows for every retrieving run
    assert row.aux["evidence_recall"] == pytest.approx(
        sum(s.scores["evidence_recall"].value for s in built.samples or []) / 10  # type: ignore[index, misc]
    )


def test_markdown_and_csv_carry_them_and_other_runs_stay_blank(
    logs: dict[str, Path], tmp_path: Path
) -> None:
    rows = load_rows([str(logs["bm25"]), str(logs["rag"])])
    assert [r.context for r in rows] == ["memory(bm25, k=5)", "rag(dialog, k=5, bm25)"]
    memory_row, rag_row = rows
    assert rag_row.memory == {}
    lines = markdown_tables(rows, wide=True).splitlines()
    header = [c.strip() for c in lines[2].strip("|").split("|")]
    titles = [
        "memory system", "k", "latency p50 ms", "latency p95 ms", "latency p99 ms",
        "mean items", "empty retrievals", "items cut", "mean context tokens", "histories",
        "ingestions", "cache hits", "build s", "build model calls", "build llm calls",
        "build input tokens", "build output tokens",
    ]  # fmt: skip
    assert header[-len(titles) :] == titles
    assert header[: -len(titles)] == [
        "model", "judge model", "protocol", "context", "task", "n", "F1", "F1 stderr",
        "F1 stderr_clustered", "F1 95% CI", "F1 multi_hop", "F1 temporal", "F1 open_domain",
        "evidence_recall", "prompt_tokens",
    ]  # fmt: skip
    cells = {r: [c.strip() for c in line.strip("|").split("|")] for r, line in zip(
        ("memory", "rag"), lines[4:6], strict=True
    )}  # fmt: skip
    m = memory_row.memory
    assert cells["memory"][-len(titles) :] == [
        "bm25 2 (unit=auto)", "5", f"{1000 * float(m['latency_p50_s']):.3f}",
        f"{1000 * float(m['latency_p95_s']):.3f}", f"{1000 * float(m['latency_p99_s']):.3f}",
        "5.000", "0", "0", f"{float(m['mean_context_tokens']):.3f}", "1", "1", "0",
        f"{float(m['build_seconds']):.3f}", "0", "0", "0", "0",
    ]  # fmt: skip
    assert cells["rag"][-len(titles) :] == [""] * len(titles)

    # a table of runs without a memory system has none of the columns
    rag_only = markdown_tables([_row(logs["rag"])])
    assert "memory system" not in rag_only and "latency" not in rag_only
    assert "memory_system" not in rag_only

    out = tmp_path / "rows.csv"
    write_csv(rows, out)
    with out.open(encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    assert table[0]["memory_system"] == "bm25 2 (unit=auto)"
    assert float(table[0]["memory_latency_p95_s"]) == m["latency_p95_s"]
    assert (table[0]["memory_ingestions"], table[0]["memory_histories"]) == ("1", "1")
    assert all(table[1][k] == "" for k in table[1] if k.startswith("memory_"))
    write_csv([rag_row], out)
    with out.open(encoding="utf-8") as fh:
        assert not any(k.startswith("memory_") for k in next(csv.reader(fh)))


def test_empty_retrievals_are_counted_per_run(logs: dict[str, Path], tmp_path: Path) -> None:
    """The bm25 log rewritten as if the system had found nothing for three questions (their
    samples scored with `memory_items` 0): compare counts three empty retrievals, in the row,
    the default table's context lines and the CSV; the original run has none."""
    from inspect_ai.log import write_eval_log

    log = _log(logs["bm25"])
    assert _row(logs["bm25"]).memory["empty_retrievals"] == 0
    copy = log.model_copy(deep=True)
    for sample in (copy.samples or [])[:3]:
        assert sample.metadata["memory_items"] == 5
        sample.metadata["memory_items"] = 0
    (tmp_path / "empty").mkdir()
    write_eval_log(copy, str(tmp_path / "empty" / "empty.eval"))
    rows = load_rows([str(logs["bm25"]), str(tmp_path / "empty")])
    assert [r.memory["empty_retrievals"] for r in rows] == [0, 3]
    assert rows[1].memory["mean_items"] == 3.5  # (7 x 5 + 3 x 0) / 10
    lines = markdown_tables(rows).splitlines()
    [line] = [ln for ln in lines if ln.startswith("| empty retrievals ")]
    assert [c.strip() for c in line.strip("|").split("|")] == ["empty retrievals", "0", "3"]
    write_csv(rows, tmp_path / "rows.csv")
    with (tmp_path / "rows.csv").open(encoding="utf-8") as fh:
        assert [r["memory_empty_retrievals"] for r in csv.DictReader(fh)] == ["0", "3"]


def test_lm_eval_samples_with_memory_records(logs: dict[str, Path], tmp_path: Path) -> None:
    """An lm-eval run folder (samples file with the documents' memory records, results file
    with its --metadata): the same figures; lm-eval does not record the system's version."""
    log = _log(logs["bm25"])
    run = tmp_path / "lm" / "dummy"
    run.mkdir(parents=True)
    stamp = "2026-01-01T00-00-00.000000"
    records = [
        {
            "doc_id": n,
            "doc": {"id": str(s.id), "metadata": json.dumps(s.metadata)},
            "metrics": ["f1"],  # as lm-eval writes it: the names of the per-document metrics
            "f1": 0.5,
        }
        for n, s in enumerate(log.samples or [])
    ]
    (run / f"samples_locomo_temporal_{stamp}.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    results = {
        "config": {"model": "dummy", "model_args": ""},
        "configs": {"locomo_temporal": {"metadata": {"version": 1.0, "memory": "bm25"}}},
    }
    (run / f"results_{stamp}.json").write_text(json.dumps(results), encoding="utf-8")
    [row] = load_rows([str(tmp_path / "lm")])
    assert (row.framework, row.context) == ("lm-eval", "memory(bm25, k=5)")
    assert row.memory == {"system": "bm25", "k": 5, **_expected(log)}


def test_paired_comparison_of_memory_systems(logs: dict[str, Path]) -> None:
    """Two systems differ in one declared factor, the memory system: that comparison is fair
    and names its runs by their systems; so is a different k (the context settings) or a
    context that came from no system. Two factors at once are refused."""
    bm25, embedding, k3, rag = load_runs(
        [str(logs["bm25"]), str(logs["embedding"]), str(logs["bm25_k3"]), str(logs["rag"])]
    )
    assert bm25.label.startswith("mockllm/model + memory bm25 2 (")
    assert embedding.label.startswith("mockllm/model + memory embedding 2 (")
    assert rag.label.startswith("mockllm/model (")
    systems = compare_runs(bm25, embedding, resamples=100)
    assert [str(m) for m in systems.differences] == [
        "memory system: A='bm25 2 (unit=auto)', "
        "B='embedding 2 (embedding_model=all-MiniLM-L6-v2, unit=auto)'"
    ]
    assert systems.mismatches == () and systems.factor is not None
    assert (systems.name_a, systems.name_b) == (
        "memory=bm25 2 (unit=auto)",
        "memory=embedding 2 (embedding_model=all-MiniLM-L6-v2, unit=auto)",
    )
    assert [str(m) for m in find_mismatches(bm25, k3, ["f1"])] == [
        "context settings: top_k: A=5, B=3"
    ]
    k = compare_runs(bm25, k3, resamples=100)
    assert k.mismatches == () and (k.name_a, k.name_b) == ("top_k=5", "top_k=3")
    named = [str(m) for m in find_mismatches(bm25, rag, ["f1"])]
    assert "context settings: context: A='memory', B='rag'" in named
    modes = compare_runs(bm25, rag, resamples=100)
    assert modes.mismatches == ()
    assert (modes.name_a, modes.name_b) == ("context=memory(bm25 2 (unit=auto))", "context=rag")
    # another system and another k: two factors, refused
    both = compare_runs(embedding, k3, resamples=100)
    assert {m.factor for m in both.mismatches} == {"context", "memory system"}

"""Judging failures are one line (issue 40, item 5), through the real CLIs:

- `inspect score` with a judge of the other protocol: `memevals/official_judge` on a
  protocol=memevals log and `memevals/llm_judge` on an official log are both refused with one
  message naming the scorer to use, before any sample is judged; no scored log is written;
- `memevals-judge` with a grader that fails every call, or one that cannot be built: one line
  (`error: ...`) naming the benchmark or the grader, exit status 1, no traceback;
- `memevals-judge-agreement` on a file that is no Inspect log, and `memevals-judge` on an Inspect
  log or a file that is not text: one line naming the file (and, for a log, the command to use).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_python

from memevals.tools.judge_agreement import main as agreement_main

LOCOMO = ["memevals/locomo", "--model", "mockllm/model", "--limit", "1", "--display", "none"]


def _squeezed(text: str) -> str:
    return "".join(text.split())


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One LoCoMo question under each protocol (mockllm, no judge asked)."""
    from cli_support import run_inspect_cli

    folder = tmp_path_factory.mktemp("protocol-logs")
    out: dict[str, Path] = {}
    for protocol in ("official", "memevals"):
        done = run_inspect_cli(
            ["eval", *LOCOMO, "-T", f"protocol={protocol}", "--log-dir", protocol], cwd=folder
        )
        assert done.returncode == 0, done.stderr[-3000:]
        (out[protocol],) = (folder / protocol).glob("*.eval")
    return out


@pytest.mark.parametrize(
    ("log", "scorer", "use"),
    [
        ("memevals", "memevals/official_judge", "memevals/llm_judge"),
        ("official", "memevals/llm_judge", "memevals/official_judge"),
    ],
)
def test_a_judge_of_the_other_protocol_is_refused(
    inspect_cli: Any, tmp_path: Path, logs: dict[str, Path], log: str, scorer: str, use: str
) -> None:
    scored = tmp_path / "scored.eval"
    res = inspect_cli(
        "score", str(logs[log]), "--scorer", scorer, "--model", "mockllm/model",
        "--action", "append", "--output-file", str(scored),
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    message = (
        f"Error: {scorer}: sample conv-26-q0 was built under protocol={log}, which {scorer} does "
        f"not judge: re-judge the log with --scorer {use}"
    )
    assert _squeezed(out) == _squeezed(message), out
    assert not scored.exists()


@pytest.fixture(scope="module")
def samples_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lm-eval's --log_samples output of two LoCoMo temporal questions (protocol=memevals)."""
    pytest.importorskip("lm_eval")
    from lm_eval_support import write_lm_eval_samples

    from memevals.benchmarks.locomo.data import load_locomo
    from memevals.benchmarks.locomo.memory import no_context
    from memevals.benchmarks.locomo.prompts import build_items

    items = [
        i for i in build_items(load_locomo(), context=no_context, context_mode="none")
        if i.metadata["category"] == "temporal"
    ][:2]  # fmt: skip
    answers = {i.as_text(): "no idea" for i in items}
    metadata = {"context": "none", "protocol": "memevals"}
    out = tmp_path_factory.mktemp("lm-eval-out")
    return write_lm_eval_samples(["locomo_temporal"], answers, metadata, out, 2)


def _judge(tmp_path: Path, samples: Path, *grader: str) -> tuple[int, str]:
    """The memevals-judge command line, the faulty provider registered first."""
    script = tmp_path / "judge_cli.py"
    script.write_text(
        "import sys\n\nimport faulty_model  # noqa: F401\n"
        "from memevals.tools.judge import main\n\nsys.exit(main(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    cmd = [sys.executable, str(script), str(samples), "--grader", *grader]
    done = run_python([*cmd, "--log-dir", str(tmp_path / "logs")], timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_memevals_judge_failures_are_one_line(tmp_path: Path, samples_dir: Path) -> None:
    code, out = _judge(
        tmp_path, samples_dir, "faulty/grader", "-M", "fault_rate=1", "-M", "faults=fatal"
    )
    assert code == 1, out[-3000:]
    (line,) = out.strip().splitlines()
    assert line.startswith("error: locomo: judging with faulty/grader failed: ")
    (log,) = (tmp_path / "logs").glob("*.eval")
    assert line.endswith(f"(log: {log})")
    assert "Traceback" not in out
    code, out = _judge(tmp_path, samples_dir, "nosuch/model")
    assert code == 1, out[-3000:]
    assert out.strip() == (
        "error: --grader nosuch/model: ValueError: Model API nosuch of model 'nosuch/model' not "
        "recognized."
    )


def test_judge_agreement_names_a_file_that_is_no_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "notes.eval"
    bad.write_text("not a log\n", encoding="utf-8")
    assert agreement_main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: not an Inspect log (") and err.count("\n") == 1


def test_memevals_judge_names_an_inspect_log_a_results_file_and_a_binary_file(
    tmp_path: Path, logs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from memevals.tools.judge import main as judge_main

    log = logs["memevals"]
    assert judge_main([str(log), "--grader", "mockllm/model"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: {log}: an Inspect log, not lm-eval samples; re-judge it with inspect score "
        f"{log} --scorer memevals/llm_judge (or memevals/official_judge for a protocol=official "
        "run)\n"
    )
    binary = tmp_path / "samples_locomo_2026.jsonl"
    binary.write_bytes(b"\n\xed\xa0\x80 not text\n")
    assert judge_main([str(binary), "--grader", "mockllm/model"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: {binary}:2: not UTF-8 text, so not a JSON-lines file (invalid continuation byte)\n"
    )
    results = tmp_path / "results_2026-12-03T10-00-00.json"
    results.write_text('{"results": {}}\n', encoding="utf-8")
    assert judge_main([str(results), "--grader", "mockllm/model"]) == 2
    assert capsys.readouterr().err == (
        f"error: {results}: lm-eval's results file, which holds no replies; pass the "
        f"samples_*.jsonl files beside it (run with --log_samples) or their folder {tmp_path}\n"
    )


def test_a_fresh_inspect_score_process_rejudges_an_official_log(
    inspect_cli: Any, tmp_path: Path, logs: dict[str, Path]
) -> None:
    """The upstream label rule a LoCoMo request names (LoCoMo-Plus's) is registered by its
    benchmark's module, which a process that only re-scores never imported on its own."""
    from inspect_ai.log import read_eval_log

    scored = tmp_path / "scored.eval"
    res = inspect_cli(
        "score", str(logs["official"]), "--scorer", "memevals/official_judge",
        "--model-role", "grader=mockllm/other", "--action", "append",
        "--output-file", str(scored), process=True,
    )  # fmt: skip
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    [sample] = read_eval_log(str(scored)).samples or []
    judged = sample.scores["official_judge"] if sample.scores else None
    assert judged is not None and judged.metadata is not None
    # mockllm's reply is no verdict: the label is upstream's default, counted as unclear
    assert judged.value == {"judge": 0.0, "unscored": 0.0, "unclear": 1.0}, judged.value

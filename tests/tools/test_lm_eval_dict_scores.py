"""lm-eval metrics that are keys of a dict-valued Inspect score (the event summary's ROUGE, the
dialogue's BLEU/ROUGE-L, LongMemEval's rag recall and nDCG) reach memevals-compare,
memevals-diff and memevals-report from an lm-eval samples folder, with the figures the Inspect
log of the same replies gives. Before, the reader kept only metrics named as a score's label:
compare printed the header alone, diff said "No score is shared" and the report "the runs
have no answer, judge or retrieval score".

Each benchmark runs twice on the same few samples with the same replies: the real `lm_eval`
command line (a `table` model replying by document id) and Inspect in this process (mockllm
replying by prompt text, which also fails on a prompt lm-eval did not send).
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lm_eval")

from cli_support import run_python
from inspect_ai import Task
from inspect_ai.model import get_model
from lm_eval_support import inspect_prompt, run_inspect

from memevals.core.benchmark import Benchmark, LmEvalMetric, LmEvalSpec, ScoreSpec
from memevals.inspect_tasks.locomo_dialogue import locomo_dialogue
from memevals.inspect_tasks.locomo_event_summary import locomo_event_summary
from memevals.inspect_tasks.longmemeval import longmemeval
from memevals.lm_eval_tasks import include_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

_TABLE_LM = '''
"""The real lm-eval CLI with a `memevals_dict_table` model replying from a JSON file (doc id ->
reply). The CLI runs in the test's process: a second run finds the model registered."""
from lm_eval.api.model import LM
from lm_eval.api.registry import model_registry


class TableLM(LM):
    def __init__(self, replies="", **kwargs):
        import json

        super().__init__()
        with open(replies, encoding="utf-8") as fh:
            self.replies = json.load(fh)

    @classmethod
    def create_from_arg_string(cls, arg_string, additional_config=None):
        return cls(**dict(kv.split("=", 1) for kv in arg_string.split(",") if kv))

    def generate_until(self, requests, disable_tqdm=False):
        return [self.replies[r.doc["id"]] for r in requests]

    def loglikelihood(self, requests, disable_tqdm=False):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError

if model_registry.get("memevals_dict_table", None) is None:
    model_registry.register("memevals_dict_table")(TableLM)
from lm_eval.__main__ import cli_evaluate
cli_evaluate()
'''


def _first_words(text: str) -> str:
    """A reply sharing some words with the reference (non-zero overlap scores)."""
    return " ".join(text.split()[:8])


#: benchmark -> (Inspect task, lm-eval task, lm-eval --metadata, the scores both must show)
CASES: dict[str, tuple[Callable[[], Task], str, dict[str, Any], set[str]]] = {
    "event_summary": (
        lambda: locomo_event_summary(conversations="conv-26"),
        "locomo_event_summary",
        {"conversations": "conv-26"},
        {"rouge1", "rouge2", "rougeL"},
    ),
    "dialogue": (
        lambda: locomo_dialogue(bertscore=False, conversations="conv-26", turns_per_conversation=3),
        "locomo_dialogue",
        {"conversations": "conv-26", "turns_per_conversation": 3},
        {"bleu1", "bleu2", "rougeL"},
    ),
    "longmemeval_rag": (
        lambda: longmemeval(
            variant="s",
            categories="single_session_user",
            context="rag",
            data_dir=str(FIXTURES),
            verify_checksum=False,
        ),
        "longmemeval_s_single_session_user",
        {"context": "rag", "data_dir": str(FIXTURES), "verify_checksum": False},
        {f"{m}@{k}" for k in (5, 10) for m in ("recall_any", "recall_all", "ndcg_any")},
    ),
}


def _both_runs(case: str, tmp_path: Path) -> tuple[Path, Path]:
    """(the Inspect log, the lm-eval output folder) of the same replies to the same samples."""
    make_task, lm_task, metadata, _ = CASES[case]
    task = make_task()
    samples = list(task.dataset)
    replies = {
        str(s.id): _first_words(" ".join(s.target) if isinstance(s.target, list) else s.target)
        for s in samples
    }
    table = {inspect_prompt(s.input): replies[str(s.id)] for s in samples}  # type: ignore[arg-type]
    log = run_inspect(
        task, table, tmp_path / "inspect", roles={"grader": get_model("mockllm/model")}
    )
    (tmp_path / "replies.json").write_text(json.dumps(replies), encoding="utf-8")
    (tmp_path / "table_lm.py").write_text(_TABLE_LM, encoding="utf-8")
    out = tmp_path / "lm" / "out"
    out.parent.mkdir()
    proc = run_python(
        [
            sys.executable,
            str(tmp_path / "table_lm.py"),
            *(
                "--model",
                "memevals_dict_table",
                "--model_args",
                f"replies={tmp_path / 'replies.json'}",
            ),
            *("--tasks", lm_task, "--metadata", json.dumps(metadata)),
            *("--include_path", include_path(), "--output_path", str(out), "--log_samples"),
        ],
        cwd=out.parent,
        env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    [lm_dir] = [p for p in out.iterdir() if p.is_dir()]
    return Path(log.location), lm_dir


@pytest.mark.parametrize("case", list(CASES))
def test_lm_eval_dict_score_keys_match_the_inspect_run(
    case: str, data_dir: Path, tmp_path: Path
) -> None:
    inspect_log, lm_dir = _both_runs(case, tmp_path)
    expected = CASES[case][3]

    # diff: every expected score is shared, question by question, with no difference
    paired = tmp_path / "paired.json"
    proc = run_python(
        [
            *(sys.executable, "-m", "memevals.tools.diff", str(inspect_log), str(lm_dir)),
            *("--json", str(paired), "--resamples", "200"),
        ],
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    [comparison] = json.loads(paired.read_text(encoding="utf-8"))
    assert expected <= set(comparison["scores"]), sorted(comparison["scores"])
    for name in expected:
        overall = comparison["scores"][name]["rows"][0]
        assert overall["category"] == "overall" and overall["n"] > 0
        assert overall["mean_a"] == pytest.approx(overall["mean_b"], abs=1e-12), name
        assert overall["difference"] == pytest.approx(0.0, abs=1e-12), name
        # sample by sample: neither run is better on any question
        assert (overall["a_better"], overall["b_better"]) == (0, 0), name
    # the replies overlap their references: the figures are not all zero
    assert any(comparison["scores"][n]["rows"][0]["mean_a"] > 0 for n in expected)

    # compare: the lm-eval run's row has the figures of the Inspect run's row
    csv_path = tmp_path / "compare.csv"
    proc = run_python(
        [
            *(sys.executable, "-m", "memevals.tools.compare", str(inspect_log), str(lm_dir)),
            *("--csv", str(csv_path), "--no-png"),
        ],
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    with csv_path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    [lm_row] = [r for r in rows if r["task"].startswith("lm-eval")]
    [inspect_row] = [r for r in rows if not r["task"].startswith("lm-eval")]
    for name in expected:
        assert lm_row[name] != "", name
        assert float(lm_row[name]) == pytest.approx(float(inspect_row[name]), abs=1e-12), name
    # and so do the other columns it has of those scores (stderr, clustered stderr, interval)
    columns = [c for c in rows[0] if any(c == n or c.startswith(f"{n}_") for n in expected)]
    assert {c: lm_row[c] for c in columns} == {c: inspect_row[c] for c in columns}

    # report: the lm-eval run alone has scores to report (LongMemEval's unjudged run: its
    # retrieval figures alone)
    proc = run_python(
        [
            sys.executable,
            "-m",
            "memevals.tools.report",
            str(lm_dir),
            "-o",
            str(tmp_path / "r.html"),
        ],
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert all(name in html for name in expected)


def test_a_metric_naming_no_declared_score_is_refused() -> None:
    spec = LmEvalSpec(
        custom_dataset="m.docs",
        process_results="m.results",
        metric_list=(LmEvalMetric("rouge1", score="summary_scorer"),),
    )
    with pytest.raises(ValueError) as err:
        Benchmark(
            name="toy",
            title="toy",
            version="1",
            folder=FIXTURES,
            tasks=(),
            scores=(ScoreSpec("event_summary_scorer", "answer", "summary"),),
            lm_eval=spec,
        )
    assert str(err.value) == (
        "benchmark 'toy': lm-eval metric 'rouge1' names score 'summary_scorer', which is not "
        "one of its scores ['event_summary_scorer']"
    )

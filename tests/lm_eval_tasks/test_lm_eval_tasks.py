"""The lm-eval tasks: task index, the real `lm_eval` CLI offline, options, LongMemEval, SmolLM2."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lm_eval")

from cli_support import run_python
from lm_eval import simple_evaluate
from lm_eval.api.model import LM
from lm_eval.tasks import TaskManager
from lm_eval_support import run_lm_eval_cli, samples_of

from memevals.core.prompt_item import PromptItem
from memevals.lm_eval_tasks import include_path
from memevals.lm_eval_tasks.locomo.utils import locomo_docs
from memevals.lm_eval_tasks.locomo_event_summary.utils import event_summary_docs
from memevals.lm_eval_tasks.longmemeval.utils import longmemeval_docs
from memevals.lm_eval_tasks.option_checks import OptionError
from memevals.scorers import locomo_f1

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"

LOCOMO_CATEGORIES = ["single_hop", "multi_hop", "temporal", "open_domain", "adversarial"]
LME_TYPES = [
    "single_session_user",
    "single_session_assistant",
    "single_session_preference",
    "multi_session",
    "temporal_reasoning",
    "knowledge_update",
]


def test_module_prints_the_include_path() -> None:
    proc = run_python([sys.executable, "-m", "memevals.lm_eval_tasks"])
    assert proc.returncode == 0, proc.stderr
    folder = Path(proc.stdout.strip())
    assert folder == Path(include_path())
    assert (folder / "locomo" / "locomo.yaml").is_file()


def test_every_task_and_group_is_indexed() -> None:
    tm = TaskManager(include_path=include_path(), include_defaults=False)
    names = set(tm.all_tasks)
    expected = {"locomo", "locomo_plus", "locomo_event_summary"}
    expected |= {f"locomo_{c}" for c in LOCOMO_CATEGORIES}
    expected |= {f"locomo_plus_{c}" for c in [*LOCOMO_CATEGORIES, "cognitive"]}
    for variant in ("oracle", "s", "m"):
        expected |= {f"longmemeval_{variant}"}
        expected |= {f"longmemeval_{variant}_{c}" for c in [*LME_TYPES, "abstention"]}
    assert expected <= names, sorted(expected - names)
    # templates (no `task` key) are not tasks
    assert not any(n.startswith("_") for n in names)


def test_lm_eval_cli_dummy_model_offline(data_dir: Path, tmp_path: Path) -> None:
    """Acceptance: `lm_eval --model dummy --tasks locomo --limit 20` runs without network."""
    from memevals.benchmarks.locomo import samples
    from memevals.benchmarks.locomo.prompts import prediction_for_scoring

    run_dir = run_lm_eval_cli(["--model", "dummy", "--tasks", "locomo", "--limit", "20"], tmp_path)
    [results_file] = run_dir.glob("results_*.json")
    results = json.loads(results_file.read_text())

    items = samples.build(samples.LocomoOptions()).items  # the default protocol, official
    all_f1: list[float] = []
    for category in LOCOMO_CATEGORIES:
        task = f"locomo_{category}"
        assert results["n-samples"][task]["effective"] == 20
        logged = samples_of(run_dir, task)
        expected = [i for i in items if i.metadata["category"] == category][:20]
        assert [s["doc"]["id"] for s in logged] == [i.id for i in expected]
        for sample, item in zip(logged, expected, strict=True):
            # the prompt is the Inspect text; the score is the official F1 of the reply
            assert sample["arguments"]["gen_args_0"]["arg_0"] == item.as_text()
            md = item.metadata
            prediction = prediction_for_scoring(sample["filtered_resps"][0], md)
            assert sample["f1"] == locomo_f1(prediction, md["answer"], md["category_id"])
            all_f1.append(sample["f1"])
        assert results["results"][task]["f1,none"] == pytest.approx(
            sum(s["f1"] for s in logged) / 20, abs=1e-12
        )
    assert results["groups"]["locomo"]["f1,none"] == pytest.approx(sum(all_f1) / 100, abs=1e-12)


def test_misspelt_or_misplaced_options_fail_clearly(data_dir: Path) -> None:
    with pytest.raises(OptionError, match=r"'topk' is not an option; did you mean 'top_k'"):
        locomo_docs("temporal", context="rag", topk=3)
    with pytest.raises(OptionError, match=r"locomo\[temporal\]: top_k applies only to context=rag"):
        locomo_docs("temporal", context="full", top_k=3)
    with pytest.raises(OptionError, match="chain_of_note"):
        longmemeval_docs("oracle", "multi_session", chain_of_note=True)
    with pytest.raises(OptionError, match="incremental summarisation"):
        event_summary_docs(incremental=True)
    with pytest.raises(OptionError, match=r"locomo_event_summary: conversations='conv-1'"):
        event_summary_docs(conversations="conv-1")
    with pytest.raises(OptionError, match=r"option 'sessions' must be a whole number, got '3\.5'"):
        event_summary_docs(sessions="3.5")
    # model arguments and lm-eval's own keys are ignored, not errors
    docs = locomo_docs("temporal", pretrained="x", device="cpu", version=1.0, context="none")
    assert docs["test"].num_rows == 321
    assert docs["test"][0]["system"] == ""


def test_choice_seed_orders_options_and_model_seed_does_not(data_dir: Path) -> None:
    def orders(**options: Any) -> list[Any]:
        docs = locomo_docs("adversarial", context="none", **options)["test"]
        return [json.loads(m)["choices"] for m in docs["metadata"][:40]]

    default = orders()
    assert orders(seed=123) == default  # a model argument (e.g. vLLM's seed) changes nothing
    assert orders(choice_seed=123) != default


class Echo(LM):  # type: ignore[misc]
    """Replies with a fixed text; records the prompts."""

    def __init__(self, reply: str) -> None:
        super().__init__()
        self.reply = reply
        self.prompts: list[str] = []

    def generate_until(self, requests: Any, disable_tqdm: bool = False) -> list[str]:
        self.prompts += [r.args[0] for r in requests]
        return [self.reply for _ in requests]

    def loglikelihood(self, requests: Any, disable_tqdm: bool = False) -> list[Any]:
        raise NotImplementedError

    def loglikelihood_rolling(self, requests: Any, disable_tqdm: bool = False) -> list[Any]:
        raise NotImplementedError


def test_longmemeval_groups_on_the_fixture_with_rag_metrics() -> None:
    from memevals.benchmarks.longmemeval.data import iter_longmemeval
    from memevals.benchmarks.longmemeval.memory import longmemeval_memory
    from memevals.benchmarks.longmemeval.retrieval import headline_keys
    from memevals.core.memory_options import MemoryOptions

    metadata = {
        "data_dir": str(FIXTURES),
        "verify_checksum": False,
        "context": "rag",
        "retrieval_unit": "turn",
        "top_k": 2,
    }
    lm = Echo("I don't know.")
    results = simple_evaluate(
        model=lm,
        tasks=["longmemeval_oracle", "longmemeval_oracle_abstention"],
        task_manager=TaskManager(
            include_path=include_path(), include_defaults=False, metadata=metadata
        ),
        log_samples=True,
        bootstrap_iters=0,
    )
    assert results is not None
    instances = list(iter_longmemeval("oracle", FIXTURES, verify_checksum=False))
    memory = longmemeval_memory(MemoryOptions("rag", retrieval_unit="turn", top_k=2))
    by_id = {i.question_id: i for i in instances}

    group_ids = [
        s["doc"]["id"] for t in LME_TYPES for s in results["samples"][f"longmemeval_oracle_{t}"]
    ]
    assert sorted(group_ids) == sorted(by_id)  # every question once in the group
    abstention_ids = [s["doc"]["id"] for s in results["samples"]["longmemeval_oracle_abstention"]]
    assert abstention_ids and all(by_id[i].is_abstention for i in abstention_ids)
    assert results["groups"]["longmemeval_oracle"]["sample_len"] == len(instances)

    keys = headline_keys("turn")
    scored = 0
    for t in LME_TYPES:
        for s in results["samples"][f"longmemeval_oracle_{t}"]:
            ctx = memory(by_id[s["doc"]["id"]])
            if ctx.retrieval_scores is None:  # _abs or no gold: skipped, as officially
                assert not any(k in s for k in keys)
                continue
            scored += 1
            assert {k: s[k] for k in keys} == {k: ctx.retrieval_scores[k] for k in keys}
            assert s["prompt_tokens"] > 0
    assert scored >= 5
    assert any("Current Date:" in p for p in lm.prompts)


def test_locomo_plus_cognitive_has_no_f1_but_cue_recall(data_dir: Path) -> None:
    lm = Echo("That sounds lovely.")
    results = simple_evaluate(
        model=lm,
        tasks=["locomo_plus_cognitive"],
        task_manager=TaskManager(
            include_path=include_path(),
            include_defaults=False,
            metadata={"context": "oracle", "protocol": "memevals"},
        ),
        limit=5,
        log_samples=True,
        bootstrap_iters=0,
    )
    assert results is not None
    row = results["results"]["locomo_plus_cognitive"]
    assert "f1,none" not in row
    assert row["cue_recall,none"] == 1.0  # oracle shows exactly the cue
    samples = results["samples"]["locomo_plus_cognitive"]
    assert [s["doc"]["id"] for s in samples] == [f"plus-{i}" for i in range(5)]


@pytest.mark.slow
def test_lm_eval_cli_smollm2_on_cpu(smollm2_dir: Path, data_dir: Path, tmp_path: Path) -> None:
    """A real model through lm-eval's HF backend with its chat template, a few questions."""
    from memevals.benchmarks.locomo.prompts import prediction_for_scoring

    run_dir = run_lm_eval_cli(
        [
            "--model",
            "hf",
            "--model_args",
            f"pretrained={smollm2_dir},dtype=float32",
            "--device",
            "cpu",
            "--tasks",
            "locomo_single_hop,locomo_adversarial",
            "--limit",
            "1",
            "--metadata",
            json.dumps({"context": "none"}),
            "--apply_chat_template",
            # a short answer keeps this CPU run quick; the task's own limit is 32 tokens
            "--gen_kwargs",
            "max_gen_toks=12",
        ],
        tmp_path,
    )
    for task in ("locomo_single_hop", "locomo_adversarial"):
        logged = samples_of(run_dir, task)
        assert len(logged) == 1
        for s in logged:
            prompt = s["arguments"]["gen_args_0"]["arg_0"]
            item = PromptItem(s["doc"]["id"], s["doc"]["system"], s["doc"]["user"], "")
            assert item.as_text() in prompt and prompt.startswith("<|im_start|>")
            reply = s["filtered_resps"][0]
            assert isinstance(reply, str) and reply.strip()
            md = json.loads(s["doc"]["metadata"])
            prediction = prediction_for_scoring(reply, md)
            assert s["f1"] == locomo_f1(prediction, md["answer"], md["category_id"])


def test_locomo_plus_sample_order_matches_the_inspect_task(data_dir: Path) -> None:
    from memevals.inspect_tasks.locomo_plus import locomo_plus_cognitive
    from memevals.lm_eval_tasks.locomo_plus.utils import locomo_plus_docs

    quick = {"context": "none", "protocol": "memevals"}
    docs = locomo_plus_docs("cognitive", sample_order="host", **quick)["test"]
    inspect_ids = [str(s.id) for s in locomo_plus_cognitive(sample_order="host", **quick).dataset]
    assert docs["id"] == inspect_ids
    assert locomo_plus_docs("cognitive", **quick)["test"]["id"] == [f"plus-{i}" for i in range(401)]
    with pytest.raises(OptionError, match="sample_order='shuffled' is not one of file, host"):
        locomo_plus_docs("cognitive", sample_order="shuffled")

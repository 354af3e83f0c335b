"""LongMemEval context=truncated: the official rule (keep the beginning of the history, cut to
window − answer length − 1000 tokens), the token-exact cut itself, prompt sizes, and runs through
Inspect (in process and the real CLI) and lm-eval on the fixture."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import bpe_openai
import pytest
from cli_support import run_python
from inspect_ai import eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessageSystem, get_model
from logged_figures import figures
from longmemeval_grader import EXPECTED, mock_grader

from memevals.benchmarks.longmemeval.data import Instance, iter_longmemeval
from memevals.benchmarks.longmemeval.memory import (
    LongMemEvalMemory,
    history_text,
    longmemeval_memory,
    session_blocks,
)
from memevals.benchmarks.longmemeval.prompts import question_text
from memevals.benchmarks.longmemeval.samples import build_item
from memevals.core.memory_options import MemoryOptions
from memevals.core.tokens import get_token_counter
from memevals.inspect_tasks.longmemeval import longmemeval

TESTS = Path(__file__).resolve().parents[2]
FIXTURES = TESTS / "fixtures"
# these tests check our own prompts and judge (protocol=memevals; tests/benchmarks/longmemeval
# checks the official protocol)
FX = {"data_dir": str(FIXTURES), "verify_checksum": False, "protocol": "memevals"}
CL100K = bpe_openai.get_encoding("cl100k_base")


def instances(variant: str) -> dict[str, Instance]:
    return {i.question_id: i for i in iter_longmemeval(variant, FIXTURES, verify_checksum=False)}


def memory(**options: Any) -> LongMemEvalMemory:
    """The strategy from flat options, as the tasks take them (memory ones and LongMemEval's)."""
    shared = MemoryOptions.names()
    return longmemeval_memory(
        MemoryOptions.from_mapping(options),
        **{k: v for k, v in options.items() if k not in shared},
    )


def official_cut(text: str, budget: int) -> str:
    """The official reader's rule stated directly: the first `budget` tokens, decoded."""
    return str(CL100K.decode(CL100K.encode_ordinary(text)[:budget]))


# ------------------------------------------------------------------------------ the cut itself


@pytest.mark.parametrize("budget", [0, 1, 2, 7, 40, 150, 600])
def test_head_equals_the_first_n_tokens_decoded(budget: int) -> None:
    inst = instances("s")["fx14c9d0"]
    full = history_text(session_blocks(inst.sessions))
    text, kept_tokens, total = get_token_counter("cl100k_base").head(full, budget)
    assert total == len(CL100K.encode_ordinary(full))
    assert kept_tokens == len(CL100K.encode_ordinary(text))
    assert text == official_cut(full, budget)
    assert full.startswith(text)
    assert len(CL100K.encode_ordinary(text)) <= budget


def test_head_of_a_text_that_fits_is_the_text() -> None:
    counter = get_token_counter("cl100k_base")
    assert counter.head("a short history", 100) == ("a short history", 3, 3)
    assert counter.head("", 5) == ("", 0, 0)
    with pytest.raises(ValueError, match="max_tokens must be >= 0"):
        counter.head("x", -1)


def test_head_never_splits_a_character_or_exceeds_the_budget() -> None:
    """Emoji take several tokens each: a cut inside one drops its partial bytes, and a cut
    that re-tokenizes differently is shrunk until the kept text is within the budget."""
    counter = get_token_counter("cl100k_base")
    text = "note 😀🦜 ünïcode " * 20
    for budget in range(0, 120):
        kept, kept_tokens, total = counter.head(text, budget)
        assert text.startswith(kept), budget
        assert kept_tokens == counter(kept), budget
        assert counter(kept) <= budget, budget
        assert "\ufffd" not in kept
        assert total == counter(text)
    # maximal: one more character would not fit (or the text is exhausted)
    kept, _, _ = counter.head(text, 50)
    assert counter(text[: len(kept) + 1]) > 50


def test_head_of_texts_longer_than_one_counting_piece() -> None:
    """bpe-openai refuses inputs over 1M characters, so long texts are counted in pieces; the
    cut falls in the second piece and still keeps exactly the beginning."""
    counter = get_token_counter("cl100k_base")
    line = "user: I moved to Lisbon in March and started learning the ukulele.\n"
    text = line * (1_500_000 // len(line))
    per_line = len(CL100K.encode_ordinary(line))
    budget = per_line * 17_000 + 5  # beyond the first 1M-character piece
    kept, kept_tokens, total = counter.head(text, budget)
    assert kept_tokens == budget
    assert total == counter(text) == per_line * (len(text) // len(line))  # lines add up
    assert text.startswith(kept) and len(kept) > 1_000_000
    assert counter(kept) == budget
    assert kept == line * 17_000 + official_cut(line, 5)


def test_approx_counter_head_keeps_whole_pieces() -> None:
    counter = get_token_counter("approx")
    kept, kept_tokens, total = counter.head("One two, three 456789!", 4)
    assert (kept, kept_tokens, total) == (
        "One two, three",
        4,
        7,
    )  # One | two | , | three | 456 | 789 | !
    assert counter(kept) == 4


# ------------------------------------------------------------------------------ the strategy


def test_budget_is_window_minus_answer_minus_1000() -> None:
    assert memory(context="truncated").max_context_tokens == 128_000 - 500 - 1000
    window = memory(context="truncated", context_window=8192, answer_tokens=256)
    assert window.max_context_tokens == 8192 - 256 - 1000
    assert memory(context="truncated", max_context_tokens=333).max_context_tokens == 333
    assert window.settings() == {
        "context": "truncated",
        "history_format": "json",
        "token_counter": "cl100k_base",
        "max_context_tokens": 6936,
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"context": "full", "max_context_tokens": 100}, "applies only to context=truncated"),
        ({"context": "rag", "context_window": 8000}, "applies only to context=truncated"),
        (
            {"context": "truncated", "max_context_tokens": 100, "context_window": 8000},
            "not both",
        ),
        ({"context": "truncated", "max_context_tokens": 0}, "positive integer"),
        ({"context": "truncated", "context_window": 1400}, "leaves no room for the history"),
        ({"context": "truncated", "token_counter": "words"}, "token_counter='words'"),
    ],
)
def test_bad_truncation_options(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        memory(**kwargs)


def test_truncated_context_keeps_the_oldest_sessions_within_the_budget() -> None:
    inst = instances("s")["fx14c9d0"]
    full = history_text(session_blocks(inst.sessions))
    counter = get_token_counter()
    n_full = counter(full)
    budget = n_full // 2
    strategy = memory(context="truncated", max_context_tokens=budget)
    ctx = strategy(inst)
    assert ctx.system_text == official_cut(full, budget)
    assert ctx.history_tokens == n_full
    # the shown sessions are the oldest ones, the last of them possibly cut short
    chronological = [b.session_id for b in session_blocks(inst.sessions)]
    shown = [b.session_id for b in ctx.blocks]
    assert 0 < len(shown) < len(chronological)
    assert shown == chronological[: len(shown)]
    assert f"### Session {len(shown)}\n" in ctx.system_text
    assert f"### Session {len(shown) + 1}\n" not in ctx.system_text

    item = build_item(inst, strategy, variant="s")  # protocol=memevals: one user message
    assert (item.system, item.user) == ("", f"{ctx.system_text}\n\n{question_text(inst)}")
    md = item.metadata
    assert md["history_truncated"] is True and md["history_tokens"] == n_full
    assert md["prompt_tokens"] == counter(item.user)
    assert md["prompt_tokens"] <= budget + counter("\n\n" + question_text(inst))
    assert md["session_ids_shown"] == shown

    roomy = build_item(inst, memory(context="truncated", max_context_tokens=n_full), variant="s")
    assert roomy.user == f"{full}\n\n{question_text(inst)}"
    assert roomy.metadata["history_truncated"] is False


def test_a_budget_without_room_for_any_session_is_a_clear_error() -> None:
    inst = instances("s")["fx14c9d0"]
    with pytest.raises(ValueError, match="fx14c9d0: max_context_tokens=20 leaves no room"):
        memory(context="truncated", max_context_tokens=20)(inst)


# ------------------------------------------------------------------------------ through Inspect


def _run(tmp_path: Path, **kwargs: Any) -> EvalLog:
    (log,) = eval(
        longmemeval(**FX, **kwargs),
        model="mockllm/model",
        model_roles={"grader": get_model("mockllm/model", custom_outputs=mock_grader())},
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    return log


def test_inspect_truncated_run_sends_the_cut_history(tmp_path: Path) -> None:
    log = _run(tmp_path, variant="m", context="truncated", context_window=1800, max_tokens=100)
    assert log.eval.metadata is not None
    assert log.eval.metadata["context"] == "truncated"
    assert log.eval.metadata["max_context_tokens"] == 700
    counter = get_token_counter()
    by_id = instances("m")
    assert log.samples is not None and len(log.samples) == len(by_id)
    truncated = 0
    for sample in log.samples:
        inst = by_id[str(sample.id)]
        # one user message: the cut history, a blank line, then the question
        [user] = [m for m in sample.messages if m.role == "user"]
        history, blank, _ = user.text.rpartition("\n\nCurrent Date: ")
        assert blank and not any(isinstance(m, ChatMessageSystem) for m in sample.messages)
        assert history == official_cut(history_text(session_blocks(inst.sessions)), 700)
        assert counter(history) <= 700
        truncated += bool(sample.metadata["history_truncated"])
        assert sample.scores is not None
        assert sample.scores["prompt_tokens"].value == sample.metadata["prompt_tokens"]
    assert truncated > 0  # the fixture's M histories are longer than 700 tokens
    assert log.results is not None
    names = {s.name for s in log.results.scores}
    assert {"longmemeval_judge", "prompt_tokens"} <= names


def test_chain_of_note_with_truncation_is_refused() -> None:
    with pytest.raises(ValueError, match="no single history to truncate"):
        longmemeval(**FX, context="truncated", chain_of_note=True)


def test_real_cli_truncated_m(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    cmd = [
        sys.executable,
        str(TESTS / "support" / "longmemeval_grader.py"),
        "eval",
        "memevals/longmemeval_m",
        "-T",
        f"data_dir={FIXTURES}",
        "-T",
        "verify_checksum=false",
        "-T",
        "protocol=memevals",
        "-T",
        "context=truncated",
        "-T",
        "max_context_tokens=400",
        "--model",
        "mockllm/model",
        "--model-role",
        "grader=lmetable/fixture",
        "--log-dir",
        str(logs),
        "--display",
        "plain",
    ]
    proc = run_python(cmd, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [path] = logs.glob("*.eval")
    log = read_eval_log(str(path))
    assert log.eval.metadata is not None
    assert (log.eval.metadata["context"], log.eval.metadata["max_context_tokens"]) == (
        "truncated",
        400,
    )
    assert log.results is not None
    # the judge is one result named by its scorer
    assert [s.name for s in log.results.scores].count("longmemeval_judge") == 1
    got = {figure: v for (key, figure), v in figures(log).items() if key == "judge"}
    # the official aggregates, beside the clustered standard errors and Wilson intervals
    assert {k: got[k] for k in EXPECTED} == pytest.approx(EXPECTED)
    assert {"stderr", "ci_lower", "ci_upper"} <= set(got)


# ------------------------------------------------------------------------------ through lm-eval


def test_lm_eval_truncated_docs_equal_the_inspect_samples(tmp_path: Path) -> None:
    pytest.importorskip("lm_eval")
    from memevals.lm_eval_tasks.documents import doc_item
    from memevals.lm_eval_tasks.longmemeval.utils import longmemeval_docs

    options = {**FX, "context": "truncated", "context_window": 1800, "answer_tokens": 100}
    docs = longmemeval_docs("m", "multi_session", **options)["test"]
    log = _run(
        tmp_path,
        variant="m",
        categories="multi_session",
        context="truncated",
        context_window=1800,
        max_tokens=100,
    )
    assert log.samples is not None
    inspect_users = {
        str(s.id): next(m.text for m in s.messages if m.role == "user") for s in log.samples
    }
    inspect_tokens = {str(s.id): s.metadata["prompt_tokens"] for s in log.samples}
    assert sorted(docs["id"]) == sorted(inspect_users)
    for doc in docs:
        assert (doc["system"], doc["user"]) == ("", inspect_users[doc["id"]])
        md = doc_item(doc).metadata
        assert md["history_truncated"] is True
        assert md["prompt_tokens"] == inspect_tokens[doc["id"]]


def test_m_with_the_whole_history_warns_and_points_to_truncation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="memevals.benchmarks.longmemeval.memory"):
        longmemeval(**FX, variant="m", categories="knowledge_update")
    [record] = [r for r in caplog.records if r.name == "memevals.benchmarks.longmemeval.memory"]
    assert "~1.5M tokens" in record.getMessage() and "context=truncated" in record.getMessage()
    caplog.clear()
    with caplog.at_level("WARNING", logger="memevals.benchmarks.longmemeval.memory"):
        longmemeval(**FX, variant="m", categories="knowledge_update", context="truncated")
        longmemeval(**FX, variant="s", categories="knowledge_update")
    assert not [r for r in caplog.records if r.name == "memevals.benchmarks.longmemeval.memory"]


def test_an_official_budget_that_keeps_no_turn_is_sent_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """protocol=official cuts upstream's history string to the budget whatever is left: a
    budget that ends before the first turn's text is sent so, with one warning for the run;
    protocol=memevals refuses it (issue 40)."""
    from memevals.benchmarks.longmemeval.samples import LongMemEvalOptions, build

    def run(budget: int, protocol: str = "official") -> Any:
        options = {**FX, "protocol": protocol, "variant": "s", "categories": "abstention"}
        mem = MemoryOptions(context="truncated", max_context_tokens=budget)
        return build(LongMemEvalOptions(**options, memory=mem))

    with caplog.at_level("WARNING", logger="memevals.benchmarks.longmemeval.samples"):
        built = run(28)
    [warning] = [r.getMessage() for r in caplog.records]
    assert warning.startswith(
        f"LongMemEval protocol=official: a history budget of 28 tokens keeps no turn of the "
        f"history for {len(built.items)} of {len(built.items)} questions ("
    )
    for item in built.items:
        # the first session's header (its date) and no turn
        assert len(item.metadata["session_ids_shown"]) == 1
        assert '"content": ' not in item.user
    caplog.clear()
    with caplog.at_level("WARNING", logger="memevals.benchmarks.longmemeval.samples"):
        run(40)  # the first turn's first words fit
    assert not caplog.records
    with pytest.raises(ValueError, match="max_context_tokens=28 leaves no room for any session"):
        run(28, protocol="memevals")

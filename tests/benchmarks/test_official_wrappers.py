"""Each official call's wrapper, read from upstream's own call sites in the pinned copies.

docs/judges.md#what-leaves-for-the-model-under-protocolofficial lists, per benchmark and call,
what upstream's code does between a filled template and the request (role, decoding, token
limit, strips). The texts themselves are checked against upstream elsewhere (the tests beside
this file); here each call site's settings are read from the copies' syntax trees (the literal
keyword arguments, message dicts and command-line defaults; nothing is executed) and compared
with what memevals' tasks send, down to the generate config Inspect logs for each call.
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.event import ModelEvent
from inspect_ai.log import read_eval_log
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, get_model

sys.path.insert(0, str(Path(__file__).resolve().parent / "locomo"))
import upstream_locomo as up

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@cache
def tree(data_dir: Path, relpath: str) -> ast.Module:
    return ast.parse((data_dir / "upstream" / relpath).read_text(encoding="utf-8"))


def function(module: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == name)


def calls(node: ast.AST, name: str) -> list[ast.Call]:
    """Calls of `name` (a plain name or the last attribute) under `node`, in source order."""
    found = [
        n
        for n in ast.walk(node)
        if isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Name) and n.func.id == name)
            or (isinstance(n.func, ast.Attribute) and n.func.attr == name)
        )
    ]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def keywords(call: ast.Call) -> dict[str, Any]:
    """A call's keyword arguments: literals as values, anything else as its source."""
    out: dict[str, Any] = {}
    for k in call.keywords:
        if k.arg is None:  # `**mapping`: kept by its source
            out["**" + ast.unparse(k.value)] = None
            continue
        try:
            out[k.arg] = ast.literal_eval(k.value)
        except ValueError:
            out[k.arg] = ast.unparse(k.value)
    return out


def request_dicts(node: ast.AST) -> list[dict[str, Any]]:
    """The request kwargs dicts under `node` (dict literals with a "messages" key): each key's
    literal value or source, and the roles of its messages."""
    out = []
    for d in ast.walk(node):
        if not isinstance(d, ast.Dict):
            continue
        keys = [k.value if isinstance(k, ast.Constant) else None for k in d.keys]
        if "messages" not in keys:
            continue
        entry: dict[str, Any] = {}
        for key, value in zip(keys, d.values, strict=True):
            if key == "messages":
                assert isinstance(value, ast.List)
                entry["roles"] = [message_role(m) for m in value.elts]
                continue
            try:
                entry[str(key)] = ast.literal_eval(value)
            except ValueError:
                entry[str(key)] = ast.unparse(value)
        out.append(entry)
    return out


def message_role(node: ast.expr) -> str:
    assert isinstance(node, ast.Dict)
    for k, v in zip(node.keys, node.values, strict=True):
        if isinstance(k, ast.Constant) and k.value == "role":
            return str(ast.literal_eval(v))
    raise AssertionError("a message without a role")


# --------------------------------------------------------------------------- LoCoMo


def test_locomo_reader_call_is_upstreams(data_dir: Path) -> None:
    """`get_gpt_answers`' one-question call: 32 tokens, temperature 0, one generation."""
    from memevals.benchmarks.locomo import official
    from memevals.inspect_tasks.locomo import locomo_temporal

    fn = function(tree(data_dir, "locomo/task_eval/evaluate_gpts.py"), "get_gpt_answers")
    one_question = [keywords(c) for c in calls(fn, "run_chatgpt")]
    one_question = [k for k in one_question if isinstance(k["num_tokens_request"], int)]
    assert [(k["num_tokens_request"], k["temperature"], k["num_gen"]) for k in one_question] == [
        (32, 0, 1)
    ]
    config = locomo_temporal(protocol="official").config
    assert (config.max_tokens, config.temperature) == (official.ANSWER_TOKENS, 0.0) == (32, 0.0)


# --------------------------------------------------------------------------- LoCoMo-Plus


def test_locomo_plus_calls_are_upstreams(data_dir: Path) -> None:
    """`call_llm` sends one user message; the reader's decoding is `evaluate_qa.py`'s default,
    the judge's `llm_as_judge.py`'s, through the `call_llm` backend."""
    from memevals.benchmarks.locomo_plus.samples import LocomoPlusOptions, build
    from memevals.core.upstream_judge import OFFICIAL_JUDGE_KEY, OfficialJudge
    from memevals.inspect_tasks.locomo_plus import locomo_plus_cognitive

    utils = tree(data_dir, "Locomo-Plus/evaluation_framework/task_eval/utils.py")
    [create] = calls(function(utils, "call_llm"), "create")
    messages = next(k.value for k in create.keywords if k.arg == "messages")
    assert isinstance(messages, ast.List)
    assert [message_role(m) for m in messages.elts] == ["user"]
    # its reply is stripped ("(empty)" when nothing is left) before anyone reads it
    assert "(response.choices[0].message.content or '').strip()" in ast.unparse(
        function(utils, "call_llm")
    )

    reader = up.argparse_defaults(
        data_dir, up.PLUS / "evaluation_framework/task_eval/evaluate_qa.py"
    )
    config = locomo_plus_cognitive(protocol="official").config
    assert (config.temperature, config.max_tokens) == (reader["temperature"], reader["max_tokens"])
    assert (config.temperature, config.max_tokens) == (0.3, 1024)

    judge = up.argparse_defaults(data_dir, up.PLUS_JUDGE)
    assert judge["backend"] == "call_llm"
    built = build(LocomoPlusOptions(protocol="official", categories="cognitive"))
    request = OfficialJudge.from_metadata(built.items[0].metadata[OFFICIAL_JUDGE_KEY])
    assert (request.temperature, request.max_tokens) == (judge["temperature"], judge["max_tokens"])
    # `_judge_one_record` passes no category, so `call_llm` prepends and strips
    [judge_call] = calls(
        function(up.tree(data_dir, up.PLUS_JUDGE), "_judge_one_record"), "call_model"
    )
    assert "category" not in keywords(judge_call)
    assert request.prefix == up.prepend_conv_prefix(data_dir, "x")[:-1] and request.strip_prompt


# --------------------------------------------------------------------------- LongMemEval


def test_longmemeval_calls_are_upstreams(data_dir: Path) -> None:
    """The reader's, chain-of-note's and the judge's requests: one user message, n 1,
    temperature 0, upstream's token limits, replies stripped."""
    import inspect as pyinspect

    from memevals.benchmarks.longmemeval import official
    from memevals.inspect_tasks.longmemeval import longmemeval

    generation = tree(data_dir, "LongMemEval/src/generation/run_generation.py")
    con, answer = request_dicts(function(generation, "prepare_prompt")) + request_dicts(
        function(generation, "main")
    )
    assert con == {
        "model": "con_model",
        "roles": ["user"],
        "n": 1,
        "temperature": 0,
        "max_tokens": 500,
    }
    assert answer == {
        "model": "args.model_name",
        "roles": ["user"],
        "n": 1,
        "temperature": 0,
        "max_tokens": "gen_length",
    }
    # gen_length: 500, or 800 with chain-of-thought
    [gen] = [
        n.value
        for n in ast.walk(function(generation, "main"))
        if isinstance(n, ast.Assign)
        and ast.unparse(n.targets[0]) == "gen_length"
        and isinstance(n.value, ast.IfExp)
    ]
    assert isinstance(gen, ast.IfExp)
    assert (ast.literal_eval(gen.body), ast.literal_eval(gen.orelse)) == (500, 800)
    assert (official.ANSWER_TOKENS, official.STEP_BY_STEP_ANSWER_TOKENS) == (500, 800)
    assert con["max_tokens"] == official.NOTE_MAX_TOKENS
    assert pyinspect.signature(longmemeval).parameters["note_max_tokens"].default == 500
    source = ast.unparse(generation)
    assert source.count("completion.choices[0].message.content.strip()") == 2

    evaluation = tree(data_dir, "LongMemEval/src/evaluation/evaluate_qa.py")
    [judge] = request_dicts(evaluation)
    assert judge == {
        "model": "metric_model",
        "roles": ["user"],
        "n": 1,
        "temperature": 0,
        "max_tokens": 10,
    }
    assert judge["max_tokens"] == official.JUDGE_MAX_TOKENS
    assert "completion.choices[0].message.content.strip()" in ast.unparse(evaluation)


# --------------------------------------------------------------------------- BEAM


def test_beam_models_are_upstreams_settings(data_dir: Path) -> None:
    """Upstream's reader and grader are `ChatOpenAI` at temperature 0 with no token limit, and
    no call site adds one: every `invoke` passes its messages alone."""
    from memevals.benchmarks.beam.samples import Decoding, decoding
    from memevals.core.protocol import OFFICIAL

    llm = tree(data_dir, "BEAM/src/llm.py")
    [chat] = calls(function(llm, "build_llm"), "ChatOpenAI")
    assert (
        "max_tokens" not in keywords(chat) and keywords(chat)["temperature"] == "self.temperature"
    )
    # whatever a `**config` holds, `BuildLLm` takes no token limit and `build_llm` passes none
    init = function(llm, "__init__")
    assert "max_tokens" not in [a.arg for a in init.args.args]
    built = [keywords(c) for c in calls(llm, "BuildLLm")]
    assert built and all(k["temperature"] == 0 for k in built)
    generation = tree(data_dir, "BEAM/src/answer_probing_questions/answer_generation.py")
    readers = [keywords(c) for c in calls(generation, "BuildLLm")]
    assert readers and all(k["temperature"] == 0 for k in readers)
    assert all("max_tokens" not in k for k in readers)
    # the reader's call site: `model.invoke(messages)` / `model.invoke(prompt)`, nothing else;
    # the script's `max_tokens` is the window `prune_from_tail` keeps, never a reply limit
    methods = tree(data_dir, "BEAM/src/answer_probing_questions/long_term_memory_methods.py")
    reader = function(methods, "probing_question_evaluation")
    invokes = calls(reader, "invoke")
    assert [(ast.unparse(c.args[0]), c.keywords) for c in invokes] == [
        ("messages", []),
        ("prompt", []),
    ]
    assert all("max_tokens" not in keywords(c) for c in calls(reader, "init_chat_model"))
    passed = [
        ast.unparse(c.func)
        for c in calls(reader, "prune_from_tail") + calls(reader, "init_chat_model")
        if any(ast.unparse(k.value) == "max_tokens" for k in c.keywords)
    ]
    assert passed == ["prune_from_tail"]
    metrics = tree(data_dir, "BEAM/src/evaluation/compute_metrics.py")
    # every grader call (the judge per rubric item, extract_facts, the equivalence calls): one
    # argument, no keywords
    graded = calls(metrics, "invoke")
    assert len(graded) == 12
    assert all(len(c.args) == 1 and not c.keywords for c in graded)
    equivalence = function(metrics, "llm_equivalence")
    roles = [
        message_role(n.value)
        for n in ast.walk(equivalence)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Dict)
    ]
    assert roles == ["system", "user"]
    # the judge's reply is stripped before it is parsed; the equivalence reply lower-cased
    assert "model.invoke(prompt).content.strip()" in ast.unparse(
        function(metrics, "evaluate_abstention")
    )
    assert "llm.invoke(messages).content.lower()" in ast.unparse(equivalence)
    # so the official protocol sends upstream's temperature and no limit anywhere
    assert decoding(OFFICIAL) == Decoding(0.0, None, None, None)
    assert decoding(OFFICIAL).temperature == built[0]["temperature"]


#: What each BEAM call sends under each protocol: (reader, rubric item, equivalence) limits.
BEAM_LIMITS = {"official": (None, None, None), "memevals": (2048, 1024, 32)}


@pytest.mark.parametrize("protocol", ["official", "memevals"])
def test_beam_calls_through_inspect(protocol: str, tmp_path: Path) -> None:
    """An event-ordering question through Inspect: each rubric item's judge call is one user
    message (under official upstream's prompt around the unstripped reply), each equivalence
    call a system and a user message; the generate config Inspect logs for the reader, every
    rubric item and every equivalence call is temperature 0 with no token limit under
    official (upstream sends none) and with memevals' limits under memevals."""
    from memevals.benchmarks.beam.official import official_texts
    from memevals.inspect_tasks.beam import beam

    texts = official_texts()
    reply = "  first event\nsecond event \n"
    seen: list[tuple[list[tuple[str, str]], GenerateConfig]] = []

    def grade(messages: list[ChatMessage], *args: Any) -> ModelOutput:
        seen.append(([(m.role, m.text) for m in messages], args[2]))
        answer = "yes" if messages[0].role == "system" else '{"score": 1, "reason": "r"}'
        return ModelOutput.from_content("mockllm/model", answer)

    reader_limit, judge_limit, same_limit = BEAM_LIMITS[protocol]
    task = beam(categories="event_ordering", context="none", protocol=protocol)
    assert (task.config.temperature, task.config.max_tokens) == (0.0, reader_limit)
    [log] = inspect_eval(
        task,
        model=get_model(
            "mockllm/model", custom_outputs=lambda *_: ModelOutput.from_content("m", reply)
        ),
        model_roles={"grader": get_model("mockllm/model", custom_outputs=grade)},
        limit=1,
        display="none",
        log_dir=str(tmp_path),
    )
    assert log.status == "success", log.error
    # what the log on disk says each call sent
    log = read_eval_log(log.location)
    assert log.samples is not None and log.eval.metadata is not None
    assert (
        log.eval.metadata["judge_max_tokens"],
        log.eval.metadata["equivalence_max_tokens"],
    ) == (judge_limit, same_limit)
    [sample] = log.samples
    events = [e for e in sample.events if isinstance(e, ModelEvent)]
    readers = [e for e in events if e.role != "grader"]
    graders = [e for e in events if e.role == "grader"]
    assert len(readers) == 1 and len(graders) == len(seen)
    assert (readers[0].config.temperature, readers[0].config.max_tokens) == (0.0, reader_limit)
    judge_events = [e for e in graders if [m.role for m in e.input] == ["user"]]
    same_events = [e for e in graders if [m.role for m in e.input] == ["system", "user"]]
    rubric = [str(r) for r in sample.metadata["rubric"]]
    assert (
        len(judge_events) == len(rubric)
        and len(same_events)
        == (
            sample.scores["beam_judge"].metadata["equivalence_calls"]  # type: ignore[index]
        )
    )
    assert same_events and len(judge_events) + len(same_events) == len(graders)
    assert {(e.config.temperature, e.config.max_tokens) for e in judge_events} == {
        (0.0, judge_limit)
    }
    assert {(e.config.temperature, e.config.max_tokens) for e in same_events} == {(0.0, same_limit)}
    # the model received the same settings the log shows
    assert {(c.temperature, c.max_tokens) for _, c in seen} == {(0.0, judge_limit)} | {
        (0.0, same_limit)
    }
    if protocol == "memevals":
        return
    judge_calls = [m for m, _ in seen if [r for r, _ in m] == ["user"]]
    same_calls = [m for m, _ in seen if [r for r, _ in m] == ["system", "user"]]
    assert sorted(m[0][1] for m in judge_calls) == sorted(
        texts.judge_prompt(item, reply) for item in rubric
    )
    # upstream splits the unstripped reply: three lines, the last one empty
    lines = reply.split("\n")
    assert same_calls[0] == [
        ("system", texts.equivalence_messages(rubric[0], lines[0])[0]),
        ("user", texts.equivalence_messages(rubric[0], lines[0])[1]),
    ]


def test_beam_judge_limit_is_memevals_only() -> None:
    """An explicit judge limit under official is refused with its fix, in the task and for
    post-hoc judging of official samples; the reader's limit may be set under either."""
    from memevals.inspect_tasks.beam import beam, posthoc_scorers

    fix = "judge_max_tokens applies to protocol=memevals: add -T protocol=memevals"
    with pytest.raises(ValueError, match=fix):
        beam(categories="abstention", context="none", judge_max_tokens=300)
    with pytest.raises(ValueError, match="under protocol=official, whose grader sends no token"):
        posthoc_scorers([{"protocol": "memevals"}, {"protocol": "official"}], 300, 1)
    assert len(posthoc_scorers([{"protocol": "memevals"}], 300, 1)) == 1
    assert len(posthoc_scorers([{"protocol": "official"}], None, 1)) == 1
    task = beam(categories="abstention", context="none", max_tokens=700)
    assert (task.config.max_tokens, (task.metadata or {})["judge_max_tokens"]) == (700, None)
    task = beam(categories="abstention", context="none", protocol="memevals", judge_max_tokens=300)
    assert (task.config.max_tokens, (task.metadata or {})["judge_max_tokens"]) == (2048, 300)
    with pytest.raises(ValueError, match="max_tokens must be at least 1, got 0"):
        beam(categories="abstention", context="none", max_tokens=0)

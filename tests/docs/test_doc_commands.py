"""Every example command of the docs runs as written, or says why it cannot here (issue 28).

The commands are the lines of the fenced `bash`/`sh`/`shell`/`console` blocks of README.md,
docs/*.md and memevals/benchmarks/*/README.md (a `\\` continuation joins lines; a `for`/`if`
block is one command; comments are dropped; unlabelled blocks are layouts or printed output,
not commands). Each command is classified by the first rule of RULES whose pattern matches it:

- `run`: run offline, as written except for the substitutions of `offline()`: the model under
  test and every model role become `mockllm/model` (run through tests/support/inspect_offline.py,
  which
  makes mockllm's token count offline), `--limit 1`, logs and outputs in a temporary folder;
- `options`: too long to run here or needing a key, but its task and `-T` options (an
  `lm_eval` command: its `--tasks` documents function and `--metadata`) are built in-process
  against an empty data folder, which must fail only for the missing data (an option of the
  wrong protocol, a misspelt or unknown option fails here instead);
- `skip`: not run, with the reason in the rule (an API key, a GPU, an install, logs of such
  runs, or the whole test suite).

A command that no rule matches fails `test_every_doc_command_is_classified`, naming its file:
a new example command is added to RULES (usually it is matched already: an `inspect eval` with a
provider model is `options`, `memevals-report`/`memevals-compare` on logs of keyed runs is
`skip`).
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_support import run_inspect_cli, run_python

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "memevals" / "benchmarks").glob("*/README.md")),
]
SHELL = {"bash", "sh", "shell", "console"}


@dataclass(frozen=True)
class Command:
    doc: str
    text: str


@dataclass(frozen=True)
class Rule:
    pattern: str
    kind: str  # run | options | skip
    reason: str

    def matches(self, command: str) -> bool:
        return re.search(self.pattern, command) is not None


SMOKE = r"^python tests/support/inspect_offline\.py eval "
RAG = r"^inspect eval locomo_temporal -T context=rag "
COMPARE = r"^memevals-compare logs/locomo --csv "
_KEY = "calls a hosted model (an API key and network)"
RULES = [
    # run offline, with the substitutions of offline()
    Rule(SMOKE, "run", "the offline smoke test"),
    Rule(RAG, "run", "LoCoMo RAG on 321 samples"),
    Rule(COMPARE, "run", "compare on the two runs above"),
    # built against an empty data folder (options and protocol checked), not run
    Rule(
        r"^inspect eval(-set)? .*-T memory=(mem0|graphiti|langmem)\b",
        "skip",
        "a memory system whose LLM endpoint is a hosted API (checked before ingesting): key",
    ),
    Rule(r"^inspect eval(-set)? ", "options", _KEY + ", or a full run"),
    Rule(
        r"^python -m memevals\.tools\.estimate ",
        "options",
        "builds and counts every sample (minutes); the figures: tests/docs/test_doc_figures.py",
    ),
    # not run
    Rule(
        r"^HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 inspect eval .*-T context=agent",
        "skip",
        "SmolLM2 writes its memory on the CPU: about 12 minutes (measured in the doc)",
    ),
    Rule(r"^bash scripts/setup\.sh", "skip", "installs the venv, then a model run or the suite"),
    Rule(r"^pip install ", "skip", "installs from the network"),
    Rule(r"^export \w+=", "skip", "sets a key or an endpoint"),
    Rule(
        r"^lm_eval .*--tasks \w+",
        "options",
        "lm-eval with a hub model, a GPU server or an endpoint; its --metadata is checked",
    ),
    Rule(r"^inspect score ", "skip", "re-judges a keyed run's log with a hosted grader"),
    Rule(r"^python -m memevals\.tools\.judge ", "skip", "judges lm-eval output, hosted grader"),
    Rule(
        r"^python -m memevals\.tools\.(judge_agreement|diff) ",
        "skip",
        "reads logs of keyed runs (tests/core/test_judge.py, tests/tools/test_diff.py run them)",
    ),
    Rule(
        r"^memevals-(compare|diff|report) ",
        "skip",
        "reads logs of keyed runs (tests/tools/test_compare.py, tests/tools/test_diff.py and "
        "tests/tools run them on real logs)",
    ),
    Rule(r"^inspect view ", "skip", "bundles Inspect's viewer for logs of keyed runs"),
    Rule(r"^flow run ", "skip", "Inspect Flow (another package) running hosted models"),
    Rule(r"^for spec in ", "skip", "twelve full RAG runs of gpt-3.5-turbo"),
    Rule(r"(^|/)python -m pytest ", "skip", "the test suite itself"),
    Rule(
        r"^(MEMEVALS_DATA_DIR=\S+ )?python perf/\w+\.py",
        "skip",
        "a measurement script of perf/ (minutes on the full data; it prints ratios)",
    ),
]


def _commands(doc: Path) -> list[Command]:
    text = doc.read_text(encoding="utf-8")
    out: list[Command] = []
    for block in re.finditer(r"^```(\w*)[^\n]*\n(.*?)^```", text, re.S | re.M):
        if block.group(1) not in SHELL:
            continue
        body = re.sub(r"\\\n\s*", " ", block.group(2))
        pending: list[str] = []
        for raw in body.splitlines():
            line = re.sub(r"\s+#(\s.*)?$", "", raw).strip()
            if not line or line.startswith("#"):
                continue
            if pending or re.match(r"(for|while|if) ", line):
                pending.append(line)
                closer = "fi" if pending[0].startswith("if ") else "done"
                if re.match(rf"{closer}\b", line):
                    out.append(Command(str(doc.relative_to(REPO)), "; ".join(pending)))
                    pending = []
                continue
            out.append(Command(str(doc.relative_to(REPO)), line))
        assert not pending, f"{doc}: unterminated shell block {pending[0]!r}"
    return out


COMMANDS = [c for doc in DOCS for c in _commands(doc)]


def _rule(command: str) -> Rule | None:
    return next((r for r in RULES if r.matches(command)), None)


def test_every_doc_command_is_classified() -> None:
    assert len(COMMANDS) >= 50  # the collector finds the docs' commands
    unclassified = [f"{c.doc}: {c.text}" for c in COMMANDS if _rule(c.text) is None]
    assert not unclassified, (
        "doc commands neither run nor listed with a reason (add them to RULES in "
        "tests/docs/test_doc_commands.py):\n" + "\n".join(unclassified)
    )
    # each run rule matches a command the docs really hold
    for rule in RULES:
        if rule.kind == "run":
            assert any(rule.matches(c.text) for c in COMMANDS), rule.pattern


# --------------------------------------------------------------------------------------------
# options: built against an empty data folder


def _task_and_args(command: str) -> list[tuple[str, dict[str, Any]]]:
    """The tasks a command names and their -T options (placeholders `...` dropped)."""
    from memevals.tools.estimate import parse_task_args

    words = [w for w in shlex.split(command) if w != "..."]
    # python -m memevals.tools.estimate TASK ... | inspect eval[-set] TASK ...
    words = words[3:] if words[:2] == ["python", "-m"] else words[2:]
    tasks, pairs, i = [], [], 0
    while i < len(words):
        w = words[i]
        if w == "-T":
            pairs.append(words[i + 1])
            i += 2
        elif w.startswith("-"):
            i += 2 if i + 1 < len(words) and not words[i + 1].startswith("-") else 1
        else:
            tasks.append(w)
            i += 1
    args = parse_task_args(pairs)
    return [(t, dict(args)) for t in tasks]


LM_EVAL_TASKS = REPO / "memevals" / "lm_eval_tasks"


def _lm_eval_yaml(task: str) -> tuple[str, dict[str, str]]:
    """The documents function of an lm-eval task (a group: its first subtask) and the YAML's
    dataset_kwargs, read from memevals' YAML files (and the base file they include)."""
    for path in sorted(LM_EVAL_TASKS.glob("*/*.yaml")):
        text = path.read_text(encoding="utf-8")
        if re.search(rf"^group: {task}$", text, re.M):
            first = re.search(r"^task:\n\s+- (\w+)", text, re.M)
            assert first is not None, path
            return _lm_eval_yaml(first.group(1))
        if re.search(rf"^task: {task}$", text, re.M):
            base = re.search(r"^include: (\S+)", text, re.M)
            if base is not None:
                text += (path.parent / base.group(1)).read_text(encoding="utf-8")
            function = re.search(r"^custom_dataset: !function (\S+)", text, re.M)
            assert function is not None, path
            kwargs = dict(re.findall(r"^  (\w+): (\S+)$", text.split("dataset_kwargs:")[1], re.M))
            return function.group(1), kwargs
    raise AssertionError(f"no lm-eval task or group {task!r}")


def _lm_eval_error(command: str, empty: Path) -> str | None:
    """None when an lm_eval command's --metadata passes its task's options (only the data is
    missing); else the error."""
    words = [w for w in shlex.split(command) if w != "..."]
    task = words[words.index("--tasks") + 1]
    metadata = json.loads(words[words.index("--metadata") + 1]) if "--metadata" in words else {}
    function, kwargs = _lm_eval_yaml(task)
    module, name = function.rsplit(".", 1)
    try:
        getattr(importlib.import_module(module), name)(**kwargs, **metadata, data_dir=str(empty))
    except Exception as exc:  # lm-eval's tasks report a missing file as their OptionError
        return _unless_missing_data(exc)
    return None


def _unless_missing_data(exc: Exception) -> str | None:
    """None for the error of a file missing from the (empty) data dir; else the error."""
    if "not found under the data dir" in str(exc):
        return None
    return f"{type(exc).__name__}: {exc}"


def _build_error(task: str, args: dict[str, Any], empty: Path) -> str | None:
    """None when the task's options pass and only the data is missing; else the error."""
    from memevals.tools.estimate import build_task

    args = {**args, "data_dir": str(empty)}
    if task.removeprefix("memevals/") == "locomo_dialogue":
        args.setdefault("bertscore", False)  # its model would be loaded from the hub
    try:
        build_task(task, args)
    except Exception as exc:  # an option error, whatever its class, or the missing data
        return _unless_missing_data(exc)
    return None


OPTION_COMMANDS = [c for c in COMMANDS if (r := _rule(c.text)) is not None and r.kind == "options"]


def test_option_check_refuses_an_option_of_the_other_protocol(tmp_path: Path) -> None:
    """The check below can fail: the example that issue 28 found broken is refused."""
    [(task, args)] = _task_and_args("inspect eval memevals/locomo_plus -T context=rag")
    error = _build_error(task, args, tmp_path)
    assert error is not None and "-T protocol=memevals" in error
    assert _build_error(task, {**args, "protocol": "memevals"}, tmp_path) is None
    # lm-eval's --metadata likewise
    command = 'lm_eval --tasks locomo_plus --metadata \'{"context": "rag"}\''
    error = _lm_eval_error(command, tmp_path)
    assert error is not None and 'lm-eval: --metadata \'{"protocol": "memevals"}\'' in error
    fixed = 'lm_eval --tasks locomo_plus --metadata \'{"context": "rag", "protocol": "memevals"}\''
    assert _lm_eval_error(fixed, tmp_path) is None


def test_doc_commands_options_hold(tmp_path: Path) -> None:
    failures = []
    for c in OPTION_COMMANDS:
        if c.text.startswith("lm_eval "):
            error = _lm_eval_error(c.text, tmp_path)
            if error is not None:
                failures.append(f"{c.doc}: {c.text}\n    {error}")
            continue
        for task, args in _task_and_args(c.text):
            error = _build_error(task, args, tmp_path)
            if error is not None:
                failures.append(f"{c.doc}: {c.text}\n    {error}")
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------------------------
# run: offline, as written but for the model and the limit


def _offline(command: str, logs: Path) -> list[str]:
    """The command's arguments for tests/support/inspect_offline.py or the tool's module: every
    model mockllm/model, --limit 1, logs under `logs`."""
    words = shlex.split(command)
    if words[0] == "python" and words[1] == "tests/support/inspect_offline.py":
        words = words[2:]
    elif words[0] == "inspect":
        words = words[1:]
    out, i = [], 0
    while i < len(words):
        w = words[i]
        if w == "--model":
            out += ["--model", "mockllm/model"]
            i += 2
        elif w == "--model-role":
            role = words[i + 1].split("=", 1)[0]
            out += ["--model-role", f"{role}=mockllm/model"]
            i += 2
        elif w in ("--limit", "--log-dir"):
            i += 2
        else:
            out.append(w)
            i += 1
    return [*out, "--limit", "1", "--log-dir", str(logs)]


RUN_COMMANDS = {
    rule.pattern: next(c for c in COMMANDS if rule.matches(c.text))
    for rule in RULES
    if rule.kind == "run"
}


def test_doc_commands_run_offline(tmp_path: Path, data_dir: Path) -> None:
    """The offline smoke test of docs/data.md and LoCoMo's RAG example run through the real
    inspect CLI; README's memevals-compare reads their logs."""
    logs = tmp_path / "logs" / "locomo"
    for pattern in (SMOKE, RAG):
        command = RUN_COMMANDS[pattern]
        res = run_inspect_cli(_offline(command.text, logs), cwd=REPO, timeout=600)
        assert res.returncode == 0, f"{command.doc}: {command.text}\n{res.stderr[-3000:]}"
    assert len(list(logs.glob("*.eval"))) == 2

    compare = RUN_COMMANDS[COMPARE]
    args = shlex.split(compare.text)[1:]
    res = run_python(
        [sys.executable, "-m", "memevals.tools.compare", *args, "--no-png"],
        cwd=tmp_path,
        timeout=300,
    )
    assert res.returncode == 0, f"{compare.doc}: {compare.text}\n{res.stderr[-3000:]}"
    csv_rows = (tmp_path / "report" / "compare.csv").read_text(encoding="utf-8").splitlines()
    assert len(csv_rows) == 3  # header + the two runs
    assert res.stdout.count("mockllm/model") >= 2

"""Upstream's LoCoMo and LoCoMo-Plus logic restated from the pinned copies, for parity tests.

Nothing here imports memevals' official modules or its dataclasses: the texts are read from the
upstream files' syntax trees by their own paths (a module-level name, the constant a branch of
`get_gpt_answers` appends, the pattern `_parse_judge_response` searches with), the data from the
raw JSON under upstream's field names (the released `text` is upstream's `clean_text`, `img_url`
its `img_file`), and each function below follows the upstream function it names, step by step,
so that a mistake in memevals cannot be repeated here. Upstream code is never executed.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import bpe_openai

LOCOMO = Path("upstream/locomo/task_eval/evaluate_gpts.py")
PLUS = Path("upstream/Locomo-Plus")
PLUS_PROMPT = PLUS / "evaluation_framework/task_eval/prompt.py"
PLUS_JUDGE = PLUS / "evaluation_framework/task_eval/llm_as_judge.py"
PLUS_UTILS = PLUS / "evaluation_framework/task_eval/utils.py"
PLUS_UNIFIED = PLUS / "data/unified_input.py"


# --------------------------------------------------------------------------- reading upstream


@cache
def tree(data_dir: Path, path: Path) -> ast.Module:
    return ast.parse((data_dir / path).read_text(encoding="utf-8"))


def constant(data_dir: Path, path: Path, name: str) -> Any:
    """The literal value assigned to a module-level name."""
    for node in tree(data_dir, path).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise LookupError(f"{name} not assigned in {path}")


def function(data_dir: Path, path: Path, name: str) -> ast.FunctionDef:
    for node in tree(data_dir, path).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise LookupError(f"no function {name} in {path}")


def _category_branch(fn: ast.FunctionDef, category: int) -> list[ast.stmt]:
    """The body of the `if qa['category'] == <category>` branch."""
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Subscript)
            and ast.unparse(node.test.left) == "qa['category']"
            and isinstance(node.test.comparators[0], ast.Constant)
            and node.test.comparators[0].value == category
        ):
            return node.body
    raise LookupError(f"no branch for category {category}")


def _appended_to_question(stmt: ast.stmt) -> str:
    """The constant of `... qa['question'] + "<constant>"` in a statement."""
    for node in ast.walk(stmt):
        if (
            isinstance(node, ast.BinOp)
            and ast.unparse(node.left) == "qa['question']"
            and isinstance(node.right, ast.Constant)
        ):
            return str(node.right.value)
    raise LookupError("no constant appended to the question")


@cache
def locomo_texts(data_dir: Path) -> dict[str, Any]:
    """What `get_gpt_answers` puts around a question, and upstream's numbers."""
    fn = function(data_dir, LOCOMO, "get_gpt_answers")
    temporal = _category_branch(fn, 2)
    adversarial = _category_branch(fn, 5)
    refusal = next(
        str(node.args[0].value)
        for stmt in adversarial
        for node in ast.walk(stmt)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    )
    return {
        "start": constant(data_dir, LOCOMO, "CONV_START_PROMPT"),
        "qa": constant(data_dir, LOCOMO, "QA_PROMPT"),
        "qa_cat_5": constant(data_dir, LOCOMO, "QA_PROMPT_CAT_5"),
        "batch": constant(data_dir, LOCOMO, "QA_PROMPT_BATCH"),
        "max_length": constant(data_dir, LOCOMO, "MAX_LENGTH"),
        "per_qa": constant(data_dir, LOCOMO, "PER_QA_TOKEN_BUDGET"),
        "temporal_hint": _appended_to_question(temporal[0]),
        "two_options": _appended_to_question(adversarial[0]),
        "refusal": refusal,
    }


@cache
def plus_texts(data_dir: Path) -> dict[str, Any]:
    """LoCoMo-Plus's wrapper, judge templates, judge pattern, scores and category names."""
    parse = function(data_dir, PLUS_JUDGE, "_parse_judge_response")
    pattern = next(
        str(node.args[0].value)
        for node in ast.walk(parse)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "re.search"
    )
    return {
        "start": constant(data_dir, PLUS_UTILS, "CONV_START_PROMPT"),
        "instruction_qa": constant(data_dir, PLUS_UTILS, "INSTRUCTION_QA"),
        "instruction_cognitive": constant(data_dir, PLUS_UTILS, "INSTRUCTION_COGNITIVE"),
        "templates": constant(data_dir, PLUS_PROMPT, "PROMPT_TEMPLATES"),
        "pattern": pattern,
        "scores": constant(data_dir, PLUS_JUDGE, "LABEL_TO_SCORE"),
        "categories": constant(data_dir, PLUS_UNIFIED, "LOCOMO_CATEGORY_NAMES"),
    }


# --------------------------------------------------------------------------- the data


@cache
def raw(data_dir: Path, name: str) -> Any:
    return json.loads((data_dir / name).read_text(encoding="utf-8"))


def upstream_conversation(sample: dict[str, Any]) -> dict[str, Any]:
    """A released conversation under upstream's field names (`clean_text`, `img_file`)."""
    out: dict[str, Any] = {}
    for key, value in sample["conversation"].items():
        if isinstance(value, list):
            turns = []
            for turn in value:
                t = dict(turn)
                t["clean_text"] = t.pop("text")
                if "img_url" in t:
                    t["img_file"] = t.pop("img_url")
                turns.append(t)
            out[key] = turns
        else:
            out[key] = value
    return out


# --------------------------------------------------------------------------- LoCoMo's reader

_ENCODING = bpe_openai.get_encoding("cl100k_base")


def n_tokens(text: str) -> int:
    return len(_ENCODING.encode_ordinary(text))


def question_entry(
    qa: dict[str, Any], texts: dict[str, Any], refusal_first: bool
) -> tuple[str, dict[str, str] | None]:
    """`get_gpt_answers`' question and answer key; upstream's `answer` of a category-5
    question is the released `adversarial_answer`."""
    if qa["category"] == 2:
        return qa["question"] + texts["temporal_hint"], None
    if qa["category"] == 5:
        question = qa["question"] + texts["two_options"]
        distractor = qa["adversarial_answer"]
        if refusal_first:
            return question.format(texts["refusal"], distractor), {
                "a": texts["refusal"],
                "b": distractor,
            }
        return question.format(distractor, texts["refusal"]), {
            "b": texts["refusal"],
            "a": distractor,
        }
    return qa["question"], None


class Walk:
    """`get_input_context`'s counts for one conversation. Before each turn upstream compares the
    count of the header with the turn, plus the count of the text built so far, plus the
    question's count, with the window less 50 per question. The first two do not depend on the
    question, so they are kept per step, computed as upstream computes them.

    `measure` counts (default: cl100k_base tokens). Measured in UTF-8 bytes instead, every
    count is at least the token count (a cl100k token is one byte or more), so a walk that keeps
    every turn by bytes keeps every turn by tokens too and gives the same text.
    """

    def __init__(self, data: dict[str, Any], measure: Callable[[str], int] = n_tokens) -> None:
        self.data = data
        self.measure = measure
        self.counts: list[int] = []
        self.turns = sum(
            len(v) for k, v in data.items() if k.startswith("session_") and isinstance(v, list)
        )
        self.texts: dict[int | None, str] = {}  # text by the step the walk stopped at
        self.stopped = False

    def context(self, num_question_tokens: int, max_length: int, per_qa: int) -> str:
        """The text upstream builds; a walk already taken to the same stop is not taken
        again (the text depends only on where the walk stops)."""
        limit = max_length - per_qa
        stop = next(
            (k for k, c in enumerate(self.counts) if not c + num_question_tokens < limit), None
        )
        if (stop is not None or len(self.counts) == self.turns) and stop in self.texts:
            self.stopped = self.stopped or stop is not None
            return self.texts[stop]
        text, stop = self._walk(num_question_tokens, limit)
        self.texts[stop] = text
        self.stopped = self.stopped or stop is not None
        return text

    def _walk(self, num_question_tokens: int, limit: int) -> tuple[str, int | None]:
        data = self.data
        query_conv = ""
        stop = False
        step = 0
        max_session = [
            i for i in range(1, 50) if f"session_{i}" in data and data[f"session_{i}"] != []
        ][-1]
        for i in range(max_session, 0, -1):
            if f"session_{i}" in data:
                query_conv += "\n\n"
                for dialog in data[f"session_{i}"][::-1]:
                    turn = dialog["speaker"] + ' said, "' + dialog["clean_text"] + '"' + "\n"
                    if "img_file" in dialog and len(dialog["img_file"]) > 0:
                        turn += f"[shares {dialog['blip_caption']}]\n"
                    if step == len(self.counts):
                        head = "DATE: " + data[f"session_{i}_date_time"] + "\n"
                        head += "CONVERSATION:\n" + turn
                        self.counts.append(self.measure(head) + self.measure(query_conv))
                    if self.counts[step] + num_question_tokens < limit:
                        query_conv = turn + query_conv
                        step += 1
                    else:
                        stop = True
                        break
                query_conv = (
                    "DATE: " + data[f"session_{i}_date_time"] + "\n" + "CONVERSATION:\n"
                ) + query_conv
            if stop:
                break
        return query_conv, step if stop else None


def full_query(
    sample: dict[str, Any],
    qa: dict[str, Any],
    texts: dict[str, Any],
    refusal_first: bool,
    walk: Walk,
    window: int,
) -> str:
    """Upstream's one-question query with the whole (or windowed) conversation; the speakers
    in the file's order (upstream's `set` order is not reproducible)."""
    conv = sample["conversation"]
    start_prompt = texts["start"].format(conv["speaker_a"], conv["speaker_b"])
    question, _ = question_entry(qa, texts, refusal_first)
    question_prompt = texts["batch"] + "\n".join([f"{0}: {question}"])
    num_question_tokens = walk.measure(question_prompt) + walk.measure(start_prompt)
    query_conv = walk.context(num_question_tokens, window, texts["per_qa"])
    return start_prompt + query_conv + "\n\n" + _qa_prompt(qa, question, texts)


def _qa_prompt(qa: dict[str, Any], question: str, texts: dict[str, Any]) -> str:
    template = texts["qa_cat_5"] if qa["category"] == 5 else texts["qa"]
    return str(template.format(question))


def rag_query(
    data: dict[str, Any],
    qa: dict[str, Any],
    texts: dict[str, Any],
    refusal_first: bool,
    ids: Sequence[str],
    mode: str,
) -> str:
    """Upstream's rag query for the units `ids` in rank order (dialog: dia ids; summary:
    S<n>), built as `prepare_for_rag` fills its database and `get_rag_context` joins it."""
    database: dict[str, tuple[str, str]] = {}
    for i in range(1, 50):
        if f"session_{i}" not in data:
            break
        date_time = data[f"session_{i}_date_time"]
        if mode == "summary":
            database[f"S{i}"] = (date_time, data[f"session_{i}_summary"])
            continue
        for dialog in data[f"session_{i}"]:
            text = dialog["speaker"] + ' said, "' + dialog["clean_text"] + '"'
            database[dialog["dia_id"]] = (date_time, text)
    rows = [database[i] for i in ids]
    join = "\n" if mode == "dialog" else "\n\n"
    query_conv = join.join([date + ": " + text for date, text in rows])
    question, _ = question_entry(qa, texts, refusal_first)
    return query_conv + "\n\n" + _qa_prompt(qa, question, texts)


def cat_5_answer(model_prediction: str, answer_key: dict[str, str]) -> str:
    """`get_cat_5_answer`."""
    model_prediction = model_prediction.strip().lower()
    if len(model_prediction) == 1:
        if "a" in model_prediction:
            return answer_key["a"]
        return answer_key["b"]
    if len(model_prediction) == 3:
        if "(a)" in model_prediction:
            return answer_key["a"]
        return answer_key["b"]
    return model_prediction


# --------------------------------------------------------------------------- LoCoMo-Plus


def conversation_context(conversation: dict[str, Any]) -> str:
    """`_build_conversation_context`."""
    sessions = sorted(
        [k for k in conversation if k.startswith("session_") and not k.endswith("_date_time")],
        key=lambda x: int(x.split("_")[-1]),
    )
    context = ""
    for s in sessions:
        date = conversation.get(f"{s}_date_time", "")
        turns = conversation.get(s, [])
        context += f"DATE: {date}\nCONVERSATION:\n"
        for d in turns:
            speaker = d.get("speaker", "?")
            text = (d.get("text") or "").strip()
            if "blip_caption" in d:
                context += f'{speaker} said, "{text}" and shared {d["blip_caption"]}.\n'
            else:
                context += f'{speaker} said, "{text}"\n'
        context += "\n"
    return context


def evidence_text(conversation: dict[str, Any], raw_evidence: Any) -> str:
    """`_parse_evidence_list` then `_evidence_to_text`."""
    if isinstance(raw_evidence, str):
        raw_evidence = [raw_evidence]
    evidence_list = [p.strip() for ev in raw_evidence for p in str(ev).split(";") if p.strip()]
    lines = []
    for evid in evidence_list:
        try:
            session_id, turn_id = evid.split(":")
            session_idx = int(session_id.replace("D", ""))
            turn_idx = int(turn_id)
            turns = conversation.get(f"session_{session_idx}", [])
            if 0 <= turn_idx - 1 < len(turns):
                turn = turns[turn_idx - 1]
                lines.append(f"{turn.get('speaker', 'Unknown')}：{turn.get('text', '')}")
            else:
                lines.append(f"[{evid}] [Missing turn]")
        except Exception:
            lines.append(f"[{evid}] [Parse error]")
    return "\n".join(lines)


def _ab_turns(text: str, speaker_a: str, speaker_b: str) -> list[dict[str, str]]:
    """`parse_ab_dialogue` then `map_speaker`."""
    turns = []
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith("A:"):
            turns.append({"speaker": speaker_a, "text": line[2:].strip()})
        elif line.startswith("B:"):
            turns.append({"speaker": speaker_b, "text": line[2:].strip()})
    return turns


def _gap_days(data_dir: Path, time_gap: str) -> int:
    """`parse_time_gap` (its number words read from build_conv.py)."""
    words: dict[str, int] = constant(data_dir, PLUS / "data/build_conv.py", "_NUM_WORD")
    s = time_gap.lower().strip()
    alternatives = "|".join([r"\d+", *words, "a", "an"])
    units = "week|weeks|month|months|year|years"
    m = re.search(rf"\b({alternatives})\b\s*({units})\b", s)
    if not m:
        return 0
    num, unit = m.groups()
    count = int(num) if num.isdigit() else 1 if num in ("a", "an") else words.get(num, 0)
    return count * {"w": 7, "m": 30, "y": 365}[unit[0]]


def stitched_dialogue(
    data_dir: Path, plus: dict[str, Any], locomo_item: dict[str, Any]
) -> list[dict[str, Any]]:
    """`build_context`'s dialogue: sessions, cue and trigger sorted by time (a stable sort)."""
    conv = locomo_item["conversation"]
    sessions, times = [], []
    idx = 1
    while f"session_{idx}" in conv:
        sessions.append(conv[f"session_{idx}"])
        times.append(datetime.strptime(conv[f"session_{idx}_date_time"], "%I:%M %p on %d %B, %Y"))
        idx += 1
    query_time = times[-1] + timedelta(days=7)
    cue_time = query_time - timedelta(days=_gap_days(data_dir, plus["time_gap"]))
    a, b = conv["speaker_a"], conv["speaker_b"]
    events: list[tuple[datetime, list[dict[str, Any]]]] = list(zip(times, sessions, strict=True))
    events.append((cue_time, _ab_turns(plus["cue_dialogue"], a, b)))
    events.append((query_time, _ab_turns(plus["trigger_query"], a, b)))
    events.sort(key=lambda x: x[0])
    return [turn for _, content in events for turn in content]


@cache
def unified_samples(data_dir: Path) -> list[dict[str, Any]]:
    """`build_unified_samples`: the five LoCoMo categories, then the cognitive samples."""
    categories = plus_texts(data_dir)["categories"]
    locomo = raw(data_dir, "locomo/locomo10.json")
    out: list[dict[str, Any]] = []
    for item in locomo:
        conv = item["conversation"]
        ctx_text = conversation_context(conv)
        for qa in item["qa"]:
            sample = {
                "input_prompt": ctx_text.rstrip() + "\n\nQuestion: " + qa["question"],
                "evidence": evidence_text(conv, qa.get("evidence") or []),
                "category": categories[qa["category"]],
            }
            if "answer" in qa and qa["answer"] is not None:
                sample["answer"] = qa["answer"]
            out.append(sample)
    for i, plus in enumerate(raw(data_dir, "locomo_plus/locomo_plus.json")):
        host = locomo[i % len(locomo)]
        dialogue = stitched_dialogue(data_dir, plus, host)
        lines = [
            f'{t.get("speaker", "?")} said, "{(t.get("text") or "").strip()}"' for t in dialogue
        ]
        conv = host["conversation"]
        cue = _ab_turns(plus["cue_dialogue"], conv["speaker_a"], conv["speaker_b"])
        out.append(
            {
                "input_prompt": "\n".join(lines),
                "evidence": "\n".join(
                    f"{t['speaker']}：{t['text'].strip()}" for t in cue if t["text"]
                ),
                "category": "Cognitive",
            }
        )
    return out


def model_input(data_dir: Path, sample: dict[str, Any]) -> str:
    """`_build_model_input` with its default names, as `call_llm` calls it."""
    texts = plus_texts(data_dir)
    instruction = (
        texts["instruction_cognitive"]
        if (sample["category"] or "").strip() == "Cognitive"
        else texts["instruction_qa"]
    )
    return str(texts["start"].format("A", "B")) + instruction + sample["input_prompt"].strip()


def judge_prompt(data_dir: Path, category: str, evidence: str, pred: str, gold: Any) -> str:
    """`get_judge_prompt`."""
    templates = plus_texts(data_dir)["templates"]
    template = templates.get(category) or templates["default"]
    return str(template.format(gold=gold or "", pred=pred or "", evidence=evidence or ""))


def defaults(data_dir: Path, path: Path, name: str) -> dict[str, Any]:
    """A function's parameter defaults, by parameter name (literals only)."""
    fn = function(data_dir, path, name)
    args = fn.args.args
    values = fn.args.defaults
    named = args[len(args) - len(values) :]
    return {a.arg: ast.literal_eval(v) for a, v in zip(named, values, strict=True)}


def argparse_defaults(data_dir: Path, path: Path) -> dict[str, Any]:
    """The `default=` of each `parser.add_argument("--<name>", ...)` in a script, by its `dest`
    (else the option name with dashes as underscores)."""
    out: dict[str, Any] = {}
    for node in ast.walk(tree(data_dir, path)):
        if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "parser.add_argument"):
            continue
        keywords = {k.arg: k.value for k in node.keywords}
        if "default" not in keywords:
            continue
        option = str(ast.literal_eval(node.args[0]))
        dest = keywords.get("dest")
        name = str(ast.literal_eval(dest)) if dest is not None else option.lstrip("-")
        out[name.replace("-", "_")] = ast.literal_eval(keywords["default"])
    return out


def prepend_conv_prefix(data_dir: Path, text: str) -> str:
    """`_prepend_conv_prefix` with its default names (read from its signature)."""
    names = defaults(data_dir, PLUS_UTILS, "_prepend_conv_prefix")
    prefix = str(plus_texts(data_dir)["start"]).format(names["name1"], names["name2"])
    if not (text or "").strip():
        return prefix.strip()
    return prefix + (text or "").strip()


def call_llm_content(data_dir: Path, input_prompt: str, category: str = "") -> str:
    """The one user message `call_llm` sends: `_build_model_input` when a category is given,
    else `_prepend_conv_prefix`."""
    if category:
        return model_input(data_dir, {"category": category, "input_prompt": input_prompt or ""})
    return prepend_conv_prefix(data_dir, input_prompt or "")


def judge_message(data_dir: Path, category: str, evidence: str, pred: str, gold: Any) -> str:
    """What `_judge_one_record` sends the grader: `get_judge_prompt`, then `call_model` with
    the script's default backend (`call_llm`) and no category."""
    backend = argparse_defaults(data_dir, PLUS_JUDGE)["backend"]
    assert backend == "call_llm", backend
    return call_llm_content(data_dir, judge_prompt(data_dir, category, evidence, pred, gold))


def judge_label(data_dir: Path, raw_reply: str) -> str:
    """`_parse_judge_response`'s label."""
    label = ""
    raw_reply = (raw_reply or "").strip()
    try:
        m = re.search(plus_texts(data_dir)["pattern"], raw_reply, re.DOTALL)
        if m:
            label = m.group(1).strip()
        else:
            obj = json.loads(raw_reply)
            label = (obj.get("label") or "").strip()
            (obj.get("reason") or "").strip()
    except Exception:
        if "correct" in raw_reply.lower():
            label = "correct"
        elif "wrong" in raw_reply.lower():
            label = "wrong"
        elif "partial" in raw_reply.lower():
            label = "partial"
    return label


def judge_score(data_dir: Path, label: str) -> float:
    """`label_to_score`."""
    return float(plus_texts(data_dir)["scores"].get((label or "").strip().lower(), 0.0))

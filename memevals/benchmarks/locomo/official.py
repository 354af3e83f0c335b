"""LoCoMo's official protocol (`protocol=official`): upstream's reader prompt and layout, and
LoCoMo-Plus's judge for the same categories.

Upstream is snap-research/locomo (branch `code`) @ 92286325, `task_eval/evaluate_gpts.py`, the
single-question path (`--batch-size 1`) of its GPT-4 route, which sends one user message. Its
texts are third-party material and never stand in memevals: each is a locator into the pinned
file, taken out by parsing it with `ast` (never running it) and checked against the sha256
recorded here (memevals.core.upstream). What memevals writes itself is upstream's *logic*, as
read from that file:

- full context (`get_input_context`): the start sentence naming the two speakers, then the
  sessions walked from the last turn backwards, each turn `<speaker> said, "<text>"` plus a
  `[shares <caption>]` line after a turn with an image, each session headed `DATE:` /
  `CONVERSATION:`, and two newlines per session walked gathered at the very end (upstream appends
  them to the text built so far: there is no blank line between sessions). The walk stops at the
  first turn whose header-and-turn count, plus the count of the text so far, plus the question's
  count is not below the window less 50 answer tokens; the question's count is that of the
  batch instruction with the numbered question, plus the start sentence (as upstream counts it
  even for one question). Counts are cl100k_base, tiktoken's encoding of upstream's models;
- the question: the category-2 hint appended to temporal questions; category 5 as upstream's
  two-option question under its own instruction, the reply mapped back from (a)/(b) by
  upstream's rule (`get_cat_5_answer`);
- rag (`get_rag_context`): the retrieved units in rank order, one `<date>: <text>` line each
  (a blank line between session summaries), no start sentence; a dialog unit is
  `<speaker> said, "<text>"` without a caption, as upstream embeds it;
- the message: context, a blank line, then the instruction (upstream's `query`); 32 answer
  tokens at temperature 0.

The released file names upstream's `clean_text` `text` and its `img_file` `img_url`; both are
read under the released names. Upstream's `answer` of a category-5 question is the released
`adversarial_answer`. Where upstream is not deterministic memevals fixes a choice: the two
speakers are named in the file's order (upstream takes them from a `set`, whose order changes
from run to run) and the two-option order is drawn from `random.Random("<seed>:<sample id>")`
(upstream calls the unseeded `random.random()`).

The judge (`-T judge=true`) is LoCoMo-Plus's (xjtuleeyf/Locomo-Plus @ 059f4e3d,
`evaluation_framework/task_eval/`): its per-category template filled with the reference, the
prediction and the evidence turns rendered as its unified input renders them, sent as its
call site sends it (`call_model` with the default backend `call_llm` and no category: the
`utils.py` start sentence named "A" and "B", then the filled prompt stripped, one user message,
512 tokens at temperature 0), its reply parsed and scored as `llm_as_judge.py` does (correct 1,
partial 0.5, wrong or unreadable 0).
"""

from __future__ import annotations

import ast
import functools
import json
import os
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from memevals.benchmarks.locomo.data import CATEGORY_IDS, QA, Conversation, Session, Turn
from memevals.benchmarks.locomo.memory import (
    LocomoContext,
    LocomoMemory,
    evidence_turns,
    memory_context,
)
from memevals.core import options
from memevals.core.files import DataError
from memevals.core.memory_harness import Rendered, Renderer, Retrieval
from memevals.core.memory_options import MEMORY_CONTEXT
from memevals.core.memory_system import History, MemoryItem
from memevals.core.official_judge import LABEL_RULES, OfficialJudge, OfficialLabel, split_around
from memevals.core.retrievers import MemoryUnit
from memevals.core.tokens import TokenCounter, get_token_counter
from memevals.core.upstream import (
    Template,
    UpstreamError,
    UpstreamFile,
    extract_template,
    template_digest,
    upstream_module,
)

__all__ = [
    "ANSWER_TOKENS",
    "DEFAULT_PROTOCOL",
    "EVALUATE_GPTS",
    "FULL_WINDOW",
    "JUDGE_CATEGORY",
    "JUDGE_MAX_TOKENS",
    "JUDGE_RULE",
    "JUDGE_SCORES",
    "JUDGE_WRAPPER_NAMES",
    "PER_QA_TOKEN_BUDGET",
    "PLUS_JUDGE",
    "PLUS_PROMPT",
    "PLUS_UTILS",
    "PROTOCOLS",
    "InlineText",
    "OfficialTexts",
    "check_protocol",
    "choice_prediction",
    "conversation_window",
    "evidence_text",
    "inline_text",
    "judge_prefix",
    "judge_prompt",
    "judge_request",
    "judge_score",
    "load_texts",
    "official_context",
    "official_memory_renderer",
    "option_order",
    "parse_judge_reply",
    "plus_label",
    "question_block",
    "question_text",
    "start_sentence",
    "turn_block",
]

PROTOCOLS: tuple[str, ...] = options.PROTOCOLS
DEFAULT_PROTOCOL = options.DEFAULT_PROTOCOL

LOCOMO_REPO = "snap-research/locomo"
LOCOMO_COMMIT = "92286325a40764bee61f77824ddb95233b11c4d6"
EVALUATE_GPTS = UpstreamFile(
    LOCOMO_REPO,
    LOCOMO_COMMIT,
    "task_eval/evaluate_gpts.py",
    "e878692fd25919c4069b87ee5c2c5c24d8916e97c55b00500e9bf8b467c065a0",
)
PLUS_REPO = "xjtuleeyf/Locomo-Plus"
PLUS_COMMIT = "059f4e3d38f7f1f96765e8e2cb7de3097551bffb"
PLUS_PROMPT = UpstreamFile(
    PLUS_REPO,
    PLUS_COMMIT,
    "evaluation_framework/task_eval/prompt.py",
    "e43e3ee7115a30938e727fe0eab16694186c08e3f9619f9d8dd5e603d96fc2b1",
)
PLUS_JUDGE = UpstreamFile(
    PLUS_REPO,
    PLUS_COMMIT,
    "evaluation_framework/task_eval/llm_as_judge.py",
    "9ca4997392b1e97a03635379ca601ec5fadfe09ead471542f10433f9af071a33",
)
#: LoCoMo-Plus's model call (`call_llm`) and the prefix it puts before every prompt.
PLUS_UTILS = UpstreamFile(
    PLUS_REPO,
    PLUS_COMMIT,
    "evaluation_framework/task_eval/utils.py",
    "55fb916e46ac10a521670f96594abd117dfc63b1342ca67e81a2fab6780233a5",
)

#: Upstream's answer length (`num_tokens_request`) at temperature 0.
ANSWER_TOKENS = 32
#: Tokens upstream keeps free per question asked in one call (`PER_QA_TOKEN_BUDGET`).
PER_QA_TOKEN_BUDGET = 50
#: The window of `context=full`: upstream's `MAX_LENGTH` of gpt-4-turbo, its long-context model.
FULL_WINDOW = 128_000
#: The cl100k_base encoding: what tiktoken gives upstream's gpt-4 / gpt-3.5 models.
WINDOW_ENCODING = "cl100k_base"

#: LoCoMo's file category -> LoCoMo-Plus's category name (its judge template's key).
JUDGE_CATEGORY: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "common-sense",
    4: "single-hop",
    5: "adversarial",
}
#: LoCoMo-Plus's label scores (`LABEL_TO_SCORE`); any other label, or none, scores 0.
JUDGE_SCORES: dict[str, float] = {"correct": 1.0, "partial": 0.5, "wrong": 0.0}
#: LoCoMo-Plus's judge length (its `--max-tokens` default) at temperature 0.
JUDGE_MAX_TOKENS = 512
#: The name of LoCoMo-Plus's label rule in memevals.core.official_judge.LABEL_RULES.
JUDGE_RULE = "locomo_plus_label"
#: The names LoCoMo-Plus's call wrapper puts into its start sentence: its parameters' defaults
#: (`llm_as_judge.py` calls `call_model` without them).
JUDGE_WRAPPER_NAMES = ("A", "B")


@dataclass(frozen=True)
class InlineText:
    """A string written inline in an upstream function: the `nth` (from 0) string constant in
    the body of function `scope`, in source order (docstring included), pinned by its sha256.

    memevals.core.upstream locates assigned strings; a few of upstream's texts are operands of
    an expression (`qa['question'] + "..."`) or arguments, and are found this way.
    """

    file: UpstreamFile
    scope: str
    nth: int
    sha256: str

    @property
    def locator(self) -> str:
        return f"{self.scope}:str#{self.nth}"

    def __str__(self) -> str:
        return f"{self.locator} in {self.file}"


def _source_dir(file: UpstreamFile, data_dir: str | os.PathLike[str] | None) -> str | None:
    """The task's data dir when it holds this file's copy; else None (MEMEVALS_DATA_DIR, then
    the verified cache). Either way the copy's sha256 is checked."""
    if data_dir is not None and (Path(data_dir) / file.relpath).is_file():
        return str(data_dir)
    return None


def inline_text(text: InlineText, data_dir: str | os.PathLike[str] | None = None) -> str:
    """The text of an `InlineText`, its digest verified.

    Args:
        text: the locator.
        data_dir: a data dir holding `upstream/` (default MEMEVALS_DATA_DIR, else the cache).

    Returns:
        The string.
    """
    module = upstream_module(text.file, data_dir)
    scopes = [
        n
        for n in module.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == text.scope
    ]
    found = sorted(
        (
            n
            for scope in scopes[:1]
            for n in ast.walk(scope)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        ),
        key=lambda n: (n.lineno, n.col_offset),
    )
    if text.nth >= len(found):
        raise UpstreamError(
            f"template {text.locator!r} not found ({len(found)} string(s)) in {text.file}",
            file=text.file.relpath,
        )
    value = found[text.nth].value
    assert isinstance(value, str)
    actual = template_digest(value)
    if actual != text.sha256:
        raise UpstreamError(
            f"template {text.locator!r} extracted with sha256 {actual}, expected "
            f"{text.sha256}: the upstream file or the locator changed",
            file=text.file.relpath,
        )
    return value


def _t(file: UpstreamFile, locator: str, sha256: str) -> Template:
    return Template(file, locator, sha256)


#: Every upstream text of the protocol, by the name OfficialTexts gives it.
TEMPLATES: dict[str, Template | InlineText] = {
    # the start sentence, the short-answer prompt, the category-5 prompt and the batch prompt
    # (upstream counts a question as its batch prompt numbers it, even when asking one)
    "start": _t(
        EVALUATE_GPTS,
        "CONV_START_PROMPT",
        "68e12aada9c2b0308cf3c92cc50565391d9a408f953413565a573bb15ff0a4d8",
    ),
    "answer": _t(
        EVALUATE_GPTS,
        "QA_PROMPT",
        "a30fe18a6c9b58c5d22b6188860e5a99cdfef33fcc8a36141b571d954b9b0266",
    ),
    "answer_adversarial": _t(
        EVALUATE_GPTS,
        "QA_PROMPT_CAT_5",
        "57005b715f4c2a7c848ab0d7829037afd08d5bb68ba626e4f5a83e8493104986",
    ),
    "batch": _t(
        EVALUATE_GPTS,
        "QA_PROMPT_BATCH",
        "b5fdfd98e371668491994977a945b384d2858b8a57cf413ed13e096408d8a18c",
    ),
    # in `get_gpt_answers`: the category-2 hint, the two-option question, the refusal option
    "temporal_hint": InlineText(
        EVALUATE_GPTS,
        "get_gpt_answers",
        22,
        "dae3c8b7fe10cf0fdc3b3e062dae355dad2af77e82b78fe90cb67426f2a927fe",
    ),
    "two_options": InlineText(
        EVALUATE_GPTS,
        "get_gpt_answers",
        25,
        "768d9890ca3a9aba6d2665dd44ac6e9822502677abf5a1e05f27e7ad8525b854",
    ),
    "not_mentioned": InlineText(
        EVALUATE_GPTS,
        "get_gpt_answers",
        26,
        "2a542960aa38558c7ea526c58ca44e64944dd4a6c9c9db658f3fa6f6da9792c3",
    ),
    # LoCoMo-Plus's judge: the start sentence its model call (`call_llm`) puts before the
    # prompt, the pattern its parser tries first, and its templates by category
    "judge_start": _t(
        PLUS_UTILS,
        "CONV_START_PROMPT",
        "bfb101603e38a36cfecfb7e989ae51d537907ad7ac0b89020e2b7c01046d3cb7",
    ),
    "judge_pattern": InlineText(
        PLUS_JUDGE,
        "_parse_judge_response",
        4,
        "a52d3cad340081f7b19490a78252f5a235388328a3ffda970947fb98d9ff54db",
    ),
    "judge_multi_hop": _t(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[multi-hop]",
        "6eba7bc55145d57a06c90fb96a9daf7965b68dbb480b975d2b1583b59124741a",
    ),
    "judge_single_hop": _t(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[single-hop]",
        "e0cc6dfb7fb33aeafeed27e6db214eff15278738298384817479f09f5f5997d4",
    ),
    "judge_temporal": _t(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[temporal]",
        "f951d90c7a759c12eff5ceeb963129c2be79b529209b9fb2ddcfbafb2a40aa3d",
    ),
    "judge_common_sense": _t(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[common-sense]",
        "3147a06f69f3229233ecb367249c42afe6485d45c18957c6d2286a2eb28ea904",
    ),
    "judge_adversarial": _t(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[adversarial]",
        "2a73bc69e8051121a6332c3fb14605574bacc3cb58173fdd72b5803f4bd40a69",
    ),
    "judge_cognitive": _t(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[Cognitive]",
        "83875348ab831a4f2932457bc951d37654db9f77ecaf50e7a8aacf5ff566a08b",
    ),
    "judge_default": _t(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[default]",
        "117bbafb8c4d388e5fe814a098851c361087497b515331b457e144bf1cffe9f9",
    ),
}

#: LoCoMo-Plus category name -> OfficialTexts field of its judge template.
_JUDGE_FIELDS: dict[str, str] = {
    "multi-hop": "judge_multi_hop",
    "single-hop": "judge_single_hop",
    "temporal": "judge_temporal",
    "common-sense": "judge_common_sense",
    "adversarial": "judge_adversarial",
    "Cognitive": "judge_cognitive",
}


@dataclass(frozen=True)
class OfficialTexts:
    """The upstream texts, extracted and digest-verified (one field per TEMPLATES entry)."""

    start: str
    answer: str
    answer_adversarial: str
    batch: str
    temporal_hint: str
    two_options: str
    not_mentioned: str
    judge_start: str
    judge_pattern: str
    judge_multi_hop: str
    judge_single_hop: str
    judge_temporal: str
    judge_common_sense: str
    judge_adversarial: str
    judge_cognitive: str
    judge_default: str

    def digests(self) -> dict[str, str]:
        """Template name -> its sha256, for the logs."""
        return {f.name: TEMPLATES[f.name].sha256 for f in fields(self)}

    def judge_template(self, category: str) -> str:
        """The judge template of a LoCoMo-Plus category name; the default one for any other
        name (as upstream's `get_judge_prompt`)."""
        text: str = getattr(self, _JUDGE_FIELDS.get(category, "judge_default"))
        return text


def check_protocol(protocol: str) -> str:
    """`protocol` if it is one of PROTOCOLS, else a ValueError naming the option."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol={protocol!r} is not one of {', '.join(PROTOCOLS)}")
    return protocol


def load_text(name: str, data_dir: str | os.PathLike[str] | None = None) -> str:
    """One upstream text by its TEMPLATES name, digest-verified.

    Args:
        name: a key of TEMPLATES.
        data_dir: the task's data dir (used when it holds the upstream copy).

    Returns:
        The text.
    """
    template = TEMPLATES[name]
    where = _source_dir(template.file, data_dir)
    try:
        if isinstance(template, InlineText):
            return inline_text(template, where)
        return extract_template(template, where)
    except UpstreamError as exc:
        raise UpstreamError(
            f"LoCoMo official template {name!r} ({template.locator} in {template.file}, "
            f"sha256 {template.sha256}): {exc}"
        ) from exc


@functools.lru_cache(maxsize=8)
def _load_texts(data_dir: str | None) -> OfficialTexts:
    texts = OfficialTexts(**{f.name: load_text(f.name, data_dir) for f in fields(OfficialTexts)})
    # the digest pins the pattern, so the copy of any data dir serves the label rule
    _JUDGE_PATTERN.setdefault("pattern", texts.judge_pattern)
    return texts


def load_texts(data_dir: str | os.PathLike[str] | None = None) -> OfficialTexts:
    """Every upstream text of the protocol, digest-verified (cached per data dir).

    Args:
        data_dir: the task's data dir (used when it holds the upstream copies).

    Returns:
        The texts.
    """
    return _load_texts(None if data_dir is None else str(data_dir))


# ---------------------------------------------------------------------------------------------
# The question


def option_order(sample_id: str, seed: int) -> bool:
    """True when the refusal option comes first, as upstream's `random.random() < 0.5` branch;
    drawn from `random.Random("<seed>:<sample id>")` so a run can be repeated."""
    return random.Random(f"{seed}:{sample_id}").random() < 0.5


def two_options(qa: QA, refusal_first: bool, texts: OfficialTexts) -> list[str]:
    """The (a) and (b) options of a category-5 question: upstream's refusal and the question's
    `adversarial_answer` (upstream's `answer`), in the drawn order."""
    if qa.adversarial_answer is None:
        raise ValueError(
            f"question {qa.index}: a category-5 question needs an adversarial_answer for "
            "upstream's two-option form; use adversarial='open' to ask it as a plain question"
        )
    refusal = texts.not_mentioned
    return [refusal, qa.adversarial_answer] if refusal_first else [qa.adversarial_answer, refusal]


def question_text(qa: QA, options: Sequence[str] | None, texts: OfficialTexts) -> str:
    """The question as upstream puts it into its prompt (its `questions` entry)."""
    if qa.category == CATEGORY_IDS["temporal"]:
        return qa.question + texts.temporal_hint
    if qa.category == CATEGORY_IDS["adversarial"] and options is not None:
        return qa.question + texts.two_options.format(*options)
    return qa.question


def question_block(qa: QA, options: Sequence[str] | None, texts: OfficialTexts) -> str:
    """The instruction that follows the context: upstream's short-answer prompt, or its
    category-5 prompt for a two-option question."""
    template = texts.answer_adversarial if options is not None else texts.answer
    return template.format(question_text(qa, options, texts))


def choice_prediction(reply: str, options: Sequence[str]) -> str:
    """Upstream's `get_cat_5_answer`: a one-character reply picks (b) unless it holds "a", a
    three-character one picks (b) unless it holds "(a)"; any other reply is kept, stripped and
    lower-cased (its refusal wording is what category 5 scores)."""
    prediction = reply.strip().lower()
    if len(prediction) == 1:
        return options[0] if "a" in prediction else options[1]
    if len(prediction) == 3:
        return options[0] if "(a)" in prediction else options[1]
    return prediction


# ---------------------------------------------------------------------------------------------
# The conversation


def start_sentence(conv: Conversation, texts: OfficialTexts) -> str:
    """Upstream's start sentence with the two speakers, in the file's order."""
    return texts.start.format(conv.speaker_a, conv.speaker_b)


def turn_block(turn: Turn, conv_id: str) -> str:
    """One turn as `get_input_context` writes it; a turn with an image adds its caption line."""
    block = f'{turn.speaker} said, "{turn.text}"\n'
    if turn.img_url:
        if turn.blip_caption is None:
            raise DataError(
                "a turn with img_url needs a blip_caption (upstream shows it after the turn)",
                record=f"{conv_id} {turn.dia_id}",
                field="blip_caption",
            )
        block += f"[shares {turn.blip_caption}]\n"
    return block


def session_header(session: Session) -> str:
    return f"DATE: {session.date_time}\nCONVERSATION:\n"


class ConversationWindow:
    """`get_input_context` for one conversation: the text kept for a question of a given token
    count under a given window. What upstream counts before each turn (the header with the
    turn, and the text built so far) does not depend on the question, so those counts are
    computed once per conversation, lazily, as far as any question's walk reaches."""

    def __init__(self, conv: Conversation, window: int, counter: TokenCounter | None) -> None:
        self.conv = conv
        self.limit = window - PER_QA_TOKEN_BUDGET
        self.counter = counter
        # the walk: (session position, turn position), last turn first
        self.steps = [
            (s, t)
            for s in range(len(conv.sessions) - 1, -1, -1)
            for t in range(len(conv.sessions[s].turns) - 1, -1, -1)
        ]
        self.blocks = [[turn_block(t, conv.sample_id) for t in s.turns] for s in conv.sessions]
        self.headers = [session_header(s) for s in conv.sessions]
        self._counts: list[int] = []  # per step: header-and-turn count + count so far

    def render(self, stop: int | None) -> str:
        """The text when the walk stops at step `stop` (None: every turn kept)."""
        n = len(self.conv.sessions)
        if stop is None:
            first_session, first_turn = 0, 0
        else:
            first_session, turn = self.steps[stop]
            first_turn = turn + 1
        parts = [self.headers[first_session], *self.blocks[first_session][first_turn:]]
        for s in range(first_session + 1, n):
            parts += [self.headers[s], *self.blocks[s]]
        # one "\n\n" per session walked, appended at the end of the text built so far
        parts.append("\n\n" * (n - first_session))
        return "".join(parts)

    def _so_far(self, step: int) -> str:
        """The text built before the turn of `step` is considered."""
        session, turn = self.steps[step]
        n = len(self.conv.sessions)
        parts = list(self.blocks[session][turn + 1 :])
        for s in range(session + 1, n):
            parts += [self.headers[s], *self.blocks[s]]
        parts.append("\n\n" * (n - session))
        return "".join(parts)

    @functools.cached_property
    def _byte_bound(self) -> int:
        """Bytes of the whole text plus of the widest header-and-turn: a cl100k token is at
        least one byte, and the text built so far is never longer than the whole text, so this
        bounds every count upstream compares before the question's."""
        whole = len(self.render(None).encode())
        widest = max(
            len((self.headers[s] + block).encode())
            for s, blocks in enumerate(self.blocks)
            for block in blocks
        )
        return whole + widest

    def stop_for(self, counted: Sequence[str]) -> int | None:
        """The step at which upstream's walk stops for a question whose counted texts (the
        batch instruction with the numbered question, and the start sentence) are `counted`;
        None when every turn is kept."""
        if self._byte_bound + sum(len(t.encode()) for t in counted) < self.limit:
            return None  # settled without counting: nothing can be cut
        counter = self._exact()
        question_tokens = sum(counter(t) for t in counted)
        for step in range(len(self.steps)):
            if step == len(self._counts):
                session, turn = self.steps[step]
                head = counter(self.headers[session] + self.blocks[session][turn])
                self._counts.append(head + counter(self._so_far(step)))
            if not self._counts[step] + question_tokens < self.limit:
                return step
        return None

    def _exact(self) -> TokenCounter:
        if self.counter is None or self.counter.name != WINDOW_ENCODING:
            raise ValueError(
                f"protocol=official: the window of {self.limit + PER_QA_TOKEN_BUDGET} tokens "
                f"may cut {self.conv.sample_id}, and upstream's rule counts with "
                f"{WINDOW_ENCODING}, which needs the bpe-openai package: pip install "
                f"'memevals[tokens]', or {options.protocol_fix('memevals')}"
            )
        return self.counter


def window_counter() -> TokenCounter | None:
    """The cl100k_base counter when bpe-openai is installed, else None (the byte bound still
    settles every window that cuts nothing)."""
    try:
        return get_token_counter(WINDOW_ENCODING)
    except ValueError:
        return None


def conversation_window(
    conv: Conversation, window: int, counter: TokenCounter | None
) -> ConversationWindow:
    """A `ConversationWindow` (see there) of `conv` under `window` tokens."""
    return ConversationWindow(conv, window, counter)


# ---------------------------------------------------------------------------------------------
# Contexts by mode


def dialog_line(turn: Turn) -> str:
    """A turn as upstream's dialog database holds it (no caption)."""
    return f'{turn.speaker} said, "{turn.text}"'


def rag_lines(units: Sequence[MemoryUnit], blank_line: bool) -> str:
    """`get_rag_context`'s text: `<date>: <text>` per unit, in the given (rank) order."""
    sep = "\n\n" if blank_line else "\n"
    return sep.join(f"{u.date}: {u.text}" if u.date else u.text for u in units)


def _official_unit(conv: Conversation, unit: MemoryUnit, retrieval_unit: str) -> MemoryUnit:
    if retrieval_unit != "dialog":
        return unit  # observations and summaries are shown as their text
    turn = conv.turn(unit.id)
    assert turn is not None  # dialog units are built from the turns
    return MemoryUnit(unit.id, dialog_line(turn), unit.date, unit.ids)


def memory_items_context(conv: Conversation, items: Sequence[MemoryItem]) -> str:
    """A memory system's items in upstream's rag layout, in rank order: a verbatim item as its
    cited turns' dialog lines, any other item as its own text, each dated by its session (or
    the item's own date)."""
    dates = {s.index: s.date_time for s in conv.sessions}
    sessions = {f"S{s.index}": s for s in conv.sessions}
    units: list[MemoryUnit] = []
    for rank, item in enumerate(items):
        cited: list[Turn] = []
        for source in item.source_ids:
            if source in sessions:
                cited.extend(sessions[source].turns)
            elif (turn := conv.turn(source)) is not None:
                cited.append(turn)
        if item.verbatim and cited:
            units += [MemoryUnit(t.dia_id, dialog_line(t), dates[t.session]) for t in cited]
            continue
        date = item.date or (dates[cited[0].session] if cited else "")
        units.append(MemoryUnit(f"item{rank}", item.text.strip(), date))
    blank_line = any("\n" in i.text for i in items if not i.verbatim)
    return rag_lines(units, blank_line)


def official_memory_renderer(conversations: Sequence[Conversation]) -> Renderer:
    """The renderer of a memory subject under protocol=official: the system's items in
    upstream's rag layout (`memory_items_context`); the retrieved ids as under memevals (the
    dia ids the items cite, in rank order)."""
    by_id = {c.sample_id: c for c in conversations}

    def render(item: Any, history: History, retrieval: Retrieval) -> Rendered:
        conv = by_id[history.history_id]
        cited = memory_context(conv, retrieval.items).retrieved_ids or ()
        return Rendered(
            memory_items_context(conv, retrieval.items),
            {"retrieved_ids": list(cited), "turn_level": True},
        )

    return render


def official_context(
    memory: LocomoMemory,
    conv: Conversation,
    qa: QA,
    question: str,
    windows: dict[tuple[str, int], ConversationWindow],
    texts: OfficialTexts,
) -> LocomoContext:
    """The context upstream puts before the instruction, for `memory.context`.

    `full` and `truncated` are `get_input_context` with the start sentence (window: gpt-4-turbo's
    128,000 tokens, or `max_context_tokens`); `rag` is `get_rag_context` over the units
    `memory` retrieves; `oracle` is that layout over the gold evidence turns (chronological);
    `none` and `memory` give no context here (a memory system's comes at run time).
    """
    mode = memory.context
    if mode in ("full", "truncated"):
        window = FULL_WINDOW if mode == "full" else int(memory.max_context_tokens or 0)
        key = (conv.sample_id, window)
        if key not in windows:
            windows[key] = conversation_window(conv, window, window_counter())
        walk = windows[key]
        start = start_sentence(conv, texts)
        # upstream counts the question as its batch prompt numbers it, plus the start sentence
        stop = walk.stop_for([texts.batch + f"0: {question}", start])
        return LocomoContext(text=start + walk.render(stop))
    if mode == "rag":
        positions, units = memory.retrieve(conv, qa.question)
        assert memory.retrieval_unit is not None
        shown = [_official_unit(conv, units[p], memory.retrieval_unit) for p in positions]
        return LocomoContext(
            text=rag_lines(shown, blank_line=memory.retrieval_unit == "summary"),
            retrieved_ids=tuple(i for p in positions for i in units[p].metric_ids),
        )
    if mode == "oracle":
        turns, _ = evidence_turns(conv, qa)
        dates = {s.index: s.date_time for s in conv.sessions}
        units_ = [MemoryUnit(t.dia_id, dialog_line(t), dates[t.session]) for t in turns]
        return LocomoContext(
            text=rag_lines(units_, blank_line=False), retrieved_ids=tuple(t.dia_id for t in turns)
        )
    if mode in ("none", MEMORY_CONTEXT):
        return LocomoContext(text="")
    raise ValueError(f"protocol=official has no layout for context={mode!r}")


# ---------------------------------------------------------------------------------------------
# The judge (LoCoMo-Plus's)


def evidence_text(conv: Conversation, qa: QA) -> str:
    """The judge's evidence as LoCoMo-Plus's unified input writes it: each evidence id (the raw
    strings split at ";") as `<speaker>：<text>` of the turn at that position of its session,
    or a marker for an id that names no turn or cannot be read."""
    sessions = {s.index: s for s in conv.sessions}
    lines: list[str] = []
    for raw in qa.evidence:
        for part in str(raw).split(";"):
            evid = part.strip()
            if not evid:
                continue
            pieces = evid.split(":")
            try:
                if len(pieces) != 2:
                    raise ValueError(evid)
                session = int(pieces[0].replace("D", ""))
                position = int(pieces[1])
            except ValueError:
                lines.append(f"[{evid}] [Parse error]")
                continue
            turns = sessions[session].turns if session in sessions else ()
            if 0 <= position - 1 < len(turns):
                turn = turns[position - 1]
                lines.append(f"{turn.speaker}：{turn.text}")
            else:
                lines.append(f"[{evid}] [Missing turn]")
    return "\n".join(lines)


def judge_prompt(
    texts: OfficialTexts, category: str, evidence: str, prediction: str, gold: str
) -> str:
    """LoCoMo-Plus's judge prompt: its template for `category` (a LoCoMo-Plus category name)
    filled with the reference, the prediction and the evidence (`get_judge_prompt`), before
    its model call's wrapper (`judge_request`)."""
    return texts.judge_template(category).format(gold=gold, pred=prediction, evidence=evidence)


def judge_prefix(texts: OfficialTexts) -> str:
    """The prefix LoCoMo-Plus's model call puts before a judge prompt (`_prepend_conv_prefix`):
    its start sentence with the default names "A" and "B"."""
    return texts.judge_start.format(*JUDGE_WRAPPER_NAMES)


def judge_request(texts: OfficialTexts, category: str, evidence: str, gold: str) -> OfficialJudge:
    """LoCoMo-Plus's judge request as its call site sends it.

    `llm_as_judge.py` fills the category's template (`get_judge_prompt`) and calls
    `call_model` with its default backend `call_llm` and no category, so the prompt leaves as
    `_prepend_conv_prefix` makes it: the start sentence named "A" and "B", then the filled
    prompt stripped, one user message, at the judge's temperature 0 and 512 tokens.

    Args:
        texts: the verified upstream texts.
        category: a LoCoMo-Plus category name (its template's key).
        evidence: the evidence as the unified input writes it.
        gold: the reference ("" for none).

    Returns:
        The request, split around the (stripped) reply it grades.
    """
    before, after = split_around(lambda reply: judge_prompt(texts, category, evidence, reply, gold))
    return OfficialJudge(
        before=before,
        after=after,
        rule=JUDGE_RULE,
        max_tokens=JUDGE_MAX_TOKENS,
        temperature=0.0,
        strip_reply=True,
        prefix=judge_prefix(texts),
        strip_prompt=True,
    )


def parse_judge_reply(reply: str, pattern: str) -> tuple[str, bool]:
    """The label LoCoMo-Plus reads from a judge reply (`_parse_judge_response`), and whether it
    came from a verdict object rather than the word search.

    The first match of its pattern; else the reply as a JSON object's "label"; when that fails,
    the first of "correct", "wrong", "partial" found in the lower-cased reply (so "incorrect"
    reads as correct, as upstream). An empty label means none was found.
    """
    label = ""
    raw = (reply or "").strip()
    try:
        m = re.search(pattern, raw, re.DOTALL)
        if m:
            return m.group(1).strip(), True
        obj: Any = json.loads(raw)
        label = (obj.get("label") or "").strip()
        # upstream reads the reason next; a reason that is not text fails there and sends
        # the reply to the word search with this label kept
        (obj.get("reason") or "").strip()
        return label, True
    except Exception:
        lowered = raw.lower()
        for word in ("correct", "wrong", "partial"):
            if word in lowered:
                return word, False
    return label, False


def judge_score(label: str) -> float:
    """LoCoMo-Plus's score of a label: correct 1, partial 0.5, anything else 0."""
    return JUDGE_SCORES.get((label or "").strip().lower(), 0.0)


#: The judge pattern once loaded (any verified copy: its digest pins it).
_JUDGE_PATTERN: dict[str, str] = {}


def plus_label(grader_reply: str) -> OfficialLabel:
    """LoCoMo-Plus's label rule: `parse_judge_reply` then `judge_score`. The reply is clear
    when a verdict object gave one of the three labels; the word search never is."""
    if "pattern" not in _JUDGE_PATTERN:
        _JUDGE_PATTERN["pattern"] = load_text("judge_pattern")
    label, from_object = parse_judge_reply(grader_reply, _JUDGE_PATTERN["pattern"])
    clear = from_object and label.strip().lower() in JUDGE_SCORES
    return OfficialLabel(label, judge_score(label), clear)


LABEL_RULES.setdefault(JUDGE_RULE, plus_label)


def judge_inputs_official(conv: Conversation, qa: QA) -> Mapping[str, str]:
    """What LoCoMo-Plus's judge reads of a LoCoMo question besides the prediction."""
    gold = qa.answer
    return {
        "category": JUDGE_CATEGORY[qa.category],
        "evidence": evidence_text(conv, qa),
        "gold": "" if gold is None or gold == "" else str(gold),
    }

"""LoCoMo's official protocol (`protocol=official`): upstream's reader prompt and layout.

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

The judge (`-T judge=true`) is LoCoMo-Plus's: memevals.benchmarks.locomo_plus.official_judge.
"""

from __future__ import annotations

import functools
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memevals.benchmarks.locomo.data import CATEGORY_IDS, QA, Conversation, Session, Turn
from memevals.benchmarks.locomo.memory import (
    LocomoContext,
    LocomoMemory,
    evidence_turns,
    memory_context,
)
from memevals.benchmarks.locomo_plus.official_judge import JudgeTexts, load_judge_texts
from memevals.core import options
from memevals.core.files import DataError
from memevals.core.memory_harness import Rendered, Renderer, Retrieval
from memevals.core.memory_options import MEMORY_CONTEXT
from memevals.core.memory_system import History, MemoryItem
from memevals.core.retrievers import MemoryUnit
from memevals.core.tokens import TokenCounter, get_token_counter
from memevals.core.upstream import InlineText, Template, UpstreamFile, inline_text, pinned_text

__all__ = [
    "ANSWER_TOKENS",
    "DEFAULT_PROTOCOL",
    "EVALUATE_GPTS",
    "FULL_WINDOW",
    "PER_QA_TOKEN_BUDGET",
    "PROTOCOLS",
    "InlineText",
    "OfficialTexts",
    "check_protocol",
    "choice_prediction",
    "conversation_window",
    "empty_window_warning",
    "inline_text",
    "load_texts",
    "official_context",
    "official_memory_renderer",
    "option_order",
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
#: Upstream's answer length (`num_tokens_request`) at temperature 0.
ANSWER_TOKENS = 32
#: Tokens upstream keeps free per question asked in one call (`PER_QA_TOKEN_BUDGET`).
PER_QA_TOKEN_BUDGET = 50
#: The window of `context=full`: upstream's `MAX_LENGTH` of gpt-4-turbo, its long-context model.
FULL_WINDOW = 128_000
#: The cl100k_base encoding: what tiktoken gives upstream's gpt-4 / gpt-3.5 models.
WINDOW_ENCODING = "cl100k_base"


#: Every upstream text of the protocol, by the name OfficialTexts gives it.
TEMPLATES: dict[str, Template | InlineText] = {
    # the start sentence, the short-answer prompt, the category-5 prompt and the batch prompt
    # (upstream counts a question as its batch prompt numbers it, even when asking one)
    "start": Template(
        EVALUATE_GPTS,
        "CONV_START_PROMPT",
        "68e12aada9c2b0308cf3c92cc50565391d9a408f953413565a573bb15ff0a4d8",
    ),
    "answer": Template(
        EVALUATE_GPTS,
        "QA_PROMPT",
        "a30fe18a6c9b58c5d22b6188860e5a99cdfef33fcc8a36141b571d954b9b0266",
    ),
    "answer_adversarial": Template(
        EVALUATE_GPTS,
        "QA_PROMPT_CAT_5",
        "57005b715f4c2a7c848ab0d7829037afd08d5bb68ba626e4f5a83e8493104986",
    ),
    "batch": Template(
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
}

#: The names of LoCoMo's own texts (OfficialTexts' fields before the judge's).
_OWN: tuple[str, ...] = tuple(TEMPLATES)


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
    #: the judge's (`-T judge=true`): LoCoMo-Plus's
    judge: JudgeTexts

    def digests(self) -> dict[str, str]:
        """Template name -> its sha256, for the logs (the judge's under `judge_*`)."""
        own = {name: TEMPLATES[name].sha256 for name in _OWN}
        return own | self.judge.digests()


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
    return pinned_text(TEMPLATES[name], data_dir, f"LoCoMo official template {name!r}")


@functools.lru_cache(maxsize=8)
def _load_texts(data_dir: str | None) -> OfficialTexts:
    own = {name: load_text(name, data_dir) for name in _OWN}
    return OfficialTexts(**own, judge=load_judge_texts(data_dir))


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


def empty_window_warning(memory: LocomoMemory, empty: Sequence[str], questions: int) -> str:
    """The one-line warning of a run whose window holds no turn for some questions: upstream's
    `get_input_context` then keeps only the last session's header, and upstream sends that
    prompt, so memevals sends it too and says so once.

    Args:
        memory: the strategy (its mode and budget).
        empty: the conversation id of each question whose window holds no turn.
        questions: the questions built.

    Returns:
        The warning.
    """
    window = (
        f"max_context_tokens={memory.max_context_tokens}"
        if memory.context == "truncated"
        else f"the {FULL_WINDOW:,}-token window"
    )
    conversations = ", ".join(dict.fromkeys(empty))
    return (
        f"LoCoMo protocol=official: {window} holds no conversation turn for {len(empty)} of "
        f"{questions} questions ({conversations}); as upstream does, their prompts carry the "
        "start sentence and one session header with no conversation. Use a larger "
        "max_context_tokens (protocol=memevals refuses such a budget)"
    )


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
        return LocomoContext(text=start + walk.render(stop), empty=stop == 0)
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

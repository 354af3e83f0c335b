"""Counting a long prompt by its line chunks gives the tokenizer's own count on every LoCoMo
conversation and every LoCoMo-Plus stitched history (cl100k_base and o200k_base)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.memory import render_conversation
from memevals.benchmarks.locomo_plus.data import load_locomo_plus
from memevals.benchmarks.locomo_plus.memory import render_history
from memevals.benchmarks.locomo_plus.stitch import stitch_all
from memevals.core import tokens

pytest.importorskip("bpe_openai")


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_chunked_counts_equal_whole_text_counts(name: str, data_dir: Path) -> None:
    conversations = load_locomo(data_dir)
    stitched = stitch_all(load_locomo_plus(data_dir), conversations)
    texts = [render_conversation(c) for c in conversations]
    texts += [render_history(s) for s in stitched]
    assert len(texts) == 411
    encoding = tokens._encoding(name)
    counter = tokens.get_token_counter(name)
    want = [sum(len(encoding.encode_ordinary(p)) for p in tokens._pieces(t)) for t in texts]
    assert [counter(t) for t in texts] == want
    # the texts are long: each was counted by chunks, not whole
    assert min(len(tokens._blocks(t)) for t in texts) > 5

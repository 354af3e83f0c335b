"""Official LoCoMo QA score: worked examples (benchmarks/locomo/README.md#worked-examples) and
parity with plain rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from reference_locomo import prediction_variants, ref_normalize, ref_score

from memevals.benchmarks.locomo.data import load_locomo
from memevals.scorers import abstained, answer_tokens, locomo_f1, normalize_answer

WORKED = [
    (4, "mental health", "Mental health awareness", 0.8),
    (4, "self-care is important", "She realized that self care is really important.", 4 / 11),
    (2, "7 May 2023", "May 7, 2023", 1.0),
    (2, 2022, "2022", 1.0),
    (2, "The sunday before 25 May 2023", "Sunday, 21 May 2023", 2 / 3),
    (1, "Rainbow flag, transgender symbol", "transgender symbol, rainbow flag", 1.0),
    (1, "Rainbow flag, transgender symbol", "rainbow flag", 0.5),
    (1, "Rainbow flag, transgender symbol", "rainbow flag and transgender symbol", 2 / 3),
    (1, "pottery, camping, painting, swimming", "painting and swimming", 1 / 3),
    (1, "May 7, 2023", "7 May 2023", 0.65),
    (3, "Likely no; though she likes reading, she wants to be a counselor", "Likely no", 1.0),
    (3, "Yes, since she collects classic children's books", "Yes", 0.25),
    (5, None, "Not mentioned in the conversation", 1.0),
    (5, None, "No information available", 1.0),
    (5, None, "The answer is not mentioned.", 1.0),
    (5, None, "I don't know", 0.0),
    (5, None, "self-care is important", 0.0),
]


@pytest.mark.parametrize(("category", "gold", "prediction", "expected"), WORKED)
def test_worked_examples(category: int, gold: object, prediction: str, expected: float) -> None:
    assert locomo_f1(prediction, gold, category) == pytest.approx(expected, abs=1e-4)  # type: ignore[arg-type]


def test_worked_example_values_are_exact_fractions() -> None:
    # 0.3636 in the table is 4/11: 2 shared stems, 7 predicted, 4 gold tokens
    assert locomo_f1(
        "She realized that self care is really important.", "self-care is important", 4
    ) == pytest.approx(4 / 11, abs=1e-12)


def test_normalisation_order_and_stemming() -> None:
    assert (
        normalize_answer("The Sunday, before 25 May, 2023 and the rest!")
        == "sunday before 25 may 2023 rest"
    )
    assert answer_tokens("Running races and painted sunsets") == ["run", "race", "paint", "sunset"]
    # punctuation is deleted without a space: 'self-care' is one token, unlike 'self care'
    assert locomo_f1("a self-care routine", "self care", 4) == 0.0
    assert normalize_answer("D1:3") == "d13"


def test_adversarial_never_reads_gold_and_abstention_is_substring() -> None:
    assert locomo_f1("Not mentioned", None, 5) == 1.0
    assert locomo_f1("Yes", "Yes", 5) == 0.0  # the two conv-26 items that carry an answer
    assert abstained("It was NOT MENTIONED anywhere")
    assert not abstained("not  mentioned")  # two spaces: not the phrase


def test_errors() -> None:
    with pytest.raises(ValueError, match="unknown LoCoMo category"):
        locomo_f1("x", "y", 6)
    with pytest.raises(ValueError, match="needs a gold answer"):
        locomo_f1("x", None, 4)


def test_empty_and_stopword_only_strings_score_zero() -> None:
    assert locomo_f1("", "mental health", 4) == 0.0
    assert locomo_f1("the and a", "the", 4) == 0.0
    assert locomo_f1("mental health", "", 2) == 0.0


def test_parity_with_plain_rules_on_all_questions(data_dir: Path) -> None:
    """Every LoCoMo question x 15 prediction variants (≈30K cases) agree to 1e-9."""
    cases = 0
    for conv in load_locomo():
        context = [t.text for t in conv.turns]
        for qa in conv.qa:
            gold = str(qa.answer) if qa.answer is not None else str(qa.adversarial_answer)
            for pred in prediction_variants(qa.question, gold, context, seed=qa.index):
                ours = locomo_f1(pred, qa.answer, qa.category)
                ref = ref_score(pred, qa.answer, qa.category)
                assert abs(ours - ref) <= 1e-9, (conv.sample_id, qa.index, pred, ours, ref)
                cases += 1
            # any category rule applied to any gold must agree too (cross-category stress)
            for cat in (1, 2, 3, 4):
                pred = context[(qa.index * 7) % len(context)]
                assert abs(locomo_f1(pred, gold, cat) - ref_score(pred, gold, cat)) <= 1e-9
                cases += 1
    assert cases > 30_000


def test_normalize_matches_plain_rule_on_unicode() -> None:
    samples = ["İstanbul, Straße & Co.", "ÀÉÎ—“quoted”", "tab\tand\nnewline", "ﬁ ligature", "ΣΑΣ"]
    for s in samples:
        assert normalize_answer(s) == ref_normalize(s)


def test_fast_tokenizer_equals_normalize_then_stem() -> None:
    from nltk.stem import PorterStemmer

    ps = PorterStemmer()
    samples = [
        "the—end and“the”an",
        "Anderson and the Band",
        "THE_and-the",
        "a.b.c the",
        "ﬁ the ＡＮＤ",
        "école the\u00a0and",
        "²the³ and",
        "",
        "  ,,, ",
    ]
    for s in samples:
        assert answer_tokens(s) == [ps.stem(w) for w in ref_normalize(s).split()], s

"""Every task's samples equal the ones the code built before the one-folder-per-benchmark move.

The digests in fixtures/sample_fingerprints.json were written by the pre-move code (see
tests/support/sample_fingerprints.py); ids, messages and targets must stay byte-identical, in
Inspect and in lm-eval, for every case of the matrix (tasks × context modes × options).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sample_fingerprints import (
    DIGESTS,
    INSPECT_CASES,
    LM_EVAL_CASES,
    case_key,
    inspect_fingerprint,
    lm_eval_fingerprint,
)

EXPECTED: dict[str, dict[str, Any]] = json.loads(DIGESTS.read_text())


def test_every_case_has_a_recorded_digest() -> None:
    keys = {f"inspect: {case_key(n, o)}" for n, o in INSPECT_CASES}
    keys |= {f"lm_eval: {case_key(n, o)}" for n, o in LM_EVAL_CASES}
    assert keys == set(EXPECTED)


@pytest.mark.parametrize(
    ("name", "options"), INSPECT_CASES, ids=[case_key(*c) for c in INSPECT_CASES]
)
def test_inspect_samples_unchanged(name: str, options: dict[str, Any]) -> None:
    now = inspect_fingerprint(name, options)
    was = EXPECTED[f"inspect: {case_key(name, options)}"]
    assert now["samples"] == was["samples"]
    assert now["prompts"] == was["prompts"], "ids, messages or targets changed"


@pytest.mark.parametrize(
    ("name", "options"), LM_EVAL_CASES, ids=[case_key(*c) for c in LM_EVAL_CASES]
)
def test_lm_eval_documents_unchanged(name: str, options: dict[str, Any]) -> None:
    pytest.importorskip("lm_eval")
    now = lm_eval_fingerprint(name, options)
    was = EXPECTED[f"lm_eval: {case_key(name, options)}"]
    assert now["samples"] == was["samples"]
    assert now["prompts"] == was["prompts"], "ids, prompt texts or targets changed"
    assert now["metadata"] == was["metadata"], "document metadata changed (beyond prompt_tokens)"

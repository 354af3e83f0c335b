"""LoCoMo's unmatched-evidence warning on lm-eval (issue 40, item 7): lm-eval builds every
document of a task before `--limit` or `--samples` keeps some, so the warning is said when a
document it concerns is scored, once, and a run that asks none of them says nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_support import run_python

from memevals.lm_eval_tasks import include_path

pytest.importorskip("lm_eval")

NOTE = "'unmatched_evidence' lists its own"
#: the multi-hop documents in build order: the 94th (conv-42-q58) cites an evidence id that
#: matches no dialog turn; the first three cite none
UNMATCHED = 93


def _lm_eval(tmp_path: Path, *pick: str) -> str:
    cmd = [
        sys.executable, "-m", "lm_eval", "--model", "dummy", "--tasks", "locomo_multi_hop",
        "--metadata", json.dumps({"context": "oracle"}), *pick,
        "--include_path", include_path(), "--output_path", str(tmp_path / "out"),
    ]  # fmt: skip
    tmp_path.mkdir()
    proc = run_python(cmd, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout + proc.stderr


def test_the_warning_waits_for_a_document_it_concerns(tmp_path: Path, data_dir: Path) -> None:
    quiet = _lm_eval(tmp_path / "limit", "--limit", "3")
    assert NOTE not in quiet

    said = _lm_eval(tmp_path / "picked", "--samples", json.dumps({"locomo_multi_hop": [UNMATCHED]}))
    assert said.count(NOTE) == 1
    assert "conv-42-q58" in said

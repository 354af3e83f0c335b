"""The LongMemEval lm-eval YAML is the generator's output (memevals.lm_eval_tasks.longmemeval.
generate), byte for byte, and the generator runs without lm-eval."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memevals.benchmarks.longmemeval.data import CATEGORIES, VARIANTS
from memevals.lm_eval_tasks.longmemeval import generate

FOLDER = Path(generate.__file__).resolve().parent
FIX = "run `python -m memevals.lm_eval_tasks.longmemeval.generate`"


def test_checked_in_files_equal_the_generator_output() -> None:
    expected = generate.files()
    checked_in = {p.name: p.read_bytes() for p in FOLDER.glob("longmemeval_*.yaml")}
    assert sorted(checked_in) == sorted(expected), f"missing or stale files: {FIX}"
    for name, text in expected.items():
        assert checked_in[name] == text.encode("utf-8"), f"{name} differs: {FIX}"
    # one group per variant, one subtask per variant and category; the base stays hand-written
    assert len(expected) == len(VARIANTS) * (1 + len(CATEGORIES))
    assert (
        "_longmemeval_base.yaml" not in expected and (FOLDER / "_longmemeval_base.yaml").is_file()
    )


def test_the_generator_writes_what_it_checks(tmp_path: Path) -> None:
    generate.main(tmp_path)
    written = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert written == {n: t.encode("utf-8") for n, t in generate.files().items()}


def test_the_generator_needs_no_lm_eval() -> None:
    code = (
        "import sys; import memevals.lm_eval_tasks.longmemeval.generate; "
        "assert not {'lm_eval', 'datasets'} & set(sys.modules), sorted(sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]

"""Print a sha256 per task configuration over every sample's id, input, target and metadata.

Run in a process with another PYTHONHASHSEED than the test's (the hash of PROBE, printed too,
shows the seeds differ): equal digests mean no prompt, ordering or metadata depends on set/dict
iteration order or anything else that varies between processes. Usage: python
tests/support/dataset_digest.py
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from inspect_ai import Task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def configurations() -> dict[str, Callable[[], Task]]:
    from memevals.inspect_tasks.locomo import locomo
    from memevals.inspect_tasks.locomo_plus import locomo_plus
    from memevals.inspect_tasks.longmemeval import longmemeval

    lme = {"data_dir": str(FIXTURES), "verify_checksum": False}
    return {
        "locomo rag": lambda: locomo(context="rag", top_k=3),
        "locomo truncated": lambda: locomo(context="truncated", max_context_tokens=300),
        "locomo_plus oracle": lambda: locomo_plus(
            context="oracle", disclose_task=True, protocol="memevals"
        ),
        "longmemeval s full": lambda: longmemeval(variant="s", **lme),  # type: ignore[arg-type]
        "longmemeval s rag turns": lambda: longmemeval(
            variant="s",
            context="rag",
            retrieval_unit="turn",
            **lme,  # type: ignore[arg-type]
        ),
    }


def digest(task: Task) -> str:
    h = hashlib.sha256()
    for sample in task.dataset:
        messages = (
            [(m.role, m.text) for m in sample.input]
            if isinstance(sample.input, list)
            else [("user", sample.input)]
        )
        record = [sample.id, messages, sample.target, sample.metadata]
        h.update(json.dumps(record, sort_keys=True, default=str).encode("utf-8"))
    return h.hexdigest()


#: A string whose hash shows which hash seed a process has (equal seeds, equal hashes).
PROBE = "memevals hash seed probe"


def digests() -> dict[str, str]:
    """Each configuration's digest, built in this process."""
    return {name: digest(build()) for name, build in configurations().items()}


def main() -> None:
    out = digests()
    out["PYTHONHASHSEED"] = os.environ.get("PYTHONHASHSEED", "")
    out["hash of PROBE"] = str(hash(PROBE))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

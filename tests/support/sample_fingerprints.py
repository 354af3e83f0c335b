"""Fingerprints of every task's samples, to prove a refactor changes no prompt.

Each case builds one task (Inspect) or one lm-eval task with one set of options and hashes,
per sample, its id, its messages (role and text) and its target. The digests were written
from the code before the one-folder-per-benchmark move (`python tests/support/sample_fingerprints.py
--write`) and `tests/package/test_sample_fingerprints.py` checks the code against them.

Tasks are found by name (Inspect's registry, lm-eval's TaskManager), never by module path, so
the check does not depend on where the code lives.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
DIGESTS = FIXTURES / "sample_fingerprints.json"
# LongMemEval's recorded cases are of our own prompts: protocol=memevals (issue 23 made official
# the default); kept out of the case keys like the data options
LME = {"data_dir": str(FIXTURES), "verify_checksum": False, "protocol": "memevals"}

# LoCoMo's and LoCoMo-Plus's recorded cases are of our own prompts too (protocol is kept out of
# the case keys, see LME)
MEMEVALS = {"protocol": "memevals"}

#: (task name, -T options). Each row is one Inspect task build.
INSPECT_CASES: list[tuple[str, dict[str, Any]]] = [
    ("locomo", MEMEVALS),
    ("locomo", {**MEMEVALS, "context": "truncated", "max_context_tokens": 1500}),
    ("locomo", {**MEMEVALS, "context": "rag"}),
    ("locomo", {**MEMEVALS, "context": "rag", "retrieval_unit": "observation", "top_k": 3}),
    ("locomo", {**MEMEVALS, "context": "rag", "retrieval_unit": "summary", "top_k": 2}),
    ("locomo", {**MEMEVALS, "context": "oracle"}),
    ("locomo", {**MEMEVALS, "context": "none", "adversarial": "open"}),
    ("locomo", {**MEMEVALS, "seed": 3}),
    ("locomo_single_hop", MEMEVALS),
    ("locomo_multi_hop", {**MEMEVALS, "context": "none"}),
    ("locomo_temporal", {**MEMEVALS, "context": "none"}),
    ("locomo_open_domain", {**MEMEVALS, "context": "none"}),
    ("locomo_adversarial", {**MEMEVALS, "context": "none"}),
    ("locomo_plus", MEMEVALS),
    ("locomo_plus", {**MEMEVALS, "context": "rag"}),
    ("locomo_plus", {**MEMEVALS, "context": "oracle", "disclose_task": True}),
    ("locomo_plus", {**MEMEVALS, "context": "truncated", "gap_fix": True}),
    (
        "locomo_plus",
        {**MEMEVALS, "context": "none", "sample_order": "host", "token_counter": "approx"},
    ),
    ("locomo_plus_cognitive", MEMEVALS),
    ("locomo_plus_cognitive", {**MEMEVALS, "context": "rag", "top_k": 8}),
    ("longmemeval", {"variant": "s", **LME}),
    ("longmemeval", {"variant": "oracle", **LME}),
    ("longmemeval", {"variant": "m", "context": "truncated", "context_window": 4000, **LME}),
    ("longmemeval", {"variant": "s", "context": "rag", **LME}),
    ("longmemeval", {"variant": "s", "context": "rag", "retrieval_unit": "turn", **LME}),
    ("longmemeval", {"variant": "s", "context": "oracle", "history_format": "text", **LME}),
    ("longmemeval", {"variant": "s", "context": "none", **LME}),
    ("longmemeval", {"variant": "s", "chain_of_note": True, **LME}),
    ("longmemeval_oracle", LME),
    ("longmemeval_m", {"context": "truncated", "max_context_tokens": 3000, **LME}),
    ("longmemeval_abstention", LME),
    ("longmemeval_knowledge_update", LME),
    ("locomo_event_summary", {}),
    ("locomo_event_summary", {"sessions": 3, "conversations": "conv-26,conv-30"}),
    ("locomo_event_summary", {"incremental": True, "sessions": 2}),
    ("locomo_dialogue", {"bertscore": False}),
    ("locomo_dialogue", {"context": "truncated", "bertscore": False}),
    ("locomo_dialogue", {"context": "session", "seed": 4, "bertscore": False}),
    ("locomo_dialogue", {"context": "rag", "turns_per_conversation": 5, "bertscore": False}),
]

# Issue 30 pins the official protocol (the default) and BEAM too, before the redesign moves
# anything: the protocol shows in these cases' keys.
OFFICIAL = {"protocol": "official"}
BEAM = {"protocol": "official", "size": "100K"}
INSPECT_CASES += [
    ("locomo", OFFICIAL),
    ("locomo", {**OFFICIAL, "judge": True}),
    ("locomo", {**OFFICIAL, "context": "rag"}),
    ("locomo", {**OFFICIAL, "context": "none", "adversarial": "open"}),
    ("locomo", {**OFFICIAL, "gold": "audited", "context": "oracle"}),
    ("locomo_temporal", OFFICIAL),
    ("locomo_plus", OFFICIAL),
    ("locomo_plus_cognitive", OFFICIAL),
    ("longmemeval", {**LME, **OFFICIAL, "variant": "s"}),
    ("longmemeval", {**LME, **OFFICIAL, "variant": "oracle", "chain_of_note": True}),
    ("longmemeval", {**LME, **OFFICIAL, "variant": "s", "context": "rag"}),
    ("longmemeval_abstention", {**LME, **OFFICIAL}),
    ("beam", BEAM),
    ("beam", {**BEAM, "context": "rag"}),
    ("beam", {**BEAM, "context": "none"}),
    ("beam", {**BEAM, "protocol": "memevals"}),
    ("beam", {**BEAM, "protocol": "memevals", "context": "truncated", "max_context_tokens": 4000}),
    ("beam_event_ordering", BEAM),
    ("beam_summarization", {**BEAM, "protocol": "memevals"}),
]

#: (lm-eval task or group, --metadata). Each row is one lm-eval task build.
LM_EVAL_CASES: list[tuple[str, dict[str, Any]]] = [
    ("locomo", MEMEVALS),
    ("locomo", {**MEMEVALS, "context": "rag"}),
    ("locomo", {**MEMEVALS, "context": "truncated", "max_context_tokens": 1500}),
    ("locomo_temporal", {**MEMEVALS, "context": "oracle"}),
    ("locomo_plus", MEMEVALS),
    ("locomo_plus", {**MEMEVALS, "context": "rag", "disclose_task": True}),
    ("locomo_plus_cognitive", {**MEMEVALS, "context": "none", "sample_order": "host"}),
    ("longmemeval_s", LME),
    ("longmemeval_oracle", {"context": "rag", **LME}),
    ("longmemeval_m", {"context": "truncated", "context_window": 4000, **LME}),
    ("longmemeval_s_abstention", LME),
    ("locomo_event_summary", {}),
    ("locomo_dialogue", {"context": "session"}),
    ("locomo", OFFICIAL),
    ("locomo", {**OFFICIAL, "context": "rag"}),
    ("locomo_temporal", OFFICIAL),
    ("locomo_plus", OFFICIAL),
    ("longmemeval_s", {**LME, **OFFICIAL}),
    ("longmemeval_oracle", {**LME, **OFFICIAL}),
    ("beam", BEAM),
    ("beam", {**BEAM, "protocol": "memevals"}),
    ("beam_knowledge_update", {**BEAM, "context": "none"}),
]


def _digest(rows: Iterator[Any]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, ensure_ascii=False, sort_keys=True, default=str).encode())
        h.update(b"\n")
    return h.hexdigest()


def case_key(name: str, options: Mapping[str, Any]) -> str:
    # the official protocol shows in the key (the first cases were all of protocol=memevals)
    shown = {
        k: v for k, v in options.items() if k not in LME or (k == "protocol" and v != "memevals")
    }
    return f"{name} {json.dumps(shown, sort_keys=True)}"


def inspect_task(name: str, options: Mapping[str, Any]) -> Any:
    """The memevals task `name` built by Inspect's own registry (as `inspect eval` does)."""
    from importlib.metadata import entry_points

    from inspect_ai._util.registry import registry_create

    for ep in entry_points(group="inspect_ai"):
        if ep.name == "memevals":
            ep.load()
    try:
        return registry_create("task", f"memevals/{name}", **options)
    except LookupError:  # imported from the checkout (pytest's rootdir): the bare name
        return registry_create("task", name, **options)


def _message_text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return json.dumps([c.model_dump(exclude={"id"}) for c in content], sort_keys=True)


def inspect_fingerprint(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    task = inspect_task(name, options)
    samples = list(task.dataset)
    return {
        "samples": len(samples),
        "prompts": _digest(
            [
                s.id,
                [[m.role, _message_text(m)] for m in s.input],
                s.target,
            ]
            for s in samples
        ),
        "metadata": _digest([s.id, s.metadata] for s in samples),
    }


def lm_eval_fingerprint(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    from lm_eval.tasks import TaskManager, get_task_dict

    from memevals.lm_eval_tasks import include_path

    manager = TaskManager(include_path=include_path(), include_defaults=False, metadata=options)
    tasks: dict[str, Any] = {}

    def leaves(d: Mapping[Any, Any]) -> None:
        for key, value in d.items():
            if isinstance(value, Mapping):
                leaves(value)
            else:
                tasks[str(getattr(key, "group_name", key))] = value

    leaves(get_task_dict([name], manager))
    rows: list[Any] = []
    metadata: list[Any] = []
    for task_name in sorted(tasks):
        task = tasks[task_name]
        for doc in task.test_docs():
            md = json.loads(doc["metadata"])
            # The drift fix (issue 15): lm-eval documents now carry the same prompt_tokens as the
            # Inspect samples (counted per message) and, in rag/oracle mode, the same
            # unmatched_evidence list; neither is part of what the pre-move code wrote.
            md.pop("prompt_tokens", None)
            md.pop("unmatched_evidence", None)
            # Issue 16: every document carries its cluster (the conversation, or LongMemEval's
            # question) for the clustered standard errors; not part of what the pre-move code
            # wrote either, and no prompt depends on it.
            md.pop("cluster", None)
            # Issue 23: every document says which protocol built it; no prompt depends on it.
            md.pop("protocol", None)
            # Issue 29: how far back LoCoMo's evidence lies (report analysis axes); no prompt
            # depends on it.
            md.pop("sessions_after_evidence", None)
            md.pop("turns_after_evidence", None)
            md.pop("tokens_after_evidence", None)
            # Issue 29: LongMemEval's sessions after the answer session and, outside truncated
            # mode (which always logged it), its history tokens; no prompt depends on them.
            md.pop("sessions_after_answer", None)
            if md.get("benchmark") == "longmemeval" and md.get("context") != "truncated":
                md.pop("history_tokens", None)
            rows.append([task_name, doc["id"], task.doc_to_text(doc), task.doc_to_target(doc)])
            metadata.append([task_name, doc["id"], md])
    return {
        "samples": len(rows),
        "prompts": _digest(iter(rows)),
        "metadata": _digest(iter(metadata)),
    }


def compute_all() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, options in INSPECT_CASES:
        out[f"inspect: {case_key(name, options)}"] = inspect_fingerprint(name, options)
        print(f"inspect {case_key(name, options)}", file=sys.stderr)
    for name, options in LM_EVAL_CASES:
        out[f"lm_eval: {case_key(name, options)}"] = lm_eval_fingerprint(name, options)
        print(f"lm_eval {case_key(name, options)}", file=sys.stderr)
    return out


if __name__ == "__main__":
    os.environ.setdefault("MEMEVALS_DATA_DIR", str(REPO.parent / "shared" / "data"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = compute_all()
    if "--write" in sys.argv:
        DIGESTS.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    else:
        expected = json.loads(DIGESTS.read_text())
        bad = [k for k in result if result[k] != expected.get(k)]
        print("\n".join(f"DIFFERS: {k}\n  now {result[k]}\n  was {expected.get(k)}" for k in bad))
        print(f"{len(result) - len(bad)} same, {len(bad)} differ")

"""lm-eval functions of the beam tasks: documents, the chat each one sends, per-reply scores.

The documents come from the same `build` as the Inspect tasks (memevals.benchmarks.beam.samples).
A BEAM sample can be a whole replayed chat (context=full: the history as user/assistant
messages, then the question), so the task class `BeamTask` builds lm-eval's chat itself: with
`--apply_chat_template` the model gets exactly the messages the Inspect task sends (system text,
history, question; same roles, same contents). Without a chat template the messages are joined
as text (`plain_prompt`). BEAM is judged: run lm_eval with --log_samples, then
`python -m memevals.tools.judge`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.beam.samples import BeamOptions, build, parse_abilities
from memevals.core.build import Build
from memevals.core.prompt_item import PromptItem
from memevals.lm_eval_tasks import option_checks
from memevals.lm_eval_tasks.build_cache import RecentBuilds
from memevals.lm_eval_tasks.documents import only_reply, to_docs
from memevals.lm_eval_tasks.inspect_only import GENERATION, YAML_TASK, not_taken
from memevals.lm_eval_tasks.memory_contexts import with_memory
from memevals.lm_eval_tasks.task_class import MemevalsTask, no_fewshot

__all__ = [
    "INSPECT_ONLY",
    "BeamTask",
    "beam_docs",
    "beam_results",
    "chat_messages",
    "doc_to_text",
    "plain_prompt",
]

#: BeamOptions fields of the Inspect task only (the judge's are declared so in core.options).
INSPECT_ONLY = {"categories": YAML_TASK, "max_tokens": GENERATION}
_NOT_METADATA = not_taken(BeamOptions, INSPECT_ONLY)

#: The builds of this process: every ability of a size is built once for all the per-ability
#: subtasks of a run (one read of each chat, one ingestion per conversation by a memory system).
_BUILT: RecentBuilds[BeamOptions, Build] = RecentBuilds(build)


def _options(task: str, metadata: Mapping[str, Any]) -> BeamOptions:
    """BeamOptions from `--metadata` (a misspelt key is an error; the one set of defaults is
    BeamOptions')."""
    return option_checks.metadata_options(BeamOptions, task, metadata, ignored=_NOT_METADATA)


def beam_docs(categories: str | None = None, **metadata: Any) -> DatasetDict:
    """BEAM documents of the abilities `categories` (from the YAML; None = all ten).

    Args:
        categories: the subtask's ability.
        **metadata: the YAML's metadata and lm-eval's `--metadata` (size, protocol, ...).

    Returns:
        The one-split dataset lm-eval reads.
    """
    task = f"beam[{categories or 'all'}]"
    options = _options(task, metadata)
    wanted = option_checks.checked(task, lambda: parse_abilities(categories))
    everything = option_checks.checked(task, lambda: _BUILT(options))
    items = [i for i in everything.items if i.metadata["category"] in wanted]
    items = with_memory(task, items, everything.subject)
    return to_docs(items, task, messages=True)


def chat_messages(
    doc: Mapping[str, Any], system_instruction: str | None = None
) -> list[dict[str, str]]:
    """The messages a document sends: its system text (after lm-eval's `--system_instruction`,
    when given), the replayed chat, then the question; the Inspect task sends the same.

    Args:
        doc: a document `beam_docs` wrote.
        system_instruction: lm-eval's system instruction, if any.

    Returns:
        `{"role", "content"}` messages.
    """
    out: list[dict[str, str]] = []
    system = "\n\n".join(s for s in (system_instruction or "", str(doc["system"])) if s)
    if system:
        out.append({"role": "system", "content": system})
    for role, content in json.loads(str(doc["messages"])):
        out.append({"role": str(role), "content": str(content)})
    out.append({"role": "user", "content": str(doc["user"])})
    return out


def plain_prompt(messages: Sequence[Mapping[str, str]]) -> str:
    """The messages as one text for a model without a chat template: a single-turn sample as
    every memevals task writes it (system text, blank line, question); a replayed chat as
    `role: content` blocks separated by blank lines, ending with `assistant:`."""
    if len(messages) <= 2 and messages[-1]["role"] == "user":
        system = messages[0]["content"] if len(messages) == 2 else ""
        return PromptItem(id="", system=system, user=messages[-1]["content"], target="").as_text()
    blocks = [
        m["content"] if m["role"] == "system" else f"{m['role']}: {m['content']}" for m in messages
    ]
    return "\n\n".join([*blocks, "assistant:"])


def doc_to_text(doc: Mapping[str, Any]) -> str:
    """The document's prompt as one text (what lm-eval logs as its argument without a chat
    template)."""
    return plain_prompt(chat_messages(doc))


class BeamTask(MemevalsTask):
    """A memevals task whose prompt is the document's whole chat (`chat_messages`)."""

    def fewshot_context(
        self,
        doc: dict[str, Any],
        num_fewshot: int,
        system_instruction: str | None = None,
        apply_chat_template: bool = False,
        fewshot_as_multiturn: bool = False,
        chat_template: Callable[..., str] | None = None,
        gen_prefix: str | None = None,
    ) -> str:
        """The document's chat, rendered by the model's chat template when lm-eval applies one
        (`--apply_chat_template`), else as plain text. BEAM has no few-shot examples."""
        no_fewshot(str(self.config.task), num_fewshot)
        messages = chat_messages(doc, system_instruction)
        if apply_chat_template and chat_template is not None:
            return chat_template(messages, add_generation_prompt=not gen_prefix)
        return plain_prompt(messages)


def beam_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """BEAM is judged afterwards (`python -m memevals.tools.judge`); natively the prompt size.

    Args:
        doc: the document.
        results: lm-eval's generations for it (one).

    Returns:
        `prompt_tokens`.
    """
    only_reply(results)
    md = json.loads(str(doc["metadata"]))
    return {"prompt_tokens": float(md["prompt_tokens"])}

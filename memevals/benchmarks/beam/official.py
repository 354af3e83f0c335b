"""BEAM's official protocol (`protocol=official`): upstream's question, RAG and judge texts.

Upstream is mohammadtavakoli78/BEAM @ b2a3ee8b: `src/answer_probing_questions/
long_term_memory_methods.py` builds the reader's messages (`probing_question_evaluation`),
`src/prompts.py` holds the RAG and judge templates and `src/evaluation/compute_metrics.py` the
event-ordering equivalence call (`llm_equivalence`). Their text is third-party material and
never stands in memevals: each template below is a locator into the pinned file, taken out by
parsing it with `ast` (never running it) and checked against the sha256 recorded here
(memevals.core.upstream). What memevals writes itself is upstream's logic, as read from those
files (README.md#protocol):

- the long-context messages: the chat replayed as `{role, content}` messages, pruned from the
  tail (`prune_from_tail`), then the question message, whose f-string fills in the question;
- the RAG prompt: the template with `<context>` and `<question>` replaced, one user message;
- the judge prompt per rubric item: the template with `<rubric_item>` then `<llm_response>`
  replaced (its `<question>` slot is never filled upstream, so the grader sees the literal);
- the equivalence call: a system and a user message, the answer "yes" when the lower-cased
  reply contains "yes".

The files come from `<data dir>/upstream/BEAM/<path>` (MEMEVALS_DATA_DIR or the task's data dir),
else the verified download cache.
"""

from __future__ import annotations

import ast
import functools
import os
from dataclasses import dataclass

from memevals.core.upstream import (
    Template,
    UpstreamError,
    UpstreamFile,
    extract_template,
    upstream_module,
    verified,
)

__all__ = [
    "EQUIVALENCE_SYSTEM",
    "EQUIVALENCE_USER",
    "JUDGE",
    "METHODS",
    "METRICS",
    "PROMPTS",
    "QUESTION",
    "RAG",
    "OfficialTexts",
    "official_texts",
]

REPO = "mohammadtavakoli78/BEAM"
COMMIT = "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"
PROMPTS = UpstreamFile(
    REPO,
    COMMIT,
    "src/prompts.py",
    "2f630cc983ab0c34cfa80b1b4d340f5b51a9b4a3baa5af8aea9503c585eda06a",
)
METHODS = UpstreamFile(
    REPO,
    COMMIT,
    "src/answer_probing_questions/long_term_memory_methods.py",
    "d3fd96786d2d58a4b0b60ff726ebf00d1adf84f7bb8487abfd8768f3519cffd8",
)
METRICS = UpstreamFile(
    REPO,
    COMMIT,
    "src/evaluation/compute_metrics.py",
    "0715226375e9d24646c49c504194ba61cfb26d39415da5ebe9bdc4c6dcd3726c",
)

JUDGE = Template(
    PROMPTS,
    "unified_llm_judge_base_prompt",
    "d349c9a8559bed9c14bfe2e624212225b09218ff864258a739229c15f4c8e869",
)
RAG = Template(
    PROMPTS,
    "answer_generation_for_rag",
    "ed89b98d1024432a46bd297345961cf89d2429746daec37befb50db46e0c914a",
)
EQUIVALENCE_SYSTEM = Template(
    METRICS,
    "llm_equivalence.system_msg[content]",
    "0863c78c1b27d36c97bb7bfd2d4d6b88ef69b093e92bb4719e665527722413e2",
)
EQUIVALENCE_USER = Template(
    METRICS,
    "llm_equivalence.user_msg[content]",
    "6bf789b815decbeb1c27f5058e2416c2a6e167724c0433b1da27b0abe5cc73df",
)
#: The question message of the long-context path: not an assignment but the f-string `content`
#: of the one dict literal appended to `messages` inside `probing_question_evaluation`, so it is
#: located here (`question_template`) rather than by a core locator.
QUESTION = Template(
    METHODS,
    "probing_question_evaluation.messages.append[content]",
    "4283812ce472c57c6a31fcc428bcc6af70fb0b7da998934c4b672999b8bc7bc4",
)


def _fstring_template(node: ast.JoinedStr, template: Template) -> str:
    """An f-string as a `str.format` template (simple names only, as upstream's is)."""
    parts = []
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            parts.append(part.value.replace("{", "{{").replace("}", "}}"))
        elif (
            isinstance(part, ast.FormattedValue)
            and isinstance(part.value, ast.Name)
            and part.conversion == -1
            and part.format_spec is None
        ):
            parts.append("{" + part.value.id + "}")
        else:
            raise UpstreamError(
                f"template {template.locator!r}: a replacement field that is not a plain name",
                file=template.file.relpath,
            )
    return "".join(parts)


def question_template(data_dir: str | os.PathLike[str] | None = None) -> str:
    """The long-context question message as a format template with one field, `{query}`.

    Args:
        data_dir: a data dir holding `upstream/BEAM/` (default MEMEVALS_DATA_DIR, else the cache).

    Returns:
        The template, digest-verified.
    """
    module = upstream_module(QUESTION.file, data_dir)
    found = []
    for fn in ast.walk(module):
        if not isinstance(fn, ast.FunctionDef) or fn.name != "probing_question_evaluation":
            continue
        for node in ast.walk(fn):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "append"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "messages"
                and node.args
                and isinstance(node.args[0], ast.Dict)
            ):
                continue
            for key, value in zip(node.args[0].keys, node.args[0].values, strict=True):
                content = isinstance(key, ast.Constant) and key.value == "content"
                if content and isinstance(value, ast.JoinedStr):
                    found.append(value)
    if len(found) != 1:
        raise UpstreamError(
            f"template {QUESTION.locator!r}: {len(found)} matches in {QUESTION.file}, expected 1",
            file=QUESTION.file.relpath,
        )
    return verified(_fstring_template(found[0], QUESTION), QUESTION)


@dataclass(frozen=True)
class OfficialTexts:
    """Upstream's templates, extracted and verified."""

    question: str  # format template, field {query}
    rag: str  # placeholders <context>, <question>
    judge: str  # placeholders <question> (never filled), <rubric_item>, <llm_response>
    equivalence_system: str
    equivalence_user: str  # format template, fields {first_paragraph}, {second_paragraph}

    def question_message(self, question: str) -> str:
        """The long-context question message for `question`."""
        return self.question.format_map({"query": question})

    def rag_prompt(self, context: str, question: str) -> str:
        """The RAG prompt, filled in upstream's order."""
        return self.rag.replace("<context>", context).replace("<question>", question)

    def judge_prompt(self, rubric_item: str, response: str) -> str:
        """The judge prompt for one rubric item, filled in upstream's order."""
        return self.judge.replace("<rubric_item>", rubric_item).replace("<llm_response>", response)

    def equivalence_messages(self, reference_item: str, response_item: str) -> tuple[str, str]:
        """(system, user) of the equivalence call: the reference item first, as upstream asks."""
        user = self.equivalence_user.format_map(
            {"first_paragraph": reference_item, "second_paragraph": response_item}
        )
        return self.equivalence_system, user


def equivalent(reply: str) -> bool:
    """Upstream's reading of the equivalence reply: "yes" anywhere in it, lower-cased."""
    return "yes" in reply.lower()


@functools.lru_cache(maxsize=4)
def _texts(data_dir: str | None) -> OfficialTexts:
    return OfficialTexts(
        question=question_template(data_dir),
        rag=extract_template(RAG, data_dir),
        judge=extract_template(JUDGE, data_dir),
        equivalence_system=extract_template(EQUIVALENCE_SYSTEM, data_dir),
        equivalence_user=extract_template(EQUIVALENCE_USER, data_dir),
    )


def official_texts(data_dir: str | os.PathLike[str] | None = None) -> OfficialTexts:
    """Every official template, extracted from the pinned files and digest-verified.

    Args:
        data_dir: a data dir holding `upstream/BEAM/` (default MEMEVALS_DATA_DIR, else the cache).

    Returns:
        The texts.
    """
    return _texts(None if data_dir is None else str(data_dir))

"""A scripted tool-calling model for the agent mode (`-T context=agent`), in-process and from the
real CLI (`python tests/support/scripted_agent.py eval memevals/locomo --model scripted_agent/tools
-T context=agent ...`).

`scripted_agent/tools`, offered Inspect's memory tool:
- a write-pass session (`Session <n> of <m> ...`): creates `/memories/session_<n>.md` holding
  the session's text (everything after the prompt's first blank line), then replies "Saved.";
- the tool-call check before a write pass: views `/memories`;
- a question: views `/memories`, then answers `ANSWER`.
Offered an MCP knowledge-graph server's tools (`create_entities`, `read_graph`): an entity
`session_<n>` per session observing its date, and a question reads the graph first.
Without tools (compaction): "Noted." to a session or to a compaction summary, `SUMMARY` to
Inspect's summary request, `ANSWER` to a question. `scripted_agent/plain` never calls a tool
(a provider without tool calls); `viewer` views `/memories` where `tools` creates a file (a
write pass that stores nothing); `busy` views again after every tool result (it never stops
calling tools: every session spends its rounds). Tokens are words: the count Inspect's
compaction reads (`count_tokens`) and each call's usage (its input's words), so compaction is
predictable by hand.
"""

from __future__ import annotations

import re
from typing import ClassVar

from inspect_ai.model import (
    ChatMessage,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from scripted_api import ScriptedAPI, register, run_inspect

#: The models that call tools (`plain` never does).
TOOL_MODELS = ("tools", "viewer", "busy")
#: The reply to every question.
ANSWER = "pottery"
#: The reply to Inspect's summary request (CompactionSummary).
SUMMARY = "Summary: they talked."
#: How Inspect's summary request (CompactionSummary) and the summary it makes begin.
SUMMARY_REQUEST = "tasked with summarizing"
COMPACTED = "[CONTEXT COMPACTION SUMMARY]"
SESSION = re.compile(r"^Session (\d+) of (\d+) ")
HELD_ON = re.compile(r"held on (.*?)\. Later")


def words(messages: list[ChatMessage]) -> int:
    """The scripted token count of messages: their words (tool calls' arguments included)."""
    total = 0
    for m in messages:
        total += len(m.text.split())
        for call in getattr(m, "tool_calls", None) or []:
            total += sum(len(str(v).split()) for v in call.arguments.values())
    return total


def _last_user(messages: list[ChatMessage]) -> str:
    return next((m.text for m in reversed(messages) if isinstance(m, ChatMessageUser)), "")


class ScriptedAgent(ScriptedAPI):
    """The scripted agent (module docstring)."""

    provider: ClassVar[str] = "scripted_agent"

    async def count_tokens(self, input: str | list[ChatMessage], config: object = None) -> int:
        if isinstance(input, str):
            return len(input.split())
        return words(input)

    async def count_text_tokens(self, text: str) -> int:
        return len(text.split())

    def _graph_reply(self, messages: list[ChatMessage]) -> ModelOutput | str:
        """With an MCP knowledge-graph server's tools: one entity per session, named
        `session_<n>`, observing the session's date; a question reads the graph."""
        name = f"{self.provider}/{self.model_name}"
        user = _last_user(messages)
        session = SESSION.match(user)
        if isinstance(messages[-1], ChatMessageTool):
            return "Saved." if session else ANSWER
        if session:
            held = HELD_ON.search(user)
            entity = {
                "name": f"session_{session.group(1)}",
                "entityType": "session",
                "observations": [f"held on {held.group(1) if held else 'no date'}"],
            }
            return ModelOutput.for_tool_call(name, "create_entities", {"entities": [entity]})
        return ModelOutput.for_tool_call(name, "read_graph", {})

    def _tool_reply(self, messages: list[ChatMessage]) -> ModelOutput | str:
        name = f"{self.provider}/{self.model_name}"
        user = _last_user(messages)
        session = SESSION.match(user)
        view = ModelOutput.for_tool_call(name, "memory", {"command": "view", "path": "/memories"})
        if isinstance(messages[-1], ChatMessageTool):
            if self.model_name == "busy":
                return view
            return "Saved." if session else ANSWER
        if session and self.model_name != "viewer":
            text = user.split("\n\n", 1)[1]
            path = f"/memories/session_{session.group(1)}.md"
            args = {"command": "create", "path": path, "file_text": text}
            return ModelOutput.for_tool_call(name, "memory", args)
        return view

    def _plain_reply(self, messages: list[ChatMessage]) -> str:
        user = _last_user(messages)
        if SUMMARY_REQUEST in user:
            return SUMMARY
        # Inspect may join the summary to the message before it (consecutive user messages)
        return "Noted." if SESSION.match(user) or COMPACTED in user else ANSWER

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        name = f"{self.provider}/{self.model_name}"
        uses_tools = self.model_name in TOOL_MODELS and any(t.name == "memory" for t in tools)
        graph = any(t.name == "create_entities" for t in tools)
        if self.model_name in TOOL_MODELS and graph:
            reply = self._graph_reply(input)
        else:
            reply = self._tool_reply(input) if uses_tools else self._plain_reply(input)
        output = ModelOutput.from_content(name, reply) if isinstance(reply, str) else reply
        out_words = words([output.message])
        output.usage = ModelUsage(
            input_tokens=words(input),
            output_tokens=out_words,
            total_tokens=words(input) + out_words,
        )
        return output


register(ScriptedAgent)


if __name__ == "__main__":
    run_inspect()

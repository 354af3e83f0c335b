"""A deterministic stand-in for the `memory` model role, in-process and from the real CLI.

It reads the prompts of the built-in `observations` and `summaries` systems the way a model
would: every turn line `[<turn id>] <speaker>: <text>` of the session becomes one fact citing
that turn; a summary request is answered with the session's turn texts joined. Usage from the
command line: `python tests/scripted_memory.py eval memevals/locomo -T memory=observations
--model-role memory=scripted_memory/facts ...`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

_TURN = re.compile(r"^\[([^\]\s]+)\] ([^:]+): (.*)$", re.MULTILINE)


def scripted_facts(user_prompt: str) -> str:
    """One fact per shown turn, citing it (the observations reply format)."""
    facts = [
        {"fact": f"{speaker} said: {text}", "turns": [turn_id]}
        for turn_id, speaker, text in _TURN.findall(user_prompt)
    ]
    return json.dumps(facts)


def scripted_summary(user_prompt: str) -> str:
    """The session's lines joined: a summary that keeps every word (enough for retrieval)."""
    lines = [ln for ln in user_prompt.splitlines() if ": " in ln and not ln.startswith("Session")]
    return " ".join(lines) or "Nothing happened."


class ScriptedMemory(ModelAPI):
    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        system, user = input[0].text, input[-1].text
        reply = scripted_facts(user) if '"fact"' in system else scripted_summary(user)
        out = ModelOutput.from_content(model=f"scripted_memory/{self.model_name}", content=reply)
        out.usage = ModelUsage(
            input_tokens=len((system + user).split()),
            output_tokens=len(reply.split()),
            total_tokens=len((system + user).split()) + len(reply.split()),
        )
        return out


@modelapi(name="scripted_memory")
def scripted_memory() -> type[ModelAPI]:
    return ScriptedMemory


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from inspect_offline import main

    main()

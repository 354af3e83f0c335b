"""The one base of the tests' scripted Inspect model APIs: a reply rule made a provider.

A scripted provider answers every call with a plain function of what it was sent,
`reply(messages, config) -> str`, so it runs in-process (`get_model("<name>/<model>")`) and from
the real CLI alike. `scripted_provider` registers such a rule as `<name>/<model>`; a provider
that needs model args, its own retry policy or injected faults subclasses `ScriptedAPI`,
overrides `configure` and `answer`, and registers with `register`. A module that defines a
provider ends with:

    if __name__ == "__main__":
        run_inspect()

which is the real Inspect CLI with the provider registered and mockllm's token count made
offline (tests/support/inspect_offline.py). Every scripted provider of the suite is built here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

#: A reply rule: the reply text to one call, from its messages and generation settings.
Reply = Callable[[list[ChatMessage], GenerateConfig], str]

SUPPORT = Path(__file__).resolve().parent


def word_usage(messages: list[ChatMessage], reply: str) -> ModelUsage:
    """Words as tokens: a call's usage without a tokenizer (cost figures need some)."""
    words_in = len("\n".join(m.text for m in messages).split())
    words_out = len(reply.split())
    return ModelUsage(
        input_tokens=words_in, output_tokens=words_out, total_tokens=words_in + words_out
    )


class ScriptedAPI(ModelAPI):
    """A model API whose replies come from `rules` (one rule, or one per accepted model name).

    Subclasses set `provider` (the registered name), `rules`, and `usage` (report word counts
    as each call's usage).
    """

    provider: ClassVar[str]
    rules: ClassVar[Reply | Mapping[str, Reply]]
    usage: ClassVar[bool] = False

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        rules = getattr(type(self), "rules", None)  # None: a subclass answers by itself
        if isinstance(rules, Mapping) and model_name not in rules:
            names = " or ".join(sorted(rules))
            raise ValueError(f"{self.provider} model must be {names}, got {model_name}")
        self.configure(**model_args)

    def configure(self, **model_args: Any) -> None:
        """Take the model args (`-M`): a rule needs none (and ignores any); a subclass that
        takes some names them here."""

    async def answer(self, messages: list[ChatMessage], config: GenerateConfig) -> str:
        """The reply text to one call (by the model name's rule)."""
        rules = type(self).rules
        rule = rules[self.model_name] if isinstance(rules, Mapping) else rules
        return rule(messages, config)

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        reply = await self.answer(input, config)
        output = ModelOutput.from_content(model=f"{self.provider}/{self.model_name}", content=reply)
        if self.usage:
            output.usage = word_usage(input, reply)
        return output


def register(api: type[ScriptedAPI]) -> type[ScriptedAPI]:
    """Register `api` as Inspect's `<api.provider>/...` model API.

    Args:
        api: the scripted API class.

    Returns:
        The class, unchanged.
    """
    modelapi(name=api.provider)(lambda: api)
    return api


def scripted_provider(
    name: str, rules: Reply | Mapping[str, Reply], *, usage: bool = False
) -> type[ScriptedAPI]:
    """Register the provider `name/<model>` that answers every call by a reply rule.

    Args:
        name: the provider name (`--model name/<model>`, `--model-role grader=name/<model>`).
        rules: the rule for any model name, or a rule per accepted model name (others are
            refused with a message naming the accepted ones).
        usage: report word counts as each call's usage.

    Returns:
        The registered model API class.
    """
    attrs = {"provider": name, "rules": rules, "usage": usage}
    return register(type(f"Scripted_{name}", (ScriptedAPI,), attrs))


def mockllm_outputs(rule: Reply, model: str = "mockllm/model") -> Callable[..., ModelOutput]:
    """The same rule as mockllm's `custom_outputs` callable (for `get_model("mockllm/model",
    custom_outputs=...)`).

    Args:
        rule: the reply rule.
        model: the model name the outputs carry.

    Returns:
        A callable of (input, tools, tool_choice, config).
    """

    def outputs(
        input: list[ChatMessage], tools: list[ToolInfo], tc: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        return ModelOutput.from_content(model, rule(input, config))

    return outputs


def run_inspect() -> None:
    """The real Inspect CLI on sys.argv, with the providers registered so far and mockllm's
    offline token count: the `__main__` entry of every scripted provider's module."""
    if str(SUPPORT) not in sys.path:
        sys.path.insert(0, str(SUPPORT))
    from inspect_offline import main

    main()

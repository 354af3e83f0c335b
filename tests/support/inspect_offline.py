"""Run the real `inspect` CLI with mockllm's token counting made offline.

mockllm counts tokens with tiktoken, which downloads its vocabulary on first use; these machines
have no network. We replace only that count (with a whitespace estimate), then hand over to
Inspect's own command-line entry point, unchanged.
Usage: python tests/support/inspect_offline.py eval memevals/locomo --model mockllm/model ...
"""

from __future__ import annotations

import sys


def patch_mockllm_token_count() -> None:
    from inspect_ai.model._providers.mockllm import MockLLM

    async def count_text_tokens(self: MockLLM, text: str) -> int:
        return max(1, len(text.split()))

    MockLLM.count_text_tokens = count_text_tokens  # type: ignore[method-assign,assignment]


def main() -> None:
    """Inspect's own CLI on sys.argv, with the offline token count. Scripts that register a
    provider first (every scripted provider, through scripted_api.run_inspect) end by calling
    this."""
    patch_mockllm_token_count()
    from inspect_ai._cli.main import main as inspect_main

    sys.argv[0] = "inspect"
    inspect_main()


if __name__ == "__main__":
    main()

"""How many tokens a rendered prompt holds, estimated: the proxy has no tokenizer of the
upstream's model, and `count_tokens` must answer without asking the model to generate.

The estimate counts what the upstream is sent after rendering (the system prompt with the
tools written in the protocol, the history with earlier calls and results written as text;
to a route whose upstream calls tools itself, the tools and the history's calls as JSON,
which its chat template writes into the prompt): one token per four characters of text, the
usual rule of thumb for English with a BPE tokenizer (code and JSON run nearer three, so
the estimate is low for them), plus a few tokens per message for the chat template's
markers, and a fixed count per image."""

from __future__ import annotations

from typing import Any

from ..wire import json_bytes

CHARS_PER_TOKEN = 4
# `<|im_start|>assistant\n ... <|im_end|>\n` and its kin: a role and its delimiters.
TOKENS_PER_MESSAGE = 4
# An image's tokens depend on its size, which the proxy does not decode: Anthropic's own
# count for an image at its largest (1.15 megapixels, about 1,600 tokens).
TOKENS_PER_IMAGE = 1600


def tokens_in_text(characters: int) -> int:
    return -(-characters // CHARS_PER_TOKEN)  # rounded up: any text is at least one token


def estimated_prompt_tokens(body: dict[str, Any]) -> int:
    """The estimate for the chat body the upstream is sent: its messages, and its tools
    where it has them (a native route's)."""
    tools = body.get("tools")
    characters, tokens = (len(json_bytes(tools)) if tools else 0), 0
    for message in body.get("messages") or ():
        tokens += TOKENS_PER_MESSAGE
        if calls := message.get("tool_calls"):
            characters += len(json_bytes(calls))
        content = message.get("content")
        if isinstance(content, str):
            characters += len(content)
            continue
        for part in content if isinstance(content, list) else ():
            if part.get("type") == "text":
                characters += len(str(part.get("text") or ""))
            else:
                tokens += TOKENS_PER_IMAGE
    return tokens + tokens_in_text(characters)

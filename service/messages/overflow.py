"""An upstream's refusal of a request that does not fit its context, said in the words of
Anthropic's API, which Claude Code's recovery reads: `input length and `max_tokens` exceed
context limit: I + M > C` makes it ask again at once with a `max_tokens` that fits (the
context less the prompt and a margin), and `prompt is too long: I tokens > C maximum` makes
it compact the conversation. In an upstream's own words (vLLM's, llama.cpp's) Claude Code
reads every such refusal as a prompt too long, and ends the turn on one that only asked for
too many output tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Overflow:
    """What did not fit: the prompt's tokens, the output tokens asked for (None when the
    upstream said only that the prompt alone is too long) and the context's size."""

    prompt_tokens: int
    max_tokens: int | None
    context: int

    def anthropic_message(self) -> str:
        if self.max_tokens is None or self.max_tokens == 0 or self.prompt_tokens >= self.context:
            return f"prompt is too long: {self.prompt_tokens} tokens > {self.context} maximum"
        return (
            "input length and `max_tokens` exceed context limit: "
            f"{self.prompt_tokens} + {self.max_tokens} > {self.context}, "
            "decrease input length or `max_tokens` and try again"
        )


# The upstreams' wordings, each with the numbers it holds as `context`, `prompt` and, when it
# names them, `output`.
UPSTREAM_WORDINGS = tuple(
    re.compile(pattern, re.IGNORECASE | re.DOTALL)
    for pattern in (
        # vLLM since 0.11 (its prompt-alone refusal asks for 0 output tokens)
        r"maximum context length is (?P<context>\d+) tokens\. However, you requested"
        r" (?P<output>\d+) output tokens and your prompt contains at least (?P<prompt>\d+)"
        r" input tokens",
        # vLLM 0.9 and 0.10
        r"is too large: (?P<output>\d+)\. This model's maximum context length is"
        r" (?P<context>\d+) tokens and your request has (?P<prompt>\d+) input tokens",
        # vLLM before 0.9, and OpenAI's own older wording
        r"maximum context length is (?P<context>\d+) tokens\. However, you requested \d+"
        r" tokens \((?P<prompt>\d+) in the messages, (?P<output>\d+) in the completion\)",
        # vLLM 0.9 and 0.10, the prompt alone
        r"maximum context length is (?P<context>\d+) tokens\. However, your request has"
        r" (?P<prompt>\d+) input tokens",
        # llama.cpp's server (it never refuses for the output: it stops at the context's end)
        r"request \((?P<prompt>\d+) tokens\) exceeds the available context size"
        r" \((?P<context>\d+) tokens\)",
    )
)
# Older llama.cpp servers put the numbers beside the message, as fields of the error.
LLAMA_CPP_FIELDS = ("n_prompt_tokens", "n_ctx")


def context_overflow(error: dict[str, Any]) -> Overflow | None:
    """The overflow an upstream's error (OpenAI's shape, its `error` object) reports, if it
    reports one in a wording known here."""
    message = str(error.get("message") or "")
    for wording in UPSTREAM_WORDINGS:
        if found := wording.search(message):
            numbers = found.groupdict()
            output = numbers.get("output")
            return Overflow(
                int(numbers["prompt"]), int(output) if output else None, int(numbers["context"])
            )
    prompt, context = (error.get(field) for field in LLAMA_CPP_FIELDS)
    if isinstance(prompt, int) and isinstance(context, int) and prompt > context:
        return Overflow(prompt, None, context)
    return None

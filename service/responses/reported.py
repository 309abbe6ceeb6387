"""What a Response object reports of how it was made: every field the Responses API's schema
requires of it beside its id, status and output. A parameter the proxy sends upstream or
keeps to (sampling, penalties, the text format, tools) is reported as the request set it, or
as OpenAI documents its default when the request left it out; one the proxy cannot honour
is reported as what it did instead (no truncation, no background run, the one service tier,
no log probabilities), so a client reading the response is told the truth.

Reading a response back through `reported_fields` gives the same fields (a stored response is
streamed again by the writer that answered it, from its own fields)."""

from __future__ import annotations

from typing import Any

# OpenAI's documented defaults for what a request leaves out.
DEFAULT_TEMPERATURE = DEFAULT_TOP_P = 1.0
DEFAULT_PENALTY = 0.0
DEFAULT_TEXT_FORMAT = {"type": "text"}
DEFAULT_VERBOSITY = "medium"
# What the proxy does whatever the request asks: it never drops earlier items to fit the
# context (too long a conversation is the upstream's error, as with `truncation: disabled`),
# answers every response before its request returns, and has one tier of service.
TRUNCATION = "disabled"
BACKGROUND = False
SERVICE_TIER = "default"
# Log probabilities are never returned: the upstream is asked for none.
TOP_LOGPROBS = 0
FUNCTION_TOOL_FIELDS = {"description": None, "parameters": None}


def reported_fields(body: dict[str, Any]) -> dict[str, Any]:
    """The fields a response to the request `body` reports of how it was made."""
    return {
        "temperature": _number(body.get("temperature"), DEFAULT_TEMPERATURE),
        "top_p": _number(body.get("top_p"), DEFAULT_TOP_P),
        "presence_penalty": _number(body.get("presence_penalty"), DEFAULT_PENALTY),
        "frequency_penalty": _number(body.get("frequency_penalty"), DEFAULT_PENALTY),
        "top_logprobs": TOP_LOGPROBS,
        "text": _text(body.get("text")),
        "reasoning": _reasoning(body.get("reasoning")),
        "tools": [_tool(tool) for tool in body.get("tools") or ()],
        "truncation": TRUNCATION,
        "background": BACKGROUND,
        "service_tier": SERVICE_TIER,
        # The proxy runs no built-in tool, the only calls this limit counts: it always holds.
        "max_tool_calls": _whole_number(body.get("max_tool_calls")),
        "safety_identifier": _string(body.get("safety_identifier")),
        "prompt_cache_key": _string(body.get("prompt_cache_key")),
    }


def _number(value: Any, default: float) -> float:
    # bool is an int to Python, never a number on the wire
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return default


def _whole_number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _text(text: Any) -> dict[str, Any]:
    """`text` as the response reports it: its format and verbosity, given or by default."""
    given = text if isinstance(text, dict) else {}
    fmt, verbosity = given.get("format"), given.get("verbosity")
    return {
        **given,
        "format": fmt if isinstance(fmt, dict) else DEFAULT_TEXT_FORMAT,
        "verbosity": verbosity if isinstance(verbosity, str) else DEFAULT_VERBOSITY,
    }


def _reasoning(reasoning: Any) -> dict[str, Any]:
    """The reasoning configuration as asked (`effort`, `summary`), each null if not given."""
    given = reasoning if isinstance(reasoning, dict) else {}
    return {"effort": given.get("effort"), "summary": given.get("summary")}


def _tool(tool: Any) -> Any:
    """A tool as the response echoes it; a function tool with every field of its schema, its
    `strict` as the proxy holds calls to it (only `strict: true` asks for the whole schema)."""
    if not isinstance(tool, dict) or tool.get("type") != "function":
        return tool
    return {**FUNCTION_TOOL_FIELDS, **tool, "strict": tool.get("strict") is True}

"""A client's `generateContent` (or `streamGenerateContent`, `countTokens`) body turned into
the chat request the rest of the proxy serves: `systemInstruction` and `contents` become chat
messages (`contents.py`), tools and `toolConfig` chat tools and `tool_choice` (`tools.py`),
`generationConfig` chat's sampling fields. Every field is read in camelCase or snake_case;
fields the proxy has no use for (`safetySettings`, `labels`...) are ignored, never refused;
anything it cannot serve is a 400 naming the field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..exchange import ChatRequest, checked_chat_request, decoded_body, invalid
from ..settings import HostedTools
from .contents import chat_messages, system_messages
from .fields import field
from .schema import json_schema
from .tools import gemini_tools

# generationConfig's fields with the chat field each becomes.
GENERATION_FIELDS = {
    "temperature": "temperature",
    "topP": "top_p",
    "topK": "top_k",
    "maxOutputTokens": "max_tokens",
    "seed": "seed",
    "presencePenalty": "presence_penalty",
    "frequencyPenalty": "frequency_penalty",
}
JSON_MEDIA_TYPE = "application/json"
# The name chat's `json_schema` response format needs; Gemini's schema has none.
RESPONSE_SCHEMA_NAME = "response"
CONFIG = "generationConfig"


@dataclass(frozen=True, slots=True)
class GeminiRequest:
    """The client's body and the chat request serving it."""

    body: dict[str, Any]
    chat: ChatRequest
    dropped: tuple[str, ...]  # the built-in tools left out
    thoughts: bool  # `includeThoughts`: reasoning is answered as `thought` parts


def parse_gemini_request(
    raw: bytes, model: str, *, stream: bool, hosted_tools: HostedTools = HostedTools.DROP
) -> GeminiRequest:
    """Decode and check a `generateContent` body for `model` (named by the path).

    >>> body = b'{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}'
    >>> parse_gemini_request(body, "m", stream=False).chat.messages
    [{'role': 'user', 'content': 'hi'}]
    """
    return gemini_request(decoded_body(raw), model, stream=stream, hosted_tools=hosted_tools)


def parse_count_tokens_request(
    raw: bytes, model: str, hosted_tools: HostedTools = HostedTools.DROP
) -> GeminiRequest:
    """Decode and check a `countTokens` body: `contents`, or a whole request as its
    `generateContentRequest`."""
    body = decoded_body(raw)
    whole = field(body, "generateContentRequest")
    if whole is not None and not isinstance(whole, dict):
        raise invalid("must be an object", "generateContentRequest")
    return gemini_request(whole or body, model, stream=False, hosted_tools=hosted_tools)


def gemini_request(
    body: dict[str, Any], model: str, *, stream: bool, hosted_tools: HostedTools
) -> GeminiRequest:
    if field(body, "cachedContent") is not None:
        raise invalid(
            "cached contents are kept by Google's servers; send the contents instead",
            "cachedContent",
            "unsupported",
        )
    messages = system_messages(field(body, "systemInstruction"))
    messages += chat_messages(body.get("contents"))
    tools = gemini_tools(body.get("tools"), field(body, "toolConfig"), hosted_tools)
    chat: dict[str, Any] = {"model": model, "messages": messages}
    if tools.chat_tools:
        chat["tools"] = tools.chat_tools
        if tools.choice is not None:
            chat["tool_choice"] = tools.choice
    config = field(body, CONFIG)
    if config is not None and not isinstance(config, dict):
        raise invalid("must be an object", CONFIG)
    config = config or {}
    chat.update(_sampling(config))
    thinking = field(config, "thinkingConfig")
    thoughts = isinstance(thinking, dict) and field(thinking, "includeThoughts") is True
    if stream:
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}  # usageMetadata is always sent
    return GeminiRequest(body, checked_chat_request(chat), tools.dropped, thoughts)


def _sampling(config: dict[str, Any]) -> dict[str, Any]:
    """generationConfig's fields as chat's: sampling, the output's length and stop
    sequences, one candidate, the answer's format."""
    chat = {
        chat_name: value
        for name, chat_name in GENERATION_FIELDS.items()
        if (value := field(config, name)) is not None
    }
    stop = field(config, "stopSequences")
    if stop is not None:
        if not isinstance(stop, list) or not all(isinstance(text, str) for text in stop):
            raise invalid("must be an array of strings", f"{CONFIG}.stopSequences")
        if stop:
            chat["stop"] = stop
    count = field(config, "candidateCount")
    if count not in (None, 1):
        raise invalid(
            "the proxy answers one candidate per request", f"{CONFIG}.candidateCount", "unsupported"
        )
    if (response_format := _response_format(config)) is not None:
        chat["response_format"] = response_format
    return chat


def _response_format(config: dict[str, Any]) -> dict[str, Any] | None:
    """`responseMimeType: application/json`, with a schema where one is given, as chat's
    `response_format`."""
    if field(config, "responseMimeType") != JSON_MEDIA_TYPE:
        return None
    schema = field(config, "responseJsonSchema")
    if schema is None and (openapi := field(config, "responseSchema")) is not None:
        schema = json_schema(openapi, f"{CONFIG}.responseSchema")
    if schema is None:
        return {"type": "json_object"}
    if not isinstance(schema, dict):
        raise invalid("must be a JSON schema object", f"{CONFIG}.responseJsonSchema")
    return {"type": "json_schema", "json_schema": {"name": RESPONSE_SCHEMA_NAME, "schema": schema}}

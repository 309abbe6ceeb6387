"""A client's `POST /v1/messages` body turned into the chat request the rest of the proxy
serves: `system` and the messages become chat messages (`tool_use` blocks an assistant's
`tool_calls`, `tool_result` blocks `tool` messages, which the protocol then writes into the
history), tools become chat tools (`tools.py`). Fields the proxy has no use for are ignored,
never refused; anything it cannot serve is a 400 naming the field."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..exchange import (
    ChatRequest,
    assistant_message,
    checked_chat_request,
    content_text,
    decoded_body,
    invalid,
)
from ..settings import HostedTools
from ..wire import json_bytes
from .tools import chat_tool_choice, messages_tools

# Fields copied to the chat body under the same name.
SHARED_FIELDS = ("model", "max_tokens", "temperature", "top_p", "top_k")
ROLES = frozenset({"user", "assistant", "system"})
# The model's earlier thinking is not sent back to it (a text model cannot check signatures).
THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
# Thinking the request asks for: reasoning the upstream streams becomes thinking blocks.
THINKING_ON = frozenset({"enabled", "adaptive"})
# What the model reads before a result the client marked `is_error`.
ERROR_RESULT_PREFIX = "Error: "
MEDIA_SOURCES = frozenset({"base64", "url"})
# Claude Code's attribution block (its version and a fingerprint of the conversation) opens
# `system` as a block of its own. Anthropic's API drops it when it stands first, so Claude
# never reads it; the proxy does the same, so the local model does not either, and the
# prompt's prefix (what an upstream's prefix cache reuses) is the same across conversations.
ATTRIBUTION_PREFIX = "x-anthropic-billing-header:"


@dataclass(frozen=True, slots=True)
class MessagesRequest:
    """The client's body and the chat request serving it."""

    body: dict[str, Any]
    chat: ChatRequest
    dropped: tuple[str, ...]  # the families of the server tools left out
    thinking: bool  # reasoning is answered as thinking blocks

    @property
    def stop_sequences(self) -> tuple[str, ...]:
        return tuple(self.chat.body.get("stop") or ())


def parse_messages_request(
    raw: bytes, hosted_tools: HostedTools = HostedTools.DROP
) -> MessagesRequest:
    """Decode and check a `POST /v1/messages` (or `/count_tokens`) body.

    >>> parse_messages_request(b'{"model": "m", "max_tokens": 9, "messages": [...]}').chat
    """
    body = decoded_body(raw)
    if not isinstance(body.get("model"), str):
        raise invalid("'model' must be a string", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid("'messages' must be a non-empty array", "messages")
    tools = messages_tools(body.get("tools"), hosted_tools, loaded=set(_loaded_tools(messages)))
    chat: dict[str, Any] = {key: body[key] for key in SHARED_FIELDS if body.get(key) is not None}
    chat["messages"] = _system_messages(body.get("system")) + _chat_messages(messages)
    if tools.chat_tools:
        chat["tools"] = tools.chat_tools
    choice, parallel = chat_tool_choice(body.get("tool_choice"))
    if choice is not None:
        chat["tool_choice"] = choice
    if not parallel:
        chat["parallel_tool_calls"] = False
    if (stop := _stop_sequences(body.get("stop_sequences"))) is not None:
        chat["stop"] = stop
    if body.get("stream") is True:
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}  # message_delta reports usage
    thinking = body.get("thinking")
    asked = isinstance(thinking, dict) and thinking.get("type") in THINKING_ON
    return MessagesRequest(body, checked_chat_request(chat), tools.dropped, asked)


def _stop_sequences(value: Any) -> list[str] | None:
    if value is None or value == []:
        return None
    if not isinstance(value, list) or not all(isinstance(stop, str) for stop in value):
        raise invalid("'stop_sequences' must be an array of strings", "stop_sequences")
    return value


def _system_messages(system: Any) -> list[dict[str, Any]]:
    first = 1 if isinstance(system, list) and system and _is_attribution(system[0]) else 0
    if system is None or system == "" or (isinstance(system, list) and len(system) == first):
        return []
    return [{"role": "system", "content": _text_of(system, "system", first=first)}]


def _is_attribution(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and str(block.get("text") or "").startswith(ATTRIBUTION_PREFIX)
    )


def _text_of(content: Any, param: str, *, first: int = 0) -> str:
    """A string, or text blocks from the `first` on joined (their cache_control and
    citations left aside)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid("must be a string or an array of text blocks", param)
    texts = []
    for index, block in enumerate(content[first:], first):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise invalid("must hold text blocks only", f"{param}[{index}]")
        texts.append(str(block.get("text") or ""))
    return "\n".join(texts)


def _blocks(message: Any, param: str) -> list[dict[str, Any]]:
    if not isinstance(message, dict):
        raise invalid("each message must be an object", param)
    if message.get("role") not in ROLES:
        raise invalid(f"role must be one of {', '.join(sorted(ROLES))}", f"{param}.role")
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(block, dict) for block in content):
        raise invalid("content must be a string or an array of blocks", f"{param}.content")
    return content


def _chat_messages(messages: list[Any]) -> list[dict[str, Any]]:
    chat: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        param = f"messages[{index}]"
        blocks = _blocks(message, param)
        role = message["role"]
        if role == "assistant":
            chat += _assistant_messages(blocks, f"{param}.content")
        elif role == "system":  # mid-conversation instructions, kept where they were said
            chat.append({"role": "system", "content": _text_of(blocks, f"{param}.content")})
        else:
            chat.extend(_user_messages(blocks, f"{param}.content"))
    return chat


def _assistant_messages(blocks: list[dict[str, Any]], param: str) -> list[dict[str, Any]]:
    """The assistant's text joined, its tool_use blocks as chat tool calls (the input object
    as the arguments' JSON text, as OpenAI's API has it: the protocol writes the call from
    it, and an upstream that calls tools itself takes it as sent), its thinking left out.
    Text after a call begins another message of the turn, so that the history keeps the
    model's order (`rewrite.continues_turn`); none for a turn of thinking alone."""
    messages: list[dict[str, Any]] = []
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "text":
            if calls:
                messages.append(assistant_message(texts, calls))
                texts, calls = [], []
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            arguments = block.get("input")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise invalid("a tool_use block needs a string id and name", f"{param}[{index}]")
            if not isinstance(arguments, dict | None):
                raise invalid("a tool_use block's input must be an object", f"{param}[{index}]")
            function = {"name": name, "arguments": json_bytes(arguments or {}).decode()}
            calls.append({"id": call_id, "type": "function", "function": function})
        elif kind not in THINKING_BLOCKS:
            raise _unsupported(kind, f"{param}[{index}]")
    if texts or calls:
        messages.append(assistant_message(texts, calls))
    return [m for m in messages if m["content"] is not None or "tool_calls" in m]


def _user_messages(blocks: list[dict[str, Any]], param: str) -> list[dict[str, Any]]:
    """A user turn: each tool_result a `tool` message, the other blocks user messages, in
    the order they came."""
    messages: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        where = f"{param}[{index}]"
        if block.get("type") != "tool_result":
            parts.append(_chat_part(block, where))
            continue
        if parts:
            messages.append({"role": "user", "content": _content(parts)})
            parts = []
        messages.append(_tool_message(block, where))
    if parts:
        messages.append({"role": "user", "content": _content(parts)})
    return messages


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """Text parts as one string (what every chat template takes), parts when there is more."""
    if all(part["type"] == "text" for part in parts):
        return content_text(parts)
    return parts


def _tool_message(block: dict[str, Any], param: str) -> dict[str, Any]:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        raise invalid("a tool_result block needs a string tool_use_id", param)
    content = block.get("content")
    parts: list[dict[str, Any]]
    if content is None or isinstance(content, str):
        parts = [{"type": "text", "text": content or ""}]
    elif isinstance(content, list):
        parts = [_chat_part(part, f"{param}.content[{at}]") for at, part in enumerate(content)]
    else:
        raise invalid("a tool_result's content must be a string or an array of blocks", param)
    content = _content(parts)
    if block.get("is_error") is True:
        if isinstance(content, str):
            content = ERROR_RESULT_PREFIX + content
        else:
            content = [{"type": "text", "text": ERROR_RESULT_PREFIX}, *content]
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _chat_part(block: Any, param: str) -> dict[str, Any]:
    """A content block as a chat content part: text, an image (by URL or inline data), a
    text document, a tool search's `tool_reference`."""
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text":
        return {"type": "text", "text": str(block.get("text") or "")}
    if kind == "tool_reference":
        return {"type": "text", "text": f"Tool loaded: {block.get('tool_name')}."}
    source = block.get("source") if isinstance(block, dict) else None
    source_type = source.get("type") if isinstance(source, dict) else None
    if kind == "image" and source_type in MEDIA_SOURCES:
        assert isinstance(source, dict)
        url = source.get("url")
        if source_type == "base64":
            url = f"data:{source.get('media_type')};base64,{source.get('data')}"
        return {"type": "image_url", "image_url": {"url": str(url)}}
    if kind == "document" and source_type == "text":
        assert isinstance(source, dict)
        return {"type": "text", "text": str(source.get("data") or "")}
    if kind in ("image", "document"):
        raise invalid(
            f"{kind} blocks with a {source_type!r} source are not supported (images by URL or"
            " base64 data, and text documents, are)",
            param,
            "unsupported",
        )
    raise _unsupported(kind, param)


def _unsupported(kind: Any, param: str) -> Exception:
    return invalid(f"content blocks of type {kind!r} are not supported", param, "unsupported")


def _loaded_tools(messages: list[Any]) -> Iterator[str]:
    """The tools that earlier tool results' `tool_reference` blocks loaded."""
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            result = block.get("content")
            for part in result if isinstance(result, list) else ():
                if isinstance(part, dict) and part.get("type") == "tool_reference":
                    yield str(part.get("tool_name"))

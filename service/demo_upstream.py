"""A stand-in upstream for trying the proxy without a model server. It is a demo, not a model.

The proxy mounts it at `/demo` when no upstream is configured, so a newcomer's first request
shows real `tool_calls`. Like any upstream it gets a tools-free request whose system prompt
declares the tools as text, so it recovers them from the JSON objects in that text, then
answers by rule: a question gets a call to the best-matching tool, written in the
protocol's own format and streamed a few characters at a time (so the proxy's streaming
parser has something to do); a tool result or a tools-free question gets a plain sentence.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from protocols import Protocol, ToolCall, ToolSpec

from .wire import DONE_EVENT, data_event, error_body, json_bytes

DEMO_MODEL_ID = "demo"
# Small enough that tags and JSON are split mid-token, as a real model's stream splits them.
STREAM_CHUNK_CHARS = 4
QUOTED_TEXT_LIMIT = 200
MIN_MATCHING_WORD = 4

_WORD = re.compile(r"[A-Za-z0-9]+")


def find_declared_tools(system_text: str) -> list[ToolSpec]:
    """The tools declared in a system prompt: every JSON object with a `name` and
    `parameters`, nested ones included (`{"type": "function", "function": {...}}`).

    The text is read once: each JSON value is decoded once and searched in memory, and text
    that does not decode is skipped up to where it broke (so a tool inside an object broken
    after it is not seen). Decoding again from each nested brace read a long string once per
    enclosing object: 400 of them around 3 MB took seconds. A value nested deeper than the
    decoder reads raises `RecursionError`."""
    decoder = json.JSONDecoder()
    tools: list[ToolSpec] = []
    position = system_text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(system_text, position)
        except json.JSONDecodeError as error:
            end = max(error.pos, position + 1)
        else:
            tools += _tools_in(value)
        position = system_text.find("{", end)
    return tools


def _tools_in(value: Any) -> list[ToolSpec]:
    """The tools in a decoded JSON value, in the text's order; a tool's own parameters are
    not searched. A loop, not recursion: the value may nest as deep as the decoder reads."""
    tools = []
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if isinstance(item.get("name"), str) and isinstance(item.get("parameters"), dict):
                tools.append(ToolSpec.from_openai(item))
            else:
                pending += reversed(item.values())
        elif isinstance(item, list):
            pending += reversed(item)
    return tools


def arguments_from_question(schema: dict[str, Any], question: str) -> Any:
    """A short value that fits `schema`, with strings taken from the user's question."""
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):  # ["string", "null"]: the first type that is not null
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties: dict[str, Any] = schema.get("properties") or {}
        wanted = schema.get("required") or list(properties)
        return {key: arguments_from_question(properties.get(key) or {}, question) for key in wanted}
    if kind == "array":
        return [arguments_from_question(schema.get("items") or {}, question)]
    return {"integer": 1, "number": 1, "boolean": True, "null": None}.get(
        kind, example_string(question)
    )


def example_string(question: str) -> str:
    """A proper noun from the question (a capitalised word past the first), else its last word."""
    words: list[str] = _WORD.findall(question)
    proper_nouns = [word for word in words[1:] if word[0].isupper()]
    if proper_nouns:
        return proper_nouns[0]
    return words[-1] if words else "demo"


def choose_tool(tools: Sequence[ToolSpec], question: str) -> ToolSpec:
    """The first tool whose name, else whose description, shares a word with the question;
    failing both, the first tool."""
    question_words = _content_words(question)
    by_name = [tool for tool in tools if question_words & _content_words(tool.name)]
    by_description = [tool for tool in tools if question_words & _content_words(tool.description)]
    return (by_name or by_description or list(tools))[0]


def _content_words(text: str) -> set[str]:
    """Lower-cased words of four letters or more: short ones ("the", "in") match anything."""
    return {word.lower() for word in _WORD.findall(text) if len(word) >= MIN_MATCHING_WORD}


def message_text(message: dict[str, Any]) -> str:
    """A message's text, whether `content` is a string or a list of content parts."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def answers_a_tool_result(
    messages: list[dict[str, Any]], tools: Sequence[ToolSpec], protocol: Protocol
) -> bool:
    """Whether the last message carries a tool's result: a `tool` message, or (as the proxy
    renders results) a user message right after an assistant turn that made a call."""
    if messages[-1].get("role") == "tool":
        return True
    if len(messages) < 2 or messages[-2].get("role") != "assistant":
        return False
    parts = protocol.parse(message_text(messages[-2]), tools)
    return any(isinstance(part, ToolCall) for part in parts)


def demo_reply(messages: list[dict[str, Any]], protocol: Protocol) -> str:
    """The whole reply text for a conversation."""
    last_text = message_text(messages[-1])[:QUOTED_TEXT_LIMIT]
    system_text = "\n".join(message_text(m) for m in messages if m.get("role") == "system")
    tools = find_declared_tools(system_text)
    if answers_a_tool_result(messages, tools, protocol):
        return f"(demo upstream) The tool answered: {last_text!r}. A real model would use it."
    if not tools or messages[-1].get("role") != "user":
        return (
            f"(demo upstream) I am a stand-in, not a model. You said: {last_text!r}. "
            "Send `tools` with your request to see a tool call."
        )
    tool = choose_tool(tools, last_text)
    arguments = arguments_from_question(tool.parameters, last_text)
    return f"(demo upstream) Calling {tool.name}.\n" + protocol.render_call(tool.name, arguments)


def _invalid_request(message: str) -> JSONResponse:
    return JSONResponse(error_body(message, error_type="invalid_request_error"), status_code=400)


def _usage(messages: list[dict[str, Any]], reply: str) -> dict[str, int]:
    # The demo has no tokenizer: words stand in for tokens so `usage` has plausible numbers.
    prompt_tokens = sum(len(message_text(message).split()) for message in messages)
    completion_tokens = len(reply.split())
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def create_demo_upstream(protocol: Protocol) -> Starlette:
    """The demo app: `POST /v1/chat/completions` and `GET /v1/models`, OpenAI-shaped.

    >>> app.mount("/demo", create_demo_upstream(get_protocol("json-mix")))
    """

    async def list_models(request: Request) -> Response:
        model = {"id": DEMO_MODEL_ID, "object": "model", "created": 0, "owned_by": "demo"}
        return JSONResponse({"object": "list", "data": [model]})

    async def chat_completions(request: Request) -> Response:
        try:
            body = await request.json()
        except (ValueError, RecursionError):
            return _invalid_request("The request body is not JSON, or nests too deeply.")
        messages = body.get("messages") if isinstance(body, dict) else None
        if not messages or not isinstance(messages, list):
            return _invalid_request("`messages` must be a non-empty list.")
        if not all(isinstance(message, dict) for message in messages):
            return _invalid_request("Every message must be an object.")
        try:
            reply = demo_reply(messages, protocol)
        except RecursionError:  # JSON in a message (tools, a schema) nested past the decoder
            return _invalid_request("The conversation holds JSON nested too deeply.")
        usage = _usage(messages, reply)
        head = {
            "id": f"chatcmpl-demo-{uuid.uuid4().hex}",
            "created": int(time.time()),
            "model": body.get("model") or DEMO_MODEL_ID,
        }
        if not body.get("stream"):
            message = {"role": "assistant", "content": reply}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return JSONResponse(
                {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
            )
        stream_options = body.get("stream_options")
        include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage")
        chunks = _sse_chunks(head, reply, usage if include_usage else None)
        return StreamingResponse(chunks, media_type="text/event-stream")

    return Starlette(
        routes=[
            Route("/v1/models", list_models, methods=["GET"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        ]
    )


async def _sse_chunks(
    head: dict[str, Any], reply: str, usage: dict[str, int] | None
) -> AsyncIterator[bytes]:
    """`reply` as `chat.completion.chunk` events, a few characters each, then `[DONE]`."""

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
        payload = {**head, "object": "chat.completion.chunk", "choices": choices, **extra}
        return data_event(json_bytes(payload))

    for start in range(0, len(reply), STREAM_CHUNK_CHARS):
        delta = {"role": "assistant"} if start == 0 else {}
        delta["content"] = reply[start : start + STREAM_CHUNK_CHARS]
        yield chunk([{"index": 0, "delta": delta, "finish_reason": None}])
    yield chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}])
    if usage is not None:
        yield chunk([], usage=usage)
    yield DONE_EVENT

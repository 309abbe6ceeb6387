"""Forced-call mode (`tool_choice` "required" or a named function): one non-streaming
upstream answer holding a single `{name, arguments}` object, answered as exactly one tool
call, streamed to the client when it asked for a stream."""

from __future__ import annotations

from typing import Any

from protocols import Part, Protocol, parse_forced_call

from ..observability import CompletionObserver, ParserTrace, parse_traced
from ..upstream import checked_envelope
from ..wire import DONE_EVENT, EventStream, data_event
from .chunks import ROLE_DELTA, ChunkEncoder, Delta, DeltaMapper, MessageBuilder
from .request import ChatRequest, content_text
from .rewrite import offered_tools

TOOL_CALLS = "tool_calls"


def forced_call_deltas(
    answer: dict[str, Any],
    request: ChatRequest,
    protocol: Protocol,
    observer: CompletionObserver,
    trace: ParserTrace | None,
) -> list[Delta]:
    """The one call in the upstream's answer (checked: `ChatExchange.answer`), as the deltas
    that announce it."""
    text = content_text((_first_choice(answer).get("message") or {}).get("content"))

    def parse() -> list[Part]:
        tools = offered_tools(request)
        on_error = observer.parse_error
        return [
            parse_forced_call(
                text, protocol, tools, default_name=request.named_tool, on_error=on_error
            )
        ]

    parts = parse_traced(trace, text, parse)
    observer.usage(answer.get("usage"))
    mapper = DeltaMapper(
        think_as_reasoning=False, single_call=True, tools=request.tools, on_call=observer.tool_call
    )
    return mapper.deltas(parts)


def forced_call_completion(answer: dict[str, Any], deltas: list[Delta]) -> dict[str, Any]:
    """The non-streaming answer: the upstream's completion with its message replaced."""
    first = _first_choice(answer)
    builder = MessageBuilder()
    builder.add(deltas)
    message = builder.message(first.get("message") or {})
    choice = {**first, "index": 0, "message": message, "finish_reason": TOOL_CALLS}
    return {**answer, "choices": [choice]}


def _first_choice(answer: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = (answer.get("choices") or [{}])[0]
    return first


async def forced_call_events(
    answer: dict[str, Any], deltas: list[Delta], *, include_usage: bool, fallback_model: str
) -> EventStream:
    """The streaming answer: role, the call's start, its arguments, finish, usage, [DONE]."""
    encoder = ChunkEncoder.matching(checked_envelope(answer), fallback_model)
    for delta in [ROLE_DELTA, *deltas]:
        yield data_event(encoder.chunk(0, delta))
    yield data_event(encoder.chunk(0, {}, TOOL_CALLS))
    if include_usage and answer.get("usage") is not None:
        yield data_event(encoder.usage(answer["usage"]))
    yield DONE_EVENT

"""`POST /v1/responses`: the Responses API served on the chat-completions machinery. The body
becomes a chat request, the chat exchange answers it (rendering, parsing, forced calls, metrics
and trace as for chat completions), and its answer is translated into a `response` or the
Responses event stream. The upstream only ever sees chat completions."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..chat import ChatExchange, traced_event_response, traced_json_response
from ..context import ProxyContext
from ..observability import request_record
from ..upstream import REASONING_KEYS
from ..wire import (
    DONE,
    SERVER_ERROR,
    EventStream,
    ProxyError,
    error_body,
    event_payload,
    json_bytes,
    json_value,
    read_limited,
)
from .events import Event, ResponseAssembler
from .request import parse_responses_request
from .store import ResponseStore

logger = logging.getLogger(__name__)


async def create_response(
    request: Request, context: ProxyContext, store: ResponseStore, owner: str
) -> Response:
    """`POST /v1/responses` from the client whose key `owner` names."""
    limit = context.settings.max_request_bytes
    raw = await read_limited(request, limit)
    asked = await parse_responses_request(raw, store, owner, limit, context.settings.hosted_tools)
    chat = asked.chat
    record = request_record(request)
    _count_dropped_tools(context, record.request_id, asked.tools.dropped)
    model = chat.body.get("model")
    record.model, record.stream = (model if isinstance(model, str) else None), chat.stream
    target = context.router.target_for(model)
    protocol = context.router.protocol_for(target)
    exchange = ChatExchange(request, context, chat, target, held_whole=True)
    # Tools or none, the chat answer's checks and shaping: never a relay.
    answer = await exchange.answered(protocol, exchange.upstream_body(protocol))
    assembler = ResponseAssembler(asked.body, model=exchange.model_name(), tools=asked.tools)

    async def stored() -> None:
        if asked.store:
            conversation = (*asked.inputs, *assembler.output)
            indexed = (*asked.referenced, *assembler.output)
            await store.put(owner, assembler.response["id"], conversation, indexed)

    if answer.events is None:
        response = whole_response(assembler, answer.completion or {})
        await stored()
        return traced_json_response(response, answer.trace)
    events = response_events(assembler, answer.events, on_finished=stored)
    return traced_event_response(events, answer.trace, answer.upstream, context.settings)


def _count_dropped_tools(context: ProxyContext, request_id: str, dropped: tuple[str, ...]) -> None:
    """Hosted tools left out of what the model sees: counted, and noted once in the trace."""
    for kind in dropped:
        context.metrics.dropped_hosted_tools.labels(kind).inc()
    if dropped and context.debug is not None:
        context.debug.note(request_id, "hosted tools left out", ", ".join(dropped))


def whole_response(assembler: ResponseAssembler, completion: dict[str, Any]) -> dict[str, Any]:
    """A whole chat completion's first choice as the finished `response`."""
    choice = (completion.get("choices") or [{}])[0]
    assembler.delta(message_delta(choice.get("message") or {}))
    assembler.finish(choice.get("finish_reason"), completion.get("usage"))
    return assembler.response


def message_delta(message: dict[str, Any]) -> dict[str, Any]:
    """A whole chat message as the one delta that would have built it."""
    calls = [{"index": index, **call} for index, call in enumerate(message.get("tool_calls") or ())]
    reasoning = next((message[key] for key in REASONING_KEYS if message.get(key)), None)
    return {"reasoning_content": reasoning, "content": message.get("content"), "tool_calls": calls}


async def response_events(
    assembler: ResponseAssembler,
    chat_events: AsyncIterator[bytes],
    *,
    on_finished: Callable[[], Awaitable[None]],
) -> EventStream:
    """The Responses event stream for the proxy's own chat event stream of one choice (the
    upstream's chunks are checked there). A failure, in the upstream or here, ends it with
    `error` and `response.failed`."""
    for event in assembler.start():
        yield _encoded(event)
    finish_reason, usage = None, None
    try:
        async for chat_event in chat_events:
            payload = event_payload(chat_event)
            if payload == DONE:
                break
            chunk = json_value(payload)
            if "error" in chunk:  # the chat stream's last event
                for event in assembler.fail(chunk["error"]):
                    yield _encoded(event)
                return
            usage = chunk.get("usage") or usage
            for choice in chunk["choices"]:
                for event in assembler.delta(choice["delta"]):
                    yield _encoded(event)
                finish_reason = choice["finish_reason"] or finish_reason
        events = assembler.finish(finish_reason, usage)
        await on_finished()
    except ProxyError as error:
        logger.warning("upstream stream failed: %s", error.message)
        events = assembler.fail(error.body()["error"])
    except Exception:
        logger.exception("streaming response failed")
        events = assembler.fail(
            error_body("internal proxy error", error_type=SERVER_ERROR)["error"]
        )
    for event in events:
        yield _encoded(event)


def _encoded(event: Event) -> bytes:
    """One server-sent event named by its type, as OpenAI sends them."""
    return b"event: %s\ndata: %s\n\n" % (event["type"].encode(), json_bytes(event))

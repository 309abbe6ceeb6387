"""`POST /v1/messages` and `POST /v1/messages/count_tokens`: Anthropic's Messages API as a front
door of the engine. The body becomes the engine's chat request, the engine answers it
(rendering, parsing, forced calls, metrics and trace as for chat completions), and its events
are written as a `message` or the Messages event stream. The upstream only ever sees chat
completions."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..context import ProxyContext
from ..exchange import ChatExchange, estimated_prompt_tokens, respond
from ..wire import json_response, read_limited
from .events import MessageWriter
from .request import MessagesRequest, parse_messages_request


async def create_message(request: Request, context: ProxyContext) -> Response:
    """`POST /v1/messages`."""
    asked = await _messages_request(request, context)
    exchange = ChatExchange(request, context, asked.chat, dropped=asked.dropped)
    writer = MessageWriter(
        model=exchange.model_name(),
        thinking=asked.thinking,
        input_estimate=estimated_prompt_tokens(exchange.upstream_body),
        stream=asked.chat.stream,
        stop_sequences=asked.stop_sequences,
    )
    return await respond(await exchange.answered(), writer, context.settings)


async def count_tokens(request: Request, context: ProxyContext) -> Response:
    """`POST /v1/messages/count_tokens`: the estimate for the prompt the upstream would be
    sent, made as for `POST /v1/messages` on the model's route (see `tokens.py`); the
    upstream is asked nothing."""
    asked = await _messages_request(request, context)
    exchange = ChatExchange(request, context, asked.chat)
    return json_response({"input_tokens": estimated_prompt_tokens(exchange.upstream_body)})


async def _messages_request(request: Request, context: ProxyContext) -> MessagesRequest:
    raw = await read_limited(request, context.settings.max_request_bytes)
    return parse_messages_request(raw, context.settings.hosted_tools)

"""`POST /v1/chat/completions`: the request decoded and checked; with nothing for the proxy to
do (no tools, no tool history; or tools not offered; and no think blocks to read apart),
relayed; else the engine's answer, written as chat completions writes it."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..context import ProxyContext
from ..exchange import ChatExchange, ChoiceMode, needs_rewrite, parse_chat_request, respond
from ..wire import json_bytes, read_limited
from .writer import ChatWriter


async def create_completion(request: Request, context: ProxyContext) -> Response:
    """`POST /v1/chat/completions`."""
    raw = await read_limited(request, context.settings.max_request_bytes)
    chat = parse_chat_request(raw)
    exchange = ChatExchange(request, context, chat)
    # THINK_AS_REASONING reads think blocks apart in every answer, tools offered or not.
    relay = not context.settings.think_as_reasoning
    if relay and not needs_rewrite(chat):
        # Pure pass-through: the body as it came (unless a route renames the model), the
        # answer relayed byte for byte.
        model = exchange.upstream_model
        as_sent = raw if model is None else json_bytes({**chat.body, "model": model})
        return await exchange.relayed(as_sent)
    if relay and (not chat.tools or chat.choice is ChoiceMode.NONE):
        # The history's rewrite (or, to an upstream that calls tools itself, nothing) was
        # all there was to do.
        return await exchange.relayed(json_bytes(exchange.upstream_body))
    writer = ChatWriter(
        stream=chat.stream,
        fallback_model=exchange.model_name(),
        include_usage=chat.include_usage,
        reasoning_fields=context.settings.chat_reasoning_field.fields,
    )
    return await respond(await exchange.answered(), writer, context.settings)

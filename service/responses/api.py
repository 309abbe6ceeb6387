"""`POST /v1/responses`: the Responses API as a front door of the engine. The body becomes the
engine's chat request, the engine answers it (rendering, parsing, forced calls, metrics and
trace as for chat completions), and its events are written as a `response` or the Responses
event stream, which is kept in the store once it ended well. The upstream only ever sees
chat completions."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..context import ProxyContext
from ..exchange import ChatExchange, respond
from ..wire import read_limited
from .events import ResponseWriter
from .request import parse_responses_request
from .retrieval import identified
from .store import ResponseStore


async def create_response(
    request: Request, context: ProxyContext, store: ResponseStore, owner: str
) -> Response:
    """`POST /v1/responses` from the client whose key `owner` names."""
    limit = context.settings.max_request_bytes
    raw = await read_limited(request, limit)
    asked = await parse_responses_request(raw, store, owner, limit, context.settings.hosted_tools)
    exchange = ChatExchange(
        request, context, asked.chat, dropped=asked.tools.dropped, held_whole=True
    )
    writer = ResponseWriter(
        asked.body, model=exchange.model_name(), stream=asked.chat.stream, tools=asked.tools
    )

    async def stored() -> None:
        if asked.store:
            await store.put(owner, writer.whole(), identified(asked.inputs), asked.referenced)

    return await respond(await exchange.answered(), writer, context.settings, on_finished=stored)

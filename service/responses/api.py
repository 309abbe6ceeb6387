"""`POST /v1/responses`: the Responses API served on the chat-completions machinery. The body
becomes a chat request, the chat exchange answers it (rendering, parsing, forced calls, metrics
and trace as for chat completions), and its answer is translated into a `response` or the
Responses event stream. The upstream only ever sees chat completions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from ..chat import Translation, assembled_events, named_event
from ..context import ProxyContext
from ..wire import EventStream, read_limited
from .events import ResponseAssembler
from .request import parse_responses_request
from .store import ResponseStore


async def create_response(
    request: Request, context: ProxyContext, store: ResponseStore, owner: str
) -> Response:
    """`POST /v1/responses` from the client whose key `owner` names."""
    limit = context.settings.max_request_bytes
    raw = await read_limited(request, limit)
    asked = await parse_responses_request(raw, store, owner, limit, context.settings.hosted_tools)
    translation = Translation.of(
        request, context, asked.chat, dropped=asked.tools.dropped, held_whole=True
    )
    model = translation.exchange.model_name()
    assembler = ResponseAssembler(asked.body, model=model, tools=asked.tools)

    async def stored() -> None:
        if asked.store:
            conversation = (*asked.inputs, *assembler.output)
            indexed = (*asked.referenced, *assembler.output)
            await store.put(owner, assembler.response["id"], conversation, indexed)

    return await translation.respond(assembler, lambda: assembler.response, on_finished=stored)


def response_events(
    assembler: ResponseAssembler,
    chat_events: AsyncIterator[bytes],
    *,
    on_finished: Callable[[], Awaitable[None]],
) -> EventStream:
    """The Responses event stream for the proxy's own chat event stream of one choice. A
    failure, in the upstream or here, ends it with `error` and `response.failed`."""
    return assembled_events(assembler, chat_events, named_event, on_finished=on_finished)

"""`POST /v1/responses`: the Responses API as a front door of the engine. The body becomes the
engine's chat request, the engine answers it (rendering, parsing, forced calls, metrics and
trace as for chat completions), and its events are written as a `response` or the Responses
event stream, which is kept in the store once it ended well. The upstream only ever sees
chat completions. `POST /v1/responses/input_tokens` reads the same body and asks nothing."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..context import ProxyContext
from ..exchange import (
    Answer,
    AnswerEnd,
    AnswerStart,
    ChatExchange,
    ChoiceEnd,
    ChoiceStart,
    Event,
    estimated_prompt_tokens,
    respond,
)
from ..wire import json_response, read_limited
from .connection import connection_memory
from .events import ResponseWriter
from .request import ResponsesRequest, parse_responses_request
from .retrieval import identified
from .store import ResponseStore

# The engine's events for an answer that generates nothing: a choice that stops at once.
NOTHING_USED = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
WARM_UP: list[Event] = [AnswerStart({}), ChoiceStart(), ChoiceEnd("stop"), AnswerEnd(NOTHING_USED)]


async def create_response(
    request: Request, context: ProxyContext, store: ResponseStore, owner: str
) -> Response:
    """`POST /v1/responses` from the client whose key `owner` names."""
    asked = await responses_request(request, context, store, owner)
    exchange = ChatExchange(
        request, context, asked.chat, dropped=asked.tools.dropped, held_whole=True
    )
    # What the proxy does: one call an answer on a route that gives it to a silent client.
    reported = {**asked.body, "parallel_tool_calls": not exchange.chat.single_call}
    writer = ResponseWriter(
        reported, model=exchange.model_name(), stream=asked.chat.stream, tools=asked.tools
    )

    memory = connection_memory(request)

    async def stored() -> None:
        inputs = identified(asked.inputs)
        if memory is not None:  # a WebSocket turn: the connection's latest, stored or not
            memory.keep(owner, writer.whole(), inputs)
        if asked.store:
            await store.put(owner, writer.whole(), inputs, asked.referenced)

    # A warm-up (`generate: false`, which Codex sends first on a WebSocket) asks nothing:
    # its response holds no output, and a later turn continues from it.
    warm_up = asked.body.get("generate") is False
    answer = Answer(WARM_UP, stream=asked.chat.stream) if warm_up else await exchange.answered()
    return await respond(answer, writer, context.settings, on_finished=stored)


async def count_input_tokens(
    request: Request, context: ProxyContext, store: ResponseStore, owner: str
) -> Response:
    """`POST /v1/responses/input_tokens`: the estimate for the prompt the upstream would be
    sent for the same body to `POST /v1/responses`, the earlier responses it names included
    (see the engine's `tokens.py`); the upstream is asked nothing."""
    asked = await responses_request(request, context, store, owner, needs_model=False)
    tokens = estimated_prompt_tokens(ChatExchange(request, context, asked.chat).upstream_body)
    return json_response({"object": "response.input_tokens", "input_tokens": tokens})


async def responses_request(
    request: Request,
    context: ProxyContext,
    store: ResponseStore,
    owner: str,
    *,
    needs_model: bool = True,
) -> ResponsesRequest:
    """The client's body read and checked, what it names found among `owner`'s responses
    (and its WebSocket connection's latest); it must name its model unless `needs_model` is
    false."""
    limit = context.settings.max_request_bytes
    raw = await read_limited(request, limit)
    hosted = context.settings.hosted_tools
    memory = connection_memory(request)  # the turn's connection's, on a WebSocket
    return await parse_responses_request(
        raw, store, owner, limit, hosted, needs_model=needs_model, memory=memory
    )

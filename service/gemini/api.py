"""The Gemini API's model methods as a front door of the engine: `generateContent`,
`streamGenerateContent` (`alt=sse`, or one JSON array) and `countTokens`, under `/v1beta`
and `/v1`; and which API a request to a path both share (`GET /v1/models`) speaks."""

from __future__ import annotations

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from ..context import ProxyContext
from ..exchange import ChatExchange, estimated_prompt_tokens, respond
from ..wire import (
    EVENT_STREAM,
    GOOGLE_API_KEY_HEADER,
    GOOGLE_CLIENT_HEADER,
    GOOGLE_KEY_PARAMETER,
    JSON_MEDIA_TYPE,
    ProxyError,
    json_response,
    read_limited,
)
from .models import model_id
from .request import parse_count_tokens_request, parse_gemini_request
from .writer import JSON_ARRAY, SSE, GeminiWriter

GENERATE, STREAM, COUNT = "generateContent", "streamGenerateContent", "countTokens"
METHOD_SEPARATOR = ":"
# `?alt=sse`: the stream as server-sent events; without it, one JSON array.
ALT_PARAMETER, SSE_ALT = "alt", "sse"


async def model_method(request: Request, context: ProxyContext, target: str) -> Response:
    """`POST .../models/{model}:{method}` (`target` is `{model}:{method}`)."""
    name, separator, method = target.rpartition(METHOD_SEPARATOR)
    if not separator or method not in (GENERATE, STREAM, COUNT):
        raise ProxyError(
            404,
            f"models/{target} is not served: the proxy serves {GENERATE}, {STREAM} and {COUNT}",
            code="not_found",
        )
    raw = await read_limited(request, context.settings.max_request_bytes)
    model, hosted = model_id(name), context.settings.hosted_tools
    if method == COUNT:
        counted = parse_count_tokens_request(raw, model, hosted)
        exchange = ChatExchange(request, context, counted.chat)
        return json_response({"totalTokens": estimated_prompt_tokens(exchange.upstream_body)})
    asked = parse_gemini_request(raw, model, stream=method == STREAM, hosted_tools=hosted)
    exchange = ChatExchange(request, context, asked.chat, dropped=asked.dropped)
    sse = request.query_params.get(ALT_PARAMETER) == SSE_ALT
    writer = GeminiWriter(
        model=exchange.model_name(),
        thoughts=asked.thoughts,
        framing=None if method == GENERATE else SSE if sse else JSON_ARRAY,
        input_estimate=estimated_prompt_tokens(exchange.upstream_body),
    )
    # The google-genai SDKs read any line but `data:` as JSON: no keep-alive comments.
    return await respond(
        await exchange.answered(),
        writer,
        context.settings,
        media_type=EVENT_STREAM if sse else JSON_MEDIA_TYPE,
        keepalive=False,
    )


def asks_gemini(request: HTTPConnection) -> bool:
    """Whether a request to a path both APIs have (`GET /v1/models`) comes from a Gemini API
    client: Google's SDKs and Gemini CLI send `x-goog-api-client` and `x-goog-api-key`,
    curl users the `key` parameter."""
    headers = request.headers
    return (
        GOOGLE_CLIENT_HEADER in headers
        or GOOGLE_API_KEY_HEADER in headers
        or GOOGLE_KEY_PARAMETER in request.query_params
    )

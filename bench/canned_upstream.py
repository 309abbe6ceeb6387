"""An instant OpenAI-compatible upstream for the proxy benchmark: always the same answer,
a sentence and one JSON-mix tool call, streamed in token-sized chunks or whole. A request's
`max_tokens` asks for a longer stream: that many chunks of prose before the same answer.

`create_app` writes each chunk of a stream on its own, as a model server writes tokens as
they come; `create_burst_app` writes a whole stream at once, as a server does that sends
many tokens per read (a fast GPU server, a cached answer)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ANSWER = (
    "Let me check the weather in Paris for you.\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
)
TOKEN_CHARS = 4  # about one token of English text
PROSE_TOKEN = "Sun "  # one chunk of filler prose, holding no tag


def _chunk(delta: dict[str, str], finish_reason: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


ROLE_CHUNK = _chunk({"role": "assistant", "content": ""})
PROSE_CHUNK = _chunk({"content": PROSE_TOKEN})
ANSWER_CHUNKS = [
    *(_chunk({"content": ANSWER[i : i + TOKEN_CHARS]}) for i in range(0, len(ANSWER), TOKEN_CHARS)),
    _chunk({}, "stop"),
    b"data: [DONE]\n\n",
]
COMPLETION = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 0,
    "model": "bench",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": ANSWER},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
}


async def chat(request: Request) -> Response:
    body = await request.json()
    if not body.get("stream"):
        return JSONResponse(COMPLETION)
    prose_chunks = int(body.get("max_tokens") or 0)
    if request.app.state.burst:
        chunks = [ROLE_CHUNK, *[PROSE_CHUNK] * prose_chunks, *ANSWER_CHUNKS]
        return Response(b"".join(chunks), media_type="text/event-stream")

    async def events() -> AsyncIterator[bytes]:
        yield ROLE_CHUNK
        for _ in range(prose_chunks):
            yield PROSE_CHUNK
        for chunk in ANSWER_CHUNKS:
            yield chunk

    return StreamingResponse(events(), media_type="text/event-stream")


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def models(request: Request) -> Response:
    """What the proxy's /readyz asks for."""
    return JSONResponse({"object": "list", "data": [{"id": "bench", "object": "model"}]})


def create_app(*, burst: bool = False) -> Starlette:
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/healthz", healthz),
            Route("/v1/models", models),
        ]
    )
    app.state.burst = burst
    return app


def create_burst_app() -> Starlette:
    return create_app(burst=True)

"""The floor for any proxy that rewrites chunks, for `bench/versus_relay.py` to compare
against: FastAPI + httpx, every SSE chunk decoded and re-encoded, nothing else (no tools,
no parsing, no metrics, no limits). Its upstream is `BARE_RELAY_UPSTREAM` (a `/v1` URL)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

DATA_PREFIX = "data: "
DONE = "[DONE]"


def create_app() -> FastAPI:
    upstream = os.environ["BARE_RELAY_UPSTREAM"]
    client = httpx.AsyncClient(base_url=upstream, timeout=30)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with client:
            yield

    app = FastAPI(lifespan=lifespan)

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        body = await request.json()
        if not body.get("stream"):
            answer = await client.post("/chat/completions", json=body)
            return JSONResponse(answer.json())
        upstream_request = client.build_request("POST", "/chat/completions", json=body)
        response = await client.send(upstream_request, stream=True)

        async def events() -> AsyncIterator[bytes]:
            try:
                async for line in response.aiter_lines():
                    if not line.startswith(DATA_PREFIX):
                        continue
                    payload = line[len(DATA_PREFIX) :]
                    if payload != DONE:
                        payload = json.dumps(json.loads(payload))
                    yield f"{DATA_PREFIX}{payload}\n\n".encode()
            finally:
                await response.aclose()

        return StreamingResponse(events(), media_type="text/event-stream")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app

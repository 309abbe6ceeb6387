"""What each layer of the proxy costs a whole answer, by subtraction, in one run: the same
request sent to the instant canned upstream straight, and through servers that each add one
layer to the one before: uvicorn with an ASGI app that forwards the body over httpx and
sends back the upstream's bytes; the same forwarding as a Starlette route (the proxy's
framework); as a FastAPI route; then the proxy relaying a request with no tool, and the
proxy rendering a tool and parsing the answer.

    python bench/layers.py [--rounds 5] [--requests 100] [--warm-up 30]

Printed per server: the time it adds to the upstream's (median, ms), its CPU per request
(ms), and the CPU it costs beyond the server it adds a layer to: the layer's own. The CPU
columns are the steady ones on a shared machine. Each round sends `--requests` to every
server in turn, after `--warm-up` requests to it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import ExitStack
from typing import Any

import httpx
from fastapi import FastAPI
from proxy import (
    CLIENT_TLS,
    HERE,
    MESSAGES,
    TOOLS,
    UVICORN,
    Server,
    canned_upstream_command,
    free_port,
    proxy_command,
    server,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

CHAT_PATH = "/v1/chat/completions"
HEADERS = {"content-type": "application/json"}
JSON_HEADERS = [(b"content-type", b"application/json")]
WARM_UP_REQUESTS = 30
UPSTREAM = "LAYERS_UPSTREAM"  # the environment variable the forwarding apps read

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=os.environ[UPSTREAM])


async def _forwarded(client: httpx.AsyncClient, body: bytes) -> bytes:
    answer = await client.post("/chat/completions", content=body, headers=HEADERS)
    return answer.content


def uvicorn_app() -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """uvicorn's floor: a bare ASGI app that forwards the body and sends the answer back."""
    client = _client()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # nothing to start or stop
            for phase in ("startup", "shutdown"):
                await receive()
                await send({"type": f"lifespan.{phase}.complete"})
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        answer = await _forwarded(client, body)
        length = [(b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": JSON_HEADERS + length})
        await send({"type": "http.response.body", "body": answer})

    return app


def starlette_app() -> Starlette:
    """The same forwarding as a Starlette route."""
    client = _client()

    async def chat(request: Request) -> Response:
        answer = await _forwarded(client, await request.body())
        return Response(answer, media_type="application/json")

    return Starlette(routes=[Route(CHAT_PATH, chat, methods=["POST"])])


def fastapi_app() -> FastAPI:
    """The same forwarding as a FastAPI route (its `Request` is Starlette's)."""
    client = _client()
    app = FastAPI()

    @app.post(CHAT_PATH)
    async def chat(request: Request) -> Response:
        answer = await _forwarded(client, await request.body())
        return Response(answer, media_type="application/json")

    return app


LAYERS = {
    "uvicorn + httpx": "uvicorn_app",
    "Starlette + httpx": "starlette_app",
    "FastAPI + httpx": "fastapi_app",
}
UPSTREAM_ALONE = "upstream alone"
NO_TOOL = "proxy, no tool (relayed)"
WITH_TOOL = "proxy, with a tool"
# Each server -> the one it adds a layer to.
BENEATH = {
    "uvicorn + httpx": UPSTREAM_ALONE,
    "Starlette + httpx": "uvicorn + httpx",
    "FastAPI + httpx": "Starlette + httpx",
    NO_TOOL: "Starlette + httpx",
    WITH_TOOL: NO_TOOL,
}


def layer_command(factory: str, port: int) -> list[str]:
    return [*UVICORN, "--factory", f"layers:{factory}", "--app-dir", str(HERE), "--port", str(port)]


def payload(*, tools: bool) -> bytes:
    body: dict[str, object] = {"model": "bench", "messages": MESSAGES}
    if tools:
        body["tools"] = TOOLS
    return json.dumps(body).encode()


async def one_round(
    targets: dict[str, tuple[Server, bytes]], requests: int, warm_up: int
) -> dict[str, Any]:
    """Per target: the median seconds of `requests` whole answers, and its CPU per request."""
    result: dict[str, Any] = {}
    for name, (target, body) in targets.items():
        async with httpx.AsyncClient(base_url=target.url, timeout=60, verify=CLIENT_TLS) as client:
            for _ in range(warm_up):
                (await client.post(CHAT_PATH, content=body, headers=HEADERS)).raise_for_status()
            seconds = []
            cpu_before = target.cpu_seconds()
            for _ in range(requests):
                started = time.perf_counter()
                (await client.post(CHAT_PATH, content=body, headers=HEADERS)).raise_for_status()
                seconds.append(time.perf_counter() - started)
            cpu = (target.cpu_seconds() - cpu_before) / requests
        result[name] = (statistics.median(seconds), cpu)
    return result


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--rounds", type=int, default=5)
    options.add_argument("--requests", type=int, default=100, help="per server and round")
    options.add_argument(
        "--warm-up", type=int, default=WARM_UP_REQUESTS, help="per server and round, first"
    )
    args = options.parse_args()
    upstream_port = free_port()
    with ExitStack() as servers:
        upstream = servers.enter_context(
            server(canned_upstream_command(upstream_port), upstream_port)
        )
        env = {UPSTREAM: f"{upstream.url}/v1", "UPSTREAM_BASE_URL": f"{upstream.url}/v1"}
        env["ACCESS_LOG"] = "false"
        plain, with_tool = payload(tools=False), payload(tools=True)
        targets: dict[str, tuple[Server, bytes]] = {UPSTREAM_ALONE: (upstream, plain)}
        for name, factory in LAYERS.items():
            port = free_port()
            targets[name] = (
                servers.enter_context(server(layer_command(factory, port), port, env)),
                plain,
            )
        port = free_port()
        proxy = servers.enter_context(server(proxy_command(port), port, env))
        targets[NO_TOOL] = (proxy, plain)
        targets[WITH_TOOL] = (proxy, with_tool)
        rounds = [
            asyncio.run(one_round(targets, args.requests, args.warm_up)) for _ in range(args.rounds)
        ]
    print(f"{args.rounds} rounds of {args.requests} whole answers per server, one at a time")
    print(f"{'':<26}{'added ms':>10}{'CPU ms/req':>12}{'beyond':>26}{'its CPU ms':>12}")

    def median(name: str, at: int) -> float:
        return statistics.median(result[name][at] for result in rounds)

    for name in targets:
        wall = (median(name, 0) - median(UPSTREAM_ALONE, 0)) * 1e3
        cpu = median(name, 1) * 1e3
        line = f"{name:<26}{wall:>10.2f}{cpu:>12.3f}"
        if name in BENEATH:
            beneath = BENEATH[name]
            own = cpu if beneath == UPSTREAM_ALONE else cpu - median(beneath, 1) * 1e3
            line += f"{beneath:>26}{own:>+12.3f}"
        print(line)


if __name__ == "__main__":
    main()

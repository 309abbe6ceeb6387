"""What one big answer costs the proxy's memory, through each front door, streamed and whole:
the proxy's RSS at its peak while the answer goes through, and what it still holds once the
answer ended, each against its RSS before. The upstream answers with `--mib` MiB of prose
(no call in it), streamed in chunks of 64 KiB or as one body, and the client reads each
answer as it comes and keeps none of it. Each door gets a proxy process of its own, so that
what one answer leaves behind is not counted in the next.

    python bench/answer_memory.py [--mib 60] [--doors chat,responses,messages,gemini]

60 MiB by default: a whole answer's body, and a Responses stream, stop at
UPSTREAM_MAX_BODY_BYTES (64 MiB), framing included. RSS is sampled every 2 ms from
/proc/<pid>/status, so a peak shorter than that can be missed.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from added_latency import peak_rss, rss_mb
from proxy import UVICORN, Server, free_port, proxy_command, server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

HERE = Path(__file__).resolve().parent
CHUNK_CHARS = 64 * 1024
PROSE = "All work and no play makes a long answer. "
SAMPLE_SECONDS = 0.002
MEBIBYTE = 1024 * 1024
# After an answer, before its `after`: a stream's task may still be closing its upstream.
SETTLE_SECONDS = 3
MODEL = "bench"


def _answer_chunks(chars: int) -> Iterator[str]:
    line = (PROSE * (CHUNK_CHARS // len(PROSE) + 1))[:CHUNK_CHARS]
    for start in range(0, chars, CHUNK_CHARS):
        yield line[: min(CHUNK_CHARS, chars - start)]


def _sse(delta: dict[str, str], finish_reason: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-big",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


async def _chat(request: Request) -> Response:
    body = await request.json()
    chars = int(body["max_tokens"])  # the benchmark's way of asking for a size
    if not body.get("stream"):
        message = {"role": "assistant", "content": "".join(_answer_chunks(chars))}
        return JSONResponse(
            {
                "id": "chatcmpl-big",
                "object": "chat.completion",
                "created": 0,
                "model": MODEL,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
            }
        )

    async def events() -> AsyncIterator[bytes]:
        yield _sse({"role": "assistant", "content": ""})
        for chunk in _answer_chunks(chars):
            yield _sse({"content": chunk})
        yield _sse({}, "stop")
        yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


async def _models(request: Request) -> Response:
    return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model"}]})


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def create_upstream() -> Starlette:
    """The upstream: `max_tokens` characters of prose, streamed or whole."""
    return Starlette(
        routes=[
            Route("/v1/chat/completions", _chat, methods=["POST"]),
            Route("/v1/models", _models),
            Route("/healthz", _healthz),
        ]
    )


@dataclass(frozen=True)
class Door:
    name: str
    path: str
    body: dict[str, Any]
    params: dict[str, str]


# A tool in every request, so that each answer is read for calls (a request without tools
# is relayed as it comes).
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}}
NAME, DESCRIPTION = "get_weather", "Current weather for a city"


def doors(chars: int, stream: bool) -> list[Door]:
    """Each front door's request for `chars` characters, streamed or whole."""
    question = "Write a long answer."
    function = {"name": NAME, "description": DESCRIPTION, "parameters": PARAMETERS}
    gemini = "streamGenerateContent" if stream else "generateContent"
    contents = [{"role": "user", "parts": [{"text": question}]}]
    return [
        Door(
            "chat",
            "/v1/chat/completions",
            {"model": MODEL, "messages": [{"role": "user", "content": question}]}
            | {"max_tokens": chars, "stream": stream}
            | {"tools": [{"type": "function", "function": function}]},
            {},
        ),
        Door(
            "responses",
            "/v1/responses",
            {"model": MODEL, "input": question, "max_output_tokens": chars, "stream": stream}
            | {"tools": [{"type": "function", **function}]},
            {},
        ),
        Door(
            "messages",
            "/v1/messages",
            {"model": MODEL, "messages": [{"role": "user", "content": question}]}
            | {"max_tokens": chars, "stream": stream}
            | {"tools": [{"name": NAME, "description": DESCRIPTION, "input_schema": PARAMETERS}]},
            {},
        ),
        Door(
            "gemini",
            f"/v1beta/models/{MODEL}:{gemini}",
            {"contents": contents, "generationConfig": {"maxOutputTokens": chars}}
            | {"tools": [{"functionDeclarations": [function]}]},
            {"alt": "sse"} if stream else {},
        ),
    ]


def rss_bytes(pid: int) -> int:
    return round(rss_mb(pid) * MEBIBYTE)


def answered_bytes(proxy: Server, door: Door) -> int:
    """Send `door`'s request and read its answer as it comes, keeping none of it."""
    received = 0
    with httpx.Client(base_url=proxy.url, timeout=600) as client:
        request = client.build_request("POST", door.path, json=door.body, params=door.params)
        response = client.send(request, stream=True)
        try:
            if response.status_code != 200:
                raise SystemExit(f"{door.path}: {response.status_code} {response.read()[:300]!r}")
            for part in response.iter_raw():
                received += len(part)
        finally:
            response.close()
    return received


def measure(upstream: Server, door: Door) -> tuple[int, int, int]:
    """One proxy's RSS before `door`'s answer, at its peak and after: after a warm-up answer
    of the same door, so that what any first request loads is in `before`."""
    port = free_port()
    env = {"UPSTREAM_BASE_URL": f"{upstream.url}/v1", "ACCESS_LOG": "false"}
    with server(proxy_command(port), port, env) as proxy:
        warm = Door(door.name, door.path, _sized(door, 1000), door.params)
        answered_bytes(proxy, warm)
        before = rss_bytes(proxy.pid)
        with peak_rss(proxy.pid, every=SAMPLE_SECONDS) as peak:
            answered_bytes(proxy, door)
        httpx.get(f"{proxy.url}/healthz")  # the answer's last steps are done
        time.sleep(SETTLE_SECONDS)
        after = rss_bytes(proxy.pid)
    return before, round(peak[0] * MEBIBYTE), after


def _sized(door: Door, chars: int) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(json.dumps(door.body))
    for key in ("max_tokens", "max_output_tokens"):
        if key in body:
            body[key] = chars
    if "generationConfig" in body:
        body["generationConfig"]["maxOutputTokens"] = chars
    return body


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--mib", type=float, default=60, help="MiB of text in the answer")
    options.add_argument("--doors", default="chat,responses,messages,gemini")
    options.add_argument("--ways", default="stream,whole", help="stream, whole or both")
    args = options.parse_args()
    chars = int(args.mib * MEBIBYTE)
    wanted = args.doors.split(",")
    port = free_port()
    upstream_command = [*UVICORN, "--factory", "answer_memory:create_upstream"]
    upstream_command += ["--app-dir", str(HERE), "--port", str(port)]
    print(f"{args.mib:g} MiB of text per answer; RSS in MB (10^6 bytes)")
    print(f"{'door':<20} {'before':>8} {'peak':>8} {'after':>8} {'+peak':>8} {'+after':>8}")
    with server(upstream_command, port) as upstream:
        for way in args.ways.split(","):
            for door in doors(chars, stream=way == "stream"):
                if door.name not in wanted:
                    continue
                before, peak, after = measure(upstream, door)
                name = f"{door.name} {way}"
                row = [before, peak, after, peak - before, after - before]
                print(f"{name:<20}" + "".join(f" {value / 1e6:>8.1f}" for value in row))


if __name__ == "__main__":
    main()

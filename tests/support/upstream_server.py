"""A scripted OpenAI-compatible upstream: the text-only model server the proxy talks to.

Tests queue one step per chat request (`Reply`, `Fail`, `Hang`, `Drop`, `Paused`, `Late`) and read
back every request it received, byte for byte:

>>> upstream.script(Reply("Let me check.", WEATHER_CALL["json-mix"]))
>>> ...  # call the proxy
>>> upstream.chat_requests[-1].json["messages"]
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from waits import HUNG_AFTER_SECONDS

from protocols import get_protocol, protocol_names

UPSTREAM_ID = "chatcmpl-upstream"
CREATED = 1_700_000_000
USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
MODELS = {
    "object": "list",
    "data": [{"id": "upstream-model", "object": "model", "created": CREATED, "owned_by": "test"}],
}
EMBEDDING = {
    "object": "list",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5]}],
    "model": "upstream-embedder",
    "usage": {"prompt_tokens": 2, "total_tokens": 2},
}

# The same calls as (name, arguments) once parsed.
PARIS_WEATHER = ("get_weather", {"city": "Paris"})
UTC_TIME = ("get_time", {"zone": "UTC"})
# The text a free-form apply_patch call carries: markup, quotes, a backslash, a final newline.
PATCH = '*** Begin Patch\n*** Add File: a.py\n+print("<b>\\n</b>")\n*** End Patch\n'


def rendered_calls(name: str, arguments: dict[str, Any]) -> dict[str, str]:
    """What the model writes to make this call, by protocol: each protocol's own rendering,
    so a protocol added to the registry is scripted here with no edit."""
    return {
        protocol: get_protocol(protocol).render_call(name, arguments)
        for protocol in protocol_names()
    }


# What the model writes when it calls get_weather(city="Paris") or get_time(zone="UTC").
WEATHER_CALL = rendered_calls(*PARIS_WEATHER)
TIME_CALL = rendered_calls(*UTC_TIME)
# A call format shown as an example, which stays text; and a fence of calls after a line of
# prose, which is the calls (UTC_TIME): the precision rule every front door keeps.
SHOWN_CALL = "A call looks like this:\n\n```\n" + WEATHER_CALL["json-mix"] + "\n```\n\nThat's all."
PROSE_BEFORE_FENCE = "I'll use this call:\n"
FENCE_OF_CALLS = '```json\n[{"name": "get_time", "arguments": {"zone": "UTC"}}]\n```'
PATCH_CALL = rendered_calls("apply_patch", {"input": PATCH})


Delta = dict[str, Any]


def native_call(
    index: int, call_id: str, name: str, arguments: dict[str, Any], *, pieces: int = 3
) -> list[Delta]:
    """The deltas of a tool call an upstream that calls tools itself streams: the first with
    its index, id, type and name, then its arguments' JSON in `pieces` fragments."""
    text = json.dumps(arguments)
    size = -(-len(text) // pieces)
    start = {"index": index, "id": call_id, "type": "function"}
    deltas: list[Delta] = [{"tool_calls": [{**start, "function": {"name": name, "arguments": ""}}]}]
    for at in range(0, len(text), size):
        fragment = {"index": index, "function": {"arguments": text[at : at + size]}}
        deltas.append({"tool_calls": [fragment]})
    return deltas


class Reply:
    """Answer with the chunks: one SSE chunk per string (its content) or dict (a delta as
    it is, such as a native tool call's) when the request streams (after `reasoning`
    deltas; usage last if asked), else one JSON completion of them all."""

    def __init__(
        self,
        *chunks: str | Delta,
        finish_reason: str = "stop",
        reasoning: tuple[str, ...] = (),
        ascii_only: bool = True,
    ):
        self.chunks, self.finish_reason, self.reasoning = chunks, finish_reason, reasoning
        # False: non-ASCII travels as raw UTF-8 (U+2028 too), as vLLM and serde servers send it.
        self.ascii_only = ascii_only


class Hang:
    """Stream the chunks (if any), then hold the request open until the client goes away."""

    def __init__(self, *chunks: str):
        self.chunks = chunks


class Drop:
    """Stream the chunks, then break the connection in the middle of the response."""

    def __init__(self, *chunks: str):
        self.chunks = chunks


class Paused:
    """Stream the `before` chunks, wait until the test sets `resume`, then stream the `after`
    chunks and finish like a `Reply`; `paused` is set while it waits. A request that does not
    stream gets the whole `Reply` once the test resumes it."""

    def __init__(self, before: tuple[str, ...], after: tuple[str, ...]):
        self.before, self.after = before, after
        self.paused = threading.Event()
        self.resume = threading.Event()

    @property
    def reply(self) -> Reply:
        return Reply(*self.before, *self.after)


class Late:
    """Answer with `reply` once the test sets `resume`; `asked` is set when the request came:
    an upstream as slow as the test makes it, streamed or whole."""

    def __init__(self, reply: Reply):
        self.reply = reply
        self.asked = threading.Event()
        self.resume = threading.Event()


class Verbatim:
    """Answer `status` (200) with exactly these bytes, each piece sent on its own, then end
    cleanly: for malformed chunks, cut streams, odd line breaks, encodings."""

    def __init__(self, *pieces: bytes, headers: dict[str, str] | None = None, status: int = 200):
        self.pieces = pieces
        self.headers = {"content-type": "text/event-stream", **(headers or {})}
        self.status = status


def raw_chunk_event(*choices: Any) -> bytes:
    """One event of a chunk holding exactly these choices, as they are: for `Verbatim`."""
    chunk = {
        "id": UPSTREAM_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "upstream-model",
        "choices": list(choices),
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def raw_completion(*choices: dict[str, Any]) -> Verbatim:
    """A whole JSON answer holding exactly these choices, as they are."""
    body = {"id": UPSTREAM_ID, "object": "chat.completion", "created": CREATED}
    encoded = json.dumps({**body, "choices": list(choices)}).encode()
    return Verbatim(encoded, headers={"content-type": "application/json"})


@dataclass(frozen=True)
class Fail:
    """Answer with an HTTP error in OpenAI's error shape."""

    status: int
    message: str = "the upstream refused"

    @property
    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": "upstream", "param": None, "code": None}}


Step = Reply | Hang | Drop | Fail | Paused | Late | Verbatim


@dataclass(frozen=True)
class Received:
    """One request as the upstream saw it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    peer_port: int | None  # the proxy's end of the connection: the same port, the same one
    query: str = ""

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class ConnectionDropped(Exception):
    """Raised after the response started, so the server closes the socket mid-body."""


class ScriptedUpstream:
    """The app to serve plus the handle tests script and inspect (thread-safe enough:
    deque and list appends are atomic)."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.client_gone = threading.Event()  # a `Hang` saw its client disconnect
        self._script: deque[Step] = deque()
        self.models: dict[str, Any] = MODELS  # what GET /v1/models answers
        self.app = Starlette(
            routes=[
                Route("/v1/models", self._models),
                Route("/v1/models/{model:path}", self._model),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/{path:path}", self._scripted, methods=["POST"]),
            ]
        )

    def script(self, *steps: Step) -> None:
        self._script.extend(steps)

    def reset(self) -> None:
        """Forget the requests and the steps left, for the next test on the same server. A
        fresh `client_gone`: a late disconnect from the last test cannot set the new one."""
        self.requests = []
        self.client_gone = threading.Event()
        self._script.clear()
        self.models = MODELS

    @property
    def chat_requests(self) -> list[Received]:
        return [r for r in self.requests if r.path == "/v1/chat/completions"]

    async def _record(self, request: Request) -> Received:
        received = Received(
            request.method,
            request.url.path,
            dict(request.headers),
            await request.body(),
            request.client.port if request.client else None,
            request.url.query,
        )
        self.requests.append(received)
        return received

    async def _models(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse(self.models)

    async def _model(self, request: Request) -> Response:
        await self._record(request)
        wanted = request.path_params["model"]
        for entry in self.models["data"]:
            if entry["id"] == wanted:
                return JSONResponse(entry)
        return JSONResponse({"error": {"message": f"no model {wanted}"}}, status_code=404)

    async def _embeddings(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse(EMBEDDING)

    async def _scripted(self, request: Request) -> Response:
        asked = (await self._record(request)).json
        step = self._script.popleft()
        if isinstance(step, Late):
            step.asked.set()
            resumed = await anyio.to_thread.run_sync(step.resume.wait, HUNG_AFTER_SECONDS)
            assert resumed, "the test never resumed the late upstream"
            step = step.reply
        if isinstance(step, Fail):
            return JSONResponse(step.body, status_code=step.status)
        if isinstance(step, Verbatim):
            return _Raw(lambda send, receive: _send_verbatim(step, send))
        if isinstance(step, Reply) and not asked.get("stream"):
            return JSONResponse(completion_body(step, asked["model"]))
        if isinstance(step, Paused) and not asked.get("stream"):
            await _resumed(step)
            return JSONResponse(completion_body(step.reply, asked["model"]))
        if isinstance(step, Paused):
            return _Raw(lambda send, receive: self._paused(step, asked, send))
        gone = self.client_gone  # this test's, even if the client leaves after a reset
        if isinstance(step, Hang) and not step.chunks:
            return _Raw(lambda send, receive: _wait_for_disconnect(receive, gone))
        return _Raw(lambda send, receive: self._stream(step, asked, send, receive, gone))

    async def _stream(
        self,
        step: Step,
        asked: dict[str, Any],
        send: Send,
        receive: Receive,
        gone: threading.Event,
    ) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for event in event_stream(step, asked):
            await send({"type": "http.response.body", "body": event, "more_body": True})
        if isinstance(step, Drop):
            raise ConnectionDropped
        if isinstance(step, Hang):
            return await _wait_for_disconnect(receive, gone)
        await send({"type": "http.response.body", "body": b""})

    async def _paused(self, step: Paused, asked: dict[str, Any], send: Send) -> None:
        events = list(event_stream(step.reply, asked))
        split = 1 + len(step.before)  # the role chunk, then `before`
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for event in events[:split]:
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await _resumed(step)
        for event in events[split:]:
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


async def _resumed(step: Paused) -> None:
    """Once the test has resumed the paused step."""
    step.paused.set()
    resumed = await anyio.to_thread.run_sync(step.resume.wait, HUNG_AFTER_SECONDS)
    assert resumed, "the test never resumed the paused upstream"


async def _wait_for_disconnect(receive: Receive, gone: threading.Event) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()


async def _send_verbatim(step: Verbatim, send: Send) -> None:
    headers = [(name.encode(), value.encode()) for name, value in step.headers.items()]
    await send({"type": "http.response.start", "status": step.status, "headers": headers})
    for piece in step.pieces:
        await send({"type": "http.response.body", "body": piece, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


class _Raw(Response):
    """A response written by hand on the ASGI channel."""

    def __init__(self, run: Callable[[Send, Receive], Awaitable[None]]) -> None:
        self.run = run

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.run(send, receive)


def _chunk(model: str, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {
        "id": UPSTREAM_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": [choice],
    }


def event_stream(step: Step, asked: dict[str, Any]) -> Iterator[bytes]:
    """The SSE events a step streams in answer to the request `asked`."""
    model = asked["model"]
    chunks = [_chunk(model, {"role": "assistant", "content": ""})]
    if isinstance(step, Reply):
        chunks += [_chunk(model, {"reasoning_content": text}) for text in step.reasoning]
    chunks += [
        _chunk(model, {"content": text} if isinstance(text, str) else text) for text in step.chunks
    ]
    if isinstance(step, Reply):
        chunks.append(_chunk(model, {}, step.finish_reason))
        if (asked.get("stream_options") or {}).get("include_usage"):
            chunks.append({**_chunk(model, {}), "choices": [], "usage": USAGE})
    ascii_only = not isinstance(step, Reply) or step.ascii_only
    yield from (
        f"data: {json.dumps(chunk, ensure_ascii=ascii_only)}\n\n".encode() for chunk in chunks
    )
    if isinstance(step, Reply):
        yield b"data: [DONE]\n\n"


def completion_body(reply: Reply, model: str) -> dict[str, Any]:
    """The JSON completion a `Reply` answers a non-streaming request with."""
    content = [chunk if isinstance(chunk, str) else chunk.get("content") for chunk in reply.chunks]
    message: dict[str, Any] = {"role": "assistant", "content": "".join(filter(None, content))}
    calls: list[dict[str, Any]] = []  # the deltas' calls added up, as a client adds them
    for delta in reply.chunks:
        for fragment in (delta.get("tool_calls") or ()) if isinstance(delta, dict) else ():
            if fragment["index"] == len(calls):
                call = {key: value for key, value in fragment.items() if key != "index"}
                calls.append({**call, "function": dict(fragment["function"])})
            else:
                calls[fragment["index"]]["function"]["arguments"] += fragment["function"][
                    "arguments"
                ]
    if calls:
        message["tool_calls"] = calls
    if reply.reasoning:
        message["reasoning_content"] = "".join(reply.reasoning)
    return {
        "id": UPSTREAM_ID,
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": USAGE,
    }

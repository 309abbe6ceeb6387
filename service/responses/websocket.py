"""The Responses API over a WebSocket (`GET /v1/responses` with `Upgrade: websocket`), as
OpenAI's WebSocket mode serves it: each `response.create` message is a turn, its events go
out as text frames, one turn at a time, and the connection remembers its latest response
for `previous_response_id` (`connection.py`).

A turn is the HTTP door itself: its message becomes a streamed `POST /v1/responses` that the
whole app serves in-process (client keys, request limits, the in-flight cap, metrics, the
access line, traces, then the engine and the writer), and the event stream it answers is
sent a frame per event. An error answer is one `error` frame with its HTTP status; a
failure mid-stream is `response.failed`, which holds the error (the event stream's `error`
event before it is not sent: on a WebSocket, `error` is what a turn that never started
ends with, and a client takes either as the end of its turn)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from starlette.types import Message, Scope
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..wire import ProxyError, json_bytes
from .connection import SCOPE_KEY, ConnectionMemory

CREATE = "response.create"
PATH = "/v1/responses"
# The handshake's headers that a turn's request does not carry: the upgrade's own, and
# those that describe a body (the turn's are its own).
HANDSHAKE_HEADERS = frozenset({b"connection", b"upgrade", b"content-type", b"transfer-encoding"})
WEBSOCKET_HEADERS = b"sec-websocket-"
BODY_HEADERS = frozenset({b"content-length"})
# The HTTP body's fields that are the transport's: a turn always streams, in the foreground.
TRANSPORT_FIELDS = ("type", "stream", "stream_options", "background")
EVENT_END = b"\n\n"  # what ends each server-sent event of the HTTP door's stream
DATA, EVENT = b"data:", b"event:"
ERROR, FAILED = b"error", b"response.failed"
POLICY_VIOLATION = 1008  # the close code for a connection refused its key
# Messages read ahead of the turn being answered: one is enough for a client that sends
# its next turn early; more would only be held in memory.
READ_AHEAD = 1


async def serve_websocket(websocket: WebSocket, *, key_refused: ProxyError | None) -> None:
    """Serve one connection's turns until the client closes it. A connection whose key was
    refused (`key_refused`) gets that error as a frame, then is closed."""
    await websocket.accept()
    if key_refused is not None:
        await websocket.send_text(_error_frame(key_refused.status, key_refused.body()["error"]))
        await websocket.close(POLICY_VIOLATION)
        return
    messages: asyncio.Queue[str | bytes | None] = asyncio.Queue(READ_AHEAD)
    closed = asyncio.Event()
    reader = asyncio.create_task(_read(websocket, messages, closed))
    memory = ConnectionMemory()
    try:
        # Once the client is gone, a message it sent before is not answered: none is there
        # to read the answer (and the reader may have had no room to say it is gone).
        while (message := await messages.get()) is not None and not closed.is_set():
            await _answer(websocket, message, memory, closed)
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


async def _read(
    websocket: WebSocket, messages: asyncio.Queue[str | bytes | None], closed: asyncio.Event
) -> None:
    """The client's messages, in order, then None once it is gone; `closed` is set then, so
    that a turn being answered is abandoned as an HTTP request is when its client leaves."""
    try:
        while (message := await websocket.receive())["type"] != "websocket.disconnect":
            text = message.get("text")
            await messages.put(text if text is not None else message.get("bytes") or b"")
    finally:
        closed.set()
        with contextlib.suppress(asyncio.QueueFull):  # a turn is waiting: it sees `closed`
            messages.put_nowait(None)


async def _answer(
    websocket: WebSocket, message: str | bytes, memory: ConnectionMemory, closed: asyncio.Event
) -> None:
    """One turn: the message served as `POST /v1/responses`, its answer sent as frames. A
    turn that fails forgets the response it continued."""
    try:
        body = _create_body(message)
    except ProxyError as error:
        await _send(websocket, _error_frame(error.status, error.body()["error"]), closed)
        return
    raw = json_bytes(body)
    turn = _Turn(websocket, raw, closed)
    app = websocket.scope["app"]  # the whole app, its middleware included
    await app(_turn_scope(websocket.scope, len(raw), memory), turn.receive, turn.send)
    previous = body.get("previous_response_id")
    if turn.failed and isinstance(previous, str):
        memory.forget(previous)


def _create_body(message: str | bytes) -> dict[str, Any]:
    """A `response.create` message as the HTTP door's body: streamed, its type taken off."""
    try:
        event = json.loads(message)
    except ValueError:
        raise ProxyError(400, "a message must be a JSON object", code="invalid_json") from None
    if not isinstance(event, dict) or event.get("type") != CREATE:
        kind = event.get("type") if isinstance(event, dict) else None
        raise ProxyError(
            400,
            f"unsupported message type {kind!r}: a turn is a {CREATE!r} message",
            param="type",
            code="invalid_value",
        )
    body = {key: value for key, value in event.items() if key not in TRANSPORT_FIELDS}
    return {**body, "stream": True}


def _turn_scope(scope: Scope, length: int, memory: ConnectionMemory) -> Scope:
    """The HTTP request a turn is: the handshake's path, client and headers, a JSON body of
    `length` bytes, and the connection's memory."""
    headers = [
        (name, value)
        for name, value in scope["headers"]
        if name not in HANDSHAKE_HEADERS
        and name not in BODY_HEADERS
        and not name.startswith(WEBSOCKET_HEADERS)
    ]
    headers += [(b"content-type", b"application/json"), (b"content-length", b"%d" % length)]
    return {
        "type": "http",
        "asgi": scope.get("asgi", {}),
        "http_version": scope.get("http_version", "1.1"),
        "method": "POST",
        "scheme": "https" if scope.get("scheme") == "wss" else "http",
        "server": scope.get("server"),
        "client": scope.get("client"),
        "root_path": scope.get("root_path", ""),
        "path": PATH,
        "raw_path": PATH.encode(),
        "query_string": b"",
        "headers": headers,
        "state": dict(scope.get("state", {})),
        SCOPE_KEY: memory,
    }


class _Turn:
    """The ASGI channels of one turn's HTTP request: its body in, its answer out as frames."""

    def __init__(self, websocket: WebSocket, body: bytes, closed: asyncio.Event) -> None:
        self._websocket = websocket
        self._body: bytes | None = body
        self._closed = closed
        self._status = 0
        self._pending: list[bytes] = []  # the stream's bytes since the last whole event
        self._refused = False  # answered with an error status, not an event stream
        self.failed = False  # refused, or its response failed

    async def receive(self) -> Message:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self._closed.wait()  # the engine watches for this, to abandon the upstream
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self._status = message["status"]
            self._refused = self.failed = self._status != 200
        elif message["type"] == "http.response.body":
            await self._body_sent(message.get("body", b""), message.get("more_body", False))

    async def _body_sent(self, body: bytes, more: bool) -> None:
        """Each whole event sent as a frame; an error answer, once whole, as one."""
        tail = self._pending[-1][-1:] if self._pending else b""
        if self._refused:
            self._pending.append(body)
            if not more:
                await self._send_error(b"".join(self._pending))
            return
        if EVENT_END not in tail + body:
            self._pending.append(body)  # joined once, when its event ends: linear
            return
        *events, rest = (b"".join(self._pending) + body).split(EVENT_END)
        self._pending = [rest] if rest else []
        for event in events:
            await self._send_event(event)

    async def _send_event(self, event: bytes) -> None:
        kind, data = b"", []
        for line in event.split(b"\n"):
            if line.startswith(EVENT):
                kind = line[len(EVENT) :].strip()
            elif line.startswith(DATA):
                data.append(line[len(DATA) :].removeprefix(b" "))
        if not data or kind == ERROR:  # a keep-alive comment; the error response.failed holds
            return
        self.failed = self.failed or kind == FAILED
        await _send(self._websocket, b"\n".join(data).decode(), self._closed)

    async def _send_error(self, body: bytes) -> None:
        try:
            error = json.loads(body)["error"]
        except (ValueError, KeyError, TypeError):
            error = {"message": body.decode(errors="replace") or "the request failed"}
        await _send(self._websocket, _error_frame(self._status, error), self._closed)


async def _send(websocket: WebSocket, frame: str, closed: asyncio.Event) -> None:
    """A frame to the client; once it is gone, nothing (as an HTTP client that left is sent
    nothing more), and `closed` tells the turn to stop."""
    if closed.is_set():
        return
    try:
        await websocket.send_text(frame)
    except (WebSocketDisconnect, RuntimeError, OSError):
        closed.set()


def _error_frame(status: int, error: dict[str, Any]) -> str:
    """OpenAI's WebSocket error: the HTTP status, and the error with a string `code` (one
    the HTTP door gave none is named by its type)."""
    code = error.get("code") or error.get("type") or "error"
    frame = {"type": "error", "status": status, "error": {**error, "code": code}}
    return json_bytes(frame).decode()

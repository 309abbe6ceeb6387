"""Serve ASGI apps for real on loopback, and talk to the served proxy as OpenAI clients do:
through the official SDK, or over raw HTTP, reading replies while checking the wire format.

>>> with serve(app) as url:  # "http://127.0.0.1:PORT", serving before this line returns
...     httpx.get(url + "/healthz")
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import uvicorn
from starlette.types import ASGIApp
from waits import HUNG_AFTER_SECONDS

# A server thread stuck past its stop is left behind (a daemon), not waited for.
THREAD_JOIN_SECONDS = 10
DONE = "[DONE]"
# Every client the tests open shares one TLS context: each new httpx client would otherwise
# load the CA bundle again (about 25 ms of CPU), though the tests speak plain HTTP.
CLIENT_TLS = ssl.create_default_context()

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a time zone.",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
    },
}
# A free-form tool as chat completions declares it (Codex's apply_patch, shortened).
PATCH_GRAMMAR = 'start: "*** Begin Patch" LF hunk+ "*** End Patch" LF?'
PATCH_TOOL = {
    "type": "custom",
    "custom": {
        "name": "apply_patch",
        "description": "Edit files with a patch. This is a FREEFORM tool.",
        "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": PATCH_GRAMMAR}},
    },
}
MODEL = "test-model"
QUESTION = {"role": "user", "content": "What is the weather in Paris?"}


def chat_body(*tools: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A chat request asking about the weather, declaring `tools`; `fields` added last."""
    body: dict[str, Any] = {"model": MODEL, "messages": [QUESTION]}
    if tools:
        body["tools"] = list(tools)
    return {**body, **fields}


def http_client(**options: Any) -> httpx.Client:
    """An httpx client as the tests open them (`options`: more `httpx.Client` arguments): the
    shared TLS context, and no timeout that a slow machine could reach (see `waits`)."""
    return httpx.Client(verify=CLIENT_TLS, timeout=HUNG_AFTER_SECONDS, **options)


@contextmanager
def serve(app: ASGIApp, sock: socket.socket | None = None, **options: Any) -> Iterator[str]:
    """Run `app` under uvicorn on its own event loop in a daemon thread, on `sock` (a socket
    bound to a loopback address) or one bound here; the URL is returned once the app's
    lifespan startup has run.

    uvicorn's own `run` polls for the exit flag every 0.1 s and then waits for lingering
    keep-alive connections and a fixed 0.1 s more: for a test that is most of its time.
    Here the loop wakes on an event, idle connections are closed, the app's lifespan shutdown
    runs, and whatever is still in flight is cancelled as the loop closes.
    `options`: more `uvicorn.Config` arguments."""
    if sock is None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
    sock.listen()
    _host, port = sock.getsockname()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", **options))
    runner = asyncio.Runner()
    loop = runner.get_loop()
    stop = asyncio.Event()
    started = threading.Event()

    def run() -> None:
        try:
            runner.run(_serve_until(server, sock, stop, started))
        finally:
            started.set()  # a failed startup must not leave the caller waiting
            runner.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        started.wait()  # set once started, or once the attempt failed
        assert server.started, "the server did not start; see the error above"
        yield f"http://127.0.0.1:{port}"
    finally:
        with suppress(RuntimeError):  # the loop already ended
            loop.call_soon_threadsafe(stop.set)
        thread.join(THREAD_JOIN_SECONDS)
        sock.close()


async def _serve_until(
    server: uvicorn.Server, sock: socket.socket, stop: asyncio.Event, started: threading.Event
) -> None:
    server.config.load()
    server.lifespan = server.config.lifespan_class(server.config)
    await server.startup(sockets=[sock])
    started.set()
    await stop.wait()
    for listener in server.servers:
        listener.close()
    for connection in list(server.server_state.connections):
        connection.shutdown()  # closes it if idle; else it closes after its response
    await server.lifespan.shutdown()


# A call's type -> the field of its payload that carries its arguments.
CALL_TEXT = {"function": "arguments", "custom": "input"}


@dataclass
class Call:
    id: str
    name: str
    # The JSON string, as sent (grown fragment by fragment while streaming); a custom call's
    # input text.
    arguments: str
    type: str = "function"

    @property
    def input(self) -> Any:
        return json.loads(self.arguments) if self.type == "function" else self.arguments


@dataclass(frozen=True)
class Completion:
    """A chat completion as the client received it, streamed or not."""

    id: str
    created: int
    model: str
    content: str  # "" when there was none
    reasoning: str
    tool_calls: list[Call]
    finish_reason: str
    usage: dict[str, Any] | None

    @property
    def calls(self) -> list[tuple[str, Any]]:
        """Each call's name and parsed arguments, in order."""
        return [(call.name, call.input) for call in self.tool_calls]


@dataclass(frozen=True)
class Proxy:
    """The served proxy and two ways to call it."""

    url: str
    client: openai.OpenAI  # the official SDK, base_url = url + "/v1"
    http: httpx.Client  # raw HTTP, base_url = url

    def chat(self, body: dict[str, Any]) -> Completion:
        """POST a chat completion; return it after checking OpenAI's wire format."""
        if body.get("stream"):
            return completion_from_events(self.events(body))
        response = self.http.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
        return completion_from_json(response.json())

    def events(self, body: dict[str, Any], path: str = "/v1/chat/completions") -> list[Any]:
        """Every `data:` payload of a 200 event stream, decoded; "[DONE]" kept as is."""
        with self.http.stream("POST", path, json=body) as response:
            assert response.status_code == 200, response.read()
            assert response.headers["content-type"].startswith("text/event-stream")
            return list(read_events(response.iter_lines()))


StartProxy = Callable[..., Proxy]  # the `start_proxy` fixture: settings fields -> a served proxy


def read_events(lines: Iterable[str]) -> Iterator[Any]:
    """Server-sent events' data, per the SSE rules: `data:` lines up to a blank line."""
    data: list[str] = []
    for line in lines:
        if line.startswith("data:"):
            data.append(line.removeprefix("data:").removeprefix(" "))
        elif not line and data:
            payload = "\n".join(data)
            data.clear()
            yield payload if payload == DONE else json.loads(payload)


def completion_from_events(events: list[Any]) -> Completion:
    """Assemble a streamed completion, asserting every rule clients rely on."""
    assert events[-1] == DONE, "the stream ends with data: [DONE]"
    chunks: list[dict[str, Any]] = events[:-1]
    assert all(isinstance(chunk, dict) and "error" not in chunk for chunk in chunks), chunks
    usage = None
    if chunks[-1]["choices"] == []:
        usage = chunks.pop()["usage"]
    first = chunks[0]
    assert first["choices"][0]["delta"].get("role") == "assistant"
    content, reasoning, finish = "", "", None
    calls: list[Call] = []
    # Each call's fragments, joined once at the end: adding each to the call's text would copy
    # the text so far at every fragment (a 50 MB call streams in about 800 of them).
    pieces: list[list[str]] = []
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        assert (chunk["id"], chunk["model"]) == (first["id"], first["model"])
        assert isinstance(chunk["created"], int)
        assert finish is None, "the finish_reason chunk is the last choice chunk"
        [choice] = chunk["choices"]
        assert choice["index"] == 0
        delta, finish = choice["delta"], choice["finish_reason"]
        content += delta.get("content") or ""
        reasoning += delta.get("reasoning_content") or ""
        assert delta.get("tool_calls") != [], "never an empty tool_calls list"
        assert not (finish and delta.get("tool_calls")), "finish_reason comes in its own chunk"
        for fragment in delta.get("tool_calls") or ():
            _add_fragment(calls, pieces, fragment)
    for call, texts in zip(calls, pieces, strict=True):
        call.arguments = "".join(texts)
    assert finish is not None
    return _checked(
        Completion(
            id=first["id"],
            created=first["created"],
            model=first["model"],
            content=content,
            reasoning=reasoning,
            tool_calls=calls,
            finish_reason=finish,
            usage=usage,
        )
    )


def _add_fragment(calls: list[Call], pieces: list[list[str]], fragment: dict[str, Any]) -> None:
    if fragment["index"] == len(calls):  # a new call opens with its id, type and name
        kind = fragment["type"]
        payload = fragment[kind]
        assert fragment["id"] and kind in CALL_TEXT and payload["name"]
        assert payload[CALL_TEXT[kind]] == ""
        calls.append(Call(fragment["id"], payload["name"], "", kind))
        pieces.append([])
    else:  # later fragments carry arguments (or a custom call's input) only
        assert fragment["index"] < len(calls), "call indexes are dense from 0"
        kind = calls[fragment["index"]].type
        payload = fragment[kind]
        assert fragment.keys() == {"index", kind} and payload.keys() == {CALL_TEXT[kind]}
        assert isinstance(payload[CALL_TEXT[kind]], str)
        pieces[fragment["index"]].append(payload[CALL_TEXT[kind]])


def completion_from_json(body: dict[str, Any]) -> Completion:
    """A non-streamed completion, checked like a streamed one."""
    assert body["object"] == "chat.completion"
    [choice] = body["choices"]
    message = choice["message"]
    assert message["role"] == "assistant"
    assert message.get("tool_calls") != [], "no tool_calls key rather than an empty list"
    calls = []
    for raw in message.get("tool_calls") or ():
        kind = raw["type"]
        payload = raw[kind]
        assert kind in CALL_TEXT and isinstance(payload[CALL_TEXT[kind]], str)
        calls.append(Call(raw["id"], payload["name"], payload[CALL_TEXT[kind]], kind))
    if calls and not message["content"]:
        assert message["content"] is None, "content is null when the reply is only calls"
    return _checked(
        Completion(
            id=body["id"],
            created=body["created"],
            model=body["model"],
            content=message["content"] or "",
            reasoning=message.get("reasoning_content") or "",
            tool_calls=calls,
            finish_reason=choice["finish_reason"],
            usage=body.get("usage"),
        )
    )


def _checked(completion: Completion) -> Completion:
    """Rules shared by both forms: unique ids, JSON arguments, the fitting finish_reason."""
    calls = completion.tool_calls
    assert len({call.id for call in calls}) == len(calls), "call ids are unique"
    if completion.finish_reason != "length":  # a truncated call's arguments may not parse
        assert (completion.finish_reason == "tool_calls") == bool(calls)
        for call in calls:
            if call.type == "function":
                assert _is_json_object(call.arguments), f"arguments are a JSON object: {call}"
    return completion


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False

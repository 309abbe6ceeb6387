"""Every way an upstream stream can end gives its connection back to the shared httpx pool.

A connection the pool still counts as busy after its request is over is lost for good: 100 of
them and the proxy stops answering (seen under CPU contention, where a timer or a client's
departure lands at awaits a quiet machine never lets it reach). httpcore closes a response in
code shielded by anyio cancel scopes, which a native asyncio cancellation (`task.cancel()`,
`asyncio.timeout`) ignores: one landing there leaves the connection checked out.

So nothing here waits on time. The proxy app runs in-process in this test's event loop, in
front of a raw HTTP/1.1 upstream on loopback in the same loop; `SteppedLoop` counts every
suspension of every task and runs an action at exactly the k-th: the client leaves, or the
clock jumps (every timer it passes fires at that moment, as on a starved loop). Sweeping k
over a whole request puts that event at every await the request goes through. After each
request the pool must hold no busy connection and no request.
"""

from __future__ import annotations

import asyncio
import heapq
import json
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from servers import WEATHER_TOOL, chat_body
from upstream_server import WEATHER_CALL, Reply, event_stream

from service.app import create_app
from service.exchange.stream import AFTER_DONE_READ_SECONDS
from service.settings import Settings

# Loop turns, not seconds: how long a finished request may take to let go of everything
# (its upstream close, the producer's cleanup, the upstream handler seeing the close).
SETTLE_TURNS = 500
# A run whose counted tasks have all been waiting this many turns is idle (held upstream,
# client still there): the sweep's action fires then, if it has not yet.
IDLE_TURNS = 20
MAX_SWEEP = 3000  # a bound on k, so that a broken harness fails instead of spinning
TOTAL_TIMEOUT = 30.0  # below the read timeout (300 s): each read is on the deadline's timer
# Clock jumps: just past the after-done read's limit, and past every deadline of a stream
# (the total timeout, the shielded close's 5 s, the keep-alive ping) but not past the read
# timeout's 300 s, which would only turn the same ending into another error.
PAST_AFTER_DONE = 2 * AFTER_DONE_READ_SECONDS
PAST_DEADLINE = 2 * TOTAL_TIMEOUT


class SteppedLoop(asyncio.SelectorEventLoop):  # type: ignore[misc,valid-type]
    """An event loop that counts task suspensions and whose clock can jump.

    Every task's coroutine is wrapped (a task factory) so that each suspension is counted;
    `at(k, action)` calls `action` at the k-th suspension from now, before the suspended
    task can run again, so a cancellation it causes lands at exactly that await. `jump(s)` moves
    `time()` (what asyncio's and anyio's timers read) `s` seconds on and runs at once every
    timer now due, as the loop would on its next turn if that turn came `s` seconds late.
    """

    def __init__(self) -> None:
        super().__init__()
        self._offset = 0.0
        self.suspensions = 0
        self._armed: tuple[int, Callable[[], None]] | None = None
        self.fired_when_idle = False
        self.set_task_factory(self._counted_task)

    def time(self) -> float:
        return super().time() + self._offset

    def at(self, k: int | None, action: Callable[[], None]) -> None:
        """`action` at the k-th suspension from now (None: only once the run is idle)."""
        self._armed = (-1 if k is None else self.suspensions + k, action)
        self.fired_when_idle = False

    def fire_now(self) -> bool:
        """Run the armed action now (the run went idle first); False if none was armed."""
        if self._armed is None:
            return False
        _k, action = self._armed
        self._armed = None
        self.fired_when_idle = True
        action()
        return True

    def disarm(self) -> None:
        self._armed = None

    @property
    def armed(self) -> bool:
        return self._armed is not None

    def jump(self, seconds: float) -> None:
        self._offset += seconds
        now = self.time()
        due = []
        # The loop's own timer heap (asyncio has no public way to run due timers early).
        while self._scheduled and self._scheduled[0].when() <= now:
            handle = heapq.heappop(self._scheduled)
            handle._scheduled = False
            if handle.cancelled():
                self._timer_cancelled_count -= 1
            else:
                due.append(handle)
        for handle in due:
            handle._run()

    def _counted_task(
        self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kwargs: Any
    ) -> asyncio.Task[Any]:
        return asyncio.Task(self._count(coro), loop=loop, **kwargs)

    async def _count(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return await _Counted(self, coro)

    def suspended(self) -> None:
        self.suspensions += 1
        if self._armed is not None and self.suspensions == self._armed[0]:
            _k, action = self._armed
            self._armed = None
            self.call_soon(action)  # queued before the task's own wake-up


class _Counted:
    """Drives a coroutine, telling the loop each time it suspends."""

    def __init__(self, loop: SteppedLoop, coro: Coroutine[Any, Any, Any]) -> None:
        self._loop = loop
        self._coro = coro

    def __await__(self) -> Generator[Any, Any, Any]:
        inner = self._coro.__await__()
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                yielded = inner.send(value) if error is None else inner.throw(error)
            except StopIteration as stop:
                return stop.value
            if not getattr(asyncio.current_task(), "uncounted", False):
                self._loop.suspended()
            try:
                value, error = (yield yielded), None
            except GeneratorExit:
                inner.close()
                raise
            except BaseException as exc:  # a cancellation thrown in: passed on as it came
                value, error = None, exc


# The upstream: raw HTTP/1.1, so each ending is exact.


def _chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


END_OF_BODY = b"0\r\n\r\n"
SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)
ERROR_EVENT = b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'


@dataclass
class Upstream:
    """Answers every request the way `ending` says:

    done         the events, [DONE] and the end of the body in one write
    done_later   [DONE], then the end of the body one loop turn later
    trickle      each event in a write of its own, a loop turn apart, then as `done`
    held_after   [DONE], then the body held open until the proxy closes the connection
    cut          two events, then the connection closed mid-body
    error_event  two events, then an `error` event, then the end of the body
    status_500   a 500 with an OpenAI error body
    held_head    nothing until the proxy closes the connection (no status line)
    held_mid     two events, then held until the proxy closes the connection
    whole_json   a 200 JSON completion for a streamed request (an upstream ignoring stream)

    A request that does not stream gets the JSON completion whatever the ending (but
    `held_head` and `status_500`).
    """

    ending: str = "done"
    port: int = 0
    requests: int = 0
    _server: asyncio.Server | None = None
    _handlers: dict[asyncio.Task[None], asyncio.StreamWriter] = field(default_factory=dict)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        """Every connection dropped and its handler ended (not cancelled: Python 3.11 logs a
        cancelled connection handler as an error)."""
        if self._server is not None:
            self._server.close()
        for writer in self._handlers.values():
            writer.transport.abort()
        await asyncio.gather(*self._handlers)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers[handler] = writer
        try:
            while await self._answer(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            del self._handlers[handler]

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """One request answered; False once the connection is to be closed."""
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        asked = json.loads(await reader.readexactly(length))
        self.requests += 1
        events = list(event_stream(Reply("Let me check.", WEATHER_CALL["json-mix"]), asked))
        *answer, done = events
        ending = self.ending
        if ending == "held_head":
            await reader.read()  # until the proxy closes its end
            return False
        if ending == "status_500":
            body = b'{"error": {"message": "boom", "type": "server_error"}}'
            writer.write(
                b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            return True
        if ending == "whole_json" or not asked.get("stream"):
            body = json.dumps(
                {
                    "id": "chatcmpl-upstream",
                    "object": "chat.completion",
                    "created": 0,
                    "model": asked["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": WEATHER_CALL["json-mix"]},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            ).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                % (len(body), body)
            )
            await writer.drain()
            return True
        writer.write(SSE_HEAD)
        if ending in ("cut", "error_event", "held_mid"):
            writer.write(b"".join(_chunked(event) for event in answer[:2]))
            if ending == "error_event":
                writer.write(_chunked(ERROR_EVENT) + END_OF_BODY)
                await writer.drain()
                return True
            await writer.drain()
            if ending == "cut":
                writer.transport.abort()
                return False
            await reader.read()
            return False
        if ending == "trickle":
            for event in (*answer, done):
                writer.write(_chunked(event))
                await writer.drain()
                await asyncio.sleep(0)
            ending = "done"
        else:
            writer.write(b"".join(_chunked(event) for event in (*answer, done)))
        if ending == "done":
            writer.write(END_OF_BODY)
            await writer.drain()
            return True
        await writer.drain()
        if ending == "done_later":
            await asyncio.sleep(0)
            writer.write(END_OF_BODY)
            await writer.drain()
            return True
        assert ending == "held_after", ending
        await reader.read()
        return False


# The client: the ASGI channel of one request, leaving when the test says.


@dataclass
class Client:
    """One request's ASGI side. `leaves` decides, at each message the proxy sends, whether
    the client goes now: `receive` then reports `http.disconnect` (as uvicorn does once the
    socket closes) and later sends are dropped (as uvicorn drops them)."""

    payload: bytes
    leaves: Callable[[list[bytes]], bool] = lambda body: False
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    body: list[bytes] = field(default_factory=list)
    status: int | None = None
    _asked: bool = False

    def leave(self) -> None:
        self.gone.set()

    async def receive(self) -> dict[str, Any]:
        if not self._asked:
            self._asked = True
            return {"type": "http.request", "body": self.payload, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if self.gone.is_set():
            return
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message.get("body"):
            self.body.append(message["body"])
        if self.leaves(self.body):
            self.leave()


def leaves_while_waiting(body: list[bytes]) -> bool:
    """A marker: the client leaves once the proxy is idle, waiting on the upstream (before
    the first byte: a held upstream sends the proxy nothing to send)."""
    return False


def leaves_at_first_byte(body: list[bytes]) -> bool:
    return len(body) >= 1


def leaves_after_first_byte(body: list[bytes]) -> bool:
    return len(body) >= 2


def leaves_after_done(body: list[bytes]) -> bool:
    return b"[DONE]" in b"".join(body)


def _scope(path: str, payload: bytes) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"proxy.test"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }


TOOLS_STREAM = ("/v1/chat/completions", chat_body(WEATHER_TOOL, stream=True))
PLAIN_STREAM = ("/v1/chat/completions", chat_body(stream=True))  # relayed byte for byte
RESPONSES_STREAM = (
    "/v1/responses",
    {
        "model": "test-model",
        "input": "Weather in Paris?",
        "tools": [{"type": "function", **WEATHER_TOOL["function"]}],
        "stream": True,
    },
)
TOOLS_WHOLE = ("/v1/chat/completions", chat_body(WEATHER_TOOL))
REQUESTS = {
    "tools-stream": TOOLS_STREAM,
    "plain-stream": PLAIN_STREAM,
    "responses-stream": RESPONSES_STREAM,
    "tools-whole": TOOLS_WHOLE,
}


def checked_out(client: httpx.AsyncClient) -> list[str]:
    """What the proxy's pool still holds for a request: busy connections (neither idle nor
    closed) and requests not yet released."""
    pool = client._transport._pool  # type: ignore[attr-defined]
    busy = [repr(c) for c in pool.connections if not c.is_idle() and not c.is_closed()]
    return busy + [f"request {r.request.url}" for r in pool._requests]


class Bench:
    """The proxy app and the upstream, both in this loop, and one request at a time."""

    def __init__(self, loop: SteppedLoop, upstream: Upstream) -> None:
        self.loop = loop
        self.upstream = upstream
        settings = Settings(
            upstream_base_url=f"http://127.0.0.1:{upstream.port}/v1",
            upstream_total_timeout=TOTAL_TIMEOUT,
            access_log=False,
        )
        self.app = create_app(settings)

    @property
    def client(self) -> httpx.AsyncClient:
        return self.app.state.context.upstream.client  # type: ignore[no-any-return]

    async def ask(
        self,
        request: str,
        *,
        leaves: Callable[[list[bytes]], bool] = lambda body: False,
        arm: Callable[[Client], None] | None = None,
    ) -> Client:
        """One request; it returns once the response is over and the proxy has settled.
        Each request opens a fresh upstream connection, so the connect is covered too.
        `arm(client)` is called as the request starts (to arm the loop's action)."""
        path, body = REQUESTS[request]
        payload = json.dumps(body).encode()
        pool = self.client._transport._pool  # type: ignore[attr-defined]
        for connection in pool.connections:
            if connection.is_idle():
                await connection.aclose()
        client = Client(payload, leaves)
        if arm is not None:
            arm(client)
        idle = asyncio.create_task(self._fire_when_idle())
        idle.uncounted = True  # type: ignore[attr-defined]
        try:
            await self.app(_scope(path, payload), client.receive, client.send)
        finally:
            idle.cancel()
            self.loop.disarm()
            client.leave()  # a connection is closed after its response; so is this one
        await self._settle()
        return client

    async def _fire_when_idle(self) -> None:
        """Fires the armed action once no counted task has moved for IDLE_TURNS turns."""
        still = 0
        seen = self.loop.suspensions
        while self.loop.armed:
            await asyncio.sleep(0)
            still = still + 1 if self.loop.suspensions == seen else 0
            seen = self.loop.suspensions
            if still >= IDLE_TURNS:
                self.loop.fire_now()

    async def _settle(self) -> None:
        """A bounded number of turns for the pool to empty (a count, not a time)."""
        for _ in range(SETTLE_TURNS):
            if not checked_out(self.client):
                return
            await asyncio.sleep(0)


def run(test: Callable[[Bench, Upstream], Coroutine[Any, Any, None]], ending: str) -> None:
    """Run `test` in a fresh SteppedLoop with the app's lifespan open."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, SteppedLoop)
        upstream = Upstream(ending)
        await upstream.start()
        try:
            bench = Bench(loop, upstream)
            async with bench.app.router.lifespan_context(bench.app):
                await test(bench, upstream)
        finally:
            await upstream.close()

    with asyncio.Runner(loop_factory=SteppedLoop) as runner:
        runner.run(main())


async def sweep(bench: Bench, request: str, action: str) -> list[tuple[int, list[str]]]:
    """The request made again and again, `action` happening at its 1st, 2nd, ... suspension
    (or once it is idle), until a run ends before its k-th; every k that left the pool with
    something checked out, and what."""
    leaks = []
    for k in range(1, MAX_SWEEP):
        fired = []

        def arm(client: Client, k: int = k, fired: list[bool] = fired) -> None:
            def act() -> None:
                fired.append(True)
                if action == "leave":
                    client.leave()
                else:
                    bench.loop.jump(PAST_AFTER_DONE if action == "after-done" else PAST_DEADLINE)

            bench.loop.at(k, act)

        await bench.ask(request, arm=arm)
        if not fired:  # the request ended before its k-th suspension: all were swept
            return leaks
        if held := checked_out(bench.client):
            leaks.append((k, held))
            await _drop(bench)
        if bench.loop.fired_when_idle:  # every later k would fire at the same idle point
            return leaks
    raise AssertionError(f"no run of {request} ended before its {MAX_SWEEP}th suspension")


async def _drop(bench: Bench) -> None:
    """Forget what a leaking run left behind, so that the next run starts clean."""
    pool = bench.client._transport._pool  # type: ignore[attr-defined]
    for connection in pool.connections:
        await connection.aclose()
    pool._connections.clear()
    pool._requests.clear()


# The endings, each once, no injected event: the pool is empty after each.


def reads_all(body: list[bytes]) -> bool:
    return False


# (upstream ending, request, client, the status the client sees: None if it left first,
# whether the body it read ends with [DONE])
ENDINGS = [
    ("done", "tools-stream", reads_all, 200, True),
    ("trickle", "tools-stream", reads_all, 200, True),
    ("done_later", "tools-stream", reads_all, 200, True),
    ("held_after", "tools-stream", reads_all, 200, True),  # the after-done read times out
    ("cut", "tools-stream", reads_all, 200, False),  # an error event, no [DONE]
    ("error_event", "tools-stream", reads_all, 200, False),
    ("status_500", "tools-stream", reads_all, 500, False),
    ("whole_json", "tools-stream", reads_all, 200, True),
    ("held_head", "tools-stream", leaves_while_waiting, None, False),
    ("held_mid", "tools-stream", leaves_at_first_byte, 200, False),
    ("held_mid", "tools-stream", leaves_after_first_byte, 200, False),
    ("done", "tools-stream", leaves_after_done, 200, True),
    ("held_after", "tools-stream", leaves_after_done, 200, True),
    ("done", "plain-stream", reads_all, 200, True),
    ("cut", "plain-stream", reads_all, 200, False),
    ("held_mid", "plain-stream", leaves_after_first_byte, 200, False),
    ("done", "responses-stream", reads_all, 200, False),  # Responses events end otherwise
    ("held_mid", "responses-stream", leaves_after_first_byte, 200, False),
    ("done", "tools-whole", reads_all, 200, False),
]


@pytest.mark.parametrize(
    ("ending", "request_kind", "leaves", "status", "done"),
    ENDINGS,
    ids=[f"{e}-{r}-{leaves.__name__}" for e, r, leaves, _s, _d in ENDINGS],
)
def test_each_ending_releases_its_connection(
    ending: str,
    request_kind: str,
    leaves: Callable[[list[bytes]], bool],
    status: int | None,
    done: bool,
) -> None:
    async def test(bench: Bench, upstream: Upstream) -> None:
        arm = None
        if leaves is leaves_while_waiting:

            def arm(client: Client) -> None:
                bench.loop.at(None, client.leave)

        client = await bench.ask(request_kind, leaves=leaves, arm=arm)
        assert upstream.requests == 1
        assert (client.status, b"".join(client.body).endswith(b"data: [DONE]\n\n")) == (
            status,
            done,
        )
        assert checked_out(bench.client) == []

    run(test, ending)


# The sweeps: an event at every await of a request.

SWEEPS = [
    # The clock jumps past the after-done read's limit at each await.
    ("done", "tools-stream", "after-done"),
    ("done_later", "tools-stream", "after-done"),
    ("trickle", "tools-stream", "after-done"),
    ("held_after", "tools-stream", "after-done"),
    # The clock jumps past the total deadline at each await.
    ("done", "tools-stream", "deadline"),
    ("trickle", "tools-stream", "deadline"),
    ("done", "plain-stream", "deadline"),
    ("trickle", "plain-stream", "deadline"),
    ("done", "responses-stream", "deadline"),
    ("done", "tools-whole", "deadline"),
    # The client leaves at each await.
    ("done", "tools-stream", "leave"),
    ("done_later", "tools-stream", "leave"),
    ("trickle", "tools-stream", "leave"),
    ("held_after", "tools-stream", "leave"),
    ("held_mid", "tools-stream", "leave"),
    ("held_head", "tools-stream", "leave"),
    ("done", "plain-stream", "leave"),
    ("trickle", "plain-stream", "leave"),
    ("done", "responses-stream", "leave"),
    ("trickle", "responses-stream", "leave"),
    ("done", "tools-whole", "leave"),
]


@pytest.mark.parametrize(("ending", "request_kind", "action"), SWEEPS)
def test_an_event_at_any_await_leaves_nothing_checked_out(
    ending: str, request_kind: str, action: str
) -> None:
    async def test(bench: Bench, upstream: Upstream) -> None:
        leaks = await sweep(bench, request_kind, action)
        assert leaks == [], f"{len(leaks)} leaking awaits, first: {leaks[:3]}"

    run(test, ending)

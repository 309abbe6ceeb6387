"""The proxy's streaming answer driven in-process: the scripted upstream's SSE events for a
`Reply` fed to the engine's streaming function, its events written by the chat writer, the
client's events read back and checked like those of a served proxy. No server, no socket:
sweeps over many chunkings cost microseconds per case, while the served proxy's tests cover
the HTTP around it.

>>> completion = stream_in_process("json-mix", Reply("Sure.", call[:9], call[9:]), WEATHER_TOOL)
>>> completion.calls
[('get_weather', {'city': 'Paris'})]
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from servers import MODEL, Completion, chat_body, completion_from_events, read_events
from upstream_server import Reply, event_stream

from protocols import get_protocol
from service.chat.writer import ChatWriter
from service.exchange import written_stream
from service.exchange.parsing import OutputParsing
from service.exchange.request import parse_chat_request
from service.exchange.stream import stream_events
from service.observability.metrics import ProxyMetrics, UpstreamFailure
from service.observability.observer import CompletionObserver
from service.observability.request_record import RequestRecord
from service.settings import Settings
from service.wire.sse import LineSplitter, data_payloads

CHAT_PATH = "/v1/chat/completions"


class ScriptedStream:
    """Stands in for `service.upstream.client.UpstreamStream`: the lines of the events the scripted
    upstream would send for `reply`, and a record of what the service did with it."""

    def __init__(self, reply: Reply, asked: dict[str, Any]) -> None:
        self.headers = {"content-type": "text/event-stream"}
        self._body = b"".join(event_stream(reply, asked))
        self.failures: list[UpstreamFailure] = []
        self.closed = False

    async def data_payloads(self) -> AsyncIterator[str]:
        splitter = LineSplitter(max_line_bytes=len(self._body))
        for payload in data_payloads([*splitter.feed(self._body), *splitter.finish()]):
            yield payload

    def failed(self, kind: UpstreamFailure) -> None:
        self.failures.append(kind)

    async def aclose(self) -> None:
        self.closed = True


def stream_in_process(
    protocol: str, reply: Reply, *tools: dict[str, Any], **settings: Any
) -> Completion:
    """The completion a streaming client gets when the upstream answers with `reply`, with
    the proxy speaking `protocol`; `settings` are `Settings` fields (defaults otherwise)."""
    body = chat_body(*tools, stream=True)
    events = asyncio.run(_events(protocol, reply, body, Settings.model_construct(**settings)))
    return completion_from_events(list(read_events(_lines(events))))


async def _events(
    protocol: str, reply: Reply, body: dict[str, Any], settings: Settings
) -> list[bytes]:
    chat = parse_chat_request(json.dumps(body).encode())
    record = RequestRecord(request_id="req-test", method="POST", path=CHAT_PATH, route="chat")
    parsing = OutputParsing.configured(
        settings.parser_options(),
        get_protocol(protocol),
        chat.tools,
        think_as_reasoning=settings.think_as_reasoning,
        single_call=chat.single_call,
        observer=CompletionObserver(protocol, ProxyMetrics(), record),
    )
    stream = ScriptedStream(reply, body)
    writer = ChatWriter(stream=True, fallback_model=MODEL, include_usage=chat.include_usage)
    events = written_stream(writer, stream_events(stream, parsing, n=chat.n))
    sent = [event async for event in events]
    assert stream.closed, "the upstream stream is closed however the answer ends"
    return sent


def _lines(events: list[bytes]) -> Iterator[str]:
    for event in events:
        yield from event.decode().split("\n")

"""Events that are ready together written together. An upstream read often holds many SSE
lines (a fast model, a client reading slower than it); each becomes its own event, and
sending each alone costs a trip through the ASGI middleware and a socket write, more than
parsing and encoding the event. Here the events are handed over in a list: whatever the stream
produced while the previous write went out is joined into the next one. Nothing waits for
more: a lone event goes out as soon as it is produced, and so does the first.

Events already read need no wait to be produced, so the producer could go through a whole
upstream read before the consumer ran once: from a server that sends many tokens per read,
the first token would wait for hundreds behind it. The producer lets the consumer write
once a batch holds 1 event, then 4, 16... up to MAX_QUEUED_EVENTS: the first tokens go out
as soon as they are made, and a long answer read whole still leaves in a handful of
writes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import anyio

from .sse import EventStream

# How much larger each batch the producer lets out at once is than the one before.
BATCH_GROWTH = 4
# Events queued before the producer waits for the client: a client reading slower than the
# upstream writes holds the upstream back (as a direct stream would) past this many, or past
# this many bytes. The byte bound is for large events (a Responses stream's last events each
# carry the whole answer): each is written before the next is made, not all held at once.
MAX_QUEUED_EVENTS = 256
MAX_QUEUED_BYTES = 1024 * 1024


async def joined_when_ready(events: EventStream) -> EventStream:
    """`events`, those produced while the consumer was busy joined into one item. The first
    is taken in the consumer's own task, so the client's first byte waits for no task to
    start; the rest are produced in a task of their own, cancelled if the consumer stops
    early. An error of `events` is raised here after the events it produced before it."""
    try:
        first = await anext(events)
    except StopAsyncIteration:
        return
    made = _Made()
    # The producer reads the upstream through httpx: it is stopped through an anyio cancel
    # scope, never `producer.cancel()`, which could land inside httpx's shielded close (the
    # client leaving just as the body ends) and leave the connection checked out for good.
    stop = anyio.CancelScope()
    producer = None
    try:
        yield first
        producer = asyncio.create_task(_produce(events, made, stop))
        while True:
            batch, ended = await made.taken()
            if batch:
                yield b"".join(batch)
            made.sent()
            if ended:
                break
        await producer
    finally:
        if producer is None:
            await events.aclose()
        else:
            stop.cancel()
            await asyncio.wait([producer])  # its cleanup (closing the upstream) done first


class _Made:
    """The events the producer made that the consumer has not sent yet: a list and two
    wake-ups (the consumer's for events, the producer's for room), cheaper per event than
    a queue, which counts every item in and out."""

    __slots__ = ("_consumer", "_producer", "bytes", "ended", "events")

    def __init__(self) -> None:
        self.events: list[bytes] = []
        self.bytes = 0  # of the events made since the consumer last took them
        self.ended = False
        self._consumer: asyncio.Future[None] | None = None  # the consumer waits for events
        self._producer: asyncio.Future[None] | None = None  # the producer waits for room

    def put(self, event: bytes) -> None:
        self.events.append(event)
        self.bytes += len(event)
        self._wake_consumer()

    def end(self) -> None:
        self.ended = True
        self._wake_consumer()

    async def taken(self) -> tuple[list[bytes], bool]:
        """Every event made so far (once there is one, or the events ended), and whether
        they ended."""
        while not self.events and not self.ended:
            self._consumer = asyncio.get_running_loop().create_future()
            try:
                await self._consumer
            finally:
                self._consumer = None
        batch, self.events, self.bytes = self.events, [], 0
        return batch, self.ended

    def sent(self) -> None:
        """The consumer sent what it took: a producer waiting for room goes on once nothing
        it made is left unsent."""
        if not self.events and self._producer is not None and not self._producer.done():
            self._producer.set_result(None)

    async def room(self) -> None:
        """Until the consumer has sent every event made so far."""
        if self.events:
            self._producer = asyncio.get_running_loop().create_future()
            try:
                await self._producer
            finally:
                self._producer = None

    def _wake_consumer(self) -> None:
        if self._consumer is not None and not self._consumer.done():
            self._consumer.set_result(None)


async def _produce(events: AsyncIterator[bytes], made: _Made, stop: anyio.CancelScope) -> None:
    batch = 1  # events made before the consumer is let write them
    try:
        with stop:
            async for event in events:
                made.put(event)
                if len(made.events) >= MAX_QUEUED_EVENTS or made.bytes >= MAX_QUEUED_BYTES:
                    await made.room()
                elif len(made.events) >= batch:
                    batch = min(BATCH_GROWTH * batch, MAX_QUEUED_EVENTS)
                    await asyncio.sleep(0)  # the consumer, woken by the first event, runs
    finally:
        made.end()

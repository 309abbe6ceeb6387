"""Events that are ready together written together. An upstream read often holds many SSE
lines (a fast model, a client reading slower than it); each becomes its own event, and
sending each alone costs a trip through the ASGI middleware and a socket write, more than
parsing and encoding the event. Here the events go through a queue: whatever the stream
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
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()  # None: the events ended
    # The producer reads the upstream through httpx: it is stopped through an anyio cancel
    # scope, never `producer.cancel()`, which could land inside httpx's shielded close (the
    # client leaving just as the body ends) and leave the connection checked out for good.
    stop = anyio.CancelScope()
    producer = None
    try:
        yield first
        producer = asyncio.create_task(_produce(events, queue, stop))
        while True:
            batch = [await queue.get()]
            while not queue.empty():
                batch.append(queue.get_nowait())
            ended = batch[-1] is None
            if ended:
                batch.pop()
            if batch:
                yield b"".join(batch)  # type: ignore[arg-type]  # None only ever last
            for _ in range(len(batch) + ended):
                queue.task_done()
            if ended:
                break
        await producer
    finally:
        if producer is None:
            await events.aclose()
        else:
            stop.cancel()
            await asyncio.wait([producer])  # its cleanup (closing the upstream) done first


async def _produce(
    events: AsyncIterator[bytes], queue: asyncio.Queue[bytes | None], stop: anyio.CancelScope
) -> None:
    queued = 0  # bytes put since the queue was last seen empty
    batch = 1  # events queued before the consumer is let write them
    try:
        with stop:
            async for event in events:
                queue.put_nowait(event)
                queued += len(event)
                if queue.qsize() >= MAX_QUEUED_EVENTS or queued >= MAX_QUEUED_BYTES:
                    await queue.join()
                    queued = 0
                elif queue.qsize() >= batch:
                    batch = min(BATCH_GROWTH * batch, MAX_QUEUED_EVENTS)
                    await asyncio.sleep(0)  # the consumer, woken by the first put, runs
    finally:
        queue.put_nowait(None)

"""Joining the events that are ready together, without a server: plain asyncio."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from service.wire.event_batches import (
    BATCH_GROWTH,
    MAX_QUEUED_BYTES,
    MAX_QUEUED_EVENTS,
    joined_when_ready,
)


async def collected(events: AsyncGenerator[bytes, None]) -> list[bytes]:
    return [item async for item in joined_when_ready(events)]


def test_the_first_event_goes_out_alone_then_those_produced_together_together() -> None:
    async def scenario() -> list[bytes]:
        more = asyncio.Event()

        async def events() -> AsyncGenerator[bytes, None]:
            for event in (b"a\n\n", b"b\n\n", b"c\n\n", b"d\n\n", b"e\n\n", b"f\n\n", b"g\n\n"):
                yield event
            await more.wait()  # the upstream is silent: what was ready must go out now
            yield b"h\n\n"

        joined = joined_when_ready(events())
        ready = [await anext(joined) for _ in range(4)]
        more.set()
        return [*ready, *[item async for item in joined]]

    # One, one, then a batch of up to BATCH_GROWTH; what is left goes out when the source
    # waits.
    assert BATCH_GROWTH == 4
    assert asyncio.run(scenario()) == [
        b"a\n\n",
        b"b\n\n",
        b"c\n\nd\n\ne\n\nf\n\n",
        b"g\n\n",
        b"h\n\n",
    ]


def test_events_read_together_leave_in_batches_that_grow_from_one() -> None:
    """A server that sends a whole answer in one read: its first token goes out at once,
    not behind the hundreds read with it; the rest in writes BATCH_GROWTH times as large
    each time."""
    count = 3 * MAX_QUEUED_EVENTS

    async def events() -> AsyncGenerator[bytes, None]:
        for _ in range(count):
            yield b"e\n\n"  # never waits: all of it already read

    sizes = [batch.count(b"\n\n") for batch in asyncio.run(collected(events()))]

    growing = [1]
    while growing[-1] < MAX_QUEUED_EVENTS:
        growing.append(min(BATCH_GROWTH * growing[-1], MAX_QUEUED_EVENTS))
    assert sizes[: 2 + len(growing)] == [1, *growing, MAX_QUEUED_EVENTS]
    assert sum(sizes) == count
    assert max(sizes) == MAX_QUEUED_EVENTS


def test_an_error_is_raised_after_the_events_produced_before_it() -> None:
    received: list[bytes] = []

    async def scenario() -> None:
        async def events() -> AsyncGenerator[bytes, None]:
            yield b"a\n\n"
            raise ValueError("broken")

        async for item in joined_when_ready(events()):
            received.append(item)

    with pytest.raises(ValueError, match="broken"):
        asyncio.run(scenario())
    assert received == [b"a\n\n"]


def test_a_consumer_that_stops_early_has_the_producer_closed() -> None:
    closed = []

    async def scenario() -> bytes:
        async def events() -> AsyncGenerator[bytes, None]:
            try:
                yield b"a\n\n"
                await asyncio.Event().wait()  # an upstream that never sends again
            finally:
                closed.append(True)

        joined = joined_when_ready(events())
        first = await anext(joined)
        await joined.aclose()
        return first

    assert asyncio.run(scenario()) == b"a\n\n"
    assert closed == [True]


def test_a_slow_consumer_holds_the_producer_back() -> None:
    produced = received = lead = 0

    async def events() -> AsyncGenerator[bytes, None]:
        nonlocal produced, lead
        for _ in range(3 * MAX_QUEUED_EVENTS):
            produced += 1
            lead = max(lead, produced - received)
            yield b"e\n\n"

    async def scenario() -> list[bytes]:
        nonlocal received
        batches = []
        async for batch in joined_when_ready(events()):
            batches.append(batch)
            received += batch.count(b"\n\n")
            # A slow client: while its write goes out the producer runs as far as it may
            # (it never waits on its source: unbounded, it would produce all).
            for _ in range(2 * MAX_QUEUED_EVENTS):
                await asyncio.sleep(0)
        return batches

    batches = asyncio.run(scenario())
    assert b"".join(batches) == b"e\n\n" * 3 * MAX_QUEUED_EVENTS
    assert lead == MAX_QUEUED_EVENTS  # queued up to the bound, then held back
    assert all(batch.count(b"\n\n") <= MAX_QUEUED_EVENTS for batch in batches)


def test_large_events_are_each_written_before_the_next_is_made() -> None:
    produced = 0
    large = b"x" * MAX_QUEUED_BYTES + b"\n\n"

    async def scenario() -> list[bytes]:
        async def events() -> AsyncGenerator[bytes, None]:
            nonlocal produced
            for _ in range(3):
                produced += 1
                yield large

        joined = joined_when_ready(events())
        first = await anext(joined)
        second = await anext(joined)
        assert produced == 2, "the third was made while the second was still unwritten"
        return [first, second, *[item async for item in joined]]

    assert asyncio.run(scenario()) == [large] * 3


def test_the_first_event_is_taken_in_the_consumers_own_task() -> None:
    producing_tasks = []

    async def scenario() -> list[bytes]:
        async def events() -> AsyncGenerator[bytes, None]:
            for event in (b"a\n\n", b"b\n\n"):
                producing_tasks.append(asyncio.current_task())
                yield event

        consumer = asyncio.current_task()
        received = await collected(events())
        assert producing_tasks[0] is consumer  # no task had to start for the first byte
        assert producing_tasks[1] is not consumer
        return received

    assert asyncio.run(scenario()) == [b"a\n\n", b"b\n\n"]


def test_no_events_give_nothing() -> None:
    async def events() -> AsyncGenerator[bytes, None]:
        return
        yield b""

    assert asyncio.run(collected(events())) == []

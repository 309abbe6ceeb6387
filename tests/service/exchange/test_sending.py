"""The engine's events written and sent, in-process: a writer that fails mid-stream still ends
the stream with its own failure, the engine's stream is closed however it ends, and what is
to happen once an answer ended well happens before its last bytes, and only then."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from service.exchange import (
    AnswerEnd,
    AnswerStart,
    ChoiceEnd,
    ChoiceStart,
    ContentDelta,
    Event,
    Failure,
    written_stream,
)
from service.wire import ProxyError


class Recording:
    """A writer of plain text that records what it was given, and fails on `fail_on`."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.events: list[Event] = []
        self._fail_on = fail_on

    def write(self, event: Event) -> bytes:
        self.events.append(event)
        if isinstance(event, ContentDelta):
            if event.text == self._fail_on:
                raise ValueError("a writer's own fault")
            return event.text.encode()
        if isinstance(event, Failure):
            return b"|failed: " + event.error.message.encode()
        if isinstance(event, AnswerEnd):
            return b"|end"
        return b""

    def whole(self) -> Any:
        return None


class Batches:
    """The engine's lists of events, noting whether its stream was closed."""

    def __init__(self, *batches: list[Event]) -> None:
        self._batches = batches
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[list[Event]]:
        try:
            for batch in self._batches:
                yield batch
        finally:
            self.closed = True


def sent(writer: Recording, source: Batches, **options: Any) -> bytes:
    async def run() -> bytes:
        return b"".join([data async for data in written_stream(writer, aiter(source), **options)])

    return asyncio.run(run())


ANSWER = (
    [AnswerStart({}), ChoiceStart(), ContentDelta("It is ")],
    [ContentDelta("sunny.")],
    [ChoiceEnd("stop"), AnswerEnd()],
)


def test_a_writer_that_fails_mid_stream_ends_it_with_its_failure_and_closes_the_engines() -> None:
    writer, source = Recording(fail_on="sunny."), Batches(*ANSWER)

    data = sent(writer, source)

    assert data == b"It is |failed: internal proxy error"
    assert isinstance(writer.events[-1], Failure) and writer.events[-1].error.status == 500
    assert source.closed


def test_on_finished_is_awaited_before_the_last_bytes_are_sent() -> None:
    order: list[str] = []
    writer = Recording()

    async def finished() -> None:
        order.append(f"finished after {len(writer.events)} events")

    async def run() -> None:
        async for data in written_stream(writer, aiter(Batches(*ANSWER)), on_finished=finished):
            order.append(data.decode())

    asyncio.run(run())

    assert order == ["It is ", "sunny.", "finished after 6 events", "|end"]


def test_an_answer_that_failed_is_not_finished() -> None:
    finished: list[bool] = []

    async def on_finished() -> None:
        finished.append(True)

    upstream_gone = ProxyError(502, "upstream stream ended early", code="upstream_stream_cut")
    source = Batches(ANSWER[0], [Failure(upstream_gone)])

    data = sent(Recording(), source, on_finished=on_finished)

    assert data == b"It is |failed: upstream stream ended early"
    assert finished == []


@pytest.mark.parametrize("raised", [ProxyError(503, "store gone", code="x"), RuntimeError("bug")])
def test_a_failing_on_finished_is_the_answers_failure_in_place_of_its_end(
    raised: Exception,
) -> None:
    async def on_finished() -> None:
        raise raised

    data = sent(Recording(), Batches(*ANSWER), on_finished=on_finished)

    message = "store gone" if isinstance(raised, ProxyError) else "internal proxy error"
    assert data == b"It is sunny.|failed: " + message.encode()

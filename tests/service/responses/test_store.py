"""The Responses store, each test run on both backends (this process's memory, and a real
Valkey server, which speaks Redis's protocol): the same owners, age, count, byte budget,
eviction order, responses read back and deleted. A Redis that does not answer is a 503 for
a lookup and a logged, counted error for a write."""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from redis_server import free_port
from waits import HUNG_AFTER_SECONDS

from service.observability import ProxyMetrics
from service.responses.redis_store import RedisStore
from service.responses.store import (
    MAX_INDEXED_ITEMS,
    Entry,
    MemoryStore,
    ResponseStore,
    StoreLimits,
)
from service.wire import ProxyError, json_value

ALICE, BOB = "owner-a", "owner-b"
QUESTION = {"id": "msg_chosen_by_the_client", "type": "message", "role": "user", "content": "hi"}
ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
LATER = {"id": "msg_2", "type": "message", "role": "assistant", "content": []}
TTL = 60.0


def reply(response_id: str, *output: dict[str, Any]) -> dict[str, Any]:
    """A response as the store is given it, with these output items."""
    return {"id": response_id, "object": "response", "status": "completed", "output": [*output]}


class Clock:
    """Time the test moves; it starts now, since Redis expires keys on the real clock."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def metrics() -> ProxyMetrics:
    return ProxyMetrics()


@pytest.fixture
def kept(backend: str, request: pytest.FixtureRequest, metrics: ProxyMetrics) -> Any:
    """`async with kept(max_bytes=...) as store`: a store of the test's backend."""
    url = request.getfixturevalue("redis_url") if backend == "redis" else ""

    @asynccontextmanager
    async def open_store(
        *, max_responses: int = 10, max_bytes: int = 10**6, clock: Clock | None = None
    ) -> AsyncIterator[ResponseStore]:
        limits = StoreLimits(max_responses=max_responses, max_bytes=max_bytes, ttl_seconds=TTL)
        if backend == "memory":
            yield MemoryStore(limits, metrics, clock or time.monotonic)
            return
        store = RedisStore(
            url, limits, metrics, timeout=HUNG_AFTER_SECONDS, max_connections=4, clock=clock
        )
        try:
            yield store
        finally:
            await store.close()

    return open_store


async def found(store: ResponseStore, owner: str, response_id: str, *item_ids: str) -> Any:
    """The conversation and the items found, decoded."""
    result = await store.lookup(owner, response_id, item_ids)
    conversation = None if result.conversation is None else json_value(result.conversation)
    return conversation, {key: json_value(value) for key, value in result.items.items()}


def event_count(metrics: ProxyMetrics, event: str) -> float:
    value = metrics.registry.get_sample_value(
        "toolcall_proxy_response_store_events_total", {"event": event}
    )
    return value or 0.0


@pytest.mark.anyio
async def test_a_response_and_its_items_are_found_until_their_age_passes_the_ttl(
    kept: Any,
) -> None:
    clock = Clock()
    async with kept(clock=clock) as store:
        await store.put(ALICE, reply("resp_1", ANSWER), [QUESTION], [])

        clock.now += TTL - 1
        assert await found(store, ALICE, "resp_1", "msg_1") == (
            [QUESTION, ANSWER],
            {"msg_1": ANSWER},
        )
        clock.now += 2  # past the TTL (Redis keeps times in milliseconds)
        assert await found(store, ALICE, "resp_1", "msg_1") == (None, {})


@pytest.mark.anyio
async def test_a_response_is_read_back_whole_with_the_inputs_it_answered_until_its_ttl(
    kept: Any, metrics: ProxyMetrics
) -> None:
    clock = Clock()
    answered = reply("resp_2", LATER)
    async with kept(clock=clock) as store:
        await store.put(ALICE, answered, [QUESTION, ANSWER], [ANSWER])

        stored = await store.response(ALICE, "resp_2")
        assert stored is not None and stored.decoded() == (answered, [QUESTION, ANSWER])
        assert await store.response(BOB, "resp_2") is None
        assert (event_count(metrics, "hit"), event_count(metrics, "miss")) == (1, 1)
        clock.now += TTL + 1
        assert await store.response(ALICE, "resp_2") is None


@pytest.mark.anyio
async def test_a_deleted_response_is_gone_with_the_items_only_it_held_and_frees_its_bytes(
    kept: Any, metrics: ProxyMetrics
) -> None:
    entry_size = Entry.of(reply("resp_1", ANSWER), [QUESTION], []).size
    async with kept(max_bytes=2 * entry_size + 10) as store:
        await store.put(ALICE, reply("resp_1", ANSWER), [QUESTION], [])
        await store.put(ALICE, reply("resp_2", {**ANSWER, "id": "msg_2"}), [QUESTION], [])

        assert not await store.delete(BOB, "resp_1")  # not Bob's to delete
        assert await store.delete(ALICE, "resp_1")
        assert not await store.delete(ALICE, "resp_1")
        assert await store.response(ALICE, "resp_1") is None
        assert await found(store, ALICE, "resp_1", "msg_1") == (None, {})
        # Its bytes are free again: a third entry fits beside the second.
        await store.put(ALICE, reply("resp_3", {**ANSWER, "id": "msg_3"}), [QUESTION], [])
        assert await store.response(ALICE, "resp_2") is not None
        assert event_count(metrics, "evicted") == 0


@pytest.mark.anyio
async def test_an_item_a_later_response_named_outlives_the_deletion_of_the_one_that_made_it(
    kept: Any,
) -> None:
    async with kept() as store:
        await store.put(ALICE, reply("resp_1", ANSWER), [QUESTION], [])
        await store.put(ALICE, reply("resp_2", LATER), [QUESTION, ANSWER], [ANSWER])

        assert await store.delete(ALICE, "resp_1")
        assert await found(store, ALICE, "resp_2", "msg_1") == (
            [QUESTION, ANSWER, LATER],
            {"msg_1": ANSWER},
        )


@pytest.mark.anyio
async def test_another_owner_finds_nothing_as_if_it_had_never_been_stored(
    kept: Any, metrics: ProxyMetrics
) -> None:
    async with kept() as store:
        await store.put(ALICE, reply("resp_1", ANSWER), [QUESTION], [])

        assert await found(store, BOB, "resp_1", "msg_1") == (None, {})
        assert await found(store, BOB, "resp_never", "msg_never") == (None, {})
        assert (event_count(metrics, "miss"), event_count(metrics, "hit")) == (4, 0)
        await found(store, ALICE, "resp_1", "msg_1", "msg_1")  # one item named twice
        assert (event_count(metrics, "miss"), event_count(metrics, "hit")) == (4, 2)


@pytest.mark.anyio
async def test_only_the_items_given_as_indexed_are_found_by_id(kept: Any) -> None:
    async with kept() as store:
        # The client chose its question's id: naming it later must not find it.
        await store.put(ALICE, reply("resp_1", ANSWER), [QUESTION], [])

        assert await found(store, ALICE, "resp_1", QUESTION["id"], "msg_1") == (
            [QUESTION, ANSWER],
            {"msg_1": ANSWER},
        )


@pytest.mark.anyio
async def test_the_byte_budget_counts_serialized_entries_and_evicts_the_oldest_first(
    kept: Any, metrics: ProxyMetrics
) -> None:
    entry_size = Entry.of(reply("resp_1", ANSWER), [QUESTION], []).size
    async with kept(max_bytes=2 * entry_size) as store:
        for number in (1, 2, 3):
            answer = {**ANSWER, "id": f"msg_{number}"}
            await store.put(ALICE, reply(f"resp_{number}", answer), [QUESTION], [])

        assert await found(store, ALICE, "resp_1", "msg_1") == (None, {})
        for number in (2, 3):
            conversation, items = await found(store, ALICE, f"resp_{number}", f"msg_{number}")
            assert conversation is not None and items.keys() == {f"msg_{number}"}
        assert (event_count(metrics, "stored"), event_count(metrics, "evicted")) == (3, 1)


@pytest.mark.anyio
async def test_an_item_a_later_response_named_outlives_the_response_that_made_it(
    kept: Any,
) -> None:
    async with kept(max_responses=2) as store:
        await store.put(ALICE, reply("resp_1", ANSWER), [QUESTION], [])
        # resp_2's request named msg_1: indexed again, under resp_2.
        await store.put(ALICE, reply("resp_2", LATER), [QUESTION, ANSWER], [ANSWER])
        await store.put(ALICE, reply("resp_3"), [QUESTION], [])

        assert await found(store, ALICE, "resp_1", "msg_1", "msg_2") == (
            None,
            {"msg_1": ANSWER, "msg_2": LATER},
        )


@pytest.mark.anyio
async def test_an_entry_past_the_whole_budget_is_not_kept_and_evicts_nothing(
    kept: Any, metrics: ProxyMetrics
) -> None:
    small = Entry.of(reply("resp_small"), [QUESTION], []).size
    async with kept(max_bytes=small + 1) as store:
        await store.put(ALICE, reply("resp_small"), [QUESTION], [])
        await store.put(ALICE, reply("resp_large", ANSWER), [QUESTION], [])

        assert (await found(store, ALICE, "resp_small"))[0] == [QUESTION]
        assert await found(store, ALICE, "resp_large", "msg_1") == (None, {})
        assert event_count(metrics, "evicted") == 0


@pytest.mark.anyio
async def test_size_zero_keeps_nothing(kept: Any) -> None:
    async with kept(max_responses=0) as store:
        await store.put(ALICE, reply("resp_1", ANSWER), [QUESTION], [])

        assert await found(store, ALICE, "resp_1", "msg_1") == (None, {})


@pytest.mark.anyio
async def test_a_redis_that_does_not_answer_is_a_503_for_lookups_and_a_counted_error_for_writes(
    metrics: ProxyMetrics,
) -> None:
    limits = StoreLimits(max_responses=10, max_bytes=10**6, ttl_seconds=TTL)
    nobody = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    store = RedisStore(nobody, limits, metrics, timeout=HUNG_AFTER_SECONDS, max_connections=4)
    try:
        await store.put(ALICE, reply("resp_1", ANSWER), [QUESTION], [])  # logged, not raised
        with pytest.raises(ProxyError) as raised:
            await store.lookup(ALICE, "resp_1", ["msg_1"])
        assert not await store.ready()
    finally:
        await store.close()

    assert (raised.value.status, raised.value.code) == (503, "store_unavailable")
    assert event_count(metrics, "error") == 2


@pytest.mark.anyio
async def test_the_memory_store_takes_about_the_bytes_its_budget_counts(
    metrics: ProxyMetrics,
) -> None:
    limits = StoreLimits(max_responses=1000, max_bytes=10**8, ttl_seconds=TTL)
    store = MemoryStore(limits, metrics)
    question = {**QUESTION, "content": "x" * 1000}
    entries = 200
    size = Entry.of(reply("resp_0", ANSWER), [question], []).size
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(entries):
            await store.put(ALICE, reply(f"resp_{number}", ANSWER), [question], [])
        gc.collect()
        taken = (tracemalloc.get_traced_memory()[0] - before) / entries
    finally:
        tracemalloc.stop()

    # The serialized values, and the bookkeeping of an entry and its one item.
    assert taken < 1.5 * size, (taken, size)


@pytest.mark.anyio
async def test_the_items_of_one_response_found_by_id_are_bounded(kept: Any) -> None:
    calls = [
        {"id": f"fc_{number}", "type": "function_call", "name": "f", "arguments": "{}"}
        for number in range(MAX_INDEXED_ITEMS + 10)
    ]
    async with kept(max_bytes=10**8) as store:
        await store.put(ALICE, reply("resp_1", *calls), [QUESTION], [])

        last_found, first_not = (f"fc_{MAX_INDEXED_ITEMS - 1}", f"fc_{MAX_INDEXED_ITEMS}")
        conversation, items = await found(store, ALICE, "resp_1", last_found, first_not)
        assert conversation == [QUESTION, *calls]  # each is kept in the conversation
        assert items.keys() == {last_found}


@pytest.mark.anyio
async def test_the_memory_store_counts_what_many_small_items_take(metrics: ProxyMetrics) -> None:
    # Each item findable by id costs its index entry beside its bytes: counted by their
    # bytes alone, 60,000 items of ~165 bytes took several times what was counted.
    limits = StoreLimits(max_responses=1000, max_bytes=10**9, ttl_seconds=TTL)
    store = MemoryStore(limits, metrics)
    responses = [
        reply(
            f"resp_{number}",
            *(
                {"id": f"fc_{number}_{index}", "type": "function_call", "call_id": f"c_{index}"}
                | {"name": "read_file", "arguments": '{"path": "src/app.py"}'}
                for index in range(1000)
            ),
        )
        for number in range(20)
    ]
    counted = sum(Entry.of(response, [QUESTION], []).size for response in responses)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for response in responses:
            await store.put(ALICE, response, [QUESTION], [])
        gc.collect()
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert taken < 1.5 * counted, (taken, counted)


@pytest.mark.anyio
async def test_a_response_too_big_to_keep_is_never_written_out(metrics: ProxyMetrics) -> None:
    # Its entry (conversation and item, each holding the text) was written out, and only
    # then found too big: a 60 MiB answer took 120 MiB more at its end, to be dropped.
    text = "A long answer. " * 70_000  # ~1 MB
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    message["content"].append({"type": "output_text", "text": text, "annotations": []})
    store = MemoryStore(
        StoreLimits(max_responses=10, max_bytes=len(text), ttl_seconds=TTL), metrics
    )
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await store.put(ALICE, reply("resp_1", message), [QUESTION], [])
        grown = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()

    assert grown < len(text) // 10, grown
    assert await store.response(ALICE, "resp_1") is None

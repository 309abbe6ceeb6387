"""The Responses store: bounded by count and age, items findable while their response is."""

from __future__ import annotations

from service.responses.store import ResponseStore

QUESTION = {"type": "message", "role": "user", "content": "hi"}
ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_response_and_its_items_are_found_until_their_age_passes_the_ttl() -> None:
    clock = Clock()
    store = ResponseStore(max_responses=10, ttl_seconds=60, clock=clock)
    store.put("resp_1", [QUESTION], [ANSWER])

    clock.now = 59
    assert store.conversation("resp_1") == (QUESTION, ANSWER)
    assert store.item("msg_1") == ANSWER

    clock.now = 60
    assert (store.conversation("resp_1"), store.item("msg_1")) == (None, None)


def test_the_oldest_response_goes_first_and_takes_only_its_own_items() -> None:
    store = ResponseStore(max_responses=2, ttl_seconds=60)
    store.put("resp_1", [QUESTION], [ANSWER])
    later = {"id": "msg_2", "type": "message", "role": "assistant", "content": []}
    store.put("resp_2", [QUESTION, ANSWER], [later])  # its input holds resp_1's item again
    store.put("resp_3", [], [])

    assert store.conversation("resp_1") is None
    assert store.conversation("resp_2") == (QUESTION, ANSWER, later)
    assert store.item("msg_1") == ANSWER  # still held by resp_2


def test_size_zero_keeps_nothing() -> None:
    store = ResponseStore(max_responses=0, ttl_seconds=60)
    store.put("resp_1", [QUESTION], [ANSWER])

    assert (store.conversation("resp_1"), store.item("msg_1")) == (None, None)

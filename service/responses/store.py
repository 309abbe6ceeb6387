"""Recent Responses-API answers kept in this process's memory, so that a later request can
name them: `previous_response_id` for a whole conversation, `item_reference` for one item.
Bounded in count and age; what it no longer holds (or never held: another worker or replica
served it) the caller answers with a 400 that says how to send whole items instead."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Item = dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredResponse:
    conversation: tuple[Item, ...]  # its input items (references resolved), then its output
    stored_at: float


class ResponseStore:
    """At most `max_responses`, each for `ttl_seconds`; the oldest go first.

    >>> store = ResponseStore(max_responses=2, ttl_seconds=60)
    >>> store.put("resp_1", inputs, outputs)
    >>> store.item("msg_1"), store.conversation("resp_1")
    """

    def __init__(
        self,
        *,
        max_responses: int,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_responses = max_responses
        self._ttl_seconds = ttl_seconds
        self._clock = clock
        self._responses: OrderedDict[str, StoredResponse] = OrderedDict()
        self._items: dict[str, tuple[str, Item]] = {}  # item id -> (its response's id, item)

    def put(self, response_id: str, inputs: Sequence[Item], outputs: Sequence[Item]) -> None:
        if self._max_responses == 0:
            return
        self._expire()
        while len(self._responses) >= self._max_responses:
            self._evict(next(iter(self._responses)))
        self._responses[response_id] = StoredResponse((*inputs, *outputs), self._clock())
        for item in (*inputs, *outputs):
            if isinstance(item.get("id"), str):
                self._items[item["id"]] = (response_id, item)

    def conversation(self, response_id: str) -> tuple[Item, ...] | None:
        self._expire()
        stored = self._responses.get(response_id)
        return None if stored is None else stored.conversation

    def item(self, item_id: str) -> Item | None:
        self._expire()
        found = self._items.get(item_id)
        return None if found is None else found[1]

    def _expire(self) -> None:
        limit = self._clock() - self._ttl_seconds
        while self._responses:
            oldest_id, oldest = next(iter(self._responses.items()))
            if oldest.stored_at > limit:
                return
            self._evict(oldest_id)

    def _evict(self, response_id: str) -> None:
        stored = self._responses.pop(response_id)
        for item in stored.conversation:
            item_id = item.get("id")
            # A later response may hold the same item (its input named it): that one stays.
            if isinstance(item_id, str) and self._items.get(item_id, ("",))[0] == response_id:
                del self._items[item_id]

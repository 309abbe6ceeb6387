"""Earlier Responses-API answers kept so that a later request can name them:
`previous_response_id` for a whole conversation, `item_reference` for one item, and the
response itself for `GET /v1/responses/{id}` and the endpoints beside it.

An entry is one response: its whole conversation (input items with references resolved,
then its output), kept as one serialized JSON value so that it stands alone (no older entry
has to outlive it); the response object, whose output is the conversation's last items and
is not kept twice; and the proxy's own output items by id, each serialized on its own so
that a reference costs one item. Every entry belongs to an owner (the client key that made
it, as app.py names it); a lookup by another owner finds nothing, exactly as for an id never
stored. Entries are bounded in count, in age and in serialized bytes; the oldest go first.

Two backends keep the same semantics: this process's memory (`MemoryStore`, the default), or
one Redis or Valkey server that several replicas share (`redis_store.RedisStore`); the
settings choose one in `store_setup`."""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from ..observability import ProxyMetrics, StoreEvent
from ..wire import SERVER_ERROR, ProxyError, json_bytes, json_value

Item = dict[str, Any]
Clock = Callable[[], float]  # seconds
Answer = TypeVar("Answer")
logger = logging.getLogger(__name__)

# What keeping one item findable by id costs beside its serialized bytes, counted in the byte
# budget with them: its id, its place in the index and the bytes object around it (~300
# bytes in this process's memory, measured; a Redis hash of three fields per item is alike).
# Counting the bytes alone, 3 responses of 20,000 items held +259 MB against ~19 MB counted.
ITEM_OVERHEAD_BYTES = 320
# The items of one response found by id; later ones are kept in its conversation, which
# `previous_response_id` names, but not on their own. An answer holds a message and its
# calls: a few, dozens when calls go in parallel; 20,000 calls made 20,000 entries.
MAX_INDEXED_ITEMS = 1024


@dataclass(frozen=True, slots=True)
class StoreLimits:
    max_responses: int
    max_bytes: int
    ttl_seconds: float


@dataclass(frozen=True, slots=True)
class Entry:
    """A response as it is stored, serialized: its conversation, the response with its
    `output` written as the number of the conversation's last items that are its output
    (they are not kept twice), and its indexed items."""

    conversation: bytes
    response: bytes
    items: dict[str, bytes]  # item id -> the item

    @classmethod
    def of(cls, response: Item, inputs: Sequence[Item], referenced: Sequence[Item]) -> Entry:
        """The entry of `response`, answered to `inputs` (the whole conversation before it);
        its output items are indexed, and so are the earlier output items its request
        `referenced`: the first MAX_INDEXED_ITEMS of them."""
        output = response["output"]
        items = {item["id"]: json_bytes(item) for item in _indexed(response, referenced)}
        kept = {**response, "output": len(output)}
        return cls(json_bytes([*inputs, *output]), json_bytes(kept), items)

    @staticmethod
    def least_size(response: Item, referenced: Sequence[Item]) -> int:
        """No more than the `size` of the entry of `response`: the characters of the strings
        in the items found by id, and in those of them that are its output again, in the
        conversation (a string takes at least a byte a character in JSON). An entry too big
        to keep is not made: a 60 MiB answer took 120 MiB more to be written and dropped."""
        output = response["output"][:MAX_INDEXED_ITEMS]
        return _chars(output) + _chars(_indexed(response, referenced))

    @property
    def size(self) -> int:
        """What the byte budget counts: the serialized values, and what keeping each item
        by id costs beside its bytes."""
        items = sum(map(len, self.items.values())) + ITEM_OVERHEAD_BYTES * len(self.items)
        return len(self.conversation) + len(self.response) + items


@dataclass(frozen=True, slots=True)
class Stored:
    """A stored response as it was kept, still serialized (see `Entry`)."""

    conversation: bytes
    response: bytes

    def decoded(self) -> tuple[Item, list[Item]]:
        """The response, its output in it, and the input items it answered."""
        response, conversation = json_value(self.response), json_value(self.conversation)
        inputs = len(conversation) - response["output"]
        return {**response, "output": conversation[inputs:]}, conversation[:inputs]


@dataclass(frozen=True, slots=True)
class Found:
    """What a lookup found, still serialized: the conversation of the response asked for
    (None: not found), and each item asked for that was found."""

    conversation: bytes | None = None
    items: dict[str, bytes] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.conversation or b"") + sum(map(len, self.items.values()))


class StoreUnavailable(Exception):
    """The backend could not answer (Redis down, or too slow)."""


def store_unavailable() -> ProxyError:
    return ProxyError(
        503,
        "the response store is unavailable; try again, or send whole items instead of "
        "references (`store: false`)",
        error_type=SERVER_ERROR,
        code="store_unavailable",
    )


class ResponseStore(ABC):
    """What the Responses endpoints use; the backends implement the methods that begin with
    an underscore.

    >>> found = await store.lookup(owner, "resp_1", ["msg_1"])
    >>> await store.put(owner, response, inputs, referenced)
    >>> stored = await store.response(owner, "resp_2")
    >>> await store.delete(owner, "resp_2")
    """

    backend: ClassVar[str]

    def __init__(self, limits: StoreLimits, metrics: ProxyMetrics, clock: Clock) -> None:
        self.limits = limits
        self._events = metrics.response_store
        self._clock = clock

    async def lookup(self, owner: str, response_id: str | None, item_ids: Sequence[str]) -> Found:
        """The named response's conversation and the named items, if `owner` stored them and
        they are still kept. Raises a 503 `ProxyError` when the backend does not answer."""
        item_ids = list(dict.fromkeys(item_ids))  # an item named twice is looked up once
        named = (response_id is not None) + len(item_ids)
        # The proxy's ids are ASCII: one that UTF-8 cannot even write (a lone surrogate a
        # client escaped in its JSON) was never stored, and a Redis key could not hold it.
        item_ids = [item_id for item_id in item_ids if _writable(item_id)]
        if response_id is not None and not _writable(response_id):
            response_id = None
        found = await self._asked(self._lookup(owner, response_id, item_ids, self._clock()))
        self._counted((found.conversation is not None) + len(found.items), named)
        return found

    async def response(self, owner: str, response_id: str) -> Stored | None:
        """The response `owner` stored as `response_id`, if it is still kept (see `lookup`)."""
        stored = await self._asked(self._response(owner, response_id, self._clock()))
        self._counted(stored is not None, 1)
        return stored

    async def delete(self, owner: str, response_id: str) -> bool:
        """Forget the response `owner` stored as `response_id`, and the items only it holds;
        False when there was none to forget (see `lookup`)."""
        return await self._asked(self._delete(owner, response_id, self._clock()))

    async def put(
        self, owner: str, response: Item, inputs: Sequence[Item], referenced: Sequence[Item]
    ) -> None:
        """Keep `response` (see `Entry.of`). The answer has been made by now, so a backend
        that fails here is logged and counted, never the client's error."""
        response_id = response["id"]
        if (
            self.limits.max_responses == 0
            or Entry.least_size(response, referenced) > self.limits.max_bytes
            or (entry := Entry.of(response, inputs, referenced)).size > self.limits.max_bytes
        ):
            return  # keeping it would mean evicting everything, and it still would not fit
        try:
            evicted = await self._put(owner, response_id, entry, self._clock())
        except StoreUnavailable as error:
            self._events.labels(StoreEvent.ERROR).inc()
            logger.warning("response %s was not stored: %s", response_id, error)
            return
        self._events.labels(StoreEvent.STORED).inc()
        self._events.labels(StoreEvent.EVICTED).inc(evicted)

    async def _asked(self, asking: Awaitable[Answer]) -> Answer:
        """The backend's answer; a 503 `ProxyError` when it does not answer."""
        try:
            return await asking
        except StoreUnavailable:
            self._events.labels(StoreEvent.ERROR).inc()
            raise store_unavailable() from None

    def _counted(self, hits: int, named: int) -> None:
        self._events.labels(StoreEvent.HIT).inc(hits)
        self._events.labels(StoreEvent.MISS).inc(named - hits)

    @abstractmethod
    async def _lookup(
        self, owner: str, response_id: str | None, item_ids: Sequence[str], now: float
    ) -> Found: ...

    @abstractmethod
    async def _response(self, owner: str, response_id: str, now: float) -> Stored | None: ...

    @abstractmethod
    async def _delete(self, owner: str, response_id: str, now: float) -> bool: ...

    @abstractmethod
    async def _put(self, owner: str, response_id: str, entry: Entry, now: float) -> int:
        """Store `entry` after dropping the expired ones, then the oldest until it fits the
        count and the byte budget; returns how many were dropped to make room."""

    @abstractmethod
    async def ready(self) -> bool:
        """Whether the backend answers now."""


@dataclass(slots=True)
class _Kept:
    stored_at: float
    size: int
    stored: Stored
    item_ids: tuple[str, ...]


class MemoryStore(ResponseStore):
    """This process's memory: the serialized values themselves, so that the byte budget is
    what they take (as Python objects the same JSON takes about 8 times as much)."""

    backend = "memory"

    def __init__(
        self, limits: StoreLimits, metrics: ProxyMetrics, clock: Clock = time.monotonic
    ) -> None:
        super().__init__(limits, metrics, clock)
        self._entries: OrderedDict[tuple[str, str], _Kept] = OrderedDict()  # oldest first
        # (owner, item id) -> (the entry holding it, the item)
        self._items: dict[tuple[str, str], tuple[tuple[str, str], bytes]] = {}
        self._bytes = 0

    async def _lookup(
        self, owner: str, response_id: str | None, item_ids: Sequence[str], now: float
    ) -> Found:
        self._expire(now)
        kept = None if response_id is None else self._entries.get((owner, response_id))
        items = {
            item_id: self._items[(owner, item_id)][1]
            for item_id in item_ids
            if (owner, item_id) in self._items
        }
        return Found(None if kept is None else kept.stored.conversation, items)

    async def _response(self, owner: str, response_id: str, now: float) -> Stored | None:
        self._expire(now)
        kept = self._entries.get((owner, response_id))
        return None if kept is None else kept.stored

    async def _delete(self, owner: str, response_id: str, now: float) -> bool:
        self._expire(now)
        if (owner, response_id) not in self._entries:
            return False
        self._drop((owner, response_id))
        return True

    async def _put(self, owner: str, response_id: str, entry: Entry, now: float) -> int:
        self._expire(now)
        evicted = 0
        while self._entries and (
            len(self._entries) >= self.limits.max_responses
            or self._bytes + entry.size > self.limits.max_bytes
        ):
            self._drop(next(iter(self._entries)))
            evicted += 1
        key = (owner, response_id)
        stored = Stored(_exact(entry.conversation), _exact(entry.response))
        self._entries[key] = _Kept(now, entry.size, stored, tuple(entry.items))
        for item_id, item in entry.items.items():
            # A later entry takes the item over.
            self._items[(owner, item_id)] = (key, _exact(item))
        self._bytes += entry.size
        return evicted

    async def ready(self) -> bool:
        return True

    def _expire(self, now: float) -> None:
        limit = now - self.limits.ttl_seconds
        while self._entries:
            oldest_key, oldest = next(iter(self._entries.items()))
            if oldest.stored_at > limit:
                return
            self._drop(oldest_key)

    def _drop(self, key: tuple[str, str]) -> None:
        kept = self._entries.pop(key)
        self._bytes -= kept.size
        owner = key[0]
        for item_id in kept.item_ids:
            # A later entry may have taken the item over (its request named it): it stays.
            if self._items.get((owner, item_id), (None,))[0] == key:
                del self._items[(owner, item_id)]


def _indexed(response: Item, referenced: Sequence[Item]) -> tuple[Item, ...]:
    return (*referenced, *response["output"])[:MAX_INDEXED_ITEMS]


def _chars(value: Any) -> int:
    """The characters of the strings in `value`, a JSON value."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(key) + _chars(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return sum(map(_chars, value))
    return 0


def _exact(value: bytes) -> bytes:
    """`value` in an allocation of its own size. orjson's output keeps the room its buffer
    grew to (at least 4 KiB, about twice the size of a long value), which a value kept for
    the store's whole TTL would hold: a 2 KB entry took 14 KB of the process's memory."""
    return bytes(memoryview(value))


def _writable(identifier: str) -> bool:
    """Whether UTF-8 can write `identifier`: a lone surrogate cannot be."""
    try:
        identifier.encode()
    except UnicodeEncodeError:
        return False
    return True

"""The response store on one Redis or Valkey server, shared by every replica (and worker) that
points at it: the same entries, owners, count, byte budget, age and eviction order as the
memory store, with the bookkeeping kept beside the entries and changed atomically by one
script per write, so that replicas writing at once cannot overrun the budget.

Keys, under PREFIX (`<owner>:<response id>` is an entry's member name):

- `order`: sorted set of members, scored by the time stored (ms): the oldest first;
- `sizes`: hash member -> the entry's size, and `bytes`: their sum;
- `r:<owner>:<response id>`: hash `c` the conversation, `w` the response (its output given
  as a count, see `store.Entry`), `t` the time stored, `i` the keys of the items it indexed;
- `i:<owner>:<item id>`: hash `v` the item, `t` the time stored, `r` the member holding it.

Entries and items also expire on their own (PEXPIRE), so a server nobody writes to empties.
The store needs one server (no Redis Cluster: a write touches keys of several entries)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from ..observability import ProxyMetrics
from .store import Clock, Entry, Found, ResponseStore, Stored, StoreLimits, StoreUnavailable

PREFIX = "toolcall-proxy:responses:"
# A command on a pooled connection that Redis closed (it restarted) fails once, then goes
# again on a new connection; with no wait between, so a server that is down fails fast.
RETRIES = 1

# What both scripts begin with. KEYS[1..3]: order, sizes, bytes; ARGV[1]: PREFIX. `drop`
# forgets an entry (its member name) and what it alone holds.
DROP = """
local order, sizes, total, prefix = KEYS[1], KEYS[2], KEYS[3], ARGV[1]

local function drop(gone)
  local key = prefix .. 'r:' .. gone
  local items = redis.call('HGET', key, 'i')
  if items then
    for item in string.gmatch(items, '%S+') do
      -- A later entry may have taken the item over (its request named it): it stays.
      if redis.call('HGET', item, 'r') == gone then redis.call('DEL', item) end
    end
  end
  redis.call('DEL', key)
  redis.call('DECRBY', total, tonumber(redis.call('HGET', sizes, gone) or '0'))
  redis.call('HDEL', sizes, gone)
  redis.call('ZREM', order, gone)
end
"""

# KEYS: order, sizes, bytes, the entry's key, its items' keys.
# ARGV: PREFIX, member, now (ms), ttl (ms), max bytes, max entries, size, conversation,
# response, the items (in the order of their keys). Returns how many entries were dropped to
# make room.
PUT_SCRIPT = (
    DROP
    + """
local entry, member = KEYS[4], ARGV[2]
local now, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
local max_bytes, max_entries, size = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])

for _, gone in ipairs(redis.call('ZRANGEBYSCORE', order, '-inf', now - ttl)) do drop(gone) end
local evicted = 0
while redis.call('ZCARD', order) > 0 and (redis.call('ZCARD', order) >= max_entries
    or tonumber(redis.call('GET', total) or '0') + size > max_bytes) do
  drop(redis.call('ZRANGE', order, 0, 0)[1])
  evicted = evicted + 1
end
local items = {}
for index = 5, #KEYS do
  redis.call('HSET', KEYS[index], 'v', ARGV[index + 5], 't', now, 'r', member)
  redis.call('PEXPIRE', KEYS[index], ttl)
  items[#items + 1] = KEYS[index]
end
redis.call('HSET', entry, 'c', ARGV[8], 'w', ARGV[9], 't', now, 'i', table.concat(items, ' '))
redis.call('PEXPIRE', entry, ttl)
redis.call('ZADD', order, now, member)
redis.call('HSET', sizes, member, size)
redis.call('INCRBY', total, size)
return evicted
"""
)

# KEYS: order, sizes, bytes, the entry's key. ARGV: PREFIX, member, the oldest time (ms) an
# entry still alive was stored after. Returns 1 if a live entry was dropped, else 0 (an
# expired one is dropped all the same).
DELETE_SCRIPT = (
    DROP
    + """
local stored = redis.call('HGET', KEYS[4], 't')
local live = stored and tonumber(stored) > tonumber(ARGV[3])
if redis.call('ZSCORE', order, ARGV[2]) then drop(ARGV[2]) end
if live then return 1 end
return 0
"""
)


class RedisStore(ResponseStore):
    """The store on the Redis or Valkey server at `url` (`redis://`, `rediss://` or
    `unix://`), through a bounded pool of connections; every connect and every command
    gives up after `timeout` seconds, so a server that is down or stuck costs a request a
    503, never a hang."""

    backend = "redis"

    def __init__(
        self,
        url: str,
        limits: StoreLimits,
        metrics: ProxyMetrics,
        *,
        timeout: float,
        max_connections: int,
        clock: Clock | None = None,
    ) -> None:
        # Replicas compare times stored by each other: the wall clock, not a monotonic one.
        super().__init__(limits, metrics, clock or time.time)
        pool = BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=timeout,  # waiting for a free connection of the pool
            socket_connect_timeout=timeout,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), RETRIES),
        )
        self._redis = Redis(connection_pool=pool)
        self._put_script = self._redis.register_script(PUT_SCRIPT)
        self._delete_script = self._redis.register_script(DELETE_SCRIPT)

    async def _lookup(
        self, owner: str, response_id: str | None, item_ids: Sequence[str], now: float
    ) -> Found:
        oldest = self._oldest(now)
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                if response_id is not None:
                    pipe.hmget(_entry_key(owner, response_id), "c", "t")
                for item_id in item_ids:
                    pipe.hmget(_item_key(owner, item_id), "v", "t")
                answers = await pipe.execute()
        except RedisError as error:
            raise StoreUnavailable(str(error)) from error

        def live(answer: list[bytes | None]) -> bytes | None:
            value, stored_at = answer
            return value if value is not None and int(stored_at or 0) > oldest else None

        conversation = live(answers.pop(0)) if response_id is not None else None
        items = {
            item_id: value
            for item_id, answer in zip(item_ids, answers, strict=True)
            if (value := live(answer)) is not None
        }
        return Found(conversation, items)

    async def _response(self, owner: str, response_id: str, now: float) -> Stored | None:
        try:
            # bytes or None: the client decodes nothing (its pool is made without decoding).
            answer: list[Any] = await self._redis.hmget(
                _entry_key(owner, response_id), "c", "w", "t"
            )
        except RedisError as error:
            raise StoreUnavailable(str(error)) from error
        conversation, response, stored_at = answer
        # An entry without its response (`w`) was stored before responses were kept: for
        # the rest of its age only its conversation can be named.
        if conversation is None or response is None or int(stored_at or 0) <= self._oldest(now):
            return None
        return Stored(conversation, response)

    async def _delete(self, owner: str, response_id: str, now: float) -> bool:
        keys = [*_bookkeeping_keys(), _entry_key(owner, response_id)]
        arguments: list[str | int] = [PREFIX, _member(owner, response_id), self._oldest(now)]
        try:
            return bool(await self._delete_script(keys=keys, args=arguments))
        except RedisError as error:
            raise StoreUnavailable(str(error)) from error

    async def _put(self, owner: str, response_id: str, entry: Entry, now: float) -> int:
        keys = [
            *_bookkeeping_keys(),
            _entry_key(owner, response_id),
            *(_item_key(owner, item_id) for item_id in entry.items),
        ]
        limits = self.limits
        arguments: list[bytes | str | int] = [
            PREFIX,
            _member(owner, response_id),
            _ms(now),
            _ms(limits.ttl_seconds),
            limits.max_bytes,
            limits.max_responses,
            entry.size,
            entry.conversation,
            entry.response,
            *entry.items.values(),
        ]
        try:
            evicted = await self._put_script(keys=keys, args=arguments)
        except RedisError as error:
            raise StoreUnavailable(str(error)) from error
        return int(evicted)

    def _oldest(self, now: float) -> int:
        """The time (ms) an entry stored at or before has expired."""
        return _ms(now - self.limits.ttl_seconds)

    async def ready(self) -> bool:
        try:
            return bool(await self._redis.ping())
        except RedisError:
            return False

    async def close(self) -> None:
        await self._redis.aclose()


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def _bookkeeping_keys() -> list[str]:
    return [PREFIX + "order", PREFIX + "sizes", PREFIX + "bytes"]


def _member(owner: str, response_id: str) -> str:
    return f"{owner}:{response_id}"


def _entry_key(owner: str, response_id: str) -> str:
    return f"{PREFIX}r:{owner}:{response_id}"


def _item_key(owner: str, item_id: str) -> str:
    return f"{PREFIX}i:{owner}:{item_id}"

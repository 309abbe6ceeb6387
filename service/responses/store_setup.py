"""The response store the settings choose, open for the app's lifetime: this process's memory
(`store.MemoryStore`), or the Redis or Valkey server at RESPONSE_STORE_URL
(`redis_store.RedisStore`). Both backends build on `store`; only this module knows both."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ..observability import ProxyMetrics
from ..settings import Settings
from .store import MemoryStore, ResponseStore, StoreLimits


@asynccontextmanager
async def opened_store(settings: Settings, metrics: ProxyMetrics) -> AsyncIterator[ResponseStore]:
    """The store the settings choose, for the app's lifetime."""
    limits = StoreLimits(
        max_responses=settings.response_store_size,
        max_bytes=settings.response_store_max_bytes,
        ttl_seconds=settings.response_store_ttl_seconds,
    )
    if settings.response_store_url is None:
        yield MemoryStore(limits, metrics)
        return
    # Imported only here: a deployment without Redis never loads its client.
    from .redis_store import RedisStore

    store = RedisStore(
        settings.response_store_url.get_secret_value(),
        limits,
        metrics,
        timeout=settings.response_store_timeout,
        max_connections=settings.upstream_max_connections,
    )
    try:
        yield store
    finally:
        await store.close()

"""Calling the proxy's Gemini API with the official google-genai SDK, as Gemini CLI's own
SDK does: the key in `x-goog-api-key`, every path under the API version."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from google import genai
from google.genai import types
from servers import Proxy

# A bound, not synchronisation: a broken proxy fails its test instead of hanging it.
CLIENT_TIMEOUT_MS = 10_000


@contextmanager
def gemini_client(
    proxy: Proxy, api_key: str = "test", *, api_version: str = "v1beta"
) -> Iterator[genai.Client]:
    """The SDK pointed at the proxy, retrying nothing."""
    options = types.HttpOptions(
        base_url=proxy.url, api_version=api_version, timeout=CLIENT_TIMEOUT_MS
    )
    with genai.Client(api_key=api_key, http_options=options) as client:
        yield client

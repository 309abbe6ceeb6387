"""What an upstream failure is: how it is counted, what the client is told (in the library's
own words), how its URL may be logged, and the likely cause of a 404."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from ..observability import UpstreamFailure
from ..wire import UPSTREAM_ERROR, ProxyError

UPSTREAM_FAILURES = (httpx.RequestError, httpx.StreamError, TimeoutError)
# Ollama, vLLM, llama.cpp and TGI serve the OpenAI API under /v1: a base URL without it (the
# commonest mistake, `http://127.0.0.1:11434` for Ollama) gets 404 for every endpoint.
OPENAI_API_SEGMENT = "v1"
NOT_FOUND = 404


def missing_v1_hint(status: int, url: str) -> str | None:
    """The likely cause of a 404 from an upstream whose URL has no /v1, said plainly."""
    if status != NOT_FOUND or OPENAI_API_SEGMENT in urlsplit(url).path.split("/"):
        return None
    return (
        f"the upstream has no {urlsplit(url).path}: its base URL does not end in "
        f"/{OPENAI_API_SEGMENT}, where OpenAI-compatible servers serve the API "
        f"(Ollama: UPSTREAM_BASE_URL=http://127.0.0.1:11434/{OPENAI_API_SEGMENT})"
    )


def failure_kind(exc: BaseException, *, mid_stream: bool) -> UpstreamFailure:
    """How a transport failure is counted: timeouts apart, then by whether the 2xx status
    had already come."""
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return UpstreamFailure.TIMEOUT
    return UpstreamFailure.MID_STREAM if mid_stream else UpstreamFailure.CONNECT


def explained(exc: BaseException) -> str:
    """The library's own words for a failure ("All connection attempts failed", "Request URL
    is missing an 'http://' or 'https://' protocol."), after its kind."""
    reason = str(exc).strip()
    return f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__


def upstream_failure(exc: BaseException) -> ProxyError:
    """The client-facing error for a transport failure, timeout or broken stream."""
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return ProxyError(
            504,
            f"upstream timed out ({explained(exc)})",
            error_type=UPSTREAM_ERROR,
            code="upstream_timeout",
        )
    if isinstance(exc, httpx.ConnectError):
        return ProxyError(
            502,
            f"upstream unreachable ({explained(exc)})",
            error_type=UPSTREAM_ERROR,
            code="upstream_unreachable",
        )
    return ProxyError(
        502,
        f"upstream connection failed ({explained(exc)})",
        error_type=UPSTREAM_ERROR,
        code="upstream_connection_error",
    )


def shown_url(url: httpx.URL) -> str:
    """`url` as a log may show it: no user or password, no query (either may hold a key)."""
    return str(url.copy_with(username=None, password=None, query=None))

"""The seam to the upstream server: plain JSON requests and byte/line streams over the one
shared `httpx.AsyncClient`, under the total deadline, with failures mapped to `ProxyError`."""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.cookiejar import Cookie, CookieJar, CookiePolicy
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import httpx

from ..observability import ProxyMetrics, UpstreamFailure
from ..wire import (
    RETRY_AFTER,
    UPSTREAM_ERROR,
    HeaderPairs,
    LineSplitter,
    ProxyError,
    UpstreamStatusError,
    data_payloads,
    decoded_body,
    json_value,
)
from .failures import (
    UPSTREAM_FAILURES,
    failure_kind,
    missing_v1_hint,
    shown_url,
    upstream_failure,
)

# An upstream error body is read only this far: enough for any real error message, and an
# upstream that answers a 500 with a gigabyte of HTML cannot make the proxy buffer it.
MAX_ERROR_BODY_BYTES = 64 * 1024
CLIENT_ERROR = 400  # where HTTP's 4xx statuses begin
MULTIPLE_CHOICES = 300  # where the 3xx redirects begin
NOT_MODIFIED = 304
# Closing an upstream response after the client left must not hang the proxy's cleanup.
CLOSE_TIMEOUT_SECONDS = 5.0

Item = TypeVar("Item")

logger = logging.getLogger(__name__)


@contextmanager
def deadline_scope(deadline: float) -> Iterator[None]:
    """`asyncio.timeout_at(deadline)` (`deadline` on the loop's clock), as an anyio cancel
    scope: TimeoutError once it passes.

    Every cancellation that can land inside httpx must be anyio's. httpcore gives a
    connection back to its pool (after a response ends or fails, or a connect is abandoned)
    in code shielded by anyio cancel scopes; a native asyncio cancellation (`task.cancel()`,
    `asyncio.timeout`) ignores those shields, and one landing at their awaits leaves the
    connection checked out of the pool for good, its socket open. Under CPU contention that
    is where timers and departing clients land, until the pool is empty and every request
    waits for a connection that never comes back. An anyio cancellation is held back until
    the shielded code is done."""
    with anyio.fail_after(deadline - anyio.current_time()):
        yield


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """How much of an upstream body the proxy holds in memory at once (see the settings)."""

    max_line_bytes: int  # one line of an event stream
    max_body_bytes: int  # a whole body read at once, after decompression


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default context for verifying upstream servers (certifi's CA bundle, or
    SSL_CERT_FILE / SSL_CERT_DIR), made once per process: loading the bundle takes about
    25 ms of CPU, which every app built in the process (a test's every proxy) would spend
    again, 5x what the rest of starting one costs."""
    return httpx.create_ssl_context()


class NoCookies(CookiePolicy):
    """Every cookie refused, kept or sent. The one client serves every user of the proxy: a
    cookie one upstream answer set (a session, a load balancer's affinity) would otherwise go
    out with every later request, whoever sent it."""

    netscape = True
    rfc2965 = False
    hide_cookie2 = False

    def set_ok(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        return False

    def return_ok(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        return False

    def domain_return_ok(self, domain: str, request: urllib.request.Request) -> bool:
        return False

    def path_return_ok(self, path: str, request: urllib.request.Request) -> bool:
        return False


def build_client(
    *,
    connect_timeout: float,
    read_timeout: float,
    max_connections: int,
    client_of: Callable[..., httpx.AsyncClient] = httpx.AsyncClient,
) -> httpx.AsyncClient:
    """The proxy's one client: a sized pool, and timeouts per connect and between bytes; it
    keeps no cookie, and follows no redirect (a client's key must go to the upstream
    configured, nowhere else). `client_of`: makes it from httpx's options (OpenTelemetry's
    watches every exchange)."""
    return client_of(
        verify=tls_context(),
        cookies=CookieJar(NoCookies()),
        timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
        limits=httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        ),
        follow_redirects=False,
    )


class UpstreamStream:
    """An upstream response whose status was 2xx and whose body is still to be read.

    The owner must close it in `finally`, whatever happens to the client:

        stream = await upstream.open_stream("POST", url, headers=headers, content=body)
        try:
            async for payload in stream.data_payloads():
                ...
        finally:
            await stream.aclose()
    """

    def __init__(
        self,
        response: httpx.Response,
        deadline: float,
        metrics: ProxyMetrics,
        started: float,
        limits: ReadLimits,
        *,
        held_whole: bool = False,
    ) -> None:
        self.response = response
        self._deadline = deadline
        self._metrics = metrics
        self._limits = limits
        self._held_whole = held_whole
        self._started: float | None = started  # None once the duration is recorded

    @property
    def status_code(self) -> int:
        return self.response.status_code

    def seconds_left(self) -> float:
        """Until the exchange's total deadline (negative once it has passed)."""
        return self._deadline - anyio.current_time()

    @property
    def headers(self) -> httpx.Headers:
        return self.response.headers

    async def raw_chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes exactly as they came (no decompression)."""
        async for chunk in self._before_deadline(self.response.aiter_raw()):
            yield chunk

    async def data_payloads(self) -> AsyncIterator[str]:
        """The payloads of the (decoded) event stream's `data:` lines; its lines split at
        CR, LF and CRLF only, each bounded. A stream its reader holds whole (`held_whole`)
        is bounded as a whole body is, by `max_body_bytes`."""
        splitter = LineSplitter(self._limits.max_line_bytes)
        left = self._limits.max_body_bytes
        async for chunk in self._before_deadline(decoded_body(self.response)):
            if self._held_whole:
                left -= len(chunk)
                if left < 0:
                    raise self._too_large()
            try:
                lines = splitter.feed(chunk)
            except ProxyError:
                self.failed(UpstreamFailure.BAD_RESPONSE)
                raise
            for payload in data_payloads(lines):
                yield payload
        for payload in data_payloads(splitter.finish()):
            yield payload

    async def read_body(self) -> bytes:
        """The whole (decoded) body; past `max_body_bytes` (a decompression bomb, a runaway
        upstream) a 502 instead. The bound is checked per decoded piece, so memory peaks at
        the bound plus a piece (see `decoding`)."""
        body = bytearray()
        async for chunk in self._before_deadline(decoded_body(self.response)):
            body += chunk
            if len(body) > self._limits.max_body_bytes:
                raise self._too_large()
        return bytes(body)

    def _too_large(self) -> ProxyError:
        """Count the body past `max_body_bytes`, and make it the client's error."""
        self.failed(UpstreamFailure.BAD_RESPONSE)
        limit = self._limits.max_body_bytes
        return ProxyError(
            502,
            f"upstream body exceeds {limit} bytes",
            error_type=UPSTREAM_ERROR,
            code="upstream_body_too_large",
        )

    async def _before_deadline(self, source: AsyncIterator[Item]) -> AsyncIterator[Item]:
        # The deadline wraps each read only, never a `yield`: a timeout must not fire while
        # the consumer is busy sending to the client. While the deadline is further away
        # than the read timeout, which already bounds every network read, no timer is set:
        # a timer per line cost more than the rest of the streaming path together.
        loop = asyncio.get_running_loop()
        read_timeout = self.response.request.extensions.get("timeout", {}).get("read")
        try:
            while True:
                try:
                    if read_timeout is not None and self._deadline - loop.time() > read_timeout:
                        item = await anext(source)
                    else:
                        with deadline_scope(self._deadline):
                            item = await anext(source)
                except StopAsyncIteration:
                    await self.aclose()  # read to its end: done now, not when the owner is
                    return
                yield item
        except UPSTREAM_FAILURES as exc:
            self._metrics.upstream_errors.labels(failure_kind(exc, mid_stream=True)).inc()
            raise upstream_failure(exc) from exc

    def json_object(self, body: bytes) -> dict[str, Any]:
        """`body` decoded as the JSON object it must be; anything else is a counted 502."""
        try:
            answer = json_value(body)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            self.failed(UpstreamFailure.BAD_RESPONSE)
            raise ProxyError(
                502,
                "upstream answered with a body that is not a JSON object",
                error_type=UPSTREAM_ERROR,
                code="upstream_bad_response",
            )
        return answer

    def failed(self, kind: UpstreamFailure) -> None:
        """Count a failure its reader found in the body (an error event, a garbled chunk)."""
        self._metrics.upstream_errors.labels(kind).inc()

    async def aclose(self) -> None:
        """Idempotent: the owner's `finally` may follow a read to the end."""
        if self._started is not None:
            self._metrics.upstream_duration.observe(time.perf_counter() - self._started)
            self._started = None
        if self.response.is_closed:
            return  # the shielded scope below costs more than the rest of a close
        # Shielded: this runs while the client's cancellation is being delivered.
        with anyio.move_on_after(CLOSE_TIMEOUT_SECONDS, shield=True):
            await self.response.aclose()


class Upstream:
    """Requests to the upstream, each bounded by the total timeout.

    >>> upstream = Upstream(client, total_timeout=600, metrics=metrics, limits=limits)
    >>> answer = await upstream.request_json("POST", url, headers=headers, content=body)
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        total_timeout: float,
        metrics: ProxyMetrics,
        limits: ReadLimits,
    ) -> None:
        self.client = client
        self._total_timeout = total_timeout
        self._metrics = metrics
        self._hinted: set[str] = set()
        self._redirecting: set[bytes] = set()  # upstream servers whose redirect was logged
        # Upstream servers whose last request failed before an answer: each is logged once
        # as it starts failing, not once per request, and again once it answers.
        self._failing: set[bytes] = set()
        self._limits = limits

    async def request_json(
        self,
        method: str,
        url: str | httpx.URL,
        *,
        headers: HeaderPairs,
        content: bytes | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send, return the decoded JSON object answer; any failure raises `ProxyError`."""
        stream = await self.open_stream(
            method, url, headers=headers, content=content, timeout=timeout
        )
        try:
            body = await stream.read_body()
        finally:
            await stream.aclose()
        return stream.json_object(body)

    async def open_stream(
        self,
        method: str,
        url: str | httpx.URL,
        *,
        headers: HeaderPairs,
        content: bytes | AsyncIterator[bytes] | None = None,
        timeout: float | None = None,
        held_whole: bool = False,
    ) -> UpstreamStream:
        """Send the request and wait for a 2xx status; a 4xx/5xx raises with its error body.
        `timeout` bounds the whole exchange (default: the total timeout); `held_whole`: the
        reader keeps all of the body however it reads it (see `UpstreamStream.data_payloads`)."""
        started = time.perf_counter()
        deadline = asyncio.get_running_loop().time() + (
            self._total_timeout if timeout is None else timeout
        )
        request = self.client.build_request(method, url, headers=headers, content=content)
        try:
            with deadline_scope(deadline):
                response = await self.client.send(request, stream=True)
        except UPSTREAM_FAILURES as exc:
            self._metrics.upstream_duration.observe(time.perf_counter() - started)
            raise self._failure(exc, request.url) from exc
        if self._failing:
            self._answered(request.url)
        stream = UpstreamStream(
            response, deadline, self._metrics, started, self._limits, held_whole=held_whole
        )
        if _is_redirect(response.status_code):
            stream.failed(UpstreamFailure.STATUS)
            await stream.aclose()
            raise self._redirected(response)
        if response.status_code < CLIENT_ERROR:
            return stream
        stream.failed(UpstreamFailure.STATUS)
        try:
            with deadline_scope(deadline):
                error_bytes = await _read_prefix(stream.response, MAX_ERROR_BODY_BYTES)
        except TimeoutError:
            error_bytes = b""
        finally:
            await stream.aclose()
        raise self._status_error(
            response.status_code, error_bytes, str(url), response.headers.get(RETRY_AFTER)
        )

    def _redirected(self, response: httpx.Response) -> ProxyError:
        """A redirect, which is never followed: logged with where it leads (once per server),
        the client told only that it came. Relayed, its `Location` would show the upstream's
        addresses, and a client that follows it would send its key there."""
        server = response.request.url.netloc
        location = response.headers.get("location")
        if server not in self._redirecting:
            self._redirecting.add(server)
            logger.warning(
                "upstream answered %d at %s, leading to %s; the proxy follows no redirect:"
                " set the upstream's base URL to where it leads",
                response.status_code,
                shown_url(response.request.url),
                "nowhere" if location is None else shown_url(response.request.url.join(location)),
            )
        return ProxyError(
            502,
            f"upstream answered {response.status_code} (a redirect, which the proxy does not"
            " follow)",
            error_type=UPSTREAM_ERROR,
            code="upstream_redirect",
        )

    def _status_error(
        self, status: int, body: bytes, url: str, retry_after: str | None
    ) -> UpstreamStatusError:
        hint = missing_v1_hint(status, url)
        server = urlsplit(url).netloc
        if hint is not None and server not in self._hinted:  # once per upstream server
            self._hinted.add(server)
            logger.warning("upstream answered 404 at %s: %s", url, hint)
        return UpstreamStatusError(status, body, hint=hint, retry_after=retry_after)

    def _failure(self, exc: BaseException, url: httpx.URL) -> ProxyError:
        """Count a failure before the status came, log the server's first, and make it the
        client's error."""
        self._metrics.upstream_errors.labels(failure_kind(exc, mid_stream=False)).inc()
        failure = upstream_failure(exc)
        if url.netloc not in self._failing:
            self._failing.add(url.netloc)
            logger.warning("%s at %s", failure.message, shown_url(url))
        return failure

    def _answered(self, url: httpx.URL) -> None:
        if url.netloc in self._failing:
            self._failing.discard(url.netloc)
            logger.info("upstream at %s answers again", shown_url(url))


def _is_redirect(status: int) -> bool:
    """Every 3xx but 304 (which answers a client's conditional request): not only httpx's
    five with a Location. A 300 or 305 relayed would show where the upstream points, and a
    chat answer read from one would be an empty 200."""
    return MULTIPLE_CHOICES <= status < CLIENT_ERROR and status != NOT_MODIFIED


async def _read_prefix(response: httpx.Response, limit: int) -> bytes:
    """Up to `limit` bytes of the (decoded) body; an error there yields what was read."""
    body = bytearray()
    try:
        async for chunk in decoded_body(response):
            body += chunk
            if len(body) >= limit:
                break
    except (httpx.HTTPError, httpx.StreamError):
        pass  # the status is the news; a broken error body is only less detail
    return bytes(body[:limit])

"""Relayed `/v1/*` requests stay under the upstream's base path: the upstream URL is built
from the path as it came on the wire, and a path that could climb out of the base path (or
mean something else to the upstream) is refused before anything is sent with the key."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from raw_http import exchange, get
from servers import StartProxy, serve
from starlette.types import Receive, Scope, Send

BASE_PATH = "/tenant-a/v1"
UPSTREAM_KEY = "upstream-key"


@dataclass(frozen=True)
class Seen:
    method: str
    raw_path: bytes
    query: bytes
    headers: dict[str, str]


class RecordingUpstream:
    """Answers every request with `{}` and records the path exactly as it arrived."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.seen.append(Seen(scope["method"], scope["raw_path"], scope["query_string"], headers))
        response_headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": response_headers})
        await send({"type": "http.response.body", "body": b"{}"})


@pytest.fixture
def recording() -> RecordingUpstream:
    return RecordingUpstream()


@pytest.fixture
def upstream_url(recording: RecordingUpstream) -> Iterator[str]:
    with serve(recording) as url:
        yield url + BASE_PATH


@pytest.fixture
def proxy_url(start_proxy: StartProxy) -> str:
    return start_proxy(upstream_api_key=UPSTREAM_KEY).url


@pytest.mark.parametrize(
    "path",
    [
        b"/v1/..%2f..%2fadmin",
        b"/v1/../../admin",
        b"/v1/%2e%2E/%2E./api/delete",
        b"/v1/files/./../../admin",
        b"/v1/files/..",
        b"/v1/files%2Fa",
        b"/v1/files%2fa",
        b"/v1/files%3fpurpose=x",
        b"/v1/files%23frag",
        b"/v1/a%00b",
        b"/v1/a%0d%0aX-Injected:%201",
        b"/v1/a%7f",
    ],
)
def test_path_that_could_leave_the_base_path_is_refused_unsent(
    recording: RecordingUpstream, proxy_url: str, path: bytes
) -> None:
    reply = exchange(proxy_url, get(path))

    assert reply.status == 400
    assert reply.json["error"]["type"] == "invalid_request_error"
    assert reply.json["error"]["code"] == "invalid_path"
    assert recording.seen == []


def test_other_escapes_and_the_query_reach_the_upstream_unchanged(
    recording: RecordingUpstream, proxy_url: str
) -> None:
    reply = exchange(proxy_url, get(b"/v1/files/a%ff%20b%2e/c..d?limit=2&after=%ff%2F"))

    assert reply.status == 200
    [seen] = recording.seen
    assert seen.raw_path == BASE_PATH.encode() + b"/files/a%ff%20b%2e/c..d"
    assert seen.query == b"limit=2&after=%ff%2F"
    assert seen.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"


def test_headers_named_in_connection_are_not_forwarded(
    recording: RecordingUpstream, proxy_url: str
) -> None:
    request = get(
        b"/v1/files",
        b"Connection: X-Tenant-Secret, keep-alive",
        b"X-Tenant-Secret: s3cret",
        b"X-Kept: yes",
    )

    assert exchange(proxy_url, request).status == 200

    [seen] = recording.seen
    assert "x-tenant-secret" not in seen.headers
    assert seen.headers["x-kept"] == "yes"

"""The one upstream client serves every user of the proxy, so it carries nothing from one
exchange to the next: no cookie an upstream set is kept or sent again, and no redirect is
followed (a client's key goes to the upstream configured, nowhere else)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from servers import MODEL, WEATHER_TOOL, StartProxy, chat_body, http_client, serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from upstream_server import Reply, ScriptedUpstream, Verbatim, completion_body

SESSION_COOKIE = "session=alice-only; Path=/"
UPSTREAM_KEY = "upstream-key"


def with_cookie(reply: Reply) -> Verbatim:
    """`reply` as a whole answer that also sets a cookie, as a session-keeping server does."""
    body = json.dumps(completion_body(reply, MODEL)).encode()
    return Verbatim(
        body, headers={"content-type": "application/json", "set-cookie": SESSION_COOKIE}
    )


def test_a_cookie_set_in_one_users_answer_never_goes_upstream_again(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    upstream.script(with_cookie(Reply("Hi Alice")), Reply("Hi Bob"))
    proxy = start_proxy()

    for user, body in (("alice", chat_body()), ("bob", chat_body(stream=True))):
        with http_client(base_url=proxy.url) as client:  # each user's own, holding nothing
            headers = {"authorization": f"Bearer {user}-key"}
            assert client.post("/v1/chat/completions", json=body, headers=headers).is_success
    with http_client(base_url=proxy.url) as client:
        assert client.get("/v1/models").is_success

    assert [request.path for request in upstream.requests] == [
        "/v1/chat/completions",
        "/v1/chat/completions",
        "/v1/models",
    ]
    assert [request.headers.get("cookie") for request in upstream.requests] == [None] * 3


@pytest.fixture
def elsewhere() -> Iterator[tuple[ScriptedUpstream, str]]:
    """Another server (another port: another origin) that records what reaches it."""
    other = ScriptedUpstream()
    with serve(other.app) as url:
        yield other, url


@pytest.fixture(params=[300, 301, 305, 307, 308])
def redirecting_url(
    elsewhere: tuple[ScriptedUpstream, str], request: pytest.FixtureRequest
) -> Iterator[str]:
    """An upstream that answers every request with a redirect to `elsewhere`: httpx's five
    redirects and the 3xx statuses it does not take for one (300, 305)."""
    _other, other_url = elsewhere
    status = request.param

    async def moved(request: Request) -> Response:
        return RedirectResponse(other_url + request.url.path, status_code=status)

    app = Starlette(routes=[Route("/{path:path}", moved, methods=["GET", "POST"])])
    with serve(app) as url:
        yield url + "/v1"


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/chat/completions", chat_body()),
        ("POST", "/v1/chat/completions", chat_body(stream=True)),
        ("POST", "/v1/chat/completions", chat_body(WEATHER_TOOL)),
        ("GET", "/v1/models", None),
    ],
    ids=["relayed", "relayed-sse", "with-tool", "passthrough"],
)
def test_a_redirect_is_a_502_and_never_followed_with_the_key(
    start_proxy: StartProxy,
    elsewhere: tuple[ScriptedUpstream, str],
    redirecting_url: str,
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    body: dict[str, Any] | None,
) -> None:
    other, other_url = elsewhere
    proxy = start_proxy(upstream_base_url=redirecting_url, upstream_api_key=UPSTREAM_KEY)

    answer = proxy.http.request(method, path, json=body)

    assert answer.status_code == 502, answer.text
    assert answer.json()["error"]["code"] == "upstream_redirect"
    assert other_url not in answer.text and "location" not in answer.headers
    assert other.requests == []
    assert f"leading to {other_url}{path}" in caplog.text


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_3xx_without_a_location_is_no_empty_answer(start_proxy: StartProxy, stream: bool) -> None:
    """An upstream's 300 holds no completion: read as one, it was an empty 200."""

    async def choices(request: Request) -> Response:
        return Response(status_code=300, content=b"{}", media_type="application/json")

    with serve(Starlette(routes=[Route("/{path:path}", choices, methods=["POST"])])) as url:
        proxy = start_proxy(upstream_base_url=url + "/v1")
        answer = proxy.http.post("/v1/chat/completions", json=chat_body(stream=stream))

    assert answer.status_code == 502, answer.text
    assert answer.json()["error"]["code"] == "upstream_redirect"


def test_a_not_modified_without_a_location_is_no_redirect(start_proxy: StartProxy) -> None:
    """Only a redirect (a 3xx with a Location) is refused: an upstream's 304 to a client's
    conditional request reaches the client as it came."""

    async def not_modified(request: Request) -> Response:
        return Response(status_code=304, headers={"etag": '"models-1"'})

    with serve(Starlette(routes=[Route("/{path:path}", not_modified)])) as url:
        proxy = start_proxy(upstream_base_url=url + "/v1")
        answer = proxy.http.get("/v1/models/test-model", headers={"if-none-match": '"models-1"'})

    assert answer.status_code == 304
    assert answer.headers["etag"] == '"models-1"'

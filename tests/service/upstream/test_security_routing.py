"""UPSTREAM_API_KEY goes only to the default upstream's origin: a route to another server
gets it only by naming its own key (`api_key_env`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import StartProxy, chat_body, serve
from upstream_server import Reply, ScriptedUpstream

UPSTREAM_KEY = "default-upstream-key"


@pytest.fixture
def other_upstream() -> ScriptedUpstream:
    return ScriptedUpstream()


@pytest.fixture
def other_url(other_upstream: ScriptedUpstream) -> Iterator[str]:
    with serve(other_upstream.app) as url:  # another port: another origin
        yield url + "/v1"


def routes_file(tmp_path: Path, **routes: dict[str, str]) -> Path:
    path = tmp_path / "routes.json"
    path.write_text(json.dumps({"routes": routes}))
    return path


def test_route_to_another_server_does_not_get_the_default_key(
    tmp_path: Path, start_proxy: StartProxy, other_upstream: ScriptedUpstream, other_url: str
) -> None:
    other_upstream.script(Reply("Hi"))
    routes = routes_file(tmp_path, elsewhere={"base_url": other_url})
    proxy = start_proxy(upstream_api_key=UPSTREAM_KEY, routes_file=routes)

    response = proxy.http.post("/v1/chat/completions", json=chat_body(model="elsewhere"))

    assert response.status_code == 200
    [sent] = other_upstream.chat_requests
    assert "authorization" not in sent.headers


def test_route_naming_its_own_key_sends_that_key(
    tmp_path: Path,
    start_proxy: StartProxy,
    other_upstream: ScriptedUpstream,
    other_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ELSEWHERE_KEY", "elsewhere-key")
    other_upstream.script(Reply("Hi"))
    routes = routes_file(
        tmp_path, elsewhere={"base_url": other_url, "api_key_env": "ELSEWHERE_KEY"}
    )
    proxy = start_proxy(upstream_api_key=UPSTREAM_KEY, routes_file=routes)

    proxy.http.post("/v1/chat/completions", json=chat_body(model="elsewhere"))

    [sent] = other_upstream.chat_requests
    assert sent.headers["authorization"] == "Bearer elsewhere-key"


def test_route_on_the_default_upstream_keeps_the_default_key(
    tmp_path: Path, start_proxy: StartProxy, upstream: ScriptedUpstream, upstream_url: str
) -> None:
    upstream.script(Reply("Hi"))
    routes = routes_file(tmp_path, renamed={"base_url": upstream_url, "model": "big"})
    proxy = start_proxy(upstream_api_key=UPSTREAM_KEY, routes_file=routes)

    proxy.http.post("/v1/chat/completions", json=chat_body(model="renamed"))

    [sent] = upstream.chat_requests
    assert sent.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"

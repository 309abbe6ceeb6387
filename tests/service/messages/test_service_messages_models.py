"""`GET /v1/models` for Anthropic's clients (Claude Code's gateway model discovery): the
models the proxy lists, routes and their aliases included, in Anthropic's Models API shape,
read by the official anthropic SDK; OpenAI's clients still get OpenAI's list."""

from __future__ import annotations

from pathlib import Path

import pytest
from messages_client import anthropic_client, create
from servers import StartProxy
from upstream_server import Reply, ScriptedUpstream

from service.upstream import RoutesFileError, Target, load_routes

ROUTES = """
[routes.coder]
model = "qwen2.5-coder-7b"
aliases = ["claude-local-coder", "anthropic-coder"]
"""


def test_the_sdk_lists_the_routes_and_their_aliases_in_anthropics_shape(
    upstream: ScriptedUpstream, start_proxy: StartProxy, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    proxy = start_proxy(routes_file=str(routes))

    with anthropic_client(proxy) as client:
        page = client.models.list(limit=1000)
        one = client.models.retrieve("claude-local-coder")

    ids = [model.id for model in page.data]
    assert ids == ["upstream-model", "coder", "claude-local-coder", "anthropic-coder"]
    assert all(model.type == "model" and model.display_name for model in page.data)
    assert page.has_more is False and page.first_id == "upstream-model"
    assert one.id == "claude-local-coder"


def test_an_alias_is_answered_by_its_route(
    upstream: ScriptedUpstream, start_proxy: StartProxy, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    proxy = start_proxy(routes_file=str(routes))
    upstream.script(Reply("Hi."))

    create(proxy, False, model="claude-local-coder")

    assert upstream.chat_requests[0].json["model"] == "qwen2.5-coder-7b"


def test_openais_clients_still_get_openais_list(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy()

    listed = proxy.client.models.list()

    assert [model.id for model in listed.data] == ["upstream-model"]
    assert listed.data[0].object == "model"


@pytest.mark.parametrize(
    "text",
    [
        '[routes.a]\naliases = ["b"]\n[routes.b]\n',
        '[routes.a]\naliases = ["c"]\n[routes.b]\naliases = ["c"]\n',
        '[routes.a]\naliases = "claude-a"\n',
    ],
)
def test_an_alias_that_names_another_route_or_is_no_list_stops_the_start(
    text: str, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(text)

    with pytest.raises(RoutesFileError):
        load_routes(routes, Target("http://127.0.0.1:1/v1", None, "json-mix", None))

"""An upstream that fails before it answers is explained where each reader looks: the client's
error keeps httpx's own words for the failure, and the operator's log names the upstream's URL
(without its credentials) once as it starts failing, not once per request, and once when it
answers again."""

from __future__ import annotations

import logging
import socket

import pytest
from servers import WEATHER_TOOL, StartProxy, chat_body, serve
from upstream_server import Reply, ScriptedUpstream

CLIENT_LOGGER = "service.upstream.client"


def test_an_unreachable_upstream_is_explained_and_named_once_until_it_answers(
    start_proxy: StartProxy, upstream: ScriptedUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, not listening: every connection is refused
        port = sock.getsockname()[1]
        proxy = start_proxy(upstream_base_url=f"http://user:secret@127.0.0.1:{port}/v1")
        body = chat_body(WEATHER_TOOL)

        with caplog.at_level(logging.INFO, logger=CLIENT_LOGGER):
            failed = [proxy.http.post("/v1/chat/completions", json=body) for _ in range(3)]
            with serve(upstream.app, sock=sock):  # the upstream comes up on that address
                upstream.script(Reply("Sunny."), Reply("Still sunny."))
                answered = [proxy.http.post("/v1/chat/completions", json=body) for _ in range(2)]

    assert [response.status_code for response in failed] == [502, 502, 502]
    error = failed[0].json()["error"]
    assert error["code"] == "upstream_unreachable"
    assert error["message"] == "upstream unreachable (ConnectError: All connection attempts failed)"
    assert [response.status_code for response in answered] == [200, 200]
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    logged = [record.getMessage() for record in caplog.records if record.name == CLIENT_LOGGER]
    assert logged == [f"{error['message']} at {url}", f"upstream at {url} answers again"]

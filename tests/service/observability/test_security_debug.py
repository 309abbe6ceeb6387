"""DEBUG_PARSER_MW shows model text escaped: a model cannot drive the operator's terminal
(ESC, the C1 CSI, BEL, CR) nor forge a log line of its own with a newline."""

from __future__ import annotations

import re

import pytest
from observability import caught_logs
from servers import WEATHER_TOOL, StartProxy, chat_body
from upstream_server import WEATHER_CALL, Reply, ScriptedUpstream

REQUEST_ID = "debug-1"
FORGED = f"[{REQUEST_ID}] parse summary (json-mix)"
HOSTILE_TEXT = f"ok\x1b]0;owned\x07\x1b[2J\rgone\x9b31m\u2028\n{FORGED}\n"
TERMINAL_CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")


@pytest.mark.parametrize("mode", ["stream", "parse"])
def test_model_text_reaches_the_debug_log_escaped(
    upstream: ScriptedUpstream, start_proxy: StartProxy, mode: str, stream: bool
) -> None:
    upstream.script(Reply(HOSTILE_TEXT, WEATHER_CALL["json-mix"], ascii_only=False))
    proxy = start_proxy(debug_parser_mw=mode)

    with caught_logs("toolcall_proxy.debug") as debug:
        response = proxy.http.post(
            "/v1/chat/completions",
            json=chat_body(WEATHER_TOOL, stream=stream),
            headers={"x-request-id": REQUEST_ID},
        )

    assert response.status_code == 200
    assert debug.messages
    for message in debug.messages:
        assert not TERMINAL_CONTROLS.search(message), message
        first, *more = message.split("\n")
        assert first.startswith(f"[{REQUEST_ID}] ")
        assert not any(line.startswith(FORGED) for line in more), message

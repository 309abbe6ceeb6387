"""DEBUG_PARSER_MW: what each mode writes to the `toolcall_proxy.debug` logger while a real
request goes through the served proxy, and how the parse summary highlights call segments
on a terminal (a real pseudo-terminal as stderr) and without one."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from observability import caught_logs
from servers import TIME_TOOL, WEATHER_TOOL, Proxy, StartProxy, chat_body
from upstream_server import TIME_CALL, WEATHER_CALL, Reply, ScriptedUpstream

from service.observability.log_config import CONTINUATION

DEBUG_LOGGER = "toolcall_proxy.debug"
REQUEST_ID = "debug-1"
CALL = WEATHER_CALL["json-mix"]
BROKEN_CALL = "<tool_call>this is not json</tool_call>"


def indented(text: str) -> str:
    """Model text as the parse summary shows it: each line break starts an indented line."""
    return text.replace("\n", CONTINUATION)


# The SGR codes each highlight style must use, and the reset after a segment.
STYLE_CODES = {
    "bg": "\x1b[30;43m",
    "inverse": "\x1b[7m",
    "underline": "\x1b[4m",
    "bold": "\x1b[1m",
}
RESET = "\x1b[0m"


def debug_lines(proxy: Proxy, *, stream: bool = True) -> list[str]:
    """What the debug logger wrote while `proxy` answered one weather question."""
    with caught_logs(DEBUG_LOGGER) as debug:
        response = proxy.http.post(
            "/v1/chat/completions",
            json=chat_body(WEATHER_TOOL, stream=stream),
            headers={"x-request-id": REQUEST_ID},
        )
    assert response.status_code == 200
    return debug.messages


def summary_of(lines: list[str]) -> str:
    [summary] = [line for line in lines if line.startswith(f"[{REQUEST_ID}] parse summary")]
    return summary


@contextmanager
def terminal_as_stderr(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Within the block stderr is a real pseudo-terminal. Entered in the test's body: pytest
    puts its own capture back on sys.stderr between a fixture's setup and the test."""
    controller, terminal = os.openpty()
    try:
        with open(terminal, "w") as tty, monkeypatch.context() as patch:
            patch.setattr(sys, "stderr", tty)
            yield
    finally:
        os.close(controller)


def test_off_writes_nothing(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    upstream.script(Reply("Let me check.", CALL))

    assert debug_lines(proxy) == []


def test_stream_mode_logs_raw_chunks_parts_and_client_events_but_no_summary(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(debug_parser_mw="stream")
    upstream.script(Reply("Let me check.", CALL))

    lines = debug_lines(proxy)

    assert all(line.startswith(f"[{REQUEST_ID}] ") for line in lines)
    upstream_chunks = [line for line in lines if line.startswith(f"[{REQUEST_ID}] upstream {{")]
    assert any('"content": "Let me check."' in line for line in upstream_chunks)
    assert f"[{REQUEST_ID}] part ToolCallStart(" in "\n".join(lines)
    client = [line for line in lines if line.startswith(f"[{REQUEST_ID}] client ")]
    assert any('"finish_reason":"tool_calls"' in line for line in client)
    assert not any("parse summary" in line for line in lines)


def test_parse_mode_summary_marks_the_call_segment_and_lists_the_parsed_call(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    proxy = start_proxy(debug_parser_mw="parse")
    upstream.script(Reply("Let me check. ", CALL))

    summary = summary_of(debug_lines(proxy, stream=stream))

    assert summary == "\n".join(
        [
            f"[{REQUEST_ID}] parse summary (json-mix)",
            "--- model text (tool-call segments marked) ---",
            f"Let me check. [[{indented(CALL)}]]",
            "--- parsed tool calls ---",
            'get_weather {"city": "Paris"}',
            "--- parse errors ---",
            "(none)",
        ]
    )


def test_parse_mode_summary_shows_parse_errors_with_their_original_text(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(debug_parser_mw="parse")
    upstream.script(Reply(BROKEN_CALL, " then ", CALL))

    summary = summary_of(debug_lines(proxy))

    text_and_calls, errors = summary.split("--- parse errors ---\n")
    assert f"{BROKEN_CALL} then [[{indented(CALL)}]]" in text_and_calls
    assert errors.startswith("malformed_json: ")
    assert errors.endswith(f'  original: "{BROKEN_CALL}"')


def test_a_call_read_but_not_sent_is_logged_with_why(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    proxy = start_proxy(debug_parser_mw="stream")
    # One call an answer: a whole answer's later calls are read, and kept from the client.
    upstream.script(Reply(CALL, "\n" + CALL, "\n" + TIME_CALL["json-mix"]))
    body = chat_body(WEATHER_TOOL, TIME_TOOL, stream=stream, parallel_tool_calls=False)

    with caught_logs(DEBUG_LOGGER) as debug:
        response = proxy.http.post(
            "/v1/chat/completions", json=body, headers={"x-request-id": REQUEST_ID}
        )
    assert response.status_code == 200

    not_sent = [line for line in debug.messages if line.startswith(f"[{REQUEST_ID}] not sent")]
    if stream:  # the answer ended at its first call: the rest was never read
        assert not_sent == []
    else:
        assert not_sent == [
            f"[{REQUEST_ID}] not sent get_weather: one call an answer",
            f"[{REQUEST_ID}] not sent get_time: one call an answer",
        ]


@pytest.mark.parametrize("style", STYLE_CODES)
def test_on_a_terminal_each_style_wraps_the_segment_in_its_escape_codes(
    upstream: ScriptedUpstream, start_proxy: StartProxy, monkeypatch: pytest.MonkeyPatch, style: str
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    with terminal_as_stderr(monkeypatch):
        proxy = start_proxy(debug_parser_mw="parse", debug_parser_mw_style=style)
    upstream.script(Reply("Let me check. ", CALL))

    summary = summary_of(debug_lines(proxy))

    assert f"Let me check. {STYLE_CODES[style]}{indented(CALL)}{RESET}" in summary
    assert "[[" not in summary


def test_no_color_keeps_plain_markers_even_on_a_terminal(
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    with terminal_as_stderr(monkeypatch):
        proxy = start_proxy(debug_parser_mw="parse")
    upstream.script(Reply("Let me check. ", CALL))

    summary = summary_of(debug_lines(proxy))

    assert f"Let me check. [[{indented(CALL)}]]" in summary
    assert "\x1b[" not in summary


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [
        ("debug_parser_mw", "verbose", "off, stream, parse"),
        ("debug_parser_mw_style", "blink", "bg, inverse, underline, bold"),
    ],
)
def test_unknown_value_is_warned_about_and_falls_back_to_the_default(
    caplog: pytest.LogCaptureFixture, variable: str, value: str, allowed: str
) -> None:
    from service.settings import Settings

    with caplog.at_level(logging.WARNING):
        settings = Settings(**{variable: value})

    assert getattr(settings, variable) == Settings.model_fields[variable].default
    assert f"{variable.upper()}='{value}' is not one of {allowed}" in caplog.text

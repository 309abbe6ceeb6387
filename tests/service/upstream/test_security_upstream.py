"""What the upstream sends is checked where it enters: lines split where SSE splits them and
bounded in length, whole bodies bounded after decompression, chunks of the wrong shape and
streams cut short answered with a clear upstream error, never invalid JSON or "stop"."""

from __future__ import annotations

import gzip
import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from servers import MODEL, WEATHER_TOOL, Proxy, StartProxy, chat_body, read_events
from upstream_server import CREATED, Reply, ScriptedUpstream, Verbatim

from service.wire.errors import ProxyError
from service.wire.sse import LineSplitter

# Every line break that is not one in SSE, as servers using serde or pydantic send them raw.
NOT_LINE_BREAKS = "one\u2028two\u2029three\u0085four\x0bfive\x0csix"
SMALL_LIMIT = 4096
SSE_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


def sse(chunk: dict[str, Any], end: bytes = b"\n\n") -> bytes:
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + end


def chunk(delta: dict[str, Any], finish_reason: str | None = None, end: bytes = b"\n\n") -> bytes:
    body = {
        "id": "chatcmpl-raw",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return sse(body, end)


def stream_events(proxy: Proxy) -> list[Any]:
    """The events of a streamed chat with a tool: each must be valid JSON (or [DONE])."""
    return proxy.events(chat_body(WEATHER_TOOL, stream=True))


def error_code(events: list[Any]) -> str:
    """The code of the error event the stream ended with (it must end with one)."""
    assert events[-1] != "[DONE]", events
    return str(events[-1]["error"]["code"])


def streamed_text(events: list[Any]) -> str:
    assert events[-1] == "[DONE]", events
    return "".join(
        choice["delta"].get("content") or "" for event in events[:-1] for choice in event["choices"]
    )


def test_raw_unicode_line_separators_stay_inside_the_content(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("It is ", NOT_LINE_BREAKS, ascii_only=False))

    assert streamed_text(stream_events(proxy)) == "It is " + NOT_LINE_BREAKS


def test_lines_ending_in_a_lone_cr_or_crlf_are_events_too(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(
        Verbatim(
            chunk({"role": "assistant", "content": ""}, end=b"\r\r"),
            chunk({"content": "Sunny"}, end=b"\r\n\r\n")[:-1],  # CRLF split over two pieces
            b"\n" + chunk({}, "stop", end=b"\r\r"),
            b"data: [DONE]\r\r",
        )
    )

    assert streamed_text(stream_events(proxy)) == "Sunny"


def test_line_past_the_limit_ends_the_stream_with_an_upstream_error(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    endless_line = [b"data: " + b"x" * 1024] + [b"x" * 1024] * (SMALL_LIMIT // 1024 + 1)
    upstream.script(Verbatim(chunk({"role": "assistant", "content": ""}), *endless_line))
    proxy = start_proxy(upstream_max_line_bytes=SMALL_LIMIT)

    events = stream_events(proxy)

    assert error_code(events) == "upstream_line_too_long"
    assert events[-1]["error"]["type"] == "upstream_error"


def test_body_inflating_past_the_limit_is_a_502(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    inflated = json.dumps({"id": "x", "choices": [], "padding": "0" * 64 * SMALL_LIMIT})
    bomb = gzip.compress(inflated.encode())
    assert len(bomb) < SMALL_LIMIT
    upstream.script(
        Verbatim(bomb, headers={"content-type": "application/json", "content-encoding": "gzip"})
    )
    proxy = start_proxy(upstream_max_body_bytes=SMALL_LIMIT)

    response = proxy.http.post("/v1/chat/completions", json=chat_body(WEATHER_TOOL))

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_body_too_large"


def test_stream_cut_without_finish_reason_or_done_ends_with_an_error_event(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(
        Verbatim(chunk({"role": "assistant", "content": ""}), chunk({"content": "It is "}))
    )

    events = stream_events(proxy)

    assert error_code(events) == "upstream_stream_cut"
    assert not any(choice["finish_reason"] for e in events[:-1] for choice in e["choices"])


def test_stream_ending_with_finish_reason_but_no_done_is_complete(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Verbatim(chunk({"role": "assistant", "content": "Sunny"}), chunk({}, "stop")))

    assert streamed_text(stream_events(proxy)) == "Sunny"


CHOICE = {"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}
MALFORMED_CHUNKS = {
    "index-null": {"choices": [{**CHOICE, "index": None}]},
    "index-injecting-json": {"choices": [{**CHOICE, "index": '0,"injected":1'}]},
    "index-negative": {"choices": [{**CHOICE, "index": -1}]},
    "index-bool": {"choices": [{**CHOICE, "index": True}]},
    "choice-null": {"choices": [None]},
    "choices-string": {"choices": "none"},
    "delta-string": {"choices": [{**CHOICE, "delta": "Hi"}]},
    "content-number": {"choices": [{**CHOICE, "delta": {"content": 42}}]},
    "reasoning-object": {"choices": [{**CHOICE, "delta": {"reasoning_content": {}}}]},
    "finish-reason-number": {"choices": [{**CHOICE, "finish_reason": 7}]},
    "created-string": {"created": "soon", "choices": [CHOICE]},
    "model-object": {"model": {"name": "m"}, "choices": [CHOICE]},
    "usage-list": {"usage": [1], "choices": [CHOICE]},
}


@pytest.mark.parametrize("fields", MALFORMED_CHUNKS.values(), ids=MALFORMED_CHUNKS.keys())
def test_malformed_first_chunk_is_an_upstream_error_not_broken_json(
    upstream: ScriptedUpstream, proxy: Proxy, fields: dict[str, Any]
) -> None:
    envelope = {"id": "chatcmpl-raw", "object": "chat.completion.chunk", "created": CREATED}
    upstream.script(Verbatim(sse({**envelope, "model": MODEL, **fields}), b"data: [DONE]\n\n"))

    with proxy.http.stream(
        "POST", "/v1/chat/completions", json=chat_body(WEATHER_TOOL, stream=True)
    ) as response:
        # Each event must parse as JSON; the last one names the fault.
        events = list(read_events(response.iter_lines()))

    assert error_code(events) == "upstream_bad_chunk"


@pytest.mark.parametrize(
    "choices",
    [
        [None],
        ["text"],
        [{"message": "Hi"}],
        [{"message": {}, "finish_reason": 1}],
        [{"message": {"content": 42}}],
        [{"message": {"content": "Hi", "reasoning_content": {}}}],
    ],
)
def test_malformed_whole_answer_is_a_502(
    upstream: ScriptedUpstream, proxy: Proxy, choices: list[Any]
) -> None:
    body = json.dumps({"id": "x", "object": "chat.completion", "choices": choices}).encode()
    upstream.script(Verbatim(body, headers={"content-type": "application/json"}))

    response = proxy.http.post("/v1/chat/completions", json=chat_body(WEATHER_TOOL))

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_bad_chunk"


@given(
    st.lists(
        st.sampled_from([b"a", b"\xe2\x80\xa8", b"\xc2\x85", b"\r", b"\n", b"\r\n", b"data: "]),
        max_size=30,
    ),
    st.lists(st.integers(min_value=0, max_value=200), max_size=8),
)
def test_any_cutting_of_the_body_gives_the_sse_lines(pieces: list[bytes], cuts: list[int]) -> None:
    body = b"".join(pieces)
    bounds = sorted({min(cut, len(body)) for cut in cuts} | {0, len(body)})
    splitter = LineSplitter(max_line_bytes=len(body) + 1)

    lines = [line for a, b in itertools.pairwise(bounds) for line in splitter.feed(body[a:b])]
    lines += splitter.finish()

    expected = SSE_LINE_BREAK.split(body)
    if expected[-1] == b"":  # a final line break ends the last line, it opens none
        expected.pop()
    assert lines == expected


def test_line_splitter_refuses_a_line_past_its_bound() -> None:
    splitter = LineSplitter(max_line_bytes=8)
    splitter.feed(b"12345")

    with pytest.raises(ProxyError) as raised:
        splitter.feed(b"6789")

    assert raised.value.code == "upstream_line_too_long"

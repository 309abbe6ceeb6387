"""The proxy's JSON on the wire: what orjson writes, what it refuses (written by the standard
library instead), and the line-breaking characters that must never appear raw in an event."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from starlette.types import Message

from service.wire.json import BODY_SLICE_BYTES, json_bytes, json_response, json_value
from service.wire.sse import LineSplitter, data_event

# Any JSON value, with every code point in strings: lone surrogates and U+2028 included.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec=None)),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@given(JSON_VALUES)
def test_written_json_reads_back_as_the_same_value(value: Any) -> None:
    assert json.loads(json_bytes(value)) == value


@given(JSON_VALUES)
def test_an_event_of_written_json_is_one_line_for_every_line_splitter(value: Any) -> None:
    event = data_event(json_bytes(value))
    line = event[: -len(b"\n\n")]

    assert LineSplitter(max_line_bytes=1 << 20).feed(event) == [line, b""]
    assert event.decode().splitlines() == [line.decode(), ""]  # valid UTF-8, and one line


def test_characters_that_str_splitlines_breaks_at_are_escaped() -> None:
    written = json_bytes({"content": "a\x85b\u2028c\u2029d – ’"})

    assert written == '{"content":"a\\u0085b\\u2028c\\u2029d – ’"}'.encode()


def test_what_orjson_refuses_is_written_by_the_standard_library() -> None:
    assert json_bytes({"text": "\ud83d"}) == b'{"text":"\\ud83d"}'
    assert json_bytes({"big": 2**70}) == b'{"big":1180591620717411303424}'


def test_what_orjson_refuses_to_read_is_read_as_python_reads_it() -> None:
    assert json_value(b'{"text":"\\ud83d"}') == {"text": "\ud83d"}
    assert math.isnan(json_value("NaN"))
    assert json_value('{"usage":{"total_tokens":12}}') == {"usage": {"total_tokens": 12}}


def test_text_that_is_not_json_is_a_value_error() -> None:
    for garbled in ("{", '{"a":', "", "data: x"):
        try:
            json_value(garbled)
        except ValueError:
            continue
        raise AssertionError(f"{garbled!r} was read")


def test_nan_and_infinity_are_written_as_null_never_as_invalid_json() -> None:
    assert json_bytes({"a": math.nan, "b": math.inf}) == b'{"a":null,"b":null}'


def test_a_long_json_body_goes_to_the_server_in_slices() -> None:
    # Given whole, what the socket had not taken of a 60 MiB body was copied into the
    # server's write buffer: a third copy of the answer in memory.
    value = {"content": "A long answer. " * 200_000}  # ~3 MB
    response = json_response(value)
    messages: list[Message] = []

    async def send(message: Message) -> None:
        messages.append(message)

    async def receive() -> Message:
        raise AssertionError("a response reads nothing")

    asyncio.run(response({"type": "http"}, receive, send))

    start, *bodies = messages
    assert start["type"] == "http.response.start" and start["status"] == 200
    assert all(len(body["body"]) <= BODY_SLICE_BYTES for body in bodies)
    assert [body.get("more_body", False) for body in bodies] == [True] * (len(bodies) - 1) + [False]
    assert json.loads(b"".join(body["body"] for body in bodies)) == value

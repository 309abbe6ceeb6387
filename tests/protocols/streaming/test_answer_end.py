"""A result the model writes for its own call ends its answer (`StreamParser.ended`): the
parser says so as soon as the result block is dropped, so that a caller stops reading the
model's output there, and what it is fed after that is dropped with a record, not read."""

from __future__ import annotations

import pytest
from parser_harness import PROTOCOL_NAMES

from protocols import ErrorKind, ParseError, TextDelta, ToolCall, ToolSpec, get_protocol

CALL = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n'
RESULT = "<tool_response>\n12:00\n</tool_response>\n"
AFTER = 'It is noon. <tool_call>{"name": "get_time", "arguments": {}}</tool_call>'


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_the_answer_ends_where_the_invented_result_is_dropped(protocol: str) -> None:
    errors: list[ParseError] = []
    parser = get_protocol(protocol).stream_parser([ToolSpec("get_time")], on_error=errors.append)
    parts = parser.feed(CALL + RESULT[:-12])
    assert not parser.ended  # the block may still be a wrapper around calls
    parts += parser.feed(RESULT[-12:])
    assert parser.ended
    after = parser.feed(AFTER) + parser.finish()
    assert [part.name for part in parts + after if isinstance(part, ToolCall)] == ["get_time"]
    assert not [part for part in after if isinstance(part, TextDelta | ToolCall)]
    assert [error.kind for error in errors] == [ErrorKind.INVENTED_RESULT] * 2
    assert errors[-1].original == "\n" + AFTER


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_an_answer_without_an_invented_result_does_not_end(protocol: str) -> None:
    parser = get_protocol(protocol).stream_parser([ToolSpec("get_time")])
    parser.feed(CALL + "It is noon, says the tool_response.\n" + RESULT)
    assert not parser.ended

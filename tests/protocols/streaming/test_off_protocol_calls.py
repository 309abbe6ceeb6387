"""Calls written off the protocol's format, as small models write them: an answer that is
only call objects (bare, in one fence, in one stray tag) is calls; anything else is text."""

from __future__ import annotations

import json
from unittest.mock import Mock

import pytest
from parser_harness import CHUNKINGS, MODES, PROTOCOL_NAMES, Chunks, check_contract, run

from protocols import (
    ArgumentsMode,
    ErrorKind,
    ParserOptions,
    Part,
    TextDelta,
    ToolCall,
    UnknownTools,
    get_protocol,
)
from protocols.parts import ToolSpec
from protocols.streaming import off_protocol
from protocols.streaming.off_protocol import MAX_ANSWER_HEAD_CHARS

WEATHER = {"name": "get_weather", "arguments": {"city": "Paris"}}
TIME = {"name": "get_time", "parameters": {}}
OBJECT = json.dumps(WEATHER)

CALLS = {
    "bare": f"{OBJECT}",
    "bare-with-layout": f"\n  {OBJECT}\n",
    "fenced": f"```json\n{OBJECT}\n```",
    "stray-tag": f"<tool_response>\n{OBJECT}\n</tool_response>",
    "stray-tag-and-fence": f"<function_call>```\n{OBJECT}\n```</function_call>",
    "relaxed": "{name: 'get_weather', arguments: {city: 'Paris'}}",
    "commented": f"```json\n{OBJECT}, // Paris /* not Rome */\n```",
    # The JSON-mix prompt shows several calls as an array; models fence it.
    "array-fenced": f"```json\n[\n  {OBJECT}\n]\n```",
    "array-bare": f"[{OBJECT}]",
}
TEXT = {
    "undeclared-name": json.dumps({"name": "launch", "arguments": {}}),
    "prose-before": f"Here is the call: {OBJECT}",
    "prose-after": f"```json\n{OBJECT}\n```\nThis calls the weather tool.",
    "no-arguments-key": json.dumps({"name": "get_weather", "city": "Paris"}),
    "json-answer": json.dumps({"city": "Paris", "temperature": 21}),
    "code-fence": "```python\nprint('hi')\n```",
    "json-array": "```json\n[1, 2, 3]\n```",
    "array-of-an-undeclared-call": json.dumps([{"name": "launch", "arguments": {}}]),
    "markdown-link": "[the docs](https://example.com) say so.",
    # The prompt's own declaration of the tool, written back: its schema is no arguments.
    "declaration-echo": json.dumps(
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ),
}


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("source", CALLS.values(), ids=CALLS.keys())
def test_an_answer_that_is_only_a_call_object_is_a_call(
    protocol: str, mode: ArgumentsMode, chunks: Chunks, source: str
) -> None:
    result = run(protocol, source, chunks=chunks, mode=mode)
    assert result.call_values == [("get_weather", {"city": "Paris"})]
    assert result.text == ""
    check_contract(result)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_several_call_objects_in_a_row_are_several_calls(protocol: str, chunks: Chunks) -> None:
    source = json.dumps(WEATHER) + "\n" + json.dumps(TIME)
    result = run(protocol, source, chunks=chunks)
    assert result.call_values == [("get_weather", {"city": "Paris"}), ("get_time", {})]
    check_contract(result)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("source", TEXT.values(), ids=TEXT.keys())
def test_anything_else_stays_text(
    protocol: str, mode: ArgumentsMode, chunks: Chunks, source: str
) -> None:
    result = run(protocol, source, chunks=chunks, mode=mode)
    assert result.calls == []
    assert result.text == source
    check_contract(result)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_call_object_longer_than_the_answer_head_is_a_call(protocol: str, chunks: Chunks) -> None:
    # Only where the object begins is bounded: a whole answer arrives as one long delta.
    arguments = {"city": "P" * 2 * MAX_ANSWER_HEAD_CHARS}
    source = json.dumps({"name": "get_weather", "arguments": arguments})
    result = run(protocol, source, chunks=chunks)
    assert result.call_values == [("get_weather", arguments)]
    check_contract(result)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_the_setting_turns_it_off(protocol: str) -> None:
    tools = [ToolSpec("get_weather")]
    parts = get_protocol(protocol).parse(
        OBJECT, tools, options=ParserOptions(off_protocol_calls=False)
    )
    assert "".join(part.text for part in parts if isinstance(part, TextDelta)) == OBJECT


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_the_stream_holds_the_answer_until_it_is_decided(protocol: str) -> None:
    parser = get_protocol(protocol).stream_parser([ToolSpec("get_weather")])
    assert parser.feed('```json\n{"name": "get_weather", "arguments": {"city": "Pa') == []
    held_then_text = parser.feed('ris"}}\n```\nThat was an example.') + parser.finish()
    text = "".join(part.text for part in held_then_text if isinstance(part, TextDelta))
    assert text.endswith("That was an example.")
    # Text that cannot start call objects flows at once. An undeclared name is held too: a
    # declared call may follow it.
    assert get_protocol(protocol).stream_parser([ToolSpec("get_weather")]).feed("Hello")
    undeclared = get_protocol(protocol).stream_parser([ToolSpec("get_weather")])
    assert undeclared.feed('{"name": "launch", "arguments": {}}\n') == []
    assert undeclared.feed(OBJECT) == []
    assert [part.name for part in undeclared.finish() if isinstance(part, ToolCall)] == [
        "launch",
        "get_weather",
    ]


MIXED = "```json\n" + json.dumps({"name": "launch", "arguments": {}}) + f"\n{OBJECT}\n```"


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_undeclared_call_objects_beside_a_declared_one_are_left_out_under_unknown_tools_text(
    protocol: str, chunks: Chunks
) -> None:
    result = run(protocol, MIXED, chunks=chunks, unknown_tools=UnknownTools.TEXT)
    assert result.call_values == [("get_weather", {"city": "Paris"})]
    assert result.text == ""
    assert result.error_kinds == [ErrorKind.UNKNOWN_TOOL]
    assert "launch" in result.errors[0].message
    check_contract(result)


def _text(parts: list[Part]) -> str:
    return "".join(part.text for part in parts if isinstance(part, TextDelta))


WRAPPINGS = {
    "bare": ("", ""),
    "fenced": ("```json\n", "\n```"),
    "stray-tag": ("<tool_response>\n", "\n</tool_response>"),
}
# What makes an answer that so far is call objects text, after the blanks.
NOT_CALLS_AFTER = {
    "prose": "\nThat was an example.",
    "string": ' "done"',
    "number": " 1 1 1",
    "stray-bracket": " } more",
    "second-closing": "\n``` more",
}


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("wrapping", WRAPPINGS.values(), ids=WRAPPINGS.keys())
@pytest.mark.parametrize("after", NOT_CALLS_AFTER.values(), ids=NOT_CALLS_AFTER.keys())
def test_what_follows_the_call_objects_streams_once_it_shows_they_are_text(
    protocol: str, wrapping: tuple[str, str], after: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Held to the end, 16 MB of prose after one object was read whole in one 1 s step.
    reads = Mock(wraps=off_protocol.calls_in_json)
    monkeypatch.setattr(off_protocol, "calls_in_json", reads)
    parser = get_protocol(protocol).stream_parser([ToolSpec("get_weather")])
    opening, closing = wrapping
    deciding = after.lstrip()
    held = opening + OBJECT + closing + after[: len(after) - len(deciding)]
    assert parser.feed(held) == []  # still only a call
    assert _text(parser.feed(deciding)) == held + deciding
    assert _text(parser.feed(" And more.")) == " And more."
    assert _text(parser.finish()) == ""
    reads.assert_not_called()

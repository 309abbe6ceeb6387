"""Tests for the JSON-mix stream parser: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
calls between ordinary text, the body variants models write, relaxed JSON, calls that end
early or late, errors that fall back to text, and arguments streamed as they arrive."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import Mock

import pytest
from parser_harness import (
    CHUNKINGS,
    MODES,
    TOOLS,
    Chunks,
    check_contract,
    fragments,
    offsets,
    run,
)

from protocols import (
    SMALL_CALL_CHARS,
    ArgumentsMode,
    ErrorKind,
    ParseError,
    ParserOptions,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
    UnknownTools,
    get_protocol,
)
from protocols.lenient import relaxed_json
from protocols.lenient.relaxed_json import (
    ARGUMENT_CHARGE_CHARS,
    CALL_CHARGE_CHARS,
    FOLLOWING_FLOOR_CHARS,
    PARSE_CHARGE_CHARS,
)

JSON_MIX = "json-mix"
PARIS = {"city": "Paris"}
WEATHER = ("get_weather", PARIS)
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
READ_CALL = '<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>'
UNCLOSED_CALL = CALL.removesuffix("</tool_call>")
CUT_OFF_CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Par'

Calls = list[tuple[str, Any]]


def _body(body: str) -> str:
    return f"<tool_call>{body}</tool_call>"


@pytest.mark.parametrize(
    ("source", "text", "calls"),
    [
        pytest.param(CALL, "", [WEATHER], id="one-call"),
        pytest.param(
            "Let me check. " + CALL + " Done.", "Let me check.  Done.", [WEATHER], id="text-around"
        ),
        pytest.param(
            CALL + "\nand then\n" + READ_CALL,
            "\nand then\n",
            [WEATHER, ("read_file", {"path": "a.py"})],
            id="text-between-two-calls",
        ),
        pytest.param(
            CALL + CALL + CALL, "", [WEATHER, WEATHER, WEATHER], id="three-calls-back-to-back"
        ),
        pytest.param(
            _body('{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}'),
            "",
            [WEATHER],
            id="arguments-as-json-string",
        ),
        pytest.param(
            _body('{"name": "get_weather", "parameters": {"city": "Paris"}}'),
            "",
            [WEATHER],
            id="parameters-key",
        ),
        pytest.param(
            _body('{"name": "get_weather", "params": {"city": "Paris"}}'),
            "",
            [WEATHER],
            id="params-key",
        ),
        pytest.param(
            _body('{"name": "get_weather", "input": {"city": "Paris"}}'),
            "",
            [WEATHER],
            id="input-key",
        ),
        pytest.param(
            _body('{"function": "get_weather", "arguments": {"city": "Paris"}}'),
            "",
            [WEATHER],
            id="function-key-for-name",
        ),
        pytest.param(
            _body('{"tool": "get_weather", "arguments": {"city": "Paris"}}'),
            "",
            [WEATHER],
            id="tool-key-for-name",
        ),
        pytest.param(
            _body(
                '{"type": "function", "function": {"name": "get_weather",'
                ' "arguments": "{\\"city\\": \\"Paris\\"}"}}'
            ),
            "",
            [WEATHER],
            id="openai-shaped",
        ),
        pytest.param(
            _body('```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```'),
            "",
            [WEATHER],
            id="json-code-fence-inside-tags",
        ),
        pytest.param(
            _body('\n  {\n    "name": "get_weather",\n    "arguments": {"city": "Paris"}\n  }\n'),
            "",
            [WEATHER],
            id="whitespace-and-newlines-around",
        ),
        pytest.param(_body('{"name": "get_time"}'), "", [("get_time", {})], id="no-arguments"),
        pytest.param(
            _body('{"name": "get_weather", "arguments": {"city": "東京 😀 é"}}'),
            "",
            [("get_weather", {"city": "東京 😀 é"})],
            id="unicode-arguments",
        ),
        pytest.param(
            _body('{"name": "search", "arguments": {"query": "a\\"b\\\\c\\u00e9\\n", "limit": 5}}'),
            "",
            [("search", {"query": 'a"b\\c\u00e9\n', "limit": 5})],
            id="json-escapes",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_call_forms_become_calls(
    source: str, text: str, calls: Calls, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(JSON_MIX, source, chunks=chunks, mode=mode)
    assert result.call_values == calls
    assert result.text == text
    assert result.errors == []


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_configured_call_tags_that_do_not_begin_with_a_bracket_are_found(chunks: Chunks) -> None:
    # Deltas without `<` skip the tag search, so the configured start tag's first character
    # must count as a tag character too.
    protocol = get_protocol(JSON_MIX, call_start="[TOOL_CALLS]", call_end="[/TOOL_CALLS]")
    source = "Let me check. " + protocol.render_call(*WEATHER) + " Done."
    result = run(protocol, source, chunks=chunks)
    assert result.call_values == [WEATHER]
    assert result.text == "Let me check.  Done."
    check_contract(result)


@pytest.mark.parametrize(
    ("body", "arguments"),
    [
        pytest.param(
            "{'name': 'get_weather', 'arguments': {'city': 'Paris'}}", PARIS, id="single-quotes"
        ),
        pytest.param(
            "{name: 'get_weather', arguments: {city: 'Paris'}}", PARIS, id="unquoted-keys"
        ),
        pytest.param(
            '{"name": "get_weather", "arguments": {"city": "Paris",},}', PARIS, id="trailing-commas"
        ),
        pytest.param(
            '{"name": "get_weather", // the tool\n "arguments": {"city": /* here */ "Paris"}}',
            PARIS,
            id="comments",
        ),
        pytest.param(
            '{"name": "get_weather", "arguments": {"city": "Paris\nFrance"}}',
            {"city": "Paris\nFrance"},
            id="raw-newline-in-string",
        ),
        pytest.param(
            '{"name": "get_weather", "arguments": {"a": True, "b": False, "c": None}}',
            {"a": True, "b": False, "c": None},
            id="python-literals",
        ),
        pytest.param(
            '{"name": "get_weather", "arguments": {"city": "Paris"}',
            PARIS,
            id="missing-final-brace",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_relaxed_json_bodies_become_calls(
    body: str, arguments: dict[str, Any], mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(JSON_MIX, _body(body), chunks=chunks, mode=mode)
    assert result.call_values == [("get_weather", arguments)]
    assert result.text == ""
    check_contract(result)


@pytest.mark.parametrize(
    ("source", "text", "calls"),
    [
        pytest.param(UNCLOSED_CALL, "", [WEATHER], id="closing-tag-omitted-at-end"),
        pytest.param(
            "Sure. " + UNCLOSED_CALL + "\n",
            "Sure. ",
            [WEATHER],
            id="closing-tag-omitted-then-newline",
        ),
        pytest.param(
            UNCLOSED_CALL + "</tool_response> ok", " ok", [WEATHER], id="closed-by-tool_response"
        ),
        pytest.param(UNCLOSED_CALL + "</function> ok", " ok", [WEATHER], id="closed-by-function"),
        pytest.param(
            UNCLOSED_CALL + "\n" + READ_CALL,
            "",
            [WEATHER, ("read_file", {"path": "a.py"})],
            id="second-start-tag-ends-the-first-call",
        ),
        pytest.param(
            _body(
                '[{"name": "get_weather", "arguments": {"city": "Paris"}},'
                ' {"name": "read_file", "arguments": {"path": "a.py"}}]'
            ),
            "",
            [WEATHER, ("read_file", {"path": "a.py"})],
            id="array-of-calls",
        ),
        pytest.param(
            _body(
                '{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
                '{"name": "read_file", "arguments": {"path": "a.py"}}'
            ),
            "",
            [WEATHER, ("read_file", {"path": "a.py"})],
            id="two-objects-in-one-block",
        ),
        pytest.param(
            "a </tool_call> b " + CALL, "a </tool_call> b ", [WEATHER], id="stray-end-tag-is-text"
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_call_boundaries(
    source: str, text: str, calls: Calls, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(JSON_MIX, source, chunks=chunks, mode=mode)
    assert result.call_values == calls
    assert result.text == text
    assert result.errors == []
    check_contract(result)


@pytest.mark.parametrize("mode", MODES)
def test_tags_split_at_every_position_are_recognised(mode: ArgumentsMode) -> None:
    source = "Hi! " + CALL + " Bye. " + READ_CALL
    for cut in range(len(source) + 1):
        result = run(JSON_MIX, source, chunks=[cut], mode=mode)
        assert result.call_values == [WEATHER, ("read_file", {"path": "a.py"})], cut
        assert result.text == "Hi!  Bye. ", cut


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(_body("this is not json"), id="prose-body"),
        pytest.param(_body('{"arguments": {"city": "Paris"}}'), id="no-name"),
        pytest.param(_body("[1, 2, 3]"), id="array-of-numbers"),
        pytest.param(_body(""), id="empty-body"),
        pytest.param(
            _body(
                '{"name": "get_weather", "description": "Current weather for a city.",'
                ' "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}'
            ),
            id="declaration-echo",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_malformed_body_is_kept_as_text_with_an_error(
    source: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(JSON_MIX, "Before " + source + " after", chunks=chunks, mode=mode)
    assert result.calls == []
    assert result.text == "Before " + source + " after"
    assert result.error_kinds == [ErrorKind.MALFORMED_JSON]
    assert result.errors[0].original == source


@pytest.mark.parametrize(
    "body",
    [
        pytest.param('{"name": "get_weather", "arguments": [1, 2]}', id="arguments-not-object"),
        pytest.param('{"name": "get_weather", "arguments": "{{{"}', id="arguments-string-not-json"),
    ],
)
def test_malformed_arguments_are_kept_as_text_in_atomic_mode(body: str) -> None:
    result = run(JSON_MIX, _body(body), mode=ArgumentsMode.ATOMIC)
    assert result.calls == []
    assert result.text == _body(body)
    assert result.error_kinds == [ErrorKind.MALFORMED_JSON]


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_malformed_body_after_a_streamed_start_leaves_the_call_unfinished(
    chunks: Chunks,
) -> None:
    source = _body('{"name": "get_weather", "arguments": {"city": ]]] }')
    result = run(JSON_MIX, source, chunks=chunks, small_call_chars=0)
    assert result.calls == []
    assert [(call.name, call.original) for call in result.unfinished] == [("get_weather", source)]
    assert result.error_kinds == [ErrorKind.MALFORMED_JSON]
    assert result.errors[0].original == source
    assert result.text == ""
    check_contract(result)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_malformed_small_call_is_text_in_both_modes(chunks: Chunks) -> None:
    source = "Sure. " + _body('{"name": "get_weather", "arguments": {"city": ]]] }')
    for mode in MODES:
        result = run(JSON_MIX, source, chunks=chunks, mode=mode)
        assert result.calls == result.unfinished == []
        assert result.text == source
        assert result.error_kinds == [ErrorKind.MALFORMED_JSON]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_cut_off_small_call_is_text(mode: ArgumentsMode, chunks: Chunks) -> None:
    result = run(JSON_MIX, "Sure. " + CUT_OFF_CALL, chunks=chunks, mode=mode)
    assert result.calls == []
    assert result.text == "Sure. " + CUT_OFF_CALL
    assert result.error_kinds == [ErrorKind.UNFINISHED_CALL]


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_cut_off_call_is_unfinished_in_incremental_mode(chunks: Chunks) -> None:
    result = run(JSON_MIX, "Sure.\n" + CUT_OFF_CALL, chunks=chunks, small_call_chars=0)
    assert result.calls == []
    assert [(call.name, call.original) for call in result.unfinished] == [
        ("get_weather", CUT_OFF_CALL)
    ]
    assert result.text == "Sure.\n"
    assert result.error_kinds == [ErrorKind.UNFINISHED_CALL]
    check_contract(result)


@pytest.mark.parametrize(
    "cut_off", ["<tool_call>", '<tool_call>{"na', '<tool_call>\n{"name": "get_wea']
)
@pytest.mark.parametrize("mode", MODES)
def test_call_cut_off_before_its_name_is_text(cut_off: str, mode: ArgumentsMode) -> None:
    result = run(JSON_MIX, cut_off, chunks=1, mode=mode)
    assert result.calls == []
    assert result.unfinished == []
    assert not any(isinstance(part, ToolCallStart) for part in result.parts)
    assert result.text == cut_off
    assert result.error_kinds == [ErrorKind.UNFINISHED_CALL]


UNKNOWN_CALL = _body('{"name": "launch_rocket", "arguments": {"when": "now"}}')


@pytest.mark.parametrize("mode", MODES)
def test_unknown_tool_is_called_by_default(mode: ArgumentsMode) -> None:
    result = run(JSON_MIX, UNKNOWN_CALL, chunks=1, mode=mode)
    assert result.call_values == [("launch_rocket", {"when": "now"})]
    assert result.errors == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_unknown_tool_is_text_when_unknown_tools_are_text(
    mode: ArgumentsMode, chunks: Chunks
) -> None:
    source = UNKNOWN_CALL + " then " + CALL
    result = run(JSON_MIX, source, chunks=chunks, mode=mode, unknown_tools=UnknownTools.TEXT)
    assert result.call_values == [WEATHER]
    assert result.text == UNKNOWN_CALL + " then "
    assert result.error_kinds == [ErrorKind.UNKNOWN_TOOL]
    check_contract(result)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("use <tool_call> to call", id="start-tag"),
        pytest.param("close </function> and </tool_response>", id="other-closing-tags"),
        pytest.param('<tool_call {"name": "x"}> </tool_call', id="near-miss-tags"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_tags_inside_a_json_string_do_not_end_or_split_the_call(
    content: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    arguments = {"path": "notes.md", "content": content}
    source = _body(json.dumps({"name": "write_file", "arguments": arguments}))
    result = run(JSON_MIX, source, chunks=chunks, mode=mode)
    assert result.call_values == [("write_file", arguments)]
    assert result.text == ""


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("end with </tool_call> after", id="end-tag"),
        pytest.param('<tool_call>{"name": "x"}</tool_call>', id="whole-call"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_end_tag_inside_a_json_string_does_not_cut_the_call(
    content: str, mode: ArgumentsMode
) -> None:
    """A file that mentions the end tag (docs, this proxy's own tests) must be written
    whole, not silently cut at the tag with the rest of the JSON left as text."""
    arguments = {"path": "notes.md", "content": content}
    source = _body(json.dumps({"name": "write_file", "arguments": arguments}))
    result = run(JSON_MIX, source, chunks=1, mode=mode)
    assert result.call_values == [("write_file", arguments)]
    assert result.text == ""


DUPLICATE_KEYS = _body('{"name": "get_weather", "arguments": {"city": "Paris", "city": "Rome"}}')


def test_duplicate_keys_take_the_last_value_in_atomic_mode() -> None:
    result = run(JSON_MIX, DUPLICATE_KEYS, mode=ArgumentsMode.ATOMIC)
    assert result.call_values == [("get_weather", {"city": "Rome"})]
    assert result.errors == []


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_duplicate_keys_in_a_small_call_are_decided_as_in_a_whole_text(chunks: Chunks) -> None:
    streamed = run(JSON_MIX, DUPLICATE_KEYS, chunks=chunks)
    whole = run(JSON_MIX, DUPLICATE_KEYS, mode=ArgumentsMode.ATOMIC)
    assert streamed.call_values == whole.call_values == [("get_weather", {"city": "Rome"})]
    assert streamed.error_kinds == whole.error_kinds == []
    check_contract(streamed)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_duplicate_keys_after_streaming_leave_the_call_unfinished(chunks: Chunks) -> None:
    result = run(JSON_MIX, DUPLICATE_KEYS, chunks=chunks, small_call_chars=0)
    assert result.calls == []
    [unfinished] = result.unfinished
    assert unfinished.original == DUPLICATE_KEYS
    assert result.error_kinds == [ErrorKind.ARGUMENTS_MISMATCH]
    assert result.errors[0].original == DUPLICATE_KEYS
    sent = "".join(result.deltas(unfinished.id))
    assert sent.startswith('{"city": "Paris"')
    with pytest.raises(json.JSONDecodeError):
        json.loads(sent)  # the client cannot take it for a finished call
    check_contract(result)


def test_call_start_is_sent_as_soon_as_the_name_is_read() -> None:
    pieces = [
        '<tool_call>{"name": "search", ',
        '"arguments": {"query": "hello ',
        'world", "limit": 5',
        "}}</tool_call>",
    ]
    result = run(JSON_MIX, "".join(pieces), chunks=offsets(pieces), small_call_chars=0)
    first, second, third, last, _finish = result.batches
    [start] = first
    assert isinstance(start, ToolCallStart) and start.name == "search"
    assert fragments(second) == '{"query": "hello '
    assert fragments(third).startswith('world"')
    assert fragments(first + second + third + last) == '{"query": "hello world", "limit": 5}'
    assert result.call_values == [("search", {"query": "hello world", "limit": 5})]


def test_large_write_file_content_streams_in_manyfragments() -> None:
    content = "".join(f'line {i}: if a < b && "q" \\ é 😀\n' for i in range(6200))
    assert len(content) > 200_000
    arguments = {"path": "big.txt", "content": content}
    source = _body(json.dumps({"name": "write_file", "arguments": arguments}, ensure_ascii=False))
    result = run(JSON_MIX, source, chunks=997)
    [call] = result.calls
    assert call.input == arguments
    batches_with_fragments = [
        b for b in result.batches if any(isinstance(p, ToolCallDelta) for p in b)
    ]
    assert len(batches_with_fragments) > 200
    check_contract(result)


@pytest.mark.parametrize("mode", MODES)
def test_relaxed_calls_past_the_response_budget_stay_text(mode: ArgumentsMode) -> None:
    relaxed = "<tool_call>{name: 'get_weather', arguments: {city: 'Paris'}}</tool_call>"
    body_chars = len(relaxed) - len("<tool_call></tool_call>")
    # Each call is charged for its tag (while what its reading needs is left) and its strict
    # try, the strict one for the three values its lexer follows, the relaxed one its repair.
    fits_one_relaxed = (
        3 * (CALL_CHARGE_CHARS + PARSE_CHARGE_CHARS)
        + FOLLOWING_FLOOR_CHARS
        + 3 * ARGUMENT_CHARGE_CHARS
        + body_chars
    )
    errors: list[ParseError] = []
    options = ParserOptions(mode=mode, relaxed_parse_budget_chars=fits_one_relaxed)
    parser = get_protocol(JSON_MIX).stream_parser(TOOLS, options=options, on_error=errors.append)
    parts = parser.feed(relaxed + CALL + relaxed) + parser.finish()
    calls = [(part.name, part.input) for part in parts if isinstance(part, ToolCall)]
    assert calls == [WEATHER, WEATHER]
    assert "".join(part.text for part in parts if isinstance(part, TextDelta)) == relaxed
    assert [error.kind for error in errors] == [ErrorKind.MALFORMED_JSON]
    assert "budget" in errors[0].message


def test_values_after_a_call_object_are_read_only_as_far_as_the_budget_goes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A call object followed by a million bare `1`s cost 3 s: strict parses were free. Under a
    # budget of a thousand parses, twice as many values are read only as far as it goes.
    parses = Mock(wraps=json.loads)
    monkeypatch.setattr(relaxed_json.json, "loads", parses)
    source = _body(json.dumps({"name": "get_weather", "arguments": PARIS}) + " 1" * 2_000)
    options = ParserOptions(relaxed_parse_budget_chars=1_000 * PARSE_CHARGE_CHARS)
    errors: list[ParseError] = []
    parts = get_protocol(JSON_MIX).parse(source, TOOLS, options=options, on_error=errors.append)
    assert "".join(part.text for part in parts if isinstance(part, TextDelta)) == source
    assert [error.kind for error in errors] == [ErrorKind.MALFORMED_JSON]
    assert "budget" in errors[0].message
    assert parses.call_count <= 1_000


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_long_scalar_arrays_stream_as_canonical_json(mode: ArgumentsMode, chunks: Chunks) -> None:
    items = "0, -0, 7,12 ,\n-345, 1.50, 2e3, true, false, null, 10000000000000000000001, 3"
    source = _body('{"name": "write_file", "arguments": {"path": "a", "content": [' + items + "]}}")
    result = run(JSON_MIX, source, chunks=chunks, mode=mode)
    expected = json.loads("[" + items + "]")
    assert [(call.name, call.input) for call in result.calls] == [
        ("write_file", {"path": "a", "content": expected})
    ]
    assert result.calls[0].arguments == json.dumps({"path": "a", "content": expected})
    check_contract(result)


INNER_QUOTES = _body(
    '{"name": "write_file", "arguments": {"path": "a", "content": "say "hi" now, "bye"\n ok"}}'
)


@pytest.mark.parametrize("small_call_chars", [0, SMALL_CALL_CHARS])
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_an_unescaped_quote_inside_a_string_does_not_end_it(
    chunks: Chunks, small_call_chars: int
) -> None:
    streamed = run(JSON_MIX, INNER_QUOTES, chunks=chunks, small_call_chars=small_call_chars)
    whole = run(JSON_MIX, INNER_QUOTES, mode=ArgumentsMode.ATOMIC)
    expected = [("write_file", {"path": "a", "content": 'say "hi" now, "bye"\n ok'})]
    assert streamed.call_values == whole.call_values == expected
    assert streamed.error_kinds == whole.error_kinds == []
    check_contract(streamed)


ARGUMENTS_STRING_WITH_TAGS = _body(
    json.dumps(
        {
            "name": "write_file",
            "arguments": json.dumps({"path": "a.md", "content": "</tool_call> <tool_call> x"}),
        }
    )
)


@pytest.mark.parametrize("small_call_chars", [0, SMALL_CALL_CHARS])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_tags_inside_arguments_written_as_a_json_string_end_nothing(
    mode: ArgumentsMode, chunks: Chunks, small_call_chars: int
) -> None:
    result = run(
        JSON_MIX,
        ARGUMENTS_STRING_WITH_TAGS + " Done.",
        chunks=chunks,
        mode=mode,
        small_call_chars=small_call_chars,
    )
    expected = {"path": "a.md", "content": "</tool_call> <tool_call> x"}
    assert result.call_values == [("write_file", expected)]
    assert result.text == " Done."
    check_contract(result)

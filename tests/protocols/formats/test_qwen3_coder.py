"""Tests for the Qwen3-Coder stream parser: `<tool_call><function=NAME><parameter=KEY>`
calls with or without the wrapper, raw values with their one-newline layout removed, schema
coercion, tolerated missing close tags, unknown and malformed calls, cut-off calls, and
arguments streamed while a call is still being written."""

from __future__ import annotations

from typing import Any

import pytest
from parser_harness import CHUNKINGS, MODES, Chunks, check_contract, fragments, offsets, run

from protocols import (
    ArgumentsMode,
    ErrorKind,
    ToolCallStart,
    UnknownTools,
    get_protocol,
)
from protocols.formats.qwen3_coder import MAX_GAP_CHARS

QWEN = "qwen3-coder"
WEATHER = ("get_weather", {"city": "Paris"})
CALL = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
    "</tool_call>"
)

Calls = list[tuple[str, Any]]


def _call(name: str, *parameters: tuple[str, str]) -> str:
    """A call laid out as the model writes it, each value on its own lines."""
    body = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in parameters)
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


def _write_file(content: str) -> str:
    return _call("write_file", ("path", "a.txt"), ("content", content))


@pytest.mark.parametrize(
    ("source", "text", "calls"),
    [
        pytest.param(CALL, "", [WEATHER], id="one-call"),
        pytest.param("Checking.\n" + CALL + "\nDone.", "Checking.\n\nDone.", [WEATHER], id="text"),
        pytest.param(CALL + CALL, "", [WEATHER, WEATHER], id="two-calls"),
        pytest.param(
            "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function> ok",
            " ok",
            [WEATHER],
            id="unwrapped",
        ),
        pytest.param(
            "<tool_call><function=get_weather><parameter=city>Paris</parameter></function>"
            "</tool_call>",
            "",
            [WEATHER],
            id="inline-values",
        ),
        pytest.param(
            "<tool_call>\n\n  <function=get_weather>\n  <parameter=city>\nParis\n</parameter>\n"
            "  </function>\n\n</tool_call>",
            "",
            [WEATHER],
            id="wrapper-with-blank-lines",
        ),
        pytest.param(
            "<function=get_weather><parameter=city>Paris</parameter></function>\n</tool_call>",
            "",
            [WEATHER],
            id="unwrapped-with-end-tag",
        ),
        pytest.param(
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
            "</function>\nThat is all.",
            "\nThat is all.",
            [WEATHER],
            id="wrapper-end-missing",
        ),
        pytest.param(
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
            "</tool_call>",
            "",
            [WEATHER],
            id="function-end-missing",
        ),
        pytest.param(
            "<tool_call>\n<function=get_time>\n" + CALL,
            "",
            [("get_time", {}), WEATHER],
            id="next-call-ends-a-call-cut-short",
        ),
        pytest.param(_call("get_time"), "", [("get_time", {})], id="no-arguments"),
        pytest.param(
            _call("get_weather", ("city", "東京 😀 e\u0301")),
            "",
            [("get_weather", {"city": "東京 😀 e\u0301"})],
            id="unicode-value",
        ),
        pytest.param(
            "<tool_call>" + " " * (MAX_GAP_CHARS + 1) + "<function=get_time></function>",
            "<tool_call>" + " " * (MAX_GAP_CHARS + 1),
            [("get_time", {})],
            id="wrapper-too-far-away-is-text",
        ),
        pytest.param(
            "<function=get_time></function>" + " " * (MAX_GAP_CHARS + 1) + "</tool_call>",
            " " * (MAX_GAP_CHARS + 1) + "</tool_call>",
            [("get_time", {})],
            id="wrapper-end-too-far-away-is-text",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_call_forms_become_calls(
    source: str, text: str, calls: Calls, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(QWEN, source, chunks=chunks, mode=mode)
    assert result.call_values == calls
    assert result.text == text
    assert result.errors == []
    check_contract(result)


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            "<tool_call>\nI will look it up.\n</tool_call>", id="wrapper-without-function"
        ),
        pytest.param("Use <function name> or a < b", id="prose"),
        pytest.param("<function=get weather>x</function>", id="space-in-name"),
        pytest.param("</parameter></function></tool_call>", id="stray-end-tags"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_text_without_a_function_tag_stays_text(
    source: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(QWEN, source, chunks=chunks, mode=mode)
    assert result.calls == []
    assert result.text == source
    assert result.errors == []


@pytest.mark.parametrize(
    ("raw", "content"),
    [
        pytest.param("one line", "one line", id="one-line"),
        pytest.param("\nblank line first", "\nblank line first", id="only-one-newline-removed"),
        pytest.param("last line blank\n", "last line blank\n", id="only-one-trailing-removed"),
        pytest.param("  indented\n  twice  ", "  indented\n  twice  ", id="spaces-kept"),
        pytest.param("", "", id="empty"),
        pytest.param("if a < b && c > d: x = '&amp;'", "if a < b && c > d: x = '&amp;'", id="code"),
        pytest.param("<div>hi</div> <parameter>", "<div>hi</div> <parameter>", id="markup"),
        pytest.param("<![CDATA[x]]>", "<![CDATA[x]]>", id="cdata-is-plain-text"),
        pytest.param(
            "</write_file> <tool_call> </tool_call> <function",
            "</write_file> <tool_call> </tool_call> <function",
            id="other-protocols-tags",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_string_values_are_raw_text_without_their_layout_newlines(
    raw: str, content: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(QWEN, _write_file(raw), chunks=chunks, mode=mode)
    assert result.call_values == [("write_file", {"path": "a.txt", "content": content})]
    assert result.text == ""
    assert result.errors == []
    check_contract(result)


@pytest.mark.parametrize(
    ("key", "raw", "value"),
    [
        pytest.param("count", "20", 20, id="integer"),
        pytest.param("count", " -7 ", -7, id="integer-with-spaces"),
        pytest.param("ratio", "1.5", 1.5, id="number"),
        pytest.param("enabled", "true", True, id="boolean"),
        pytest.param("name", "007", "007", id="numeric-looking-string"),
        pytest.param("tags", '["a", "b"]', ["a", "b"], id="json-array"),
        pytest.param("tags", "solo", ["solo"], id="bare-item-array"),
        pytest.param("sizes", "[1, 2]", [1, 2], id="integer-array"),
        pytest.param(
            "options", '{"depth": "2", "mode": "fast"}', {"depth": 2, "mode": "fast"}, id="object"
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_values_are_coerced_by_the_schema(
    key: str, raw: str, value: Any, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(QWEN, _call("configure", (key, raw)), chunks=chunks, mode=mode)
    assert result.call_values == [("configure", {key: value})]
    assert result.errors == []
    check_contract(result)


@pytest.mark.parametrize(
    ("source", "arguments"),
    [
        pytest.param(
            "<function=write_file>\n<parameter=path>\na\n<parameter=content>\nb\n</parameter>\n"
            "</function>",
            {"path": "a", "content": "b"},
            id="before-next-parameter",
        ),
        pytest.param(
            "<tool_call>\n<function=write_file>\n<parameter=path>\na\n</function>\n</tool_call>",
            {"path": "a"},
            id="before-function-end",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_missing_parameter_end_tag_is_tolerated(
    source: str, arguments: dict[str, Any], mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(QWEN, source, chunks=chunks, mode=mode)
    assert result.call_values == [("write_file", arguments)]
    assert result.text == ""
    assert result.errors == []
    check_contract(result)


ROCKET = _call("launch_rocket", ("when", "now"))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_unknown_tools_are_forwarded_with_string_arguments_by_default(
    mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(QWEN, ROCKET, chunks=chunks, mode=mode)
    assert result.call_values == [("launch_rocket", {"when": "now"})]
    assert result.errors == []
    check_contract(result)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_unknown_tools_stay_text_when_asked(mode: ArgumentsMode, chunks: Chunks) -> None:
    result = run(QWEN, ROCKET, chunks=chunks, mode=mode, unknown_tools=UnknownTools.TEXT)
    assert result.calls == []
    assert result.text == ROCKET
    assert result.error_kinds == [ErrorKind.UNKNOWN_TOOL]
    check_contract(result)


NO_NAME = (
    "<tool_call>\n<function=>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
)
REPEATED = _call("write_file", ("path", "a"), ("path", "b"))


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_nameless_call_is_text_with_an_error_in_incremental_mode(chunks: Chunks) -> None:
    result = run(QWEN, NO_NAME, chunks=chunks)
    assert result.calls == result.unfinished == []
    assert result.text == NO_NAME
    assert result.error_kinds == [ErrorKind.MALFORMED_XML]
    check_contract(result)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_repeated_parameter_after_streaming_leaves_the_call_unfinished(
    chunks: Chunks,
) -> None:
    result = run(QWEN, REPEATED, chunks=chunks, small_call_chars=0)
    assert result.calls == []
    assert [call.original for call in result.unfinished] == [REPEATED]
    assert result.error_kinds == [ErrorKind.MALFORMED_XML]
    check_contract(result)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_small_call_with_a_repeated_parameter_is_text_as_in_a_whole_text(
    chunks: Chunks,
) -> None:
    streamed = run(QWEN, REPEATED, chunks=chunks)
    whole = run(QWEN, REPEATED, mode=ArgumentsMode.ATOMIC)
    assert streamed.signature() == whole.signature()
    assert streamed.text == REPEATED
    assert streamed.error_kinds == [ErrorKind.MALFORMED_XML]


CUT_OFF = {
    "in-value": "<tool_call>\n<function=search>\n<parameter=query>\nhalf a que",
    "in-end-tag": "<function=search>\n<parameter=query>\nx\n</param",
    "in-parameter-tag": "<tool_call>\n<function=search>\n<parameter=qu",
}


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        pytest.param(NO_NAME, ErrorKind.MALFORMED_XML, id="no-name"),
        pytest.param(REPEATED, ErrorKind.MALFORMED_XML, id="repeated-parameter"),
        *(pytest.param(cut, ErrorKind.UNFINISHED_CALL, id=name) for name, cut in CUT_OFF.items()),
    ],
)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_call_that_cannot_be_read_is_text_with_an_error_in_atomic_mode(
    source: str, kind: ErrorKind, chunks: Chunks
) -> None:
    result = run(QWEN, "Sure. " + source, chunks=chunks, mode=ArgumentsMode.ATOMIC)
    assert result.calls == []
    assert result.text == "Sure. " + source
    assert result.error_kinds == [kind]


@pytest.mark.parametrize("source", CUT_OFF.values(), ids=CUT_OFF.keys())
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_cut_off_call_is_unfinished_in_incremental_mode(source: str, chunks: Chunks) -> None:
    result = run(QWEN, "Sure.\n" + source, chunks=chunks, small_call_chars=0)
    assert result.calls == []
    assert result.text == "Sure.\n"
    assert [(call.name, call.original) for call in result.unfinished] == [("search", source)]
    assert result.error_kinds == [ErrorKind.UNFINISHED_CALL]
    check_contract(result)


@pytest.mark.parametrize("mode", MODES)
def test_tags_split_at_every_position_are_recognised(mode: ArgumentsMode) -> None:
    source = "Hi! " + _call("search", ("query", "a < b"), ("limit", "5")) + " Bye. " + CALL
    for cut in range(len(source) + 1):
        result = run(QWEN, source, chunks=[cut], mode=mode)
        assert result.call_values == [("search", {"query": "a < b", "limit": 5}), WEATHER], cut
        assert result.text == "Hi!  Bye. ", cut


def test_the_call_starts_once_its_name_is_known_and_strings_stream_as_they_arrive() -> None:
    pieces = [
        "<tool_call>\n<function=search>\n",
        "<parameter=query>\nline one\n",
        "line two\n",
        "</parameter>\n<parameter=limit>\n",
        "5\n",
        "</parameter>\n</function>\n</tool_call>",
    ]
    result = run(QWEN, "".join(pieces), chunks=offsets(pieces), small_call_chars=0)
    batches = [fragments(batch) for batch in result.batches]
    assert [type(part) for part in result.batches[0]] == [ToolCallStart]
    # The trailing newline is held: it is the layout if `</parameter>` comes next.
    assert batches[1] == '{"query": "line one'
    assert batches[2] == "\\nline two"
    assert batches[3] == '"'
    # The integer is sent only once its parameter closes.
    assert batches[4] == ""
    assert batches[5] == ', "limit": 5}'
    [call] = result.calls
    assert call.input == {"query": "line one\nline two", "limit": 5}
    assert "".join(batches) == call.arguments
    check_contract(result)


def test_a_partial_end_tag_is_held_back_until_it_proves_to_be_text() -> None:
    pieces = [
        "<function=search>\n",
        "<parameter=query>\na </param",
        "eter-like x\n</parameter>",
        "\n</function>",
    ]
    result = run(QWEN, "".join(pieces), chunks=offsets(pieces), small_call_chars=0)
    batches = [fragments(batch) for batch in result.batches]
    assert batches[1].endswith('"a ')
    assert batches[2] == '</parameter-like x"'
    [call] = result.calls
    assert call.input == {"query": "a </parameter-like x"}


def test_render_call_writes_the_format_qwen_models_are_trained_on() -> None:
    text = get_protocol(QWEN).render_call("read_file", {"path": "src/app.py", "limit": 20})
    assert text == (
        "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/app.py\n</parameter>\n"
        "<parameter=limit>\n20\n</parameter>\n</function>\n</tool_call>"
    )


def test_render_result_is_a_tool_response_block_naming_the_call_first() -> None:
    text = get_protocol(QWEN).render_result("get_weather", "call_1", "sunny\n20 C")
    assert text == "<tool_response>\nResult of get_weather (call_1):\nsunny\n20 C\n</tool_response>"


@pytest.mark.parametrize(
    ("value_text", "content"),
    [
        pytest.param("    return a - b;", "    return a - b;", id="one-line-indentation-kept"),
        pytest.param("\n    return a - b;\n  ", "    return a - b;", id="close-tag-indent-dropped"),
        pytest.param("\nline\n\n", "line\n", id="file-keeps-final-newline"),
        pytest.param("\r\nline\r\n", "line\r", id="crlf-only-its-newline-is-layout"),
        pytest.param("\n\r\n", "\r", id="carriage-return-value"),
        pytest.param("\n  \n", "  ", id="blank-line-kept"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_only_layout_goes_around_a_value(
    value_text: str, content: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    source = (
        "<tool_call>\n<function=write_file>\n<parameter=path>a</parameter>\n"
        f"<parameter=content>{value_text}</parameter>\n</function>\n</tool_call>"
    )
    result = run(QWEN, source, chunks=chunks, mode=mode)
    assert result.call_values == [("write_file", {"path": "a", "content": content})]
    assert result.errors == []
    check_contract(result)

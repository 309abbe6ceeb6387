"""Tests for the Morph-XML stream parser: `<tool><arg>value</arg></tool>` calls for declared
tools only, open tag variants, schema coercion, byte-exact string values with their layout
trim, CDATA, cut-off calls, and arguments streamed while a call is still being written."""

from __future__ import annotations

import re
from re import _constants as re_constants
from re import _parser as re_parser
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree
from parser_harness import (
    CHUNKINGS,
    MODES,
    STRING,
    TOOLS,
    Chunks,
    check_contract,
    fragments,
    offsets,
    run,
)

from protocols import (
    ArgumentsMode,
    ErrorKind,
    ParseError,
    ParserOptions,
    TextDelta,
    ToolCall,
    ToolCallStart,
    ToolSpec,
    get_protocol,
)
from protocols.streaming.trie_pattern import MAX_NAME_TRIE_DEPTH, names_pattern

MORPH_XML = "morph-xml"
PARIS = {"city": "Paris"}
WEATHER = ("get_weather", PARIS)
CALL = "<get_weather><city>Paris</city></get_weather>"

Calls = list[tuple[str, Any]]


def _write_file(content: str) -> str:
    return f"<write_file><path>a.txt</path><content>{content}</content></write_file>"


@pytest.mark.parametrize(
    ("source", "text", "calls"),
    [
        pytest.param(CALL, "", [WEATHER], id="one-call"),
        pytest.param(
            "Checking. " + CALL + " Done.", "Checking.  Done.", [WEATHER], id="text-around"
        ),
        pytest.param(
            CALL + "\nthen\n<read_file>\n  <path>a.py</path>\n</read_file>",
            "\nthen\n",
            [WEATHER, ("read_file", {"path": "a.py"})],
            id="two-calls-with-layout",
        ),
        pytest.param(
            '<search id="1"><query>x</query></search>',
            "",
            [("search", {"query": "x"})],
            id="attribute-on-open-tag",
        ),
        pytest.param(
            "<search ><query>x</query></search>",
            "",
            [("search", {"query": "x"})],
            id="space-before-open-tag-end",
        ),
        pytest.param(
            '<search\n  id="1"\n><query>x</query></search >',
            "",
            [("search", {"query": "x"})],
            id="newlines-in-open-and-close-tag",
        ),
        pytest.param("<get_time/>", "", [("get_time", {})], id="self-closing"),
        pytest.param("<get_time />", "", [("get_time", {})], id="self-closing-with-space"),
        pytest.param("<get_time></get_time>", "", [("get_time", {})], id="empty-element"),
        pytest.param(
            "Time: <get_time/>\nWeather: " + CALL,
            "Time: \nWeather: ",
            [("get_time", {}), WEATHER],
            id="self-closing-then-call",
        ),
        pytest.param(
            "<get_weather><city>東京 😀 e\u0301</city></get_weather>",
            "",
            [("get_weather", {"city": "東京 😀 e\u0301"})],
            id="unicode-value",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_call_forms_become_calls(
    source: str, text: str, calls: Calls, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(MORPH_XML, source, chunks=chunks, mode=mode)
    assert result.call_values == calls
    assert result.text == text
    assert result.errors == []


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("<div>Hello</div>", id="html"),
        pytest.param("<launch_rocket><when>now</when></launch_rocket>", id="undeclared-tool"),
        pytest.param("<get_weatherly><city>x</city></get_weatherly>", id="declared-name-prefix"),
        pytest.param("<city>Paris</city>", id="argument-tag-alone"),
        pytest.param("</get_weather> stray close", id="stray-close-tag"),
        pytest.param("a < b and <read_filex>", id="near-miss"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_only_declared_tool_names_open_calls(
    source: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(MORPH_XML, source, chunks=chunks, mode=mode)
    assert result.calls == []
    assert result.text == source
    assert result.errors == []


@pytest.mark.parametrize(
    ("body", "arguments"),
    [
        pytest.param("<count>3</count>", {"count": 3}, id="integer"),
        pytest.param("<count> -7 </count>", {"count": -7}, id="integer-with-spaces"),
        pytest.param("<ratio>1.5</ratio>", {"ratio": 1.5}, id="number"),
        pytest.param("<enabled>true</enabled>", {"enabled": True}, id="boolean-true"),
        pytest.param("<enabled>false</enabled>", {"enabled": False}, id="boolean-false"),
        pytest.param("<name>007</name>", {"name": "007"}, id="numeric-looking-string"),
        pytest.param(
            "<tags>a</tags><tags>b</tags>", {"tags": ["a", "b"]}, id="repeated-tags-to-array"
        ),
        pytest.param(
            "<sizes><item>1</item><item>2</item></sizes>", {"sizes": [1, 2]}, id="item-list"
        ),
        pytest.param("<tags><item>solo</item></tags>", {"tags": ["solo"]}, id="one-item-list"),
        pytest.param(
            "<options><depth>2</depth><mode>fast</mode></options>",
            {"options": {"depth": 2, "mode": "fast"}},
            id="object",
        ),
        pytest.param(
            "<nested><inner><flag>true</flag><values><item>1</item><item>x</item></values>"
            "</inner></nested>",
            {"nested": {"inner": {"flag": True, "values": [1, "x"]}}},
            id="nested-object-with-list",
        ),
        pytest.param(
            "<name>n</name>\n<count>2</count>\n<ratio>0.25</ratio>\n<enabled>true</enabled>",
            {"name": "n", "count": 2, "ratio": 0.25, "enabled": True},
            id="several-arguments-with-layout",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_values_are_coerced_by_the_schema(
    body: str, arguments: dict[str, Any], mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(MORPH_XML, f"<configure>{body}</configure>", chunks=chunks, mode=mode)
    assert result.call_values == [("configure", arguments)]
    assert result.errors == []
    check_contract(result)


@pytest.mark.parametrize(
    ("raw", "content"),
    [
        pytest.param(
            "if a < b && c > d: print('<div>')", "if a < b && c > d: print('<div>')", id="lt-amp"
        ),
        pytest.param(
            "&amp; &lt; &#60; &unknown;", "&amp; &lt; &#60; &unknown;", id="entities-kept"
        ),
        pytest.param("<div class='x'>hi</div>", "<div class='x'>hi</div>", id="html-markup"),
        pytest.param("<content>inner</content>", "<content>inner</content>", id="same-name-tag"),
        pytest.param(
            "<write_file>x</write_file> <write_file/>",
            "<write_file>x</write_file> <write_file/>",
            id="nested-tool-tags-balanced",
        ),
        pytest.param("x <!-- note --> y", "x <!-- note --> y", id="comment-kept"),
        pytest.param("  one line  ", "  one line  ", id="one-line-exact"),
        pytest.param("    return a - b;", "    return a - b;", id="one-line-indentation-kept"),
        pytest.param("\nline\n", "line\n", id="file-keeps-final-newline"),
        pytest.param("\r\nline\r\n  ", "line\r\n", id="crlf-layout"),
        pytest.param("\n", "", id="only-a-line-break"),
        pytest.param(
            "<svg><style><![CDATA[a > b {}]]></style></svg>",
            "<svg><style><![CDATA[a > b {}]]></style></svg>",
            id="inner-cdata-section-kept",
        ),
        pytest.param(
            "<![CDATA[a]]]]><![CDATA[>b]]>", "a]]>b", id="adjacent-sections-wrap-the-value"
        ),
        pytest.param(
            "\n    first\n    second\n  ", "    first\n    second\n", id="multi-line-layout-trimmed"
        ),
        pytest.param("first\n  second", "first\n  second", id="multi-line-no-layout"),
        pytest.param("<![CDATA[  kept  ]]>", "  kept  ", id="cdata-markers-removed"),
        pytest.param("\n  <![CDATA[a < b]]>\n", "a < b", id="layout-around-cdata-dropped"),
        pytest.param(
            "<![CDATA[</content></write_file>]]>",
            "</content></write_file>",
            id="cdata-holding-closing-tags",
        ),
        pytest.param(
            "x <![CDATA[a]]> and <![CDATA[b]]>",
            "x <![CDATA[a]]> and <![CDATA[b]]>",
            id="sections-inside-text-kept",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_string_values_are_raw_text_with_layout_trimmed(
    raw: str, content: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(MORPH_XML, _write_file(raw), chunks=chunks, mode=mode)
    assert result.call_values == [("write_file", {"path": "a.txt", "content": content})]
    assert result.text == ""
    assert result.errors == []
    check_contract(result)


@pytest.mark.parametrize("mode", MODES)
def test_tags_split_at_every_position_are_recognised(mode: ArgumentsMode) -> None:
    source = 'Hi! <search id="1"><query>a < b</query><limit>5</limit></search> Bye. <get_time/>'
    for cut in range(len(source) + 1):
        result = run(MORPH_XML, source, chunks=[cut], mode=mode)
        assert result.call_values == [("search", {"query": "a < b", "limit": 5}), ("get_time", {})]
        assert result.text == "Hi!  Bye. ", cut


DUPLICATE_PATH = "<write_file><path>a</path><path>b</path><content>x</content></write_file>"


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_two_tags_for_one_string_property_are_text_with_an_error(chunks: Chunks) -> None:
    result = run(MORPH_XML, DUPLICATE_PATH, chunks=chunks, mode=ArgumentsMode.ATOMIC)
    assert result.calls == []
    assert result.text == DUPLICATE_PATH
    assert result.error_kinds == [ErrorKind.DUPLICATE_STRING_TAG]


def test_two_tags_for_one_string_property_after_streaming_still_report_the_error() -> None:
    result = run(MORPH_XML, DUPLICATE_PATH, chunks=1)
    assert result.error_kinds == [ErrorKind.DUPLICATE_STRING_TAG]
    check_contract(result)


@pytest.mark.parametrize(
    ("source", "calls"),
    [
        pytest.param("<search><query>x</query>", [("search", {"query": "x"})], id="no-close-tag"),
        pytest.param(
            "<search><query>x</query>\n  <limit>3</limit>\n",
            [("search", {"query": "x", "limit": 3})],
            id="no-close-tag-trailing-layout",
        ),
        pytest.param("<get_time>", [("get_time", {})], id="open-tag-only-no-arguments"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_unclosed_call_with_a_complete_body_is_a_call(
    source: str, calls: Calls, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(MORPH_XML, source, chunks=chunks, mode=mode)
    assert result.call_values == calls
    assert result.text == ""
    assert result.errors == []
    check_contract(result)


INCOMPLETE_BODIES = [
    pytest.param("<search><query>x</query><limit>5", id="argument-unclosed"),
    pytest.param("<search><query>half a que", id="string-argument-unclosed"),
    pytest.param("<search><query>x</query><lim", id="cut-inside-argument-tag"),
    pytest.param("<write_file><content><![CDATA[abc</content>", id="cdata-unclosed"),
]


@pytest.mark.parametrize("source", INCOMPLETE_BODIES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_unclosed_call_with_an_incomplete_body_is_text_in_atomic_mode(
    source: str, chunks: Chunks
) -> None:
    result = run(MORPH_XML, "Sure. " + source, chunks=chunks, mode=ArgumentsMode.ATOMIC)
    assert result.calls == []
    assert result.text == "Sure. " + source
    assert result.error_kinds == [ErrorKind.UNFINISHED_CALL]


@pytest.mark.parametrize("source", INCOMPLETE_BODIES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_unclosed_call_with_an_incomplete_body_is_unfinished_in_incremental_mode(
    source: str, chunks: Chunks
) -> None:
    result = run(MORPH_XML, "Sure.\n" + source, chunks=chunks, small_call_chars=0)
    assert result.calls == []
    assert result.text == "Sure.\n"
    assert [(call.name, call.original) for call in result.unfinished] == [
        (source.split(">")[0].removeprefix("<"), source)
    ]
    assert result.error_kinds == [ErrorKind.UNFINISHED_CALL]
    check_contract(result)


def test_string_argument_streams_before_its_tag_closes() -> None:
    pieces = [
        "<search><query>\nline one\n",
        "line two\n",
        "line three\n",
        "</query><limit>",
        "5",
        "</limit>",
        "</search>",
    ]
    result = run(MORPH_XML, "".join(pieces), chunks=offsets(pieces), small_call_chars=0)
    batches = [fragments(batch) for batch in result.batches]
    assert isinstance(result.batches[0][0], ToolCallStart)
    # Before `</query>` arrives, the text so far has been sent, over several feeds.
    before_close = batches[:3]
    assert "line one\\nline two\\nline three" in "".join(before_close)
    assert sum("line" in batch for batch in before_close) >= 2
    # The integer is only sent once its tag closes; nothing flows for the bare "5".
    assert batches[4] == ""
    assert batches[5] == "5"
    [call] = result.calls
    assert call.input == {"query": "line one\nline two\nline three\n", "limit": 5}
    assert "".join(batches) == call.arguments
    check_contract(result)


def test_cdata_string_argument_streams_before_its_section_ends() -> None:
    pieces = [
        "<search><query>\n<![CDATA[if a < b:\n",
        "    x = '</search>'\n",
        "]]>\n</query>",
        "</search>",
    ]
    result = run(MORPH_XML, "".join(pieces), chunks=offsets(pieces), small_call_chars=0)
    batches = [fragments(batch) for batch in result.batches]
    assert "if a < b:\\n" in batches[0]
    assert "</search>" in batches[1]
    [call] = result.calls
    assert call.input == {"query": "if a < b:\n    x = '</search>'\n"}
    assert "".join(batches) == call.arguments
    assert result.errors == []
    check_contract(result)


def _decided_alike(source: str) -> tuple[str, Calls, list[ErrorKind]]:
    """What `protocol.parse` makes of `source`, after checking that the stream parser, in
    both modes and several chunkings, makes the same of it."""
    errors: list[ParseError] = []
    parts = get_protocol(MORPH_XML).parse(source, TOOLS, on_error=errors.append)
    text = "".join(part.text for part in parts if isinstance(part, TextDelta))
    calls = [(part.name, part.input) for part in parts if isinstance(part, ToolCall)]
    kinds = [error.kind for error in errors]
    for mode in MODES:
        for chunks in (None, 1, 3, 7):
            result = run(MORPH_XML, source, chunks=chunks, mode=mode)
            assert (result.text, result.call_values, result.error_kinds) == (text, calls, kinds)
            check_contract(result)
    return text, calls, kinds


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("Use `<read_file>` to read a file.", id="in-backticks"),
        pytest.param("Run `<get_time/>` for the time.", id="self-closing-in-backticks"),
        pytest.param(
            "Like `<read_file><path>a.py</path></read_file>`, say.", id="whole-call-in-backticks"
        ),
        pytest.param("The <read_file> tool reads a file.", id="prose-after-the-tag"),
        pytest.param("Call <read_file>  with a path.\nThen stop.", id="prose-after-blanks"),
        pytest.param("Ends with `<read_file>`", id="backtick-at-the-end"),
    ],
)
def test_a_tool_tag_mentioned_in_prose_is_text(source: str) -> None:
    assert _decided_alike(source) == (source, [], [])


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("Reading.\n<read_file>\n<path>a.py</path>\n</read_file>", id="line-break"),
        pytest.param("<read_file>  \n  <path>a.py</path></read_file>", id="blanks-line-break"),
        pytest.param("Now <read_file><path>a.py</path></read_file>", id="parameter-tag"),
        pytest.param("Now <read_file> <path>a.py</path></read_file>", id="space-parameter-tag"),
    ],
)
def test_a_tool_tag_followed_by_a_line_break_or_a_tag_is_a_call(source: str) -> None:
    _, calls, kinds = _decided_alike(source)
    assert calls == [("read_file", {"path": "a.py"})]
    assert kinds == []


def test_the_decision_waits_for_the_first_non_blank_character() -> None:
    pieces = ["Now <read_file>", "   ", "<path>a.py</path></read_file>"]
    result = run(MORPH_XML, "".join(pieces), chunks=offsets(pieces))
    released = [
        "".join(part.text for part in batch if isinstance(part, TextDelta))
        for batch in result.batches
    ]
    assert released[:2] == ["Now ", ""]  # neither the tag nor the blanks were sent as text
    assert result.call_values == [("read_file", {"path": "a.py"})]


@pytest.mark.parametrize(
    ("source", "calls", "kinds"),
    [
        pytest.param(
            '<write_file path="a.txt" content="Hello, world!"/>',
            [("write_file", {"path": "a.txt", "content": "Hello, world!"})],
            [],
            id="self-closing",
        ),
        pytest.param(
            "<search query='rust borrow checker' limit=\"3\"></search>",
            [("search", {"query": "rust borrow checker", "limit": 3})],
            [],
            id="coerced-by-schema",
        ),
        pytest.param(
            '<search query="a &amp; b &quot;c&quot; > d" limit="3">\n</search>',
            [("search", {"query": 'a & b "c" > d', "limit": 3})],
            [],
            id="entities-and-gt-in-a-value",
        ),
        pytest.param(
            '<search query="x" limit="3">\n<item>one</item>\n<item>two</item>\n</search>',
            [("search", {"query": "x", "limit": 3})],
            [ErrorKind.MALFORMED_XML],
            id="undeclared-children-dropped-with-an-error",
        ),
        pytest.param(
            '<search query="x"><limit>4</limit></search>',
            [("search", {"query": "x", "limit": 4})],
            [],
            id="attribute-and-declared-child",
        ),
        pytest.param(
            '<search id="7" ><query>x</query></search>',
            [("search", {"query": "x"})],
            [],
            id="undeclared-attribute-ignored",
        ),
    ],
)
def test_attributes_naming_declared_parameters_are_arguments(
    source: str, calls: Calls, kinds: list[ErrorKind]
) -> None:
    assert _decided_alike(source) == ("", calls, kinds)


def test_a_parameter_given_as_attribute_and_as_element_is_text_with_an_error() -> None:
    source = '<search query="x"><query>y</query></search>'
    assert _decided_alike(source) == (source, [], [ErrorKind.DUPLICATE_STRING_TAG])


def test_long_attribute_arguments_are_held_until_the_tag_ends() -> None:
    content = "<p>" + "x > y " * 200 + "</p>"
    source = f'Writing.\n<write_file path="a.html" content="{content}"/>'
    assert _decided_alike(source) == (
        "Writing.\n",
        [("write_file", {"path": "a.html", "content": content})],
        [],
    )


FOLLOW_UP = ToolSpec(
    "ask",
    "Ask the user.",
    {
        "type": "object",
        "properties": {
            "question": STRING,
            "follow_up": {"type": "array", "items": STRING},
            "sizes": {"type": "array", "items": {"type": "integer"}},
        },
    },
)


@pytest.mark.parametrize(
    ("body", "arguments"),
    [
        pytest.param(
            "<follow_up><suggest>A</suggest><suggest>B</suggest></follow_up>",
            {"follow_up": ["A", "B"]},
            id="wrapped-strings",
        ),
        pytest.param(
            "<follow_up>\n  <suggest>  A  </suggest>\n</follow_up>",
            {"follow_up": ["  A  "]},
            id="one-wrapped-item-exact",
        ),
        pytest.param("<sizes><n>1</n><n>2</n></sizes>", {"sizes": [1, 2]}, id="wrapped-integers"),
        pytest.param(
            "<follow_up><item>A</item><item>B</item></follow_up>",
            {"follow_up": ["A", "B"]},
            id="items-as-before",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_an_array_written_with_a_wrapper_is_a_list(
    body: str, arguments: dict[str, Any], mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(MORPH_XML, f"<ask>{body}</ask>", chunks=chunks, mode=mode, tools=[FOLLOW_UP])
    assert result.call_values == [("ask", arguments)]
    assert result.errors == []
    check_contract(result)


@pytest.mark.parametrize(
    ("raw", "content"),
    [
        pytest.param("    return a - b;", "    return a - b;", id="one-line-indented"),
        pytest.param("\nline\n", "line\n", id="file-final-newline"),
        pytest.param("\n\nblank first line\n", "\nblank first line\n", id="one-break-only"),
        pytest.param(
            "\n<svg><style><![CDATA[.a { fill: red }]]></style></svg>\n",
            "<svg><style><![CDATA[.a { fill: red }]]></style></svg>\n",
            id="svg-keeps-its-cdata",
        ),
        pytest.param("\n  <![CDATA[ x ]]>\n  ", " x ", id="whole-cdata-unwrapped"),
    ],
)
def test_values_keep_their_bytes_in_every_mode(raw: str, content: str) -> None:
    source = f"<write_file>\n<path>a</path>\n<content>{raw}</content>\n</write_file>"
    assert _decided_alike(source) == ("", [("write_file", {"path": "a", "content": content})], [])


def test_the_prompt_states_the_layout_rules() -> None:
    prompt = get_protocol(MORPH_XML).render_tools(list(TOOLS))
    assert "every character between the tags is kept" in prompt
    assert "indentation before a close tag on its own line" in prompt
    assert "not as an attribute" in prompt


def test_distinct_tag_names_compile_no_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    compile_pattern = re.compile

    def counting_compile(pattern: Any, flags: int = 0) -> re.Pattern[Any]:
        compiled.append(pattern)
        return compile_pattern(pattern, flags)

    parser = get_protocol(MORPH_XML).stream_parser(TOOLS)
    monkeypatch.setattr(re, "compile", counting_compile)
    body = "".join(f"<tag{i}>v</tag{i}>" for i in range(300))
    parts = parser.feed(f"<configure><options>{body}</options>{body}</configure>")
    parts += parser.finish()
    [call] = [part for part in parts if isinstance(part, ToolCall)]
    assert call.input["options"]["tag299"] == "v"
    # At most the called tool's body pattern and its declared parameter's, each once (either
    # may be compiled already): none for the 300 names no tool declares.
    assert len(compiled) <= 2, compiled
    assert not any("tag" in pattern for pattern in compiled), compiled


def test_an_object_argument_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[bytes] = []
    parse_document = etree.fromstring

    def counting_parse(text: bytes, parser: Any = None) -> Any:
        parsed.append(text)
        return parse_document(text, parser)

    monkeypatch.setattr(etree, "fromstring", counting_parse)
    source = "<configure><options><depth>2</depth><mode>fast</mode></options></configure>"
    result = run(MORPH_XML, source, chunks=4)
    assert result.call_values == [("configure", {"options": {"depth": 2, "mode": "fast"}})]
    assert len(parsed) == 1


def test_the_same_text_under_two_schemas_is_parsed_under_each() -> None:
    # Once streamed, each object argument's value is kept for the final parse: kept by its
    # text alone, `b`'s would have been `a`'s (a list inside), and the call would end
    # unfinished for arguments differing from those streamed.
    tool = ToolSpec(
        "configure",
        "Configure",
        {
            "type": "object",
            "properties": {
                "a": {"type": "object", "properties": {"x": {"type": "array"}}},
                "b": {"type": "object"},
            },
        },
    )
    source = "<configure><a><x><y>1</y></x></a><b><x><y>1</y></x></b></configure>"
    whole = get_protocol(MORPH_XML).parse(source, [tool])
    streamed = run(MORPH_XML, source, chunks=1, tools=[tool], small_call_chars=0)

    assert not streamed.errors
    assert streamed.call_values == [
        (call.name, call.input) for call in whole if isinstance(call, ToolCall)
    ]
    check_contract(streamed)


MANY_TOOLS = [ToolSpec(f"tool_{index:04d}") for index in range(3000)]


def _widest_alternation(pattern: str) -> int:
    """The most branches the regex engine tries one after another at one point of
    `pattern` (its own parser's reading: shared prefixes factored out, single characters
    made a set)."""
    widest, pending = 0, [re_parser.parse(pattern)]
    while pending:
        for op, argument in pending.pop():
            if op is re_constants.BRANCH:
                widest = max(widest, len(argument[1]))
                pending.extend(argument[1])
            elif op in (re_constants.SUBPATTERN, re_constants.MAX_REPEAT, re_constants.MIN_REPEAT):
                pending.append(argument[-1])
    return widest


def test_finding_a_tool_tag_tries_the_next_characters_not_every_tool_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With 3,000 declared tools, each `<` of 600 KB of `<tool_0001` cost 3,000 tries: 10 s.
    compiled: list[str] = []
    compile_pattern = re.compile

    def recording_compile(pattern: Any, flags: int = 0) -> re.Pattern[Any]:
        compiled.append(pattern)
        return compile_pattern(pattern, flags)

    monkeypatch.setattr(re, "compile", recording_compile)
    parser = get_protocol(MORPH_XML).stream_parser(MANY_TOOLS)
    monkeypatch.undo()
    assert compiled
    assert max(map(_widest_alternation, compiled)) <= len("0123456789")
    parts = parser.feed("<tool_0001" * 1000 + "<tool_2999>\n</tool_2999>") + parser.finish()
    assert [part.name for part in parts if isinstance(part, ToolCall)] == ["tool_2999"]


class _CountedName(str):
    """A tool name that counts how often a partial tag is compared with it."""

    comparisons = 0

    def startswith(self, *args: Any) -> bool:
        _CountedName.comparisons += 1
        return super().startswith(*args)


def test_a_partial_tool_tag_is_looked_up_not_compared_with_every_tool_name() -> None:
    tools = [ToolSpec(_CountedName(tool.name)) for tool in MANY_TOOLS]
    parser = get_protocol(MORPH_XML).stream_parser(tools)
    assert parser.feed("Hi ")
    _CountedName.comparisons = 0
    partial_tag = "<tool_299"  # only the last names declared begin with it
    held = [parser.feed(char) for char in partial_tag]
    assert held == [[]] * len(partial_tag)  # each still may become a tool's tag
    assert _CountedName.comparisons <= len(partial_tag)


@given(
    names=st.lists(st.text(alphabet="ab.(*", min_size=1, max_size=4), min_size=1, max_size=8),
    text=st.text(alphabet="ab.(*<> ", max_size=30),
)
def test_the_names_pattern_finds_what_an_alternation_longest_first_finds(
    names: list[str], text: str
) -> None:
    alternation = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    expected = [m.span(1) for m in re.finditer(rf"<({alternation})(?:\s[^>]*)?>", text)]
    found = [m.span(1) for m in re.finditer(rf"<({names_pattern(names)})(?:\s[^>]*)?>", text)]
    assert found == expected


def test_names_sharing_a_long_path_nest_the_pattern_no_deeper_than_its_bound() -> None:
    names = ["a" * length for length in range(1, 3 * MAX_NAME_TRIE_DEPTH)]
    pattern = re.compile(names_pattern(names))
    assert [pattern.fullmatch(name) is not None for name in names] == [True] * len(names)
    longest = pattern.match("a" * 500)
    assert longest is not None and longest.end() == len(names[-1])


# Several calls of one tool written in one element, as a 0.5B model wrote BFCL's "BMI for
# these two people": numbers given twice became one call with arrays of strings.
NUMBER = {"type": "number"}
BMI = ToolSpec(
    "calculate_bmi",
    "Body mass index.",
    {
        "type": "object",
        "properties": {"height": NUMBER, "weight": NUMBER, "unit": STRING},
        "required": ["height", "weight"],
    },
)
TWO_PEOPLE = [
    ("calculate_bmi", {"height": 6, "weight": 80}),
    ("calculate_bmi", {"height": 5.6, "weight": 60}),
]


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            "<calculate_bmi><height>6</height><weight>80</weight><height>5.6</height>"
            "<weight>60</weight></calculate_bmi>",
            id="the-same-arguments-again",
        ),
        pytest.param(
            "<calculate_bmi>\n<item><height>6</height><weight>80</weight></item>\n"
            "<item>\n  <height>5.6</height>\n  <weight>60</weight>\n</item>\n</calculate_bmi>",
            id="one-item-per-call",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_several_calls_written_in_one_element_are_several_calls(
    source: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(MORPH_XML, source, chunks=chunks, mode=mode, tools=[BMI])
    assert result.call_values == TWO_PEOPLE
    assert result.errors == []
    assert result.calls[0].original == source
    check_contract(result)


def test_arguments_beside_the_items_go_to_every_call() -> None:
    source = (
        "<calculate_bmi><unit>metric</unit><item><height>1.8</height><weight>80</weight></item>"
        "<item><height>1.6</height><weight>60</weight></item></calculate_bmi>"
    )
    result = run(MORPH_XML, source, tools=[BMI])
    assert result.call_values == [
        ("calculate_bmi", {"unit": "metric", "height": 1.8, "weight": 80}),
        ("calculate_bmi", {"unit": "metric", "height": 1.6, "weight": 60}),
    ]


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_streamed_call_followed_by_the_same_arguments_again_ends_as_the_first_call(
    chunks: Chunks,
) -> None:
    source = (
        "<get_weather><city>Paris</city><unit>celsius</unit>"
        "<city>Rome</city><unit>celsius</unit></get_weather>"
    )
    result = run(MORPH_XML, source, chunks=chunks, small_call_chars=0)

    assert result.call_values == [
        ("get_weather", {"city": "Paris", "unit": "celsius"}),
        ("get_weather", {"city": "Rome", "unit": "celsius"}),
    ]
    first = result.calls[0]
    assert "".join(result.deltas(first.id)) == first.arguments
    assert result.unfinished == []
    check_contract(result)


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            "<calculate_bmi><height>6</height><height>5.6</height><weight>80</weight>"
            "</calculate_bmi>",
            id="not-the-same-run-again",
        ),
        pytest.param(
            "<calculate_bmi><height>6</height><weight>80</weight><height>5.6</height>"
            "</calculate_bmi>",
            id="a-run-short-of-a-required-argument",
        ),
    ],
)
def test_a_number_given_twice_otherwise_is_text_with_an_error(source: str) -> None:
    result = run(MORPH_XML, source, tools=[BMI])
    assert result.calls == []
    assert result.text == source
    assert result.error_kinds == [ErrorKind.DUPLICATE_STRING_TAG]


def test_items_that_hold_no_arguments_are_dropped_with_an_error() -> None:
    source = "<get_weather><city>Paris</city><item>Rome</item><item>Oslo</item></get_weather>"
    assert _decided_alike(source) == ("", [WEATHER], [ErrorKind.MALFORMED_XML])


def test_one_item_holding_the_arguments_is_the_call() -> None:
    source = "<calculate_bmi><item><height>1.8</height><weight>80</weight></item></calculate_bmi>"
    result = run(MORPH_XML, source, tools=[BMI])
    assert result.call_values == [("calculate_bmi", {"height": 1.8, "weight": 80})]
    assert result.errors == []


class _CountingPattern:
    """A compiled pattern that adds up how many characters its searches are given to read
    (from the position they start at): the work a parser does, counted, not timed."""

    def __init__(self, pattern: re.Pattern[str], read: list[int]) -> None:
        self._pattern, self._read = pattern, read

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._pattern, name)
        if name not in ("search", "match", "fullmatch", "finditer", "findall"):
            return method

        def counted(string: str, pos: int = 0, *args: Any) -> Any:
            self._read[0] += len(string) - pos
            return method(string, pos, *args)

        return counted


def _count_pattern_reads(monkeypatch: pytest.MonkeyPatch, parser: Any) -> list[int]:
    """Wrap every compiled pattern of the protocols package and of `parser` to count reads."""
    import sys

    read = [0]
    owners = [module for name, module in sys.modules.items() if name.startswith("protocols.")]
    for owner in [*owners, parser]:
        for attribute, value in list(vars(owner).items()):
            if isinstance(value, re.Pattern):
                monkeypatch.setattr(owner, attribute, _CountingPattern(value, read))
    return read


@pytest.mark.parametrize(
    "opening",
    [
        pytest.param("<search ", id="attributes"),
        pytest.param('<search query="', id="in-a-quoted-value"),
        pytest.param("<think><search ", id="in-a-think-block"),
    ],
)
def test_a_long_unfinished_open_tag_costs_each_delta_its_own_length(
    monkeypatch: pytest.MonkeyPatch, opening: str
) -> None:
    # Held back and searched again whole on every delta: 60 KB fed one character at a time
    # cost 10-12 s, ~4,096 characters read per delta.
    parser = get_protocol(MORPH_XML).stream_parser(
        TOOLS, options=ParserOptions(off_protocol_calls=False)
    )
    read = _count_pattern_reads(monkeypatch, parser)
    source = opening + "a = b " * 10_000
    parts = [part for char in source for part in parser.feed(char)] + parser.finish()
    assert "".join(part.text for part in parts if isinstance(part, TextDelta)) == source.replace(
        "<think>", ""
    )
    assert read[0] < 20 * len(source)


def test_an_open_tag_inside_an_unfinished_attribute_waits_for_it() -> None:
    # Whole, the first tag is read first; streamed, the second completes first: the first,
    # still being written, decides. Here it never ends: at the output's end it is prose.
    source = '<search query="<read_file><path>a.py</path></read_file>\nAnd more'
    whole = run(MORPH_XML, source)
    assert whole.call_values == [("read_file", {"path": "a.py"})]
    assert whole.text == '<search query="\nAnd more'
    assert run(MORPH_XML, source, chunks=1).signature() == whole.signature()
    closed = source + '">\n</search>'
    assert run(MORPH_XML, closed, chunks=1).call_values == [
        ("search", {"query": "<read_file><path>a.py</path></read_file>\nAnd more"})
    ]

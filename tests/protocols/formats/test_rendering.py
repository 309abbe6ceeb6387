"""Tests for what the protocols write into the prompt: tool declarations with an example
call (and one of several calls where the protocol writes them otherwise), earlier calls
that parse back to the same arguments, and tool results tied to their call's name and id."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from parser_harness import MODES, PROTOCOL_NAMES, TOOLS, protocol_of, run

from protocols import ArgumentsMode, ToolCall, ToolSpec, get_protocol
from protocols.formats.qwen3_coder import FUNCTION_END, PARAMETER_END, PARAMETER_START

ONE_CALL_ONLY = re.compile(r"\b(at most|only|exactly) one\b|\ba single\b", re.IGNORECASE)


def _schema_texts(schema: dict[str, Any]) -> tuple[str, str]:
    return json.dumps(schema, ensure_ascii=False), json.dumps(
        schema, ensure_ascii=False, separators=(",", ":")
    )


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_render_tools_declares_every_tool_with_its_schema(protocol: str) -> None:
    text = get_protocol(protocol).render_tools(TOOLS)
    for tool in TOOLS:
        assert tool.name in text
        assert tool.description in text
        assert any(schema in text for schema in _schema_texts(tool.parameters)), tool.name


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("first", [0, 3, 5], ids=lambda index: TOOLS[index].name)
def test_render_tools_shows_its_example_calls_in_its_own_format(protocol: str, first: int) -> None:
    tools = [TOOLS[first], *TOOLS[:first], *TOOLS[first + 1 :]]
    prompt = get_protocol(protocol).render_tools(tools)
    # The prompt shows its calls as examples: a model that writes it back makes no call.
    assert not [p for p in get_protocol(protocol).parse(prompt, tools) if isinstance(p, ToolCall)]
    examples = [block.split("\n\n")[0] for block in prompt.split("for example:\n")[1:]]
    calls = [
        part
        for example in examples
        for part in get_protocol(protocol).parse(example, tools)
        if isinstance(part, ToolCall)
    ]
    # One call of the first tool; then, where the protocol shows how several calls are
    # written, one of the first tool and one of the second.
    one = [tools[0].name]
    assert [call.name for call in calls] in (one, [*one, tools[0].name, tools[1].name])


def test_json_mix_shows_several_calls_as_one_array_unless_one_call_is_asked_for() -> None:
    # A 1.5B model shown nothing, or blocks one after another, wrote one call where two
    # were due ("BMI for these two people"); shown an array, it wrote them all.
    protocol = get_protocol("json-mix")
    several = protocol.render_calls(
        [("get_weather", {"city": "..."}), ("read_file", {"path": "..."})]
    )
    assert several.count("<tool_call>") == 1 and several.count('"name"') == 2
    assert several in protocol.render_tools(TOOLS)
    assert "JSON array" not in protocol.render_tools(TOOLS, single_call=True)
    parsed = protocol.parse(several, TOOLS)
    assert [part.name for part in parsed if isinstance(part, ToolCall)] == [
        "get_weather",
        "read_file",
    ]


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("single_call", [False, True], ids=["several", "one"])
def test_render_tools_asks_a_call_built_on_another_to_wait_for_its_result(
    protocol: str, single_call: bool
) -> None:
    """Small models wrote a read and the write that needs what it returns in one answer,
    the value guessed or left as a placeholder."""
    text = get_protocol(protocol).render_tools(TOOLS, single_call=single_call)

    assert "needs what another call returns waits for it" in text


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_single_call_asks_for_one_call(protocol: str) -> None:
    renderer = get_protocol(protocol)
    assert ONE_CALL_ONLY.search(renderer.render_tools(TOOLS, single_call=True))
    assert not ONE_CALL_ONLY.search(renderer.render_tools(TOOLS))


@pytest.mark.parametrize("protocol", ["json-mix", "morph-xml"])
def test_render_tools_ends_by_restating_the_call_format(protocol: str) -> None:
    # Small models follow the instruction they read last, right before the conversation;
    # they fell back to fenced or bare calls when the format was stated only earlier.
    last_line = get_protocol(protocol).render_tools(TOOLS).splitlines()[-1]
    assert "exactly as in the example" in last_line
    assert "```" in last_line


CONTENTS = [
    pytest.param("if a < b && c > d: x = '&amp;'", id="lt-amp-entity"),
    pytest.param("<div class='x'>hi</div>", id="html"),
    pytest.param("def f():\n    return 1\n", id="newlines"),
    pytest.param("see </write_file> here", id="tool-closing-tag"),
    pytest.param("see </content> here", id="argument-closing-tag"),
    pytest.param("x </content> y </write_file> z", id="both-closing-tags"),
    pytest.param("see </tool_call> here", id="json-mix-end-tag"),
    pytest.param('<tool_call>{"name": "x"}</tool_call>', id="json-mix-call"),
    pytest.param("<![CDATA[x]]> and ]]>", id="cdata-markers"),
    pytest.param('quotes " and \\ backslash', id="quote-backslash"),
    pytest.param("東京 😀 e\u0301", id="unicode"),
    pytest.param("  padded  ", id="edge-spaces"),
    pytest.param("\nstarts with a blank line\n", id="leading-newline"),
    pytest.param("", id="empty"),
]


@pytest.mark.parametrize("content", CONTENTS)
@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_rendered_call_with_string_content_parses_back(protocol: str, content: str) -> None:
    arguments = {"path": "notes.md", "content": content}
    _assert_round_trip(protocol, "write_file", arguments)


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        pytest.param("get_weather", {"city": "Paris"}, id="one-string"),
        pytest.param("get_time", {}, id="no-arguments"),
        pytest.param("search", {"query": "x", "limit": 10}, id="string-and-integer"),
        pytest.param(
            "configure",
            {
                "name": "n",
                "count": -3,
                "ratio": 2.5,
                "enabled": False,
                "tags": ["a", "b"],
                "sizes": [1, 2, 3],
                "options": {"depth": 2, "mode": "fast"},
                "nested": {"inner": {"flag": True, "values": [1, "two"]}},
            },
            id="every-json-type",
        ),
        pytest.param("configure", {"tags": ["only"]}, id="one-item-list"),
        pytest.param("configure", {"tags": []}, id="empty-list"),
        pytest.param("configure", {"options": {"mode": "x<y & z"}}, id="nested-string-markup"),
    ],
)
@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_rendered_call_parses_back_to_the_same_arguments(
    protocol: str, name: str, arguments: dict[str, Any]
) -> None:
    _assert_round_trip(protocol, name, arguments)


@settings(max_examples=100, deadline=None)
@given(content=st.text(max_size=60), protocol=st.sampled_from(PROTOCOL_NAMES))
def test_any_rendered_string_argument_parses_back(content: str, protocol: str) -> None:
    # The documented qwen3-coder limit: values are never escaped, so they cannot hold these.
    qwen_tags = (PARAMETER_END, PARAMETER_START, FUNCTION_END)
    assume(protocol != "qwen3-coder" or not any(tag in content for tag in qwen_tags))
    _assert_round_trip(protocol, "write_file", {"path": "p", "content": content})


def _assert_round_trip(protocol: str, name: str, arguments: dict[str, Any]) -> None:
    text = protocol_of(protocol).render_call(name, arguments)
    for mode in MODES:
        for chunks in (None, 1):
            result = run(protocol, text, chunks=chunks, mode=mode)
            assert result.call_values == [(name, arguments)], (mode, chunks, text)
            assert result.text.strip() == ""
            assert result.errors == []


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_rendered_history_call_in_atomic_parse_keeps_text_around(protocol: str) -> None:
    call = get_protocol(protocol).render_call("get_weather", {"city": "Paris"})
    result = run(protocol, "Let me check.\n" + call + "\nDone.", mode=ArgumentsMode.ATOMIC)
    assert result.call_values == [("get_weather", {"city": "Paris"})]
    assert result.text == "Let me check.\n\nDone."


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_render_result_names_the_tool_call_id_and_content(protocol: str) -> None:
    text = get_protocol(protocol).render_result("get_weather", "call_abc123", "sunny, 20 C")
    assert "get_weather" in text
    assert "call_abc123" in text
    assert "sunny, 20 C" in text


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("sunny", id="plain"),
        pytest.param('{"port": 8123}\nline "2" \\ <b>', id="json-and-markup"),
    ],
)
def test_json_mix_result_is_the_content_as_it_is_after_a_line_naming_the_call(
    content: str,
) -> None:
    # As Qwen's template writes a result: no JSON object around it, which read like a call
    # (name beside the content) that a small model copied for its next one.
    text = get_protocol("json-mix").render_result("get_weather", "call_1", content)

    assert text == f"<tool_response>\nResult of get_weather (call_1):\n{content}\n</tool_response>"


def test_tools_are_built_from_openai_tool_entries() -> None:
    tool = ToolSpec.from_openai(
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    )
    assert tool == ToolSpec(
        "get_weather", "Weather.", {"type": "object", "properties": {"city": {"type": "string"}}}
    )


# Client-supplied schemas are untrusted: any JSON at any place a schema keyword expects.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
_SCHEMA_KEYWORDS = st.sampled_from(
    ["type", "properties", "required", "items", "enum", "anyOf", "oneOf", "default", "$ref"]
)
_MALFORMED_SCHEMA = st.recursive(
    st.dictionaries(_SCHEMA_KEYWORDS, _JSON, max_size=4),
    lambda inner: st.dictionaries(_SCHEMA_KEYWORDS, inner | _JSON, max_size=4),
    max_leaves=6,
)


@settings(max_examples=100, deadline=None)
@given(schema=_MALFORMED_SCHEMA, protocol=st.sampled_from(PROTOCOL_NAMES))
def test_malformed_schemas_never_break_rendering_or_parsing(
    schema: dict[str, Any], protocol: str
) -> None:
    tool = ToolSpec("probe", "", schema)
    rendered = protocol_of(protocol).render_tools([tool])
    assert "probe" in rendered
    call = protocol_of(protocol).render_call("probe", {"a": "1", "b": ["x"]})
    result = run(protocol, call, tools=[tool])
    assert [c.name for c in result.calls] == ["probe"]

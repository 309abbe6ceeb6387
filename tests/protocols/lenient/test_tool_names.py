"""A tool named in another spelling of a declared name (`.`, `-`, `_` and case aside) is that
tool, called by its declared name, with an error record saying so: OpenAI names cannot hold
a dot, so BFCL's `geodistance.find` is declared `geodistance_find`, and a model that knows
the original writes the dot."""

from __future__ import annotations

import json

import pytest
from parser_harness import CHUNKINGS, MODES, PROTOCOL_NAMES, Chunks, check_contract, run

from protocols import ArgumentsMode, ErrorKind, ToolCallStart, ToolSpec, UnknownTools
from protocols.lenient.tool_names import DeclaredTools

CITY = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}
TOOLS = (ToolSpec("geodistance_find", "Distance.", CITY), ToolSpec("get_weather", "", CITY))
FENCED = '```json\n{"name": "geodistance.find", "arguments": {"city": "Paris", "days": "2"}}\n```'


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_dotted_name_in_a_fenced_call_object_calls_the_declared_tool(
    protocol: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    result = run(protocol, FENCED, chunks=chunks, mode=mode, tools=TOOLS)

    # Coerced by the declared tool's schema, too.
    assert result.call_values == [("geodistance_find", {"city": "Paris", "days": 2})]
    assert result.text == ""
    assert result.error_kinds == [ErrorKind.TOOL_NAME_SPELLING]
    assert "geodistance.find" in result.errors[0].message
    check_contract(result)


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("written", ["Geodistance-Find", "GEODISTANCE_FIND", "geodistance.Find"])
def test_a_json_mix_call_in_another_spelling_streams_under_the_declared_name(
    written: str, chunks: Chunks
) -> None:
    call = json.dumps({"name": written, "arguments": {"city": "Paris"}})
    source = f"<tool_call>{call}</tool_call>"

    # Streamed from its first fragment, as a large call is.
    result = run("json-mix", source, chunks=chunks, small_call_chars=0, tools=TOOLS)

    starts = [part.name for part in result.parts if isinstance(part, ToolCallStart)]
    assert starts == ["geodistance_find"]
    assert result.call_values == [("geodistance_find", {"city": "Paris"})]
    assert result.error_kinds == [ErrorKind.TOOL_NAME_SPELLING]
    check_contract(result)


def test_a_qwen3_coder_function_in_another_spelling_is_the_declared_tool() -> None:
    source = (
        "<tool_call>\n<function=geodistance.find>\n<parameter=days>\n3\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    result = run("qwen3-coder", source, tools=TOOLS, unknown_tools=UnknownTools.TEXT)
    assert result.call_values == [("geodistance_find", {"days": 3})]
    assert result.error_kinds == [ErrorKind.TOOL_NAME_SPELLING]


def test_with_unknown_tools_as_text_another_spelling_is_still_declared() -> None:
    source = '<tool_call>{"name": "get.weather", "arguments": {"city": "Oslo"}}</tool_call>'
    result = run("json-mix", source, tools=TOOLS, unknown_tools=UnknownTools.TEXT)
    assert result.call_values == [("get_weather", {"city": "Oslo"})]


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_spelling_of_two_declared_names_is_neither(protocol: str) -> None:
    tools = (*TOOLS, ToolSpec("get-weather", "", CITY))
    source = json.dumps({"name": "Get.Weather", "arguments": {"city": "Oslo"}})
    result = run(protocol, source, tools=tools)
    assert result.calls == []
    assert result.text == source


def test_a_declared_name_is_itself_even_where_it_spells_another() -> None:
    tools = DeclaredTools([ToolSpec("get_weather"), ToolSpec("get-weather")])
    assert tools.declared_name("get-weather") == "get-weather"
    assert tools.declared_name("get_weather") == "get_weather"
    assert tools.declared_name("GET.WEATHER") is None
    assert list(tools) == ["get_weather", "get-weather"]


def test_another_spelling_is_no_name_at_all_when_it_spells_nothing_declared() -> None:
    tools = DeclaredTools(TOOLS)
    assert tools.declared_name("geodistance") is None
    assert tools.declared_name("geo_distance_find") is None  # separators are not dropped
    assert "geodistance.find" in tools and tools["geodistance.find"] is TOOLS[0]
    assert tools.parameters["Get-Weather"] is CITY

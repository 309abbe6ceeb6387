"""Tests for the explicit tool-choice path: the prompt that demands one `{name, arguments}`
object, the correction a reply without one gets, the JSON schema a structured-output upstream
is asked by, and `read_forced_call`, which reads whatever the model replied without raising:
the call it makes to an offered tool, or what is wrong with it. It never names a tool that
was not offered."""

from __future__ import annotations

import json
import re
import sys
from types import FrameType
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from parser_harness import PROTOCOL_NAMES, TOOLS

from protocols import ForcedReply, ToolSpec, get_protocol
from protocols.formats.forced_call import (
    forced_call_schema,
    read_forced_call,
    render_forced_call_correction,
    render_forced_call_prompt,
)

PARIS = {"city": "Paris"}
OBJECT = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


def _read(text: str, protocol: str = "json-mix", default_name: str | None = None) -> ForcedReply:
    return read_forced_call(text, get_protocol(protocol), TOOLS, default_name=default_name)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(OBJECT, id="bare-object"),
        pytest.param(f"\n  {OBJECT}  \n", id="object-with-whitespace"),
        pytest.param(f"```json\n{OBJECT}\n```", id="json-fence"),
        pytest.param(f"```\n{OBJECT}\n```", id="plain-fence"),
        pytest.param(f"Sure! Here is the call: {OBJECT} Hope that helps.", id="amid-prose"),
        pytest.param(
            f"I'll use {{braces}} first, then {OBJECT}", id="amid-prose-after-other-braces"
        ),
        pytest.param("{'name': 'get_weather', arguments: {city: 'Paris',}}", id="relaxed-json"),
        pytest.param(
            '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}',
            id="arguments-as-json-string",
        ),
        pytest.param(
            '{"type": "function", "function": {"name": "get_weather",'
            ' "arguments": "{\\"city\\": \\"Paris\\"}"}}',
            id="openai-shaped",
        ),
        pytest.param('{"tool": "get_weather", "parameters": {"city": "Paris"}}', id="other-keys"),
        pytest.param(
            "Sure: {'name': 'get_weather', 'arguments': {'city': 'Paris'}} ok",
            id="relaxed-json-amid-prose",
        ),
    ],
)
@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_one_object_becomes_the_call(text: str, protocol: str) -> None:
    reply = _read(text, protocol)
    call = reply.call()
    assert (reply.problem, call.name, call.input) == (None, "get_weather", PARIS)
    assert json.loads(call.arguments) == PARIS
    assert call.original == text


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_call_in_the_protocols_own_format_is_read(protocol: str) -> None:
    text = "Calling it now.\n" + get_protocol(protocol).render_call("get_weather", PARIS)
    reply = _read(text, protocol)
    assert (reply.problem, reply.name, reply.arguments) == (None, "get_weather", PARIS)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"arguments": {"city": "Paris"}}', id="arguments"),
        pytest.param('{"city": "Paris"}', id="bare-arguments"),
    ],
)
def test_missing_name_becomes_the_default_name(text: str) -> None:
    reply = _read(text, default_name="get_weather")
    assert (reply.problem, reply.name, reply.arguments) == (None, "get_weather", PARIS)


def test_missing_name_without_a_default_names_no_tool() -> None:
    reply = _read('{"arguments": {"city": "Paris"}}')
    assert reply.name is None
    assert reply.problem == "it named no tool"


@pytest.mark.parametrize(
    ("text", "default_name", "problem"),
    [
        pytest.param(
            '{"name": "search", "arguments": {"query": "x"}}',
            "get_weather",
            "it called 'search', which is not 'get_weather'",
            id="another-offered-tool-than-the-named-one",
        ),
        pytest.param(
            '{"name": "unknown", "arguments": {}}',
            None,
            "it called 'unknown', which is not one of the declared tools",
            id="an-undeclared-tool",
        ),
        pytest.param(
            '<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>',
            None,
            "it called 'delete_everything', which is not one of the declared tools",
            id="an-undeclared-tool-in-the-protocol",
        ),
    ],
)
def test_a_tool_that_was_not_offered_is_never_the_call(
    text: str, default_name: str | None, problem: str
) -> None:
    reply = _read(text, default_name=default_name)
    assert (reply.name, reply.arguments, reply.problem) == (default_name, None, problem)


def test_any_offered_tool_is_the_call_without_a_default() -> None:
    reply = _read('{"name": "search", "arguments": {"query": "x"}}')
    assert (reply.problem, reply.name, reply.arguments) == (None, "search", {"query": "x"})


@pytest.mark.parametrize(
    ("text", "default_name"),
    [
        pytest.param("I cannot do that.", "get_weather", id="prose-with-default"),
        pytest.param("I cannot do that.", None, id="prose-without-default"),
        pytest.param("", "get_weather", id="empty"),
        pytest.param("{{{ not json", None, id="broken-json"),
        pytest.param("[1, 2, 3]", "get_weather", id="array"),
        pytest.param(
            '{"name": "get_weather", "arguments": "not json"}',
            None,
            id="named-call-with-unparseable-arguments",
        ),
    ],
)
@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_an_unreadable_reply_says_what_is_wrong_and_calls_only_a_known_tool_with_nothing(
    text: str, default_name: str | None, protocol: str
) -> None:
    reply = _read(text, protocol, default_name)
    assert reply.problem is not None and reply.arguments is None
    assert reply.text == text
    if reply.name is not None:  # the named tool, or the offered one the reply named
        call = reply.call()
        assert (call.input, call.arguments) == ({}, "{}")


def test_each_call_gets_its_own_id() -> None:
    first, second = _read(OBJECT).call(), _read(OBJECT).call()
    assert first.id.startswith("call_")
    assert first.id != second.id


@settings(max_examples=100, deadline=None)
@given(
    text=st.text(max_size=200)
    | st.lists(st.sampled_from(['{"name": ', '"get_weather"', "{", "}", "'", "[", ","])).map(
        "".join
    ),
    default_name=st.none() | st.just("get_weather"),
    protocol=st.sampled_from(PROTOCOL_NAMES),
)
def test_any_reply_is_read_without_raising_and_names_only_an_offered_tool(
    text: str, default_name: str | None, protocol: str
) -> None:
    reply = _read(text, protocol, default_name)
    assert reply.name in {tool.name for tool in TOOLS} | {None}
    assert (reply.problem is None) == (reply.name is not None and reply.arguments is not None)
    if default_name is not None:
        assert reply.name == default_name
    if reply.problem is None:
        call = reply.call()
        assert json.loads(call.arguments) == call.input


def test_the_correction_says_what_was_wrong_and_asks_again() -> None:
    correction = render_forced_call_correction("it held no tool call", named="get_weather")
    assert "it held no tool call" in correction
    assert "get_weather" in correction and '"name"' in correction and '"arguments"' in correction


@pytest.mark.parametrize("named", [None, "search"])
def test_the_schema_admits_exactly_the_calls_to_the_offered_tools(named: str | None) -> None:
    offered = [tool for tool in TOOLS if named in (None, tool.name)]
    response_format = forced_call_schema(offered)
    assert response_format["type"] == "json_schema"
    schema = response_format["json_schema"]["schema"]
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"name": "search", "arguments": {"query": "x", "limit": 3}})
    assert not validator.is_valid({"name": "search", "arguments": {"query": "x", "limit": "3"}})
    assert not validator.is_valid({"name": "unknown", "arguments": {}})
    assert not validator.is_valid({"arguments": {"query": "x"}})
    assert validator.is_valid({"name": "read_file", "arguments": {"path": "a"}}) is (named is None)


# A tool whose schema names its parts by reference, as pydantic writes nested models (and a
# tree whose nodes hold nodes: a reference to the schema's own root).
ORDER = ToolSpec(
    "place_order",
    "Order items.",
    {
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "size": {"$ref": "#/$defs/Size"}},
                "required": ["sku"],
            },
            "Size": {"enum": ["S", "M", "L"]},
        },
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        "required": ["items"],
    },
)
TREE = ToolSpec(
    "plant",
    "Plant a tree.",
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "children": {"items": {"$ref": "#"}}},
        "required": ["name"],
    },
)


@pytest.mark.parametrize("tools", [[ORDER, TREE], [ORDER], [TREE]], ids=["both", "defs", "root"])
def test_the_schema_keeps_the_references_of_each_tools_schema(tools: list[ToolSpec]) -> None:
    schema = forced_call_schema(tools)["json_schema"]["schema"]
    validator = jsonschema.Draft202012Validator(schema)
    order = {"items": [{"sku": "a", "size": "M"}, {"sku": "b"}]}
    tree = {"name": "oak", "children": [{"name": "acorn", "children": []}]}
    for tool, good, bad in [
        (ORDER, order, {"items": [{"sku": "a", "size": "XL"}]}),
        (TREE, tree, {"name": "oak", "children": [{"children": []}]}),
    ]:
        if tool in tools:
            assert validator.is_valid({"name": tool.name, "arguments": good})
            assert not validator.is_valid({"name": tool.name, "arguments": bad})
    # The client's own schema is left as it was: the prompt still declares it.
    assert ORDER.parameters["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}
    assert "$defs" in ORDER.parameters


def _example_calls(prompt: str) -> list[dict[str, Any]]:
    examples = []
    for line in prompt.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and set(value) == {"name", "arguments"}:
            examples.append(value)
    return examples


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def test_prompt_for_a_named_tool_offers_only_that_tool() -> None:
    prompt = render_forced_call_prompt(TOOLS, named="search")
    assert _mentions(prompt, "search")
    assert json.dumps(TOOLS[3].parameters) in prompt
    for tool in TOOLS:
        if tool.name != "search":
            assert not _mentions(prompt, tool.name), tool.name
    assert [example["name"] for example in _example_calls(prompt)] == ["search"]


def test_prompt_without_a_named_tool_offers_every_tool() -> None:
    prompt = render_forced_call_prompt(TOOLS, named=None)
    for tool in TOOLS:
        assert _mentions(prompt, tool.name), tool.name
    assert len(_example_calls(prompt)) == 1
    assert '"name"' in prompt and '"arguments"' in prompt


def _chained_models(count: int) -> ToolSpec:
    """A schema of `count` definitions, each referring to the next, as generated models do."""
    definitions = {
        f"Model{index}": {"properties": {"next": {"$ref": f"#/$defs/Model{(index + 1) % count}"}}}
        for index in range(count)
    }
    return ToolSpec(
        "t", "", {"$defs": definitions, "properties": {"root": {"$ref": "#/$defs/Model0"}}}
    )


def _builtin_calls(count: int) -> int:
    """Calls of built-in functions and methods made while the call schema of
    `_chained_models(count)` is built: the work, counted."""
    tool = _chained_models(count)
    calls = 0

    def count_calls(_frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal calls
        calls += event == "c_call"

    sys.setprofile(count_calls)
    try:
        forced_call_schema([tool])
    finally:
        sys.setprofile(None)
    return calls


def test_moving_the_references_of_many_definitions_costs_linear_work() -> None:
    # Each reference was tried against every definition: 10,000 of them took 9 s.
    assert _builtin_calls(4_000) < 6 * _builtin_calls(1_000)
    schema = forced_call_schema([_chained_models(3)])["json_schema"]["schema"]
    assert schema["$defs"]["t.Model2"] == {"properties": {"next": {"$ref": "#/$defs/t.Model0"}}}

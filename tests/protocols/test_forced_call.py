"""Tests for the explicit tool-choice path: the prompt that demands one `{name, arguments}`
object, and `parse_forced_call`, which turns whatever the model replied into exactly one
call, falling back to the default name and `{}` arguments (with an error) instead of raising."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from parser_harness import PROTOCOL_NAMES, TOOLS

from protocols import ErrorKind, ParseError, ToolCall, get_protocol
from protocols.forced_call import parse_forced_call, render_forced_call_prompt

PARIS = {"city": "Paris"}
OBJECT = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


def _choose(
    text: str, protocol: str = "json-mix", default_name: str | None = None
) -> tuple[ToolCall, list[ParseError]]:
    errors: list[ParseError] = []
    call = parse_forced_call(
        text, get_protocol(protocol), TOOLS, default_name=default_name, on_error=errors.append
    )
    return call, errors


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
    call, errors = _choose(text, protocol)
    assert (call.name, call.input) == ("get_weather", PARIS)
    assert json.loads(call.arguments) == PARIS
    assert errors == []


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_call_in_the_protocols_own_format_is_read(protocol: str) -> None:
    text = "Calling it now.\n" + get_protocol(protocol).render_call("get_weather", PARIS)
    call, errors = _choose(text, protocol)
    assert (call.name, call.input) == ("get_weather", PARIS)
    assert errors == []


@pytest.mark.parametrize(
    ("text", "default_name", "name"),
    [
        pytest.param(
            '{"arguments": {"city": "Paris"}}', "get_weather", "get_weather", id="default"
        ),
        pytest.param('{"arguments": {"city": "Paris"}}', None, "unknown", id="no-default"),
        pytest.param('{"city": "Paris"}', "get_weather", "get_weather", id="bare-arguments"),
    ],
)
def test_missing_name_becomes_the_default_name(
    text: str, default_name: str | None, name: str
) -> None:
    call, _errors = _choose(text, default_name=default_name)
    assert (call.name, call.input) == (name, PARIS)


def test_another_tools_name_with_a_named_default_becomes_the_default_with_an_error() -> None:
    call, errors = _choose(
        '{"name": "search", "arguments": {"query": "x"}}', default_name="get_weather"
    )
    assert call.name == "get_weather"
    assert [error.kind for error in errors] == [ErrorKind.TOOL_CHOICE_FALLBACK]


def test_any_tool_name_is_kept_without_a_default() -> None:
    call, errors = _choose('{"name": "search", "arguments": {"query": "x"}}')
    assert (call.name, call.input) == ("search", {"query": "x"})
    assert errors == []


@pytest.mark.parametrize(
    ("text", "default_name", "name"),
    [
        pytest.param("I cannot do that.", "get_weather", "get_weather", id="prose-with-default"),
        pytest.param("I cannot do that.", None, "unknown", id="prose-without-default"),
        pytest.param("", "get_weather", "get_weather", id="empty"),
        pytest.param("{{{ not json", None, "unknown", id="broken-json"),
        pytest.param("[1, 2, 3]", "get_weather", "get_weather", id="array"),
        pytest.param(
            '{"name": "get_weather", "arguments": "not json"}',
            None,
            "get_weather",
            id="named-call-with-unparseable-arguments",
        ),
    ],
)
@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_unparseable_reply_gives_empty_arguments_and_an_error(
    text: str, default_name: str | None, name: str, protocol: str
) -> None:
    call, errors = _choose(text, protocol, default_name)
    assert (call.name, call.input, call.arguments) == (name, {}, "{}")
    assert [error.kind for error in errors] == [ErrorKind.TOOL_CHOICE_FALLBACK]
    assert errors[0].original == text


def test_the_call_keeps_the_reply_as_its_original_and_gets_an_id() -> None:
    first, _ = _choose(OBJECT)
    second, _ = _choose(OBJECT)
    assert first.original == OBJECT
    assert first.id.startswith("call_")
    assert first.id != second.id


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(max_size=200)
    | st.lists(st.sampled_from(['{"name": ', '"get_weather"', "{", "}", "'", "[", ","])).map(
        "".join
    ),
    default_name=st.none() | st.just("get_weather"),
    protocol=st.sampled_from(PROTOCOL_NAMES),
)
def test_any_reply_gives_exactly_one_call_whose_arguments_are_its_input(
    text: str, default_name: str | None, protocol: str
) -> None:
    call, _errors = _choose(text, protocol, default_name)
    assert call.name
    assert isinstance(call.input, dict)
    assert json.loads(call.arguments) == call.input
    if default_name is not None:
        assert call.name == default_name


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

"""A model's call format given only as data, with no code: a route's `response_schema` and
`response_template` (the model's tokenizer_config.json) and a `format` written in the routes
file are read at every front door, streamed and whole, over real HTTP; the routes that do not
name them keep their text as text."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gemini_client import declaration, generate
from google.genai import types
from messages_client import anthropic_tool, create, tool_uses
from messages_client import text as message_text
from responses_client import calls as response_calls
from responses_client import flat_function, respond
from responses_client import text as response_text
from servers import TIME_TOOL, WEATHER_TOOL, Proxy, StartProxy, chat_body
from upstream_server import PARIS_WEATHER, Reply, ScriptedUpstream

TOOLS = [WEATHER_TOOL, TIME_TOOL]
Answered = tuple[str, list[tuple[str | None, Any]]]
# A model whose checkpoint says how it writes calls: a tokenizer_config.json's schema.
TOKENIZER_CONFIG = {
    "eos_token": "<|end|>",
    "response_schema": {
        "type": "object",
        "properties": {
            "role": {"const": "assistant"},
            "content": {"type": "string"},
            "tool_calls": {
                "type": "array",
                "x-regex-iterator": r"<\|act\|>\s*(.*?)\s*<\|/act\|>",
                "items": {
                    "type": "object",
                    "properties": {
                        "type": {"const": "function"},
                        "function": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "x-regex": r"^(\w+)"},
                                "arguments": {
                                    "type": "object",
                                    "x-regex-key-value": r"<(?P<key>\w+)=(?P<value>[^>]*)>",
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}
# A checkpoint whose response template says how it writes calls: the tool named in the open
# tag, its arguments tagged pairs.
TEMPLATE_CONFIG = {
    "response_template": {
        "start_anchor": "<|assistant|>",
        "fields": {
            "thinking": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {
                "open_pattern": r"<\|do\|>(?P<name>\w+):",
                "close": "<|/do|>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {"tag_pattern": r"<(?P<key>\w+)>(?P<value>[^<]*)</(?P=key)>"},
                "transform": {"function": {"name": "{name}", "arguments": "{content}"}},
            },
        },
    }
}
ROUTES = """
[routes.schema-model]
model = "test-model"
response_schema = "tokenizer_config.json"

[routes.template-model]
model = "test-model"
response_template = "template/tokenizer_config.json"

[routes.own-model]
model = "test-model"
format = { open = "@@call {name}\\n", arguments = "json", close = "@@end" }
"""
SAID = {
    "schema-model": "Checking.\n<|act|>get_weather <city=Paris><|/act|>",
    "template-model": "Checking.\n<|do|>get_weather:<city>Paris</city><|/do|>",
    "own-model": 'Checking.\n@@call get_weather\n{"city": "Paris"}\n@@end',
}


def _chat(proxy: Proxy, stream: bool, model: str) -> Answered:
    completion = proxy.chat(chat_body(*TOOLS, stream=stream, model=model))
    return completion.content or "", list(completion.calls)


def _responses(proxy: Proxy, stream: bool, model: str) -> Answered:
    tools = [flat_function(tool) for tool in TOOLS]
    response = respond(proxy, stream, model=model, input="Weather?", tools=tools)
    return response_text(response), list(response_calls(response))


def _messages(proxy: Proxy, stream: bool, model: str) -> Answered:
    message = create(proxy, stream, model=model, tools=[anthropic_tool(tool) for tool in TOOLS])
    return message_text(message), list(tool_uses(message))


def _gemini(proxy: Proxy, stream: bool, model: str) -> Answered:
    declared = [types.Tool(function_declarations=[declaration(tool) for tool in TOOLS])]
    answer = generate(proxy, stream, model=model, tools=declared)
    return answer.text or "", answer.called


DOORS: dict[str, Callable[[Proxy, bool, str], Answered]] = {
    "chat": _chat,
    "responses": _responses,
    "messages": _messages,
    "gemini": _gemini,
}


@pytest.fixture
def proxy(start_proxy: StartProxy, tmp_path: Path) -> Proxy:
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(TOKENIZER_CONFIG))
    (tmp_path / "template").mkdir()
    (tmp_path / "template" / "tokenizer_config.json").write_text(json.dumps(TEMPLATE_CONFIG))
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    return start_proxy(routes_file=str(routes))


@pytest.mark.parametrize("model", SAID)
@pytest.mark.parametrize("door", DOORS)
def test_a_format_given_as_data_is_read_at_every_door(
    upstream: ScriptedUpstream, proxy: Proxy, door: str, model: str, stream: bool
) -> None:
    upstream.script(Reply(*_pieces(SAID[model])))

    text, calls = DOORS[door](proxy, stream, model)

    assert (text.strip(), calls) == ("Checking.", [PARIS_WEATHER])


@pytest.mark.parametrize("model", ["schema-model", "template-model"])
@pytest.mark.parametrize("door", DOORS)
def test_a_route_that_names_no_format_keeps_it_as_text(
    upstream: ScriptedUpstream, proxy: Proxy, door: str, stream: bool, model: str
) -> None:
    upstream.script(Reply(SAID[model]))

    text, calls = DOORS[door](proxy, stream, "test-model")

    assert (text, calls) == (SAID[model], [])


def _pieces(text: str) -> list[str]:
    """The output in pieces of three characters, as a stream delivers tokens: the markers
    arrive split."""
    return [text[start : start + 3] for start in range(0, len(text), 3)]

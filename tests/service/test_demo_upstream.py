"""The demo upstream, driven in-process over ASGI: it answers rendered tools with a call in
the protocol's own format, and everything else with labelled plain text. Last, the served
proxy in front of the served demo, as a newcomer first meets the pair."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from servers import WEATHER_TOOL, StartProxy, chat_body, serve

from protocols import Protocol, ToolCall, ToolSpec, get_protocol
from service.demo_upstream import (
    STREAM_CHUNK_CHARS,
    arguments_from_question,
    choose_tool,
    create_demo_upstream,
    find_declared_tools,
)

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city", "unit"],
    },
)
READ_FILE = ToolSpec(
    name="read_file",
    description="Read a file from the workspace.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
QUESTION = "What is the weather in Paris today?"
QUESTION_MESSAGE = {"role": "user", "content": QUESTION}
# JSON text nested this deep, around a string this long: each object of it decoded on its own
# would read the string again, hundreds of times.
DEEP = 400
LONG_STRING = "x" * 10_000


@pytest.fixture
def text_protocol(protocol: str) -> Protocol:
    """The protocol object for conftest's `protocol` name (each test runs once per protocol)."""
    return get_protocol(protocol)


def conversation(text_protocol: Protocol, *turns: dict[str, Any]) -> list[dict[str, Any]]:
    """Messages as the proxy forwards them: the tools rendered into the system prompt."""
    system = {"role": "system", "content": text_protocol.render_tools([READ_FILE, WEATHER])}
    return [system, *turns]


async def post_chat(text_protocol: Protocol, body: Any) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_demo_upstream(text_protocol))
    async with httpx.AsyncClient(transport=transport, base_url="http://demo") as client:
        return await client.post("/v1/chat/completions", json=body)


def streamed_chunks(response: httpx.Response) -> list[dict[str, Any]]:
    """The decoded `data:` payloads of an event stream that must end with `[DONE]`."""
    payloads = [line.removeprefix("data: ") for line in response.text.splitlines() if line]
    assert payloads[-1] == "[DONE]"
    return [json.loads(payload) for payload in payloads[:-1]]


def reply_text(response: httpx.Response) -> str:
    content: str = response.json()["choices"][0]["message"]["content"]
    return content


@pytest.mark.anyio
async def test_models_lists_the_single_demo_model() -> None:
    transport = httpx.ASGITransport(app=create_demo_upstream(get_protocol("json-mix")))
    async with httpx.AsyncClient(transport=transport, base_url="http://demo") as client:
        response = await client.get("/v1/models")

    assert response.status_code == 200
    assert [model["id"] for model in response.json()["data"]] == ["demo"]


@pytest.mark.anyio
async def test_question_gets_a_call_to_the_tool_sharing_a_word_with_it(
    text_protocol: Protocol,
) -> None:
    messages = conversation(text_protocol, {"role": "user", "content": QUESTION})
    response = await post_chat(text_protocol, {"model": "demo", "messages": messages})

    assert response.json()["object"] == "chat.completion"
    content = reply_text(response)
    parts = text_protocol.parse(content, [READ_FILE, WEATHER])
    calls = [(part.name, part.input) for part in parts if isinstance(part, ToolCall)]
    assert content.startswith("(demo upstream)")
    assert calls == [("get_weather", {"city": "Paris", "unit": "celsius"})]


@pytest.mark.anyio
async def test_stream_splits_the_same_reply_into_small_chunks_then_done(
    text_protocol: Protocol,
) -> None:
    messages = conversation(text_protocol, {"role": "user", "content": QUESTION})
    whole = await post_chat(text_protocol, {"messages": messages})
    streamed = await post_chat(text_protocol, {"messages": messages, "stream": True})

    chunks = streamed_chunks(streamed)
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
    texts = [delta.get("content", "") for delta in deltas]
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert deltas[0]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert max(len(text) for text in texts) <= STREAM_CHUNK_CHARS
    assert "".join(texts) == reply_text(whole)


@pytest.mark.anyio
async def test_usage_chunk_comes_last_only_when_include_usage_is_asked() -> None:
    json_mix = get_protocol("json-mix")
    body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}

    without_usage = streamed_chunks(await post_chat(json_mix, body))
    with_usage = streamed_chunks(
        await post_chat(json_mix, {**body, "stream_options": {"include_usage": True}})
    )

    assert all("usage" not in chunk for chunk in without_usage)
    assert with_usage[-1]["choices"] == []
    usage = with_usage[-1]["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0


@pytest.mark.anyio
async def test_tool_result_after_a_call_gets_plain_text(text_protocol: Protocol) -> None:
    call_text = text_protocol.render_call("get_weather", {"city": "Paris", "unit": "celsius"})
    result_text = text_protocol.render_result("get_weather", "call_1", "18 degrees and sunny")
    messages = conversation(
        text_protocol,
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": call_text},
        {"role": "user", "content": result_text},
    )
    content = reply_text(await post_chat(text_protocol, {"messages": messages}))

    parts = text_protocol.parse(content, [WEATHER])
    assert content.startswith("(demo upstream) The tool answered:")
    assert "18 degrees and sunny" in content
    assert not any(isinstance(part, ToolCall) for part in parts)


@pytest.mark.anyio
async def test_without_tools_the_reply_says_it_is_a_demo_and_echoes_the_user() -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "Hello there"}]}]
    content = reply_text(await post_chat(get_protocol("json-mix"), {"messages": messages}))

    assert content.startswith("(demo upstream) I am a stand-in, not a model.")
    assert "Hello there" in content


@pytest.mark.anyio
@pytest.mark.parametrize(
    "body",
    [{"messages": []}, {"messages": "hi"}, {"messages": ["hi"]}, ["not", "an", "object"]],
)
async def test_malformed_request_gets_a_400_in_openai_error_shape(body: Any) -> None:
    response = await post_chat(get_protocol("json-mix"), body)

    assert response.status_code == 400
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}


def test_declared_tools_are_the_json_objects_with_name_and_parameters() -> None:
    system_text = (
        'Config {"name": "not a tool"} and a broken {"name": "x", '
        'then {"type": "function", "function": {"name": "search", "parameters": {}}}'
    )

    assert find_declared_tools(system_text) == [ToolSpec(name="search", parameters={})]


def nested(depth: int, inner: str, *, closed: bool = True) -> str:
    """`inner` as the value of `depth` nested objects, their braces closed or not."""
    return '{"a": ' * depth + inner + "}" * depth * closed


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "never-closed"])
def test_declared_tools_are_found_in_one_pass_over_nested_json(
    monkeypatch: pytest.MonkeyPatch, closed: bool
) -> None:
    tool = '{"name": "search", "parameters": {}}'
    system_text = nested(DEEP, f'["{LONG_STRING}", {tool}]', closed=closed) + f" then {tool}"
    scanned = decoded_characters(monkeypatch)

    tools = find_declared_tools(system_text)

    assert sum(scanned) <= len(system_text)
    # Never closed, the outer object breaks after the tool in it: that one is not seen.
    assert tools == [ToolSpec(name="search", parameters={})] * (1 + closed)


def decoded_characters(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The characters each JSON decode reads, up to its value's end or the point it broke."""
    scanned: list[int] = []
    raw_decode = json.JSONDecoder.raw_decode

    def counted(self: json.JSONDecoder, text: str, start: int = 0) -> tuple[Any, int]:
        try:
            value, end = raw_decode(self, text, start)
        except json.JSONDecodeError as error:
            scanned.append(error.pos - start)
            raise
        scanned.append(end - start)
        return value, end

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counted)
    return scanned


@pytest.mark.anyio
@pytest.mark.parametrize(
    "body",
    [
        json.dumps(
            {"messages": [{"role": "system", "content": '{"a": ' * 5000}, QUESTION_MESSAGE]}
        ).encode(),
        b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ],
    ids=["in-the-system-prompt", "in-the-body"],
)
async def test_json_nested_too_deeply_gets_a_400_in_openai_error_shape(body: bytes) -> None:
    transport = httpx.ASGITransport(app=create_demo_upstream(get_protocol("json-mix")))
    async with httpx.AsyncClient(transport=transport, base_url="http://demo") as client:
        response = await client.post("/v1/chat/completions", content=body)

    assert response.status_code == 400
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}


def test_tool_is_chosen_by_its_name_then_its_description_then_first_declared() -> None:
    assert choose_tool([READ_FILE, WEATHER], "Weather around the workspace?") == WEATHER
    assert choose_tool([WEATHER, READ_FILE], "What is in my workspace?") == READ_FILE
    assert choose_tool([WEATHER, READ_FILE], "Hello") == WEATHER


def test_example_arguments_fill_every_schema_type_from_the_question() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "metric": {"type": ["boolean", "null"]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "window": {"properties": {"start": {"type": "number"}}, "required": ["start"]},
            "optional_note": {"type": "string"},
        },
        "required": ["city", "days", "metric", "tags", "window"],
    }

    assert arguments_from_question(schema, "Forecast for Lyon please") == {
        "city": "Lyon",
        "days": 1,
        "metric": True,
        "tags": ["a"],
        "window": {"start": 1},
    }


def test_example_string_falls_back_to_the_last_word_without_a_proper_noun() -> None:
    assert arguments_from_question({"type": "string"}, "list the files in src") == "src"


def test_proxy_in_front_of_the_demo_answers_with_native_tool_calls(
    start_proxy: StartProxy, protocol: str, stream: bool
) -> None:
    with serve(create_demo_upstream(get_protocol(protocol))) as demo_url:
        proxy = start_proxy(upstream_base_url=demo_url + "/v1", tool_protocol=protocol)
        completion = proxy.chat(chat_body(WEATHER_TOOL, stream=stream))

    assert completion.calls == [("get_weather", {"city": "Paris"})]
    assert completion.finish_reason == "tool_calls"
    assert completion.content.startswith("(demo upstream)")

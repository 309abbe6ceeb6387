"""The request rewrite, without a server: tools into the system prompt, tool history into
text, tool fields out of the upstream body."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import Mock

import pyjson5
import pytest

from protocols import ToolSpec, get_protocol
from protocols.lenient import relaxed_json
from protocols.lenient.relaxed_json import RELAXED_PARSE_BUDGET_CHARS
from service.exchange import rewrite
from service.exchange.request import PART_SEPARATOR, parse_chat_request
from service.exchange.rewrite import needs_rewrite, rewrite_request
from service.wire.errors import ProxyError

PROTOCOL = get_protocol("json-mix")
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
QUESTION = {"role": "user", "content": "Weather in Paris?"}
CALL = {
    "role": "assistant",
    "content": "Checking.",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ],
}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}


def rewritten(upstream_model: str | None = None, **body: Any) -> dict[str, Any]:
    request = parse_chat_request(json.dumps({"model": "m", **body}).encode())
    return rewrite_request(request, PROTOCOL, upstream_model)


def test_tools_text_is_appended_to_the_first_system_message() -> None:
    messages = [{"role": "system", "content": "Be terse."}, QUESTION]

    sent = rewritten(messages=messages, tools=[WEATHER])["messages"]

    tools_text = PROTOCOL.render_tools([ToolSpec.from_openai(WEATHER)])
    assert sent[0] == {"role": "system", "content": "Be terse.\n\n" + tools_text}
    assert sent[1:] == [QUESTION]


def test_a_developer_message_takes_the_tools_like_a_system_message() -> None:
    sent = rewritten(messages=[{"role": "developer", "content": "Hi."}, QUESTION], tools=[WEATHER])

    assert sent["messages"][0]["role"] == "developer"
    assert sent["messages"][0]["content"].startswith("Hi.\n\n")


def test_a_system_message_is_inserted_first_when_there_is_none() -> None:
    sent = rewritten(messages=[QUESTION], tools=[WEATHER])["messages"]

    assert sent[0]["role"] == "system"
    assert "get_weather" in sent[0]["content"]
    assert sent[1] == QUESTION


def test_an_assistant_call_becomes_its_text_followed_by_the_rendered_call() -> None:
    sent = rewritten(messages=[QUESTION, CALL, RESULT])["messages"]

    expected = "Checking.\n" + PROTOCOL.render_call("get_weather", {"city": "Paris"})
    assert sent[1] == {"role": "assistant", "content": expected}


def test_call_arguments_are_read_leniently_and_kept_as_written_when_unreadable() -> None:
    call = {**CALL, "tool_calls": [dict(CALL["tool_calls"][0])]}
    call["tool_calls"][0]["function"] = {"name": "get_weather", "arguments": "{city: 'Rome'}"}
    broken = {**CALL, "tool_calls": [dict(CALL["tool_calls"][0])]}
    broken["tool_calls"][0]["function"] = {"name": "get_weather", "arguments": "{{{"}

    lenient = rewritten(messages=[QUESTION, call])["messages"][1]["content"]
    as_written = rewritten(messages=[QUESTION, broken])["messages"][1]["content"]

    assert lenient.endswith(PROTOCOL.render_call("get_weather", {"city": "Rome"}))
    assert as_written.endswith(PROTOCOL.render_call("get_weather", "{{{"))


def test_reading_the_history_stops_at_the_request_parse_budget_leaving_the_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 1 MB of JSON5 arguments in a history took seconds to read, again on every continuation.
    json5_reads = Mock(wraps=pyjson5.loads)
    monkeypatch.setattr(relaxed_json.pyjson5, "loads", json5_reads)
    arguments = "{" + ", ".join(f"k{index}: {index}" for index in range(60_000)) + "}"
    # One such read fits the budget, two do not.
    assert RELAXED_PARSE_BUDGET_CHARS // 2 < len(arguments) < RELAXED_PARSE_BUDGET_CHARS * 3 // 4
    calls = [
        {"id": f"call_{n}", "type": "function", "function": {"name": "f", "arguments": arguments}}
        for n in (1, 2)
    ]
    history = {"role": "assistant", "content": None, "tool_calls": calls}

    sent = rewritten(messages=[QUESTION, history])["messages"][1]["content"]

    read = PROTOCOL.render_call("f", {f"k{index}": index for index in range(60_000)})
    as_written = PROTOCOL.render_call("f", arguments)  # past the budget: not read
    assert sent == PART_SEPARATOR.join([read, as_written])
    assert json5_reads.call_count == 1


def test_consecutive_results_become_one_user_message_named_after_their_calls() -> None:
    second = {"role": "tool", "tool_call_id": "call_2", "content": "noon"}
    calls = {
        **CALL,
        "tool_calls": [
            *CALL["tool_calls"],
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_time", "arguments": "{}"},
            },
        ],
    }

    sent = rewritten(messages=[QUESTION, calls, RESULT, second])["messages"]

    assert sent[2] == {
        "role": "user",
        "content": PROTOCOL.render_result("get_weather", "call_1", "sunny")
        + "\n"
        + PROTOCOL.render_result("get_time", "call_2", "noon"),
    }
    assert len(sent) == 3


def test_an_image_in_a_tool_result_stays_a_part_of_the_user_message() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    result = {**RESULT, "content": [{"type": "text", "text": "sunny"}, image]}

    sent = rewritten(messages=[QUESTION, CALL, result])["messages"][2]

    rendered = PROTOCOL.render_result("get_weather", "call_1", "sunny")
    assert sent == {"role": "user", "content": [{"type": "text", "text": rendered}, image]}


def test_tool_fields_leave_the_body_and_every_other_field_stays() -> None:
    extras = {"temperature": 0.2, "stop": ["x"], "seed": 7, "top_k": 5, "stream": True}

    sent = rewritten(
        "upstream-name",
        messages=[QUESTION],
        tools=[WEATHER],
        tool_choice="auto",
        parallel_tool_calls=True,
        **extras,
    )

    assert set(sent) == {"model", "messages", *extras}
    assert sent["model"] == "upstream-name"
    assert all(sent[key] == value for key, value in extras.items())


def test_a_forced_choice_asks_upstream_for_one_whole_answer() -> None:
    sent = rewritten(
        messages=[QUESTION],
        tools=[WEATHER],
        tool_choice="required",
        stream=True,
        stream_options={"include_usage": True},
    )

    assert sent["stream"] is False
    assert "stream_options" not in sent


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param({"messages": [QUESTION]}, False, id="plain-chat"),
        pytest.param({"messages": [QUESTION], "tools": []}, True, id="empty-tools-field"),
        pytest.param({"messages": [QUESTION, CALL, RESULT]}, True, id="tool-history"),
    ],
)
def test_only_a_request_without_tools_or_tool_history_passes_through(
    body: dict[str, Any], expected: bool
) -> None:
    assert needs_rewrite(parse_chat_request(json.dumps(body).encode())) is expected


@pytest.mark.parametrize(
    ("body", "param"),
    [
        pytest.param(b"not json", None, id="not-json"),
        pytest.param(b"[]", None, id="not-an-object"),
        pytest.param(b'{"messages": []}', "messages", id="no-messages"),
        pytest.param(b'{"messages": [{"role": "bot"}]}', "messages[0].role", id="bad-role"),
        pytest.param(
            b'{"messages": [{"role": "user"}], "tools": [{"type": "function"}]}',
            "tools[0]",
            id="tool-without-function",
        ),
        pytest.param(
            json.dumps(
                {
                    "messages": [QUESTION],
                    "tools": [WEATHER],
                    "tool_choice": {"type": "function", "function": {"name": "nope"}},
                }
            ).encode(),
            "tool_choice",
            id="undeclared-tool-choice",
        ),
        *(
            pytest.param(json.dumps({"messages": [QUESTION], "n": n}).encode(), "n", id=f"n-{n!r}")
            for n in (0, -1, "2", 1.5, True)
        ),
    ],
)
def test_malformed_requests_are_400s_naming_the_param(body: bytes, param: str | None) -> None:
    with pytest.raises(ProxyError) as caught:
        parse_chat_request(body)

    assert caught.value.status == 400
    assert caught.value.param == param


def test_a_tool_prompt_kept_from_an_earlier_request_is_never_another_tools() -> None:
    """The rendered prompt is kept by what it is rendered from: a change to a description,
    a schema, a tool's kind, the protocol, the protocol's own tags or the one-call rule
    renders anew."""
    described = {"type": "function", "function": {**WEATHER["function"], "description": "Now."}}
    celsius = json.loads(json.dumps(WEATHER))
    celsius["function"]["parameters"]["properties"]["unit"] = {"enum": ["C"]}
    free_form = {"type": "custom", "custom": {"name": "get_weather", "description": "Now."}}
    protocols = (
        PROTOCOL,
        get_protocol("json-mix", call_start="<call>", call_end="</call>"),
        get_protocol("morph-xml"),
    )

    for tools in ([WEATHER], [described], [celsius], [free_form], [WEATHER, described]):
        for protocol in protocols:
            for single in (False, True):
                body = {"model": "m", "messages": [QUESTION], "tools": tools}
                if single:
                    body["parallel_tool_calls"] = False
                request = parse_chat_request(json.dumps(body).encode())
                sent = rewrite_request(request, protocol, None)["messages"][0]["content"]
                assert sent == protocol.render_tools(request.tools, single_call=single)


def test_the_tool_prompts_kept_are_bounded() -> None:
    for index in range(2 * rewrite.RENDERED_TOOLS_KEPT):
        tool = {"type": "function", "function": {"name": f"tool_{index}"}}
        request = parse_chat_request(
            json.dumps({"model": "m", "messages": [QUESTION], "tools": [tool]}).encode()
        )
        rewrite_request(request, PROTOCOL, None)

    assert len(rewrite._rendered) == rewrite.RENDERED_TOOLS_KEPT

"""The Response object as the Responses API reference and the Open Responses specification
define it, over raw HTTP: every field they require, in every response whole or streamed (each
snapshot an event carries), stored and read back; the parameters a request sets reported as
set, the ones it leaves out as OpenAI's documented defaults, and what the proxy cannot honour
(truncation, background, service tiers, log probabilities) as what it did instead. A request
names its model; compacted and listed messages carry their status."""

from __future__ import annotations

from typing import Any

import pytest
from responses_client import WEATHER_FUNCTION, assert_response_object
from servers import MODEL, Proxy, read_events
from upstream_server import WEATHER_CALL, Reply, ScriptedUpstream

QUESTION = "What is the weather in Paris?"
# OpenAI's documented values for a request that sets none of them, and the proxy's own.
DEFAULTS = {
    "temperature": 1.0,
    "top_p": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "top_logprobs": 0,
    "text": {"format": {"type": "text"}, "verbosity": "medium"},
    "reasoning": {"effort": None, "summary": None},
    "truncation": "disabled",
    "background": False,
    "service_tier": "default",
    "max_tool_calls": None,
    "safety_identifier": None,
    "prompt_cache_key": None,
    "completed_at": None,
}
SET = {  # parameters a request sets, as the response reports them
    "temperature": 0.2,
    "top_p": 0.9,
    "presence_penalty": 0.5,
    "frequency_penalty": -0.25,
    "text": {"format": {"type": "json_object"}, "verbosity": "low"},
    "reasoning": {"effort": "low", "summary": "auto"},
    "max_tool_calls": 3,
    "safety_identifier": "user-1234",
    "prompt_cache_key": "conversation-42",
}
# Asked for, but not what the proxy does: reported as what it did.
NOT_HONOURED = {"truncation": "auto", "background": True, "service_tier": "flex", "top_logprobs": 5}


def created(proxy: Proxy, stream: bool, **body: Any) -> tuple[dict[str, Any], list[Any]]:
    """`POST /v1/responses` over raw HTTP: the final response, and the streamed events."""
    body = {"model": MODEL, "input": QUESTION, **body}
    if not stream:
        answer = proxy.http.post("/v1/responses", json=body)
        assert answer.status_code == 200, answer.text
        return answer.json(), []
    events = proxy.events({**body, "stream": True}, "/v1/responses")
    return events[-1]["response"], events


def test_every_response_and_snapshot_holds_every_field_the_schema_requires(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("Let me check. ", WEATHER_CALL["json-mix"]))

    response, events = created(proxy, stream, tools=[WEATHER_FUNCTION])

    assert_response_object(response)
    assert response["status"] == "completed"
    assert response["created_at"] <= response["completed_at"]
    assert {key: response[key] for key in DEFAULTS if key != "completed_at"} == {
        key: value for key, value in DEFAULTS.items() if key != "completed_at"
    }
    snapshots = [event["response"] for event in events if "response" in event]
    for snapshot in snapshots:
        assert_response_object(snapshot)
    if stream:  # completed_at is set when the response is, not before
        assert [snapshot["completed_at"] for snapshot in snapshots[:2]] == [None, None]
        assert snapshots[-1]["completed_at"] == response["completed_at"]


def test_the_stored_copy_and_its_replay_hold_every_field_as_answered(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Sunny."))
    answered, _ = created(proxy, False, **SET)

    stored = proxy.http.get(f"/v1/responses/{answered['id']}").json()
    replay = proxy.http.get(f"/v1/responses/{answered['id']}", params={"stream": "true"})
    events = list(read_events(replay.text.splitlines()))
    snapshots = [event["response"] for event in events if "response" in event]

    assert stored == answered
    assert_response_object(stored)
    for snapshot in snapshots:
        assert_response_object(snapshot)
    assert snapshots[-1] == answered  # completed at the same time, reporting the same


def test_the_parameters_a_request_sets_are_reported_as_set_and_sent_upstream(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply('{"city": "Paris"}'))

    response, _ = created(proxy, stream, **SET, **NOT_HONOURED)

    assert_response_object(response)
    assert {key: response[key] for key in SET} == SET
    assert {key: response[key] for key in NOT_HONOURED} == {
        key: DEFAULTS[key] for key in NOT_HONOURED
    }
    [sent] = upstream.chat_requests
    sampling = ("temperature", "top_p", "presence_penalty", "frequency_penalty")
    assert {key: sent.json[key] for key in sampling} == {key: SET[key] for key in sampling}


def test_function_tools_are_echoed_with_every_field_and_their_strictness(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Sunny."))
    bare = {"type": "function", "name": "get_time"}  # no description, schema or strict
    strict = {**WEATHER_FUNCTION, "strict": True}
    unsaid = {key: value for key, value in WEATHER_FUNCTION.items() if key != "strict"}

    response, _ = created(proxy, False, tools=[bare, strict, unsaid])

    assert_response_object(response)
    assert response["tools"] == [
        {**bare, "description": None, "parameters": None, "strict": False},
        strict,
        {**unsaid, "strict": False},  # as the proxy holds calls to it: not to its whole schema
    ]


def test_output_text_and_its_events_carry_no_log_probabilities(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Sunny", ", 24 C."))

    response, events = created(proxy, True)

    [message] = response["output"]
    assert message["content"] == [
        {"type": "output_text", "text": "Sunny, 24 C.", "annotations": [], "logprobs": []}
    ]
    text_events = [event for event in events if event["type"].startswith("response.output_text")]
    assert [event["type"] for event in text_events] == [
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
    ]
    assert all(event["logprobs"] == [] for event in text_events)
    parts = [event["part"] for event in events if event["type"].startswith("response.content_part")]
    assert parts[-1] == message["content"][0]


def test_an_incomplete_response_has_no_completion_time(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("It is sunny and", finish_reason="length"))

    response, _ = created(proxy, stream, max_output_tokens=4)

    assert_response_object(response)
    assert (response["status"], response["completed_at"]) == ("incomplete", None)


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/responses/compact"])
@pytest.mark.parametrize("model", [None, "", 7], ids=["absent", "empty", "number"])
def test_a_request_that_names_no_model_is_a_400_naming_the_field(
    upstream: ScriptedUpstream, proxy: Proxy, path: str, model: Any
) -> None:
    body: dict[str, Any] = {"input": QUESTION}
    if model is not None:
        body["model"] = model

    answer = proxy.http.post(path, json=body)

    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", "model")
    assert error["code"] == ("missing_required_parameter" if model is None else "invalid_value")
    assert isinstance(error["message"], str)
    assert upstream.chat_requests == []


def test_input_tokens_are_counted_without_a_model(proxy: Proxy) -> None:
    # OpenAI's endpoint takes the model as optional: the estimate needs none.
    answer = proxy.http.post("/v1/responses/input_tokens", json={"input": QUESTION})

    assert answer.status_code == 200 and answer.json()["input_tokens"] > 0


def test_compacted_and_listed_messages_carry_their_status(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    said = [
        {"type": "message", "role": "user", "content": "We launch on Tuesday."},
        {"type": "message", "role": "assistant", "content": "Tuesday it is."},
    ]
    upstream.script(Reply("Noted."), Reply("The launch is on Tuesday."))
    answered, _ = created(proxy, False, input=said)

    compacted = proxy.http.post(
        "/v1/responses/compact",
        json={"model": MODEL, "input": said, "prompt_cache_key": "launch"},
    ).json()
    listed = proxy.http.get(f"/v1/responses/{answered['id']}/input_items?order=asc").json()

    user, compaction = compacted["output"]
    assert (user["type"], user["status"], user["role"]) == ("message", "completed", "user")
    assert user["content"] == [{"type": "input_text", "text": said[0]["content"]}]
    assert compaction["type"] == "compaction" and isinstance(compaction["encrypted_content"], str)
    assert [(item["status"], item["role"]) for item in listed["data"]] == [
        ("completed", "user"),
        ("completed", "assistant"),
    ]
    assert listed["data"][1]["content"] == [
        {"type": "output_text", "text": said[1]["content"], "annotations": [], "logprobs": []}
    ]

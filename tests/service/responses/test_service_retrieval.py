"""A stored response read back through the official SDK, on both store backends (this
process's memory, and a real Valkey server): `responses.retrieve` as it was answered, or
streamed again as the events a client read when it was answered, `responses.delete`,
`responses.input_items.list` page by page, `responses.cancel`; another key's response is
not found, exactly as one never stored."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from observability import scrape
from responses_client import PATCH_CUSTOM, WEATHER_FUNCTION, response_from_events
from servers import MODEL, Proxy, StartProxy
from upstream_server import PATCH_CALL, WEATHER_CALL, Reply, ScriptedUpstream

from protocols import get_protocol
from service.exchange.event_writer import PIECE_CHARS

QUESTION = "What is the weather in Paris?"
KEYS = "key-a,key-b"
SPAWN = {
    "type": "function",
    "name": "spawn_agent",
    "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
}
AGENTS = {"type": "namespace", "name": "agents", "description": "Sub-agents.", "tools": [SPAWN]}
TOOL_SEARCH = {"type": "tool_search", "execution": "client", "parameters": {"type": "object"}}


@pytest.fixture(params=["memory", "redis"])
def store_settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "memory":
        return {}
    return {"response_store_url": request.getfixturevalue("redis_url")}


@pytest.fixture
def stored_proxy(start_proxy: StartProxy, store_settings: dict[str, Any]) -> Proxy:
    return start_proxy(**store_settings)


def created_events(proxy: Proxy, **params: Any) -> list[dict[str, Any]]:
    with proxy.client.responses.create(model=MODEL, stream=True, **params) as events:
        return [event.model_dump() for event in events]


def replayed_events(proxy: Proxy, response_id: str, **params: Any) -> list[dict[str, Any]]:
    with proxy.client.responses.retrieve(response_id, stream=True, **params) as events:
        return [event.model_dump() for event in events]


def without_deltas(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events but their text deltas (which the model cut its own way), unnumbered."""
    return [
        {key: value for key, value in event.items() if key != "sequence_number"}
        for event in events
        if not event["type"].endswith(".delta")
    ]


def test_a_response_is_retrieved_as_it_was_answered(
    upstream: ScriptedUpstream, stored_proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("Let me check. ", WEATHER_CALL["json-mix"]))
    params = {"input": QUESTION, "tools": [WEATHER_FUNCTION]}
    if stream:
        answered = response_from_events(created_events(stored_proxy, **params))
    else:
        answered = stored_proxy.client.responses.create(model=MODEL, **params).model_dump()

    retrieved = stored_proxy.client.responses.retrieve(answered["id"]).model_dump()

    assert retrieved == answered
    assert [item["type"] for item in retrieved["output"]] == ["message", "function_call"]


def search_then_spawn(proxy: Proxy, upstream: ScriptedUpstream) -> dict[str, Any]:
    """The second turn of a conversation whose tool search loaded a namespace's tool, which
    the model then calls: its call item names the namespace."""
    search = get_protocol("json-mix").render_call("tool_search", {"query": "agents"})
    spawn = get_protocol("json-mix").render_call("spawn_agent", {"message": "Go."})
    upstream.script(Reply(search))
    first = proxy.client.responses.create(model=MODEL, input=QUESTION, tools=[TOOL_SEARCH])
    [call] = first.model_dump()["output"]
    loaded = {"type": "tool_search_output", "call_id": call["call_id"], "tools": [AGENTS]}
    upstream.script(Reply("Spawning.", spawn, reasoning=("An agent can look.",)))
    return {"previous_response_id": first.id, "input": [loaded], "tools": [TOOL_SEARCH]}


@pytest.mark.parametrize(
    "answer",
    ["text-and-call", "custom-call", "reasoning-and-loaded-namespace-call", "incomplete"],
)
def test_a_retrieved_stream_is_the_event_sequence_the_client_read_when_it_was_answered(
    upstream: ScriptedUpstream, stored_proxy: Proxy, answer: str
) -> None:
    params: dict[str, Any] = {"input": QUESTION}
    if answer == "text-and-call":
        upstream.script(Reply("Let me check. ", WEATHER_CALL["json-mix"]))
        params["tools"] = [WEATHER_FUNCTION]
    elif answer == "custom-call":
        upstream.script(Reply(PATCH_CALL["json-mix"]))
        params["tools"] = [PATCH_CUSTOM]
    elif answer == "incomplete":
        upstream.script(Reply("It is sun", "ny and", finish_reason="length"))
    else:
        params = search_then_spawn(stored_proxy, upstream)
    answered = created_events(stored_proxy, **params)
    response_id = answered[0]["response"]["id"]

    replayed = replayed_events(stored_proxy, response_id)

    assert without_deltas(replayed) == without_deltas(answered)
    assert response_from_events(replayed) == response_from_events(answered)
    retrieved = stored_proxy.client.responses.retrieve(response_id).model_dump()
    assert response_from_events(replayed) == retrieved


def test_a_retrieved_stream_starts_after_the_event_the_client_names(
    upstream: ScriptedUpstream, stored_proxy: Proxy
) -> None:
    upstream.script(Reply("Let me check. ", WEATHER_CALL["json-mix"]))
    response = stored_proxy.client.responses.create(
        model=MODEL, input=QUESTION, tools=[WEATHER_FUNCTION]
    )
    whole = replayed_events(stored_proxy, response.id)

    for after in (0, 4, len(whole) - 2, len(whole) + 3):
        assert (
            replayed_events(stored_proxy, response.id, starting_after=after) == whole[after + 1 :]
        )


def test_a_long_response_streamed_again_starts_after_any_event_of_its_end(
    upstream: ScriptedUpstream, stored_proxy: Proxy
) -> None:
    # Its last events, each carrying all its text, are sent in pieces: those of the events
    # before the one named are left out, however the pieces fall.
    text = "A long answer, line after line.\n" * (3 * PIECE_CHARS // 32)
    upstream.script(Reply(text))
    response = stored_proxy.client.responses.create(model=MODEL, input=QUESTION)
    whole = replayed_events(stored_proxy, response.id)
    assert response_from_events(whole)["output"][0]["content"][0]["text"] == text

    for after in range(len(whole) - 6, len(whole)):
        assert (
            replayed_events(stored_proxy, response.id, starting_after=after) == whole[after + 1 :]
        )


def test_a_deleted_response_is_not_found_nor_continued(
    upstream: ScriptedUpstream, stored_proxy: Proxy
) -> None:
    upstream.script(Reply("The plan is in the drawer."))
    client = stored_proxy.client
    response = client.responses.create(model=MODEL, input="Where is the plan?")
    answer_id = response.output[0].id

    deleted = stored_proxy.http.delete(f"/v1/responses/{response.id}")

    assert deleted.status_code == 200
    assert deleted.json() == {"id": response.id, "object": "response", "deleted": True}
    with pytest.raises(openai.NotFoundError) as retrieved:
        client.responses.retrieve(response.id)
    assert retrieved.value.code == "response_not_found"
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(response.id)  # once is all
    for named in (
        {"previous_response_id": response.id},
        {"input": [{"type": "item_reference", "id": answer_id}]},
    ):
        with pytest.raises(openai.BadRequestError):
            client.responses.create(model=MODEL, **{"input": "And?", **named})
    assert len(upstream.chat_requests) == 1


def test_the_sdk_deletes_a_response(upstream: ScriptedUpstream, stored_proxy: Proxy) -> None:
    upstream.script(Reply("Hi."))
    response = stored_proxy.client.responses.create(model=MODEL, input="Hello")

    assert stored_proxy.client.responses.delete(response.id) is None

    with pytest.raises(openai.NotFoundError):
        stored_proxy.client.responses.retrieve(response.id)
    # Counted as the Responses API's, not as requests relayed upstream.
    requests = scrape(stored_proxy.http)
    assert requests.value("toolcall_proxy_requests_total", route="responses") == 3
    assert requests.value("toolcall_proxy_requests_total", route="passthrough") == 0


def conversation(proxy: Proxy, upstream: ScriptedUpstream) -> tuple[str, list[dict[str, Any]]]:
    """A second turn continued by `previous_response_id`, and the items it answered as they
    are listed: the first request's, the first answer's, then its own."""
    upstream.script(Reply(WEATHER_CALL["json-mix"]), Reply("Sunny, 24 C."))
    body = {"model": MODEL, "input": QUESTION, "tools": [WEATHER_FUNCTION]}
    first = proxy.http.post("/v1/responses", json=body).json()
    [call] = first["output"]
    result = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
    asked = {"type": "message", "role": "user", "content": "And tomorrow?"}
    second = proxy.client.responses.create(
        model=MODEL, previous_response_id=first["id"], input=[result, asked]
    )
    # A message is listed with its status: one a client sent was whole when it was sent.
    return second.id, [
        {
            "type": "message",
            "role": "user",
            "status": "completed",
            "content": [{"type": "input_text", "text": QUESTION}],
        },
        call,
        result,
        {
            **asked,
            "status": "completed",
            "content": [{"type": "input_text", "text": "And tomorrow?"}],
        },
    ]


def without_ids(items: list[Any]) -> list[dict[str, Any]]:
    return [{key: value for key, value in item.items() if key != "id"} for item in items]


def test_input_items_are_listed_page_by_page_each_with_an_id(
    upstream: ScriptedUpstream, stored_proxy: Proxy
) -> None:
    response_id, asked = conversation(stored_proxy, upstream)
    path = f"/v1/responses/{response_id}/input_items"

    listed = stored_proxy.http.get(path, params={"order": "asc"}).json()
    first_page = stored_proxy.http.get(path, params={"order": "asc", "limit": 1}).json()
    # The SDK pages on from each page's last id: three pages of two, one and none.
    paged = stored_proxy.client.responses.input_items.list(response_id, order="asc", limit=2)
    newest_first = stored_proxy.client.responses.input_items.list(response_id)

    assert without_ids(listed["data"]) == without_ids(asked)
    ids = [item["id"] for item in listed["data"]]
    assert len(set(ids)) == len(ids) == 4
    assert ids[1] == asked[1]["id"]  # the proxy's own call item keeps its id
    assert (listed["first_id"], listed["last_id"], listed["has_more"]) == (ids[0], ids[3], False)
    assert first_page == {
        "object": "list",
        "data": listed["data"][:1],
        "first_id": ids[0],
        "last_id": ids[0],
        "has_more": True,
    }
    assert [item.id for item in paged] == ids
    assert [item.id for item in newest_first.data] == ids[::-1]
    assert newest_first.has_more is False


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=x", "limit"),
        ("order=up", "order"),
        ("after=msg_unknown", "after"),
    ],
)
def test_a_bad_input_items_query_is_a_400_naming_it(
    upstream: ScriptedUpstream, proxy: Proxy, query: str, param: str
) -> None:
    upstream.script(Reply("Hi."))
    response = proxy.client.responses.create(model=MODEL, input="Hello")

    answer = proxy.http.get(f"/v1/responses/{response.id}/input_items?{query}")

    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == param


def test_cancel_is_a_400_as_every_response_is_answered_before_its_request_returns(
    upstream: ScriptedUpstream, stored_proxy: Proxy
) -> None:
    upstream.script(Reply("Done."))
    client = stored_proxy.client

    response = client.responses.create(model=MODEL, input="Hello", background=True)

    assert response.status == "completed"  # answered in the foreground
    with pytest.raises(openai.BadRequestError) as cancelled:
        client.responses.cancel(response.id)
    assert cancelled.value.code == "response_not_cancellable"
    assert "background" in str(cancelled.value.message)
    with pytest.raises(openai.NotFoundError):
        client.responses.cancel("resp_unknown")


def test_another_keys_response_is_not_found_exactly_as_one_never_stored(
    upstream: ScriptedUpstream, start_proxy: StartProxy, store_settings: dict[str, Any]
) -> None:
    proxy = start_proxy(proxy_api_keys=KEYS, **store_settings)
    with_a = proxy.client.with_options(api_key="key-a")
    upstream.script(Reply("Mine."))
    response = with_a.responses.create(model=MODEL, input="Hello")

    for method, path in [
        ("GET", "/v1/responses/{}"),
        ("GET", "/v1/responses/{}?stream=true"),
        ("GET", "/v1/responses/{}/input_items"),
        ("POST", "/v1/responses/{}/cancel"),
        ("DELETE", "/v1/responses/{}"),
    ]:
        answers = [
            proxy.http.request(method, path.format(named), headers={"x-api-key": "key-b"})
            for named in (response.id, "resp_never_stored")
        ]
        assert [answer.status_code for answer in answers] == [404, 404], path
        mine, never = (answer.json()["error"] for answer in answers)
        assert mine["message"].replace(response.id, "X") == never["message"].replace(
            "resp_never_stored", "X"
        )

    assert with_a.responses.retrieve(response.id).output_text == "Mine."  # B deleted nothing
    with pytest.raises(openai.AuthenticationError):
        proxy.client.responses.retrieve(response.id)  # a key the proxy does not know


def test_a_response_the_client_did_not_store_is_not_found(
    upstream: ScriptedUpstream, stored_proxy: Proxy
) -> None:
    upstream.script(Reply("Hi."))
    response = stored_proxy.client.responses.create(model=MODEL, input="Hello", store=False)

    with pytest.raises(openai.NotFoundError):
        stored_proxy.client.responses.retrieve(response.id)


def test_replicas_sharing_redis_read_back_and_delete_each_others_responses(
    upstream: ScriptedUpstream, start_proxy: StartProxy, redis_url: str
) -> None:
    answering, reading = (start_proxy(response_store_url=redis_url) for _ in range(2))
    upstream.script(Reply("Let me check. ", WEATHER_CALL["json-mix"]))
    events = created_events(answering, input=QUESTION, tools=[WEATHER_FUNCTION])
    response_id = events[0]["response"]["id"]

    assert without_deltas(replayed_events(reading, response_id)) == without_deltas(events)
    assert reading.client.responses.input_items.list(response_id).data[0].type == "message"
    reading.client.responses.delete(response_id)
    with pytest.raises(openai.NotFoundError):
        answering.client.responses.retrieve(response_id)

"""The Responses store through served proxies: a conversation belongs to the client key that
made it, the store is bounded in bytes, a named conversation counts against the request
limit, and proxies that share one real Valkey server continue each other's conversations,
answer 503 while it is down and recover when it is back; a key's owner is the same however
the key is sent."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from observability import scrape
from redis_server import RedisServer
from responses_client import WEATHER_FUNCTION, respond, text
from servers import MODEL, Proxy, StartProxy
from upstream_server import WEATHER_CALL, Reply, ScriptedUpstream

QUESTION = "What is the weather in Paris?"
KEYS = "key-a,key-b"
STORE_EVENTS = "toolcall_proxy_response_store_events_total"


@pytest.fixture(params=["memory", "redis"])
def shared_store(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The settings of a store two proxies share: one Valkey server; or, for the memory
    store, which no two processes share, the test uses one proxy for both."""
    if request.param == "memory":
        return {}
    return {"response_store_url": request.getfixturevalue("redis_url")}


def two_proxies(start_proxy: StartProxy, store: dict[str, Any], **settings: Any) -> list[Proxy]:
    first = start_proxy(**store, **settings)
    return [first, start_proxy(**store, **settings) if store else first]


def post(proxy: Proxy, key: str | None = None, **body: Any) -> httpx.Response:
    """A raw `POST /v1/responses`, with the client key `key` if one is given."""
    headers = {} if key is None else {"authorization": f"Bearer {key}"}
    return proxy.http.post("/v1/responses", json={"model": MODEL, **body}, headers=headers)


def test_a_conversation_is_continued_only_with_the_key_that_made_it(
    upstream: ScriptedUpstream, start_proxy: StartProxy, shared_store: dict[str, Any]
) -> None:
    with_a, with_b = two_proxies(start_proxy, shared_store, proxy_api_keys=KEYS)
    upstream.script(Reply("The plan is in the drawer."), Reply("Continued."))
    first = post(with_a, "key-a", input="Where is the plan?").json()
    answer_id = first["output"][0]["id"]

    for named, unknown in [
        ({"previous_response_id": first["id"]}, {"previous_response_id": "resp_unknown"}),
        (
            {"input": [{"type": "item_reference", "id": answer_id}]},
            {"input": [{"type": "item_reference", "id": "msg_unknown"}]},
        ),
    ]:
        refused = post(with_b, "key-b", **{"input": "And?", **named})
        never_stored = post(with_b, "key-b", **{"input": "And?", **unknown})
        # Refused exactly like an id never stored: nothing says the entry exists.
        assert refused.status_code == never_stored.status_code == 400
        error, other = refused.json()["error"], never_stored.json()["error"]
        assert error["code"] == other["code"]
        assert error["message"].replace(first["id"], "X").replace(answer_id, "X") == other[
            "message"
        ].replace("resp_unknown", "X").replace("msg_unknown", "X")
    assert len(upstream.chat_requests) == 1  # key-a's conversation never went upstream again

    continued = post(with_b, "key-a", previous_response_id=first["id"], input="And?")
    assert continued.status_code == 200, continued.text
    assert upstream.chat_requests[1].json["messages"][1] == {
        "role": "assistant",
        "content": "The plan is in the drawer.",
    }


def test_a_key_sent_as_x_api_key_owns_what_it_stored_as_a_bearer_token(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(proxy_api_keys=KEYS)
    upstream.script(Reply("The plan is in the drawer."), Reply("Continued."))
    first = post(proxy, "key-a", input="Where is the plan?").json()
    body = {"model": MODEL, "previous_response_id": first["id"], "input": "And?"}

    continued = proxy.http.post("/v1/responses", json=body, headers={"x-api-key": "key-a"})
    other_key = proxy.http.post("/v1/responses", json=body, headers={"x-api-key": "key-b"})
    no_key = proxy.http.post("/v1/responses", json=body, headers={"x-api-key": "key-c"})

    assert continued.status_code == 200, continued.text
    assert other_key.json()["error"]["code"] == "previous_response_not_found"
    assert no_key.status_code == 401


def test_only_the_proxys_own_output_items_are_found_by_their_id(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Hi."))
    mine = {"id": "msg_chosen_by_the_client", "type": "message", "role": "user", "content": "Hi"}
    first = respond(proxy, False, input=[mine])

    own = proxy.http.post(
        "/v1/responses",
        json={"model": MODEL, "input": [{"type": "item_reference", "id": mine["id"]}]},
    )

    assert first["output"][0]["id"] != mine["id"]
    assert own.status_code == 400 and own.json()["error"]["code"] == "item_not_found"


def test_the_store_keeps_responses_within_its_byte_budget_evicting_the_oldest(
    upstream: ScriptedUpstream, start_proxy: StartProxy, shared_store: dict[str, Any]
) -> None:
    # Each entry holds its ~1,000-byte question, its answer and the answer's place in the
    # index (~2,700 bytes): two fit in 6,000 bytes.
    first_proxy, second_proxy = two_proxies(
        start_proxy, shared_store, response_store_max_bytes=6000
    )
    upstream.script(*(Reply("Noted.") for _ in range(4)))
    ids = [
        respond(proxy, False, input="x" * 1000)["id"]
        for proxy in (first_proxy, second_proxy, first_proxy)
    ]

    oldest = post(second_proxy, previous_response_id=ids[0], input="?", store=False)
    newest = post(second_proxy, previous_response_id=ids[2], input="?", store=False)

    assert oldest.json()["error"]["code"] == "previous_response_not_found"
    assert newest.status_code == 200, newest.text
    assert scrape(first_proxy.http).value(STORE_EVENTS, event="evicted") == 1  # at the third


def test_a_small_request_naming_a_long_conversation_is_refused_at_the_request_limit(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    limit = 4096
    proxy = start_proxy(max_request_bytes=limit)
    upstream.script(*(Reply("Noted.") for _ in range(10)))
    conversation: dict[str, str] = {}
    answers = []
    for _ in range(10):  # each turn adds 1,000 bytes to the conversation, until it is refused
        answers.append(post(proxy, input="x" * 1000, **conversation))
        if answers[-1].status_code != 200:
            break
        conversation = {"previous_response_id": answers[-1].json()["id"]}

    refused = answers[-1]
    assert refused.status_code == 413, refused.text
    error = refused.json()["error"]
    assert error["code"] == "request_too_large"
    assert str(limit) in error["message"] and "MAX_REQUEST_BYTES" in error["message"]
    assert len(answers) > 2 and len(upstream.chat_requests) == len(answers) - 1
    assert all(len(request.body) < limit for request in upstream.chat_requests)


def test_proxies_sharing_redis_continue_each_others_conversations_by_previous_response_id(
    upstream: ScriptedUpstream, start_proxy: StartProxy, redis_url: str, stream: bool
) -> None:
    first_proxy, second_proxy = (start_proxy(response_store_url=redis_url) for _ in range(2))
    upstream.script(Reply(WEATHER_CALL["json-mix"]), Reply("Sunny."))
    first = respond(first_proxy, stream, input=QUESTION, tools=[WEATHER_FUNCTION])
    [call] = [item for item in first["output"] if item["type"] == "function_call"]
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}

    second = respond(
        second_proxy,
        stream,
        previous_response_id=first["id"],
        input=[output],
        tools=[WEATHER_FUNCTION],
    )

    assert text(second) == "Sunny."
    messages = upstream.chat_requests[1].json["messages"]
    assert [message["role"] for message in messages] == ["system", "user", "assistant", "user"]
    assert "Paris" in messages[2]["content"] and "sunny" in messages[3]["content"]
    assert scrape(second_proxy.http).value(STORE_EVENTS, event="hit") == 1


def test_redis_down_is_a_503_and_the_store_recovers_when_it_is_back(
    upstream: ScriptedUpstream, start_proxy: StartProxy, own_redis: RedisServer
) -> None:
    proxy = start_proxy(response_store_url=own_redis.url)
    upstream.script(*(Reply("Hi.") for _ in range(4)))
    first = respond(proxy, False, input="Hello")

    own_redis.stop()
    down = post(proxy, previous_response_id=first["id"], input="Again")
    ready_while_down = proxy.http.get("/readyz")
    own_redis.start()  # empty: it saved nothing
    again = respond(proxy, False, input="Hello")
    continued = post(proxy, previous_response_id=again["id"], input="Again")

    assert down.status_code == 503
    assert (down.json()["error"]["code"], down.json()["error"]["type"]) == (
        "store_unavailable",
        "server_error",
    )
    # Reported, yet still ready: chat completions and whole items need no store.
    assert ready_while_down.status_code == 200
    assert ready_while_down.json()["response_store"] == {"backend": "redis", "ready": False}
    assert proxy.http.get("/readyz").json()["response_store"] == {"backend": "redis", "ready": True}
    assert continued.status_code == 200, continued.text
    assert scrape(proxy.http).value(STORE_EVENTS, event="error") == 1
    assert len(upstream.chat_requests) == 3  # the refused request never went upstream


def test_a_stuck_redis_is_a_503_after_the_store_timeout_not_a_hang(
    upstream: ScriptedUpstream, start_proxy: StartProxy, own_redis: RedisServer
) -> None:
    # The shipped store timeout: a paused server answers nothing, so the stuck request waits
    # exactly that long, while a loaded machine's scheduling delays stay far below it.
    proxy = start_proxy(response_store_url=own_redis.url)
    upstream.script(Reply("Hi."), Reply("Hi again."))
    first = respond(proxy, False, input="Hello")

    own_redis.pause()
    try:
        stuck = post(proxy, previous_response_id=first["id"], input="Again")
    finally:
        own_redis.resume()
    continued = post(proxy, previous_response_id=first["id"], input="Again")

    assert stuck.status_code == 503 and stuck.json()["error"]["code"] == "store_unavailable"
    assert continued.status_code == 200, continued.text


def test_readyz_reports_the_memory_store(proxy: Proxy) -> None:
    ready = proxy.http.get("/readyz")

    assert ready.json() == {
        "status": "ready",
        "response_store": {"backend": "memory", "ready": True},
    }


@pytest.mark.parametrize(
    ("named", "code"),
    [
        ({"previous_response_id": "resp_\ud800"}, "previous_response_not_found"),
        ({"input": [{"type": "item_reference", "id": "msg_\udfff"}]}, "item_not_found"),
    ],
    ids=["previous_response_id", "item_reference"],
)
def test_an_id_holding_a_lone_surrogate_is_one_never_stored(
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    shared_store: dict[str, Any],
    named: dict[str, Any],
    code: str,
) -> None:
    # JSON may escape a lone surrogate; a Redis key is UTF-8, which cannot hold one (a 500).
    proxy = start_proxy(**shared_store)
    body = json.dumps({"model": MODEL, "input": "And?", **named})

    response = proxy.http.post(
        "/v1/responses", content=body, headers={"content-type": "application/json"}
    )

    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == code
    assert upstream.requests == []

"""The Responses API over a WebSocket, as OpenAI's WebSocket mode defines it, over a real
loopback connection: each `response.create` message a turn whose events come back as text
frames, one turn after another; `previous_response_id` continuing a `store: false` chain on
the connection that made it, and on no other; a failed turn forgetting the response it
continued; errors as `error` frames with their HTTP status; the HTTP door's keys and metrics
on every turn."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from observability import caught_logs, scrape
from responses_client import assert_response_object, response_from_events
from servers import MODEL, Proxy, StartProxy
from upstream_server import Drop, Hang, Reply, ScriptedUpstream
from waits import HUNG_AFTER_SECONDS
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

ENDINGS = {"response.completed", "response.incomplete", "response.failed", "error"}
POLICY_VIOLATION = 1008


class Connection:
    """One client WebSocket to the proxy's `/v1/responses`."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket

    def turn(self, **body: Any) -> list[dict[str, Any]]:
        """A `response.create` sent; every frame of its answer, to the one that ends it."""
        self.socket.send(json.dumps({"type": "response.create", "model": MODEL, **body}))
        return self.frames_to_end()

    def frames_to_end(self) -> list[dict[str, Any]]:
        frames = [json.loads(self.socket.recv(HUNG_AFTER_SECONDS))]
        while frames[-1]["type"] not in ENDINGS:
            frames.append(json.loads(self.socket.recv(HUNG_AFTER_SECONDS)))
        return frames


@contextmanager
def connected(proxy: Proxy, key: str | None = None) -> Iterator[Connection]:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    url = proxy.url.replace("http://", "ws://") + "/v1/responses"
    with connect(url, additional_headers=headers, open_timeout=HUNG_AFTER_SECONDS) as socket:
        yield Connection(socket)


def completed(frames: list[dict[str, Any]]) -> dict[str, Any]:
    """The response a turn's frames end with, after the rules of the event stream."""
    response = response_from_events(frames)
    assert response["status"] == "completed", response
    assert_response_object(response)
    return response


def error_of(frames: list[dict[str, Any]]) -> dict[str, Any]:
    """The one `error` frame of a turn that failed to start, in OpenAI's WebSocket shape."""
    [frame] = frames
    assert frame["type"] == "error" and isinstance(frame["status"], int), frame
    assert isinstance(frame["error"]["code"], str) and isinstance(frame["error"]["message"], str)
    return frame


def test_a_turn_is_answered_as_the_event_stream_a_frame_per_event(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("One, ", "two, three."))

    with connected(proxy) as connection:
        frames = connection.turn(input="Count from 1 to 3.")

    response = completed(frames)
    assert response["output"][0]["content"][0]["text"] == "One, two, three."
    assert {frame["type"] for frame in frames} >= {"response.created", "response.output_text.delta"}
    [sent] = upstream.chat_requests
    assert sent.json["stream"] is True  # a turn is always streamed


def test_turns_follow_one_another_on_one_connection(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("first"), Reply("second"))

    with connected(proxy) as connection:
        first = completed(connection.turn(store=False, input="Reply with exactly: first"))
        second = completed(connection.turn(store=False, input="Reply with exactly: second"))

    assert first["id"] != second["id"]
    assert [first["store"], second["store"]] == [False, False]


def test_a_store_false_chain_continues_on_its_connection_alone(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("OK."), Reply("cobalt"), Reply("recovered"))

    with connected(proxy) as connection:
        first = completed(connection.turn(store=False, input="The code word is cobalt."))
        second = completed(
            connection.turn(store=False, previous_response_id=first["id"], input="Which word?")
        )
    with connected(proxy) as elsewhere:
        missed = elsewhere.turn(store=False, previous_response_id=second["id"], input="Again?")
        recovered = completed(elsewhere.turn(store=False, input="Start again."))

    assert second["previous_response_id"] == first["id"]
    asked = upstream.chat_requests[1].json["messages"]
    assert [(message["role"], message["content"]) for message in asked] == [
        ("user", "The code word is cobalt."),
        ("assistant", "OK."),
        ("user", "Which word?"),
    ]
    frame = error_of(missed)
    assert frame["status"] == 400
    assert (frame["error"]["code"], frame["error"]["param"]) == (
        "previous_response_not_found",
        "previous_response_id",
    )
    assert recovered["output"][0]["content"][0]["text"] == "recovered"
    assert len(upstream.chat_requests) == 3  # the missed turn asked nothing


def test_a_stored_response_continues_on_any_connection(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("OK."), Reply("cobalt"))
    with connected(proxy) as connection:
        first = completed(connection.turn(input="The code word is cobalt."))

    with connected(proxy) as another:
        second = completed(another.turn(previous_response_id=first["id"], input="Which word?"))

    assert second["previous_response_id"] == first["id"]
    assert len(upstream.chat_requests[1].json["messages"]) == 3


def test_a_failed_continuation_forgets_the_response_it_continued(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("OK."))
    stray = {"type": "function_call_output", "call_id": "call_none", "output": "sunny"}

    with connected(proxy) as connection:
        first = completed(connection.turn(store=False, input="The code word is ember."))
        failed = connection.turn(store=False, previous_response_id=first["id"], input=[stray])
        retried = connection.turn(store=False, previous_response_id=first["id"], input="And?")

    frame = error_of(failed)
    assert (frame["status"], frame["error"]["param"]) == (400, "input[0]")
    assert error_of(retried)["error"]["code"] == "previous_response_not_found"
    assert len(upstream.chat_requests) == 1


def test_a_failure_mid_stream_ends_the_turn_with_response_failed_alone(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Drop("It is "), Reply("Sunny."))

    with connected(proxy) as connection:
        frames = connection.turn(store=False, input="Weather?")
        after = completed(connection.turn(store=False, input="Weather?"))

    assert "error" not in [frame["type"] for frame in frames]
    failed = frames[-1]["response"]
    assert (frames[-1]["type"], failed["status"]) == ("response.failed", "failed")
    assert failed["error"]["code"] == "upstream_connection_error"
    assert after["output"][0]["content"][0]["text"] == "Sunny."


@pytest.mark.parametrize(
    "message",
    ['{"type": "response.cancel"}', "not json", "[1, 2]"],
    ids=["other-type", "not-json", "not-an-object"],
)
def test_a_message_that_is_no_response_create_is_an_error_frame(
    upstream: ScriptedUpstream, proxy: Proxy, message: str
) -> None:
    upstream.script(Reply("Still here."))

    with connected(proxy) as connection:
        connection.socket.send(message)
        frame = error_of(connection.frames_to_end())
        after = completed(connection.turn(input="Hello?"))

    assert frame["status"] == 400
    assert after["output"][0]["content"][0]["text"] == "Still here."


def test_a_turn_without_a_model_is_the_http_doors_400(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    with connected(proxy) as connection:
        connection.socket.send(json.dumps({"type": "response.create", "input": "Hi"}))
        frame = error_of(connection.frames_to_end())

    assert (frame["status"], frame["error"]["code"]) == (400, "missing_required_parameter")


def test_keys_and_metrics_are_the_http_doors(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(proxy_api_keys="right-key")
    upstream.script(Reply("Hi."))

    with connected(proxy, "wrong-key") as refused:
        frame = error_of(refused.frames_to_end())
        with pytest.raises(ConnectionClosed) as closed:
            refused.socket.recv(HUNG_AFTER_SECONDS)
    with connected(proxy, "right-key") as connection:
        completed(connection.turn(input="Hello"))

    assert (frame["status"], frame["error"]["code"]) == (401, "invalid_api_key")
    assert closed.value.rcvd is not None and closed.value.rcvd.code == POLICY_VIOLATION
    metrics = scrape(proxy.http)
    labels = {"route": "responses", "protocol": "none", "status_class": "2xx"}  # no tools
    assert metrics.value("toolcall_proxy_requests_total", **labels) == 1


def test_over_http_an_output_that_answers_no_call_is_a_400(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    stray = {"type": "function_call_output", "call_id": "call_none", "output": "sunny"}

    answer = proxy.http.post("/v1/responses", json={"model": MODEL, "input": [stray]})

    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "input[0]"
    assert upstream.chat_requests == []


def test_a_warm_up_asks_nothing_and_the_next_turn_continues_from_it(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Hello."))

    with connected(proxy) as connection:
        warm = completed(
            connection.turn(store=False, generate=False, instructions="Be brief.", input="Hi")
        )
        turn = completed(
            connection.turn(store=False, previous_response_id=warm["id"], input="Still there?")
        )

    assert warm["output"] == [] and warm["usage"]["total_tokens"] == 0
    [asked] = upstream.chat_requests
    # Its input leads the conversation; its instructions, as any response's, do not carry on.
    assert [message["content"] for message in asked.json["messages"]] == ["Hi", "Still there?"]
    assert turn["output"][0]["content"][0]["text"] == "Hello."


def test_a_client_that_leaves_mid_turn_abandons_the_upstream_as_over_http(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Hang("It is "))

    with caught_logs("toolcall_proxy.access") as access:
        with connected(proxy) as connection:
            connection.socket.send(
                json.dumps({"type": "response.create", "model": MODEL, "input": "Weather?"})
            )
            while json.loads(connection.socket.recv(HUNG_AFTER_SECONDS))["type"] != (
                "response.output_text.delta"
            ):
                pass
        # The client has closed the connection mid-answer.
        access.wait_for(lambda line: "/v1/responses" in line)  # the turn has been recorded

    assert upstream.client_gone.wait(HUNG_AFTER_SECONDS)
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_client_disconnects_total", route="responses") == 1

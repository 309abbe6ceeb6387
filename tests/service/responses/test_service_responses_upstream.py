"""What a bad or oversized upstream answer does to a response: it is checked as a chat
answer is, and a stream is bounded as a whole answer is, so a fault is a 502 in OpenAI's
error shape or, once the response streams, `response.failed` with the fault's code, never a
500 and never a stream cut without an ending."""

from __future__ import annotations

from typing import Any

import pytest
from observability import scrape
from responses_client import WEATHER_FUNCTION, respond, text
from servers import MODEL, Proxy, StartProxy, chat_body
from upstream_server import Reply, ScriptedUpstream, Verbatim, raw_chunk_event, raw_completion

QUESTION = "What is the weather in Paris?"
SMALL_LIMIT = 4096
DONE = b"data: [DONE]\n\n"


def text_choice(index: int, text: str = "Sunny.", finish_reason: str | None = None) -> Any:
    return {"index": index, "delta": {"content": text}, "finish_reason": finish_reason}


def post(proxy: Proxy, **fields: Any) -> Any:
    return proxy.http.post("/v1/responses", json={"model": MODEL, "input": QUESTION, **fields})


def test_streamed_choice_past_the_first_fails_the_response(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(
        Verbatim(raw_chunk_event(text_choice(0)), raw_chunk_event(text_choice(1)), DONE)
    )

    response = respond(proxy, True, input=QUESTION, tools=[WEATHER_FUNCTION])

    assert response["status"] == "failed"
    assert response["error"]["code"] == "upstream_bad_chunk"


@pytest.mark.parametrize("tools", [[WEATHER_FUNCTION], []], ids=["tools", "no-tools"])
def test_whole_answer_with_a_choice_past_the_first_is_a_502(
    upstream: ScriptedUpstream, proxy: Proxy, tools: list[Any]
) -> None:
    message = {"role": "assistant", "content": "Sunny."}
    upstream.script(
        raw_completion(*({"index": i, "message": message, "finish_reason": "stop"} for i in (0, 1)))
    )

    answer = post(proxy, tools=tools)

    assert answer.status_code == 502
    assert answer.json()["error"]["code"] == "upstream_bad_chunk"


CHOICE = {"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}
MALFORMED_CHUNKS = {
    "not-json": b"data: {not json\n\n",
    "content-number": raw_chunk_event({**CHOICE, "delta": {"content": 42}}),
    "reasoning-object": raw_chunk_event({**CHOICE, "delta": {"reasoning_content": {}}}),
    "delta-string": raw_chunk_event({**CHOICE, "delta": "Hi"}),
    "choice-null": raw_chunk_event(None),
}


@pytest.mark.parametrize("event", MALFORMED_CHUNKS.values(), ids=MALFORMED_CHUNKS.keys())
def test_malformed_chunk_without_tools_fails_the_response_with_its_code(
    upstream: ScriptedUpstream, proxy: Proxy, event: bytes
) -> None:
    upstream.script(Verbatim(raw_chunk_event(text_choice(0, "It is ")), event, DONE))

    response = respond(proxy, True, input=QUESTION)

    assert response["status"] == "failed"
    assert response["error"]["code"] == "upstream_bad_chunk"


def test_stream_cut_without_tools_fails_the_response(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Verbatim(raw_chunk_event(text_choice(0, "It is "))))

    response = respond(proxy, True, input=QUESTION)

    assert response["status"] == "failed"
    assert response["error"]["code"] == "upstream_stream_cut"


MALFORMED_WHOLE_CHOICES = {
    "choice-null": None,
    "message-string": {"message": "Hi"},
    "content-number": {"message": {"content": 42}},
    "reasoning-number": {"message": {"content": "Hi", "reasoning_content": 5}},
    "finish-reason-number": {"message": {"content": "Hi"}, "finish_reason": 1},
}


@pytest.mark.parametrize(
    "choice", MALFORMED_WHOLE_CHOICES.values(), ids=MALFORMED_WHOLE_CHOICES.keys()
)
def test_malformed_whole_answer_without_tools_is_a_502(
    upstream: ScriptedUpstream, proxy: Proxy, choice: Any
) -> None:
    upstream.script(raw_completion(choice))

    answer = post(proxy)

    assert answer.status_code == 502
    assert answer.json()["error"]["code"] == "upstream_bad_chunk"


def test_stream_past_the_body_limit_fails_the_response_while_a_chat_stream_goes_on(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(upstream_max_body_bytes=SMALL_LIMIT)
    long_answer = Reply(*["Sunny and warm. " * 8] * (SMALL_LIMIT // 128 + 1))
    upstream.script(long_answer, long_answer)

    response = respond(proxy, True, input=QUESTION)
    chat = proxy.chat(chat_body(stream=True))

    assert response["status"] == "failed"
    assert response["error"]["code"] == "upstream_body_too_large"
    assert text(response), "the text before the limit is kept in the failed response"
    assert chat.content == "".join(long_answer.chunks)
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_upstream_errors_total", kind="bad_response") == 1

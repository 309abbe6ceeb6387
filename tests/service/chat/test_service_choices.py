"""An upstream answer holds the choices the request asked for (`n`, one by default) and no
others: a choice index past them is a counted bad upstream response, in a stream or in a
whole answer, never a parser built for a choice nobody asked for."""

from __future__ import annotations

from typing import Any

import pytest
from observability import scrape
from servers import WEATHER_TOOL, Proxy, chat_body
from upstream_server import ScriptedUpstream, Verbatim, raw_chunk_event, raw_completion


def text_choice(index: int) -> dict[str, Any]:
    return {"index": index, "delta": {"content": f"choice {index}"}, "finish_reason": None}


def whole_answer(*indexes: int) -> Verbatim:
    message = {"role": "assistant", "content": "Sunny."}
    return raw_completion(
        *({"index": i, "message": message, "finish_reason": "stop"} for i in indexes)
    )


def bad_responses(proxy: Proxy) -> float:
    return scrape(proxy.http).value("toolcall_proxy_upstream_errors_total", kind="bad_response")


@pytest.mark.parametrize("n", [None, 2])
def test_streamed_choice_past_those_asked_for_ends_the_stream_with_a_counted_error(
    upstream: ScriptedUpstream, proxy: Proxy, n: int | None
) -> None:
    asked = n or 1
    upstream.script(
        Verbatim(
            *(raw_chunk_event(text_choice(index)) for index in range(asked)),
            raw_chunk_event(text_choice(asked)),
            b"data: [DONE]\n\n",
        )
    )
    fields = {} if n is None else {"n": n}

    events = proxy.events(chat_body(WEATHER_TOOL, stream=True, **fields))

    assert events[-1]["error"]["code"] == "upstream_bad_chunk"
    seen = {choice["index"] for event in events[:-1] for choice in event["choices"]}
    assert seen == set(range(asked)), "the choices asked for were answered until then"
    assert bad_responses(proxy) == 1


@pytest.mark.parametrize(
    "indexes", [(0, 1, 2), (1,), (0, 0)], ids=["more-choices", "index-past-n", "two-of-index-0"]
)
@pytest.mark.parametrize("tool_choice", ["auto", "required"])
def test_whole_answer_with_choices_past_those_asked_for_is_a_counted_502(
    upstream: ScriptedUpstream, proxy: Proxy, indexes: tuple[int, ...], tool_choice: str
) -> None:
    upstream.script(whole_answer(*indexes))

    response = proxy.http.post(
        "/v1/chat/completions", json=chat_body(WEATHER_TOOL, tool_choice=tool_choice)
    )

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_bad_chunk"
    assert bad_responses(proxy) == 1


def test_whole_answer_holds_as_many_choices_as_asked_for_and_no_more(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(whole_answer(0, 1), whole_answer(0, 1, 2))
    body = chat_body(WEATHER_TOOL, n=2)

    answered = proxy.http.post("/v1/chat/completions", json=body)
    refused = proxy.http.post("/v1/chat/completions", json=body)

    assert [choice["index"] for choice in answered.json()["choices"]] == [0, 1]
    assert refused.status_code == 502

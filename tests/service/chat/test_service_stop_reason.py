"""The stop sequence an upstream says it stopped at (vLLM's `stop_reason`) reaches the client
of a stream as it reaches the client of a whole answer, in the finish chunk."""

from __future__ import annotations

from servers import WEATHER_TOOL, Proxy, chat_body
from upstream_server import ScriptedUpstream, Verbatim, raw_chunk_event, raw_completion

STOPPED = {"finish_reason": "stop", "stop_reason": "three"}


def test_the_upstreams_stop_reason_is_in_the_finish_chunk_as_in_the_whole_answer(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(
        Verbatim(
            raw_chunk_event({"index": 0, "delta": {"content": "One, two, "}}),
            raw_chunk_event({"index": 0, "delta": {}, **STOPPED}),
            b"data: [DONE]\n\n",
        ),
        raw_completion({"index": 0, "message": {"content": "One, two, "}, **STOPPED}),
    )

    asked = chat_body(WEATHER_TOOL, stop=["three"])  # with tools: parsed, not relayed
    events = proxy.events({**asked, "stream": True})
    whole = proxy.http.post("/v1/chat/completions", json=asked).json()

    [finish] = [event for event in events[:-1] if event["choices"][0]["finish_reason"]]
    assert finish["choices"][0]["stop_reason"] == "three"
    assert whole["choices"][0]["stop_reason"] == "three"

"""`POST /v1/responses/input_tokens` through the official SDK: the estimate for the very prompt
`POST /v1/responses` sends upstream for the same body (tools rendered in the protocol, the
earlier responses it names included), made without asking the upstream anything."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from responses_client import WEATHER_FUNCTION
from servers import MODEL, Proxy, StartProxy
from upstream_server import WEATHER_CALL, Reply, ScriptedUpstream

from service.exchange import estimated_prompt_tokens

QUESTION = "What is the weather in Paris?"
INSTRUCTIONS = "Answer in one sentence."


def counted_then_sent(
    proxy: Proxy, upstream: ScriptedUpstream, **body: Any
) -> tuple[int, int, str]:
    """The count for `body`; the estimate for what answering it then sent upstream; the
    answer's id."""
    sent_before = len(upstream.chat_requests)
    counted = proxy.client.responses.input_tokens.count(model=MODEL, **body)
    assert counted.object == "response.input_tokens"
    assert len(upstream.chat_requests) == sent_before, "counting asked the upstream nothing"
    answered = proxy.client.responses.create(model=MODEL, **body)
    return (
        counted.input_tokens,
        estimated_prompt_tokens(upstream.chat_requests[-1].json),
        answered.id,
    )


def test_the_count_is_the_estimate_for_the_prompt_the_request_would_send(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    upstream.script(Reply(WEATHER_CALL[protocol]), Reply("Sunny."))
    tools = [WEATHER_FUNCTION]

    counted, sent, first_id = counted_then_sent(
        protocol_proxy, upstream, instructions=INSTRUCTIONS, input=QUESTION, tools=tools
    )
    counted_later, sent_later, _ = counted_then_sent(
        protocol_proxy, upstream, previous_response_id=first_id, input="And then?", tools=tools
    )

    assert counted == sent > 0
    assert counted_later == sent_later > counted  # the earlier turn and its call count too


def test_a_count_naming_another_keys_response_is_refused_as_if_it_were_never_stored(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(proxy_api_keys="key-a,key-b")
    with_a, with_b = (proxy.client.with_options(api_key=key) for key in ("key-a", "key-b"))
    upstream.script(Reply("Mine."))
    first = with_a.responses.create(model=MODEL, input="Hello")

    with pytest.raises(openai.BadRequestError) as refused:
        with_b.responses.input_tokens.count(model=MODEL, previous_response_id=first.id, input="?")
    assert refused.value.code == "previous_response_not_found"
    assert (
        with_a.responses.input_tokens.count(
            model=MODEL, previous_response_id=first.id, input="?"
        ).input_tokens
        > 0
    )

"""`POST /v1/responses/compact` through the official SDK: the upstream model, offered no tools,
summarises the conversation (calls and results rendered in the route's protocol); the
answer is every user message then one compaction item, which a later request sends back and
the model reads as the summary. A compaction item of another server's, or a summary the model
did not write, is refused rather than taken for the conversation."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from responses_client import WEATHER_FUNCTION, text
from servers import MODEL, Proxy
from upstream_server import WEATHER_CALL, Reply, ScriptedUpstream

QUESTION = "What is the weather in Paris?"
SUMMARY = "The user asked for the weather in Paris; get_weather said sunny, 24 C."


def test_a_conversation_is_compacted_to_its_user_messages_and_the_models_summary(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    client = protocol_proxy.client
    upstream.script(Reply(WEATHER_CALL[protocol]), Reply("Sunny, 24 C."), Reply(SUMMARY))
    first = client.responses.create(model=MODEL, input=QUESTION, tools=[WEATHER_FUNCTION])
    call_id = first.model_dump()["output"][0]["call_id"]
    result = {"type": "function_call_output", "call_id": call_id, "output": "sunny, 24 C"}
    second = client.responses.create(
        model=MODEL, previous_response_id=first.id, input=[result], tools=[WEATHER_FUNCTION]
    )

    compacted = client.responses.compact(model=MODEL, previous_response_id=second.id)

    assert compacted.object == "response.compaction"
    # The SDK types every output item as the model's own, so a kept user message's
    # input_text parts draw a serializer warning, as OpenAI's own compacted answers do.
    user, compaction = (
        item.model_dump(exclude_none=True, warnings=False) for item in compacted.output
    )
    assert (user["type"], user["role"], user["content"]) == (
        "message",
        "user",
        [{"type": "input_text", "text": QUESTION}],
    )
    assert compaction["type"] == "compaction" and compaction["id"].startswith("cmp_")
    assert compacted.usage.total_tokens > 0
    asked = upstream.chat_requests[2].json
    assert "tools" not in asked
    assert [message["role"] for message in asked["messages"]] == [
        "user",
        "assistant",
        "user",  # the call's result, rendered as text
        "assistant",
        "user",  # the request for the summary
    ]
    assert WEATHER_CALL[protocol] in asked["messages"][1]["content"]
    assert "sunny, 24 C" in asked["messages"][2]["content"]

    upstream.script(Reply("Tomorrow too."))
    later = client.responses.create(
        model=MODEL, input=[user, compaction, {"role": "user", "content": "And tomorrow?"}]
    )
    assert text(later.model_dump()) == "Tomorrow too."
    messages = upstream.chat_requests[3].json["messages"]
    assert [message["role"] for message in messages] == ["user", "user", "user"]
    assert messages[1]["content"].endswith(SUMMARY)


def test_compacting_items_sent_in_full_needs_no_store(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply(SUMMARY))
    items: list[Any] = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "Sunny, 24 C."},
        {"role": "user", "content": "Thanks."},
    ]

    compacted = proxy.client.responses.compact(model=MODEL, input=items)

    kept = [item.model_dump(exclude_none=True, warnings=False) for item in compacted.output[:-1]]
    assert [item["content"][0]["text"] for item in kept] == [QUESTION, "Thanks."]
    assert compacted.output[-1].type == "compaction"


def test_a_compaction_item_another_server_made_is_a_400(proxy: Proxy) -> None:
    theirs = {"type": "compaction", "encrypted_content": "gAAAAABpX2Zr-opaque"}

    with pytest.raises(openai.BadRequestError) as refused:
        proxy.client.responses.create(
            model=MODEL, input=[theirs, {"role": "user", "content": "Hi"}]
        )

    assert refused.value.param == "input[0].encrypted_content"
    assert "another server" in str(refused.value.message)


@pytest.mark.parametrize(
    "reply",
    [Reply("  "), Reply("The user asked", finish_reason="length")],
    ids=["no-summary", "summary-cut-short"],
)
def test_a_summary_the_model_did_not_write_whole_is_a_502_and_nothing_is_compacted(
    upstream: ScriptedUpstream, proxy: Proxy, reply: Reply
) -> None:
    upstream.script(reply)

    with pytest.raises(openai.InternalServerError) as failed:
        proxy.client.responses.compact(model=MODEL, input=QUESTION)

    assert failed.value.status_code == 502 and failed.value.code == "compaction_failed"

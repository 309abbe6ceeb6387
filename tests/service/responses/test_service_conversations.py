"""`/v1/conversations` (OpenAI's Conversations API) is answered by the proxy itself, with an
error that says how it keeps state, never forwarded to an upstream that knows nothing of it."""

from __future__ import annotations

import openai
import pytest
from servers import Proxy
from upstream_server import ScriptedUpstream


def test_creating_a_conversation_is_told_to_use_previous_response_id(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    with pytest.raises(openai.NotFoundError, match="previous_response_id") as caught:
        proxy.client.conversations.create(items=[{"role": "user", "content": "Hi"}])

    assert caught.value.code == "conversations_not_served"
    assert upstream.requests == []


def test_every_path_below_it_is_answered_alike(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    answer = proxy.http.get("/v1/conversations/conv_1/items")

    assert answer.status_code == 404
    assert "previous_response_id" in answer.json()["error"]["message"]
    assert upstream.requests == []

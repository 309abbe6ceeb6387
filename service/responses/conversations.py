"""`/v1/conversations` (OpenAI's Conversations API, which the Agents SDK can keep a session's
state in): not served. Forwarded, a text-only upstream answers a bare 404 that says nothing
of why; the proxy says instead how it keeps state, so a client can be set to use that."""

from __future__ import annotations

from ..wire import ProxyError

CONVERSATIONS_PATH = "/v1/conversations"
NOT_SERVED = (
    "the Conversations API is not served by this proxy: it keeps a conversation's state with "
    "previous_response_id (each response is stored unless the request says store: false); "
    "send the previous response's id with the next request instead of a conversation"
)


def conversations_not_served() -> ProxyError:
    """The answer to every request under CONVERSATIONS_PATH: a 404 (clients do not retry it,
    as they would a 5xx) in OpenAI's error shape, naming what to use."""
    return ProxyError(404, NOT_SERVED, param="conversation", code="conversations_not_served")

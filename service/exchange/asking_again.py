"""Asking the upstream again within one client request, the one way every correction goes (a
forced call that did not come, a call whose arguments do not follow its tool's schema): the
request as first sent, the model's reply, and what was wrong with it; and the usage of all
the answers the request took, which is what its client is charged."""

from __future__ import annotations

from typing import Any

# A reply is echoed back to the model whole, so the request asking again grows by it, and the
# model writes it again: past this many characters (about 8,000 tokens) that costs more than
# the reply is worth correcting, and the reply stands as it is.
MAX_ECHOED_REPLY_CHARS = 32_768
# Usage fields that add up over the answers one request took.
USAGE_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")


def corrected_body(body: dict[str, Any], reply: str, correction: str) -> dict[str, Any] | None:
    """`body` (the request as first sent upstream) followed by the model's `reply` and the
    user's `correction`; None when the reply is too long to send back. Each correction
    starts from the first request, so asking again never piles up earlier replies."""
    if len(reply) > MAX_ECHOED_REPLY_CHARS:
        return None
    messages = [
        *body["messages"],
        {"role": "assistant", "content": reply},
        {"role": "user", "content": correction},
    ]
    return {**body, "messages": messages}


def summed_usage(usages: list[Any]) -> Any:
    """One answer's usage as it is; several answers' counts added up."""
    if len(usages) == 1:
        return usages[0]
    counted = [usage for usage in usages if isinstance(usage, dict)]
    if not counted:
        return None
    return {
        key: sum(usage.get(key) or 0 for usage in counted)
        for key in USAGE_COUNTS
        if any(isinstance(usage.get(key), int) for usage in counted)
    }

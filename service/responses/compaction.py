"""`POST /v1/responses/compact`: a conversation made short by the upstream model itself. The
body names a conversation as `POST /v1/responses` does (`input`, `previous_response_id`,
`instructions`); the model is asked, with no tools, for a summary it could go on from, and
the answer is OpenAI's compacted list: every user message, then one compaction item holding
the summary (`summary.py`), which a later request sends back as input."""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response

from ..context import ProxyContext
from ..exchange import ChatExchange, checked_chat_request, estimated_prompt_tokens, tokens_in_text
from ..wire import UPSTREAM_ERROR, ProxyError, json_response
from .api import responses_request
from .events import ResponseWriter, new_id
from .retrieval import identified, listed
from .store import ResponseStore
from .summary import compaction_item

# Asked of the model after the conversation, in its own words: what it will go on from.
SUMMARY_REQUEST = (
    "The conversation above is about to be replaced by a summary, and you will go on from "
    "that summary alone. Write it now: what the user asked for and every constraint they "
    "set; what has been done, with the tools called, what they returned and the files "
    "touched; what was decided and why; what is left to do, and the next step. Keep names, "
    "paths, numbers and identifiers exact. Write only the summary, and call no tool."
)


async def compact_conversation(
    request: Request, context: ProxyContext, store: ResponseStore, owner: str
) -> Response:
    """`POST /v1/responses/compact` from the client whose key `owner` names."""
    asked = await responses_request(request, context, store, owner)
    messages = [*asked.chat.messages, {"role": "user", "content": SUMMARY_REQUEST}]
    chat = {key: asked.chat.body[key] for key in ("model",) if key in asked.chat.body}
    exchange = ChatExchange(request, context, checked_chat_request({**chat, "messages": messages}))
    writer = ResponseWriter(asked.body, model=exchange.model_name(), stream=False)
    answer = await exchange.answered()
    assert isinstance(answer.events, list), "a whole answer's events are all known"
    for event in answer.events:
        writer.write(event)
    written = writer.whole()
    summary = "".join(
        part["text"]
        for item in written["output"]
        if item["type"] == "message"
        for part in item["content"]
    )
    if written["status"] != "completed" or not summary.strip():
        # The client would put this in its conversation's place: better none than a part.
        raise ProxyError(
            502,
            "the upstream model wrote no whole summary of the conversation (status "
            f"{written['status']}, {len(summary)} characters); the conversation is not compacted",
            error_type=UPSTREAM_ERROR,
            code="compaction_failed",
        )
    kept = [
        listed(item)
        for item in identified(asked.inputs)
        if item.get("type", "message") == "message" and item.get("role") == "user"
    ]
    usage = written["usage"] or _estimated_usage(exchange, summary)
    return json_response(
        {
            "id": new_id("resp"),
            "object": "response.compaction",
            "created_at": int(time.time()),
            "output": [*kept, compaction_item(summary)],
            "usage": usage,
        }
    )


def _estimated_usage(exchange: ChatExchange, summary: str) -> dict[str, object]:
    """Usage for an upstream that counted nothing, in the Responses names."""
    asked, wrote = estimated_prompt_tokens(exchange.upstream_body), tokens_in_text(len(summary))
    return {
        "input_tokens": asked,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": wrote,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": asked + wrote,
    }

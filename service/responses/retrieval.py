"""A stored response read back by the client key that made it: `GET /v1/responses/{id}`
(whole, or streamed again with `?stream=true`), `DELETE /v1/responses/{id}`,
`GET /v1/responses/{id}/input_items`, and `POST /v1/responses/{id}/cancel`, which finds
nothing running to cancel. A response another key stored is not found, exactly as one never
stored, expired or evicted: a 404 that says nothing of whether it exists."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..settings import Settings
from ..wire import ProxyError, json_response
from .events import ITEM_CALLS, new_id
from .replay import replayed
from .store import Item, ResponseStore

# The prefix of the id an input item sent without one is stored under (calls as the
# proxy's own call items are named), so that every listed item can be paged past by its id.
INPUT_ID_PREFIXES = {
    "message": "msg",
    **{kind: call.prefix for kind, call in ITEM_CALLS.items()},
    "function_call_output": "fco",
    "custom_tool_call_output": "ctco",
    "tool_search_output": "tso",
    "reasoning": "rs",
    "compaction": "cmp",
}
OTHER_ITEM_PREFIX = "item"
COMPLETED = "completed"
# `GET .../input_items`: OpenAI's bounds and defaults.
MAX_LIMIT, DEFAULT_LIMIT = 100, 20
ORDERS = ("asc", "desc")
DEFAULT_ORDER = "desc"
BOOLEANS = {"true": True, "false": False}
WHOLE_NUMBER = re.compile(r"[0-9]{1,9}")


def identified(items: Sequence[Item]) -> list[Item]:
    """`items`, each sent without an id given one, as OpenAI names every input item."""
    return [item if "id" in item else {"id": new_id(_prefix(item)), **item} for item in items]


async def retrieve_response(
    request: Request, settings: Settings, store: ResponseStore, owner: str, response_id: str
) -> Response:
    """`GET /v1/responses/{id}`: the response as it was answered; with `?stream=true` its
    event stream again (from the event after `starting_after`, if given)."""
    query = request.query_params
    stream = BOOLEANS.get(query.get("stream", "false").lower())
    if stream is None:
        raise ProxyError(400, "'stream' must be true or false", param="stream")
    after = _number(query.get("starting_after"), "starting_after", minimum=0)
    response, inputs = await _stored(store, owner, response_id)
    if not stream:
        return json_response(response)
    return await replayed(response, inputs, settings, starting_after=after)


async def delete_response(store: ResponseStore, owner: str, response_id: str) -> Response:
    """`DELETE /v1/responses/{id}`: the response forgotten, and the items only it held; a
    later request naming it finds nothing."""
    if not await store.delete(owner, response_id):
        raise not_found(response_id)
    return json_response({"id": response_id, "object": "response", "deleted": True})


async def list_input_items(
    request: Request, store: ResponseStore, owner: str, response_id: str
) -> Response:
    """`GET /v1/responses/{id}/input_items`: the items the response answered (earlier
    responses' items, with `previous_response_id`, then its request's), a page at a time:
    `limit` (1 to 100, 20), `order` (`asc`, or `desc` by default), `after` (an item's id)."""
    query = request.query_params
    limit = _number(query.get("limit"), "limit", minimum=1, maximum=MAX_LIMIT)
    order = query.get("order", DEFAULT_ORDER)
    if order not in ORDERS:
        raise ProxyError(400, "'order' must be asc or desc", param="order")
    _, inputs = await _stored(store, owner, response_id)
    ordered = inputs if order == "asc" else inputs[::-1]
    start = 0
    if (after := query.get("after")) is not None:
        ids = [item.get("id") for item in ordered]
        if after not in ids:
            raise ProxyError(
                400, f"response {response_id!r} has no input item {after!r}", param="after"
            )
        start = ids.index(after) + 1
    end = start + (DEFAULT_LIMIT if limit is None else limit)
    data = [listed(item) for item in ordered[start:end]]
    return json_response(
        {
            "object": "list",
            "data": data,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
            "has_more": end < len(ordered),
        }
    )


async def cancel_response(store: ResponseStore, owner: str, response_id: str) -> Response:
    """`POST /v1/responses/{id}/cancel`: a 400 for a response that is stored, since the
    proxy answers every response, `background: true` or not, before its request returns."""
    if await store.response(owner, response_id) is None:
        raise not_found(response_id)
    raise ProxyError(
        400,
        f"response {response_id!r} cannot be cancelled: it is finished. The proxy runs no "
        "response in the background: it answers each one, `background: true` or not, before "
        "its request returns, so there is never one to cancel",
        param="response_id",
        code="response_not_cancellable",
    )


def not_found(response_id: str) -> ProxyError:
    return ProxyError(
        404,
        f"response {response_id!r} was not found: never stored (`store: false`), expired, "
        "evicted or deleted, stored by another worker or replica without a shared store, or "
        "not stored for this API key",
        param="response_id",
        code="response_not_found",
    )


async def _stored(
    store: ResponseStore, owner: str, response_id: str
) -> tuple[dict[str, Any], list[Item]]:
    stored = await store.response(owner, response_id)
    if stored is None:
        raise not_found(response_id)
    return stored.decoded()


def listed(item: Item) -> Item:
    """An input item as OpenAI lists it: a message with its `type` and `status` (an input
    message sent without one was whole: `completed`), its text as a list of parts."""
    if item.get("type", "message") != "message":
        return item
    shown = {"type": "message", "status": COMPLETED, **item}
    if isinstance(content := item.get("content"), str):
        shown["content"] = [_text_part(item.get("role"), content)]
    return shown


def _text_part(role: Any, text: str) -> dict[str, Any]:
    """A message's string content as the part OpenAI lists it as: an assistant's as its
    output (with no annotations and no log probabilities), anyone else's as input."""
    if role == "assistant":
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"type": "input_text", "text": text}


def _prefix(item: Item) -> str:
    return INPUT_ID_PREFIXES.get(item.get("type", "message"), OTHER_ITEM_PREFIX)


def _number(
    value: str | None, param: str, *, minimum: int, maximum: int | None = None
) -> int | None:
    """A query parameter that must be a whole number within bounds, if it is given."""
    if value is None:
        return None
    number = int(value) if WHOLE_NUMBER.fullmatch(value) else -1
    if number < minimum or (maximum is not None and number > maximum):
        bounds = f"from {minimum}" + ("" if maximum is None else f" to {maximum}")
        raise ProxyError(400, f"'{param}' must be a whole number {bounds}", param=param)
    return number

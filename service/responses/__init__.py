"""The Responses API translated onto the chat machinery: `POST /v1/responses`, its events,
the store of earlier responses that `previous_response_id` and `item_reference` read (in
memory, or on Redis for replicas), the endpoints that read a stored response back,
compaction, and the same API over a WebSocket."""

from __future__ import annotations

from .api import count_input_tokens, create_response
from .compaction import compact_conversation
from .conversations import CONVERSATIONS_PATH, conversations_not_served
from .retrieval import cancel_response, delete_response, list_input_items, retrieve_response
from .routes import responses_routes, store_of
from .store import ResponseStore
from .store_setup import opened_store
from .websocket import serve_websocket

__all__ = [
    "CONVERSATIONS_PATH",
    "ResponseStore",
    "cancel_response",
    "compact_conversation",
    "conversations_not_served",
    "count_input_tokens",
    "create_response",
    "delete_response",
    "list_input_items",
    "opened_store",
    "responses_routes",
    "retrieve_response",
    "serve_websocket",
    "store_of",
]

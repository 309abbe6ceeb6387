"""`POST /v1/responses`: the Responses API translated onto the chat machinery, its events,
and the store of earlier responses that `previous_response_id` and `item_reference` read
(in memory, or on Redis for replicas)."""

from __future__ import annotations

from .api import create_response
from .store import ResponseStore
from .store_setup import opened_store

__all__ = ["ResponseStore", "create_response", "opened_store"]

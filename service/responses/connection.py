"""What one Responses WebSocket connection remembers between its turns: its latest response,
stored or not. OpenAI's WebSocket mode keeps the connection's most recent response in
connection-local memory, so that `previous_response_id` continues a `store: false` chain on
the connection that made it (and on no other); a turn that fails forgets the response it
continued, so a stale chain is not taken up again. Over HTTP there is no connection: every
request reads the response store alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import HTTPConnection

from ..wire import json_bytes
from .store import Item

# The ASGI scope key a WebSocket turn carries its connection's memory under (see websocket.py).
SCOPE_KEY = "toolcall_proxy.responses_connection"


@dataclass(frozen=True, slots=True)
class _Latest:
    owner: str
    response_id: str
    conversation: bytes  # its input items then its output, serialized as the store keeps them


class ConnectionMemory:
    """The latest response one connection answered, for the key that made it.

    >>> memory.keep(owner, response, inputs)
    >>> memory.conversation(owner, response["id"])  # its items, serialized; None if gone
    """

    def __init__(self) -> None:
        self._latest: _Latest | None = None

    def keep(self, owner: str, response: dict[str, Any], inputs: Sequence[Item]) -> None:
        """`response`, answered to `inputs`, is now the connection's latest (and only) one."""
        conversation = json_bytes([*inputs, *response["output"]])
        self._latest = _Latest(owner, response["id"], conversation)

    def conversation(self, owner: str, response_id: str) -> bytes | None:
        latest = self._latest
        if latest is None or (latest.owner, latest.response_id) != (owner, response_id):
            return None
        return latest.conversation

    def forget(self, response_id: str) -> None:
        if self._latest is not None and self._latest.response_id == response_id:
            self._latest = None


def connection_memory(connection: HTTPConnection) -> ConnectionMemory | None:
    """The memory of the WebSocket connection a request is a turn of; None over HTTP."""
    memory: ConnectionMemory | None = connection.scope.get(SCOPE_KEY)
    return memory

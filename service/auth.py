"""Client authentication: with PROXY_API_KEYS set, `Authorization: Bearer <key>`, or as the
Anthropic SDKs send it `x-api-key: <key>`, or as Google's send it `x-goog-api-key: <key>`
(on the Gemini API's routes also `?key=<key>`) must name one of them (compared in constant
time), else a 401 in the endpoint's error shape. The check names the key's owner, which the
Responses store keeps its entries under."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence

from fastapi import Depends
from pydantic import SecretStr
from starlette.requests import HTTPConnection

from .wire import (
    API_KEY_HEADER,
    AUTHENTICATION_ERROR,
    GOOGLE_API_KEY_HEADER,
    GOOGLE_KEY_PARAMETER,
    ProxyError,
)

BEARER = "bearer"
# Without keys every client is one and the same owner.
SHARED_OWNER = "shared"
# What a key's owner is computed from, beside the key: the owner is HMAC-SHA256 keyed with
# the client's key, so it names the key without revealing it (a store dump or a log holding
# it gives away nothing to try against the proxy), and every replica computes the same one.
OWNER_MESSAGE = b"toolcall-proxy response store owner"
OWNER_HEX_CHARS = 32  # 128 bits: no two keys share an owner


def key_owner(key: bytes) -> str:
    return hmac.new(key, OWNER_MESSAGE, hashlib.sha256).hexdigest()[:OWNER_HEX_CHARS]


class RouteKeys:
    """How a front door's routes check the client's key: `owner`, a dependency that names
    the key's owner (always resolved: the Responses store keeps entries under it), and the
    route dependencies that check the key where keys are set (`checked`, and `in_query` for
    the Gemini API's routes, which take it as `?key=` too). Without keys there is nothing to
    check, and FastAPI would resolve a dependency anyway."""

    def __init__(self, keys: Sequence[SecretStr]) -> None:
        self.owner = ClientKeys(keys)
        self.checked = [Depends(self.owner)] if keys else []
        self.in_query = [Depends(ClientKeys(keys, in_query=True))] if keys else []


class ClientKeys:
    """A FastAPI dependency that returns the client's owner:
    `owner: Annotated[str, Depends(ClientKeys(settings.proxy_api_keys))]`. With no keys it
    checks nothing and every client is `SHARED_OWNER`. `in_query`: the key may come as
    `?key=` too; only the Gemini API's routes take it so, for a query string is relayed to
    the upstream on the others, and a proxy key must never reach it."""

    def __init__(self, keys: Iterable[SecretStr], *, in_query: bool = False) -> None:
        self._keys = [key.get_secret_value().encode() for key in keys]
        self._owners = [key_owner(key) for key in self._keys]
        self._in_query = in_query

    async def __call__(self, request: HTTPConnection) -> str:
        if not self._keys:
            return SHARED_OWNER
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        presented = [
            request.headers.get(header, "").strip().encode()
            for header in (API_KEY_HEADER, GOOGLE_API_KEY_HEADER)
        ]
        if scheme.lower() == BEARER:
            presented.append(token.strip().encode())
        if self._in_query:
            presented.append(request.query_params.get(GOOGLE_KEY_PARAMETER, "").strip().encode())
        # Every key is compared, so the time taken does not tell which one nearly matched.
        compared = [
            [hmac.compare_digest(offered, key) for offered in presented] for key in self._keys
        ]
        matches = [any(results) for results in compared]
        if not any(matches):
            raise ProxyError(
                401,
                "missing or invalid API key: send 'Authorization: Bearer <key>',"
                " 'x-api-key: <key>' or 'x-goog-api-key: <key>'",
                error_type=AUTHENTICATION_ERROR,
                code="invalid_api_key",
            )
        return self._owners[matches.index(True)]

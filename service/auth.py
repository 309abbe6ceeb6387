"""Client authentication: with PROXY_API_KEYS set, `Authorization: Bearer <key>` must name
one of them (compared in constant time), else a 401 in OpenAI's error shape."""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from pydantic import SecretStr
from starlette.requests import Request

from .wire import AUTHENTICATION_ERROR, ProxyError

BEARER = "bearer"


class ClientKeys:
    """A FastAPI dependency: `dependencies=[Depends(ClientKeys(settings.proxy_api_keys))]`,
    for a deployment with keys."""

    def __init__(self, keys: Iterable[SecretStr]) -> None:
        self._keys = [key.get_secret_value().encode() for key in keys]

    async def __call__(self, request: Request) -> None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        presented = token.strip().encode()
        # Every key is compared, so the time taken does not tell which one nearly matched.
        matches = [hmac.compare_digest(presented, key) for key in self._keys]
        if scheme.lower() != BEARER or not any(matches):
            raise ProxyError(
                401,
                "missing or invalid API key: send 'Authorization: Bearer <key>'",
                error_type=AUTHENTICATION_ERROR,
                code="invalid_api_key",
            )

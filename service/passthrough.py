"""The endpoints the proxy adds nothing to but a route list: `/v1/models`, every other
`/v1/*` request relayed unchanged, and the upstream readiness probe."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from .context import ProxyContext
from .errors import ProxyError
from .headers import upstream_authorization, upstream_headers
from .relay import RelayResponse
from .request_body import limited_stream

# An upstream that cannot list its models this fast is treated as not ready: a probe should
# fail fast rather than hang behind a stuck upstream (set the probe's own timeout above it).
READINESS_TIMEOUT_SECONDS = 2.0
ROUTE_OWNER = "toolcall-proxy"


async def list_models(request: Request, context: ProxyContext) -> dict[str, Any]:
    """`GET /v1/models`: the default upstream's list, plus every configured route's name."""
    target = context.router.default
    models = await context.upstream.request_json(
        "GET",
        f"{target.base_url}/models",
        headers=context.headers_for(request, target, relay=False),
    )
    listed = models.get("data")
    if not isinstance(listed, list):
        listed = models["data"] = []
    known = {entry.get("id") for entry in listed if isinstance(entry, dict)}
    listed.extend(
        {"id": name, "object": "model", "created": 0, "owned_by": ROUTE_OWNER}
        for name in context.router.route_names
        if name not in known
    )
    models.setdefault("object", "list")
    return models


async def forward(request: Request, context: ProxyContext, path: str) -> RelayResponse:
    """Any other `/v1/{path}`: method, query, headers and body relayed to the default
    upstream, the answer relayed back, both streamed."""
    target = context.router.default
    headers = context.headers_for(request, target, relay=True)
    content = None
    if "content-length" in request.headers or "transfer-encoding" in request.headers:
        content = limited_stream(request, context.settings.max_request_bytes)
        if "content-length" in request.headers:  # keeps the upstream off chunked uploads
            headers.append(("content-length", request.headers["content-length"]))
    stream = await context.upstream.open_stream(
        request.method,
        f"{target.base_url}/{path}",
        headers=headers,
        content=content,
        params=request.url.query or None,
    )
    return RelayResponse(stream)


async def upstream_ready(context: ProxyContext) -> bool:
    """Whether the default upstream answers `GET /models` with 2xx, quickly."""
    target = context.router.default
    authorization = upstream_authorization(target.api_key, None, client_key_is_ours=True)
    try:
        await context.upstream.request_json(
            "GET",
            f"{target.base_url}/models",
            headers=upstream_headers([], authorization, relay=False),
            timeout=READINESS_TIMEOUT_SECONDS,
        )
    except ProxyError:
        return False
    return True

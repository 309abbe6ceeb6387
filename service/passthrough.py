"""The endpoints the proxy adds nothing to but a route list: `/v1/models`, every other
`/v1/*` request relayed unchanged, and the upstream readiness probe."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import Response

from .auth import RouteKeys
from .context import ProxyContext, context_of
from .upstream import ClosingResponse, relayed
from .wire import ProxyError, limited_stream, upstream_authorization, upstream_headers

# An upstream that cannot list its models this fast is treated as not ready: a probe should
# fail fast rather than hang behind a stuck upstream (set the probe's own timeout above it).
READINESS_TIMEOUT_SECONDS = 2.0
ROUTE_OWNER = "toolcall-proxy"
# The prefix every relayed path starts with; what follows it is appended to the base URL.
RELAYED_PREFIX = b"/v1/"
# A relayed path must stay under the upstream's base path, with the key meant for it: dot
# segments (also percent-encoded) would climb out of it, encoded `/ ? #` would mean one thing
# to the proxy and another to the upstream, and control characters have no business in a URL.
# Anything outside printable ASCII is refused too; every other escape (`%ff`) goes unchanged.
UNSAFE_ESCAPE = re.compile(rb"%(?:2f|3f|23|[01][0-9a-f]|7f)", re.IGNORECASE)
DOT_SEGMENT = re.compile(rb"(?:^|/)(?:\.|%2e){1,2}(?:/|$)", re.IGNORECASE)
PRINTABLE_ASCII = re.compile(rb"[\x21-\x7e]*")


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


class AnyPath(PathConvertor):
    """A path parameter that also matches a decoded line break (Starlette's `path` stops
    there), so that such a path reaches `relayed_url` and its 400, not a 404."""

    regex = "[\\s\\S]*"


register_url_convertor("any_path", AnyPath())
FORWARDED_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def passthrough_routes(keys: RouteKeys) -> APIRouter:
    """Every other `/v1/*` endpoint, forwarded: registered after every door's routes."""
    routes = APIRouter()

    @routes.api_route("/v1/{path:any_path}", methods=FORWARDED_METHODS, dependencies=keys.checked)
    async def other_endpoints(request: Request) -> Response:
        return await forward(request, context_of(request))

    return routes


def relayed_url(base_url: str, raw_path: bytes, raw_query: bytes) -> str:
    """The upstream URL for a client's `/v1/...` request, built from the path as it came on
    the wire (never the decoded one); raises 400 for a path that could leave `base_url`.

    >>> relayed_url("http://u/tenant-a/v1", b"/v1/files/a%ff", b"limit=2")
    'http://u/tenant-a/v1/files/a%ff?limit=2'
    """
    path = raw_path.removeprefix(RELAYED_PREFIX)
    if (
        path == raw_path
        or not PRINTABLE_ASCII.fullmatch(path)
        or not PRINTABLE_ASCII.fullmatch(raw_query)
        or b"#" in path
        or UNSAFE_ESCAPE.search(path)
        or DOT_SEGMENT.search(path)
    ):
        raise ProxyError(
            400,
            "the request path holds a dot segment, an encoded '/', '?' or '#', or a control "
            "character; the proxy relays none of them",
            code="invalid_path",
        )
    url = f"{base_url}/{path.decode('ascii')}"
    return f"{url}?{raw_query.decode('ascii')}" if raw_query else url


async def forward(request: Request, context: ProxyContext) -> ClosingResponse:
    """Any other `/v1/{path}`: method, query, headers and body relayed to the default
    upstream, the answer relayed back, both streamed."""
    target = context.router.default
    scope = request.scope
    url = relayed_url(
        target.base_url, scope.get("raw_path") or scope["path"].encode(), scope["query_string"]
    )
    headers = context.headers_for(request, target, relay=True)
    content = None
    if "content-length" in request.headers or "transfer-encoding" in request.headers:
        content = limited_stream(request, context.settings.max_request_bytes)
        if "content-length" in request.headers:  # keeps the upstream off chunked uploads
            headers.append(("content-length", request.headers["content-length"]))
    stream = await context.upstream.open_stream(
        request.method,
        url,
        headers=headers,
        content=content,
    )
    return relayed(stream, send_timeout=context.settings.server_send_timeout)


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
